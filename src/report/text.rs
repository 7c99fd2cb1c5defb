//! The report as one document for text and Markdown (the reference layout of DESIGN.md in
//! text; GitHub tables in Markdown): the title, the facts, the tables of typed cells, the
//! telemetry and the notes. The HTML page is the same document (`render::html_writer`):
//! each table carries the title the page shows above it, which text and Markdown leave out.

use super::facts::{facts_in, title};
use super::pipeline::dist_cells;
use crate::analyze::cpu::{self, role_label, split_resolution_ns};
use crate::analyze::Analysis;
use crate::render::columns::Column;
use crate::render::document::{Block, Fact, SpanKind};
use crate::render::value::Value;

/// Every stage, then `total` and `interval`, in µs.
pub(crate) fn stage_rows(a: &Analysis) -> Vec<(String, [Value; 6])> {
    a.stages
        .iter()
        .map(|r| (r.name.clone(), dist_cells(&r.dist)))
        .collect()
}

/// A dash where a duration in µs would be.
const NO_MICROS: Value = Value::Absent {
    mark: "-",
    unit: "µs",
};

/// A table of the report's columns under `title` (the HTML page's heading), set off by a
/// blank line; the figures' unit named once when `unit_once`.
fn columns(title: &str, columns: Vec<Column>, rows: Vec<Vec<Value>>, unit_once: bool) -> Block {
    let mut table = crate::render::columns::table_of(&columns, rows, unit_once);
    table.title = title.to_owned();
    Block::Columns {
        table,
        set_off: true,
    }
}

fn stage_table(a: &Analysis) -> Option<Block> {
    if a.stages.is_empty() {
        return None;
    }
    let mut columns = vec![Column::new("stage", 9)];
    for h in ["min", "p50", "p95", "p99", "max", "mean"] {
        columns.push(Column::new(h, 9));
    }
    if on_cpu_cells(a).is_some() {
        columns.extend(ON_CPU_HEADERS.map(|h| Column::new(h, 10)));
    }
    Some(self::columns("Stages", columns, stage_table_rows(a), true))
}

/// The stage table's rows: name, the wall-time distribution, then each stage's on-CPU p50
/// and p99 where the run has a scheduler timeline (`-` for `total` and `interval`).
pub(crate) fn stage_table_rows(a: &Analysis) -> Vec<Vec<Value>> {
    let on_cpu = on_cpu_cells(a);
    stage_rows(a)
        .into_iter()
        .map(|(name, cells)| {
            let extra = on_cpu.as_ref().map(|by_stage| {
                (by_stage.iter().find(|(stage, _)| *stage == name))
                    .map_or_else(|| [NO_MICROS, NO_MICROS], |(_, c)| c.clone())
            });
            std::iter::once(Value::Text(name))
                .chain(cells)
                .chain(extra.into_iter().flatten())
                .collect()
        })
        .collect()
}

/// The stage table's columns of time on CPU, where the run has a scheduler timeline.
pub(crate) const ON_CPU_HEADERS: [&str; 2] = ["on-CPU p50", "on-CPU p99"];

/// Each stage's on-CPU p50 and p99 (µs), `None` without a scheduler timeline.
pub(crate) fn on_cpu_cells(a: &Analysis) -> Option<Vec<(String, [Value; 2])>> {
    let s = a.sched.as_ref()?;
    let cells: Vec<(String, [Value; 2])> = (s.stages.iter())
        .filter_map(|st| {
            let d = st.on_cpu.as_ref()?;
            Some((
                st.stage.clone(),
                [Value::Micros(d.p50_ns), Value::Micros(d.p99_ns)],
            ))
        })
        .collect();
    (!cells.is_empty()).then_some(cells)
}

