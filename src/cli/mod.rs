//! Command-line arguments. Parsing only: each subcommand calls one library function.
//! Every number goes through a parser of `limits`, which holds its bounds.

pub mod limits;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use framelab::demo::PacerKind;
use framelab::model::WarmupFrom;
use framelab::report::Format;
use framelab::sample::SourceKind;
use framelab::timers;

#[derive(Parser, Debug)]
#[command(
    name = "framelab",
    version,
    about = "Where the time goes in a real-time pipeline: per frame, per stage, against the frame budget"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
// Parsed once per invocation: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run a command in a session, record every frame's stages, print the report
    Run(RunArgs),
    /// Print the report of a run file
    Report(ReportArgs),
    /// Run variants × parameter values RUNS times each, interleaved, into one experiment file
    Bench(Box<BenchArgs>),
    /// Compare the variants of an experiment, or runs from separate files: verdicts with intervals
    Compare(CompareArgs),
    /// Run the built-in instrumented pipeline (capture → convert → encode → packetize → send) and report it
    Demo(DemoArgs),
    /// Measure how precisely this machine waits: lateness and CPU of each wait mechanism, per interval
    Timers(TimersArgs),
    /// The demo's pipeline itself, as launched by `framelab demo`
    #[command(hide = true)]
    DemoPipeline(PipelineArgs),
    /// Read a trace or log another tool wrote (Chrome JSON, Perfetto, WAYLAND_DEBUG, PresentMon, MangoHud, ffmpeg, bpftrace, CSV, JSONL) into a run
    Import(ImportArgs),
    /// Write a run as a Perfetto trace, a Chrome JSON trace or CSV
    Export(ExportArgs),
    /// Print histograms of a stage's or a pair's durations, or a run's imported histograms
    Hist(HistArgs),
    /// Predict fps and latency if a run's stages were scheduled another way (depth, a faster stage, another thread)
    Whatif(WhatifArgs),
    /// Show what each telemetry source reads on this machine (GPU, CPU frequency, power, threads)
    Sources(SourcesArgs),
    /// Where the CPU time went in a run recorded with --profile: by function, per stage, for
    /// the late frames; or how it changed from run file A to B
    Profile(ProfileArgs),
    /// Keep every run's metrics by commit and machine (SQLite or PostgreSQL), show their
    /// trends, export them
    History(framelab::history::cli::HistoryArgs),
}

