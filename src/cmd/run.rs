//! `framelab run`: runs a command in a session, then reports the run.

use std::path::PathBuf;

use clap::Args;
use framelab::history::commands::HistoryTarget;
use framelab::render::Format;
use framelab::run::{RunExit, RunRequest};
use framelab::session::{
    self, CaptureOptions, LaunchOptions, RunOptions, ServiceOptions, SessionOptions, WindowOptions,
};

use super::format::RunReportFormat;
use super::options::{
    command_cpus, profile_options, refuse_experiment_file, refuse_history_without_file,
    refuse_keep_output_without_file, refuse_profile_without_file, sampling_options, service_specs,
    session_access, shell_command, with_live,
};
use super::output::{emit, html_line, use_color, written, UNKEPT};
use super::{default_signals, Outcome};
use crate::cli::{
    HtmlArgs, LiveArgs, OutputArgs, ProfileFlag, RunControlArgs, SamplingArgs, ServiceArgs,
};

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub control: RunControlArgs,
    /// Name of the run, shown in reports
    #[arg(long)]
    pub name: Option<String>,
    /// A piece of the run's configuration, KEY=VALUE (repeatable): kept in the run file,
    /// shown in the report's header, carried into history
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Run file to write (default: NAME-TIMESTAMP.framelab in the current directory)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
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
    #[command(flatten)]
    pub probes: super::probes::ProbeArgs,
    /// Report format printed at the end
    #[arg(long, value_enum, default_value = "text")]
    pub format: RunReportFormat,
    #[command(flatten)]
    pub html: HtmlArgs,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// A run as asked, checked: every refusal that can come before the launch has come.
pub(super) struct RunPlan {
    pub options: RunOptions,
    pub format: Format,
    pub html: HtmlArgs,
    pub history: Option<HistoryTarget>,
}

impl TryFrom<RunArgs> for RunPlan {
    type Error = anyhow::Error;

    fn try_from(args: RunArgs) -> anyhow::Result<RunPlan> {
        checked(args)
    }
}

pub(super) fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    run_and_report(RunPlan::try_from(args)?)
}

/// `RunPlan::try_from`: the options, then the refusals that need several of them.
fn checked(args: RunArgs) -> anyhow::Result<RunPlan> {
    let watch = args.control.watch_list()?;
    // Checked in this order, so that of several bad options the same one is named first.
    let metrics = framelab::output::parse_metrics(&args.from_output.metrics)?;
    let services = service_specs(&args.services, args.from_output.shell)?;
    let cpus = command_cpus(&args.services.pins)?;
    let warmup_from = args.control.warmup_from()?;
    let tags = framelab::tags::parse_tags(&args.tags)?;
    let access = session_access(&args.share_session, &args.session_user)?;
    let opts = RunOptions {
        command: shell_command(args.command, args.from_output.shell),
        name: args.name,
        tags,
        output: args.output,
        window: WindowOptions {
            fps: args.control.target.fps,
            budget: args.control.target.budget,
            warmup: args.control.warmup,
            warmup_from,
            warmup_frames: args.control.warmup_mode.warmup_frames,
            duration: args.control.duration,
            frames: args.control.frames,
        },
        watch,
        capture: CaptureOptions {
            metrics,
            keep_output: args.from_output.keep_output,
            // `framelab run --format json -- cmd | jq`: stdout holds the report alone.
            stdout_to_stderr: args.format == RunReportFormat::Json,
        },
        launch: LaunchOptions {
            cpus,
            grace: args.control.grace,
            ..LaunchOptions::default()
        },
        services: ServiceOptions {
            specs: services,
            ready_timeout: args.services.ready_timeout(),
        },
        session: SessionOptions {
            access,
            ring_records: args.control.ring_records,
        },
        sampling: sampling_options(&args.sampling),
        profile: profile_options(&args.profile),
        probes: args.probes.options()?,
        ..RunOptions::default()
    };
    let opts = with_live(opts, &args.live)?;
    refuse_history_without_file(&args.control.history, opts.output.as_deref())?;
    refuse_profile_without_file(&args.profile, opts.output.as_deref())?;
    refuse_experiment_file(opts.output.as_deref())?;
    refuse_keep_output_without_file(opts.capture.keep_output, opts.output.as_deref())?;
    let history = HistoryTarget::check(args.control.history.history.as_deref())?;
    refuse_html_page(&args.html, &opts)?;
    session::validate(&opts)?;
    Ok(RunPlan {
        options: opts,
        format: args.format.into(),
        html: args.html,
        history,
    })
}

