//! The what-if table: measured, the model's replay of the run as recorded, the prediction.

use super::{Outcome, Schedule, WhatIf};
use crate::analyze::Dist;
use crate::render::document::{pretty_json, write, Block, Document};
use crate::render::format::WHATIF;
use crate::render::Format;

fn fps(o: &Outcome) -> String {
    o.fps.map_or_else(|| "-".into(), |f| format!("{f:.1}"))
}

fn at(d: &Option<Dist>, pick: fn(&Dist) -> f64) -> String {
    d.as_ref()
        .map_or_else(|| "-".into(), |d| crate::render::human::us(pick(d)))
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

fn text(w: &WhatIf) -> String {
    let rows: Vec<(&str, [String; 3])> = vec![
        (
            "fps (1/mean interval)",
            [&w.measured, &w.as_recorded, &w.predicted].map(fps),
        ),
        (
            "frame time p50 µs",
            [&w.measured, &w.as_recorded, &w.predicted].map(|o| at(&o.interval, |d| d.p50_ns)),
        ),
        (
            "frame time p99 µs",
            [&w.measured, &w.as_recorded, &w.predicted].map(|o| at(&o.interval, |d| d.p99_ns)),
        ),
        (
            "total p50 µs",
            [&w.measured, &w.as_recorded, &w.predicted].map(|o| at(&o.total, |d| d.p50_ns)),
        ),
        (
            "total p95 µs",
            [&w.measured, &w.as_recorded, &w.predicted].map(|o| at(&o.total, |d| d.p95_ns)),
        ),
        (
            "total p99 µs",
            [&w.measured, &w.as_recorded, &w.predicted].map(|o| at(&o.total, |d| d.p99_ns)),
        ),
    ];
    let what = if w.changes.is_empty() {
        "unchanged".to_string()
    } else {
        w.changes.join(", ")
    };
    let mut out = format!(
        "framelab whatif · {} · {} measured frames replayed\n\n",
        crate::display::name(&w.run),
        w.frames
    );
    out.push_str(&format!(
        "  {:<24}{:>12}{:>14}{:>14}\n",
        "", "measured", "model as run", "what-if"
    ));
    for (label, cells) in rows {
        out.push_str(&format!(
            "  {label:<24}{:>12}{:>14}{:>14}\n",
            cells[0], cells[1], cells[2]
        ));
    }
    out.push_str(&format!(
        "\n  as run    {}\n  what-if   {} (asked: {})\n",
        schedule(&w.recorded_schedule),
        schedule(&w.schedule),
        crate::display::name(&what)
    ));
    out.push_str("\n  assumptions\n");
    for a in &w.assumptions {
        out.push_str(&format!("  - {a}\n"));
    }
    out
}

/// The prediction in text, Markdown or JSON.
pub fn render(w: &WhatIf, format: Format) -> anyhow::Result<String> {
    write(&document(w), format, &WHATIF)
}

/// The prediction as a neutral document: its aligned table and schedules as one block of
/// lines (a code block in Markdown); its JSON form is the prediction itself.
fn document(w: &WhatIf) -> Document {
    Document {
        // Stage names reach the assumptions too: every line is escaped.
        blocks: vec![Block::Aligned(crate::display::lines(&text(w)))],
        json: pretty_json(w),
    }
}
