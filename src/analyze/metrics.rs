//! The metric registry: every fixed metric framelab names, declared once with its key,
//! label, unit, which way is better, how to read it from an analysis, and what it means.
//! The report's fps line and the HTML page's fps curve take the FPS lows from here,
//! `compare` (and `history`, which keeps compare's metrics) the run-level metrics, and
//! the Python package a generated copy (`python/framelab/_metrics.py`, held equal by a
//! test). Metrics named after a run's own things (a stage's p99, a role's CPU, a device's
//! energy, a metric from output) are built from these rules in `compare::metrics`.
//! Definitions: docs/metrics.md.

use serde::{Deserialize, Serialize};

use super::{Analysis, FpsSummary};
use crate::stats::Direction;

/// A metric's unit. Serialised as one string: the built-in units by name (`fps`,
/// `microseconds`, ...), a metric from output by the unit its definition gave (`req/s`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unit {
    Fps,
    Microseconds,
    Seconds,
    Percent,
    Bytes,
    Joules,
    Watts,
    /// CPU seconds per second: how many cores' worth of work.
    Cores,
    /// `[UNIT]` of a `--metric` definition, as given (empty when none was).
    Custom(String),
}

const BUILT_IN_UNITS: [(&str, Unit); 8] = [
    ("fps", Unit::Fps),
    ("microseconds", Unit::Microseconds),
    ("seconds", Unit::Seconds),
    ("percent", Unit::Percent),
    ("bytes", Unit::Bytes),
    ("joules", Unit::Joules),
    ("watts", Unit::Watts),
    ("cores", Unit::Cores),
];

impl Unit {
    /// The unit named `key` (as JSON and the history store carry it).
    pub fn from_key(key: &str) -> Unit {
        (BUILT_IN_UNITS.iter())
            .find(|(name, _)| *name == key)
            .map_or_else(|| Unit::Custom(key.to_owned()), |(_, u)| u.clone())
    }

    /// The name JSON carries.
    pub fn key(&self) -> &str {
        match self {
            Unit::Custom(text) => text,
            built_in => BUILT_IN_UNITS
                .iter()
                .find(|(_, u)| u == built_in)
                .map_or("", |(name, _)| name),
        }
    }
}

impl Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Unit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Unit, D::Error> {
        Ok(Unit::from_key(&String::deserialize(deserializer)?))
    }
}

/// Which run-level metric: what a consumer matches on to read it its own way (`compare`
/// resamples from its per-run data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFigure {
    Fps,
    Late,
    CpuPerFrame,
    Load,
    Cores,
    PeakRss,
    Wall,
    Cpu,
}

/// A metric of the whole run, one value per run.
pub struct RunMetric {
    pub figure: RunFigure,
    /// What `--show`, JSON, CSV and the history store call it.
    pub key: &'static str,
    /// How tables name it.
    pub label: &'static str,
    pub unit: Unit,
    pub direction: Direction,
    /// Its value in `unit`, from a run's analysis; `None` when the run lacks it.
    pub read: fn(&Analysis) -> Option<f64>,
    pub help: &'static str,
}

use Direction::{HigherIsBetter, LowerIsBetter};

