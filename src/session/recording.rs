//! What the supervisor records while the command runs, as one trait: in a real run the
//! collector (rings, accounting), with the profiler and the run group beside it; in the
//! supervisor's tests, a recording that keeps what it was told.

use anyhow::Result;

use super::collect::Collector;
use super::launch::Reaped;
use super::rungroup::RunGroup;
use crate::model::{EndReason, ExitInfo, ProcessRole};

/// What the supervisor records while the command runs: the collector in a real run.
pub trait Recording {
    /// Drains the rings; how full the fullest was (0 to 1).
    fn drain(&mut self) -> Result<f64>;
    /// Nanoseconds since the launch.
    fn now_ns(&self) -> i64;
    /// A child that exited, still a zombie: its final times can be read.
    fn before_reaping(&mut self, pid: u32);
    /// A child reaped, with its rusage.
    fn reaped(&mut self, reaped: &Reaped);
    /// Every child that had exited is reaped (whether or not each got to `reaped`).
    fn reaps_done(&mut self) {}
    fn first_span_ns(&self) -> Option<i64>;
    /// Where frame N+1 of `--warmup-frames N` began, once it has.
    fn opening_frame_start_ns(&self) -> Option<i64>;
    fn open_window(&mut self, pid: u32, start_ns: i64);
    fn reopen_window(&mut self, pid: u32, start_ns: i64);
    fn close_window(&mut self, pid: u32, reason: EndReason);
    /// The window has opened for good (not a provisional opening the first frame moves).
    fn window_settled(&mut self) {}
    /// The window was opened and closed at the end: it holds nothing.
    fn empty_window(&mut self);
    /// The signal that interrupted the run.
    fn interrupted_by(&mut self, signal: Option<i32>);
    /// A signal sent to stop the command after the window closed.
    fn stopping_with(&mut self, stop: crate::model::StopSignal);
    fn set_exit(&mut self, exit: ExitInfo);
    /// Reads the processes of the run (the first time: nothing else).
    fn read_processes(&mut self, pid: u32);
    /// Reads the processes of the run (unless another thread does), and follows what the
    /// reading found.
    fn sample(&mut self, pid: u32);
    /// Whether `sample` may wait for the ticks that come anyway: another thread reads the
    /// processes on its own wakeups, and nothing `sample` follows is urgent.
    fn sample_waits_for_ticks(&self) -> bool {
        false
    }
    /// The clock refreshed; frames seen so far.
    fn refresh_frames_seen(&mut self) -> u64;
    fn commit(&mut self) -> Result<()>;
    /// No frame came: the window stays where it opened, at launch + warmup.
    fn warmup_fell_back_to_launch(&mut self);
    /// Whether every ring's producer wakes the collector once its ring passes a quarter
    /// full, so that the next drain may wait until then (or the next reading or commit).
    fn producers_wake(&self) -> bool {
        false
    }
    /// Waits up to `longest`, or until a producer wakes the collector; `false` when it
    /// could not wait that way (the caller then sleeps).
    fn wait_for_producers(&mut self, _longest: std::time::Duration) -> bool {
        false
    }
    /// Whether this tick drains the rings (a spill may leave them to fill between wakeups).
    fn drain_due(&self) -> bool {
        true
    }
    /// How long until a drain is due anyway, where the rings are left to fill.
    fn next_drain_within(&self) -> Option<std::time::Duration> {
        None
    }
}

/// The collector, the profiler and the run group as the supervisor records through them.
pub struct CollectorRecording<'a> {
    pub collector: &'a mut Collector,
    pub profiler: Option<&'a dyn crate::profile::RunProfiler>,
    pub run_group: &'a mut RunGroup,
}

impl Recording for CollectorRecording<'_> {
    fn drain(&mut self) -> Result<f64> {
        self.collector.drain()
    }

    fn drain_due(&self) -> bool {
        self.collector.drain_due()
    }

    fn next_drain_within(&self) -> Option<std::time::Duration> {
        self.collector.next_drain_within()
    }

    fn now_ns(&self) -> i64 {
        self.collector.now_ns()
    }

    fn before_reaping(&mut self, pid: u32) {
        let now_ns = self.collector.now_ns();
        let mut accounting = self.collector.accounting();
        accounting.set_reaping(true);
        accounting.final_reading(pid, now_ns);
        drop(accounting);
        self.collector.check_user(pid);
    }

    fn reaped(&mut self, reaped: &Reaped) {
        let now_ns = self.collector.now_ns();
        let mut accounting = self.collector.accounting();
        accounting.reaped(reaped.pid, reaped.cpu, reaped.max_rss_bytes, now_ns);
        accounting.set_reaping(false);
    }

    fn reaps_done(&mut self) {
        self.collector.accounting().set_reaping(false);
    }

    fn first_span_ns(&self) -> Option<i64> {
        self.collector.first_span_ns()
    }

    fn opening_frame_start_ns(&self) -> Option<i64> {
        self.collector.opening_frame_start_ns()
    }

    fn open_window(&mut self, pid: u32, start_ns: i64) {
        self.collector.open_window(pid, start_ns);
    }

    fn reopen_window(&mut self, pid: u32, start_ns: i64) {
        self.collector.reopen_window(pid, start_ns);
    }

    fn close_window(&mut self, pid: u32, reason: EndReason) {
        self.collector.close_window(pid, reason);
    }

    fn window_settled(&mut self) {
        self.collector.start_spill();
    }

    fn empty_window(&mut self) {
        self.collector.meta.window_start_ns = self.collector.meta.window_end_ns;
    }

    fn interrupted_by(&mut self, signal: Option<i32>) {
        self.collector.meta.session.interrupt_signal = signal;
    }

    fn stopping_with(&mut self, stop: crate::model::StopSignal) {
        self.collector.meta.session.stop_signals.push(stop);
    }

    fn set_exit(&mut self, exit: ExitInfo) {
        self.collector.set_exit(exit);
    }

    fn read_processes(&mut self, pid: u32) {
        let now_ns = self.collector.now_ns();
        self.collector.accounting().sample(now_ns, pid);
    }

    /// Without a cgroup the guardian learns the run's process groups from `sample`: a
    /// daemon's `setsid` must reach it before a kill -9 of framelab could, so the ticks keep
    /// the readings' beat then.
    fn sample_waits_for_ticks(&self) -> bool {
        self.collector.sweeps_elsewhere() && self.run_group.in_a_cgroup()
    }

    fn sample(&mut self, pid: u32) {
        if !self.collector.sweeps_elsewhere() {
            self.read_processes(pid);
        }
        // Without a cgroup, the guardian learns the process groups the run made.
        self.run_group.follow_process_groups();
        self.collector.check_users();
        if let Some(profiler) = self.profiler {
            // Processes found by --watch NAME since the last reading.
            let watched: Vec<u32> = (self.collector.accounting().live_pids())
                .filter(|&(_, role)| role == ProcessRole::Watched)
                .map(|(pid, _)| pid)
                .collect();
            for watched in watched {
                profiler.attach(watched);
            }
        }
    }

    fn refresh_frames_seen(&mut self) -> u64 {
        self.collector.refresh_clock();
        self.collector.frames_seen()
    }

    fn commit(&mut self) -> Result<()> {
        self.collector.commit()
    }

    fn warmup_fell_back_to_launch(&mut self) {
        self.collector.warmup_fell_back_to_launch();
    }

    fn producers_wake(&self) -> bool {
        self.collector.producers_wake()
    }

    fn wait_for_producers(&mut self, longest: std::time::Duration) -> bool {
        self.collector.wait_for_producers(longest)
    }
}
