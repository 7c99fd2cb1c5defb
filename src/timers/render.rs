//! `framelab timers` output: text for terminals, Markdown for pull requests, JSON with every
//! number (schema `framelab.timers/1`).

use serde::Serialize;

use super::pick::{duration_for_firm_pick, provisional, Pick, P99_9_WAITS, P99_WAITS};
use super::{IntervalResult, Row, TimersReport};
use crate::render::document::{plain, write_in, Block, Column, Document, Fact, Section};
use crate::render::format::TIMERS;
use crate::render::human::us;
use crate::render::{Format, Value};

/// Bump when a key is renamed, removed or changes meaning.
pub const SCHEMA: &str = "framelab.timers/1";

pub fn render(report: &TimersReport, format: Format, color: bool) -> anyhow::Result<String> {
    write_in(&document(report), format, &TIMERS, color)
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
fn marked(value_ns: f64, waits: u64, needed: u64) -> Value {
    Value::Marked {
        value: Box::new(Value::Micros(value_ns)),
        mark: if waits < needed { "*" } else { "" },
    }
}

/// A share of a core: two decimals below 1%, one above.
fn pct(value: f64) -> String {
    format!("{value:.*}", pct_decimals(value))
}

fn pct_decimals(value: f64) -> usize {
    if value < 1.0 {
        2
    } else {
        1
    }
}

fn cells(row: &Row) -> Vec<Value> {
    vec![
        Value::from(row.cell.strategy.name()),
        Value::from(row.cell.slack.map_or("–", |s| s.name())),
        Value::from(row.cell.sched.name()),
        Value::Count(row.waits as i64),
        Value::Micros(row.p50_ns),
        marked(row.p99_ns, row.waits, P99_WAITS),
        marked(row.p99_9_ns, row.waits, P99_9_WAITS),
        Value::Micros(row.max_ns),
        Value::Micros(row.cpu_per_wait_ns),
        Value::fixed(row.cpu_pct, pct_decimals(row.cpu_pct)),
    ]
}

const HEADERS: [&str; 10] = [
    "strategy", "slack", "sched", "waits", "p50", "p99", "p99.9", "max", "CPU/wait", "CPU %",
];

/// `cheapest with p99 ≤ 20 µs: timerfd · 1 ns slack · other (p99 12 µs, 4.1 µs CPU a wait, 0.1% of a core)`
pub fn pick_sentence(result: &IntervalResult, need_ns: u64) -> String {
    let need = us(need_ns as f64);
    let Some(Pick { row, meets, .. }) = result.pick else {
        return format!("nothing measured to compare with p99 ≤ {need} µs");
    };
    let r = &result.rows[row];
    let what = format!(
        "{} · {} · {} (p99 {} µs, {} µs CPU a wait, {}% of a core)",
        r.cell.strategy.name(),
        r.cell
            .slack
            .map_or("slack n/a".to_string(), |s| format!("{} slack", s.name())),
        r.cell.sched.name(),
        us(r.p99_ns),
        us(r.cpu_per_wait_ns),
        pct(r.cpu_pct)
    );
    let pick = if meets {
        format!("cheapest with p99 ≤ {need} µs: {what}")
    } else {
        format!("none reaches p99 ≤ {need} µs here; the most precise: {what}")
    };
    match provisional(&result.rows) {
        None => pick,
        Some(p) => format!(
            "provisional: {pick}; {} of the {} p99s compared rest on fewer than {P99_WAITS} \
             waits (*; {} the fewest): give --duration {:?} or more for a firm pick",
            p.starred,
            p.compared,
            p.fewest_waits,
            duration_for_firm_pick(result.interval_ns)
        ),
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

/// The survey as a neutral document: the host, the plan, a table per interval with its
/// pick, the notes; its JSON form is the report under its schema.
fn document(r: &TimersReport) -> Document {
    // The µs of p50 to CPU/wait come from their cells.
    let columns: Vec<Column> = (HEADERS.iter().enumerate())
        .map(|(i, h)| Column::new(*h, if i == 0 { 21 } else { 8 }))
        .collect();
    let mut blocks = vec![
        Block::Title(format!("framelab timers · {}", host(r))),
        Block::Facts(vec![
            Fact {
                label: "plan".into(),
                value: plain(plan_line(r)),
                hint: None,
            },
            Fact {
                label: "need".into(),
                value: plain(format!("p99 lateness ≤ {} µs", us(r.need_ns as f64))),
                hint: Some("(--need)".into()),
            },
        ]),
    ];
    for result in &r.intervals {
        blocks.push(Block::Section(Section {
            title: interval_title(result.interval_ns),
            columns: columns.clone(),
            rows: result.rows.iter().map(cells).collect(),
            conclusion: pick_sentence(result, r.need_ns),
        }));
    }
    blocks.push(Block::Notes(footnotes(r)));
    Document {
        blocks,
        json: json(r),
    }
}

#[derive(Serialize)]
struct Versioned<'a> {
    schema: &'static str,
    #[serde(flatten)]
    report: &'a TimersReport,
}

fn json(r: &TimersReport) -> String {
    let doc = Versioned {
        schema: SCHEMA,
        report: r,
    };
    let mut out = serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"schema\": \"{SCHEMA}\", \"error\": \"{e}\"}}"));
    out.push('\n');
    out
}

