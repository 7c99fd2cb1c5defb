//! `framelab timers` output: text for terminals, Markdown for pull requests, JSON with every
//! number (schema `framelab.timers/1`).

use serde::Serialize;

use super::pick::Pick;
use super::{IntervalResult, Row, TimersReport};
use crate::report::facts::Style;
use crate::report::format::us;
use crate::report::markdown::gfm_table;
use crate::report::table::{render as table, Column};
use crate::report::Format;

/// Bump when a key is renamed, removed or changes meaning.
pub const SCHEMA: &str = "framelab.timers/1";

/// Waits a percentile needs before it is more than the largest few values renamed.
const P99_WAITS: u64 = 100;
const P99_9_WAITS: u64 = 1000;

pub fn render(report: &TimersReport, format: Format, color: bool) -> String {
    match format {
        Format::Text => text(report, color),
        Format::Markdown => markdown(report),
        Format::Json => json(report),
    }
}

fn host(r: &TimersReport) -> String {
    let h = &r.host;
    let mut parts = Vec::new();
    if !h.cpu_model.is_empty() {
        parts.push(format!("{}, {} cores", h.cpu_model, h.cores));
    }
    if !h.kernel.is_empty() {
        parts.push(format!("Linux {}", h.kernel));
    }
    if !h.clocksource.is_empty() {
        parts.push(format!("clocksource {}", h.clocksource));
    }
    parts.join(" · ")
}

fn interval_title(interval_ns: u64) -> String {
    format!(
        "every {} µs ({:.2} fps)",
        us(interval_ns as f64),
        1e9 / interval_ns as f64
    )
}

/// `value` in µs, marked `*` when there are too few waits for that percentile.
fn marked(value_ns: f64, waits: u64, needed: u64) -> String {
    let mark = if waits < needed { "*" } else { "" };
    format!("{}{mark}", us(value_ns))
}

fn cells(row: &Row) -> Vec<String> {
    vec![
        row.cell.strategy.name().to_string(),
        row.cell.slack.map_or("–", |s| s.name()).to_string(),
        row.cell.sched.name().to_string(),
        row.waits.to_string(),
        us(row.p50_ns),
        marked(row.p99_ns, row.waits, P99_WAITS),
        marked(row.p99_9_ns, row.waits, P99_9_WAITS),
        us(row.max_ns),
        us(row.cpu_per_wait_ns),
        format!("{:.1}", row.cpu_pct),
    ]
}

const HEADERS: [&str; 10] = [
    "strategy", "slack", "sched", "waits", "p50", "p99", "p99.9", "max", "CPU/wait", "CPU %",
];

/// `cheapest with p99 ≤ 20 µs: timerfd · 1 ns slack · other (p99 12 µs, 4.1 µs CPU a wait, 0.1% of a core)`
pub fn pick_sentence(result: &IntervalResult, need_ns: u64) -> String {
    let need = us(need_ns as f64);
    let Some(Pick { row, meets }) = result.pick else {
        return format!("nothing measured to compare with p99 ≤ {need} µs");
    };
    let r = &result.rows[row];
    let what = format!(
        "{} · {} · {} (p99 {} µs, {} µs CPU a wait, {:.1}% of a core)",
        r.cell.strategy.name(),
        r.cell
            .slack
            .map_or("slack n/a".to_string(), |s| format!("{} slack", s.name())),
        r.cell.sched.name(),
        us(r.p99_ns),
        us(r.cpu_per_wait_ns),
        r.cpu_pct
    );
    if meets {
        format!("cheapest with p99 ≤ {need} µs: {what}")
    } else {
        format!("none reaches p99 ≤ {need} µs here; the most precise: {what}")
    }
}

