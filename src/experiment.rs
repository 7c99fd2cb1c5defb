//! Experiments: runs of several variants and parameter values, as `framelab bench`
//! records them next to the runs in the run file (docs/run-file.md, "Experiments").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How a run of an experiment ended, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Measured: counts in the statistics.
    Ok,
    /// The command crashed or exited non-zero: kept, reported, excluded from statistics.
    Failed,
    /// Ctrl-C stopped it: kept, excluded, and run again by `--resume`.
    Interrupted,
    /// A `--warmup-runs` run: done before the measured ones, never compared.
    Warmup,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Warmup => "warmup",
        }
    }

    pub fn from_name(name: &str) -> Option<RunStatus> {
        match name {
            "ok" => Some(RunStatus::Ok),
            "failed" => Some(RunStatus::Failed),
            "interrupted" => Some(RunStatus::Interrupted),
            "warmup" => Some(RunStatus::Warmup),
            _ => None,
        }
    }
}

/// One run's place in an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRun {
    pub run_id: i64,
    pub experiment_id: i64,
    pub variant: String,
    /// Parameter values of this run (`--param KEY=...`), by key.
    pub params: BTreeMap<String, String>,
    /// Which repetition of its variant and parameter values (0-based).
    pub repetition: u32,
    /// Position in the experiment's schedule (0-based).
    pub slot: u32,
    pub status: RunStatus,
    /// Why a run failed or was interrupted, in words.
    pub failure: Option<String>,
}

/// What the machine looked like just before a run: runs whose fingerprints differ are
/// not silently compared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: u32,
    pub kernel: String,
    /// cpufreq governors of the CPUs, distinct values joined by ","; empty without cpufreq.
    pub governor: String,
    /// Turbo/boost: "on", "off", or empty when the machine does not say.
    pub boost: String,
    /// Mean current frequency of the CPUs (MHz).
    pub cpu_mhz: Option<f64>,
    /// 1-minute load average before the run.
    pub load_avg_1m: Option<f64>,
    /// GPU names and driver (nvidia-smi), empty when none was found.
    pub gpu: String,
    pub gpu_driver: String,
    /// `--pin` as given, empty when not pinned.
    pub pinned_cpus: String,
}

impl Fingerprint {
    /// The fields that make two machines (or two setups of one) different, by name.
    /// Frequency and load change from run to run and are not part of it.
    pub fn identity(&self) -> Vec<(&'static str, String)> {
        vec![
            ("host", self.hostname.clone()),
            ("CPU", self.cpu_model.clone()),
            ("cores", self.cores.to_string()),
            ("kernel", self.kernel.clone()),
            ("governor", self.governor.clone()),
            ("boost", self.boost.clone()),
            ("GPU", self.gpu.clone()),
            ("GPU driver", self.gpu_driver.clone()),
            ("pinned CPUs", self.pinned_cpus.clone()),
        ]
    }

    /// The part a plain run (`framelab run`, no fingerprint recorded) still has.
    pub fn from_host(host: &crate::model::Host) -> Fingerprint {
        Fingerprint {
            hostname: host.hostname.clone(),
            cpu_model: host.cpu_model.clone(),
            cores: host.cores,
            kernel: host.kernel.clone(),
            ..Fingerprint::default()
        }
    }
}

/// An experiment as stored: its specification (the bench's options, as JSON) and its runs.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub id: i64,
    pub created_at: String,
    pub spec_json: String,
    pub runs: Vec<ExperimentRun>,
}