/// A page that cannot be written is refused before the run, not after it.
pub(super) fn refuse_html_page(html: &HtmlArgs, opts: &RunOptions) -> anyhow::Result<()> {
    if let Some(file) = &html.html {
        framelab::destination::Target::resolve(file)?;
        // Nor one that is the run file: it was refused after the run, which was kept.
        if let Some(run_file) = &opts.output {
            use std::os::unix::fs::MetadataExt;
            let same = match (std::fs::metadata(file), std::fs::metadata(run_file)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino() && a.is_file(),
                (Err(_), Err(_)) => {
                    std::path::absolute(file).ok() == std::path::absolute(run_file).ok()
                }
                _ => false,
            };
            if same {
                anyhow::bail!(
                    "--html {} is the run file (-o {}): give the page a file of its own",
                    file.display(),
                    run_file.display()
                );
            }
        }
    }
    Ok(())
}

/// Runs the planned command in a session, prints its report (and writes its page), adds
/// it to the history; the outcome says how the command ended.
pub(super) fn run_and_report(plan: RunPlan) -> anyhow::Result<Outcome> {
    let RunPlan {
        options,
        format,
        html,
        history,
    } = plan;
    let request = RunRequest {
        options,
        format,
        color: use_color(),
        page: html.html.clone(),
        history,
    };
    let reported = framelab::run::run_and_report(&request, default_signals)?;
    emit(&reported.report)?;
    if let Some(file) = &html.html {
        emit(&html_line(file, format))?;
        written(file, "the HTML report", html.open);
    }
    if reported.kept {
        eprintln!(
            "framelab: run file {} (framelab report {})",
            reported.path.display(),
            reported.path.display()
        );
    } else {
        eprintln!("{UNKEPT}");
    }
    for line in reported.history? {
        eprintln!("{line}");
    }
    if reported.names_refused > 0 {
        eprintln!(
            "framelab: {} names were refused: a process may intern {} names; create Stage/Counter/Event names once, outside the frame loop",
            reported.names_refused,
            framelab_probe::wire::MAX_NAMES
        );
    }
    let unread = reported.unread_metrics;
    if unread > 0 {
        eprintln!(
            "framelab: {unread} metric{} could not be read (the report's notes say why)",
            if unread == 1 { "" } else { "s" }
        );
    }
    if let Some(line) = &reported.failure {
        eprintln!("framelab: {line}");
    }
    Ok(match reported.exit {
        RunExit::Done => Outcome::Done,
        RunExit::CommandFailed => Outcome::CommandFailed,
        RunExit::Interrupted => Outcome::Interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(words: &[&str]) -> anyhow::Result<RunPlan> {
        let super::super::Command::Run(args) = super::super::parsed(words) else {
            panic!("not a run: {words:?}");
        };
        RunPlan::try_from(args)
    }

    /// A run's refusals come from the conversion: nothing is launched to find them.
    #[test]
    fn refusals_come_before_the_launch() {
        let error = |words: &[&str]| planned(words).err().unwrap().to_string();
        let kept = error(&[
            "framelab",
            "run",
            "--keep-output",
            "-o",
            "/dev/null",
            "--",
            "true",
        ]);
        assert!(kept.starts_with("--keep-output keeps the command's output in the run file, and -o /dev/null keeps no file"), "{kept}");
        let window = error(&[
            "framelab",
            "run",
            "--warmup",
            "2s",
            "--duration",
            "1s",
            "--",
            "true",
        ]);
        assert!(window.contains("--warmup"), "{window}");
        let from = error(&["framelab", "run", "--warmup-from", "launch", "--", "true"]);
        assert!(
            from.starts_with("--warmup-from launch says where --warmup counts from"),
            "{from}"
        );
        let plan = planned(&[
            "framelab",
            "run",
            "--fps",
            "60",
            "-o",
            "/dev/null",
            "--",
            "true",
        ])
        .unwrap();
        assert_eq!(plan.format, Format::Text);
        assert!(plan.history.is_none() && plan.html.html.is_none());
    }

    /// A probe option malformed or inconsistent as given is a usage error, exit 2, as a
    /// bad --fps is (these exited 1, the code for what framelab could not do).
    #[test]
    fn a_malformed_probe_option_is_a_usage_error() {
        for given in [
            &["--pair", "enter:exit"][..],
            &["--probe", "encode"],
            &["--probe", "e=./prog:f", "--frame-arg", "e=arg9"],
            &["--frame-arg", "nope=arg1"],
            &["--usdt", "e=./prog:demo:begin"],
            &["--tracepoint", "vblank"],
            &["--probe", "a=./prog:f", "--probe", "b=./prog:f"],
        ] {
            let words = [&["framelab", "run"][..], given, &["--", "true"]].concat();
            let error = planned(&words).err().expect("refused");
            assert!(framelab::usage::is_usage(&error), "{given:?}: {error:#}");
        }
    }
}
