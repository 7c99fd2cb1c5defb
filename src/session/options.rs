//! What `session::run` takes, in the groups the command line has (`cli::RunControlArgs`,
//! `OutputArgs`, `ServiceArgs`, `SamplingArgs`, `LiveArgs` …), and the checks that do not
//! depend on the command.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};

use super::dir::SessionAccess;
use super::prepare::Prepare;
use super::procfs::Procfs;
use super::watch::WatchList;
use crate::model::window::{warmup_conflict, window_conflict};
use crate::model::WarmupFrom;
use crate::usage::UsageError;

/// Everything `framelab run` takes.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub command: Vec<String>,
    /// Name of the run, shown in reports (the program's name when `None`).
    pub name: Option<String>,
    /// `--tag KEY=VALUE`s, stored with the run.
    pub tags: Vec<crate::model::Tag>,
    /// The run file to write (NAME-TIMESTAMP.framelab when `None`).
    pub output: Option<PathBuf>,
    /// Target, warmup and when the run ends.
    pub window: WindowOptions,
    /// Processes framelab did not start (`--watch-pid`, `--watch`).
    pub watch: WatchList,
    /// The command's output: metrics read from it, what is kept.
    pub capture: CaptureOptions,
    /// How the command is started and stopped.
    pub launch: LaunchOptions,
    /// Started before the command and stopped after it (`--service`).
    pub services: ServiceOptions,
    /// The session the SDK records into.
    pub session: SessionOptions,
    /// Telemetry: how often, which sources, read from where.
    pub sampling: crate::sample::SamplingOptions,
    /// What is shown while the run goes.
    pub live: LiveOptions,
    /// Sample call stacks of every process of the run (`--profile[=HZ]`).
    pub profile: Option<crate::profile::ProfileOptions>,
    /// Stages from uprobes (`--probe`, `--frame-arg`, `--frame-probe`).
    pub probes: crate::probes::ProbeOptions,
}

/// The target and the measured window (`cli::RunControlArgs`' timing half).
#[derive(Clone, Debug, Default)]
pub struct WindowOptions {
    pub fps: Option<f64>,
    pub budget: Option<Duration>,
    pub warmup: Duration,
    /// What `warmup` counts from.
    pub warmup_from: WarmupFrom,
    /// `--warmup-frames N`: the window opens once frame N+1 has begun, not after a time.
    pub warmup_frames: Option<u64>,
    pub duration: Option<Duration>,
    pub frames: Option<u64>,
}

/// The command's output (`cli::OutputArgs`).
#[derive(Clone, Debug, Default)]
pub struct CaptureOptions {
    /// Numbers to take from the command's output or result files (`--metric`).
    pub metrics: Vec<crate::output::MetricSpec>,
    /// Capture (and keep) both streams even when no metric reads them (`--keep-output`).
    pub keep_output: bool,
    /// The command's stdout goes to framelab's stderr: the report is on stdout as JSON.
    pub stdout_to_stderr: bool,
}

/// Starting and stopping the command.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    /// Environment variables added for the command (`framelab bench --seed`, the variant).
    pub env: Vec<(String, String)>,
    /// CPUs the command is pinned to (`sched_setaffinity` before exec); empty: not pinned.
    pub cpus: Vec<usize>,
    /// How long the command gets to exit after each of SIGINT and SIGTERM.
    pub grace: Duration,
    /// Run once the services are ready, before the command (`bench --prepare`).
    pub prepare: Option<Prepare>,
}

/// `--service`s (`cli::ServiceArgs`).
#[derive(Clone, Debug, Default)]
pub struct ServiceOptions {
    pub specs: Vec<crate::services::ServiceSpec>,
    /// How long each service may take to get ready.
    pub ready_timeout: Duration,
}

/// The session directory and its rings.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Who besides framelab's user may use the session (`--share-session`, `--session-user`).
    pub access: SessionAccess,
    /// Records per ring (the SDK's default when `None`).
    pub ring_records: Option<u64>,
}

/// What is shown while the run goes (`cli::LiveArgs`).
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// Where the live progress line is told (the command line's, on a terminal; none by
    /// default).
    pub progress: super::progress::ProgressLine,
    /// Print each stage's histogram of the spans that ended in each interval this long
    /// (`--live 5s`).
    pub every: Option<Duration>,
    /// The live histograms' linear layout (`--live-linear STEP`); power-of-two without.
    pub linear: Option<crate::hist::LinearSpec>,
    /// Where the live histograms are written (the command line's standard error).
    pub out: crate::hist::live::LiveOut,
}

/// Validates options that do not depend on the command, with errors that say what to change.
pub fn validate(opts: &RunOptions) -> Result<()> {
    // Options that cannot go together are usage errors (exit 2), like the parser's own.
    let usage = |message: String| Err(UsageError(message).into());
    if opts.command.is_empty() {
        return usage(
            "no command given: put it after --, e.g. framelab run --fps 60 -- ./my-pipeline".into(),
        );
    }
    let window = &opts.window;
    if let Some(duration) = window.duration {
        if duration.is_zero() {
            return usage("--duration must be longer than zero".into());
        }
        if let Some(message) = window_conflict(window.warmup, duration) {
            return usage(message);
        }
    }
    if let Some(message) = warmup_conflict(window.frames, window.warmup, window.warmup_frames) {
        return usage(message);
    }
    opts.sampling.validate().map_err(anyhow::Error::msg)?;
    if let Some(budget) = window.budget {
        if budget.is_zero() {
            bail!("--budget must be longer than zero");
        }
    }
    for &pid in &opts.watch.pids {
        if !Procfs::system().exists(pid) {
            bail!(
                "--watch-pid {pid}: no such process; check the pid with `ps` or use --watch NAME"
            );
        }
    }
    Ok(())
}

/// The shortest interval between two readings of the processes.
pub const ACCOUNTING_MIN_EVERY: Duration = Duration::from_millis(10);

/// How often the processes are read: at `--sample-every`, but at most every 10 ms (a
/// sweep of a big tree costs tens of µs per process).
pub fn accounting_every(sampling: &crate::sample::SamplingOptions) -> Duration {
    sampling.every.max(ACCOUNTING_MIN_EVERY)
}

impl RunOptions {
    /// How often this run reads its processes (see `accounting_every`).
    pub fn accounting_every(&self) -> Duration {
        accounting_every(&self.sampling)
    }
}
