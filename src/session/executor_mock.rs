//! A scripted `Executor` for the supervisor's tests: a session directory that cannot be
//! made, services that get ready late or never, exit early (before they are ready, or while
//! the command runs: then reaped as framelab, the subreaper, reaps them) or ignore their
//! stop signals, a `--prepare` that fails, a command that exits by itself after a while or
//! dies of the signals it is told to, a profiler the kernel refuses or one that records
//! scripted samples, interrupts at given times. Its clock moves only when the supervisor
//! sleeps, so no test depends on how fast the machine is. What it was asked is kept in order (`calls`, and `shared_calls` for a
//! test that gave the executor to `drive`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::dir::{SessionAccess, SessionDir};
use super::executor::{Executor, Spawn, Spawned};
use super::launch::Reaped;
use super::prepare::Prepare;
use super::procfs::{CpuTimes, Procfs, ScriptedClocks};
use super::rungroup::{Placement, RunGroup};
use super::taskstats::{Exit, ExitRecords, ExitSource};
use crate::output::CapturedOutput;
use crate::probes::recorder::Recorder;
use crate::probes::ProbeOptions;
use crate::profile::{RawSample, Recording, RunProfiler};
use crate::sched::tracer::Tracer;
use crate::services::ServiceSpec;

/// The command's pid in the mock.
pub const COMMAND_PID: u32 = 4321;

/// What the supervisor asked, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// A service started, by name.
    SpawnService(String),
    /// A signal to a service's group, and when.
    ServiceSignal(String, i32, Duration),
    /// A process group given to the guardian, or taken back.
    Register(u32),
    Unregister(u32),
    StartGuardian,
    /// What was left of the run's group was killed.
    EndRunGroup,
    Prepare(String),
    Spawn(Vec<String>),
    /// The command was to be held for `--profile` at this rate.
    Profile(u64),
    /// The scripted profiler was asked to sample this process too (in `shared_calls` only:
    /// the profiler is the supervisor's once started).
    ProfilerAttach(u32),
    /// The scripted profiler was stopped and its recording taken (`shared_calls` only).
    ProfilerFinished,
    /// A signal to the command's group, and when (since the mock's start).
    Signal(i32, Duration),
    StopGroup(u32),
    /// A signal to one process (a service's daemon), and when.
    DaemonSignal(u32, i32, Duration),
}

/// The script, and what happened.
pub struct MockExecutor {
    pub(super) start: Instant,
    /// Time since `start`: it moves when the supervisor sleeps.
    pub elapsed: Duration,
    pub calls: Vec<Call>,
    /// The same calls, for a test that handed the executor to `drive`.
    pub shared_calls: Arc<Mutex<Vec<Call>>>,
    /// How each service behaves, by name; one not here gets ready at once and dies of
    /// the first stop signal.
    pub services: Vec<MockService>,
    /// Something accepts connections on every port before any service starts.
    pub port_taken: bool,
    /// What ending the run's group says escaped it.
    pub escaped: Vec<String>,
    /// The session directory cannot be made; else a real one is (the collector reads it).
    pub session_dir_fails: bool,
    pub(super) running_services: Vec<RunningService>,
    /// `--prepare` fails with this.
    pub prepare_fails: Option<String>,
    /// Ctrl-C comes while `--prepare` runs (and fails it).
    pub interrupt_in_prepare: bool,
    /// The command cannot be started.
    pub spawn_fails: bool,
    /// With `--profile`: a profiler starts on the command and records this many samples;
    /// `None`: the kernel refuses it (as where perf_event_paranoid forbids it).
    pub profiler_samples: Option<usize>,
    /// What the started profiler tells the run.
    pub profiler_notes: Vec<String>,
    /// The command exits by itself this long after it started, with this wait status.
    pub exits_after: Option<(Duration, i32)>,
    /// The signals the command dies of; it ignores the others.
    pub dies_of: Vec<i32>,
    /// Interrupts (Ctrl-C) arrive at these times since the start.
    pub interrupts_at: Vec<Duration>,
    /// What each reaping reports as the command's rusage, and its ru_maxrss.
    pub rusage: CpuTimes,
    pub max_rss_bytes: u64,
    /// A fixture /proc tree the accounting reads; none: an empty one.
    pub proc_root: Option<std::path::PathBuf>,
    /// Processes' CPU clocks as the test sets them; none: the tree has no clock (as a
    /// fixture), so the accounting reads /proc's ticks.
    pub cpu_clocks: Option<ScriptedClocks>,
    /// Exit records the test sends (`exit`); none: the kernel's are "not available".
    pub exits: Option<Arc<Mutex<Vec<Exit>>>>,
    pub(super) prepare_interrupts: usize,
    pub(super) spawned_at: Option<Duration>,
    /// The command's wait status once it ended, until it is reaped.
    pub(super) ended: Option<i32>,
    pub(super) reaped: bool,
    /// Waits for producers' wakeups (`wait_or_sleep`), each passed whole on the clock.
    pub waits: usize,
    /// Daemons that run until a signal they do not ignore: pid, and the signals ignored.
    pub daemons: Vec<(u32, Vec<i32>)>,
}

