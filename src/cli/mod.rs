//! The argument groups several subcommands share (each subcommand's own arguments are in its
//! module of src/cmd). Every number goes through a parser of `limits`, which holds its bounds;
//! `choices` gives the library's choice enums their words.

pub mod choices;
pub mod limits;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use framelab::model::WarmupFrom;
use framelab::sample::SourceKind;
use framelab::session::watch::WatchArg;

/// `--profile[=HZ]` of run, bench and demo.
#[derive(Args, Debug)]
pub struct ProfileFlag {
    /// Sample the call stacks of every process of the run (user and kernel) HZ times a
    /// second per CPU busy (default 99; at most the kernel's perf_event_max_sample_rate);
    /// see them with `framelab profile RUN` (not with -o /dev/null: they are kept in the run file)
    #[arg(long, value_name = "HZ", num_args = 0..=1, require_equals = true,
          default_missing_value = "99", value_parser = limits::profile_hz)]
    pub profile: Option<u64>,
    /// How --profile walks user stacks: dwarf (a copy of the stack unwound with the
    /// binaries' unwind tables; whole stacks without frame pointers) or fp (frame pointers)
    #[arg(
        long,
        value_enum,
        default_value = "dwarf",
        value_name = "HOW",
        requires = "profile"
    )]
    pub call_graph: choices::CallGraph,
}

#[derive(Args, Debug)]
pub struct SamplingArgs {
    /// Time between telemetry readings (GPU clocks and power, CPU frequency, RAPL, threads); 1ms to 1h
    #[arg(long, value_parser = limits::sample_every, default_value = "50ms", value_name = "DUR")]
    pub sample_every: Duration,
    /// Don't read this telemetry source: nvml, amdgpu, cpufreq, rapl or threads (repeat for more)
    #[arg(long = "no-sample", value_parser = SourceKind::parse, value_name = "SOURCE")]
    pub no_sample: Vec<SourceKind>,
    /// Read sysfs below this directory instead of /sys (for tests with fixture trees)
    #[arg(long, hide = true, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct TargetArgs {
    /// Target frame rate (0.001 to 1000000); the budget is 1/fps
    #[arg(long, value_parser = limits::fps, conflicts_with = "budget", allow_hyphen_values = true)]
    pub fps: Option<f64>,
    /// Time one frame may take (e.g. 8.333ms; 1us to 1000s), when it is not 1/fps
    #[arg(long, value_parser = limits::budget)]
    pub budget: Option<Duration>,
}

/// Where the warmup counts from, or a number of frames instead of a time.
#[derive(Args, Debug, Clone)]
pub struct WarmupModeArgs {
    /// What --warmup counts from: first-frame (start-up before the command's first span is
    /// not warmup; a command that records no span counts from launch) or launch [default:
    /// first-frame] (only with a --warmup; not with --warmup-frames)
    #[arg(
        long,
        value_enum,
        value_name = "FROM",
        conflicts_with = "warmup_frames"
    )]
    pub warmup_from: Option<choices::WarmupFrom>,
    /// Exclude the first N frames instead of a time: the window opens where frame N+1
    /// began (not with --warmup; at most 10^9)
    #[arg(long, value_parser = limits::warmup_frames, value_name = "N")]
    pub warmup_frames: Option<u64>,
}

impl ServiceArgs {
    /// `--ready-timeout`, or 30 s.
    pub fn ready_timeout(&self) -> Duration {
        self.ready_timeout
            .unwrap_or(framelab::services::DEFAULT_READY_TIMEOUT)
    }
}

impl WarmupModeArgs {
    /// What the warmup counts from: `--warmup-from`, else the first frame.
    pub fn from(&self) -> WarmupFrom {
        (self.warmup_from).map_or(WarmupFrom::FirstFrame, WarmupFrom::from)
    }
}

impl RunControlArgs {
    /// `--watch-pid` and `--watch` with their roles.
    pub fn watch_list(&self) -> anyhow::Result<framelab::session::watch::WatchList> {
        framelab::session::watch::watch_list(&self.watch_pids, &self.watch_names)
            .map_err(anyhow::Error::msg)
    }

    /// `--warmup-from` says where a `--warmup` counts from: without one (run and bench have
    /// none by default) it would change nothing, so it is refused rather than ignored.
    pub fn warmup_from(&self) -> anyhow::Result<WarmupFrom> {
        if let (Some(from), true) = (self.warmup_mode.warmup_from, self.warmup.is_zero()) {
            let name = match from {
                choices::WarmupFrom::Launch => "launch",
                choices::WarmupFrom::FirstFrame => "first-frame",
            };
            return Err(framelab::usage::UsageError(format!(
                "--warmup-from {name} says where --warmup counts from, and there is no --warmup: \
                 add --warmup DUR, or drop --warmup-from"
            ))
            .into());
        }
        Ok(self.warmup_mode.from())
    }
}

/// The long help of `--metric` (run and bench).
pub const METRIC_HELP: &str = "\
A number the command prints, or writes to a JSON file, taken as a metric of each run and \
judged by compare like fps (repeat for more):

  NAME[UNIT]:WORD:WORD=REGEX               the first ( ) group of the last line matching REGEX
  NAME[UNIT]:WORD=json:FILE:$.path.to.value  a number in a JSON file the command writes

WORDs, in any order: higher or lower (which way is better; bench needs one), stdout or \
stderr (default: both), first or last (which matching line; default: last). [UNIT] is \
optional. Everything after the first = is the regex, matched against one line at a time \
(a line ends at \\n or \\r). Examples:

  --metric 'req_s[req/s]:higher=Requests per second:\\s+([\\d.]+)'    ab
  --metric 'enc_fps[fps]:higher:stderr=fps=\\s*([\\d.]+)'            ffmpeg's progress line
  --metric 'p99[ms]:lower=json:result.json:$.latency.p99'

