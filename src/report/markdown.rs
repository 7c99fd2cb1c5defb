//! The Markdown report: pastes into a pull request or an issue as GitHub tables.

use super::facts::{facts_in, title};
use super::pipeline::{resource_headers, resource_rows, wait_headers, wait_rows};
use super::text::{
    on_cpu_cells, process_rows, stage_table_rows, worst_headers, worst_rows, ON_CPU_HEADERS,
    PROCESS_HEADERS,
};
use crate::analyze::Analysis;
use crate::render::columns::Column;
use crate::render::document::{Block, Fact, SpanKind};
use crate::render::style::Style;
use crate::render::value::{texts, Value};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A GitHub table of `headers` over `rows`, set off by a blank line.
fn gfm(headers: Vec<String>, rows: Vec<Vec<Value>>) -> Block {
    let columns: Vec<Column> = headers.into_iter().map(|h| Column::new(h, 0)).collect();
    Block::Columns {
        table: crate::render::columns::table(&columns, rows, None),
        set_off: true,
    }
}

fn fps_table(a: &Analysis) -> Option<Block> {
    let f = a.fps.as_ref()?;
    let cell = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.1}"));
    let headers = strings(&[
        "",
        "mean",
        "p50",
        "p10",
        "p5",
        "p1",
        "low1_avg",
        "low1_int",
        "p0.1",
        "low0_1_avg",
        "low0_1_int",
    ]);
    let values = vec![
        "fps".to_string(),
        format!("{:.2}", f.mean),
        cell(f.p50),
        cell(f.p10),
        cell(f.p5),
        cell(f.p1),
        cell(f.low1_avg),
        cell(f.low1_int),
        cell(f.p0_1),
        cell(f.low0_1_avg),
        cell(f.low0_1_int),
    ];
    Some(gfm(headers, texts(vec![values])))
}

/// The Markdown report's blocks: the title, the facts as bullets (the command as code,
/// fps as its own table), the tables, telemetry, the notes quoted; every FPS low named
/// when `verbose` (`framelab report --verbose`).
pub(crate) fn blocks(a: &Analysis, verbose: bool) -> Vec<Block> {
    // The facts are spans the writer escapes; the worst frames' headers, telemetry and
    // the notes are still escaped here.
    let st = Style {
        color: false,
        markdown: true,
    };
    let facts = (facts_in(a, verbose).into_iter())
        .filter(|(label, _)| *label != "fps")
        .map(|(label, line)| Fact {
            label: label.to_owned(),
            // The command as code: its spans are plain text.
            value: match label {
                "command" => line.into_iter().map(|s| s.with(SpanKind::Code)).collect(),
                _ => line,
            },
            hint: None,
        })
        .collect();
    let mut blocks = vec![Block::Title(title(a)), Block::Facts(facts)];

    if !a.stages.is_empty() {
        let mut headers = strings(&["stage (µs)", "min", "p50", "p95", "p99", "max", "mean"]);
        if on_cpu_cells(a).is_some() {
            headers.extend(strings(&ON_CPU_HEADERS));
        }
        blocks.push(gfm(headers, stage_table_rows(a)));
    }
    if let Some(rows) = a.pipeline.as_ref().and_then(wait_rows) {
        blocks.push(gfm(wait_headers(), rows));
    }
    blocks.extend(fps_table(a));
    if !a.processes.is_empty() {
        let rows: Vec<Vec<Value>> = process_rows(a).into_iter().map(Vec::from).collect();
        blocks.push(gfm(strings(&PROCESS_HEADERS), rows));
    }
    if let Some(rows) = resource_rows(a) {
        blocks.push(gfm(resource_headers(a), rows));
    }
    if !a.worst_frames.is_empty() {
        let headers = worst_headers(a, |n| st.name(&crate::display::name(n)));
        blocks.push(gfm(headers, worst_rows(a)));
    }
    blocks.extend(super::telemetry::markdown_blocks(a, &st));
    if !a.notes.is_empty() {
        let notes: String = a
            .notes
            .iter()
            .map(|n| format!("> **Note** {}\n", st.name(n)))
            .collect::<Vec<_>>()
            .join(">\n");
        blocks.push(Block::Lines(notes));
    }
    blocks
}
