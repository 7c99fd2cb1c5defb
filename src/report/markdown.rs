//! The Markdown report: pastes into a pull request or an issue as GitHub tables.

use super::facts::{facts_in, title};
use super::pipeline::{resource_headers, resource_rows, wait_headers, wait_rows};
use super::text::{
    on_cpu_cells, process_rows, stage_table_rows, worst_headers, worst_rows, ON_CPU_HEADERS,
    PROCESS_HEADERS,
};
use crate::analyze::Analysis;
use crate::render::columns::gfm_table;
use crate::render::style::Style;

/// An inline code span that survives backticks in its content.
fn code_span(s: &str) -> String {
    let longest_run = s
        .split(|c| c != '`')
        .map(|run| run.len())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn fps_table(a: &Analysis) -> Option<String> {
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
    Some(gfm_table(&headers, &[values]))
}

pub fn render(a: &Analysis) -> String {
    render_in(a, false)
}

/// [`render`], naming every FPS low when `verbose` (`framelab report --verbose`).
pub fn render_in(a: &Analysis, verbose: bool) -> String {
    let st = Style {
        color: false,
        markdown: true,
    };
    let mut blocks: Vec<String> = Vec::new();
    blocks.push(format!("### {}\n", st.name(&title(a))));

    let mut bullets = String::new();
    for (label, line) in facts_in(a, &st, verbose) {
        // The command is code; fps has its own table below.
        let line = match label {
            "command" => code_span(&line),
            "fps" => continue,
            _ => line,
        };
        bullets.push_str(&format!("- **{label}** {line}\n"));
    }
    blocks.push(bullets);

    if !a.stages.is_empty() {
        let mut headers = strings(&["stage (µs)", "min", "p50", "p95", "p99", "max", "mean"]);
        if on_cpu_cells(a).is_some() {
            headers.extend(strings(&ON_CPU_HEADERS));
        }
        blocks.push(gfm_table(&headers, &stage_table_rows(a)));
    }
    if let Some(rows) = a.pipeline.as_ref().and_then(wait_rows) {
        blocks.push(gfm_table(&wait_headers(), &rows));
    }
    blocks.extend(fps_table(a));
    if !a.processes.is_empty() {
        let headers = strings(&PROCESS_HEADERS);
        let rows: Vec<Vec<String>> = process_rows(a).into_iter().map(Vec::from).collect();
        blocks.push(gfm_table(&headers, &rows));
    }
    if let Some(rows) = resource_rows(a) {
        blocks.push(gfm_table(&resource_headers(a), &rows));
    }
    if !a.worst_frames.is_empty() {
        let headers = worst_headers(a, |n| st.name(&crate::display::name(n)));
        blocks.push(gfm_table(&headers, &worst_rows(a)));
    }
    blocks.extend(super::telemetry::markdown_blocks(a, &st, gfm_table));
    if !a.notes.is_empty() {
        let notes: String = a
            .notes
            .iter()
            .map(|n| format!("> **Note** {}\n", st.name(n)))
            .collect::<Vec<_>>()
            .join(">\n");
        blocks.push(notes);
    }
    blocks.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_backticks() {
        assert_eq!(code_span("ls -l"), "`ls -l`");
        assert_eq!(code_span("echo `date`"), "`` echo `date` ``");
        assert_eq!(code_span("a``b"), "```a``b```");
    }
}
