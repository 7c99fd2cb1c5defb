//! Everything the run's supervisor does to the operating system, behind one trait: make
//! the session directory, start the services and the command (held for the profiler with
//! `--profile`), reap what exited, send signals, register process groups with the
//! guardian, read the clock, and hand out the sources of the accounting (/proc, the
//! kernel's exit records). `System` does it
//! for real; the supervisor's tests use a scripted mock (`executor_mock.rs`), so each
//! transition is tested without spawning a process or waiting on a clock.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::dir::{SessionAccess, SessionDir};
use super::guard;
use super::hold::Hold;
use super::launch::{self, Reaped};
use super::output::ChildStdio;
use super::prepare::{self, Prepare};
use super::procfs::Procfs;
use super::rungroup::{Placement, RunGroup};
use super::service_io::{self, ServiceStreams};
use super::taskstats::{ExitSource, Taskstats};
use crate::output::CapturedOutput;
use crate::probes::recorder::Recorder;
use crate::probes::ProbeOptions;
use crate::profile::{ProfileOptions, Profiler, RunProfiler};
use crate::sched::tracer::Tracer;
use crate::services::ServiceSpec;

/// How to start the command (see `launch::spawn`).
pub struct Spawn<'a> {
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    pub cpus: &'a [usize],
    pub stdio: ChildStdio,
    /// `--profile`: the child is held between fork and exec while the profiler opens its
    /// events on it.
    pub profile: Option<ProfileOptions>,
    pub join: Placement,
}

/// The command, started.
pub struct Spawned {
    pub pid: u32,
    /// CLOCK_MONOTONIC as it was about to exec (ns): where the run's clock starts.
    pub exec_mono_ns: Option<i64>,
    /// With `--profile`: the profiler on the command, or why there is none (the run goes
    /// on unprofiled); `None` also where the child never got as far as its exec.
    pub profiler: Option<Result<Box<dyn RunProfiler>, String>>,
}

