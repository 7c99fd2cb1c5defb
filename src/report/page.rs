//! The report's document for the HTML page: the title, the facts as plain sentences, the
//! tables each under the title the page shows, the notes. `render::html_writer` turns it
//! into the page's text; the plots are `report/html`'s.

use super::facts::{facts, title};
use super::pipeline::{resource_headers, resource_rows, wait_headers, wait_rows};
use super::telemetry::{
    energy_rows, metric_rows, thread_rows, ENERGY_HEADERS, METRIC_HEADERS, THREAD_HEADERS,
};
use super::text::{
    on_cpu_cells, process_rows, stage_table_rows, worst_headers, worst_rows, ON_CPU_HEADERS,
    PROCESS_HEADERS,
};
use crate::analyze::Analysis;
use crate::render::document::{Block, Fact};
use crate::render::{Table, Value};

/// The page's blocks: the title, the facts uncoloured and unescaped (the page's script
/// shows them as text), a titled table each, the notes.
pub(crate) fn blocks(a: &Analysis) -> Vec<Block> {
    let mut blocks = vec![
        Block::Title(title(a)),
        Block::Facts(
            (facts(a).into_iter())
                .map(|(label, value)| Fact {
                    label: label.to_owned(),
                    value,
                    hint: None,
                })
                .collect(),
        ),
    ];
    blocks.extend(tables(a).into_iter().map(Block::Table));
    blocks.push(Block::Notes(
        (a.notes.iter())
            .map(|n| crate::display::text(n).into_owned())
            .collect(),
    ));
    blocks
}

/// The page's tables, each under its title; a table without rows is left out.
fn tables(a: &Analysis) -> Vec<Table> {
    let strings = |h: &[&str]| h.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    let mut push = |title: &str, headers: Vec<String>, rows: Vec<Vec<Value>>| {
        if !rows.is_empty() {
            out.push(Table {
                title: title.to_owned(),
                headers,
                rows,
                ..Table::default()
            });
        }
    };
    let mut stage_headers = strings(&["stage", "min", "p50", "p95", "p99", "max", "mean"]);
    if on_cpu_cells(a).is_some() {
        stage_headers.extend(strings(&ON_CPU_HEADERS));
    }
    push("Stages (µs)", stage_headers, stage_table_rows(a));
    push(
        "Processes",
        strings(&PROCESS_HEADERS),
        process_rows(a).into_iter().map(Vec::from).collect(),
    );
    if let Some(rows) = a.pipeline.as_ref().and_then(wait_rows) {
        push("Waits between stages", wait_headers(), rows);
    }
    if let Some(rows) = resource_rows(a) {
        push(
            "Busy time (what bounds the rate)",
            resource_headers(a),
            rows,
        );
    }
    push(
        "Worst frames",
        worst_headers(a, str::to_owned),
        worst_rows(a),
    );
    if let Some(t) = &a.telemetry {
        push("Telemetry", strings(&METRIC_HEADERS), metric_rows(t));
        push("Energy", strings(&ENERGY_HEADERS), energy_rows(t));
        push("Threads", strings(&THREAD_HEADERS), thread_rows(t));
    }
    out
}