impl Default for MockExecutor {
    fn default() -> Self {
        MockExecutor {
            start: Instant::now(),
            elapsed: Duration::ZERO,
            waits: 0,
            daemons: Vec::new(),
            calls: Vec::new(),
            shared_calls: Arc::default(),
            services: Vec::new(),
            port_taken: false,
            escaped: Vec::new(),
            session_dir_fails: false,
            running_services: Vec::new(),
            prepare_fails: None,
            interrupt_in_prepare: false,
            spawn_fails: false,
            profiler_samples: None,
            profiler_notes: Vec::new(),
            exits_after: None,
            dies_of: vec![libc::SIGINT, libc::SIGTERM, libc::SIGKILL],
            interrupts_at: Vec::new(),
            rusage: CpuTimes::default(),
            max_rss_bytes: 0,
            proc_root: None,
            cpu_clocks: None,
            exits: None,
            prepare_interrupts: 0,
            spawned_at: None,
            ended: None,
            reaped: false,
        }
    }
}

impl MockExecutor {
    /// The signals sent to the command's group, with when.
    pub fn signals(&self) -> Vec<(i32, Duration)> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                Call::Signal(signal, at) => Some((*signal, *at)),
                _ => None,
            })
            .collect()
    }

    /// The kernel's record of a process's exit, received by the next drain.
    pub fn exit(&self, exit: Exit) {
        let exits = self
            .exits
            .as_ref()
            .expect("exit records are on (`exits: Some`)");
        exits.lock().unwrap().push(exit);
    }

    /// Keeps a call, in `calls` and in `shared_calls` (what a test reads after `drive`
    /// took the executor).
    fn call(&mut self, call: Call) {
        self.shared_calls.lock().unwrap().push(call.clone());
        self.calls.push(call);
    }

    pub fn called(&self, call: &Call) -> bool {
        self.calls.contains(call)
    }

    pub fn spawned(&self) -> bool {
        self.calls.iter().any(|c| matches!(c, Call::Spawn(_)))
    }

    /// The command's wait status, if it has ended by now.
    fn ended(&mut self) -> Option<i32> {
        if self.ended.is_none() {
            if let (Some(at), Some((after, status))) = (self.spawned_at, self.exits_after) {
                if self.elapsed >= at + after {
                    self.ended = Some(status);
                }
            }
        }
        self.ended
    }
}

/// A service's script.
#[derive(Clone, Debug)]
pub struct MockService {
    pub name: String,
    /// Its `--ready` condition (a port, a line) holds this long after it started; `None`:
    /// never.
    pub ready_after: Option<Duration>,
    /// It exits by itself this long after it started, with this wait status.
    pub exits_after: Option<(Duration, i32)>,
    /// The stop signals it ignores; it dies of the others.
    pub ignores: Vec<i32>,
}

impl MockExecutor {
    /// Whether a scripted daemon still runs.
    pub fn process_alive_now(&self, pid: u32) -> bool {
        self.daemons.iter().any(|(daemon, _)| *daemon == pid)
    }
}

impl MockService {
    /// Ready at once, stopped by SIGINT.
    pub fn new(name: &str) -> MockService {
        MockService {
            name: name.to_owned(),
            ready_after: Some(Duration::ZERO),
            exits_after: None,
            ignores: Vec::new(),
        }
    }
}

/// A service the mock started, and where it stands.
pub(super) struct RunningService {
    script: MockService,
    pid: u32,
    started_at: Duration,
    /// Its wait status once it ended.
    ended: Option<i32>,
    reaped: bool,
}

impl RunningService {
    fn ended(&mut self, now: Duration) -> Option<i32> {
        if self.ended.is_none() {
            if let Some((after, status)) = self.script.exits_after {
                if now >= self.started_at + after {
                    self.ended = Some(status);
                }
            }
        }
        self.ended
    }

    fn ready(&mut self, now: Duration) -> bool {
        self.ended(now).is_none()
            && self
                .script
                .ready_after
                .is_some_and(|after| now >= self.started_at + after)
    }
}

impl MockExecutor {
    fn service(&mut self, pid: u32) -> &mut RunningService {
        self.running_services
            .iter_mut()
            .find(|s| s.pid == pid)
            .unwrap_or_else(|| panic!("no service has pid {pid}"))
    }

    /// The signals sent to a service's group, with when.
    pub fn service_signals(&self, name: &str) -> Vec<(i32, Duration)> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                Call::ServiceSignal(to, signal, at) if to == name => Some((*signal, *at)),
                _ => None,
            })
            .collect()
    }
}