fn footnotes(r: &TimersReport) -> Vec<String> {
    let mut notes = Vec::new();
    let few = r
        .intervals
        .iter()
        .flat_map(|i| &i.rows)
        .any(|row| row.waits < P99_9_WAITS);
    if few {
        notes.push(format!(
            "* fewer waits than the percentile needs ({P99_WAITS} for p99, {P99_9_WAITS} for p99.9): \
             read it as an estimate, or give a longer --duration"
        ));
    }
    notes.push(format!(
        "lateness = wake-up − deadline; slack: default is {} µs here, 1 ns is PR_SET_TIMERSLACK(1), \
         – where it does not apply (spin, and SCHED_FIFO, for which the kernel ignores it)",
        us(r.default_slack_ns as f64)
    ));
    if !r.fifo.permitted {
        notes.push(format!(
            "SCHED_FIFO rows skipped: {}",
            r.fifo.reason.as_deref().unwrap_or("not permitted")
        ));
    }
    notes.extend(r.notes.iter().cloned());
    notes
}

fn plan_line(r: &TimersReport) -> String {
    format!(
        "{} cells × {:.2} s, planned {:.1} s, took {:.1} s",
        r.cells,
        r.duration_per_cell_ns as f64 / 1e9,
        r.planned_ns as f64 / 1e9,
        r.elapsed_ns as f64 / 1e9
    )
}

fn text(r: &TimersReport, color: bool) -> String {
    let st = Style {
        color,
        markdown: false,
    };
    let mut out = format!("{}\n", st.bold(&format!("framelab timers · {}", host(r))));
    out.push_str(&format!("  plan      {}\n", plan_line(r)));
    out.push_str(&format!(
        "  need      p99 lateness ≤ {} µs (--need)\n",
        us(r.need_ns as f64)
    ));
    let mut columns = vec![Column::new(HEADERS[0], 21)];
    columns.extend(HEADERS[1..].iter().map(|h| Column::new(*h, 8)));
    for result in &r.intervals {
        out.push('\n');
        out.push_str(&format!(
            "  {}\n",
            st.bold(&interval_title(result.interval_ns))
        ));
        let rows: Vec<Vec<String>> = result.rows.iter().map(cells).collect();
        out.push_str(&table(&columns, &rows, Some("µs"), &st));
        out.push_str(&format!("  → {}\n", pick_sentence(result, r.need_ns)));
    }
    out.push('\n');
    for note in footnotes(r) {
        out.push_str(&format!("  {}{note}\n", st.yellow("note      ")));
    }
    out
}

fn markdown(r: &TimersReport) -> String {
    let st = Style {
        color: false,
        markdown: true,
    };
    let mut blocks = vec![
        format!(
            "### {}\n",
            st.name(&format!("framelab timers · {}", host(r)))
        ),
        format!(
            "- **plan** {}\n- **need** p99 lateness ≤ {} µs\n",
            plan_line(r),
            us(r.need_ns as f64)
        ),
    ];
    let headers: Vec<String> = HEADERS
        .iter()
        .enumerate()
        .map(|(i, h)| match i {
            4..=8 => format!("{h} µs"),
            _ => h.to_string(),
        })
        .collect();
    for result in &r.intervals {
        let rows: Vec<Vec<String>> = result
            .rows
            .iter()
            .map(|row| cells(row).into_iter().map(|c| st.name(&c)).collect())
            .collect();
        blocks.push(format!(
            "#### {}\n\n{}\n**{}**\n",
            interval_title(result.interval_ns),
            gfm_table(&headers, &rows),
            st.name(&pick_sentence(result, r.need_ns))
        ));
    }
    let notes: Vec<String> = footnotes(r)
        .iter()
        .map(|n| format!("> {}\n", st.name(n)))
        .collect();
    blocks.push(notes.join(">\n"));
    blocks.join("\n")
}

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    #[serde(flatten)]
    report: &'a TimersReport,
}

fn json(r: &TimersReport) -> String {
    let doc = Document {
        schema: SCHEMA,
        report: r,
    };
    let mut out = serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"schema\": \"{SCHEMA}\", \"error\": \"{e}\"}}"));
    out.push('\n');
    out
}
