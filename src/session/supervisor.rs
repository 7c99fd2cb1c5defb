//! A run's lifecycle as one state machine:
//!
//! ```text
//! Prepare ─▶ ServicesReady ─▶ Command ─▶ Stop ─▶ Drain ─▶ Account
//!    │             │             └───────────────▶┘ (the command exited by itself)
//!    └─────────────┴─▶ NotStarted (a service never got ready, --prepare failed, Ctrl-C)
//! ```
//!
//! Each transition is one function of `Supervisor`; each calls down (setup, launch and
//! services through the `Executor`, accounting through the collector), never back up.
//! What the transitions do to the operating system goes through the `Executor`, and what
//! they record goes through `Recording` (`recording.rs`: the collector in a real run), so
//! the tests drive every transition with mocks: no process is spawned and no clock
//! decides anything. `drive` is the whole run: it makes what each state needs and walks
//! the states in order.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::accounting::Accounting;
use super::collect::Collector;
use super::executor::{Executor, Spawn, Spawned};
use super::opening::{opens_at, window_due, Opening};
use super::options::RunOptions;
use super::progress::ProgressLine;
use super::recording::{CollectorRecording, Recording};
use super::rungroup::RunGroup;
use super::services::Services;
use super::setup::Setup;
use super::{procevents, sched, write};
use crate::model::{EndReason, ExitInfo, RunMeta};
use crate::output::{CapturedOutput, MetricValue};
use crate::sample::Sampler;
use crate::store::RunWriter;

/// What a finished run left behind.
#[derive(Debug)]
pub struct RunOutcome {
    pub path: std::path::PathBuf,
    /// Where the run file is kept; with `-o /dev/null`, a temporary one removed on drop.
    pub file: crate::destination::RunFile,
    pub run_id: i64,
    pub end_reason: EndReason,
    pub exit: Option<ExitInfo>,
    /// The signal that interrupted framelab, when one did.
    pub interrupt_signal: Option<i32>,
    /// Each `--metric`'s value, or why there is none.
    pub metrics: Vec<MetricValue>,
    /// Why `--prepare` failed, when it did: the command never started.
    pub prepare_failure: Option<String>,
}

/// Where the run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The run file, the session and the run group are being made; nothing runs yet.
    Prepare,
    /// Every service is ready (and `--prepare` ran): the command may start.
    ServicesReady,
    /// The command runs; the window opens, then closes.
    Command,
    /// The window is closed and the command is being stopped: SIGINT, SIGTERM, SIGKILL.
    Stop,
    /// The command exited: the last processes are reaped and the rings drained.
    Drain,
    /// The services are stopped and their output collected: the run is accounted.
    Account,
    /// The command never started; the services, if any, are stopped.
    NotStarted,
}

/// Why the command never started, when it did not get past `ServicesReady`.
#[derive(Debug)]
pub enum NotStarted {
    /// Nothing of the run is kept; the error says why.
    Failed(anyhow::Error),
    /// `--prepare` failed: the run is kept, marked failed, with nothing measured.
    PrepareFailed(String),
}

/// Draining wakes up between these, sooner the fuller the rings were at the last drain.
const MIN_TICK: Duration = Duration::from_millis(1);
const MAX_TICK: Duration = Duration::from_millis(20);
const COMMIT_EVERY: Duration = Duration::from_millis(500);
/// The longest wait when every ring's producer wakes the collector: bounded anyway by the
/// next reading of the processes, commit and end of `--duration`.
const MAX_WAIT: Duration = COMMIT_EVERY;
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// How long the last processes of the group get to die once the command exited.
const LAST_REAPS: Duration = Duration::from_millis(500);
/// How long the command waits for telemetry's sources to open, looking for an interrupt
/// this often.
const SOURCES_OPEN_LONGEST: Duration = Duration::from_secs(2);
const SOURCES_POLL: Duration = Duration::from_millis(50);