/// Process rows, plus an `all` row when there is more than one process. The role column
/// says what each is (`command`, `child`, `service NAME`, `watched ROLE`): two rows of
/// one name (the command and a watched daemon, both `python3`) are told apart by it.
pub(crate) fn process_rows(a: &Analysis) -> Vec<[Value; 8]> {
    let mut rows: Vec<[Value; 8]> = a
        .processes
        .iter()
        .map(|p| {
            // No more digits than the CPU figure has (docs/metrics.md, "Resolution").
            let (resolution, split) = (
                p.cpu_resolution_ns,
                split_resolution_ns(p.cpu_resolution_ns),
            );
            [
                Value::Text(p.name.clone()),
                Value::Text(role_label(p)),
                seconds(p.wall_ns),
                cpu_seconds(p.user_ns, split),
                cpu_seconds(p.sys_ns, split),
                load(p.load_pct, resolution, p.wall_ns),
                cores(p.cores, resolution, p.wall_ns),
                Value::Memory(p.peak_rss_bytes),
            ]
        })
        .collect();
    if let (true, Some(c)) = (a.processes.len() > 1, &a.cpu) {
        let (resolution, split) = (
            c.cpu_resolution_ns,
            split_resolution_ns(c.cpu_resolution_ns),
        );
        let wall = a.window.length_ns;
        rows.push([
            Value::from("all"),
            Value::Missing(""),
            seconds(wall),
            cpu_seconds(c.user_ns, split),
            cpu_seconds(c.sys_ns, split),
            Value::or(c.load_pct.map(|l| load(l, resolution, wall)), "–"),
            Value::or(c.cores.map(|n| cores(n, resolution, wall)), "–"),
            Value::Memory(c.peak_rss_bytes),
        ]);
    }
    rows
}

/// Wall seconds, two decimals.
fn seconds(ns: i64) -> Value {
    Value::fixed(ns as f64 / 1e9, 2)
}

/// CPU seconds known to `resolution_ns`: two decimals at most.
fn cpu_seconds(ns: i64, resolution_ns: i64) -> Value {
    Value::Resolved {
        value: ns as f64 / 1e9,
        resolution: resolution_ns as f64 / 1e9,
        decimals: 2,
    }
}

/// A load % from CPU known to `resolution_ns` over `wall_ns`: one decimal at most.
fn load(pct: f64, resolution_ns: i64, wall_ns: i64) -> Value {
    Value::Resolved {
        value: pct,
        resolution: cpu::load_resolution_pct(resolution_ns, wall_ns),
        decimals: 1,
    }
}

/// Cores (load ÷ 100), two decimals at most.
fn cores(cores: f64, resolution_ns: i64, wall_ns: i64) -> Value {
    Value::Resolved {
        value: cores,
        resolution: cpu::cores_resolution(cpu::load_resolution_pct(resolution_ns, wall_ns), 1),
        decimals: 2,
    }
}

fn process_table(a: &Analysis) -> Option<Block> {
    if a.processes.is_empty() {
        return None;
    }
    let columns = vec![
        Column::new("process", 10),
        Column::words("role", 9),
        Column::new("wall s", 9),
        Column::new("user s", 9),
        Column::new("sys s", 9),
        Column::new("load %", 9),
        Column::new("cores", 8),
        Column::new("peak RSS", 11),
    ];
    let rows: Vec<Vec<Value>> = process_rows(a).into_iter().map(Vec::from).collect();
    Some(self::columns("Processes", columns, rows, false))
}

/// Whether a worst frame was preempted (a scheduler timeline says so).
pub(crate) fn worst_preempted(a: &Analysis) -> bool {
    a.worst_frames.iter().any(|w| w.preempted_ns.is_some())
}

/// Whether the worst frames have work and waits to show (frames of two stages or more).
pub(crate) fn worst_have_waits(a: &Analysis) -> bool {
    a.worst_frames.iter().any(|w| w.work_ns.is_some())
}

/// Stage columns the worst frames table holds at most; the rest add up in one column.
const MAX_WORST_STAGES: usize = 12;