/// Whole outputs of a hand-built report against files under `tests/snapshots/`; regenerate
/// with `UPDATE_SNAPSHOTS=1 cargo test --lib timers` and review the diff.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Host;
    use crate::timers::pick::cheapest;
    use crate::timers::strategy::Strategy;
    use crate::timers::thread::{Sched, Slack};
    use crate::timers::{Cell, FifoStatus};

    fn row(
        interval_ns: u64,
        strategy: Strategy,
        slack: Option<Slack>,
        waits: u64,
        lateness_us: [f64; 4],
        cpu_per_wait_us: f64,
    ) -> Row {
        let [p50, p99, p99_9, max] = lateness_us.map(|v| v * 1e3);
        Row {
            cell: Cell {
                interval_ns,
                strategy,
                slack,
                sched: Sched::Other,
            },
            waits,
            p50_ns: p50,
            p99_ns: p99,
            p99_9_ns: p99_9,
            max_ns: max,
            mean_ns: p50,
            cpu_per_wait_ns: cpu_per_wait_us * 1e3,
            cpu_pct: cpu_per_wait_us * 1e3 * 100.0 / interval_ns as f64,
        }
    }

    /// 175 fps with enough waits, where timerfd with 1 ns slack is the cheapest under 20 µs;
    /// 60 fps with 24 waits (marked), where nothing is.
    fn reference() -> TimersReport {
        let a = 5_714_000;
        let b = 16_667_000;
        let mut first = IntervalResult {
            interval_ns: a,
            rows: vec![
                row(
                    a,
                    Strategy::Nanosleep,
                    Some(Slack::Default),
                    1750,
                    [58.0, 70.0, 95.0, 130.0],
                    4.1,
                ),
                row(
                    a,
                    Strategy::Nanosleep,
                    Some(Slack::OneNs),
                    1750,
                    [7.9, 21.0, 40.0, 61.0],
                    4.2,
                ),
                row(
                    a,
                    Strategy::Timerfd,
                    Some(Slack::OneNs),
                    1750,
                    [6.1, 12.0, 30.0, 52.0],
                    5.0,
                ),
                row(a, Strategy::Spin, None, 1750, [0.05, 0.2, 1.1, 9.0], 5714.0),
                row(
                    a,
                    Strategy::Hybrid,
                    Some(Slack::Default),
                    1750,
                    [0.3, 2.5, 14.0, 66.0],
                    62.0,
                ),
            ],
            pick: None,
        };
        first.pick = cheapest(&first.rows, 20e3);
        let mut second = IntervalResult {
            interval_ns: b,
            rows: vec![
                row(
                    b,
                    Strategy::EpollWait,
                    Some(Slack::Default),
                    24,
                    [480.0, 990.0, 999.0, 1000.0],
                    6.0,
                ),
                row(
                    b,
                    Strategy::Condvar,
                    Some(Slack::OneNs),
                    24,
                    [9.0, 35.0, 38.0, 38.3],
                    7.5,
                ),
            ],
            pick: None,
        };
        second.pick = cheapest(&second.rows, 20e3);
        TimersReport {
            host: Host {
                hostname: "bench1".into(),
                cpu_model: "Test CPU".into(),
                cores: 2,
                kernel: "6.18".into(),
                clocksource: "tsc".into(),
            },
            default_slack_ns: 50_000,
            duration_per_cell_ns: 400_000_000,
            need_ns: 20_000,
            fifo: FifoStatus {
                permitted: false,
                reason: Some(
                    "Operation not permitted (os error 1) (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1)"
                        .into(),
                ),
            },
            cells: 7,
            planned_ns: 2_800_000_000,
            elapsed_ns: 2_912_000_000,
            intervals: vec![first, second],
            notes: vec!["timerfd (1 ns, other) every 16667 µs not measured: timerfd_create: Too many open files (os error 24)".into()],
        }
    }

    use crate::snapshot::check;

    #[test]
    fn the_picks_of_the_reference() {
        let r = reference();
        // 175 fps: nanosleep 1 ns (21 µs) misses 20 µs; timerfd 1 ns (12 µs, 5.0 µs CPU)
        // is cheaper than hybrid (62 µs) and spin.
        assert_eq!(
            r.intervals[0].pick,
            Some(Pick {
                row: 2,
                meets: true,
                provisional: false
            })
        );
        // 60 fps: neither meets it; condvar has the lower p99.
        assert_eq!(
            r.intervals[1].pick,
            Some(Pick {
                row: 1,
                meets: false,
                provisional: true
            })
        );
        // 60 fps had 24 waits a cell: its pick says it rests on estimates, and how long a
        // duration would make it firm; 175 fps's 1750 waits make a firm pick.
        let second = pick_sentence(&r.intervals[1], r.need_ns);
        assert!(
            second.starts_with(
                "provisional: none reaches p99 ≤ 20 µs here; the most precise: condvar · 1 ns slack"
            ),
            "{second}"
        );
        assert!(
            second.ends_with(
                "2 of the 2 p99s compared rest on fewer than 100 waits (*; 24 the fewest): \
                 give --duration 1.8s or more for a firm pick"
            ),
            "{second}"
        );
        let first = pick_sentence(&r.intervals[0], r.need_ns);
        assert!(
            first.starts_with("cheapest with p99 ≤ 20 µs: timerfd"),
            "{first}"
        );
    }

    #[test]
    fn reference_text() {
        check(
            "timers_reference.txt",
            &render(&reference(), Format::Text, false).unwrap(),
        );
    }

    #[test]
    fn reference_markdown() {
        check(
            "timers_reference.md",
            &render(&reference(), Format::Markdown, false).unwrap(),
        );
    }

    #[test]
    fn reference_json_is_versioned_and_round_trips() {
        let json = render(&reference(), Format::Json, false).unwrap();
        check("timers_reference.json", &json);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["intervals"][0]["rows"][2]["strategy"], "timerfd");
        assert_eq!(v["intervals"][0]["rows"][2]["slack"], "one_ns");
        assert_eq!(
            v["intervals"][0]["rows"][3]["slack"],
            serde_json::Value::Null
        );
        assert_eq!(v["intervals"][0]["pick"]["row"], 2);
        assert_eq!(v["intervals"][0]["pick"]["provisional"], false);
        assert_eq!(v["intervals"][1]["pick"]["provisional"], true);
        let back: TimersReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, reference());
    }
}
