//! Rust values ↔ SQLite columns: the `runs` row, enums as text, u64 as i64.
//!
//! u64 values (frame ids, event keys, counts) are stored as the i64 with the same bits:
//! SQLite integers are signed 64-bit. Ids above i64::MAX read back unchanged in framelab
//! and show as negative numbers in SQL (docs/run-file.md says so).

use rusqlite::types::{Value, ValueRef};
use rusqlite::Row;

use crate::model::{
    EndReason, ExitInfo, Host, ProcessRole, RunMeta, SeriesKind, SourceState, WarmupFrom,
};

pub fn u64_to_sql(v: u64) -> i64 {
    v as i64
}

pub fn u64_from_sql(v: i64) -> u64 {
    v as u64
}

pub fn end_reason_name(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Unfinished => "unfinished",
        EndReason::Duration => "duration",
        EndReason::Exited => "exited",
        EndReason::Interrupted => "interrupted",
    }
}

fn end_reason_from_name(name: &str) -> Option<EndReason> {
    Some(match name {
        "unfinished" => EndReason::Unfinished,
        "duration" => EndReason::Duration,
        "exited" => EndReason::Exited,
        "interrupted" => EndReason::Interrupted,
        _ => return None,
    })
}

pub fn role_name(role: ProcessRole) -> &'static str {
    match role {
        ProcessRole::Command => "command",
        ProcessRole::Child => "child",
        ProcessRole::Watched => "watched",
        ProcessRole::Service => "service",
    }
}

pub fn role_from_name(name: &str) -> Option<ProcessRole> {
    Some(match name {
        "command" => ProcessRole::Command,
        "child" => ProcessRole::Child,
        "watched" => ProcessRole::Watched,
        "service" => ProcessRole::Service,
        _ => return None,
    })
}

pub fn source_state_name(state: SourceState) -> &'static str {
    match state {
        SourceState::On => "on",
        SourceState::Off => "off",
        SourceState::Disabled => "disabled",
        SourceState::Stopped => "stopped",
    }
}

pub fn source_state_from_name(name: &str) -> Option<SourceState> {
    Some(match name {
        "on" => SourceState::On,
        "off" => SourceState::Off,
        "disabled" => SourceState::Disabled,
        "stopped" => SourceState::Stopped,
        _ => return None,
    })
}

pub fn series_kind_name(kind: SeriesKind) -> &'static str {
    match kind {
        SeriesKind::Gauge => "gauge",
        SeriesKind::Counter => "counter",
        SeriesKind::Bitmask => "bitmask",
    }
}

pub fn series_kind_from_name(name: &str) -> Option<SeriesKind> {
    Some(match name {
        "gauge" => SeriesKind::Gauge,
        "counter" => SeriesKind::Counter,
        "bitmask" => SeriesKind::Bitmask,
        _ => return None,
    })
}

/// The `runs` columns that hold `RunMeta`, in the order of `meta_values`.
pub const META_COLUMNS: [&str; 29] = [
    "name",
    "command_json",
    "started_at",
    "framelab_version",
    "host_name",
    "host_cpu_model",
    "host_cores",
    "host_kernel",
    "host_clocksource",
    "clock",
    "target_fps",
    "budget_ns",
    "origin_mono_ns",
    "window_start_ns",
    "window_end_ns",
    "frames_hint",
    "end_reason",
    "exit_code",
    "exit_signal",
    "exit_crashed",
    "dropped_events",
    "invalid_records",
    "names_refused",
    "warmup_ns",
    "duration_ns",
    "collector_cpu_ns",
    "warmup_from",
    "warmup_frames",
    "first_span_ns",
];

/// `meta` as the values of `META_COLUMNS`. `exit_crashed` is NULL exactly when the
/// command has not exited (`meta.exit` is `None`).
pub fn meta_values(meta: &RunMeta) -> Vec<Value> {
    let command_json = serde_json::to_string(&meta.command).unwrap_or_else(|_| "[]".into());
    let opt_int = |v: Option<i64>| v.map_or(Value::Null, Value::Integer);
    let exit = meta.exit.as_ref();
    vec![
        Value::Text(meta.name.clone()),
        Value::Text(command_json),
        Value::Text(meta.started_at.clone()),
        Value::Text(meta.framelab_version.clone()),
        Value::Text(meta.host.hostname.clone()),
        Value::Text(meta.host.cpu_model.clone()),
        Value::Integer(meta.host.cores.into()),
        Value::Text(meta.host.kernel.clone()),
        Value::Text(meta.host.clocksource.clone()),
        Value::Text(meta.clock.clone()),
        meta.target_fps.map_or(Value::Null, Value::Real),
        opt_int(meta.budget_ns),
        Value::Integer(meta.origin_mono_ns),
        Value::Integer(meta.window_start_ns),
        Value::Integer(meta.window_end_ns),
        opt_int(meta.frames_hint.map(u64_to_sql)),
        Value::Text(end_reason_name(meta.end_reason).into()),
        opt_int(exit.and_then(|e| e.code).map(i64::from)),
        opt_int(exit.and_then(|e| e.signal).map(i64::from)),
        opt_int(exit.map(|e| i64::from(e.crashed))),
        Value::Integer(u64_to_sql(meta.dropped_events)),
        Value::Integer(u64_to_sql(meta.invalid_records)),
        Value::Integer(u64_to_sql(meta.names_refused)),
        Value::Integer(meta.warmup_ns),
        opt_int(meta.duration_ns),
        Value::Integer(meta.collector_cpu_ns),
        Value::Text(meta.warmup_from.name().into()),
        opt_int(meta.warmup_frames.map(u64_to_sql)),
        opt_int(meta.first_span_ns),
    ]
}

