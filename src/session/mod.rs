//! `framelab run`: launching the command in a session, draining rings, accounting, stopping.

mod accounting;
mod clock;
mod collect;
mod dir;
pub mod guard;
mod hold;
mod launch;
mod output;
pub mod prepare;
pub(crate) mod procevents;
pub mod procfs;
mod progress;
mod rings;
mod rungroup;
mod sched;
mod services;
pub mod taskstats;
pub mod watch;
mod write;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::model::window::{warmup_conflict, window_conflict};
use crate::model::{EndReason, ExitInfo, RunMeta, WarmupFrom};
use crate::store::RunWriter;
use framelab_probe::wire;

pub use dir::SessionAccess;
pub use launch::{catch_interrupts, check_runnable, interrupts};
/// Everything `framelab run` takes.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub command: Vec<String>,
    pub fps: Option<f64>,
    pub budget: Option<Duration>,
    pub warmup: Duration,
    /// What `warmup` counts from.
    pub warmup_from: WarmupFrom,
    /// `--warmup-frames N`: the window opens once frame N+1 has begun, not after a time.
    pub warmup_frames: Option<u64>,
    pub duration: Option<Duration>,
    pub name: Option<String>,
    pub output: Option<PathBuf>,
    pub watch_pids: Vec<u32>,
    pub watch_names: Vec<String>,
    /// Roles given with `--watch-pid ROLE=PID` and `--watch ROLE=NAME`.
    pub watch_roles: watch::WatchRoles,
    pub frames: Option<u64>,
    /// How long the command gets to exit after each of SIGINT and SIGTERM.
    pub grace: Duration,
    /// Records per ring (the SDK's default when `None`).
    pub ring_records: Option<u64>,
    /// Who besides framelab's user may use the session (`--share-session`, `--session-user`).
    pub session_access: SessionAccess,
    /// Show the live progress line (on a terminal).
    pub progress: bool,
    /// Environment variables added for the command (`framelab bench --seed`, the variant).
    pub env: Vec<(String, String)>,
    /// CPUs the command is pinned to (`sched_setaffinity` before exec); empty: not pinned.
    pub cpus: Vec<usize>,
    /// Telemetry: how often, which sources, read from where.
    pub sampling: crate::sample::SamplingOptions,
    /// Print each stage's histogram of the last interval this often (`--live 5s`).
    pub live: Option<Duration>,
    /// The live histograms' linear layout (`--live-linear STEP`); power-of-two without.
    pub live_linear: Option<crate::hist::LinearSpec>,
    /// Numbers to take from the command's output or result files (`--metric`).
    pub metrics: Vec<crate::output::MetricSpec>,
    /// Capture (and keep) both streams even when no metric reads them (`--keep-output`).
    pub keep_output: bool,
    /// The command's stdout goes to framelab's stderr: the report is on stdout as JSON.
    pub stdout_to_stderr: bool,
    /// Started before the command and stopped after it (`--service`).
    pub services: Vec<crate::services::ServiceSpec>,
    /// How long each service may take to get ready.
    pub ready_timeout: Duration,
    /// `--tag KEY=VALUE`s, stored with the run.
    pub tags: Vec<crate::model::Tag>,
    /// Run once the services are ready, before the command (`bench --prepare`).
    pub prepare: Option<prepare::Prepare>,
    /// Sample call stacks of every process of the run (`--profile[=HZ]`).
    pub profile: Option<crate::profile::ProfileOptions>,
    /// Stages from uprobes (`--probe`, `--frame-arg`, `--frame-probe`).
    pub probes: crate::probes::ProbeOptions,
}

/// What a finished run left behind.
#[derive(Debug)]
pub struct RunOutcome {
    pub path: PathBuf,
    /// Where the run file is kept; with `-o /dev/null`, a temporary one removed on drop.
    pub file: crate::destination::RunFile,
    pub run_id: i64,
    pub end_reason: EndReason,
    pub exit: Option<ExitInfo>,
    /// The signal that interrupted framelab, when one did.
    pub interrupt_signal: Option<i32>,
    /// Each `--metric`'s value, or why there is none.
    pub metrics: Vec<crate::output::MetricValue>,
    /// Why `--prepare` failed, when it did: the command never started.
    pub prepare_failure: Option<String>,
}