/// `--profile[=HZ]` of run, bench and demo.
#[derive(Args, Debug)]
pub struct ProfileFlag {
    /// Sample the call stacks of every process of the run (user and kernel) HZ times a
    /// second per CPU busy (default 99; at most the kernel's perf_event_max_sample_rate);
    /// see them with `framelab profile RUN`
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
    pub call_graph: framelab::profile::CallGraph,
}

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// The run file; with a second one, the change from the first to the second (each
    /// side's profiled runs pooled)
    #[arg(required = true, num_args = 1..=2, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Which run of a file holding several
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// Only samples taken in this stage ("(no stage)": outside every stage span)
    #[arg(long)]
    pub stage: Option<String>,
    /// Only samples of this thread: a tid, or a thread name as recorded
    #[arg(long)]
    pub thread: Option<String>,
    /// Only samples of this process: a pid, or a process name
    #[arg(long)]
    pub process: Option<String>,
    /// Only samples in these frames: all, or late (total over the budget)
    #[arg(long, value_enum, default_value = "all", value_name = "SET")]
    pub frame_set: FrameSet,
    #[arg(long, value_enum, default_value = "text")]
    pub format: framelab::profile::render::ProfileFormat,
    /// Functions shown per table (1 to 10000)
    #[arg(long, value_parser = limits::top, default_value = "15", value_name = "N")]
    pub top: usize,
    /// Write here instead of standard output (an SVG or speedscope file, say)
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FrameSet {
    All,
    Late,
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
pub struct SourcesArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Readings to take, --sample-every apart (at most 100000)
    #[arg(long, value_parser = limits::readings, default_value = "3")]
    pub count: u64,
    /// Also read the threads of this process
    #[arg(long = "pid", value_name = "PID", value_parser = limits::pid)]
    pub pids: Vec<u32>,
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
    /// not warmup; a command that records no span counts from launch) or launch
    #[arg(long, value_enum, default_value = "first-frame", value_name = "FROM")]
    pub warmup_from: WarmupFrom,
    /// Exclude the first N frames instead of a time: the window opens once frame N+1 has
    /// begun (not with --warmup; at most 10^9)
    #[arg(long, value_parser = limits::warmup_frames, value_name = "N")]
    pub warmup_frames: Option<u64>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Time at the start excluded from statistics (kept in the run file, flagged; at most 168h)
    #[arg(long, value_parser = limits::warmup, default_value = "0s")]
    pub warmup: Duration,
    #[command(flatten)]
    pub warmup_mode: WarmupModeArgs,
    /// Stop the command after this long (SIGINT, then SIGTERM, then SIGKILL); default: until it exits (at most 168h)
    #[arg(long, value_parser = limits::run_length)]
    pub duration: Option<Duration>,
    /// Name of the run, shown in reports
    #[arg(long)]
    pub name: Option<String>,
    /// Run file to write (default: NAME-TIMESTAMP.framelab in the current directory)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub history: framelab::history::cli::HistoryFlag,
    /// Also account the CPU of this process (one framelab did not start, e.g. a daemon)
    #[arg(long = "watch-pid", value_name = "PID", value_parser = limits::pid)]
    pub watch_pids: Vec<u32>,
    /// Also account processes with this name (comm, argv[0] or executable name)
    #[arg(long = "watch", value_name = "NAME")]
    pub watch_names: Vec<String>,
    /// Frames (or other work units) the command does, for a throughput when it is not instrumented
    #[arg(long, value_parser = limits::frames)]
    pub frames: Option<u64>,
    /// How long the command gets to exit after SIGINT, and again after SIGTERM
    #[arg(long, value_parser = limits::grace, default_value = "2s")]
    pub grace: Duration,
    /// Records per thread ring (a power of two, 4 to 16777216; default 65536)
    #[arg(long, value_parser = limits::ring_records)]
    pub ring_records: Option<u64>,
    /// Let members of GROUP record into the session and read it (default: private to your user)
    #[arg(long, value_name = "GROUP", conflicts_with = "session_user")]
    pub share_session: Option<String>,
    /// Give the session to USER, for a command that changes user (su, setpriv, runuser); needs root
    #[arg(long, value_name = "USER")]
    pub session_user: Option<String>,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub from_output: OutputArgs,
    #[command(flatten)]
    pub services: ServiceArgs,
    #[command(flatten)]
    pub profile: ProfileFlag,
    /// Report format printed at the end
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub html: HtmlArgs,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
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
    /// goes into the run file (they still reach the terminal, but the command sees a pipe)
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
    /// SIGINT, SIGTERM, SIGKILL, also if framelab is killed; its CPU counts under NAME
    #[arg(long = "service", value_name = "NAME=CMD")]
    pub services: Vec<String>,
    /// When service NAME is ready for the command to start: NAME=tcp:PORT,
    /// NAME=tcp:HOST:PORT, NAME=regex:PATTERN (a line of its output), NAME=delay:500ms;
    /// without it, as soon as it started
    #[arg(long = "ready", value_name = "NAME=HOW")]
    pub ready: Vec<String>,
    /// How long a service may take to get ready (at most 1h)
    #[arg(long, value_parser = limits::ready_timeout, default_value = "30s", value_name = "DUR")]
    pub ready_timeout: Duration,
    /// Pin the command (CPUS, or command=CPUS) or a service (NAME=CPUS) to CPUs, e.g.
    /// --pin server=2-3 --pin command=0-1
    #[arg(long = "pin", value_name = "[ROLE=]CPUS")]
    pub pins: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: a list of them all, one line per run)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// html: one self-contained page with plots (best with -o FILE)
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
    /// Write the report to FILE instead of standard output (replaced if it exists)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the written file in the desktop's browser (with -o)
    #[arg(long, requires = "output")]
    pub open: bool,
}