/// Every run-level metric `compare` judges, in its table order (fps leads; the stage,
/// wait and total percentiles come between it and the rest).
pub const RUN_METRICS: [RunMetric; 8] = [
    RunMetric {
        figure: RunFigure::Fps,
        key: "fps",
        label: "fps",
        unit: Unit::Fps,
        direction: HigherIsBetter,
        read: |a| a.observed_fps,
        help: "observed fps: measured frames ÷ the window's length in seconds",
    },
    RunMetric {
        figure: RunFigure::Late,
        key: "late",
        label: "late frames",
        unit: Unit::Percent,
        direction: LowerIsBetter,
        read: |a| {
            let late = a.late.as_ref()?;
            (a.frames > 0 && !a.frames_from_hint)
                .then(|| late.late_frames as f64 / a.frames as f64 * 100.0)
        },
        help: "frames whose total is over the budget, % of measured frames",
    },
    RunMetric {
        figure: RunFigure::CpuPerFrame,
        key: "cpu_per_frame",
        label: "CPU per frame",
        unit: Unit::Microseconds,
        direction: LowerIsBetter,
        read: |a| Some(a.cpu.as_ref()?.cpu_per_frame_ns? / 1e3),
        help: "user + system CPU of every process over the window ÷ measured frames, µs",
    },
    RunMetric {
        figure: RunFigure::Load,
        key: "load",
        label: "load",
        unit: Unit::Percent,
        direction: LowerIsBetter,
        read: |a| a.cpu.as_ref()?.load_pct,
        help: "CPU time ÷ the window's length, % (100 = one core busy)",
    },
    RunMetric {
        figure: RunFigure::Cores,
        key: "cores",
        label: "cores",
        unit: Unit::Cores,
        direction: LowerIsBetter,
        read: |a| Some(a.cpu.as_ref()?.load_pct? / 100.0),
        help: "load ÷ 100: how many cores' worth of work",
    },
    RunMetric {
        figure: RunFigure::PeakRss,
        key: "peak_rss",
        label: "peak RSS",
        unit: Unit::Bytes,
        direction: LowerIsBetter,
        read: |a| {
            let bytes = a.cpu.as_ref()?.peak_rss_bytes;
            (bytes > 0).then_some(bytes as f64)
        },
        help: "the largest resident set of any measured process, bytes",
    },
    RunMetric {
        figure: RunFigure::Wall,
        key: "wall",
        label: "wall",
        unit: Unit::Seconds,
        direction: LowerIsBetter,
        read: |a| Some(a.window.length_ns as f64 / 1e9),
        help: "the window's length, s (compared only for commands that end by themselves)",
    },
    RunMetric {
        figure: RunFigure::Cpu,
        key: "cpu",
        label: "CPU",
        unit: Unit::Seconds,
        direction: LowerIsBetter,
        read: |a| {
            let c = a.cpu.as_ref()?;
            Some(c.user_ns.saturating_add(c.sys_ns) as f64 / 1e9)
        },
        help: "user + system CPU of every process over the window, s",
    },
];

/// The run-level metric `key`.
pub fn run_metric(key: &str) -> Option<&'static RunMetric> {
    RUN_METRICS.iter().find(|m| m.key == key)
}

/// One of the fps line's rates (docs/metrics.md, "FPS percentiles and the 1% lows"): fps,
/// higher is better.
pub struct FpsLow {
    /// Its name in the report, JSON (`fps.NAME`, `p0.1` as `p0_1`) and the HTML page.
    pub name: &'static str,
    pub read: fn(&FpsSummary) -> Option<f64>,
    /// Kept in the brief fps line (the others need `--verbose`).
    pub brief: bool,
    /// Marked on the HTML page's fps curve.
    pub on_curve: bool,
    pub help: &'static str,
}

/// The fps line's rates after its mean, in the order the report names them.
pub const FPS_LOWS: [FpsLow; 9] = [
    FpsLow {
        name: "p50",
        read: |f| f.p50,
        brief: true,
        on_curve: false,
        help: "the median frame rate: 1e6 ÷ Q(0.5) of the interval in µs",
    },
    FpsLow {
        name: "p10",
        read: |f| f.p10,
        brief: false,
        on_curve: false,
        help: "the rate 90% of the intervals achieve or beat",
    },
    FpsLow {
        name: "p5",
        read: |f| f.p5,
        brief: false,
        on_curve: false,
        help: "the rate 95% of the intervals achieve or beat",
    },
    FpsLow {
        name: "p1",
        read: |f| f.p1,
        brief: true,
        on_curve: true,
        help: "the rate 99% of the intervals achieve or beat: 1e6 ÷ Q(0.99)",
    },
    FpsLow {
        name: "low1_avg",
        read: |f| f.low1_avg,
        brief: true,
        on_curve: true,
        help: "1e6 ÷ the mean of every interval ≥ Q(0.99): the slowest 1% on average",
    },
    FpsLow {
        name: "low1_int",
        read: |f| f.low1_int,
        brief: false,
        on_curve: true,
        help: "1e6 ÷ the interval where the running sum of the longest reaches 1% of the time",
    },
    FpsLow {
        name: "p0.1",
        read: |f| f.p0_1,
        brief: false,
        on_curve: true,
        help: "the rate 99.9% of the intervals achieve or beat",
    },
    FpsLow {
        name: "low0_1_avg",
        read: |f| f.low0_1_avg,
        brief: true,
        on_curve: true,
        help: "low1_avg with 0.1%",
    },
    FpsLow {
        name: "low0_1_int",
        read: |f| f.low0_1_int,
        brief: false,
        on_curve: true,
        help: "low1_int with 0.1%",
    },
];