/// Validates options that do not depend on the command, with errors that say what to change.
pub fn validate(opts: &RunOptions) -> Result<()> {
    if opts.command.is_empty() {
        bail!("no command given: put it after --, e.g. framelab run --fps 60 -- ./my-pipeline");
    }
    if let Some(duration) = opts.duration {
        if duration.is_zero() {
            bail!("--duration must be longer than zero");
        }
        if let Some(message) = window_conflict(opts.warmup, duration) {
            bail!(message);
        }
    }
    if let Some(message) = warmup_conflict(opts.frames, opts.warmup, opts.warmup_frames) {
        bail!(message);
    }
    opts.sampling.validate().map_err(anyhow::Error::msg)?;
    if let Some(budget) = opts.budget {
        if budget.is_zero() {
            bail!("--budget must be longer than zero");
        }
    }
    for &pid in &opts.watch_pids {
        if !procfs::Procfs::system().exists(pid) {
            bail!(
                "--watch-pid {pid}: no such process; check the pid with `ps` or use --watch NAME"
            );
        }
    }
    Ok(())
}

/// Runs the command in a session and writes the run file. The report is the caller's.
pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
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
    guard::start(opts.grace)?;
    // Before anything of the run starts: every process of it is born in the group.
    let mut run_group = rungroup::RunGroup::create()?;
    if let Some(line) = run_group.fallback_line() {
        eprintln!("framelab: {line}");
    }
    let session = dir::SessionDir::create(&opts.session_access)?;
    let tick_clock = clock::TickClock::new();
    // Before the run file: a probe that cannot be placed means no run at all. After the
    // guardian: it must not hold the probes' events.
    let probes = match opts.probes.is_empty() {
        true => None,
        false => Some(
            crate::probes::recorder::Recorder::start(&opts.probes, opts.watch_pids.clone())
                .map_err(anyhow::Error::msg)?,
        ),
    };

    let budget_ns = opts
        .budget
        .map(|b| b.as_nanos() as i64)
        .or(opts.fps.map(|f| (1e9 / f).round() as i64));
    let warmup_ns = opts.warmup.as_nanos() as i64;
    let mut meta = RunMeta {
        name: opts
            .name
            .clone()
            .unwrap_or_else(|| default_name(&opts.command)),
        command: opts.command.clone(),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        framelab_version: env!("CARGO_PKG_VERSION").to_owned(),
        host: crate::host::probe(),
        clock: clock.to_owned(),
        target_fps: opts.fps,
        budget_ns,
        window_start_ns: warmup_ns,
        warmup_ns,
        warmup_from: match opts.warmup_frames {
            Some(_) => WarmupFrom::Frames,
            None => opts.warmup_from,
        },
        warmup_frames: opts.warmup_frames,
        duration_ns: opts.duration.map(|d| d.as_nanos() as i64),
        frames_hint: opts.frames,
        tags: opts.tags.clone(),
        ..RunMeta::default()
    };
    // Before the run file: nothing is recorded if the pipes cannot be made.
    let mut capture = output::prepare(&opts.metrics, opts.keep_output, opts.stdout_to_stderr)?;
    // Its errors name the file already.
    let writer = RunWriter::create(&output, &meta)?;

    let mut env = vec![
        (
            wire::SESSION_ENV.to_owned(),
            session.path().to_string_lossy().into_owned(),
        ),
        (wire::CLOCK_ENV.to_owned(), clock.to_owned()),
    ];
    if let Some(records) = opts.ring_records {
        env.push((wire::RING_RECORDS_ENV.to_owned(), records.to_string()));
    }
    env.extend(opts.env.iter().cloned());
    // Before the launch: the command's first exits are recorded too.
    let exit_records = taskstats::Taskstats::open();
    launch::catch_interrupts();
    launch::become_subreaper();
    let mut services = match services::Services::start(
        &opts.services,
        &env,
        opts.ready_timeout,
        opts.grace,
        run_group.placement(),
    ) {
        Ok(services) => services,
        Err(e) => {
            if writer.abandon() {
                let _ = std::fs::remove_file(&output);
            }
            return Err(e);
        }
    };
    // After the services are ready, before the run's clock starts: unmeasured.
    if let Some(failure) = opts.prepare.as_ref().and_then(|p| prepare::run(p).err()) {
        services.stop(opts.grace);
        if launch::interrupts() > 0 {
            if writer.abandon() {
                let _ = std::fs::remove_file(&output);
            }
            bail!("interrupted during --prepare");
        }
        return unlaunched(writer, meta, run_file, failure);
    }
    meta.origin_mono_ns = framelab_probe::monotonic_ns() as i64;
    // Before the launch: the command's first switches are seen too.
    let sched = sched::start(wanted_sched, &opts.watch_pids, &opts.sampling);
    let origin_mono_ns = meta.origin_mono_ns;
    let started = Instant::now();
    // With --profile, the command's events are opened between its fork and its exec.
    let hold = opts.profile.and_then(|options| {
        hold::Hold::new(move |pid| crate::profile::Profiler::start(options, pid))
            .map_err(|e| {
                eprintln!(
                    "framelab: warning: this run is not profiled: cannot hold the command while \
                     its events open ({e})"
                )
            })
            .ok()
    });
    let group_at_launch = run_group.meter().and_then(|m| m.read());
    let spawned = launch::spawn(
        &opts.command,
        &env,
        &opts.cpus,
        capture.child_stdio(),
        hold.as_ref().map(hold::Hold::child_ends),
        run_group.placement(),
    );
    let started_profiler = hold.and_then(hold::Hold::finish);
    let pid = match spawned {
        Ok(pid) => {
            // If framelab is killed from here on, the guardian stops the command's group.
            guard::register_group(pid);
            pid
        }
        Err(e) => {
            services.stop(opts.grace);
            // Nothing of a run that never started stays; a multi-run file keeps its others.
            if writer.abandon() {
                let _ = std::fs::remove_file(&output);
            }
            return Err(e);
        }
    };
    let capture = capture.start();
    let service_pids: Vec<u32> = services.roots().iter().map(|(pid, _)| *pid).collect();
    let profiler =
        started_profiler.and_then(|started| start_profiler(started, &service_pids, opts));
    let mut accounting = accounting::Accounting::new(
        procfs::Procfs::system(),
        meta.origin_mono_ns,
        std::process::id(),
        accounting_every(&opts.sampling).as_nanos() as i64,
        watch::WatchList {
            pids: opts.watch_pids.clone(),
            names: opts.watch_names.clone(),
            roles: opts.watch_roles.clone(),
        },
        exit_records,
    );
    if let Some(missing) = accounting.listen_for_names() {
        eprintln!("framelab: warning: {missing}");
    }
    accounting.set_services(services.roots());
    let live = opts.live.map(|every| {
        crate::hist::live::Live::start(output.clone(), writer.run_id(), every, opts.live_linear)
    });
    let mut collector = collect::Collector::new(writer, session, tick_clock, meta, accounting);
    collector.set_run_group(run_group.facts(), run_group.meter(), group_at_launch);
    if let Some(probes) = probes {
        collector.set_probes(probes);
    }
    let mut tree = crate::sample::ProcessTree::below(
        procfs::Procfs::system(),
        std::process::id(),
        opts.watch_pids.clone(),
        opts.watch_names.clone(),
    );
    if !opts.watch_names.is_empty() {
        // Their threads too are sampled from their exec (without events: said above).
        if let Ok(events) = procevents::ProcEvents::open() {
            tree = tree.with_events(events);
        }
    }
    collector.start_sampling(opts.sampling.clone(), tree);
    if let Some(n) = opts.warmup_frames {
        collector.watch_for_frame_after(n);
    }
    let committed = collector.committed();
    let outcome = supervise(
        opts,
        pid,
        started,
        &mut collector,
        profiler.as_ref(),
        &mut run_group,
    );
    let recording = profiler.map(crate::profile::Profiler::finish);
    let sched_timeline = sched.finish(origin_mono_ns);
    let failed_at_mono_ns = framelab_probe::monotonic_ns() as i64;
    if outcome.is_err() {
        // Nothing more can be recorded: the command must not go on unobserved.
        launch::stop_group(pid, opts.grace);
    }
    // Stopped and reaped (or failed and stopped): its group id is no longer ours to kill.
    guard::unregister_group(pid);
    let service_outputs = services.finish(opts.grace);
    // Whatever of the run is left (daemons that left their process group too) ends here.
    let escaped = run_group.end();
    for note in &escaped {
        eprintln!("framelab: warning: {note}");
    }
    collector.run_group_escaped(escaped);
    let last_interval = live.map(crate::hist::live::Live::stop);
    let finished = collector.finish();
    let (metrics, mut outputs) = capture.finish();
    outputs.extend(service_outputs);
    if let Some(last) = last_interval {
        last.print();
    }
    // The first failure is the one to report: finishing after it fails too, for its sake.
    let (run_id, meta) = match (outcome, finished) {
        (Err(e), _) | (Ok(()), Err(e)) => {
            return Err(explain_failure(e, &output, &committed, failed_at_mono_ns))
        }
        (Ok(()), Ok(done)) => done,
    };
    crate::store::record_outputs(&output, run_id, &metrics, &outputs)?;
    crate::store::record_sched(&output, run_id, &sched_timeline)?;
    if let Some(recording) = recording {
        let started = Instant::now();
        let profile = crate::profile::symbolize(recording, meta.origin_mono_ns);
        crate::store::record_profile(&output, run_id, &profile)?;
        eprintln!(
            "framelab: profile: {} samples ({} lost, {} unknown leaves), {} functions, symbolized and stored in {:.2} s; see framelab profile {}",
            profile.samples.len(),
            profile.lost,
            profile.unknown_leaves(),
            profile.frames.len(),
            started.elapsed().as_secs_f64(),
            output.display()
        );
    }
    Ok(RunOutcome {
        path: output,
        file: run_file,
        run_id,
        end_reason: meta.end_reason,
        exit: meta.exit,
        interrupt_signal: meta.session.interrupt_signal,
        metrics,
        prepare_failure: None,
    })
}

