//! The in-memory run: what the store reads and writes and what analysis consumes.
//! Times are integer nanoseconds of CLOCK_MONOTONIC relative to `RunMeta::origin_mono_ns`
//! (the moment the command was launched) unless a name says otherwise.

pub mod captured;
pub mod leftovers;
pub mod sched;
pub mod template;
pub mod window;

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
    /// Machine readings taken while the run went (GPU, CPU frequency, power, threads).
    #[serde(default)]
    pub telemetry: Telemetry,
    /// Where an imported run came from; `None` for runs framelab recorded.
    #[serde(default)]
    pub import: Option<ImportInfo>,
    /// Histograms imported as such (bpftrace `hist()`/`lhist()`), not derived from spans.
    #[serde(default)]
    pub histograms: Vec<Histogram>,
    /// Metrics from the command's output or result file (`--metric`), schema 5.
    #[serde(default)]
    pub metrics: Vec<captured::MetricValue>,
    /// What was kept of the command's streams when they were captured, schema 5.
    #[serde(default)]
    pub outputs: Vec<captured::CapturedOutput>,
    /// When each thread was on a CPU, runnable or blocked, schema 7; `None` for runs
    /// recorded without (imports, older files, `FRAMELAB_SCHED=none`).
    #[serde(default)]
    pub sched: Option<sched::SchedTimeline>,
}

/// A span with its names resolved: (frame, stage, pid, tid, thread name, start_ns, dur_ns).
pub type NamedSpan = (u64, String, u32, u32, String, i64, i64);

impl Run {
    /// Every span with its stage and thread resolved, sorted: two runs hold the same spans
    /// when these are equal, whatever their ids (what export/import round trips compare).
    pub fn named_spans(&self) -> Vec<NamedSpan> {
        let mut spans: Vec<NamedSpan> = (self.spans.iter())
            .map(|s| {
                let stage = self
                    .stages
                    .get(usize::from(s.stage))
                    .cloned()
                    .unwrap_or_default();
                let t = self
                    .threads
                    .get(s.thread as usize)
                    .cloned()
                    .unwrap_or_default();
                (s.frame, stage, t.pid, t.tid, t.name, s.start_ns, s.dur_ns)
            })
            .collect();
        spans.sort();
        spans
    }
}

/// Where a run's spans and counter values come from, in the order they were recorded, a
/// chunk at a time: the run file, streamed (`store::StoredRun`), or a run in memory. What
/// an analysis of a big run reads instead of holding every span (`analyze::compact`).
pub trait SpanSource {
    /// Spans to expect, to size what holds them (a hint: more or fewer may come).
    fn span_count_hint(&self) -> usize;
    fn for_each_spans(
        &self,
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()>;
    fn for_each_counters(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()>;

    /// [`SpanSource::for_each_spans`], each chunk also given to `beside` before `sink`:
    /// on the thread that read it where the source reads on threads of its own (`worker`,
    /// below [`BESIDE_WORKERS`], says which), in no set order between workers. What a
    /// reader takes of the spans in any order (counts, sums, buckets) is taken there, off
    /// the thread that takes what needs the run's order (issue 29).
    fn for_each_spans_beside(
        &self,
        beside: &(dyn Fn(usize, &[Span]) -> anyhow::Result<()> + Sync),
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.for_each_spans(&mut |chunk| {
            beside(0, chunk)?;
            sink(chunk)
        })
    }
}

/// Workers of [`SpanSource::for_each_spans_beside`], at most.
pub const BESIDE_WORKERS: usize = 4;

impl SpanSource for Run {
    fn span_count_hint(&self) -> usize {
        self.spans.len()
    }

    fn for_each_spans(
        &self,
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.spans.chunks(8192).try_for_each(sink)
    }

    fn for_each_counters(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.counters.chunks(8192).try_for_each(sink)
    }
}

/// How an imported run was read: the format, the files, and what could not be used.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportInfo {
    /// The importer's name (`chrome`, `perfetto`, `wayland`, `presentmon`, ...).
    pub format: String,
    pub files: Vec<String>,
    /// Lines or records skipped as malformed (`--skip-bad`).
    pub skipped: u64,
    /// Where the first skipped one was and why (`FILE:LINE: reason`).
    pub first_skipped: Option<String>,
    /// One line each: records the importer counted but could not turn into spans
    /// (unclosed slices, releases with no commit, unmatched pair events, ...).
    pub notes: Vec<String>,
}

impl ImportInfo {
    /// The note of a trace imported with no frame definition (each slice became its own
    /// frame): the report then leaves out every frame statistic.
    pub const NO_FRAMES: &'static str = "frames: none defined (each slice is counted alone), so \
        no fps, lows, late, stutter, jitter, intervals or bound are shown; define them with \
        framelab import --frame-arg ARG or --frame-regex REGEX (ARG: the argument holding a \
        slice's frame id; REGEX: its first group, on slice names, is the frame id)";