/// `report`'s formats: the run report's, and the HTML page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Text,
    Markdown,
    Json,
    Html,
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

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Files to read (gzip-compressed is fine); several make one run
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The files' format (default: told from the content)
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub input_format: Option<framelab::import::Format>,
    /// Run file to write (default: the first file's name with .framelab)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Name of the run, shown in reports (default: the first file's name)
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The argument holding each slice's frame id (Chrome args, Perfetto debug annotations)
    #[arg(long, value_name = "ARG")]
    pub frame_arg: Option<String>,
    /// Regular expression on slice names: its first group is the frame id (a group named `stage` the stage)
    #[arg(long, value_name = "REGEX")]
    pub frame_regex: Option<String>,
    /// Pair instant events START and END with the same key into spans (stage START:END); repeatable
    #[arg(long = "pair", value_name = "START:END")]
    pub pairs: Vec<String>,
    /// The argument or column holding an event's key, for --pair
    #[arg(long, value_name = "FIELD")]
    pub key: Option<String>,
    /// Count malformed lines or records and go on, instead of stopping at the first
    #[arg(long)]
    pub skip_bad: bool,
    /// Generic CSV/JSONL columns: FIELD=COLUMN, FIELD one of start, end, dur, time, name, frame, thread, pid, key (repeatable)
    #[arg(long = "map", value_name = "FIELD=COLUMN")]
    pub map: Vec<String>,
    /// Unit of bare time numbers in generic CSV/JSONL
    #[arg(long, value_enum, default_value = "ns")]
    pub time_unit: framelab::import::TimeUnit,
    /// Keep only this process (PresentMon Application, a trace's process name)
    #[arg(long, value_name = "NAME")]
    pub process: Option<String>,
    /// The most one input may hold once decompressed (1MiB to 1TiB, e.g. 4GiB): the import
    /// stops with an error past it, so a FIFO or /dev/zero cannot fill the memory
    #[arg(long, value_parser = limits::input_size, default_value = limits::DEFAULT_MAX_INPUT, value_name = "SIZE")]
    pub max_input: u64,
    /// A gzip input may decompress to at most N times its size, past 64MiB (1 to 100000): a
    /// guard against decompression bombs
    #[arg(long, value_parser = limits::ratio, default_value = "200", value_name = "N")]
    pub max_ratio: u64,
    /// Report format printed after importing
    #[arg(
        long = "report",
        value_enum,
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub report_format: Format,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the latest)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    #[arg(long, value_enum)]
    pub format: framelab::export::ExportFormat,
    /// File to write (`-` for standard output)
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct WhatifArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the only one)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// Frames in flight, the stages split over this many threads (1 to 64)
    #[arg(long, value_parser = limits::whatif_depth)]
    pub depth: Option<usize>,
    /// Multiply a stage's recorded durations: encode=0.5 (repeat for more)
    #[arg(long = "stage-scale", value_parser = limits::stage_scale, value_name = "STAGE=FACTOR")]
    pub stage_scale: Vec<(String, f64)>,
    /// Run a stage on another thread (one of the run's, or a new one by that name)
    #[arg(long = "move", value_parser = limits::stage_move, value_name = "STAGE=THREAD")]
    pub moves: Vec<(String, String)>,
    /// Leave the pacer out: frames start as soon as they can (the throughput ceiling)
    #[arg(long)]
    pub unpaced: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct HistArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the latest)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// Durations of this stage (`total` and `interval` work too); default: every stage
    #[arg(long, conflicts_with = "pair")]
    pub stage: Option<String>,
    /// Durations from event START to event END of the same key
    #[arg(long, value_name = "START:END")]
    pub pair: Option<String>,
    /// Power-of-two buckets, bpftrace's layout (the default)
    #[arg(long, conflicts_with_all = ["linear", "buckets", "min", "max"])]
    pub log2: bool,
    #[command(flatten)]
    pub linear: LinearArgs,
    /// One histogram per thread or per process
    #[arg(long, value_enum)]
    pub by: Option<framelab::hist::GroupBy>,
}

/// Histograms printed while the run goes on (`run` and `demo`).
#[derive(Args, Debug)]
pub struct LiveArgs {
    /// Every DUR, print each stage's histogram of the spans since the last print (on stderr);
    /// the interval the run ends in is printed at the end
    #[arg(long, value_parser = limits::live, value_name = "DUR")]
    pub live: Option<Duration>,
    /// The live histograms in linear buckets STEP wide (at most 400) instead of powers of two
    #[arg(long, value_parser = limits::step, value_name = "STEP", requires = "live")]
    pub live_linear: Option<Duration>,
}

/// The linear histogram layout (`hist`, and `run --live` with `--live-linear`).
#[derive(Args, Debug)]
pub struct LinearArgs {
    /// Linear buckets STEP wide (e.g. 100us), under NumSamples, Min, Max, Mean, Variance, SD
    /// and Median; at most 400 buckets (a finer step is widened, and the output says so)
    #[arg(long, value_parser = limits::step, value_name = "STEP")]
    pub linear: Option<Duration>,
    /// Linear layout in N equal buckets from --min to --max (default: the smallest and
    /// largest value); at most 10000
    #[arg(long, value_parser = limits::buckets, value_name = "N", conflicts_with = "linear")]
    pub buckets: Option<u64>,
    /// Linear layout from DUR: smaller values are counted as outside, not drawn
    #[arg(long, value_parser = limits::hist_bound, value_name = "DUR")]
    pub min: Option<Duration>,
    /// Linear layout up to DUR: values at or above it are counted as outside, not drawn
    #[arg(long, value_parser = limits::hist_bound, value_name = "DUR")]
    pub max: Option<Duration>,
}