/// A run whose `--prepare` failed: kept in the file (its experiment marks it failed),
/// with nothing measured, since its command never started.
fn unlaunched(
    mut writer: RunWriter,
    mut meta: RunMeta,
    file: crate::destination::RunFile,
    failure: String,
) -> Result<RunOutcome> {
    meta.origin_mono_ns = framelab_probe::monotonic_ns() as i64;
    meta.end_reason = EndReason::Exited;
    writer.update_meta(&meta)?;
    let run_id = writer.run_id();
    writer.finish()?;
    Ok(RunOutcome {
        path: file.path().to_owned(),
        file,
        run_id,
        end_reason: EndReason::Exited,
        exit: None,
        interrupt_signal: None,
        metrics: Vec::new(),
        prepare_failure: Some(failure),
    })
}

/// Adds the services and the watched pids to the command's sampling; `None`, said on
/// stderr in one line with what to change, when the kernel refused: the run goes on.
fn start_profiler(
    started: Result<crate::profile::Profiler, String>,
    services: &[u32],
    opts: &RunOptions,
) -> Option<crate::profile::Profiler> {
    match started {
        Ok(profiler) => {
            for &other in services.iter().chain(&opts.watch_pids) {
                profiler.attach(other);
            }
            for note in profiler.notes() {
                eprintln!("framelab: profiling: {note}");
            }
            Some(profiler)
        }
        Err(why) => {
            eprintln!("framelab: warning: this run is not profiled: {why}");
            None
        }
    }
}