    /// Whether the importer found no frame definition (see [`ImportInfo::NO_FRAMES`]).
    pub fn frames_undefined(&self) -> bool {
        self.notes.iter().any(|n| n == Self::NO_FRAMES)
    }
}

/// A histogram as another tool computed it: buckets with counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// As the tool named it, with its key: `@usecs`, `@bytes[nginx]`.
    pub name: String,
    /// Unit of the bucket bounds as far as the name tells (`ns`, `us`, `bytes`), or "".
    pub unit: String,
    pub buckets: Vec<Bucket>,
}

/// `[lo, hi)`; `None` is unbounded on that side (bpftrace's `(..., 0)` and `[100, ...)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
    pub count: u64,
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
    /// Saturating: an imported span at the edge of the i64 range must not overflow.
    pub fn end_ns(&self) -> i64 {
        self.start_ns.saturating_add(self.dur_ns)
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
    /// Started by `--service` (or a descendant of one); `ProcessStats::service` names it.
    Service,
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
    /// The resolution of `user_ns + sys_ns`: 1 when both ends come from the process CPU
    /// clock (ns), the kernel's clock tick (10 ms) when any part comes from /proc's
    /// utime/stime; 0 when unknown (runs imported or written before schema 3).
    #[serde(default)]
    pub cpu_resolution_ns: i64,
    #[serde(default)]
    pub cpu_source: CpuSource,
    /// Why the figure is what it is, when that needs saying (the `(exited children)` row
    /// says whose reaped children it holds and why they could not be told apart); else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The `--service` it belongs to (role `Service`); else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service: String,
    /// The role a watched process counts under (`--watch-pid ROLE=PID`, `--watch
    /// ROLE=NAME`, else its name); empty for other roles and for runs before schema 7.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub watch_role: String,
}

/// Where a process row's CPU time comes from (docs/metrics.md, "CPU and memory").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    /// The process CPU clock at both ends of the window (or of its life in it): ns.
    Clock,
    /// /proc utime + stime, in clock ticks.
    #[default]
    Proc,
    /// It ended between two readings and was reaped by a process of the run: what it used
    /// after its last reading is what its reaper's reaped-children time grew by (ticks).
    Reaper,
    /// It ended between two readings; the kernel's exit record (taskstats) gives its CPU up
    /// to its exit (to within a scheduler tick).
    Exit,
    /// It ended between two readings together with others reaped by the same process, so
    /// what each used after its last reading cannot be told apart: the row holds its last
    /// reading, the rest is in `(exited children)`.
    LastReading,
    /// The `(exited children)` row: CPU of processes of the run no row accounts for; and the
    /// `(not seen by name)` row: what the run's cgroup counted beyond every row of the
    /// processes it holds (docs/reading-the-report.md, "The run group").
    Unattributed,
}

impl CpuSource {
    pub fn name(self) -> &'static str {
        match self {
            CpuSource::Clock => "clock",
            CpuSource::Proc => "proc",
            CpuSource::Reaper => "reaper",
            CpuSource::Exit => "exit",
            CpuSource::LastReading => "last_reading",
            CpuSource::Unattributed => "unattributed",
        }
    }

    pub fn from_name(name: &str) -> Option<CpuSource> {
        [
            CpuSource::Clock,
            CpuSource::Proc,
            CpuSource::Reaper,
            CpuSource::Exit,
            CpuSource::LastReading,
            CpuSource::Unattributed,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// What the warmup is counted from. The window opens `--warmup` after the launch or after
/// the first span started, or where frame N+1 began (`--warmup-frames N`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupFrom {
    /// The command's launch (every run before schema 4).
    #[default]
    Launch,
    /// The first span the command recorded: start-up before it is not warmup.
    FirstFrame,
    /// A number of frames (`--warmup-frames`).
    Frames,
}

impl WarmupFrom {
    pub fn name(self) -> &'static str {
        match self {
            WarmupFrom::Launch => "launch",
            WarmupFrom::FirstFrame => "first_frame",
            WarmupFrom::Frames => "frames",
        }
    }

    pub fn from_name(name: &str) -> Option<WarmupFrom> {
        [
            WarmupFrom::Launch,
            WarmupFrom::FirstFrame,
            WarmupFrom::Frames,
        ]
        .into_iter()
        .find(|w| w.name() == name)
    }
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
    /// A signal to framelab: Ctrl-C (SIGINT), SIGTERM or SIGHUP; `SessionFacts::interrupt_signal`
    /// says which.
    Interrupted,
}