/// The stages the worst frames table shows, in the run's order: all of them, or of more than
/// [`MAX_WORST_STAGES`], those with the longest spans in the worst frames.
fn worst_stages(a: &Analysis) -> Vec<usize> {
    let all = a.stage_names.len();
    if all <= MAX_WORST_STAGES {
        return (0..all).collect();
    }
    let longest = |stage: usize| {
        (a.worst_frames.iter())
            .filter_map(|w| w.stage_ns.get(stage).copied().flatten())
            .max()
    };
    let mut shown: Vec<usize> = (0..all).filter(|&s| longest(s).is_some()).collect();
    shown.sort_by_key(|&s| std::cmp::Reverse(longest(s)));
    shown.truncate(MAX_WORST_STAGES);
    shown.sort_unstable();
    shown
}

/// How many stages with spans in the worst frames have no column of their own.
fn worst_stages_left_out(a: &Analysis, shown: &[usize]) -> usize {
    (0..a.stage_names.len())
        .filter(|s| !shown.contains(s))
        .filter(|&s| {
            (a.worst_frames.iter()).any(|w| w.stage_ns.get(s).copied().flatten().is_some())
        })
        .count()
}

/// One row per worst frame: id, end time, total, then each stage shown (`-` where absent)
/// and the sum of those left out, then its work, its waits and its longest wait where frames
/// have waits.
pub(crate) fn worst_rows(a: &Analysis) -> Vec<Vec<Value>> {
    let cell = |ns: Option<i64>| ns.map_or(NO_MICROS, |ns| Value::Micros(ns as f64));
    let waits = worst_have_waits(a);
    let preempted = worst_preempted(a);
    let shown = worst_stages(a);
    let others = worst_stages_left_out(a, &shown) > 0;
    a.worst_frames
        .iter()
        .map(|w| {
            let mut row = vec![
                Value::Count(w.frame as i64),
                Value::fixed(w.t_s, 2),
                Value::Micros(w.total_ns as f64),
            ];
            row.extend(
                shown
                    .iter()
                    .map(|&s| cell(w.stage_ns.get(s).copied().flatten())),
            );
            if others {
                let rest = (w.stage_ns.iter().enumerate())
                    .filter(|(s, _)| !shown.contains(s))
                    .filter_map(|(_, ns)| *ns)
                    .reduce(|a, b| a + b);
                row.push(cell(rest));
            }
            if waits {
                row.push(cell(w.work_ns));
                row.push(cell(w.wait_ns));
                row.push(match (&w.longest_wait, w.longest_wait_ns) {
                    (Some(name), Some(ns)) => Value::Labelled {
                        label: name.clone(),
                        value: Box::new(Value::Micros(ns as f64)),
                    },
                    _ => Value::Missing("-"),
                });
            }
            if preempted {
                row.push(match (w.preempted_ns, &w.preempted_by) {
                    (Some(ns), Some(by)) => Value::By {
                        value: Box::new(Value::Millis(ns)),
                        by: by.clone(),
                    },
                    (Some(ns), None) => Value::Millis(ns),
                    _ => Value::Missing("-"),
                });
            }
            row
        })
        .collect()
}

/// The worst frames' headers after the stages: work, waits, longest wait.
pub(crate) const WORST_WAIT_HEADERS: [&str; 3] = ["work", "waits", "longest wait"];

fn worst_table(a: &Analysis) -> Option<Block> {
    if a.worst_frames.is_empty() {
        return None;
    }
    let mut columns = vec![
        Column::new("worst frames", 13),
        Column::new("t s", 5),
        Column::new("total", 9),
    ];
    let shown = worst_stages(a);
    columns.extend(
        shown
            .iter()
            .map(|&s| Column::new(a.stage_names[s].clone(), 9)),
    );
    let left_out = worst_stages_left_out(a, &shown);
    if left_out > 0 {
        columns.push(Column::new(format!("{left_out} other stages"), 9));
    }
    if worst_have_waits(a) {
        columns.extend(WORST_WAIT_HEADERS.map(|h| Column::new(h, 9)));
    }
    if worst_preempted(a) {
        columns.push(Column::new("preempted", 9));
    }
    let mut table = crate::render::columns::table_of(&columns, worst_rows(a), true);
    table.title = "Worst frames".into();
    // The stages' columns are named by the program.
    table.names.headers = (3..3 + shown.len()).collect();
    Some(Block::Columns {
        table,
        set_off: true,
    })
}