/// The registry as data (`framelab.metrics/1`): what the Python package's copy holds.
pub fn registry_json() -> serde_json::Value {
    let run: Vec<serde_json::Value> = (RUN_METRICS.iter())
        .map(|m| {
            serde_json::json!({
                "key": m.key,
                "label": m.label,
                "unit": m.unit.key(),
                "direction": m.direction,
                "help": m.help,
            })
        })
        .collect();
    let lows: Vec<serde_json::Value> = (FPS_LOWS.iter())
        .map(|l| {
            serde_json::json!({
                "name": l.name,
                "unit": Unit::Fps.key(),
                "direction": Direction::HigherIsBetter,
                "brief": l.brief,
                "help": l.help,
            })
        })
        .collect();
    serde_json::json!({
        "schema": "framelab.metrics/1",
        "run_metrics": run,
        "fps_lows": lows,
    })
}

/// `python/framelab/_metrics.py`: the registry as a Python module.
pub fn python_module() -> String {
    let json = serde_json::to_string_pretty(&registry_json()).unwrap_or_default();
    format!(
        "\"\"\"framelab's metric registry (src/analyze/metrics.rs): generated, do not edit.\n\
         Regenerated by the test analyze::metrics::tests with UPDATE_SNAPSHOTS=1 set.\"\"\"\n\n\
         import json\n\nREGISTRY = json.loads(r'''\n{json}\n''')\n\n\
         RUN_METRICS = {{m[\"key\"]: m for m in REGISTRY[\"run_metrics\"]}}\n\
         FPS_LOWS = [low[\"name\"] for low in REGISTRY[\"fps_lows\"]]\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze;
    use crate::analyze::fixtures::reference_run;

    /// The Python package reads the registry from a generated module: it must be this one.
    #[test]
    fn the_python_copy_is_the_registry() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/python/framelab/_metrics.py");
        let want = python_module();
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "{path} differs from the registry: regenerate with UPDATE_SNAPSHOTS=1 cargo test \
             --lib analyze::metrics"
        );
    }

    #[test]
    fn keys_are_unique_and_every_low_is_reported_as_json_names_it() {
        let mut keys: Vec<&str> = RUN_METRICS.iter().map(|m| m.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), RUN_METRICS.len());
        let a = analyze(&reference_run());
        let json = serde_json::to_value(a.fps.as_ref().unwrap()).unwrap();
        for low in &FPS_LOWS {
            let field = low.name.replace('.', "_");
            assert!(json.get(&field).is_some(), "fps.{field}");
            let from_json = json[&field].as_f64();
            assert_eq!(
                (low.read)(a.fps.as_ref().unwrap()),
                from_json,
                "{}",
                low.name
            );
        }
    }

    #[test]
    fn reads_the_reference_runs_figures() {
        let a = analyze(&reference_run());
        assert_eq!((run_metric("fps").unwrap().read)(&a), a.observed_fps);
        let wall = (run_metric("wall").unwrap().read)(&a).unwrap();
        assert_eq!(wall, a.window.length_ns as f64 / 1e9);
    }
}
