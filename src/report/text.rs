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
use crate::render::human::us;
use crate::render::value::Value;

/// Every stage, then `total` and `interval`, in µs.
pub(crate) fn stage_rows(a: &Analysis) -> Vec<(String, [Value; 6])> {
    a.stages
        .iter()
        .map(|r| (r.name.clone(), dist_cells(&r.dist)))
        .collect()
}

/// A table of the report's columns under `title` (the HTML page's heading), set off by a
/// blank line.
fn columns(title: &str, columns: Vec<Column>, rows: Vec<Vec<Value>>, unit: Option<&str>) -> Block {
    let mut table = crate::render::columns::table(&columns, rows, unit);
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
    Some(self::columns(
        "Stages",
        columns,
        stage_table_rows(a),
        Some("µs"),
    ))
}

/// The stage table's rows: name, the wall-time distribution, then each stage's on-CPU p50
/// and p99 where the run has a scheduler timeline (`-` for `total` and `interval`).
pub(crate) fn stage_table_rows(a: &Analysis) -> Vec<Vec<Value>> {
    let on_cpu = on_cpu_cells(a);
    stage_rows(a)
        .into_iter()
        .map(|(name, cells)| {
            let extra = on_cpu.as_ref().map(|by_stage| {
                (by_stage.iter().find(|(stage, _)| *stage == name)).map_or_else(
                    || [Value::Missing("-"), Value::Missing("-")],
                    |(_, c)| c.clone(),
                )
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
    Some(self::columns("Processes", columns, rows, None))
}

/// Whether a worst frame was preempted (a scheduler timeline says so).
pub(crate) fn worst_preempted(a: &Analysis) -> bool {
    a.worst_frames.iter().any(|w| w.preempted_ns.is_some())
}

/// Whether the worst frames have work and waits to show (frames of two stages or more).
pub(crate) fn worst_have_waits(a: &Analysis) -> bool {
    a.worst_frames.iter().any(|w| w.work_ns.is_some())
}

/// One row per worst frame: id, end time, total, then each stage (`-` where absent), then
/// its work, its waits and its longest wait where frames have waits.
pub(crate) fn worst_rows(a: &Analysis) -> Vec<Vec<Value>> {
    let cell = |ns: Option<i64>| Value::or(ns.map(|ns| Value::Micros(ns as f64)), "-");
    let waits = worst_have_waits(a);
    let preempted = worst_preempted(a);
    a.worst_frames
        .iter()
        .map(|w| {
            let mut row = vec![
                Value::Count(w.frame as i64),
                Value::fixed(w.t_s, 2),
                Value::Micros(w.total_ns as f64),
            ];
            row.extend(w.stage_ns.iter().map(|&ns| cell(ns)));
            if waits {
                row.push(cell(w.work_ns));
                row.push(cell(w.wait_ns));
                row.push(match (&w.longest_wait, w.longest_wait_ns) {
                    (Some(name), Some(ns)) => Value::Text(format!("{name} {}", us(ns as f64))),
                    _ => Value::Missing("-"),
                });
            }
            if preempted {
                row.push(match (w.preempted_ns, &w.preempted_by) {
                    (Some(ns), Some(by)) => {
                        Value::Text(format!("{} by {by}", super::pipeline::ms(ns)))
                    }
                    (Some(ns), None) => Value::Text(super::pipeline::ms(ns)),
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
    columns.extend(a.stage_names.iter().map(|n| Column::new(n.clone(), 9)));
    if worst_have_waits(a) {
        columns.extend(WORST_WAIT_HEADERS.map(|h| Column::new(h, 9)));
    }
    if worst_preempted(a) {
        columns.push(Column::new("preempted", 9));
    }
    let mut table = crate::render::columns::table(&columns, worst_rows(a), Some("µs"));
    table.title = "Worst frames".into();
    // The stages' columns are named by the program.
    table.names.headers = (3..3 + a.stage_names.len()).collect();
    Some(Block::Columns {
        table,
        set_off: true,
    })
}

fn wait_table(a: &Analysis) -> Option<Block> {
    let rows = super::pipeline::wait_rows(a.pipeline.as_ref()?)?;
    let mut columns = vec![Column::new("wait", 9)];
    columns.extend(super::pipeline::WAIT_HEADERS.map(|h| Column::new(h, 9)));
    Some(self::columns(
        "Waits between stages",
        columns,
        rows,
        Some("µs"),
    ))
}

fn resource_table(a: &Analysis) -> Option<Block> {
    let rows = super::pipeline::resource_rows(a)?;
    let mut columns = vec![Column::new(super::pipeline::resource_header(a), 10)];
    columns.extend(super::pipeline::resource_busy_headers(a).map(|h| Column::new(h, 9)));
    Some(self::columns(
        "Busy time (what bounds the rate)",
        columns,
        rows,
        None,
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