/// How the recording itself went, beyond the command: which signal stopped framelab,
/// threads that ran unrecorded, rings a program corrupted, a session directory removed
/// under the live run, users the command switched to who could not join the session.
/// Empty (the default) for a clean run. Stored in the run file's `framelab` table under
/// the key `session_facts.<run_id>` as JSON (docs/run-file.md), not in a column of its own
/// until the schema gives it one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionFacts {
    /// The signal that interrupted framelab (2 for Ctrl-C, 15 SIGTERM, 1 SIGHUP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt_signal: Option<i32>,
    /// The signals framelab sent to stop the command after the window closed, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop_signals: Vec<StopSignal>,
    /// Threads that could not get a ring and ran unrecorded, by the error that stopped them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unrecorded_threads: Vec<UnrecordedThreads>,
    /// Where the rings were (the session's base directory, e.g. `/dev/shm`), when a thread
    /// ran unrecorded: the directory that was full.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub shm_dir: String,
    /// Rings the program made unreadable (truncated, header overwritten): how many, and
    /// what was wrong with the first few. Their records up to the damage are kept.
    #[serde(skip_serializing_if = "is_zero")]
    pub corrupt_rings: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corrupt_ring_details: Vec<String>,
    /// Rings this framelab cannot read (made by a framelab-probe of another wire version):
    /// how many, and the first few. Their records are lost.
    #[serde(skip_serializing_if = "is_zero")]
    pub foreign_rings: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign_ring_details: Vec<String>,
    /// When (ns after launch) the session directory was found removed while recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_lost_ns: Option<i64>,
    /// Users processes of the run switched to who could not write the private session
    /// directory (`uid 65534 (nobody)`), when no thread of theirs recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign_users: Vec<String>,
    /// What held every process of the run (a cgroup, or framelab's process tree), and the
    /// CPU it counted over the window; `None` for runs recorded before it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_group: Option<RunGroupFacts>,
    /// `--probe` stages and the `--frame-probe`: where each was placed, what a hit cost,
    /// and what it saw (docs/probes.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeFacts>,
    /// Probe samples the kernel could not write (a ring was full).
    #[serde(skip_serializing_if = "is_zero")]
    pub probe_records_lost: u64,
    /// The thread the probes cost most over the run (its hits × their measured cost), and
    /// that cost in ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_busiest_thread: Option<(u32, i64)>,
    /// `run --pair STAGE=START:END[:KEY]`: what each made of the run's events.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub probe_pairs: Vec<PairFacts>,
    /// The machine's CPU time that no task had over the window (stolen by the hypervisor,
    /// in interrupts); `None` for runs recorded before it was kept, or without /proc/stat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_taken: Option<CpuTakenFacts>,
    /// Records under name id 0, which the SDK gives a name it refused (its table was full),
    /// when names were refused; else id 0 is a bad id, counted in `invalid_records`.
    #[serde(skip_serializing_if = "is_zero")]
    pub refused_name_records: u64,
}

/// The machine's CPU time over the window that the scheduler never gave a task, from
/// `/proc/stat` (clock ticks): a thread on a CPU losing it looks on CPU meanwhile.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuTakenFacts {
    /// CPUs counted (those online at both readings).
    pub cpus: u32,
    /// Between the two readings: the window.
    pub wall_ns: i64,
    /// The tick `/proc/stat` counts in: no figure is finer.
    pub tick_ns: i64,
    /// Summed over the CPUs: stolen by the hypervisor, in hard and in soft interrupts.
    pub steal_ns: i64,
    pub irq_ns: i64,
    pub softirq_ns: i64,
    /// The CPU that lost the most (all three), and how much.
    pub most_taken_cpu: u32,
    pub most_taken_ns: i64,
}

impl CpuTakenFacts {
    /// Of all the CPUs' time over the window, the share no task had (0..1).
    pub fn share(&self) -> f64 {
        self.of_all(self.steal_ns + self.interrupts_ns())
    }

    /// In interrupts, hard and soft, summed over the CPUs.
    pub fn interrupts_ns(&self) -> i64 {
        self.irq_ns + self.softirq_ns
    }

    /// `ns` as a share of all the CPUs' time over the window (0..1).
    pub fn of_all(&self, ns: i64) -> f64 {
        let all = self.cpus as f64 * self.wall_ns as f64;
        if all > 0.0 {
            ns as f64 / all
        } else {
            0.0
        }
    }

