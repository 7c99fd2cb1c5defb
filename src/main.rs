mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};
use framelab::model::EndReason;
use framelab::report::{self, Format};
use framelab::session::{self, RunOptions};
use framelab::{analyze, demo, store};

/// framelab failed (bad input, unreadable file): 1. Usage errors: 2 (clap).
/// The measured command crashed, failed, or broke the SDK's limits: 3. Interrupted by Ctrl-C: 130.
const EXIT_COMMAND_FAILED: u8 = 3;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// The whole cause chain on one line.
fn one_line(error: &anyhow::Error) -> String {
    format!("{error:#}").replace('\n', " ")
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => {
            let opts = RunOptions {
                command: args.command,
                fps: args.target.fps,
                budget: args.target.budget,
                warmup: args.warmup,
                duration: args.duration,
                name: args.name,
                output: args.output,
                watch_pids: args.watch_pids,
                watch_names: args.watch_names,
                frames: args.frames,
                grace: args.grace,
                ring_records: args.ring_records,
                progress: std::io::stderr().is_terminal(),
                sampling: sampling_options(&args.sampling),
            };
            run_and_report(&opts, args.format)
        }
        Command::Report(args) => {
            let run = store::load_run(&args.run, args.run_id)?;
            print!(
                "{}",
                report::render(&analyze::analyze(&run), args.format, use_color())
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => {
            let exe = std::env::current_exe()?.to_string_lossy().into_owned();
            let opts = RunOptions {
                command: vec![
                    exe,
                    "demo-pipeline".into(),
                    "--fps".into(),
                    args.fps.to_string(),
                    "--depth".into(),
                    args.depth.to_string(),
                ],
                fps: Some(args.fps),
                warmup: args.warmup,
                duration: Some(args.duration),
                name: Some(format!("demo (depth {})", args.depth)),
                output: args.output,
                grace: std::time::Duration::from_secs(2),
                progress: std::io::stderr().is_terminal(),
                ..RunOptions::default()
            };
            demo::DemoOptions {
                fps: args.fps,
                depth: args.depth,
                ..Default::default()
            }
            .validate()?;
            run_and_report(&opts, args.format)
        }
        Command::Sources(args) => {
            let opts = sampling_options(&args.sampling);
            let mut pids = args.pids.clone();
            pids.sort_unstable();
            let tree = framelab::sample::ProcessTree::fixed(
                framelab::session::procfs::Procfs::system(),
                pids,
            );
            let count = u32::try_from(args.count).unwrap_or(u32::MAX);
            let (sources, series, samples) = framelab::sample::read_once(&opts, tree, count);
            print!(
                "{}",
                report::sources(&sources, &series, &samples, opts.every)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::DemoPipeline(args) => {
            let opts = demo::DemoOptions {
                fps: args.fps,
                depth: args.depth,
                duration: args.duration,
                ..Default::default()
            };
            demo::run_pipeline(&opts)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_and_report(opts: &RunOptions, format: Format) -> anyhow::Result<ExitCode> {
    let outcome = session::run(opts)?;
    let run = store::load_run(&outcome.path, Some(outcome.run_id))?;
    print!(
        "{}",
        report::render(&analyze::analyze(&run), format, use_color())
    );
    eprintln!(
        "framelab: run file {} (framelab report {})",
        outcome.path.display(),
        outcome.path.display()
    );
    if run.meta.names_refused > 0 {
        eprintln!(
            "framelab: {} names were refused: a process may intern {} names; create Stage/Counter/Event names once, outside the frame loop",
            run.meta.names_refused,
            framelab_probe::wire::MAX_NAMES
        );
    }
    let failed = run.meta.names_refused > 0
        || outcome
            .exit
            .as_ref()
            .is_some_and(|e| e.crashed || e.code.is_some_and(|c| c != 0));
    Ok(if outcome.end_reason == EndReason::Interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed {
        ExitCode::from(EXIT_COMMAND_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn sampling_options(args: &cli::SamplingArgs) -> framelab::sample::SamplingOptions {
    let mut options = framelab::sample::SamplingOptions {
        every: args.sample_every,
        disabled: args.no_sample.clone(),
        ..Default::default()
    };
    if let Some(root) = &args.sysfs_root {
        options.roots.sys = root.clone();
    }
    options
}

/// Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
