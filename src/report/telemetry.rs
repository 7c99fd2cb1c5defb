//! The telemetry part of the report: one line per source, the metric table, energy per
//! frame, the worst frames with the machine's readings next to them, throttle reasons
//! during late frames, the busiest threads; one set of blocks that text and Markdown lay
//! out each their way, and rows the HTML page shows.

use crate::analyze::telemetry::{Nearest, TelemetrySummary};
use crate::analyze::Analysis;
use crate::model::SourceState;
use crate::render::value::Value;

pub fn state_word(state: SourceState) -> &'static str {
    match state {
        SourceState::On => "on",
        SourceState::Off => "off",
        SourceState::Disabled => "disabled",
        SourceState::Stopped => "stopped",
    }
}

/// `every 50 ms` for the header line.
pub fn every(t: &TelemetrySummary) -> String {
    if t.sources.is_empty() {
        // framelab was killed before the sampler reported: the readings are all there is.
        return "readings kept; how each source fared was not recorded (the recording did not finish)"
            .into();
    }
    if t.every_ns == 0 {
        // Imported readings come when the trace recorded them, not on a period.
        return "as recorded in the imported file".into();
    }
    let ms = t.every_ns as f64 / 1e6;
    if ms >= 1.0 && ms.fract() == 0.0 {
        format!("every {ms:.0} ms")
    } else {
        format!("every {ms} ms")
    }
}

/// (source, state, what it sampled or why not, with its cost).
pub fn source_lines(t: &TelemetrySummary) -> Vec<(String, &'static str, String)> {
    t.sources
        .iter()
        .map(|s| {
            let mut line = s.detail.clone();
            // Imported readings (every_ns 0) cost framelab nothing to take: no reads or cost.
            if (s.state == SourceState::On || s.state == SourceState::Stopped) && s.every_ns > 0 {
                line.push_str(&format!(" · {} reads", s.reads));
                if s.every_ns != t.every_ns && s.every_ns > 0 {
                    line.push_str(&format!(" every {} ms", s.every_ns as f64 / 1e6));
                }
                if let Some(pct) = s.cpu_pct {
                    line.push_str(&format!(" · {pct:.2}% of a core"));
                }
            }
            (s.source.clone(), state_word(s.state), line)
        })
        .collect()
}

pub const METRIC_HEADERS: [&str; 9] = [
    "telemetry",
    "device",
    "samples",
    "min",
    "p50",
    "p95",
    "p99",
    "max",
    "unit",
];

pub fn metric_rows(t: &TelemetrySummary) -> Vec<Vec<Value>> {
    t.metrics
        .iter()
        .map(|m| {
            vec![
                Value::Text(format!("{} {}", m.source, m.metric)),
                Value::Text(m.device.clone()),
                Value::Count(m.samples as i64),
                Value::Reading(m.min),
                Value::Reading(m.p50),
                Value::Reading(m.p95),
                Value::Reading(m.p99),
                Value::Reading(m.max),
                Value::Text(m.unit.clone()),
            ]
        })
        .collect()
}

pub const ENERGY_HEADERS: [&str; 7] = [
    "energy", "device", "from", "mean W", "J", "J/frame", "covered",
];

pub fn energy_rows(t: &TelemetrySummary) -> Vec<Vec<Value>> {
    t.energy
        .iter()
        .map(|e| {
            vec![
                Value::Text(e.source.clone()),
                Value::Text(e.device.clone()),
                Value::Text(e.method.clone()),
                Value::fixed(e.avg_power_w, 1),
                Value::fixed(e.joules, 1),
                Value::or(e.joules_per_frame.map(|j| Value::fixed(j, 4)), "-"),
                Value::percent(e.covered_pct, 1),
            ]
        })
        .collect()
}

fn cell(n: &Nearest) -> Value {
    if let Some(flags) = &n.flags {
        return Value::Text(if flags.is_empty() {
            "none".into()
        } else {
            flags.join("+")
        });
    }
    Value::or(n.value.map(Value::Reading), "-")
}

/// Headers of the worst-frames-with-readings table (after frame, t s, total).
pub fn frame_headers(t: &TelemetrySummary) -> Vec<String> {
    let mut headers = t.frame_columns.clone();
    headers.push("farthest ms".into());
    headers
}