/// The loop: drain every few ms, read the processes at the sampling interval, open and close the window, stop the command.
fn supervise(
    opts: &RunOptions,
    pid: u32,
    started: Instant,
    collector: &mut collect::Collector,
    profiler: Option<&crate::profile::Profiler>,
    run_group: &mut rungroup::RunGroup,
) -> Result<()> {
    // Draining wakes up between these, sooner the fuller the rings were at the last drain.
    const MIN_TICK: Duration = Duration::from_millis(1);
    const MAX_TICK: Duration = Duration::from_millis(20);
    // Processes are read at the telemetry interval: what a process that ends between two
    // readings used after the first of them is only known through its reaper.
    let sample_every = accounting_every(&opts.sampling);
    const COMMIT_EVERY: Duration = Duration::from_millis(500);
    const PROGRESS_EVERY: Duration = Duration::from_millis(500);
    let mut progress = progress::Progress::new(opts.progress);
    let mut window_open = false;
    let mut opening = Opening::Closed;
    let mut window_closed = false;
    let mut stop: Option<(i32, Instant)> = None;
    let mut handled_interrupts = 0;
    let mut last_sample = Instant::now();
    let mut last_progress = Instant::now();
    let mut last_commit = Instant::now();
    let mut command_exit: Option<ExitInfo> = None;
    let mut last_tick = MIN_TICK;
    collector.accounting.sample(collector.now_ns(), pid);

    loop {
        let now = Instant::now();
        let fullest = collector.drain()?;

        // Reap everything that exited: the command itself and orphans adopted as subreaper.
        while let Some(reaped) = launch::reap_one(|zombie| {
            let now_ns = collector.now_ns();
            collector.accounting.final_reading(zombie, now_ns);
            collector.check_user(zombie);
        }) {
            let now_ns = collector.now_ns();
            collector
                .accounting
                .reaped(reaped.pid, reaped.cpu, reaped.max_rss_bytes, now_ns);
            if reaped.pid == pid {
                command_exit = Some(exit_info(reaped.status, stop.is_some()));
            }
        }

        if !window_closed {
            let due = window_due(
                opts,
                collector.now_ns(),
                collector.first_span_ns(),
                collector.opening_frame_start_ns(),
            );
            match (opening, due) {
                (Opening::Closed, Some((start_ns, provisional))) => {
                    collector.open_window(pid, start_ns);
                    opening = if provisional {
                        Opening::Provisional
                    } else {
                        Opening::Open
                    };
                }
                // The first frame came after a provisional window opened at launch + warmup:
                // the window starts again, warmup after that frame.
                (Opening::Provisional, Some((start_ns, false))) => {
                    collector.reopen_window(pid, start_ns);
                    opening = Opening::Open;
                }
                _ => {}
            }
            window_open = opening != Opening::Closed;
        }
        let interrupts = launch::interrupts();
        let mut end_reason = None;
        if command_exit.is_some() {
            end_reason = Some(EndReason::Exited);
        } else if interrupts > handled_interrupts {
            end_reason = Some(EndReason::Interrupted);
            if !window_closed {
                collector.meta.session.interrupt_signal = launch::last_interrupt_signal();
            }
        } else if opts.duration.is_some_and(|d| now - started >= d) {
            end_reason = Some(EndReason::Duration);
        }
        if let (false, Some(reason)) = (window_closed, end_reason) {
            // The run ended inside the warmup (before frame N+1 of --warmup-frames N, or
            // before the first frame + --warmup): every frame was warmup, and the window is
            // empty at the end, never the whole run. Only a command that recorded no span
            // keeps the provisional window from launch + warmup.
            let empty = match opening {
                Opening::Closed => {
                    collector.open_window(pid, collector.now_ns());
                    true
                }
                Opening::Provisional if collector.first_span_ns().is_some() => {
                    collector.reopen_window(pid, collector.now_ns());
                    true
                }
                _ => false,
            };
            if empty {
                opening = Opening::Open;
            }
            collector.close_window(pid, reason);
            if empty {
                // Opened and closed at the end: not the microseconds between the two reads
                // of the clock, over which CPU and load would be computed.
                collector.meta.window_start_ns = collector.meta.window_end_ns;
            }
            window_closed = true;
            progress.phase("stopping");
        }

        // Stopping: SIGINT, then SIGTERM, then SIGKILL, each after the grace period.
        if window_closed && command_exit.is_none() {
            let escalate = interrupts > handled_interrupts && stop.is_some();
            match stop {
                None => {
                    launch::signal_group(pid, libc::SIGINT);
                    stop = Some((libc::SIGINT, now));
                }
                Some((signal, since)) if escalate || now - since >= opts.grace => {
                    let next = if signal == libc::SIGINT && !escalate {
                        libc::SIGTERM
                    } else {
                        libc::SIGKILL
                    };
                    launch::signal_group(pid, next);
                    stop = Some((next, now));
                }
                _ => {}
            }
        }
        handled_interrupts = interrupts;

        if let Some(exit) = &command_exit {
            // Leftovers of the command's group are part of the run: stop them too.
            launch::signal_group(pid, libc::SIGKILL);
            collector.set_exit(exit.clone());
            break;
        }
        if now - last_sample >= sample_every {
            collector.accounting.sample(collector.now_ns(), pid);
            // Without a cgroup, the guardian learns the process groups the run made.
            run_group.follow_process_groups();
            collector.check_users();
            if let Some(profiler) = profiler {
                // Processes found by --watch NAME since the last reading.
                for (watched, _) in collector
                    .accounting
                    .live_pids()
                    .filter(|&(_, role)| role == crate::model::ProcessRole::Watched)
                {
                    profiler.attach(watched);
                }
            }
            last_sample = now;
        }
        if now - last_progress >= PROGRESS_EVERY {
            collector.refresh_clock();
            last_progress = now;
            progress.update(
                if window_open { "measuring" } else { "warmup" },
                now - started,
                collector.frames_seen(),
            );
        }
        if now - last_commit >= COMMIT_EVERY {
            collector.commit()?;
            last_commit = now;
        }
        let tick = next_tick(fullest, last_tick, MIN_TICK, MAX_TICK);
        last_tick = tick;
        // Wake up for the next reading of the processes too.
        let tick = tick.min((last_sample + sample_every).saturating_duration_since(now));
        let spent = now.elapsed();
        if spent < tick {
            std::thread::sleep(tick - spent);
        }
    }
    if opening == Opening::Provisional {
        collector.warmup_fell_back_to_launch();
    }
    // Let the last processes of the group die so their rings are complete, then drain.
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline && launch::reap_one(|_| {}).is_some() {}
    collector.drain()?;
    progress.finish();
    Ok(())
}