impl LinearArgs {
    pub fn get(&self) -> framelab::hist::LinearArgs {
        framelab::hist::LinearArgs {
            step: self.linear,
            buckets: self.buckets,
            min: self.min,
            max: self.max,
        }
    }
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Target frame rate
    #[arg(long, value_parser = limits::fps, default_value = "120")]
    pub fps: f64,
    /// 1: stages run serially on one thread; 2: consecutive frames overlap on two threads
    #[arg(long, value_parser = limits::depth, default_value = "1")]
    pub depth: u32,
    /// Whole run, warmup included (at most 168h)
    #[arg(long, value_parser = limits::run_length, default_value = "15s")]
    pub duration: Duration,
    /// Time excluded from statistics at the start
    #[arg(long, value_parser = limits::warmup, default_value = "3s")]
    pub warmup: Duration,
    #[command(flatten)]
    pub warmup_mode: WarmupModeArgs,
    /// Run file to write
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub html: HtmlArgs,
    /// How frames wait for their slot: one absolute sleep, or sleep then spin (stage `pace` shows the error)
    #[arg(long, value_enum, default_value = "hybrid")]
    pub pacer: PacerKind,
    /// Name of the run, shown in reports (default: demo (depth D, PACER pacer))
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub profile: ProfileFlag,
}

#[derive(Args, Debug)]
pub struct PipelineArgs {
    #[arg(long, value_parser = limits::fps, default_value = "120")]
    pub fps: f64,
    #[arg(long, value_parser = limits::depth, default_value = "1")]
    pub depth: u32,
    #[arg(long, value_parser = limits::run_length)]
    pub duration: Option<Duration>,
    #[arg(long, value_enum, default_value = "hybrid")]
    pub pacer: PacerKind,
}

