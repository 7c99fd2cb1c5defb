//! Telemetry: what the machine was doing while the frames ran. One module per source, all
//! read on one thread of their own (`sampler`) at `--sample-every`:
//!
//! - `nvml`: NVIDIA GPUs through the driver's NVML library, loaded at run time;
//! - `amdgpu`: AMD GPUs through sysfs (`/sys/class/drm`);
//! - `cpufreq`: each core's current frequency (`/sys/devices/system/cpu`);
//! - `rapl`: package energy counters (`/sys/class/powercap`);
//! - `threads`: CPU time, context switches and page faults of each thread of the command's
//!   processes (`/proc`).
//!
//! Every source reads below a root directory that tests point at fixture trees. A source
//! that is absent is off with one line saying why; a value that cannot be read is skipped
//! and counted; a source that breaks mid-run stops, keeps what it read and says why. None
//! of it can fail the run.

pub mod amdgpu;
pub mod cpufreq;
pub mod files;
pub mod nvml;
pub mod rapl;
mod readings;
mod sampler;
pub mod threads;
mod tree;

use std::path::PathBuf;
use std::time::Duration;

pub use readings::{Readings, Tick};
pub use sampler::{read_once, Batch, Sampler, Sweep};
pub use tree::ProcessTree;

/// The sources, in the order they are read and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    Nvml,
    Amdgpu,
    Cpufreq,
    Rapl,
    Threads,
}

impl SourceKind {
    pub const ALL: [SourceKind; 5] = [
        SourceKind::Nvml,
        SourceKind::Amdgpu,
        SourceKind::Cpufreq,
        SourceKind::Rapl,
        SourceKind::Threads,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Nvml => "nvml",
            SourceKind::Amdgpu => "amdgpu",
            SourceKind::Cpufreq => "cpufreq",
            SourceKind::Rapl => "rapl",
            SourceKind::Threads => "threads",
        }
    }

    /// Parses a `--no-sample` value.
    pub fn parse(text: &str) -> Result<SourceKind, String> {
        let wanted = text.trim().to_ascii_lowercase();
        SourceKind::ALL
            .into_iter()
            .find(|k| k.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = SourceKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "'{text}' is not a telemetry source: use one of {}",
                    names.join(", ")
                )
            })
    }
}

/// The shortest `--sample-every`: below it the sampler's own cost would become the story.
pub const MIN_EVERY: Duration = Duration::from_millis(1);
pub const DEFAULT_EVERY: Duration = Duration::from_millis(50);

/// Where the sources read from: the real machine, or fixture trees in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    /// `/proc`.
    pub proc: PathBuf,
    /// `/sys`.
    pub sys: PathBuf,
    /// The NVML library to load; `None` tries the driver's usual names.
    pub nvml_library: Option<PathBuf>,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots {
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
            nvml_library: std::env::var_os(nvml::LIBRARY_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// What `framelab run` samples and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplingOptions {
    pub every: Duration,
    /// Sources switched off with `--no-sample`.
    pub disabled: Vec<SourceKind>,
    pub roots: Roots,
}

impl Default for SamplingOptions {
    fn default() -> SamplingOptions {
        SamplingOptions {
            every: DEFAULT_EVERY,
            disabled: Vec::new(),
            roots: Roots::default(),
        }
    }
}

impl SamplingOptions {
    /// Checks `--sample-every`, with an error that says what to type.
    pub fn validate(&self) -> Result<(), String> {
        if self.every < MIN_EVERY {
            return Err(format!(
                "--sample-every {} is too short: the shortest is 1ms (the default is 50ms)",
                humantime::format_duration(self.every)
            ));
        }
        Ok(())
    }
}

/// Parses `--sample-every`: a duration of at least 1 ms.
pub fn parse_every(text: &str) -> Result<Duration, String> {
    let every = crate::units::parse_duration(text)?;
    if every < MIN_EVERY {
        return Err(format!(
            "'{text}' is too short: the shortest is 1ms (the default is 50ms)"
        ));
    }
    Ok(every)
}