/// One row per worst frame: id, end, total µs, each reading, and the farthest reading's
/// distance from the frame (0: every reading fell inside it).
pub fn frame_rows(t: &TelemetrySummary) -> Vec<Vec<Value>> {
    t.worst_frames
        .iter()
        .map(|f| {
            let mut row = vec![
                Value::Count(f.frame as i64),
                Value::fixed(f.end_s, 2),
                Value::Micros(f.total_ns as f64),
            ];
            row.extend(f.readings.iter().map(cell));
            let farthest = f.readings.iter().filter_map(|r| r.distance_ns).max();
            row.push(Value::or(
                farthest.map(|d| Value::fixed(d as f64 / 1e6, 1)),
                "-",
            ));
            row
        })
        .collect()
}

/// `during 14 late frames: GPU0 sw_power_cap (12) · over the window: GPU0 gpu_idle 12.0%`.
pub fn throttle_line(t: &TelemetrySummary) -> Option<String> {
    let th = t.throttle.as_ref()?;
    let late = if th.late_frames == 0 {
        "no late frames".to_string()
    } else if th.during_late.is_empty() {
        format!(
            "none set during the {} late frame{}",
            th.late_frames,
            if th.late_frames == 1 { "" } else { "s" }
        )
    } else {
        let reasons: Vec<String> = th
            .during_late
            .iter()
            .map(|(name, n)| format!("{name} ({n})"))
            .collect();
        format!(
            "during {} late frame{}: {}",
            th.late_frames,
            if th.late_frames == 1 { "" } else { "s" },
            reasons.join(", ")
        )
    };
    let window = if th.over_window_pct.is_empty() {
        "none set over the window".to_string()
    } else {
        let reasons: Vec<String> = th
            .over_window_pct
            .iter()
            .map(|(name, pct)| format!("{name} {pct:.1}%"))
            .collect();
        format!("over the window: {}", reasons.join(", "))
    };
    Some(format!("{late} · {window}"))
}

pub const THREAD_HEADERS: [&str; 9] = [
    "busiest threads",
    "tid",
    "process",
    "CPU s",
    "load %",
    "ctx vol",
    "ctx invol",
    "minflt",
    "majflt",
];

pub fn thread_rows(t: &TelemetrySummary) -> Vec<Vec<Value>> {
    t.busiest_threads
        .iter()
        .map(|r| {
            vec![
                Value::Text(r.name.clone()),
                Value::Count(r.tid.into()),
                Value::Text(format!("{} ({})", r.process, r.pid)),
                Value::fixed(r.cpu_ns as f64 / 1e9, 2),
                Value::fixed(r.load_pct, 1),
                Value::Count(r.ctx_voluntary),
                Value::Count(r.ctx_involuntary),
                Value::Count(r.minflt),
                Value::Count(r.majflt),
            ]
        })
        .collect()
}

/// The summary, if the run has one.
pub fn of(a: &Analysis) -> Option<&TelemetrySummary> {
    a.telemetry.as_ref()
}

use crate::render::columns::Column;
use crate::render::document::{Block, Fact, Span, State, Tone};

