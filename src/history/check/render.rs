//! A check's report as a neutral document (`crate::render::document`), written as text,
//! Markdown (for a pull request) or JSON. Names from the store (metrics, machines,
//! branches, commits) pass through `crate::display` in text and Markdown; JSON keeps them
//! whole.

use super::{ChangeKind, CheckReport, Outcome, SeriesCheck};
use crate::render::document::{pretty_json, write, Block, Document};
use crate::render::format::HISTORY_CHECK;
use crate::render::value::StoreDigits;
use crate::render::Format;
use crate::render::{Table, Value};
use crate::units::plural;

/// The check's report in text, Markdown or JSON.
pub fn render(report: &CheckReport, format: Format) -> anyhow::Result<String> {
    write(&document(report), format, &HISTORY_CHECK)
}

/// The report as a neutral document: the counts, the method, the changes' table, what
/// was left out or skipped; its JSON form is the report itself.
fn document(report: &CheckReport) -> Document {
    let count = |kind| report.changes().filter(|(_, c)| c.kind == kind).count();
    let skipped: Vec<&SeriesCheck> = (report.series.iter())
        .filter(|s| matches!(s.outcome, Outcome::Skipped { .. }))
        .collect();
    let machines: std::collections::HashSet<&str> =
        report.series.iter().map(|s| s.machine.as_str()).collect();
    let m = &report.method;
    let mut blocks = vec![
        Block::Lead {
            title: "history check".into(),
            text: format!(
                "{} series on {}: {}, {}, {} moved (direction unknown), {} skipped",
                report.series.len(),
                plural(machines.len() as u64, "machine", "machines"),
                plural(
                    count(ChangeKind::Regression) as u64,
                    "regression",
                    "regressions"
                ),
                plural(
                    count(ChangeKind::Improvement) as u64,
                    "improvement",
                    "improvements"
                ),
                count(ChangeKind::Moved),
                skipped.len(),
            ),
        },
        Block::Detail(format!(
            "E-divisive means, p ≤ {} by {} permutations ({} near it), at least {} points a \
             side, changes under {}% not reported",
            m.significance,
            m.permutations,
            crate::history::changepoint::second_look(m.permutations),
            m.min_segment,
            m.min_relative_change * 100.0,
        )),
    ];

    let mut changes: Vec<_> = report.changes().collect();
    // Regressions first: what a reader acts on.
    changes.sort_by_key(|(_, c)| match c.kind {
        ChangeKind::Regression => 0,
        ChangeKind::Improvement => 2,
        ChangeKind::Moved => 1,
    });
    if !changes.is_empty() {
        let mut table = Table::new(&[
            "metric",
            "machine",
            "branch",
            "commit",
            "before",
            "after",
            "change",
            "confidence",
            "verdict",
        ]);
        for (s, c) in &changes {
            let stored = |value| Value::Stored {
                value,
                unit: s.unit.clone(),
                digits: StoreDigits::Significant,
            };
            // A change from 0 has no ratio: words say so.
            let change = c.relative_change.map(|r| Value::Change {
                ratio: 1.0 + r,
                low: f64::NAN,
                high: f64::NAN,
            });
            table.push(vec![
                Value::Text(s.metric.clone()),
                Value::Text(s.machine.clone()),
                Value::or(s.branch.clone().map(Value::Text), "—"),
                Value::from(short_commit(&c.commit)),
                stored(c.before),
                stored(c.after),
                change.unwrap_or_else(|| Value::from("from 0")),
                Value::percent(c.confidence * 100.0, 1),
                Value::from(match c.kind {
                    ChangeKind::Regression => "regression",
                    ChangeKind::Improvement => "improvement",
                    ChangeKind::Moved => "moved",
                }),
            ]);
        }
        blocks.push(Block::Table(table));
    }

    let left_out: usize = (report.series.iter())
        .map(|s| match &s.outcome {
            Outcome::Checked { left_out, .. } => left_out.len(),
            Outcome::Skipped { .. } => 0,
        })
        .sum();
    if left_out > 0 {
        blocks.push(Block::Note(format!(
            "{} with a value that is not a finite number left out (listed in the JSON form)",
            plural(left_out as u64, "point", "points")
        )));
    }
    if !skipped.is_empty() {
        let items = (skipped.iter())
            .filter_map(|s| match &s.outcome {
                Outcome::Skipped { reason } => Some(format!(
                    "{} on {}{}: {reason}",
                    crate::display::name(&s.metric),
                    crate::display::name(&s.machine),
                    s.branch
                        .as_deref()
                        .map(|b| format!(" ({})", crate::display::name(b)))
                        .unwrap_or_default(),
                )),
                Outcome::Checked { .. } => None,
            })
            .collect();
        blocks.push(Block::List {
            title: "skipped".into(),
            items,
        });
    }
    Document {
        blocks,
        json: pretty_json(report),
    }
}

/// A git commit id as people quote it (12 hex digits); anything else as it is.
fn short_commit(commit: &str) -> &str {
    if commit.len() > 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        &commit[..12]
    } else {
        commit
    }
}
