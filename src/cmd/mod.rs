//! The command line. One module per subcommand holds its arguments and one `TryFrom` from
//! them to the library's options (every refusal of that command is there, before anything
//! runs), calls the library and says on standard error what happened; adding an option
//! touches that module alone. The library below never sees clap. How a command ends as an
//! exit status is main.rs's business.

mod bench;
mod bench_progress;
mod compare;
mod demo;
mod export;
mod format;
mod hist;
mod history;
mod import;
mod options;
mod output;
mod probes;
mod profile;
mod report;
mod run;
mod run_progress;
pub mod said;
mod sources;
mod timers;
mod whatif;

use clap::{Parser, Subcommand};

use bench::BenchArgs;
use compare::CompareArgs;
use demo::{DemoArgs, PipelineArgs};
use export::ExportArgs;
use hist::HistArgs;
use import::ImportArgs;
use probes::ProbesArgs;
use profile::ProfileArgs;
use report::ReportArgs;
use run::RunArgs;
use sources::SourcesArgs;
use timers::TimersArgs;
use whatif::WhatifArgs;

pub use history::HistoryFlag;

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
    /// List the functions of a binary that --probe can record as stages, with what a hit
    /// costs by their first instruction
    Probes(ProbesArgs),
    /// Keep every run's metrics by commit and machine (SQLite or PostgreSQL), show their
    /// trends, find the commits where they moved, export them
    History(history::HistoryArgs),
}

/// How a command that did its job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// The comparison found the regression `--fail-on-regression` asked about, or a bench's
    /// cleanup command failed.
    Failed,
    /// The measured command crashed or failed, broke the SDK's limits, did not print a
    /// `--metric` asked for, or the recording is incomplete.
    CommandFailed,
    /// Ctrl-C (or SIGTERM/SIGHUP): what was recorded is kept.
    Interrupted,
}

pub fn dispatch(command: Command) -> anyhow::Result<Outcome> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Probes(args) => probes::run(args),
        Command::Report(args) => report::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Timers(args) => timers::run(args),
        Command::Import(args) => import::run(args),
        Command::Export(args) => export::run(args),
        Command::Hist(args) => hist::run(args),
        Command::Whatif(args) => whatif::run(args),
        Command::Sources(args) => sources::run(args),
        Command::DemoPipeline(args) => demo::pipeline(args),
        Command::History(args) => history::run(args),
    }
}

/// Once the run file is final, Ctrl-C, SIGTERM and SIGHUP kill framelab again: the report
/// or comparison that follows (seconds for a big run) must stay interruptible, and
/// nothing is left to save.
fn default_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: restores the default disposition; no handler runs.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

/// The command line as `main` parses it, for the tests of each command's conversion.
#[cfg(test)]
fn parsed(words: &[&str]) -> Command {
    use clap::Parser;
    match Cli::try_parse_from(words) {
        Ok(cli) => cli.command,
        Err(error) => panic!("{words:?} does not parse: {error}"),
    }
}