fn columns(headers: &[String], min_width: usize) -> Vec<Column> {
    headers
        .iter()
        .enumerate()
        .map(|(i, h)| Column::new(h.clone(), if i == 0 { 10 } else { min_width }))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A table under `title` (the HTML page's heading) set off by a blank line, with no unit
/// after its header; the headers at `names` are names from outside (escaped whole in
/// Markdown).
fn table(title: &str, columns: Vec<Column>, rows: Vec<Vec<Value>>, names: &[usize]) -> Block {
    let mut table = crate::render::columns::table(&columns, rows, None);
    table.title = title.to_owned();
    table.names.headers = names.to_vec();
    Block::Columns {
        table,
        set_off: true,
    }
}

/// The telemetry blocks of the report, in order; empty without telemetry.
pub fn blocks(a: &Analysis) -> Vec<Block> {
    let Some(t) = of(a) else {
        return Vec::new();
    };
    let items = (source_lines(t).into_iter())
        .map(|(source, state, line)| {
            let tone = match state {
                "stopped" => Some(Tone::Bad),
                "on" => None,
                _ => Some(Tone::Warning),
            };
            State {
                name: source,
                state: Span {
                    tone,
                    ..Span::plain(state)
                },
                detail: vec![Span::name(line)],
            }
        })
        .collect();
    let mut blocks = vec![
        Block::Blank,
        Block::States {
            title: "sampling".into(),
            text: every(t),
            items,
        },
    ];
    if !t.metrics.is_empty() {
        let headers = strings(&METRIC_HEADERS);
        blocks.push(table(
            "Telemetry",
            columns(&headers, 8),
            metric_rows(t),
            &[],
        ));
    }
    if !t.energy.is_empty() {
        let headers = strings(&ENERGY_HEADERS);
        blocks.push(table("Energy", columns(&headers, 9), energy_rows(t), &[]));
    }
    if !t.worst_frames.is_empty() {
        let mut headers = strings(&["worst frames", "t s", "total µs"]);
        headers.extend(frame_headers(t));
        // The readings' columns are named by their sources.
        let names: Vec<usize> = (3..headers.len()).collect();
        blocks.push(table(
            "Worst frames, with telemetry",
            columns(&headers, 7),
            frame_rows(t),
            &names,
        ));
    }
    if let Some(line) = throttle_line(t) {
        blocks.push(Block::Blank);
        blocks.push(Block::Facts(vec![Fact {
            label: "throttle".into(),
            value: vec![Span::name(line)],
            hint: None,
        }]));
    }
    if !t.busiest_threads.is_empty() {
        let headers = strings(&THREAD_HEADERS);
        blocks.push(table("Threads", columns(&headers, 8), thread_rows(t), &[]));
    }
    blocks
}

/// Whole reports of the telemetry fixture against `tests/snapshots/report_telemetry.*`.
/// After an intended change: `UPDATE_SNAPSHOTS=1 cargo test --lib report::telemetry`, then
/// review the diff.
#[cfg(test)]
mod snapshots {
    use crate::analyze::analyze;
    use crate::analyze::telemetry::fixture::telemetry_run;
    use crate::render::Format;
    use crate::report::render;

    use crate::snapshot::check;

    #[test]
    fn telemetry_text() {
        let a = analyze(&telemetry_run());
        check(
            "report_telemetry.txt",
            &render(&a, Format::Text, false).unwrap(),
        );
    }

    #[test]
    fn telemetry_markdown() {
        let a = analyze(&telemetry_run());
        check(
            "report_telemetry.md",
            &render(&a, Format::Markdown, false).unwrap(),
        );
    }

    #[test]
    fn telemetry_json_round_trips() {
        let a = analyze(&telemetry_run());
        let json = render(&a, Format::Json, false).unwrap();
        check("report_telemetry.json", &json);
        // serde_json parses floats to within an ulp, not exactly: compare what is exact.
        let back: crate::analyze::Analysis = serde_json::from_str(&json).unwrap();
        let (got, want) = (back.telemetry.unwrap(), a.telemetry.unwrap());
        assert_eq!(got.sources, want.sources);
        assert_eq!(got.frame_columns, want.frame_columns);
        assert_eq!(got.busiest_threads, want.busiest_threads);
        assert_eq!(got.throttle, want.throttle);
        assert_eq!(got.worst_frames, want.worst_frames);
        assert_eq!(got.energy.len(), want.energy.len());
        for (g, w) in got.energy.iter().zip(&want.energy) {
            assert!((g.joules - w.joules).abs() < 1e-12 && g.method == w.method);
        }
    }

    #[test]
    fn a_recording_cut_short_keeps_its_readings_and_says_so() {
        let mut run = telemetry_run();
        run.telemetry.sources.clear();
        let text = render(&analyze(&run), Format::Text, false).unwrap();
        assert!(
            text.contains("sampling  readings kept; how each source fared was not recorded"),
            "{text}"
        );
        assert!(text.contains("nvml sm_clock"), "{text}");
    }

    #[test]
    fn colour_codes_do_not_shift_the_source_lines() {
        let a = analyze(&telemetry_run());
        let plain = render(&a, Format::Text, false).unwrap();
        let coloured = render(&a, Format::Text, true).unwrap();
        let strip = |s: &str| {
            let mut out = String::new();
            let mut escape = false;
            for c in s.chars() {
                match (escape, c) {
                    (false, '\x1b') => escape = true,
                    (true, 'm') => escape = false,
                    (false, c) => out.push(c),
                    _ => {}
                }
            }
            out
        };
        assert_eq!(strip(&coloured), plain);
    }
}