/// A failure while recording, said with what it cost: for a full disk, how many spans the
/// run file kept and how much of the end of the run was lost.
fn explain_failure(
    e: anyhow::Error,
    output: &std::path::Path,
    committed: &write::Committed,
    failed_at_mono_ns: i64,
) -> anyhow::Error {
    use std::sync::atomic::Ordering::Relaxed;
    if e.downcast_ref::<crate::store::DiskFull>().is_none() {
        return e;
    }
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let spans = committed.spans.load(Relaxed);
    let at = committed.at_mono_ns.load(Relaxed);
    let lost = if at == 0 {
        "nothing was committed".to_owned()
    } else {
        format!(
            "the last {:.1} s lost",
            (failed_at_mono_ns - at).max(0) as f64 / 1e9
        )
    };
    anyhow::anyhow!(
        "the disk holding {} is full: {spans} spans kept in {}, {lost}; free space there or \
         record to another disk with -o",
        dir.display(),
        output.display()
    )
}

/// How often the processes are read: at `--sample-every`, but at most every 10 ms (a
/// sweep of a big tree costs tens of µs per process).
pub fn accounting_every(sampling: &crate::sample::SamplingOptions) -> Duration {
    sampling.every.max(ACCOUNTING_MIN_EVERY)
}

/// The shortest interval between two readings of the processes.
pub const ACCOUNTING_MIN_EVERY: Duration = Duration::from_millis(10);

