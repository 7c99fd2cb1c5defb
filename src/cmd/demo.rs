//! `framelab demo`: the built-in pipeline run under a session and reported;
//! `framelab demo-pipeline` is that pipeline itself, the command the session starts.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use framelab::demo;
use framelab::session::{LaunchOptions, RunOptions, WindowOptions};

use super::format::RunReportFormat;
use super::options::{
    profile_options, refuse_experiment_file, refuse_profile_without_file, sampling_options,
    with_live,
};
use super::run::{refuse_html_page, run_and_report, RunPlan};
use super::Outcome;
use crate::cli::{limits, HtmlArgs, LiveArgs, ProfileFlag, SamplingArgs, WarmupModeArgs};

/// The demo's warmup unless --warmup says otherwise (a shorter run takes a fifth of itself).
const DEFAULT_WARMUP: Duration = Duration::from_secs(3);

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Target frame rate (1/60 to 1000000)
    #[arg(long, value_parser = limits::demo_fps, default_value = "120")]
    pub fps: f64,
    /// 1: stages run serially on one thread; 2: consecutive frames overlap on two threads
    #[arg(long, value_parser = limits::depth, default_value = "1")]
    pub depth: u32,
    /// Whole run, warmup included (at most 168h)
    #[arg(long, value_parser = limits::run_length, default_value = "15s")]
    pub duration: Duration,
    /// Time excluded from statistics at the start [default: 3s, or a fifth of a --duration
    /// shorter than 15s] (not with --warmup-frames)
    #[arg(long, value_parser = limits::warmup, conflicts_with = "warmup_frames")]
    pub warmup: Option<Duration>,
    #[command(flatten)]
    pub warmup_mode: WarmupModeArgs,
    /// Run file to write
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: RunReportFormat,
    #[command(flatten)]
    pub html: HtmlArgs,
    /// How frames wait for their slot: one absolute sleep, or sleep then spin (the report's `pacer` line shows how late it woke)
    #[arg(long, value_enum, default_value = "hybrid")]
    pub pacer: crate::cli::choices::PacerKind,
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
    #[arg(long, value_parser = limits::demo_fps, default_value = "120")]
    pub fps: f64,
    #[arg(long, value_parser = limits::depth, default_value = "1")]
    pub depth: u32,
    #[arg(long, value_parser = limits::run_length)]
    pub duration: Option<Duration>,
    #[arg(long, value_enum, default_value = "hybrid")]
    pub pacer: crate::cli::choices::PacerKind,
}

impl TryFrom<DemoArgs> for RunPlan {
    type Error = anyhow::Error;

    /// The demo is a run of `framelab demo-pipeline`, checked as `run` checks its own.
    fn try_from(args: DemoArgs) -> anyhow::Result<RunPlan> {
        checked(args)
    }
}

pub(super) fn run(args: DemoArgs) -> anyhow::Result<Outcome> {
    run_and_report(RunPlan::try_from(args)?)
}

/// `RunPlan::try_from` a demo's arguments.
fn checked(args: DemoArgs) -> anyhow::Result<RunPlan> {
    // Checked before the session starts: a bad --fps fails now, not in the child.
    demo::DemoOptions {
        fps: args.fps,
        depth: args.depth,
        pacer: args.pacer.into(),
        ..Default::default()
    }
    .validate()?;
    if let (Some(_), Some(Duration::ZERO)) = (args.warmup_mode.warmup_from, args.warmup) {
        anyhow::bail!(
            "--warmup-from says where --warmup counts from, and --warmup is 0s: give a warmup, \
             or drop --warmup-from"
        );
    }
    refuse_profile_without_file(&args.profile, args.output.as_deref())?;
    refuse_experiment_file(args.output.as_deref())?;
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let opts = RunOptions {
        command: vec![
            exe,
            "demo-pipeline".into(),
            "--fps".into(),
            args.fps.to_string(),
            "--depth".into(),
            args.depth.to_string(),
            "--pacer".into(),
            demo::PacerKind::from(args.pacer).name().into(),
        ],
        window: WindowOptions {
            fps: Some(args.fps),
            warmup: match (args.warmup, args.warmup_mode.warmup_frames) {
                (_, Some(_)) => Duration::ZERO,
                (Some(given), None) => given,
                (None, None) => DEFAULT_WARMUP.min(args.duration / 5),
            },
            warmup_from: args.warmup_mode.from(),
            warmup_frames: args.warmup_mode.warmup_frames,
            duration: Some(args.duration),
            ..WindowOptions::default()
        },
        name: Some(args.name.unwrap_or_else(|| {
            format!(
                "demo (depth {}, {} pacer)",
                args.depth,
                demo::PacerKind::from(args.pacer).name()
            )
        })),
        output: args.output,
        launch: LaunchOptions {
            grace: std::time::Duration::from_secs(2),
            ..LaunchOptions::default()
        },
        sampling: sampling_options(&args.sampling),
        profile: profile_options(&args.profile),
        ..RunOptions::default()
    };
    let opts = with_live(opts, &args.live)?;
    refuse_html_page(&args.html, &opts)?;
    framelab::session::validate(&opts)?;
    Ok(RunPlan {
        options: opts,
        format: args.format.into(),
        html: args.html,
        history: None,
    })
}

impl TryFrom<PipelineArgs> for demo::DemoOptions {
    type Error = anyhow::Error;

    fn try_from(args: PipelineArgs) -> anyhow::Result<demo::DemoOptions> {
        let options = demo::DemoOptions {
            fps: args.fps,
            depth: args.depth,
            duration: args.duration,
            pacer: args.pacer.into(),
            ..Default::default()
        };
        options.validate()?;
        Ok(options)
    }
}

pub(super) fn pipeline(args: PipelineArgs) -> anyhow::Result<Outcome> {
    demo::run_pipeline(&demo::DemoOptions::try_from(args)?)?;
    Ok(Outcome::Done)
}