/// Reads typed cells of one row, naming the table and column when a cell is not what
/// the schema says (a hand-edited or damaged file).
pub struct Cells<'r, 's> {
    pub row: &'r Row<'s>,
    pub table: &'static str,
}

impl Cells<'_, '_> {
    fn get(&self, i: usize) -> anyhow::Result<ValueRef<'_>> {
        Ok(self.row.get_ref(i)?)
    }

    fn bad(&self, i: usize, value: ValueRef<'_>, expected: &str) -> anyhow::Error {
        let column = self.row.as_ref().column_name(i).unwrap_or("?");
        let found = match value {
            ValueRef::Null => "NULL".to_string(),
            ValueRef::Integer(v) => v.to_string(),
            ValueRef::Real(v) => v.to_string(),
            ValueRef::Text(_) => "text".to_string(),
            ValueRef::Blob(_) => "a blob".to_string(),
        };
        anyhow::anyhow!(
            "{}.{column} holds {found} where {expected} belongs",
            self.table
        )
    }

    pub fn int(&self, i: usize) -> anyhow::Result<i64> {
        match self.get(i)? {
            ValueRef::Integer(v) => Ok(v),
            other => Err(self.bad(i, other, "an integer")),
        }
    }

    pub fn opt_int(&self, i: usize) -> anyhow::Result<Option<i64>> {
        match self.get(i)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(v) => Ok(Some(v)),
            other => Err(self.bad(i, other, "an integer or NULL")),
        }
    }

    /// An integer that must fit `T` (an id, a pid, a core count).
    pub fn small<T: TryFrom<i64>>(&self, i: usize) -> anyhow::Result<T> {
        let v = self.int(i)?;
        T::try_from(v).map_err(|_| self.bad(i, ValueRef::Integer(v), "a smaller integer"))
    }

    pub fn opt_small<T: TryFrom<i64>>(&self, i: usize) -> anyhow::Result<Option<T>> {
        match self.opt_int(i)? {
            None => Ok(None),
            Some(v) => T::try_from(v)
                .map(Some)
                .map_err(|_| self.bad(i, ValueRef::Integer(v), "a smaller integer")),
        }
    }

    pub fn opt_real(&self, i: usize) -> anyhow::Result<Option<f64>> {
        match self.get(i)? {
            ValueRef::Null => Ok(None),
            ValueRef::Real(v) => Ok(Some(v)),
            ValueRef::Integer(v) => Ok(Some(v as f64)),
            other => Err(self.bad(i, other, "a number or NULL")),
        }
    }

    pub fn text(&self, i: usize) -> anyhow::Result<String> {
        match self.get(i)? {
            ValueRef::Text(bytes) => Ok(String::from_utf8_lossy(bytes).into_owned()),
            other => Err(self.bad(i, other, "text")),
        }
    }
}

/// `RunMeta` from a row selecting `run_id` then `META_COLUMNS`.
pub fn meta_from_row(row: &Row<'_>) -> anyhow::Result<RunMeta> {
    let c = Cells { row, table: "runs" };
    let command_json = c.text(2)?;
    let command: Vec<String> = serde_json::from_str(&command_json)
        .map_err(|e| anyhow::anyhow!("runs.command_json is not a JSON array of strings ({e})"))?;
    let end_reason_text = c.text(17)?;
    let end_reason = end_reason_from_name(&end_reason_text)
        .ok_or_else(|| anyhow::anyhow!("runs.end_reason {end_reason_text:?} is unknown"))?;
    let crashed = c.opt_int(20)?;
    let exit = match crashed {
        None => None,
        Some(crashed) => Some(ExitInfo {
            code: c.opt_small(18)?,
            signal: c.opt_small(19)?,
            crashed: crashed != 0,
        }),
    };
    Ok(RunMeta {
        id: c.int(0)?,
        name: c.text(1)?,
        command,
        started_at: c.text(3)?,
        framelab_version: c.text(4)?,
        host: Host {
            hostname: c.text(5)?,
            cpu_model: c.text(6)?,
            cores: c.small(7)?,
            kernel: c.text(8)?,
            clocksource: c.text(9)?,
        },
        clock: c.text(10)?,
        target_fps: c.opt_real(11)?,
        budget_ns: c.opt_int(12)?,
        origin_mono_ns: c.int(13)?,
        window_start_ns: c.int(14)?,
        window_end_ns: c.int(15)?,
        frames_hint: c.opt_int(16)?.map(u64_from_sql),
        end_reason,
        exit,
        dropped_events: u64_from_sql(c.int(21)?),
        invalid_records: u64_from_sql(c.int(22)?),
        names_refused: u64_from_sql(c.int(23)?),
        warmup_ns: c.int(24)?,
        duration_ns: c.opt_int(25)?,
        collector_cpu_ns: c.int(26)?,
        warmup_from: {
            let name = c.text(27)?;
            WarmupFrom::from_name(&name).ok_or_else(|| {
                anyhow::anyhow!("runs.warmup_from is '{name}', not launch, first_frame or frames")
            })?
        },
        warmup_frames: c.opt_int(28)?.map(u64_from_sql),
        first_span_ns: c.opt_int(29)?,
        session: Default::default(),
        tags: Vec::new(),
    })
}

/// The `framelab` table key holding a run's `SessionFacts` as JSON.
pub fn session_facts_key(run_id: i64) -> String {
    format!("session_facts.{run_id}")
}
