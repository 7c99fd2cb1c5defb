//! Command-line arguments. Parsing only: each subcommand calls one library function.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use framelab::report::Format;
use framelab::sample::{parse_every, SourceKind};
use framelab::units::{parse_count, parse_duration, parse_fps};

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
pub enum Command {
    /// Run a command in a session, record every frame's stages, print the report
    Run(RunArgs),
    /// Print the report of a run file
    Report(ReportArgs),
    /// Run the built-in instrumented pipeline (capture → convert → encode → packetize → send) and report it
    Demo(DemoArgs),
    /// The demo's pipeline itself, as launched by `framelab demo`
    #[command(hide = true)]
    DemoPipeline(PipelineArgs),
    /// Show what each telemetry source reads on this machine (GPU, CPU frequency, power, threads)
    Sources(SourcesArgs),
}

#[derive(Args, Debug)]
pub struct SamplingArgs {
    /// Time between telemetry readings (GPU clocks and power, CPU frequency, RAPL, threads); at least 1ms
    #[arg(long, value_parser = parse_every, default_value = "50ms", value_name = "DUR")]
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
    /// Readings to take, --sample-every apart
    #[arg(long, value_parser = parse_count, default_value = "3")]
    pub count: u64,
    /// Also read the threads of this process
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
}

#[derive(Args, Debug)]
pub struct TargetArgs {
    /// Target frame rate; the budget is 1/fps
    #[arg(long, value_parser = parse_fps, conflicts_with = "budget", allow_hyphen_values = true)]
    pub fps: Option<f64>,
    /// Time one frame may take (e.g. 8.333ms), when it is not 1/fps
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<Duration>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Time at the start excluded from statistics (kept in the run file, flagged)
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Stop the command after this long (SIGINT, then SIGTERM, then SIGKILL); default: until it exits
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Name of the run, shown in reports
    #[arg(long)]
    pub name: Option<String>,
    /// Run file to write (default: NAME-TIMESTAMP.framelab in the current directory)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Also account the CPU of this process (one framelab did not start, e.g. a daemon)
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch_pids: Vec<u32>,
    /// Also account processes with this name (comm, argv[0] or executable name)
    #[arg(long = "watch", value_name = "NAME")]
    pub watch_names: Vec<String>,
    /// Frames (or other work units) the command does, for a throughput when it is not instrumented
    #[arg(long, value_parser = parse_count)]
    pub frames: Option<u64>,
    /// How long the command gets to exit after SIGINT, and again after SIGTERM
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub grace: Duration,
    /// Records per thread ring (power of two; default 65536)
    #[arg(long, value_parser = parse_count)]
    pub ring_records: Option<u64>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Report format printed at the end
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the latest)
    #[arg(long = "run-id")]
    pub run_id: Option<i64>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Target frame rate
    #[arg(long, value_parser = parse_fps, default_value = "120")]
    pub fps: f64,
    /// 1: stages run serially on one thread; 2: consecutive frames overlap on two threads
    #[arg(long, default_value_t = 1)]
    pub depth: u32,
    /// Whole run, warmup included
    #[arg(long, value_parser = parse_duration, default_value = "15s")]
    pub duration: Duration,
    /// Time excluded from statistics at the start
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    pub warmup: Duration,
    /// Run file to write
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct PipelineArgs {
    #[arg(long, value_parser = parse_fps, default_value = "120")]
    pub fps: f64,
    #[arg(long, default_value_t = 1)]
    pub depth: u32,
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
}
