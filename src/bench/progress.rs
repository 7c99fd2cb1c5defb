//! What a bench tells of its progress as it goes, to whoever shows it: the command line
//! draws a bar on a terminal and writes a line per finished run otherwise
//! (`cmd/bench_progress.rs`); the bench only says what happened.

use std::time::Duration;

pub trait Progress {
    /// The bench begins: `total` runs (warmup runs included), `done` of them already
    /// finished (a resume).
    fn begin(&mut self, total: u64, done: u64);
    /// Run `what` (its variant and parameters) starts.
    fn starting(&mut self, what: &str);
    /// Run `what` ended as `status` ("ok" or what went wrong) after `took`.
    fn finished(&mut self, what: &str, status: &str, took: Duration);
    /// A line of its own (a `--setup` or `--cleanup` being run).
    fn say(&mut self, line: &str);
    /// The runs are over: what is said from now on follows them.
    fn finish(&mut self);
}