/// Where the window stands while the run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opening {
    Closed,
    /// Opened at launch + warmup because no frame had started yet; opens again at the
    /// first frame + warmup if one comes.
    Provisional,
    Open,
}

/// Whether the window is due to open now (`now_ns` after launch), and where it starts:
/// `(start_ns, provisional)`. `--warmup-frames N`: once frame N+1 has begun (the first
/// stage of N+1 frames was recorded). From the first frame: warmup after the first span's
/// start, or, while no span has come, provisionally at launch + warmup. From launch, or
/// without a warmup: launch + warmup.
fn window_due(
    opts: &RunOptions,
    now_ns: i64,
    first_span_ns: Option<i64>,
    opening_frame_start_ns: Option<i64>,
) -> Option<(i64, bool)> {
    let warmup_ns = opts.warmup.as_nanos() as i64;
    // Where frame N+1 began, not when framelab next looked: the N frames that ended before
    // it are the warmup, however late the look.
    if opts.warmup_frames.is_some() {
        return opening_frame_start_ns.map(|start| (start.min(now_ns), false));
    }
    if opts.warmup_from == WarmupFrom::Launch || warmup_ns == 0 {
        return (now_ns >= warmup_ns).then_some((warmup_ns, false));
    }
    match first_span_ns {
        Some(first) => {
            let start = first.max(0).saturating_add(warmup_ns);
            (now_ns >= start).then_some((start, false))
        }
        None => (now_ns >= warmup_ns).then_some((warmup_ns, true)),
    }
}

/// The next wait: long enough that an idle session costs little, short enough that the
/// fullest ring would reach a quarter of its capacity (at the rate just seen) by the next drain.
fn next_tick(fullest: f64, last: Duration, min: Duration, max: Duration) -> Duration {
    const TARGET_FILL: f64 = 0.25;
    if fullest <= 0.0 {
        return max;
    }
    last.mul_f64(TARGET_FILL / fullest).clamp(min, max)
}