fn wait_table(a: &Analysis) -> Option<Block> {
    let rows = super::pipeline::wait_rows(a.pipeline.as_ref()?)?;
    let mut columns = vec![Column::new("wait", 9)];
    columns.extend(super::pipeline::WAIT_HEADERS.map(|h| Column::new(h, 9)));
    Some(self::columns("Waits between stages", columns, rows, true))
}

fn resource_table(a: &Analysis) -> Option<Block> {
    let rows = super::pipeline::resource_rows(a)?;
    let mut columns = vec![Column::new(super::pipeline::resource_header(a), 10)];
    columns.extend(super::pipeline::resource_busy_headers(a).map(|h| Column::new(h, 9)));
    Some(self::columns(
        "Busy time (what bounds the rate)",
        columns,
        rows,
        false,
    ))
}

/// The report's blocks, the same for text and Markdown: the title, the facts (the command
/// a code span), the tables, telemetry, the notes; every FPS low named when `verbose`
/// (`framelab report --verbose`). The writers colour and escape them.
pub(crate) fn blocks(a: &Analysis, verbose: bool) -> Vec<Block> {
    let facts = (facts_in(a, verbose).into_iter())
        .map(|(label, line)| Fact {
            label: label.to_owned(),
            value: match label {
                "command" => line.into_iter().map(|s| s.with(SpanKind::Code)).collect(),
                _ => line,
            },
            hint: None,
        })
        .collect();
    let mut blocks = vec![Block::Title(title(a)), Block::Facts(facts)];
    blocks.extend(
        [
            stage_table(a),
            wait_table(a),
            process_table(a),
            resource_table(a),
            worst_table(a),
        ]
        .into_iter()
        .flatten(),
    );
    blocks.extend(super::telemetry::blocks(a));
    if !a.notes.is_empty() {
        blocks.push(Block::Notes(
            (a.notes.iter())
                .map(|n| crate::display::text(n).into_owned())
                .collect(),
        ));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::WorstFrame;

    #[test]
    fn worst_frames_of_many_stages_show_the_longest_and_add_up_the_rest() {
        // 20 stages; stage s takes s µs in each worst frame, stage 0 none.
        let stage_ns: Vec<Option<i64>> = (0..20)
            .map(|s| (s > 0).then_some(s as i64 * 1000))
            .collect();
        let a = Analysis {
            stage_names: (0..20).map(|s| format!("s{s}")).collect(),
            worst_frames: vec![WorstFrame {
                frame: 7,
                total_ns: 190_000,
                stage_ns,
                ..WorstFrame::default()
            }],
            ..Analysis::default()
        };
        assert_eq!(worst_stages(&a), (8..20).collect::<Vec<_>>());
        let row = &worst_rows(&a)[0];
        assert_eq!(
            row.len(),
            3 + 12 + 1,
            "frame, t, total, 12 stages, the rest"
        );
        // s1..s7 left out: 1 + … + 7 µs.
        assert_eq!(row.last(), Some(&Value::Micros(28_000.0)));
        let Some(Block::Columns { table, .. }) = worst_table(&a) else {
            panic!("no table");
        };
        let headers = &table.headers;
        assert_eq!(headers[3], "s8", "{headers:?}");
        assert_eq!(headers[15], "7 other stages", "{headers:?}");
        assert!(!headers.iter().any(|h| h == "s7"), "{headers:?}");
    }

    #[test]
    fn worst_frames_of_a_few_stages_show_every_stage() {
        let a = Analysis {
            stage_names: vec!["a".into(), "b".into()],
            worst_frames: vec![WorstFrame {
                stage_ns: vec![Some(5), None],
                ..WorstFrame::default()
            }],
            ..Analysis::default()
        };
        assert_eq!(worst_stages(&a), vec![0, 1]);
        assert_eq!(worst_rows(&a)[0].len(), 3 + 2);
    }
}