/// What the supervisor asks of the operating system.
pub trait Executor {
    /// Now, for the supervisor's deadlines (grace periods, `--duration`, when to read).
    fn now(&self) -> Instant;
    /// Waits this long between two looks at the run.
    fn sleep(&mut self, wait: Duration);
    /// Waits at most this long through `wait_woken` (the collector's wait for a producer's
    /// wakeup), or sleeps it when that cannot wait. A scripted executor only moves its clock.
    fn wait_or_sleep(&mut self, wait: Duration, wait_woken: &mut dyn FnMut(Duration) -> bool) {
        if !wait_woken(wait) {
            self.sleep(wait);
        }
    }
    /// Starts one service in its own process group, its output drained (and watched for
    /// its ready line); its leader's pid. The waiting and stopping are `Services`'s.
    fn spawn_service(
        &mut self,
        spec: &ServiceSpec,
        env: &[(String, String)],
        join: Placement,
    ) -> Result<u32>;
    /// Whether something accepts TCP connections on host:port now.
    fn accepts(&mut self, host: &str, port: u16) -> bool;
    /// Whether a line of the service's output matched its `Ready::Line` (told once).
    fn ready_line_seen(&mut self, pid: u32) -> bool;
    /// The service leader's wait status once it exited (it is reaped), without blocking.
    fn service_exited(&mut self, pid: u32) -> Option<i32>;
    /// Whether the service's leader still exists (a zombie does).
    fn service_exists(&mut self, pid: u32) -> bool;
    /// Waits for a service's leader that was sent SIGKILL.
    fn wait_killed(&mut self, pid: u32);
    /// What the service wrote, once its streams closed.
    fn service_output(&mut self, pid: u32) -> Vec<CapturedOutput>;
    /// The guardian stops this process group if framelab dies.
    fn register_group(&mut self, pgid: u32);
    /// The group is stopped and reaped: no longer the guardian's.
    fn unregister_group(&mut self, pgid: u32);
    /// Starts the guardian, which stops the run's processes if framelab dies.
    fn start_guardian(&mut self, grace: Duration) -> Result<()>;
    /// Makes the session directory the command's probes record into.
    fn make_session_dir(&mut self, access: &SessionAccess) -> Result<SessionDir>;
    /// Makes the run's group: a cgroup where the system gives one, else the process tree.
    fn make_run_group(&mut self) -> Result<RunGroup>;
    /// Kills whatever of the run's group is left; a line per process that had escaped it.
    fn end_run_group(&mut self, group: &mut RunGroup) -> Vec<String>;
    /// Places the `--probe`s; `Err` is the line that says why one cannot be.
    fn start_probes(
        &mut self,
        options: &ProbeOptions,
        watched: Vec<u32>,
    ) -> Result<Recorder, String>;
    /// Opens the scheduler tracepoints for the run (its cgroup v2 group where it has one)
    /// and `watched`; `Err` says why not.
    fn start_sched_tracer(
        &mut self,
        watched: &[u32],
        run_cgroup: Option<&Path>,
    ) -> Result<Tracer, String>;
    /// From here on framelab catches interrupts and adopts the run's orphans.
    fn take_charge(&mut self);
    /// Runs `--prepare`; `Err` says how it failed.
    fn run_prepare(&mut self, prepare: &Prepare) -> Result<(), String>;
    /// Starts the command in its own process group (with `--profile`, its events opened
    /// before its first instruction); its pid, and the profiler.
    fn spawn_command(&mut self, spawn: Spawn<'_>) -> Result<Spawned>;
    /// Reaps one exited child without blocking; `before_reaping` sees it as a zombie.
    fn reap_one(&mut self, before_reaping: &mut dyn FnMut(u32)) -> Option<Reaped>;
    /// Sends `signal` to the process group `pgid`.
    fn signal_group(&mut self, pgid: u32, signal: i32);
    /// The live processes of group `pgid` below framelab, with their names.
    fn group_members(&mut self, pgid: u32) -> Vec<(u32, String)>;
    /// Sends `signal` to one process (a service's daemon, outside its group).
    fn signal_process(&mut self, pid: u32, signal: i32);
    /// Whether `pid` still runs (not gone, not a zombie).
    fn process_alive(&mut self, pid: u32) -> bool;
    /// Stops the group after framelab failed: SIGTERM, SIGKILL after `grace`.
    fn stop_group(&mut self, pgid: u32, grace: Duration);
    /// How many interrupts (Ctrl-C, SIGTERM, SIGHUP) framelab has received.
    fn interrupts(&self) -> usize;
    /// The signal of the latest interrupt.
    fn last_interrupt_signal(&self) -> Option<i32>;
    /// Where processes' CPU times and memory are read.
    fn procfs(&self) -> Procfs;
    /// The kernel's exit records, or why there are none.
    fn exit_records(&mut self) -> ExitSource;
}

/// The real operating system.
#[derive(Default)]
pub struct System {
    services: ServiceStreams,
}

impl Executor for System {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&mut self, wait: Duration) {
        std::thread::sleep(wait);
    }

    fn spawn_service(
        &mut self,
        spec: &ServiceSpec,
        env: &[(String, String)],
        join: Placement,
    ) -> Result<u32> {
        self.services.spawn(spec, env, join)
    }

    fn accepts(&mut self, host: &str, port: u16) -> bool {
        service_io::accepts(host, port)
    }

    fn ready_line_seen(&mut self, pid: u32) -> bool {
        self.services.ready_line_seen(pid)
    }

    fn service_exited(&mut self, pid: u32) -> Option<i32> {
        service_io::exited(pid)
    }

    fn service_exists(&mut self, pid: u32) -> bool {
        service_io::exists(pid)
    }

    fn wait_killed(&mut self, pid: u32) {
        service_io::wait_killed(pid);
    }

    fn service_output(&mut self, pid: u32) -> Vec<CapturedOutput> {
        self.services.output(pid)
    }

    fn register_group(&mut self, pgid: u32) {
        guard::register_group(pgid);
    }

