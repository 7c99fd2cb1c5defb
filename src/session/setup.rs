//! The run's first state, Prepare: everything made before anything of the run runs, in
//! the order it must be made (the guardian first, the run group before any process, the
//! probes and the output pipes before the run file).

use std::path::PathBuf;

use anyhow::Result;
use framelab_probe::wire;

use super::dir::SessionDir;
use super::executor::Executor;
use super::naming::{default_name, default_output};
use super::options::{validate, RunOptions};
use super::rungroup::RunGroup;
use super::taskstats::ExitSource;
use super::{launch, output};
use crate::model::{RunMeta, WarmupFrom};
use crate::spill::clock::TickClock;
use crate::store::RunWriter;

/// What Prepare made, for the states after it.
pub struct Setup {
    pub wanted_sched: crate::sched::SchedSource,
    pub run_file: crate::destination::RunFile,
    pub output: PathBuf,
    pub run_group: RunGroup,
    pub session: SessionDir,
    pub tick_clock: TickClock,
    pub probes: Option<crate::probes::recorder::Recorder>,
    pub meta: RunMeta,
    pub capture: output::Prepared,
    pub writer: RunWriter,
    /// The command's environment: the session's, then the options'.
    pub env: Vec<(String, String)>,
    pub exit_records: ExitSource,
}

impl Setup {
    /// Checks the options and the command, then makes the run's pieces.
    pub fn prepare(opts: &RunOptions, exec: &mut impl Executor) -> Result<Setup> {
        validate(opts)?;
        let wanted_sched = crate::sched::wanted().map_err(anyhow::Error::msg)?;
        launch::check_runnable(&opts.command[0])?;
        let run_file = crate::destination::RunFile::resolve(
            &opts.output.clone().unwrap_or_else(|| default_output(opts)),
        )?;
        let output = run_file.path().to_owned();
        let clock = if crate::host::tsc_is_invariant() {
            "tsc"
        } else {
            "mono"
        };
        // Before anything else is open: the guardian must hold nothing but its pipe.
        exec.start_guardian(opts.launch.grace)?;
        // Before anything of the run starts: every process of it is born in the group.
        let run_group = exec.make_run_group()?;
        let session = exec.make_session_dir(&opts.session.access)?;
        let tick_clock = TickClock::new();
        // Before the run file: a probe that cannot be placed means no run at all. After
        // the guardian: it must not hold the probes' events.
        let probes = match opts.probes.is_empty() {
            true => None,
            false => Some(
                exec.start_probes(&opts.probes, opts.watch.pids.clone())
                    .map_err(anyhow::Error::msg)?,
            ),
        };
        // After the probes: a run refused for them says that alone.
        if let Some(line) = run_group.fallback_line() {
            log::info!("{line}");
        }
        let meta = run_meta(opts, clock);
        // Before the run file: nothing is recorded if the pipes cannot be made.
        let capture = output::prepare(
            &opts.capture.metrics,
            opts.capture.keep_output,
            opts.capture.stdout_to_stderr,
        )?;
        // Its errors name the file already.
        let writer = RunWriter::create(&output, &meta)?;
        let mut env = vec![
            (
                wire::SESSION_ENV.to_owned(),
                session.path().to_string_lossy().into_owned(),
            ),
            (wire::CLOCK_ENV.to_owned(), clock.to_owned()),
        ];
        if let Some(records) = opts.session.ring_records {
            env.push((wire::RING_RECORDS_ENV.to_owned(), records.to_string()));
        }
        env.extend(opts.launch.env.iter().cloned());
        // Before the launch: the command's first exits are recorded too.
        let exit_records = exec.exit_records();
        exec.take_charge();
        Ok(Setup {
            wanted_sched,
            run_file,
            output,
            run_group,
            session,
            tick_clock,
            probes,
            meta,
            capture,
            writer,
            env,
            exit_records,
        })
    }
}

/// The run's header as known before it starts.
fn run_meta(opts: &RunOptions, clock: &str) -> RunMeta {
    let window = &opts.window;
    let budget_ns = window
        .budget
        .map(|b| b.as_nanos() as i64)
        .or(window.fps.map(|f| (1e9 / f).round() as i64));
    let warmup_ns = window.warmup.as_nanos() as i64;
    RunMeta {
        name: opts
            .name
            .clone()
            .unwrap_or_else(|| default_name(&opts.command)),
        command: opts.command.clone(),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        framelab_version: env!("CARGO_PKG_VERSION").to_owned(),
        host: crate::host::probe(),
        clock: clock.to_owned(),
        target_fps: window.fps,
        budget_ns,
        window_start_ns: warmup_ns,
        warmup_ns,
        warmup_from: match window.warmup_frames {
            Some(_) => WarmupFrom::Frames,
            None => window.warmup_from,
        },
        warmup_frames: window.warmup_frames,
        duration_ns: window.duration.map(|d| d.as_nanos() as i64),
        frames_hint: window.frames,
        tags: opts.tags.clone(),
        ..RunMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::session::options::WindowOptions;

    #[test]
    fn the_header_takes_the_budget_from_the_target_and_the_warmup_from_its_mode() {
        let opts = |budget, warmup_frames| RunOptions {
            command: vec!["/opt/bin/decoder".into(), "-q".into()],
            window: WindowOptions {
                fps: Some(60.0),
                budget,
                warmup: Duration::from_secs(2),
                warmup_from: WarmupFrom::FirstFrame,
                warmup_frames,
                ..WindowOptions::default()
            },
            ..RunOptions::default()
        };
        let meta = run_meta(&opts(None, None), "mono");
        assert_eq!(meta.name, "decoder");
        assert_eq!(meta.budget_ns, Some(16_666_667), "1/60 s, rounded");
        assert_eq!(
            (meta.warmup_ns, meta.window_start_ns),
            (2_000_000_000, 2_000_000_000)
        );
        assert_eq!(meta.warmup_from, WarmupFrom::FirstFrame);
        let meta = run_meta(&opts(Some(Duration::from_millis(10)), Some(30)), "tsc");
        assert_eq!(meta.budget_ns, Some(10_000_000), "--budget wins over --fps");
        assert_eq!(
            meta.warmup_from,
            WarmupFrom::Frames,
            "--warmup-frames counts in frames"
        );
        assert_eq!((meta.warmup_frames, meta.clock.as_str()), (Some(30), "tsc"));
    }
}