    /// Of the CPU that lost most, the share of its time (0..1).
    pub fn most_share(&self) -> f64 {
        if self.wall_ns > 0 {
            self.most_taken_ns as f64 / self.wall_ns as f64
        } else {
            0.0
        }
    }

    /// 2 CPUs for 10 s: 0.5 s stolen, 0.1 s in interrupts, 0.45 s of it from CPU 1 (tests).
    #[cfg(test)]
    pub fn two_cpus_losing_3_percent() -> CpuTakenFacts {
        CpuTakenFacts {
            cpus: 2,
            wall_ns: 10_000_000_000,
            tick_ns: 10_000_000,
            steal_ns: 500_000_000,
            irq_ns: 40_000_000,
            softirq_ns: 60_000_000,
            most_taken_cpu: 1,
            most_taken_ns: 450_000_000,
        }
    }

    /// Enough to stretch frames visibly: 2% of the machine, or 5% of one CPU, and more than
    /// the two ticks a reading's rounding could make of nothing.
    pub fn notable(&self) -> bool {
        self.most_taken_ns > 2 * self.tick_ns && (self.share() >= 0.02 || self.most_share() >= 0.05)
    }
}

/// One `run --pair STAGE=START:END[:KEY]` (docs/probes.md): its spans are ordinary rows of
/// stage `stage`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PairFacts {
    pub stage: String,
    pub start: String,
    pub end: String,
    /// `key` (the events' key) or `tid` (their thread).
    pub by: String,
    pub spans: u64,
    pub unmatched_starts: u64,
    pub unmatched_ends: u64,
    pub restarted: u64,
    /// Events of tasks that are not the run's (a tracepoint sees every task), left out.
    pub other_tasks: u64,
    /// What did not pair, one sentence each (the report's notes).
    pub notes: Vec<String>,
}

/// One probe of a run (`--probe STAGE=BINARY:FUNCTION`, or the `--frame-probe`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeFacts {
    /// The stage its spans have (the event's name for a `--usdt-event`); empty for the
    /// frame probe.
    pub stage: String,
    /// `uprobe` (a function), `usdt` (a pair of USDT probes) or `usdt event`.
    pub kind: String,
    /// As given (`prog:encode_frame`).
    pub target: String,
    /// The file probed, as found.
    pub path: String,
    pub function: String,
    pub file_offset: u64,
    pub first_instruction: crate::probes::cost::InstructionClass,
    /// What one call costs the probed thread (entry + return, or begin + end; one hit for
    /// an event), measured on this machine before the run.
    pub cost_per_hit_ns: Option<i64>,
    /// What of that cost lies inside each span (the entry trap's tail and the return
    /// trap's head, measured on an empty function before the run): taken off every span.
    pub subtracted_ns: Option<i64>,
    /// Spans shorter than `subtracted_ns`, made 0 long.
    pub clamped: u64,
    /// Calls seen on the run's threads.
    pub hits: u64,
    pub spans: u64,
    /// Returns from calls entered before the probe was placed.
    pub unmatched_returns: u64,
    /// Calls not returned from when the run ended.
    pub unfinished: u64,
    /// Calls open when the kernel lost samples, not made spans (their return may have been
    /// lost: pairing them with a later one would make one span of two calls).
    #[serde(skip_serializing_if = "is_zero")]
    pub cut_by_loss: u64,
    pub frame_probe: bool,
}

/// A signal framelab sent to stop the command once the window had closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StopSignal {
    pub signal: i32,
    /// When, ns after launch.
    pub at_ns: i64,
    /// Sent at once because framelab was interrupted again (by this signal: 2 for Ctrl-C)
    /// while stopping the command, without waiting out the grace period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<i32>,
}

/// The run group: the container every process framelab started for a run was placed in
/// (docs/reading-the-report.md, "The run group").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunGroupFacts {
    /// `cgroup2`, `cgroup1` (cpuacct + freezer) or `tree` (framelab's descendants, as
    /// their subreaper: no cgroup).
    pub mechanism: String,
    /// The cgroup's directory (the cpuacct one for `cgroup1`); empty for `tree`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Why no cgroup was used, and how to get one; empty when one was.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unavailable: String,
    /// CPU the cgroup counted over the window: every process in it, those that lived
    /// between two readings too; `None` without a cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sys_ns: Option<i64>,
    /// The sum of the process rows of the run's processes (every role but watched), the
    /// `(not seen by name)` row left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_cpu_ns: Option<i64>,
    /// Processes still alive once the command and the services had ended (left running in
    /// the group, moved out of it, or outliving SIGKILL): named, with what was done.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub escaped: Vec<String>,
    /// CPU the cgroup counted after the window closed, until the run's processes had
    /// ended (being stopped, and the services' stopping): in no figure of the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_window_cpu_ns: Option<i64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Threads that ran unrecorded for one reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnrecordedThreads {
    /// The `errno` that stopped the ring's creation (28 ENOSPC: no space left).
    pub errno: i32,
    pub threads: u64,
}