#[derive(Args, Debug)]
pub struct TimersArgs {
    /// Measuring time of each cell (one strategy, slack and scheduling class at one interval)
    #[arg(long, value_parser = limits::timers_duration, default_value = timers::DEFAULT_DURATION)]
    pub duration: Duration,
    /// Intervals to wait, comma-separated (5714us is 175 fps)
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = limits::timers_interval,
        default_value = timers::DEFAULT_INTERVALS,
        allow_hyphen_values = true
    )]
    pub interval: Vec<Duration>,
    /// Precision wanted: the table ends with the cheapest strategy whose p99 lateness is at most this
    #[arg(long, value_parser = limits::timers_interval, default_value = timers::DEFAULT_NEED, allow_hyphen_values = true)]
    pub need: Duration,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Runs of each variant at each combination of parameter values (2 to 10000; 6+ for verdicts you can trust)
    #[arg(short = 'n', long = "runs", value_name = "RUNS", value_parser = limits::runs)]
    pub runs: Option<u32>,
    /// A variant: NAME=COMMAND, split into words like a shell would but not run by one
    /// ('echo hi | cat' prints "hi | cat"; use --shell); {KEY} takes a --param value
    #[arg(long = "variant", value_name = "NAME=CMD")]
    pub variants: Vec<String>,
    /// A parameter swept over its values: KEY=V1,V2,... (used as {KEY} in commands)
    #[arg(long = "param", value_name = "KEY=V1,V2")]
    pub params: Vec<String>,
    /// interleaved (A B A B ...) or shuffled (each round in a seeded random order)
    #[arg(long, value_enum, default_value = "interleaved")]
    pub order: framelab::bench::Order,
    #[command(flatten)]
    pub services: ServiceArgs,
    /// Shell command run before each run (e.g. dropping caches); {KEY} expanded
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Whole runs of each variant (at each parameter value) done and discarded before the
    /// measured ones, in rounds like them; a --resume does them again
    #[arg(long, value_parser = limits::warmup_runs, value_name = "N")]
    pub warmup_runs: Option<u64>,
    /// Shell command run once per variant (per value of each {KEY} it names) before the
    /// bench's first run, e.g. building it; a failure stops the bench
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Shell command run once per variant (as --setup) after the bench's last run, also
    /// when it stops early
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Passed to every run as FRAMELAB_SEED, and seeds --order shuffled
    #[arg(long)]
    pub seed: Option<u64>,
    /// The experiment file (default bench-TIMESTAMP.framelab here)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Continue the experiment in -o FILE where it stopped
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub history: framelab::history::cli::HistoryFlag,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Time at the start of each run excluded from statistics (at most 168h)
    #[arg(long, value_parser = limits::warmup, default_value = "0s")]
    pub warmup: Duration,
    #[command(flatten)]
    pub warmup_mode: WarmupModeArgs,
    /// Stop each run after this long (at most 168h); default: until the command exits
    #[arg(long, value_parser = limits::run_length)]
    pub duration: Option<Duration>,
    /// Frames an uninstrumented command does, for a throughput
    #[arg(long, value_parser = limits::frames)]
    pub frames: Option<u64>,
    /// Also account the CPU of this process
    #[arg(long = "watch-pid", value_name = "PID", value_parser = limits::pid)]
    pub watch_pids: Vec<u32>,
    /// Also account processes with this name
    #[arg(long = "watch", value_name = "NAME")]
    pub watch_names: Vec<String>,
    /// How long a command gets to exit after SIGINT, and again after SIGTERM
    #[arg(long, value_parser = limits::grace, default_value = "2s")]
    pub grace: Duration,
    /// Records per thread ring (a power of two, 4 to 16777216; default 65536)
    #[arg(long, value_parser = limits::ring_records)]
    pub ring_records: Option<u64>,
    #[command(flatten)]
    pub from_output: OutputArgs,
    #[command(flatten)]
    pub compare: CompareSettings,
    #[command(flatten)]
    pub profile: ProfileFlag,
    /// One command (a single variant, for a parameter sweep)
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// How the comparison is judged and printed (compare, and bench at its end).
#[derive(Args, Debug)]
pub struct CompareSettings {
    /// The variant the others are compared with (default: the first)
    #[arg(long)]
    pub baseline: Option<String>,
    /// In a sweep of one variant, the parameter value the others are compared with
    /// (default: the first): V, or KEY=V (repeat for several parameters)
    #[arg(long = "baseline-value", value_name = "[KEY=]V")]
    pub baseline_values: Vec<String>,
    /// Metrics to judge and show, in this order (repeat or comma-separate): a --metric's
    /// NAME, fps, total.p99, encode.p50, cpu_per_frame...; an unknown name lists those
    /// that exist. Steps follow the first metric from output, else fps, else the first;
    /// a sweep shows each named
    #[arg(long = "show", value_name = "METRIC")]
    pub show: Vec<String>,
    /// Changes within ± this are noise (e.g. 2%, 0.5%)
    #[arg(long, value_parser = parse_percent, default_value = "2%")]
    pub noise: f64,
    /// Bootstrap resamples for the intervals (100 to 1000000)
    #[arg(long, value_parser = limits::resamples, default_value = "10000")]
    pub resamples: usize,
    #[arg(long, value_enum, default_value = "text")]
    pub format: framelab::compare::CompareFormat,
    /// Also write the comparison as JSON to FILE (every number; replaced if it exists)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the comparison as CSV to FILE (one row per values × variant × metric)
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the comparison as Markdown to FILE (for a pull request)
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// An experiment file (framelab bench -o), or run files, each FILE[:RUN,RUN] one variant
    #[arg(value_name = "EXPERIMENT|RUN")]
    pub files: Vec<String>,
    /// Name a variant: NAME=FILE[:RUN,RUN] (runs of a file that holds several commands)
    #[arg(long = "variant", value_name = "NAME=FILE")]
    pub variants: Vec<String>,
    #[command(flatten)]
    pub settings: CompareSettings,
    /// Write the comparison to FILE instead of standard output (replaced if it exists)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the written file in the desktop's browser (with -o)
    #[arg(long, requires = "output")]
    pub open: bool,
    /// The name --show had before `bench --metric` came to define metrics; still read here
    #[arg(long = "metric", value_name = "METRIC", hide = true)]
    pub metric_alias: Vec<String>,
    /// Exit 1 when any metric regressed (for CI)
    #[arg(long)]
    pub fail_on_regression: bool,
}

/// "2%", "0.5%" or a fraction "0.02".
fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("'{text}' is not a percentage; write e.g. 2% or 0.5%"))?;
    if !(0.0..1.0).contains(&value) {
        return Err(format!(
            "'{text}' is out of range; the noise band is between 0% and 100%"
        ));
    }
    Ok(value)
}
