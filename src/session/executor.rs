//! Everything the run's supervisor does to the operating system, behind one trait: start
//! the services and the command, reap what exited, send signals, read the clock, and hand
//! out the sources of the accounting (/proc, the kernel's exit records). `System` does it
//! for real; the supervisor's tests use a scripted mock (`executor_mock.rs`), so each
//! transition is tested without spawning a process or waiting on a clock.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::hold::ChildEnds;
use super::launch::{self, Reaped};
use super::options::ServiceOptions;
use super::output::ChildStdio;
use super::prepare::{self, Prepare};
use super::procfs::Procfs;
use super::rungroup::Placement;
use super::services::Services;
use super::taskstats::{ExitSource, Taskstats};
use crate::output::CapturedOutput;

/// How to start the command (see `launch::spawn`).
pub struct Spawn<'a> {
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    pub cpus: &'a [usize],
    pub stdio: ChildStdio,
    /// Holds the child between fork and exec while the profiler opens its events.
    pub hold: Option<ChildEnds>,
    pub join: Placement,
}

/// What the supervisor asks of the operating system.
pub trait Executor {
    /// Now, for the supervisor's deadlines (grace periods, `--duration`, when to read).
    fn now(&self) -> Instant;
    /// Waits this long between two looks at the run.
    fn sleep(&mut self, wait: Duration);
    /// Starts every service in order and waits until each is ready; on a failure, those
    /// already started are stopped and the error says which one failed and why. Returns
    /// each service's leader and name.
    fn start_services(
        &mut self,
        services: &ServiceOptions,
        env: &[(String, String)],
        grace: Duration,
        join: Placement,
    ) -> Result<Vec<(u32, String)>>;
    /// Stops the services (a run that never started its command).
    fn stop_services(&mut self, grace: Duration);
    /// Stops the services after the command and returns what each wrote.
    fn finish_services(&mut self, grace: Duration) -> Vec<CapturedOutput>;
    /// Runs `--prepare`; `Err` says how it failed.
    fn run_prepare(&mut self, prepare: &Prepare) -> Result<(), String>;
    /// Starts the command in its own process group; its pid.
    fn spawn_command(&mut self, spawn: Spawn<'_>) -> Result<u32>;
    /// Reaps one exited child without blocking; `before_reaping` sees it as a zombie.
    fn reap_one(&mut self, before_reaping: &mut dyn FnMut(u32)) -> Option<Reaped>;
    /// Sends `signal` to the process group `pgid`.
    fn signal_group(&mut self, pgid: u32, signal: i32);
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
    services: Services,
}

impl Executor for System {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&mut self, wait: Duration) {
        std::thread::sleep(wait);
    }

    fn start_services(
        &mut self,
        services: &ServiceOptions,
        env: &[(String, String)],
        grace: Duration,
        join: Placement,
    ) -> Result<Vec<(u32, String)>> {
        self.services = Services::start(&services.specs, env, services.ready_timeout, grace, join)?;
        Ok(self.services.roots())
    }

    fn stop_services(&mut self, grace: Duration) {
        self.services.stop(grace);
    }

    fn finish_services(&mut self, grace: Duration) -> Vec<CapturedOutput> {
        self.services.finish(grace)
    }

    fn run_prepare(&mut self, prepare: &Prepare) -> Result<(), String> {
        prepare::run(prepare)
    }

    fn spawn_command(&mut self, spawn: Spawn<'_>) -> Result<u32> {
        launch::spawn(
            spawn.argv,
            spawn.env,
            spawn.cpus,
            spawn.stdio,
            spawn.hold,
            spawn.join,
        )
    }

    fn reap_one(&mut self, before_reaping: &mut dyn FnMut(u32)) -> Option<Reaped> {
        launch::reap_one(before_reaping)
    }

    fn signal_group(&mut self, pgid: u32, signal: i32) {
        launch::signal_group(pgid, signal);
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