/// A death by signal is a crash unless framelab was stopping the command with that kind of signal.
fn exit_info(status: i32, stopping: bool) -> ExitInfo {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let ours = stopping && matches!(signal, libc::SIGINT | libc::SIGTERM | libc::SIGKILL);
        ExitInfo {
            code: None,
            signal: Some(signal),
            crashed: !ours,
        }
    } else {
        ExitInfo {
            code: Some(libc::WEXITSTATUS(status)),
            signal: None,
            crashed: false,
        }
    }
}

fn default_name(command: &[String]) -> String {
    let program = std::path::Path::new(&command[0])
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    program
}

fn default_output(opts: &RunOptions) -> PathBuf {
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| default_name(&opts.command));
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp: String = stamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    PathBuf::from(format!(
        "{}-{}.framelab",
        slug(&name),
        stamp.trim_end_matches('Z')
    ))
}

/// `demo (depth 1)` → `demo-depth-1`: letters, digits, `_` and single dashes, at most 64
/// characters (a file name holds 255 bytes; a 10 KB `--name` must still make one).
fn slug(name: &str) -> String {
    let words: Vec<&str> = name
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        "run".to_owned()
    } else {
        let mut slug = words.join("-");
        slug.truncate(64);
        slug.trim_end_matches('-').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_file_names_are_tidy() {
        assert_eq!(slug("demo (depth 1)"), "demo-depth-1");
        assert_eq!(slug("./my host"), "my-host");
        assert_eq!(slug("ü (ï)"), "run");
        assert_eq!(
            slug(&"L".repeat(10_000)).len(),
            64,
            "a 10 KB --name still makes a file name"
        );
        let opts = RunOptions {
            command: vec!["/usr/bin/ffmpeg".into()],
            ..RunOptions::default()
        };
        let name = default_output(&opts).to_string_lossy().into_owned();
        assert!(
            name.starts_with("ffmpeg-2") && name.ends_with(".framelab") && !name.contains(':'),
            "{name}"
        );
    }

    #[test]
    fn the_window_opens_after_the_warmup_from_where_it_counts() {
        const S: i64 = 1_000_000_000;
        let opts = |from, warmup_s: u64, frames| RunOptions {
            warmup: Duration::from_secs(warmup_s),
            warmup_from: from,
            warmup_frames: frames,
            ..RunOptions::default()
        };
        let launch = opts(WarmupFrom::Launch, 3, None);
        assert_eq!(window_due(&launch, 2 * S, Some(S), None), None);
        assert_eq!(window_due(&launch, 3 * S, None, None), Some((3 * S, false)));
        // From the first frame: provisional at launch + warmup while no frame has come ...
        let first = opts(WarmupFrom::FirstFrame, 3, None);
        assert_eq!(window_due(&first, 3 * S, None, None), Some((3 * S, true)));
        // ... and warmup after the first span's start once one has.
        assert_eq!(window_due(&first, 8 * S, Some(6 * S), None), None);
        assert_eq!(
            window_due(&first, 9 * S, Some(6 * S), None),
            Some((9 * S, false))
        );
        // No warmup: the window is the whole run, whatever it counts from.
        assert_eq!(
            window_due(&opts(WarmupFrom::FirstFrame, 0, None), 0, None, None),
            Some((0, false))
        );
        // Frames: once frame N+1 has begun, where it began (seen later).
        let frames = opts(WarmupFrom::FirstFrame, 0, Some(5));
        assert_eq!(window_due(&frames, 7 * S, Some(S), None), None);
        assert_eq!(
            window_due(&frames, 7 * S, Some(S), Some(6 * S)),
            Some((6 * S, false))
        );
    }

    #[test]
    fn ticks_follow_the_fill_of_the_rings() {
        let (min, max) = (Duration::from_millis(1), Duration::from_millis(20));
        assert_eq!(next_tick(0.0, min, min, max), max, "idle: the longest wait");
        assert_eq!(
            next_tick(0.25, Duration::from_millis(8), min, max),
            Duration::from_millis(8),
            "at the target fill: same wait"
        );
        assert_eq!(
            next_tick(0.5, Duration::from_millis(8), min, max),
            Duration::from_millis(4),
            "fuller: wait less"
        );
        assert_eq!(next_tick(1.0, Duration::from_millis(2), min, max), min);
    }
}
