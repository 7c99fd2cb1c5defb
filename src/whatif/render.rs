//! The what-if table: measured, the model's replay of the run as recorded, the prediction.

use super::{Outcome, Schedule, WhatIf};
use crate::analyze::Dist;
use crate::render::document::{plain, pretty_json, write, Block, Document, Span};
use crate::render::format::WHATIF;
use crate::render::table::{Layout, Table};
use crate::render::{Format, Value};

fn fps(o: &Outcome) -> Value {
    Value::or(o.fps.map(|f| Value::fixed(f, 1)), "-")
}

fn at(d: &Option<Dist>, pick: fn(&Dist) -> f64) -> Value {
    Value::or(d.as_ref().map(|d| Value::Micros(pick(d))), "-")
}

/// `main: pace, capture, convert · encoder: encode, send` and the depth.
fn schedule(s: &Schedule) -> String {
    let threads: Vec<String> = (s.resources.iter())
        .filter(|(_, stages)| !stages.is_empty())
        .map(|(name, stages)| {
            let stages: Vec<_> = stages.iter().map(|s| crate::display::name(s)).collect();
            format!("{}: {}", crate::display::name(name), stages.join(", "))
        })
        .collect();
    format!("depth {} · {}", s.depth, threads.join(" · "))
}

/// The three columns of every row: measured, the model as run, the prediction.
fn table(w: &WhatIf) -> Table {
    let outcomes = [&w.measured, &w.as_recorded, &w.predicted];
    let rows: Vec<(&str, [Value; 3])> = vec![
        ("fps (1/mean interval)", outcomes.map(fps)),
        (
            "frame time p50 µs",
            outcomes.map(|o| at(&o.interval, |d| d.p50_ns)),
        ),
        (
            "frame time p99 µs",
            outcomes.map(|o| at(&o.interval, |d| d.p99_ns)),
        ),
        ("total p50 µs", outcomes.map(|o| at(&o.total, |d| d.p50_ns))),
        ("total p95 µs", outcomes.map(|o| at(&o.total, |d| d.p95_ns))),
        ("total p99 µs", outcomes.map(|o| at(&o.total, |d| d.p99_ns))),
    ];
    let mut t = Table::new(&["", "measured", "model as run", "what-if"]).with_layout(Layout {
        // The widths the table has always had, so a wider figure moves nothing.
        min_widths: vec![24, 12, 14, 14],
        ..Layout::default()
    });
    for (label, cells) in rows {
        let [measured, as_run, what_if] = cells;
        t.push(vec![Value::from(label), measured, as_run, what_if]);
    }
    t
}
/// The prediction in text, Markdown or JSON.
pub fn render(w: &WhatIf, format: Format) -> anyhow::Result<String> {
    let written = write(&document(w), format, &WHATIF)?;
    Ok(match format {
        Format::Json => written,
        // Names are escaped where they are shown; a control character left in a figure's
        // words is escaped here: only `\n` ends a line.
        _ => crate::display::lines(&written),
    })
}

/// The prediction as a neutral document: the title, the table, the two schedules and the
/// assumptions (stage and thread names among them); its JSON form is the prediction itself.
fn document(w: &WhatIf) -> Document {
    let what = if w.changes.is_empty() {
        "unchanged".to_string()
    } else {
        w.changes.join(", ")
    };
    // A title holds names: the writer escapes it whole for Markdown.
    let title = format!(
        "framelab whatif · {} · {} measured frames replayed",
        crate::display::name(&w.run),
        w.frames
    );
    let schedules = [
        vec![
            Span::plain("as run    "),
            Span::name(schedule(&w.recorded_schedule)),
        ],
        vec![
            Span::plain("what-if   "),
            Span::name(schedule(&w.schedule)),
            Span::plain(" (asked: "),
            Span::name(crate::display::name(&what)),
            Span::plain(")"),
        ],
    ];
    let mut blocks = vec![Block::Title(title), Block::Table(table(w)), Block::Blank];
    blocks.extend(schedules.map(Block::Paragraph));
    blocks.push(Block::Blank);
    blocks.push(Block::Paragraph(plain("assumptions")));
    blocks.push(Block::Dashed(
        w.assumptions.iter().map(|a| vec![Span::name(a)]).collect(),
    ));
    Document {
        blocks,
        json: pretty_json(w),
    }
}
