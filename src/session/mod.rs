//! `framelab run`: launching the command in a session, draining rings, accounting, stopping.
//! The run's flow is `supervisor`'s state machine (prepare → services ready → command →
//! stop → drain → account); what it does to the OS goes through `executor`.

mod accounting;
mod collect;
mod cpu_taken;
mod dir;
mod dirwatch;
mod executor;
#[cfg(test)]
mod executor_mock;
pub mod guard;
mod hold;
mod launch;
mod naming;
mod opening;
mod options;
mod output;
pub mod prepare;
pub(crate) mod procevents;
pub mod procfs;
mod progress;
mod recording;
mod rings;
mod rungroup;
mod sched;
mod service_io;
mod services;
mod setup;
mod spilling;
mod supervisor;
pub mod taskstats;
pub mod tree_cache;
mod wake;
pub mod watch;
mod write;

use anyhow::Result;

pub use dir::SessionAccess;
pub use launch::{catch_interrupts, check_runnable, interrupts, relative_to};
pub use options::{
    accounting_every, validate, CaptureOptions, LaunchOptions, LiveOptions, RunOptions,
    ServiceOptions, SessionOptions, WindowOptions, ACCOUNTING_MIN_EVERY,
};
pub use progress::{ProgressLine, RunProgress};
pub use supervisor::RunOutcome;

/// Runs the command in a session and writes the run file. The report is the caller's.
pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    supervisor::drive(opts, executor::System::default())
}