A stream a metric reads goes through a pipe framelab drains: everything still reaches the \
terminal, but the command sees a pipe there, not a terminal. A metric that is not found is \
no value for that run, with a note saying why (exit status 3), never a zero.";

/// Metrics from the command's output, keeping its output, running it through a shell.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// A number the command prints, as a metric: NAME:higher=REGEX (or :lower), the
    /// regex's first group being the number; e.g. 'req_s:higher=Requests per second:\s+([\d.]+)'
    #[arg(long = "metric", value_name = "NAME:higher=REGEX", long_help = METRIC_HELP)]
    pub metrics: Vec<String>,
    /// Capture stdout and stderr even when no --metric reads them: the last 1 MiB of each
    /// goes into the run file (they still reach the terminal, but the command sees a pipe;
    /// not with -o /dev/null)
    #[arg(long)]
    pub keep_output: bool,
    /// Run the command through sh -c, for pipes, &&, redirections and $VARS (the words
    /// after -- are joined with spaces). Without it no shell runs: 'echo hi | cat' prints
    /// "hi | cat"
    #[arg(long)]
    pub shell: bool,
}

/// Services started before the command and stopped after it, each in its own process group.
#[derive(Args, Debug)]
pub struct ServiceArgs {
    /// Start NAME=CMD before the command (a server, a database...); stopped after it with
    /// SIGINT, SIGTERM, SIGKILL, also if framelab is killed; its CPU counts under NAME.
    /// bench: VARIANT:NAME=CMD for one variant's runs, in place of NAME's for all
    #[arg(long = "service", value_name = "NAME=CMD")]
    pub services: Vec<String>,
    /// When service NAME is ready for the command to start: NAME=tcp:PORT,
    /// NAME=tcp:HOST:PORT, NAME=regex:PATTERN (a line of its output), NAME=delay:500ms;
    /// without it, as soon as it started; bench: VARIANT:NAME=HOW for one variant
    #[arg(long = "ready", value_name = "NAME=HOW")]
    pub ready: Vec<String>,
    /// How long a service may take to get ready (at most 1h) [default: 30s] (with --ready:
    /// without one a service is ready as soon as it started)
    #[arg(long, value_parser = limits::ready_timeout, value_name = "DUR", requires = "ready")]
    pub ready_timeout: Option<Duration>,
    /// Pin the command (CPUS, or command=CPUS) or a service (NAME=CPUS) to CPUs, e.g.
    /// --pin server=2-3 --pin command=0-1; bench: VARIANT:ROLE=CPUS for one variant
    #[arg(long = "pin", value_name = "[ROLE=]CPUS")]
    pub pins: Vec<String>,
}

/// `--html FILE` of run and demo: the HTML report as well as the one printed.
#[derive(Args, Debug)]
pub struct HtmlArgs {
    /// Also write the report as one self-contained HTML page with plots to FILE
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Open the HTML page in the desktop's browser
    #[arg(long, requires = "html")]
    pub open: bool,
}

/// Histograms printed while the run goes on (`run` and `demo`).
#[derive(Args, Debug)]
pub struct LiveArgs {
    /// Every DUR, print each stage's histogram of the spans that ended in that interval (on
    /// stderr), once the run file holds them (within 0.5 s); what ended after the last whole
    /// interval is printed at the end
    #[arg(long, value_parser = limits::live, value_name = "DUR")]
    pub live: Option<Duration>,
    /// The live histograms in linear buckets STEP wide (at most 400) instead of powers of two
    #[arg(long, value_parser = limits::step, value_name = "STEP", requires = "live")]
    pub live_linear: Option<Duration>,
}

/// How each run of the command is measured and ended: `run`'s and `bench`'s common flags.
#[derive(Args, Debug)]
pub struct RunControlArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Time at the start of a run excluded from statistics (kept in the run file, flagged; at most 168h)
    #[arg(long, value_parser = limits::warmup, default_value = "0s")]
    pub warmup: Duration,
    #[command(flatten)]
    pub warmup_mode: WarmupModeArgs,
    /// Stop the command after this long (SIGINT, then SIGTERM, then SIGKILL); default: until it exits (at most 168h)
    #[arg(long, value_parser = limits::run_length)]
    pub duration: Option<Duration>,
    /// Frames (or other work units) the command does, for a throughput when it is not instrumented
    #[arg(long, value_parser = limits::frames)]
    pub frames: Option<u64>,
    /// Also account the CPU of this process (one framelab did not start, e.g. a daemon) and of the children it reaps, under ROLE (default: its name)
    #[arg(long = "watch-pid", value_name = "[ROLE=]PID", value_parser = limits::watch_pid)]
    pub watch_pids: Vec<WatchArg<u32>>,
    /// Also account processes with this name (comm, argv[0] or executable name), under ROLE (default: NAME); as root or with CAP_NET_ADMIN, also those that live milliseconds
    #[arg(long = "watch", value_name = "[ROLE=]NAME", value_parser = framelab::session::watch::parse_watch_name)]
    pub watch_names: Vec<WatchArg<String>>,
    /// How long the command gets to exit after SIGINT, and again after SIGTERM
    #[arg(long, value_parser = limits::grace, default_value = "2s")]
    pub grace: Duration,
    /// Records per thread ring (a power of two, 4 to 16777216; default 65536)
    #[arg(long, value_parser = limits::ring_records)]
    pub ring_records: Option<u64>,
    #[command(flatten)]
    pub history: crate::cmd::HistoryFlag,
}