/// A profiler that samples nothing real: it keeps what it was asked in the mock's
/// `shared_calls`, and its recording is `samples` samples of the command, 1 ms apart.
struct MockProfiler {
    hz: u64,
    samples: usize,
    notes: Vec<String>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl RunProfiler for MockProfiler {
    fn attach(&self, pid: u32) {
        self.calls.lock().unwrap().push(Call::ProfilerAttach(pid));
    }

    fn notes(&self) -> &[String] {
        &self.notes
    }

    fn finish(self: Box<Self>) -> Recording {
        self.calls.lock().unwrap().push(Call::ProfilerFinished);
        let start = framelab_probe::monotonic_ns();
        let samples = (0..self.samples as u64)
            .map(|i| RawSample {
                mono_ns: start + i * 1_000_000,
                pid: COMMAND_PID,
                tid: COMMAND_PID,
                cpu: 0,
                stack: 0,
            })
            .collect();
        Recording::scripted(self.hz, samples, Vec::new())
    }
}

/// The exit records a test sent, handed over at each drain.
struct ScriptedExits(Arc<Mutex<Vec<Exit>>>);

impl ExitRecords for ScriptedExits {
    fn drain(&mut self, out: &mut Vec<Exit>) {
        out.append(&mut self.0.lock().unwrap());
    }
}

impl Executor for MockExecutor {
    fn now(&self) -> Instant {
        self.start + self.elapsed
    }

    fn sleep(&mut self, wait: Duration) {
        self.elapsed += wait;
    }

    fn wait_or_sleep(&mut self, wait: Duration, _wait_woken: &mut dyn FnMut(Duration) -> bool) {
        // Nobody wakes a scripted run: the whole wait passes on its clock.
        self.waits += 1;
        self.sleep(wait);
    }

    fn spawn_service(
        &mut self,
        spec: &ServiceSpec,
        _env: &[(String, String)],
        _join: Placement,
    ) -> Result<u32> {
        self.call(Call::SpawnService(spec.name.clone()));
        let script = (self.services.iter())
            .find(|s| s.name == spec.name)
            .cloned()
            .unwrap_or_else(|| MockService::new(&spec.name));
        let pid = 1000 + self.running_services.len() as u32;
        self.running_services.push(RunningService {
            script,
            pid,
            started_at: self.elapsed,
            ended: None,
            reaped: false,
        });
        Ok(pid)
    }

    fn accepts(&mut self, _host: &str, _port: u16) -> bool {
        let now = self.elapsed;
        self.port_taken || self.running_services.iter_mut().any(|s| s.ready(now))
    }

    fn ready_line_seen(&mut self, pid: u32) -> bool {
        let now = self.elapsed;
        self.service(pid).ready(now)
    }

    fn service_exited(&mut self, pid: u32) -> Option<i32> {
        let now = self.elapsed;
        let service = self.service(pid);
        if service.reaped {
            return None;
        }
        let status = service.ended(now)?;
        service.reaped = true;
        Some(status)
    }

    fn service_exists(&mut self, pid: u32) -> bool {
        !self.service(pid).reaped
    }

    fn wait_killed(&mut self, pid: u32) {
        let service = self.service(pid);
        assert!(service.ended.is_some(), "waits only for a killed service");
        service.reaped = true;
    }

    fn service_output(&mut self, pid: u32) -> Vec<CapturedOutput> {
        let name = self.service(pid).script.name.clone();
        vec![CapturedOutput {
            role: name,
            stream: "stdout".into(),
            bytes: 0,
            dropped: 0,
            content: Vec::new(),
            note: String::new(),
        }]
    }

    fn register_group(&mut self, pgid: u32) {
        self.call(Call::Register(pgid));
    }

    fn unregister_group(&mut self, pgid: u32) {
        self.call(Call::Unregister(pgid));
    }

    fn start_guardian(&mut self, _grace: Duration) -> Result<()> {
        self.call(Call::StartGuardian);
        Ok(())
    }

    fn make_session_dir(&mut self, access: &SessionAccess) -> Result<SessionDir> {
        if self.session_dir_fails {
            bail!(
                "cannot create the session directory /dev/shm/framelab-session-mock (mkdir: \
                 No space left on device); check that /dev/shm is writable, or set \
                 FRAMELAB_SHM_DIR to a directory that is"
            );
        }
        SessionDir::create(access)
    }

    fn make_run_group(&mut self) -> Result<RunGroup> {
        Ok(RunGroup::untracked())
    }

    fn end_run_group(&mut self, _group: &mut RunGroup) -> Vec<String> {
        self.call(Call::EndRunGroup);
        self.escaped.clone()
    }

