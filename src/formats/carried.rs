//! The run itself, beyond its spans, carried inside an exported trace so that `framelab
//! import` of a framelab export gives back the run and not only its timeline: name,
//! command, host, start time, target fps and budget, the measured window (warmup start,
//! end), how it ended, the process table, the telemetry sources' status, per-frame
//! counters, records dropped per thread, and imported histograms.
//!
//! It is one JSON object (`"schema": "framelab.export-run/1"`): in a Perfetto export the
//! `description` of the `framelab` track, in a Chrome JSON export
//! `otherData.framelab.description`. The run's metadata is carried as the run file's own
//! JSON of it, so fields added later travel too; on import, fields it lacks keep their
//! defaults.

use serde::{Deserialize, Serialize};

use crate::model::{Histogram, ImportInfo, ProcessStats, Run, RunMeta, SampleSeries, SourceStatus};

pub const SCHEMA: &str = "framelab.export-run/1";

/// What an export carries besides the spans, events and telemetry readings it holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Carried {
    pub schema: String,
    /// `RunMeta` as JSON.
    pub meta: serde_json::Value,
    #[serde(default)]
    pub processes: Vec<ProcessStats>,
    /// The telemetry sources' status (the readings are the trace's counter tracks).
    #[serde(default)]
    pub sources: Vec<SourceStatus>,
    #[serde(default)]
    pub counter_names: Vec<String>,
    /// (frame, counter, value); `counter` indexes `counter_names`.
    #[serde(default)]
    pub counters: Vec<(u64, u16, i64)>,
    /// (pid, tid, records dropped) of the threads that dropped any.
    #[serde(default)]
    pub dropped: Vec<(u32, u32, u64)>,
    #[serde(default)]
    pub histograms: Vec<Histogram>,
    /// How the exported run was itself imported, when it was.
    #[serde(default)]
    pub import: Option<ImportInfo>,
    /// The telemetry series, for formats whose counters hold only a name (Chrome JSON):
    /// a counter named [`super::series_name`] of one of these is given back its series.
    #[serde(default)]
    pub series: Vec<SampleSeries>,
}

impl Carried {
    pub fn of(run: &Run) -> anyhow::Result<Carried> {
        Ok(Carried {
            schema: SCHEMA.into(),
            meta: serde_json::to_value(&run.meta)?,
            processes: run.processes.clone(),
            sources: run.telemetry.sources.clone(),
            counter_names: run.counter_names.clone(),
            counters: (run.counters.iter())
                .map(|c| (c.frame, c.counter, c.value))
                .collect(),
            dropped: (run.threads.iter())
                .filter(|t| t.dropped > 0)
                .map(|t| (t.pid, t.tid, t.dropped))
                .collect(),
            histograms: run.histograms.clone(),
            import: run.import.clone(),
            series: run.telemetry.series.clone(),
        })
    }

    /// The carried block of a trace: `None` when `text` is not one (another tool's
    /// description), `Some(Err)` when it is framelab's but cannot be read.
    pub fn parse(text: &str) -> Option<Result<Carried, String>> {
        if !text.trim_start().starts_with('{') || !text.contains(SCHEMA.rsplit_once('/')?.0) {
            return None;
        }
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        let schema = value.get("schema")?.as_str()?;
        if schema != SCHEMA {
            return Some(Err(format!(
                "its run description is {schema}, which this framelab does not read (it reads \
                 {SCHEMA}); import it with the framelab that exported it"
            )));
        }
        Some(
            serde_json::from_value(value)
                .map_err(|e| format!("its run description is damaged: {e}")),
        )
    }

    /// The run's metadata: the carried fields over the defaults.
    pub fn meta(&self) -> Result<RunMeta, String> {
        let mut merged = serde_json::to_value(RunMeta::default()).map_err(|e| e.to_string())?;
        match (&mut merged, &self.meta) {
            (serde_json::Value::Object(base), serde_json::Value::Object(carried)) => {
                for (k, v) in carried {
                    base.insert(k.clone(), v.clone());
                }
            }
            _ => return Err("its run description has no metadata object".into()),
        }
        serde_json::from_value(merged).map_err(|e| format!("its run metadata is damaged: {e}"))
    }
}
