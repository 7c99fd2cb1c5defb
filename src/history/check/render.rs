//! A check's report as text, Markdown (for a pull request) or JSON. Names from the store
//! (metrics, machines, branches, commits) pass through `crate::display` in text and
//! Markdown; JSON keeps them whole.

use super::{ChangeKind, CheckReport, Outcome, SeriesCheck};
use crate::compare::{signed_pct, Table};
use crate::units::plural;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Text,
    Markdown,
    Json,
}

pub fn render(report: &CheckReport, format: CheckFormat) -> String {
    match format {
        CheckFormat::Text => human(report, false),
        CheckFormat::Markdown => human(report, true),
        CheckFormat::Json => {
            let mut s = serde_json::to_string_pretty(report)
                .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
            s.push('\n');
            s
        }
    }
}

fn human(report: &CheckReport, markdown: bool) -> String {
    let count = |kind| report.changes().filter(|(_, c)| c.kind == kind).count();
    let skipped: Vec<&SeriesCheck> = (report.series.iter())
        .filter(|s| matches!(s.outcome, Outcome::Skipped { .. }))
        .collect();
    let machines: std::collections::HashSet<&str> =
        report.series.iter().map(|s| s.machine.as_str()).collect();
    let m = &report.method;
    let mut out = format!(
        "{}{} series on {}: {}, {}, {} moved (direction unknown), {} skipped\n",
        if markdown {
            "**history check**: "
        } else {
            "history check: "
        },
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
    );
    out.push_str(&format!(
        "{}E-divisive means, p ≤ {} by {} permutations, at least {} points a side, changes \
         under {}% not reported{}\n",
        if markdown { "\n" } else { "" },
        m.significance,
        m.permutations,
        m.min_segment,
        m.min_relative_change * 100.0,
        if markdown { "." } else { "" },
    ));

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
            table.push(vec![
                s.metric.clone(),
                s.machine.clone(),
                s.branch.clone().unwrap_or_else(|| "—".into()),
                short_commit(&c.commit).to_owned(),
                with_unit(c.before, &s.unit),
                with_unit(c.after, &s.unit),
                c.relative_change
                    .map_or_else(|| "from 0".into(), |r| signed_pct(1.0 + r, 1)),
                format!("{:.1}%", c.confidence * 100.0),
                match c.kind {
                    ChangeKind::Regression => "regression",
                    ChangeKind::Improvement => "improvement",
                    ChangeKind::Moved => "moved",
                }
                .into(),
            ]);
        }
        out.push('\n');
        out.push_str(&table.render(markdown));
    }

    let left_out: usize = (report.series.iter())
        .map(|s| match &s.outcome {
            Outcome::Checked { left_out, .. } => left_out.len(),
            Outcome::Skipped { .. } => 0,
        })
        .sum();
    if left_out > 0 {
        out.push_str(&format!(
            "\n{} with a value that is not a finite number left out (listed in the JSON \
             form)\n",
            plural(left_out as u64, "point", "points")
        ));
    }
    if !skipped.is_empty() {
        out.push_str(if markdown {
            "\nSkipped:\n\n"
        } else {
            "\nskipped:\n"
        });
        for s in skipped {
            let Outcome::Skipped { reason } = &s.outcome else {
                continue;
            };
            let line = format!(
                "{} on {}{}: {reason}",
                crate::display::name(&s.metric),
                crate::display::name(&s.machine),
                s.branch
                    .as_deref()
                    .map(|b| format!(" ({})", crate::display::name(b)))
                    .unwrap_or_default(),
            );
            if markdown {
                out.push_str(&format!("- {}\n", crate::display::markdown(&line)));
            } else {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out
}

/// `12.3 µs`, the unit as compare prints it unscaled (`microseconds` is `µs`); a value
/// without a unit alone.
fn with_unit(value: f64, unit: &str) -> String {
    match crate::compare::shown_unit(unit).as_str() {
        "" => significant(value),
        shown => format!("{} {shown}", significant(value)),
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

/// Four significant digits, without an exponent for everyday magnitudes.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    if !(-4..=9).contains(&magnitude) {
        return format!("{v:.3e}");
    }
    let decimals = (3 - magnitude).max(0) as usize;
    format!("{v:.decimals$}")
}
