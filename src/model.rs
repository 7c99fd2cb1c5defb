//! The in-memory run: what the store reads and writes and what analysis consumes.
//! Times are integer nanoseconds of CLOCK_MONOTONIC relative to `RunMeta::origin_mono_ns`
//! (the moment the command was launched) unless a name says otherwise.

use serde::{Deserialize, Serialize};

/// One measured execution.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Run {
    pub meta: RunMeta,
    /// Stage names; a span's `stage` indexes this.
    pub stages: Vec<String>,
    /// Counter names; a counter value's `counter` indexes this.
    pub counter_names: Vec<String>,
    /// Event names; an event's `event` indexes this.
    pub event_names: Vec<String>,
    /// Threads that recorded; a span's `thread` indexes this.
    pub threads: Vec<ThreadInfo>,
    pub spans: Vec<Span>,
    pub counters: Vec<CounterValue>,
    pub events: Vec<EventRecord>,
    pub processes: Vec<ProcessStats>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub frame: u64,
    pub stage: u16,
    pub thread: u32,
    pub start_ns: i64,
    pub dur_ns: i64,
}

impl Span {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterValue {
    pub frame: u64,
    pub counter: u16,
    pub value: i64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    pub event: u16,
    pub key: u64,
    pub thread: u32,
    pub t_ns: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    /// Records this thread's ring dropped because it was full.
    pub dropped: u64,
}

/// Why the process is in the run: started by framelab (the command or its descendants),
/// or watched by pid or name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessRole {
    #[default]
    Command,
    Child,
    Watched,
}

/// CPU and memory of one process over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStats {
    pub pid: u32,
    pub ppid: u32,
    pub name: String,
    pub role: ProcessRole,
    pub user_ns: i64,
    pub sys_ns: i64,
    /// Time this process was alive inside the window.
    pub wall_ns: i64,
    pub peak_rss_bytes: u64,
}

/// How the command ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by a signal framelab did not send (SIGSEGV, SIGABRT, ...).
    pub crashed: bool,
}

/// Why the measured window closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Still recording (or framelab was killed before finalising).
    #[default]
    Unfinished,
    /// `--duration` elapsed and framelab stopped the command.
    Duration,
    /// The command exited by itself.
    Exited,
    /// Ctrl-C (SIGINT or SIGTERM to framelab).
    Interrupted,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: u32,
    pub kernel: String,
    pub clocksource: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: i64,
    pub name: String,
    pub command: Vec<String>,
    /// RFC 3339 UTC, seconds precision.
    pub started_at: String,
    pub framelab_version: String,
    pub host: Host,
    /// `tsc` or `mono`: what the SDK stamped with.
    pub clock: String,
    pub target_fps: Option<f64>,
    pub budget_ns: Option<i64>,
    /// CLOCK_MONOTONIC at launch; every other time is relative to it.
    pub origin_mono_ns: i64,
    /// The measured window: frames whose end falls in [start, end] count.
    pub window_start_ns: i64,
    pub window_end_ns: i64,
    /// `--frames N`: work units done by an uninstrumented command, for a throughput.
    pub frames_hint: Option<u64>,
    /// `--warmup` as asked (the window starts there unless the command ended first).
    #[serde(default)]
    pub warmup_ns: i64,
    /// `--duration` as asked, when one was.
    #[serde(default)]
    pub duration_ns: Option<i64>,
    /// CPU framelab itself used (all its threads) over the window: the observer's cost.
    #[serde(default)]
    pub collector_cpu_ns: i64,
    pub end_reason: EndReason,
    pub exit: Option<ExitInfo>,
    /// Records lost in full rings, summed over threads.
    pub dropped_events: u64,
    /// Records with a name id their process never interned (bad ids from C callers).
    pub invalid_records: u64,
    /// Names refused because a process interned more than the SDK supports.
    pub names_refused: u64,
}