impl SessionFacts {
    pub fn is_empty(&self) -> bool {
        *self == SessionFacts::default()
    }

    /// Threads that ran unrecorded, whatever the reason.
    pub fn unrecorded(&self) -> u64 {
        self.unrecorded_threads.iter().map(|u| u.threads).sum()
    }

    /// Shared memory ran out: a ring could not be given its pages.
    pub fn shm_full(&self) -> bool {
        self.unrecorded_threads
            .iter()
            .any(|u| u.errno == ENOSPC || u.errno == ENOMEM)
    }
}

/// The two `errno` values that mean the session's memory ran out.
pub const ENOSPC: i32 = 28;
pub const ENOMEM: i32 = 12;

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
    /// Where the warmup was counted from (`--warmup-from`, `--warmup-frames`).
    #[serde(default)]
    pub warmup_from: WarmupFrom,
    /// `--warmup-frames N`, when the warmup was a number of frames.
    #[serde(default)]
    pub warmup_frames: Option<u64>,
    /// When the first span started (ns after launch), as the collector saw it live.
    #[serde(default)]
    pub first_span_ns: Option<i64>,
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
    /// How the recording went (signal, unrecorded threads, corrupt rings, lost session).
    #[serde(default)]
    pub session: SessionFacts,
    /// `--tag KEY=VALUE`s (and a bench's parameter values), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
}

/// `--tag KEY=VALUE`: a piece of the run's configuration, stored and shown with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

/// What the samplers recorded: which sources ran and how it went, the series they
/// produced, and every reading. Empty for runs recorded without sampling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Telemetry {
    pub sources: Vec<SourceStatus>,
    /// A sample's `series` indexes this.
    pub series: Vec<SampleSeries>,
    /// By series, then time.
    pub samples: Vec<Sample>,
}

/// One reading: the raw integer the source gave, in the series' unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub series: u32,
    /// When it was read, ns after launch.
    pub t_ns: i64,
    pub value: i64,
}

/// How a series' values are read: a level, a running total, or a set of flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// A level at the moment of reading (a clock, a temperature, a busy %).
    #[default]
    Gauge,
    /// A running total that only grows (energy, CPU time, context switches); differences
    /// between readings are what it measured. Written when it changes, and at the first
    /// and last reading.
    Counter,
    /// Bit flags (NVML throttle reasons).
    Bitmask,
}

/// One metric of one thing (a GPU, a core, a thread) from one source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SampleSeries {
    /// `nvml`, `amdgpu`, `cpufreq`, `rapl`, `threads`.
    pub source: String,
    /// e.g. `sm_clock`, `gpu_busy`, `power`, `energy`, `cpu_time`.
    pub metric: String,
    /// Which one: a GPU index, a core number, a RAPL domain, `PID/TID`, `GPU/PID`.
    pub entity: String,
    /// A human name for the entity: the GPU's model, the thread's name.
    pub label: String,
    /// The unit of the stored values, as the source gives them: `MHz`, `kHz`, `%`, `mW`,
    /// `uW`, `mJ`, `uJ`, `C`, `mC`, `B`, `ns`, `count`, `flags`.
    pub unit: String,
    pub kind: SeriesKind,
}

/// How a telemetry source fared in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    /// Sampled until the end of the run.
    #[default]
    On,
    /// Not available on this machine (no driver, no such files): never sampled.
    Off,
    /// Switched off with `--no-sample`.
    Disabled,
    /// Failed during the run; what it read until then is kept, `detail` says why.
    Stopped,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStatus {
    pub source: String,
    pub state: SourceState,
    /// One line: what was sampled, or why not; problems met along the way.
    pub detail: String,
    /// Time between readings this source was asked for.
    pub every_ns: i64,
    /// Readings taken (ticks at which the source was read).
    pub reads: u64,
    /// Values that could not be read and were skipped (a missing file, a process gone).
    pub skipped: u64,
    /// CPU time the sampler thread spent reading this source: what observing it cost.
    pub cpu_ns: i64,
    /// Time from opening the source to its last reading: what `cpu_ns` is a share of.
    #[serde(default)]
    pub wall_ns: i64,
}