/// The run's lifecycle: its state and what each state needs to know.
pub struct Supervisor<'o, E: Executor> {
    opts: &'o RunOptions,
    exec: E,
    state: State,
    /// The services started, until they are stopped.
    services: Services,
    /// The command's pid (and process group), once started.
    pid: Option<u32>,
    started: Option<Instant>,
    opening: Opening,
    /// Whether the window had opened at the last look before it closed (the progress line).
    window_open: bool,
    window_closed: bool,
    /// The last stop signal sent, and when.
    stop: Option<(i32, Instant)>,
    handled_interrupts: usize,
    command_exit: Option<ExitInfo>,
    /// Processes are read at the telemetry interval: what a process that ends between two
    /// readings used after the first of them is only known through its reaper.
    sample_every: Duration,
    last_sample: Instant,
    last_progress: Instant,
    last_commit: Instant,
    last_tick: Duration,
    /// The progress line, from the command's start.
    progress: Option<ProgressLine>,
    /// A line per process of the command's group killed when the command ended.
    group_killed: Vec<String>,
    /// The run group's CPU once the command and the services had ended (with a cgroup).
    group_cpu_at_end: Option<super::rungroup::GroupCpu>,
}

impl<'o, E: Executor> Supervisor<'o, E> {
    pub fn new(opts: &'o RunOptions, exec: E) -> Supervisor<'o, E> {
        let now = exec.now();
        Supervisor {
            opts,
            state: State::Prepare,
            services: Services::default(),
            pid: None,
            started: None,
            opening: Opening::Closed,
            window_open: false,
            window_closed: false,
            group_killed: Vec::new(),
            group_cpu_at_end: None,
            stop: None,
            handled_interrupts: 0,
            command_exit: None,
            sample_every: opts.accounting_every(),
            last_sample: now,
            last_progress: now,
            last_commit: now,
            last_tick: MIN_TICK,
            progress: None,
            exec,
        }
    }

    #[cfg(test)]
    pub fn state(&self) -> State {
        self.state
    }

    /// The executor, for what the run reads through it (/proc, exit records).
    pub fn executor(&mut self) -> &mut E {
        &mut self.exec
    }

    /// Prepare → ServicesReady: every service started and ready. On a failure those
    /// already started are stopped and the run does not start. Returns each service's
    /// leader and name.
    pub fn start_services(
        &mut self,
        env: &[(String, String)],
        join: super::rungroup::Placement,
    ) -> Result<Vec<(u32, String)>> {
        assert_eq!(self.state, State::Prepare, "services start once, first");
        let opts = self.opts;
        // On a failure, whatever of them started is stopped: it must not outlive a run
        // that never will.
        match Services::start(
            &mut self.exec,
            &opts.services.specs,
            env,
            opts.services.ready_timeout,
            opts.launch.grace,
            join,
        ) {
            Ok(services) => {
                self.services = services;
                self.state = State::ServicesReady;
                Ok(self.services.roots())
            }
            Err(e) => {
                self.state = State::NotStarted;
                Err(e)
            }
        }
    }

    /// ServicesReady: runs `--prepare`, unmeasured. On a failure or an interrupt the
    /// services are stopped and the run does not start.
    pub fn run_prepare(&mut self) -> Result<(), NotStarted> {
        assert_eq!(
            self.state,
            State::ServicesReady,
            "--prepare runs once the services are"
        );
        let Some(prepare) = &self.opts.launch.prepare else {
            return Ok(());
        };
        let Err(failure) = self.exec.run_prepare(prepare) else {
            return Ok(());
        };
        self.stop_services();
        self.state = State::NotStarted;
        if self.exec.interrupts() > 0 {
            return Err(NotStarted::Failed(anyhow::anyhow!(
                "interrupted during --prepare"
            )));
        }
        Err(NotStarted::PrepareFailed(failure))
    }

    /// ServicesReady: waits for telemetry's sources to open, so that their start-up (NVML's,
    /// about 40 ms of CPU) is not inside the measured window; at most `SOURCES_OPEN_LONGEST`,
    /// then the command starts beside them. On an interrupt the services are stopped and
    /// the run does not start.
    pub fn wait_for_sources(&mut self, sampler: &mut Sampler) -> Result<()> {
        assert_eq!(
            self.state,
            State::ServicesReady,
            "before the command starts"
        );
        let polls = SOURCES_OPEN_LONGEST.as_millis() / SOURCES_POLL.as_millis();
        for _ in 0..polls {
            if self.exec.interrupts() > 0 {
                self.stop_services();
                self.state = State::NotStarted;
                anyhow::bail!("interrupted while telemetry's sources opened");
            }
            if sampler.wait_open(SOURCES_POLL) {
                return Ok(());
            }
        }
        log::warn!(
            "telemetry sources still opening after {} s (a GPU driver?): the command starts \
             now, and their start-up is inside its measured window (--no-sample SOURCE \
             leaves one out)",
            SOURCES_OPEN_LONGEST.as_secs()
        );
        Ok(())
    }

    /// ServicesReady → Command: the command started, registered with the guardian (with
    /// `--profile`, the profiler on it or why not). If it cannot start, the services are
    /// stopped and the run does not start.
    pub fn start_command(&mut self, spawn: Spawn<'_>) -> Result<Spawned> {
        assert_eq!(self.state, State::ServicesReady, "the command starts once");
        let started = self.exec.now();
        match self.exec.spawn_command(spawn) {
            Ok(spawned) => {
                // If framelab is killed from here on, the guardian stops the command's group.
                self.exec.register_group(spawned.pid);
                self.pid = Some(spawned.pid);
                self.started = Some(started);
                self.state = State::Command;
                Ok(spawned)
            }
            Err(e) => {
                self.stop_services();
                self.state = State::NotStarted;
                Err(e)
            }
        }
    }

    /// Stops the services of a run whose command never started.
    fn stop_services(&mut self) {
        self.services
            .stop(&mut self.exec, self.opts.launch.grace, &[]);
    }

    /// Command → (Stop →) Drain: drains every few ms, reads the processes at the sampling
    /// interval, opens and closes the window, stops the command; then the last drain.
    pub fn watch(&mut self, rec: &mut impl Recording) -> Result<()> {
        self.start_watching(rec);
        while !self.tick(rec)? {}
        self.drain(rec)
    }

    /// The first reading of the processes; the intervals of the ticks count from here.
    fn start_watching(&mut self, rec: &mut impl Recording) {
        let now = self.exec.now();
        (self.last_sample, self.last_progress, self.last_commit) = (now, now, now);
        let progress = self.opts.live.progress.clone();
        progress.tell(|line| line.begin());
        self.progress = Some(progress);
        rec.read_processes(self.pid.expect("the command started"));
    }

    /// One look at the run: drain, reap, open or close the window, stop, read, commit,
    /// wait. `true` once the command exited (the state is then `Drain`).
    pub fn tick(&mut self, rec: &mut impl Recording) -> Result<bool> {
        let pid = self.pid.expect("the command started");
        let started = self.started.expect("the command started");
        let now = self.exec.now();
        // A tick for a reading alone may leave the rings to fill: then it waits for the
        // producers, and how full they were does not set it.
        let fullest = match rec.drain_due() {
            true => rec.drain()?,
            false => 0.0,
        };
        self.reap(rec, pid);
        self.follow_window(rec, pid);
        let interrupts = self.exec.interrupts();
        let end_reason = self.end_reason(interrupts, now - started);
        if let (false, Some(reason)) = (self.window_closed, end_reason) {
            if reason == EndReason::Interrupted {
                rec.interrupted_by(self.exec.last_interrupt_signal());
            }
            self.close_window(rec, pid, reason);
        }
        if self.window_closed && self.command_exit.is_none() {
            let interrupted = interrupts > self.handled_interrupts;
            if let Some(signal) = self.escalate(pid, now, interrupted) {
                rec.stopping_with(crate::model::StopSignal {
                    signal,
                    at_ns: rec.now_ns(),
                    // A further interrupt skips the grace period only after the first signal.
                    interrupt: (interrupted && signal != libc::SIGINT)
                        .then(|| self.exec.last_interrupt_signal().unwrap_or(libc::SIGINT)),
                });
            }
        }
        self.handled_interrupts = interrupts;

        if let Some(exit) = &self.command_exit {
            // Leftovers of the command's group are part of the run: stop them too, and say
            // which (a background job was killed unnamed).
            for (member, name) in self.exec.group_members(pid) {
                self.group_killed.push(format!(
                    "process {member} ({}) was still running in the command's process group \
                     when the command ended: killed with it",
                    crate::display::name(&name)
                ));
            }
            self.exec.signal_group(pid, libc::SIGKILL);
            rec.set_exit(exit.clone());
            self.state = State::Drain;
            return Ok(true);
        }
        // Producers that wake the collector when a ring passes a quarter full let it sleep
        // until then; rings that cannot (older SDKs) are drained on a tick that follows
        // their fill.
        let woken = rec.producers_wake();
        if now - self.last_sample >= self.sample_every {
            rec.sample(pid);
            self.last_sample = now;
        } else if woken && now - self.last_sample >= self.sample_every / 2 {
            // Awake anyway (a producer, a commit) in the second half of the interval: the
            // reading rides on this wakeup rather than making one of its own, and the next
            // one stays on its beat.
            rec.sample(pid);
            self.last_sample += self.sample_every;
        }
        if now - self.last_progress >= PROGRESS_EVERY {
            self.last_progress = now;
            let frames = rec.refresh_frames_seen();
            let phase = if self.window_open {
                "measuring"
            } else {
                "warmup"
            };
            if let Some(progress) = &self.progress {
                progress.tell(|line| line.update(phase, now - started, frames));
            }
        }
        if now - self.last_commit >= COMMIT_EVERY {
            rec.commit()?;
            self.last_commit = now;
        }
        let tick = if woken {
            MAX_WAIT
        } else {
            self.last_tick = next_tick(fullest, self.last_tick, MIN_TICK, MAX_TICK);
            self.last_tick
        };
        // Wake up for the next reading of the processes, the next commit (what a kill -9
        // loses) and the end of --duration too. Once the window has opened for good and
        // another thread reads the processes, the readings need no wakeup of this one;
        // until then they keep their beat, on which the window's opening is noticed (and
        // its baselines read): a first frame or frame N+1 seen late would start them late.
        let wakes_for_readings = !rec.sample_waits_for_ticks() || self.opening != Opening::Open;
        let next_sample = match wakes_for_readings {
            true => (self.last_sample + self.sample_every).saturating_duration_since(now),
            false => tick,
        };
        let tick = tick
            .min(next_sample)
            .min(rec.next_drain_within().unwrap_or(tick))
            .min((self.last_commit + COMMIT_EVERY).saturating_duration_since(now));
        let tick = match self.opts.window.duration {
            Some(d) => tick.min((started + d).saturating_duration_since(now).max(MIN_TICK)),
            None => tick,
        };
        // And the window's opening where its time is known ahead: its baselines are read
        // at its start, not up to a reading later (the processes' CPU then missed 54 ms of
        // a 1 s window on a loaded VM, while the threads' readings counted it).
        let tick = match (
            self.opening,
            opens_at(&self.opts.window, rec.first_span_ns()),
        ) {
            (Opening::Closed | Opening::Provisional, Some(at)) => {
                let until = u64::try_from(at.saturating_sub(rec.now_ns())).unwrap_or(0);
                tick.min(Duration::from_nanos(until))
            }
            _ => tick,
        };
        let spent = self.exec.now() - now;
        if spent < tick && woken {
            self.exec
                .wait_or_sleep(tick - spent, &mut |wait| rec.wait_for_producers(wait));
        } else if spent < tick {
            self.exec.sleep(tick - spent);
        }
        Ok(false)
    }

    /// Reaps everything that exited: the command itself and orphans adopted as subreaper.
    fn reap(&mut self, rec: &mut impl Recording, pid: u32) {
        while let Some(reaped) = self.exec.reap_one(&mut |zombie| rec.before_reaping(zombie)) {
            rec.reaped(&reaped);
            if reaped.pid == pid {
                self.command_exit = Some(exit_info(reaped.status, self.stop.is_some()));
            }
        }
        rec.reaps_done();
    }

    /// Opens the window once it is due; opens it again at the first frame after a
    /// provisional opening.
    fn follow_window(&mut self, rec: &mut impl Recording, pid: u32) {
        if self.window_closed {
            return;
        }
        let due = window_due(
            &self.opts.window,
            rec.now_ns(),
            rec.first_span_ns(),
            rec.opening_frame_start_ns(),
        );
        match (self.opening, due) {
            (Opening::Closed, Some((start_ns, provisional))) => {
                rec.open_window(pid, start_ns);
                self.opening = if provisional {
                    Opening::Provisional
                } else {
                    rec.window_settled();
                    Opening::Open
                };
            }
            // The first frame came after a provisional window opened at launch + warmup:
            // the window starts again, warmup after that frame.
            (Opening::Provisional, Some((start_ns, false))) => {
                rec.reopen_window(pid, start_ns);
                rec.window_settled();
                self.opening = Opening::Open;
            }
            _ => {}
        }
        self.window_open = self.opening != Opening::Closed;
    }

    /// Why the run ends now, if it does: the command exited, framelab was interrupted, or
    /// `--duration` is over.
    fn end_reason(&self, interrupts: usize, elapsed: Duration) -> Option<EndReason> {
        if self.command_exit.is_some() {
            Some(EndReason::Exited)
        } else if interrupts > self.handled_interrupts {
            Some(EndReason::Interrupted)
        } else if self.opts.window.duration.is_some_and(|d| elapsed >= d) {
            Some(EndReason::Duration)
        } else {
            None
        }
    }

    /// Command → Stop (or, the command exited, straight to its drain): the window closes.
    fn close_window(&mut self, rec: &mut impl Recording, pid: u32, reason: EndReason) {
        // The run ended inside the warmup (before frame N+1 of --warmup-frames N, or
        // before the first frame + --warmup): every frame was warmup, and the window is
        // empty at the end, never the whole run. Only a command that recorded no span
        // keeps the provisional window from launch + warmup.
        let empty = match self.opening {
            Opening::Closed => {
                rec.open_window(pid, rec.now_ns());
                true
            }
            Opening::Provisional if rec.first_span_ns().is_some() => {
                rec.reopen_window(pid, rec.now_ns());
                true
            }
            _ => false,
        };
        if empty {
            self.opening = Opening::Open;
        }
        rec.close_window(pid, reason);
        if empty {
            // Opened and closed at the end: not the microseconds between the two reads
            // of the clock, over which CPU and load would be computed.
            rec.empty_window();
        }
        self.window_closed = true;
        if self.command_exit.is_none() {
            self.state = State::Stop;
        }
        if let Some(progress) = &self.progress {
            progress.tell(|line| line.phase("stopping"));
        }
    }

    /// Stop: SIGINT, then SIGTERM, then SIGKILL, each after the grace period; a new
    /// interrupt while stopping goes straight to SIGKILL. The signal sent now, if any.
    fn escalate(&mut self, pid: u32, now: Instant, interrupted: bool) -> Option<i32> {
        let escalate = interrupted && self.stop.is_some();
        match self.stop {
            None => {
                self.exec.signal_group(pid, libc::SIGINT);
                self.stop = Some((libc::SIGINT, now));
                Some(libc::SIGINT)
            }
            Some((signal, since)) if escalate || now - since >= self.opts.launch.grace => {
                let next = if signal == libc::SIGINT && !escalate {
                    libc::SIGTERM
                } else {
                    libc::SIGKILL
                };
                self.exec.signal_group(pid, next);
                self.stop = Some((next, now));
                Some(next)
            }
            _ => None,
        }
    }

    /// Drain: lets the last processes of the group die so their rings are complete, then
    /// drains them.
    fn drain(&mut self, rec: &mut impl Recording) -> Result<()> {
        if self.opening == Opening::Provisional {
            rec.warmup_fell_back_to_launch();
        }
        let deadline = self.exec.now() + LAST_REAPS;
        while self.exec.now() < deadline && self.exec.reap_one(&mut |_| {}).is_some() {}
        rec.drain()?;
        if let Some(progress) = &self.progress {
            progress.tell(|line| line.finish());
        }
        Ok(())
    }

    /// → Account: stops what is left of the command if recording failed (it must not go
    /// on unobserved), forgets its group, stops the services, then kills whatever is left
    /// of the run's group (daemons that left their process group too). What the services
    /// wrote, and a line per process that had escaped the group.
    pub fn account(
        &mut self,
        failed: bool,
        run_group: &mut RunGroup,
        service_daemons: &[(u32, String)],
    ) -> (Vec<CapturedOutput>, Vec<String>) {
        let grace = self.opts.launch.grace;
        if let Some(pid) = self.pid {
            if failed {
                self.exec.stop_group(pid, grace);
            }
            // Stopped and reaped (or failed and stopped): its group id is no longer ours.
            self.exec.unregister_group(pid);
        }
        self.state = State::Account;
        let outputs = self.services.finish(&mut self.exec, grace, service_daemons);
        // Read before the group goes: what it counted after the window, being stopped.
        self.group_cpu_at_end = run_group.meter().and_then(|m| m.read());
        let mut escaped = std::mem::take(&mut self.group_killed);
        escaped.extend(self.exec.end_run_group(run_group));
        (outputs, escaped)
    }

    /// The run group's CPU as `account` found it once the command and the services ended.
    pub fn group_cpu_at_end(&self) -> Option<super::rungroup::GroupCpu> {
        self.group_cpu_at_end
    }
}

/// Runs the command in a session through every state and writes the run file.
pub fn drive(opts: &RunOptions, exec: impl Executor) -> Result<RunOutcome> {
    let mut supervisor = Supervisor::new(opts, exec);
    // Prepare: nothing of the run runs yet.
    let Setup {
        wanted_sched,
        run_file,
        output,
        mut run_group,
        session,
        tick_clock,
        probes,
        mut meta,
        mut capture,
        writer,
        env,
        exit_records,
    } = Setup::prepare(opts, supervisor.executor())?;
    // Telemetry's sources open while the services start: ready before the command is.
    let mut sampler = Sampler::open(opts.sampling.clone());

    // → ServicesReady.
    let service_roots = match supervisor.start_services(&env, run_group.placement()) {
        Ok(roots) => roots,
        Err(e) => return Err(abandon(writer, &output, e)),
    };
    // After the services are ready, before the run's clock starts: unmeasured.
    match supervisor.run_prepare() {
        Ok(()) => {}
        Err(NotStarted::Failed(e)) => return Err(abandon(writer, &output, e)),
        Err(NotStarted::PrepareFailed(failure)) => {
            return unlaunched(writer, meta, run_file, failure)
        }
    }

    if let Err(e) = supervisor.wait_for_sources(&mut sampler) {
        return Err(abandon(writer, &output, e));
    }

    // → Command.
    // Before the launch: the command's first switches are seen too.
    let sched = sched::start(
        wanted_sched,
        &opts.watch.pids,
        run_group.perf_cgroup(),
        &opts.sampling,
        supervisor.executor(),
    );
    let group_at_launch = run_group.meter().and_then(|m| m.read());
    let launched_ns = framelab_probe::monotonic_ns() as i64;
    let spawned = supervisor.start_command(Spawn {
        argv: &opts.command,
        env: &env,
        cpus: &opts.launch.cpus,
        stdio: capture.child_stdio(),
        // With --profile, the command's events are opened between its fork and its exec.
        profile: opts.profile,
        join: run_group.placement(),
    });
    let (command_pid, started_profiler) = match spawned {
        Ok(Spawned {
            pid,
            exec_mono_ns,
            profiler,
        }) => {
            // The run's clock starts at the command's exec: what came before it (opening
            // the scheduler's tracepoints, 12-35 ms on a loaded 2-core VM; joining the
            // run's cgroup, 10-25 ms) is framelab's, not the command's wall time.
            meta.origin_mono_ns = exec_mono_ns.unwrap_or(launched_ns);
            (pid, profiler)
        }
        // Nothing of a run that never started stays; a multi-run file keeps its others.
        Err(e) => return Err(abandon(writer, &output, e)),
    };
    let origin_mono_ns = meta.origin_mono_ns;
    let capture = capture.start();
    let service_pids: Vec<u32> = service_roots.iter().map(|(pid, _)| *pid).collect();
    let profiler = started_profiler
        .and_then(|started| start_profiler(started, &service_pids, &opts.watch.pids));
    let procfs = supervisor.executor().procfs();
    let mut accounting = accounting(opts, procfs.clone(), &meta, exit_records, service_roots);
    accounting.set_launch(launched_ns);
    if let Some(dir) = run_group.listing_dir() {
        accounting.list_through_group(dir);
    }
    let run_id = writer.run_id();
    let mut collector = Collector::new(writer, session, tick_clock, meta, accounting);
    let live = opts.live.every.map(|every| {
        let committed = collector.committed();
        let run = crate::hist::live::LiveRun {
            path: output.clone(),
            run_id,
            origin_mono_ns,
        };
        crate::hist::live::Live::start(
            run,
            every,
            opts.live.linear,
            opts.live.out.clone(),
            Box::new(move || {
                committed
                    .drained_mono_ns
                    .load(std::sync::atomic::Ordering::Acquire)
            }),
        )
    });
    collector.set_run_group(run_group.facts(), run_group.meter(), group_at_launch);
    if let Some(probes) = probes {
        collector.set_probes(probes);
    }
    // The sampler's thread reads the processes on its own wakeups, so the collector's
    // thread need not wake for it; with a profiler it does, to attach it to processes
    // found by --watch NAME at once.
    let sweep = profiler
        .is_none()
        .then(|| (command_pid, opts.accounting_every()));
    let tree = process_tree(opts, procfs, run_group.listing_dir());
    collector.start_sampling(sampler, tree, sweep);
    collector.wake_on_signals();
    if let Some(n) = opts.window.warmup_frames {
        collector.watch_for_frame_after(n);
    }
    if spill_allowed(opts) {
        collector.spill_beside(&output, opts.live.progress.is_shown());
    }
    let committed = collector.committed();

    // → Stop → Drain.
    let outcome = supervisor.watch(&mut CollectorRecording {
        collector: &mut collector,
        profiler: profiler.as_deref(),
        run_group: &mut run_group,
    });

    // → Account.
    let recording = profiler.map(crate::profile::RunProfiler::finish);
    let sched_timeline = sched.finish(origin_mono_ns);
    let failed_at_mono_ns = framelab_probe::monotonic_ns() as i64;
    let daemons = collector.service_daemons();
    let (service_outputs, escaped) = supervisor.account(outcome.is_err(), &mut run_group, &daemons);
    // One line per thing done, however many processes it was done to.
    for note in crate::model::leftovers::summarize(&escaped) {
        log::warn!("{note}");
    }
    collector.run_group_escaped(escaped);
    collector.run_group_ended(supervisor.group_cpu_at_end());
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
        store_profile(&output, run_id, recording, meta.origin_mono_ns)?;
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

/// The accounting of the run's processes: the tree below framelab, the services, the
/// watched ones.
fn accounting(
    opts: &RunOptions,
    procfs: super::procfs::Procfs,
    meta: &RunMeta,
    exit_records: super::taskstats::ExitSource,
    services: Vec<(u32, String)>,
) -> Accounting {
    let mut accounting = Accounting::new(
        procfs,
        meta.origin_mono_ns,
        std::process::id(),
        opts.accounting_every().as_nanos() as i64,
        opts.watch.clone(),
        exit_records,
    );
    if let Some(missing) = accounting.listen_for_names() {
        log::warn!("{missing}");
    }
    accounting.set_services(services);
    accounting
}

/// The processes whose threads the telemetry samples: the tree below framelab (walked
/// again when the run's cgroup in `group`, if any, says it changed) and the watched ones.
fn process_tree(
    opts: &RunOptions,
    procfs: super::procfs::Procfs,
    group: Option<PathBuf>,
) -> crate::sample::ProcessTree {
    let mut tree = crate::sample::ProcessTree::below(
        procfs,
        std::process::id(),
        opts.watch.pids.clone(),
        opts.watch.names.clone(),
    );
    if let Some(dir) = group {
        tree = tree.through_group(dir);
    }
    if opts.watch.names.is_empty() {
        return tree;
    }
    // Their threads too are sampled from their exec (without events: said when the
    // accounting listened for names).
    match procevents::ProcEvents::open() {
        Ok(events) => tree.with_events(events),
        Err(_) => tree,
    }
}

/// Symbolizes the `--profile` recording and stores it, saying what it holds.
fn store_profile(
    output: &Path,
    run_id: i64,
    recording: crate::profile::Recording,
    origin_mono_ns: i64,
) -> Result<()> {
    let started = Instant::now();
    let profile = crate::profile::symbolize(recording, origin_mono_ns);
    crate::store::record_profile(output, run_id, &profile)?;
    log::info!(
        "profile: {} samples ({} lost, {} unknown leaves), {} functions, symbolized and stored in {:.2} s; see framelab profile {}",
        profile.samples.len(),
        profile.lost,
        profile.unknown_leaves(),
        profile.frames.len(),
        started.elapsed().as_secs_f64(),
        output.display()
    );
    Ok(())
}

/// A run that never started leaves nothing: its run (and a new file) are removed.
fn abandon(writer: RunWriter, output: &Path, e: anyhow::Error) -> anyhow::Error {
    if writer.abandon() {
        let _ = std::fs::remove_file(output);
    }
    e
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

/// Adds the services and the watched pids to the command's sampling; `None` when the
/// kernel refused, and the run goes on. Says the profiler's notes, or the one warning on
/// why the run is not profiled and what to change.
fn start_profiler(
    started: Result<Box<dyn crate::profile::RunProfiler>, String>,
    services: &[u32],
    watched: &[u32],
) -> Option<Box<dyn crate::profile::RunProfiler>> {
    match started {
        Ok(profiler) => {
            for &other in services.iter().chain(watched) {
                profiler.attach(other);
            }
            for note in profiler.notes() {
                log::info!("profiling: {note}");
            }
            Some(profiler)
        }
        Err(why) => {
            log::warn!("this run is not profiled: {why}");
            None
        }
    }
}

/// Whether the rings' records may be kept raw once the window opened, converted at the
/// end (`spill`): nothing during the run reads them converted. `--live` prints intervals
/// as they come, `--frames` and `--warmup-frames` count frames, probes (and `--pair`) make
/// spans beside the SDK's. `FRAMELAB_SPILL=off` keeps converting (to measure the two).
fn spill_allowed(opts: &RunOptions) -> bool {
    opts.live.every.is_none()
        && opts.window.frames.is_none()
        && opts.window.warmup_frames.is_none()
        && opts.probes.is_empty()
        && std::env::var_os("FRAMELAB_SPILL").is_none_or(|v| v != "off")
}

/// A failure while recording, said with what it cost: for a full disk, how many spans the
/// run file kept and how much of the end of the run was lost.
fn explain_failure(
    e: anyhow::Error,
    output: &Path,
    committed: &write::Committed,
    failed_at_mono_ns: i64,
) -> anyhow::Error {
    use std::sync::atomic::Ordering::Relaxed;
    if e.downcast_ref::<crate::store::DiskFull>().is_none() {
        return e;
    }
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => std::path::PathBuf::from("."),
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
    let Some(kept) = e.downcast_ref::<super::collect::SpillKept>() else {
        return anyhow::anyhow!(
            "the disk holding {} is full: {spans} spans kept in {}, {lost}; free space there or \
             record to another disk with -o",
            dir.display(),
            output.display()
        );
    };
    // The spill's records are not lost: a later reading of the run file folds them in.
    anyhow::anyhow!(
        "the disk holding {} is full: {spans} spans in {} and {} more records in its spill {}, \
         not yet folded in; free space there, or move {} with the files beside it that begin \
         with its name to another disk, then framelab report folds them in",
        dir.display(),
        output.display(),
        kept.records,
        kept.spill.display(),
        output.display(),
    )
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

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