    fn unregister_group(&mut self, pgid: u32) {
        guard::unregister_group(pgid);
    }

    fn start_guardian(&mut self, grace: Duration) -> Result<()> {
        guard::start(grace)
    }

    fn make_session_dir(&mut self, access: &SessionAccess) -> Result<SessionDir> {
        SessionDir::create(access)
    }

    fn make_run_group(&mut self) -> Result<RunGroup> {
        RunGroup::create()
    }

    fn end_run_group(&mut self, group: &mut RunGroup) -> Vec<String> {
        group.end()
    }

    fn start_probes(
        &mut self,
        options: &ProbeOptions,
        watched: Vec<u32>,
    ) -> Result<Recorder, String> {
        Recorder::start(options, watched)
    }

    fn start_sched_tracer(
        &mut self,
        watched: &[u32],
        run_cgroup: Option<&Path>,
    ) -> Result<Tracer, String> {
        Tracer::start(std::process::id(), watched.to_vec(), run_cgroup)
    }

    fn take_charge(&mut self) {
        launch::catch_interrupts();
        launch::catch_child_exits();
        launch::become_subreaper();
    }

    fn run_prepare(&mut self, prepare: &Prepare) -> Result<(), String> {
        prepare::run(prepare)
    }

    fn spawn_command(&mut self, spawn: Spawn<'_>) -> Result<Spawned> {
        // The hold cannot be made: the command runs unheld, and so unprofiled.
        let hold = spawn.profile.map(|options| {
            Hold::new(move |pid| Profiler::start(options, pid))
                .map_err(|e| format!("cannot hold the command while its events open ({e})"))
        });
        let held = match &hold {
            Some(Ok(hold)) => Some(hold.child_ends()),
            _ => None,
        };
        let launched = launch::spawn(
            spawn.argv,
            spawn.env,
            spawn.cpus,
            spawn.stdio,
            held,
            spawn.join,
        );
        // Whether the spawn worked or not: the hold's thread is joined.
        let profiler = hold.and_then(|hold| match hold {
            Ok(hold) => hold.finish(),
            Err(why) => Some(Err(why)),
        });
        let profiler = profiler
            .map(|started| started.map(|profiler| Box::new(profiler) as Box<dyn RunProfiler>));
        let launched = launched?;
        Ok(Spawned {
            pid: launched.pid,
            exec_mono_ns: launched.exec_mono_ns,
            profiler,
        })
    }

    fn reap_one(&mut self, before_reaping: &mut dyn FnMut(u32)) -> Option<Reaped> {
        launch::reap_one(before_reaping)
    }

    fn signal_group(&mut self, pgid: u32, signal: i32) {
        launch::signal_group(pgid, signal);
    }

    fn group_members(&mut self, pgid: u32) -> Vec<(u32, String)> {
        let procfs = super::procfs::Procfs::system();
        (procfs.below(std::process::id()).into_iter())
            .filter_map(|pid| procfs.stat(pid))
            .filter(|stat| stat.pgrp == pgid && stat.state != 'Z')
            .map(|stat| (stat.pid, stat.comm))
            .collect()
    }

    fn signal_process(&mut self, pid: u32, signal: i32) {
        // SAFETY: kill(2) with a pid framelab found among the run's processes.
        unsafe { libc::kill(pid as i32, signal) };
    }

    fn process_alive(&mut self, pid: u32) -> bool {
        Procfs::system().stat(pid).is_some_and(|s| s.state != 'Z')
    }

    fn stop_group(&mut self, pgid: u32, grace: Duration) {
        launch::stop_group(pgid, grace);
    }

    fn interrupts(&self) -> usize {
        launch::interrupts()
    }

    fn last_interrupt_signal(&self) -> Option<i32> {
        launch::last_interrupt_signal()
    }

    fn procfs(&self) -> Procfs {
        Procfs::system()
    }

    fn exit_records(&mut self) -> ExitSource {
        Ok(Box::new(Taskstats::open()?))
    }
}