    fn start_probes(
        &mut self,
        _options: &ProbeOptions,
        _watched: Vec<u32>,
    ) -> Result<Recorder, String> {
        Err("no probes in the mock".into())
    }

    fn start_sched_tracer(
        &mut self,
        _watched: &[u32],
        _run_cgroup: Option<&std::path::Path>,
    ) -> Result<Tracer, String> {
        Err("no tracepoints in the mock".into())
    }

    fn take_charge(&mut self) {}

    fn run_prepare(&mut self, prepare: &Prepare) -> Result<(), String> {
        self.call(Call::Prepare(prepare.command.clone()));
        if self.interrupt_in_prepare {
            self.prepare_interrupts += 1;
        }
        match &self.prepare_fails {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }

    fn spawn_command(&mut self, spawn: Spawn<'_>) -> Result<Spawned> {
        self.call(Call::Spawn(spawn.argv.to_vec()));
        if let Some(options) = spawn.profile {
            self.call(Call::Profile(options.hz));
        }
        if self.spawn_fails {
            bail!("command not found: '{}'", spawn.argv[0]);
        }
        self.spawned_at = Some(self.elapsed);
        let profiler = spawn.profile.map(|options| match self.profiler_samples {
            Some(samples) => Ok(Box::new(MockProfiler {
                hz: options.hz,
                samples,
                notes: self.profiler_notes.clone(),
                calls: self.shared_calls.clone(),
            }) as Box<dyn RunProfiler>),
            // As where perf_event_paranoid forbids it: the run goes on unprofiled.
            None => Err("perf_event_open is refused in the mock".to_owned()),
        });
        Ok(Spawned {
            pid: COMMAND_PID,
            exec_mono_ns: None,
            profiler,
        })
    }

    fn reap_one(&mut self, before_reaping: &mut dyn FnMut(u32)) -> Option<Reaped> {
        if self.reaped || self.ended().is_none() {
            // As a subreaper reaps any child: a service that died while the command ran.
            let now = self.elapsed;
            let service = (self.running_services.iter_mut())
                .find_map(|s| (!s.reaped && s.ended(now).is_some()).then_some(s))?;
            service.reaped = true;
            let (pid, status) = (service.pid, service.ended?);
            before_reaping(pid);
            return Some(Reaped {
                pid,
                status,
                cpu: CpuTimes::default(),
                max_rss_bytes: 0,
            });
        }
        let status = self.ended()?;
        before_reaping(COMMAND_PID);
        self.reaped = true;
        Some(Reaped {
            pid: COMMAND_PID,
            status,
            cpu: self.rusage,
            max_rss_bytes: self.max_rss_bytes,
        })
    }

    fn group_members(&mut self, _pgid: u32) -> Vec<(u32, String)> {
        Vec::new()
    }

    fn signal_process(&mut self, pid: u32, signal: i32) {
        self.call(Call::DaemonSignal(pid, signal, self.elapsed));
        self.daemons
            .retain(|(daemon, ignores)| *daemon != pid || ignores.contains(&signal));
    }

    fn process_alive(&mut self, pid: u32) -> bool {
        self.process_alive_now(pid)
    }

    fn signal_group(&mut self, pgid: u32, signal: i32) {
        if pgid != COMMAND_PID {
            let now = self.elapsed;
            let service = self.service(pgid);
            let name = service.script.name.clone();
            if service.ended(now).is_none() && !service.script.ignores.contains(&signal) {
                service.ended = Some(signal);
            }
            self.call(Call::ServiceSignal(name, signal, now));
            return;
        }
        self.call(Call::Signal(signal, self.elapsed));
        if self.ended().is_none() && self.dies_of.contains(&signal) {
            // A death by signal: the wait status is the signal's number.
            self.ended = Some(signal);
        }
    }

    fn stop_group(&mut self, pgid: u32, _grace: Duration) {
        self.call(Call::StopGroup(pgid));
    }

    fn interrupts(&self) -> usize {
        self.prepare_interrupts
            + self
                .interrupts_at
                .iter()
                .filter(|&&at| at <= self.elapsed)
                .count()
    }

    fn last_interrupt_signal(&self) -> Option<i32> {
        (self.interrupts() > 0).then_some(libc::SIGINT)
    }

    fn procfs(&self) -> Procfs {
        let root = self.proc_root.clone();
        let procfs = Procfs::at(
            root.unwrap_or_else(|| "/nonexistent/framelab-mock-proc".into()),
            100,
        );
        match &self.cpu_clocks {
            Some(clocks) => procfs.with_cpu_clocks(clocks.clone()),
            None => procfs,
        }
    }

    fn exit_records(&mut self) -> ExitSource {
        match &self.exits {
            Some(exits) => Ok(Box::new(ScriptedExits(exits.clone()))),
            None => Err("not in the mock".into()),
        }
    }
}
