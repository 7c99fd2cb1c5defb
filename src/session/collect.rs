//! Turning ring records into the run: names resolved per process, ticks converted to
//! nanoseconds since launch (`spill::convert`), everything handed to the run file writer;
//! or, once the window has opened and nothing during the run needs converted records, the
//! records kept raw in a spill beside the run file and converted when the run ends
//! (`spill`, docs/run-file.md).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Result;
use framelab_probe::wire::{self, name_kind};

use super::accounting::Accounting;
use super::dir::SessionDir;
use super::dirwatch::DirWatch;
use super::rings::{OpenError, Ring};
use super::spilling::{DrainAt, Spilling};
use super::wake::{Waited, WakeWord};
use super::write::{Write, WriterThread};
use crate::model::{
    EndReason, EventRecord, ExitInfo, ProcessRole, RunMeta, SourceState, Span, ThreadInfo,
};
use crate::sample::{ProcessTree, Sampler, Sweep};
use crate::spill::clock::TickClock;
use crate::spill::convert::Converter;
use crate::store::RunWriter;

/// How long the run's end waits for the spill's direct writes still going (a hung disk).
const DIRECT_SETTLE: Duration = Duration::from_secs(2);
/// Spilling, with every producer waking the collector at a quarter full, the rings are
/// drained at those wakeups and at least this often, not at every reading of the processes
/// (20 a second): at 100k spans/s a drain then moves 512 KiB, past the page cache, rather than
/// 160 KB copied into it. A kill -9 loses the rings' records, at most this much of them.
const SPILL_DRAIN_EVERY: Duration = Duration::from_millis(250);
/// Without inotify the session directory is listed this often, for rings made since.
const SCAN_EVERY: Duration = Duration::from_millis(20);
/// With it, listed when something was created there, and this often anyway: whether a
/// silent ring's process died is asked then, and a missed event costs at most this.
const SCAN_EVERY_WATCHED: Duration = Duration::from_secs(1);
/// A ring file that is not yet readable is looked for at every drain this long after it
/// was first listed (its thread is writing its header), then only on the beats above.
const UNREADY_RETRY_FOR: Duration = Duration::from_secs(1);
/// Records drained are handed to the writer at each commit, or sooner once this many are
/// held: at 100k spans/s a message (and a wakeup of the writer's thread) every ~80 ms
/// rather than every drain; from ~500k spans/s on, every drain, as before. Nothing is safe
/// before its commit anyway, so a kill -9 loses no more.
const HOLD_RECORDS: usize = 1 << 13;
/// The end's fold hands records over in larger batches: nothing waits on a commit there.
const FOLD_HOLD_RECORDS: usize = 1 << 16;
/// Batches of spans the fold lets wait for the writer (a few MB), however long the spill.
const FOLD_BATCHES_QUEUED: usize = 4;
/// No span drained now ends later than now plus this: what converting ticks to
/// nanoseconds may be off by.
const FUTURE_SLACK_NS: i64 = 1_000_000_000;

pub struct Collector {
    writer: WriterThread,
    session: SessionDir,
    pub meta: RunMeta,
    /// Shared with the sampler's thread, which reads the processes on its wakeups
    /// (`start_sampling`).
    accounting: Arc<Mutex<Accounting>>,
    /// When the sampler's thread last read the processes (monotonic ns; 0: never).
    swept_mono_ns: Arc<AtomicI64>,
    /// How often the processes are read.
    sweep_every: Duration,
    rings: Vec<Ring>,
    /// Ring files already open, finished, or refused: never opened twice.
    seen_paths: HashSet<PathBuf>,
    /// Records into the run: names, ids, clock; what it converted is held until the next
    /// commit (`HOLD_RECORDS`).
    conv: Converter,
    threads_added: u32,
    /// A ring's chunk of records while it is converted (`Ring::drain`).
    scratch: Vec<framelab_probe::wire::Record>,
    /// How many of the converter's events `--pair` has seen.
    events_paired: usize,
    /// The run file, where the records may be spilled once the window has opened
    /// (`spill_beside`); taken when the spill starts.
    spill_beside: Option<PathBuf>,
    /// A progress line shows the frames seen: the spilling drain counts them.
    spill_counts_frames: bool,
    /// Records kept raw until the end (`start_spill`).
    spill: Option<Spilling>,
    last_scan: Option<Instant>,
    /// New entries in the session directory, where inotify can tell.
    dir_watch: Option<DirWatch>,
    /// A ring was found still being made: the next drain lists the directory again.
    rescan: bool,
    /// Ring files not yet readable, and when each was first listed.
    unready: HashMap<PathBuf, Instant>,
    window_closed: bool,
    /// framelab's own CPU when the window opened.
    own_cpu_at_start_ns: i64,
    /// The machine's interrupt and stolen ticks at the window's opening, and when.
    cpu_times_at_start: Option<(super::cpu_taken::CpuTimes, i64)>,
    /// Ring problems worth a line on stderr, said once each.
    warnings: HashSet<String>,
    /// Users other than the session's owner that processes of the run ran as (uid → pids),
    /// and pids already looked at.
    other_users: std::collections::BTreeMap<u32, HashSet<u32>>,
    users_checked: HashSet<u32>,
    /// Who owns the session directory, and whether a group shares it.
    session_owner: Option<u32>,
    session_shared: bool,
    /// Telemetry, on its own thread; stopped first when finishing.
    sampler: Option<Sampler>,
    /// The run group's CPU: read at launch, at the window's start and end.
    group: GroupWindow,
    /// `--probe` stages: drained with the rings, their spans kept like the SDK's.
    probes: Option<ProbeSpans>,
    /// The session's wakeup word, where producers can wake the collector through it.
    wake: Option<WakeWord>,
    /// A producer, a new ring or a direct write's end woke the collector since the last drain.
    woken: bool,
    last_drain: Option<Instant>,
    /// CLOCK_MONOTONIC ns at which the last drain began, sent with each commit (what
    /// `Committed::drained_mono_ns` says); 0 before the first, and while spilling (the
    /// spill's records reach the run file only at the end).
    drained_mono_ns: i64,
}

/// The probes' recorder, and the run's ids of what their spans name.
struct ProbeSpans {
    recorder: crate::probes::recorder::Recorder,
    /// Each probe's stage (or event) name, and its id in the run once given.
    names: Vec<String>,
    name_ids: Vec<Option<u16>>,
    /// (pid, tid) → the run's thread index.
    threads: HashMap<(u32, u32), u32>,
    /// Files the run's processes had mapped, read while a probe had no hit: said after
    /// the run when it never got one (was its binary loaded at all?).
    loaded: std::collections::BTreeSet<String>,
    /// `--pair`: events made spans as they are kept.
    pairs: crate::probes::pairs::RunPairs,
    /// Threads (the run's index) of tasks that are not the run's: a tracepoint's.
    other_tasks: HashSet<u32>,
}

/// The run group's readings over the window.
#[derive(Default)]
struct GroupWindow {
    meter: Option<super::rungroup::Meter>,
    at_launch: Option<super::rungroup::GroupCpu>,
    at_start: Option<super::rungroup::GroupCpu>,
    /// The reading as the window closed.
    at_end: Option<super::rungroup::GroupCpu>,
}

impl GroupWindow {
    /// What the group counted from the window's start to its end.
    fn over_window(&self) -> Option<super::rungroup::GroupCpu> {
        let (start, end) = (self.at_start?, self.at_end?);
        Some(end.since(&start))
    }
}

impl Collector {
    pub fn new(
        writer: RunWriter,
        mut session: SessionDir,
        clock: TickClock,
        meta: RunMeta,
        accounting: Accounting,
    ) -> Collector {
        let (session_owner, session_shared) = (session.owner_uid(), session.shared());
        let wake = session.take_wake_word();
        let dir_watch = DirWatch::open(session.path(), wake.as_ref().and_then(WakeWord::ringer));
        let conv = Converter::new(meta.origin_mono_ns, clock, Some(session.path().to_owned()));
        Collector {
            writer: WriterThread::start(writer),
            session,
            meta,
            accounting: Arc::new(Mutex::new(accounting)),
            swept_mono_ns: Arc::new(AtomicI64::new(0)),
            sweep_every: Duration::MAX,
            rings: Vec::new(),
            seen_paths: HashSet::new(),
            conv,
            threads_added: 0,
            scratch: Vec::new(),
            events_paired: 0,
            spill_beside: None,
            spill_counts_frames: false,
            spill: None,
            last_scan: None,
            dir_watch,
            rescan: false,
            unready: HashMap::new(),
            window_closed: false,
            own_cpu_at_start_ns: 0,
            cpu_times_at_start: None,
            warnings: HashSet::new(),
            other_users: Default::default(),
            users_checked: HashSet::new(),
            session_owner,
            session_shared,
            sampler: None,
            group: GroupWindow::default(),
            probes: None,
            wake,
            woken: false,
            last_drain: None,
            drained_mono_ns: 0,
        }
    }

    /// Whether the next drain may wait for a producer's wakeup: every ring's producer
    /// wakes the collector, a new ring wakes it too (whoever made it), no ring file waits
    /// to be read again, and no probe's kernel buffers need the tick.
    pub fn producers_wake(&self) -> bool {
        self.wake.as_ref().is_some_and(WakeWord::usable)
            && self
                .dir_watch
                .as_ref()
                .is_some_and(DirWatch::wakes_collector)
            && self.probes.is_none()
            && !self.rescan
            && self.rings.iter().all(|r| r.wakes)
    }

    /// Sleeps until a producer wakes the collector or `longest` is over; `false` when the
    /// wakeup word cannot be used (the caller sleeps instead, and ticks from then on).
    pub fn wait_for_producers(&mut self, longest: Duration) -> bool {
        let dir_watch = self.dir_watch.as_ref();
        let news = || dir_watch.is_some_and(DirWatch::pending);
        match self.wake.as_mut().map(|w| w.wait(longest, news)) {
            Some(Waited::Woken) => {
                self.woken = true;
                true
            }
            Some(Waited::TimedOut | Waited::Interrupted) => true,
            Some(Waited::Unusable) | None => false,
        }
    }

    /// From now on a child's exit or an interrupt wakes the collector at once (the handlers
    /// are `launch`'s): it may otherwise sleep until the next drain is due.
    pub fn wake_on_signals(&mut self) {
        if let Some(word) = self.wake.as_mut() {
            word.ring_on_signals();
        }
    }

    /// How long until a drain is due whatever wakes the collector: `SPILL_DRAIN_EVERY`
    /// after the last while the rings may be left to fill; `None` otherwise.
    pub fn next_drain_within(&self) -> Option<Duration> {
        let since_last = self.last_drain.map_or(SPILL_DRAIN_EVERY, |t| t.elapsed());
        (self.waits_for_fill()).then(|| SPILL_DRAIN_EVERY.saturating_sub(since_last))
    }

    /// Whether this tick drains the rings (`SPILL_DRAIN_EVERY`).
    pub fn drain_due(&self) -> bool {
        drain_due(
            self.waits_for_fill(),
            self.woken,
            self.last_drain.map(|t| t.elapsed()),
        )
    }

    /// Whether the rings may be left to fill between drains: spilling, with every producer
    /// waking the collector at a quarter full.
    fn waits_for_fill(&self) -> bool {
        self.spill.is_some() && self.producers_wake()
    }

    /// The run's group: what the run file says of it, and its CPU at the command's launch
    /// (what a window from launch counts from).
    pub fn set_run_group(
        &mut self,
        facts: crate::model::RunGroupFacts,
        meter: Option<super::rungroup::Meter>,
        at_launch: Option<super::rungroup::GroupCpu>,
    ) {
        self.meta.session.run_group = Some(facts);
        self.group = GroupWindow {
            meter,
            at_launch,
            ..GroupWindow::default()
        };
    }

    /// Drains `recorder`'s probes with the rings: their spans become the run's.
    /// The services' processes that left their process groups and still run (see
    /// `Accounting::service_daemons`): stopping a service stops them too.
    pub fn service_daemons(&self) -> Vec<(u32, String)> {
        lock(&self.accounting).service_daemons()
    }

    pub fn set_probes(&mut self, recorder: crate::probes::recorder::Recorder) {
        let names = recorder.stages();
        self.probes = Some(ProbeSpans {
            name_ids: vec![None; names.len()],
            names,
            pairs: crate::probes::pairs::RunPairs::new(recorder.pairs()),
            other_tasks: HashSet::new(),
            recorder,
            threads: HashMap::new(),
            loaded: Default::default(),
        });
    }

    /// The run group's CPU once its processes had ended (`last`): what it counted after the
    /// window closed goes in the run file.
    pub fn run_group_ended(&mut self, last: Option<super::rungroup::GroupCpu>) {
        if let (Some(facts), Some(last), Some(end)) = (
            self.meta.session.run_group.as_mut(),
            last,
            self.group.at_end,
        ) {
            facts.after_window_cpu_ns = Some(last.since(&end).usage_ns);
        }
    }

    /// Processes that had left the run's group or survived its end, said in the run file.
    pub fn run_group_escaped(&mut self, notes: Vec<String>) {
        if let Some(facts) = self.meta.session.run_group.as_mut() {
            facts.escaped.extend(notes);
        }
    }

    /// Starts reading with `sampler` (opened before the launch); its readings go to the
    /// run file writer in order. With `sweep`, the sampler's thread also reads the
    /// command's processes every `sweep.1` (the thread wakes then anyway), and the
    /// collector's own thread no longer wakes for it (`sweeps_elsewhere`).
    pub fn start_sampling(
        &mut self,
        mut sampler: Sampler,
        tree: ProcessTree,
        sweep: Option<(u32, Duration)>,
    ) {
        let Some(sender) = self.writer.samples_sender() else {
            return;
        };
        let sink = Box::new(move |batch| sender.send(batch).is_ok());
        let sweep = sweep.map(|(command_pid, every)| {
            self.sweep_every = every;
            let (accounting, swept) = (self.accounting.clone(), self.swept_mono_ns.clone());
            let origin_mono_ns = self.meta.origin_mono_ns;
            Sweep {
                every,
                run: Box::new(move || {
                    // The time of the reading: after any wait for the lock.
                    let mut accounting = lock(&accounting);
                    let now = framelab_probe::monotonic_ns() as i64;
                    accounting.sweep(now - origin_mono_ns, command_pid);
                    swept.store(now, Ordering::Release);
                }),
            }
        });
        // Where the kernel's exit records come, a thread's last figures are its exit's.
        let thread_exits = {
            let mut accounting = lock(&self.accounting);
            accounting.has_exit_records().then(|| {
                let exits = crate::session::taskstats::ThreadExits::default();
                accounting.pass_thread_exits(exits.clone());
                exits
            })
        };
        sampler.begin(self.meta.origin_mono_ns, tree, sink, sweep, thread_exits);
        self.sampler = Some(sampler);
    }

    /// Whether the sampler's thread reads the processes: it has, lately. A thread that
    /// has not begun (its sources still opening) or is held up (a driver call that hangs)
    /// leaves the reading to the collector's own thread until it reads again.
    pub fn sweeps_elsewhere(&self) -> bool {
        let swept = self.swept_mono_ns.load(Ordering::Acquire);
        let late_ns = self.sweep_every.saturating_mul(4).as_nanos() as i64;
        swept > 0 && (framelab_probe::monotonic_ns() as i64) - swept < late_ns
    }

    /// The accounting of the run's processes (the sampler's thread may hold it a moment).
    pub fn accounting(&self) -> MutexGuard<'_, Accounting> {
        lock(&self.accounting)
    }

    /// What the run file writer has committed so far.
    pub fn committed(&self) -> std::sync::Arc<super::write::Committed> {
        self.writer.committed()
    }

    /// Nanoseconds since launch.
    pub fn now_ns(&self) -> i64 {
        framelab_probe::monotonic_ns() as i64 - self.meta.origin_mono_ns
    }

    /// Frames seen so far: converted, or counted in the records spilled (the progress line).
    pub fn frames_seen(&self) -> u64 {
        self.conv.frames_seen + self.spill.as_ref().map_or(0, |s| s.frames)
    }

    /// Keeps the start of frame `n + 1` (`--warmup-frames n`) when it comes.
    pub fn watch_for_frame_after(&mut self, n: u64) {
        self.conv.opening_frame = Some((n.saturating_add(1), None));
    }

    /// The start of the frame [`Collector::watch_for_frame_after`] waits for, once seen.
    pub fn opening_frame_start_ns(&self) -> Option<i64> {
        self.conv.opening_frame.and_then(|(_, start)| start)
    }

    pub fn refresh_clock(&mut self) {
        self.conv.clock.refresh();
        if let Some(spill) = self.spill.as_mut() {
            spill.clock_grew(&self.conv.clock);
        }
    }

    /// When the first span started (ns after launch), once one has been drained.
    pub fn first_span_ns(&self) -> Option<i64> {
        self.conv.first_span_ns
    }

    /// Records may be spilled beside `run_file` once the window has settled: nothing during
    /// this run needs them converted (no `--live`, `--frames`, `--warmup-frames`, probes).
    /// With a progress line (`counts_frames`) the spilling drain reads the records to count
    /// frames; without one it reads none.
    pub fn spill_beside(&mut self, run_file: &std::path::Path, counts_frames: bool) {
        self.spill_beside = Some(run_file.to_owned());
        self.spill_counts_frames = counts_frames;
    }

    /// The window has opened for good: from now on, when allowed, the rings' records go to
    /// a spill raw, converted when the run ends (`finish`). A spill that cannot be made
    /// (one is there already: a killed run's, not yet folded) leaves the run converting.
    pub fn start_spill(&mut self) {
        let Some(run_file) = self.spill_beside.take() else {
            return;
        };
        if self.probes.is_some() {
            return;
        }
        let header = crate::spill::file::SpillHeader {
            run_id: self.writer.run_id(),
            origin_mono_ns: self.meta.origin_mono_ns,
        };
        let threads = self
            .rings
            .iter()
            .filter_map(|r| Some((r.thread_index?, r.pid, r.tid, r.thread_name.as_str())));
        let counts_frames = self.spill_counts_frames;
        let session = self.session.path();
        match Spilling::start(
            &run_file,
            header,
            &self.conv,
            session,
            threads,
            counts_frames,
        ) {
            Ok(spill) => {
                // A direct write over, the collector takes its records at once.
                if let Some(ringer) = self.wake.as_ref().and_then(WakeWord::ringer) {
                    spill.when_written(Box::new(move || ringer.ring()));
                }
                self.spill = Some(spill);
            }
            Err(e) => log::debug!("records converted as they come: {e}"),
        }
    }

    /// Opens the window at `start_ns`. The loop notices a due window a tick late; the window
    /// starts on time (at launch without a warmup), never later than now.
    pub fn open_window(&mut self, command_pid: u32, start_ns: i64) {
        let now = self.now_ns();
        self.meta.window_start_ns = start_ns.min(now);
        let at_launch = self.meta.window_start_ns == 0;
        self.accounting().start_window(now, command_pid, at_launch);
        if let Some(meter) = &self.group.meter {
            self.group.at_start = match self.group.at_launch {
                Some(launch) if at_launch => Some(launch),
                _ => meter.read(),
            };
        }
        if let Some(sampler) = &self.sampler {
            sampler.open_window();
        }
        // Read before framelab's own CPU is: the window's collector figure leaves it out.
        self.cpu_times_at_start = super::cpu_taken::CpuTimes::read().map(|t| (t, now));
        self.own_cpu_at_start_ns = own_cpu_ns();
    }

    /// No frame came before the run ended: the provisional window from launch was the window.
    pub fn warmup_fell_back_to_launch(&mut self) {
        self.meta.warmup_from = crate::model::WarmupFrom::Launch;
    }

    /// Opens the window again at `start_ns`, forgetting the baselines of a provisional one:
    /// the accounting starts afresh from the processes alive now.
    pub fn reopen_window(&mut self, command_pid: u32, start_ns: i64) {
        let now = self.now_ns();
        let mut accounting = self.accounting();
        *accounting = accounting.restarted();
        accounting.sample(now, command_pid);
        drop(accounting);
        self.open_window(command_pid, start_ns);
    }

    pub fn close_window(&mut self, command_pid: u32, reason: EndReason) {
        let now = self.now_ns();
        self.meta.window_end_ns = now;
        self.meta.end_reason = reason;
        self.window_closed = true;
        self.accounting().end_window(now, command_pid);
        if let (Some(meter), Some(_)) = (&self.group.meter, self.group.at_start) {
            self.group.at_end = meter.read();
        }
        if let Some(sampler) = &self.sampler {
            sampler.close_window();
        }
        self.meta.collector_cpu_ns = own_cpu_ns() - self.own_cpu_at_start_ns;
        if let (Some((start, at)), Some(end)) =
            (&self.cpu_times_at_start, super::cpu_taken::CpuTimes::read())
        {
            let tick_ns = 1_000_000_000 / super::procfs::system_ticks_per_second();
            self.meta.session.cpu_taken = Some(end.since(start, now - at, tick_ns));
        }
    }

    pub fn set_exit(&mut self, exit: ExitInfo) {
        self.meta.exit = Some(exit);
    }

    /// Copies out every ring, converts, and hands the records to the writer (or, spilling,
    /// writes them raw to the spill). Returns the fullest ring's fill before draining (0..1),
    /// so the caller can pace itself.
    pub fn drain(&mut self) -> Result<f64> {
        (self.woken, self.last_drain) = (false, Some(Instant::now()));
        let mut fullest = 0.0f64;
        let scanning = self.scan_due();
        if scanning {
            self.scan()?;
            self.last_scan = Some(Instant::now());
        }
        // No thread drops more than one record per nanosecond: a larger count is a lie.
        let now_ns = self.now_ns();
        // Every record in a ring before now is read below, and in the file at the next commit.
        self.drained_mono_ns = match self.spill {
            None => self.meta.origin_mono_ns.saturating_add(now_ns),
            Some(_) => 0,
        };
        let max_dropped = (now_ns.max(0) as u64).saturating_add(1_000_000_000);
        // Read once per drain, not per record: no span read now ends later than this.
        let latest_end_ns = now_ns.saturating_add(FUTURE_SLACK_NS);
        let segments = self.conv.segments_now();
        self.conv.begin_drain(latest_end_ns, segments);
        let mut finished = Vec::new();
        // Taken out while their records are converted (which needs the collector).
        let mut rings = std::mem::take(&mut self.rings);
        let mut buffer = std::mem::take(&mut self.scratch);
        let mut outcomes = Vec::with_capacity(rings.len());
        if let Some(spill) = self.spill.as_mut() {
            let at = DrainAt {
                max_dropped,
                latest_end_ns,
                segments,
            };
            let (spilled, written) = spill.drain(&mut rings, at, &mut self.conv, &mut buffer);
            outcomes = spilled;
            // A spill that cannot be written is folded: the rings not drained into it are
            // converted below, as a drain without a spill converts them.
            if let Err(e) = self.spilled_or_stop(written) {
                (self.rings, self.scratch) = (rings, buffer);
                return Err(e);
            }
            self.conv.begin_drain(latest_end_ns, segments);
        }
        for ring in &mut rings[outcomes.len()..] {
            let (pid, clock, thread) = (ring.pid, ring.clock, ring.thread_index.unwrap_or(0));
            outcomes.push(ring.drain(&mut buffer, max_dropped, |records| {
                self.conv.convert_records(pid, clock, thread, records);
                true
            }));
        }
        for (index, (ring, drained)) in rings.iter_mut().zip(outcomes).enumerate() {
            let got = match drained {
                Ok(got) => got,
                Err(problem) => {
                    finished.push((index, Some(problem)));
                    continue;
                }
            };
            fullest = fullest.max(got as f64 / ring.capacity() as f64);
            // Retired once a drain begun after it was found ending finds nothing new.
            // Whether a silent thread's process died is asked of the kernel only on scans.
            if ring.ending && got == 0 {
                finished.push((index, None));
            } else {
                ring.ending =
                    ring.closed() || (scanning && !process_alive(self.session.path(), ring.pid));
            }
        }
        self.rings = rings;
        self.scratch = buffer;
        self.say_conversion_warnings();
        for (index, problem) in finished.into_iter().rev() {
            let ring = self.rings.swap_remove(index);
            if let Some(problem) = problem {
                self.set_aside(&ring, problem);
            }
            self.retire(&ring)?;
        }
        if let Some(mut probes) = self.probes.take() {
            let drained = probes.recorder.drain();
            let kept = self.keep_probe_records(&mut probes, drained);
            self.probes = Some(probes);
            kept?;
        }
        self.pair_fresh_events()?;
        if self.conv.held() >= HOLD_RECORDS {
            self.flush()?;
        }
        Ok(fullest)
    }

    /// The converter's warnings, each said once.
    fn say_conversion_warnings(&mut self) {
        for problem in std::mem::take(&mut self.conv.warnings) {
            self.warn(problem);
        }
    }

    /// Probe spans and events enter the run as the SDK's do: the stage (or event) named
    /// by the option, the probed thread, times after launch.
    fn keep_probe_records(
        &mut self,
        probes: &mut ProbeSpans,
        drained: crate::probes::recorder::Drained,
    ) -> Result<()> {
        let origin = self.meta.origin_mono_ns;
        for event in drained.events {
            let name = self.probe_name_id(probes, event.probe, name_kind::EVENT)?;
            let seen = event.of_run.then_some(event.mono_ns);
            let thread = self.probe_thread(probes, event.pid, event.tid, seen)?;
            self.conv.events.push(EventRecord {
                event: name,
                key: event.key,
                thread,
                t_ns: event.mono_ns - origin,
            });
        }
        for span in drained.spans {
            let stage = self.probe_name_id(probes, span.probe, name_kind::STAGE)?;
            let thread = self.probe_thread(probes, span.pid, span.tid, Some(span.start_mono_ns))?;
            self.conv.keep_span(Span {
                frame: span.frame,
                stage,
                thread,
                start_ns: span.start_mono_ns - origin,
                dur_ns: span.end_mono_ns - span.start_mono_ns,
            });
        }
        Ok(())
    }

    /// `--pair`: the spans the events about to be written close, kept as the SDK's.
    fn pair_events(&mut self, probes: &mut ProbeSpans) -> Result<()> {
        if probes.pairs.is_empty() {
            return Ok(());
        }
        let (conv, other_tasks) = (&self.conv, &probes.other_tasks);
        let fresh = &conv.events[self.events_paired.min(conv.events.len())..];
        self.events_paired = conv.events.len();
        let made = probes.pairs.feed(
            fresh,
            |name| conv.given_id(name_kind::EVENT, name),
            |thread| !other_tasks.contains(&thread),
        );
        for (index, span) in made {
            let stage = self
                .conv
                .run_id(name_kind::STAGE, probes.pairs.stage(index));
            self.conv.keep_span(Span { stage, ..span });
        }
        Ok(())
    }

    /// While a probe has seen nothing, the files the run's processes map (read at each
    /// commit, twice a second), for the line that says so after the run.
    fn note_loaded_files(&mut self) {
        let Some(probes) = self.probes.as_mut() else {
            return;
        };
        if !probes.recorder.unhit() {
            return;
        }
        let live: Vec<(u32, ProcessRole)> = lock(&self.accounting).live_pids().collect();
        for (pid, role) in live {
            if role == ProcessRole::Watched {
                continue;
            }
            let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
                continue;
            };
            // Executable mappings only: code a probe can be in, not data files (the
            // session's own rings, which every instrumented process maps).
            let code = maps.lines().filter_map(|l| {
                let mut fields = l.split_whitespace();
                let perms = fields.nth(1)?;
                let path = fields.nth(3)?;
                perms.contains('x').then_some(path)
            });
            for path in code {
                if path.starts_with('/') && !probes.loaded.contains(path) {
                    probes.loaded.insert(path.to_owned());
                }
            }
        }
    }

    /// The run's id of probe `probe`'s stage or event name.
    fn probe_name_id(&mut self, probes: &mut ProbeSpans, probe: usize, kind: char) -> Result<u16> {
        if let Some(id) = probes.name_ids[probe] {
            return Ok(id);
        }
        let id = self.conv.run_id(kind, &probes.names[probe]);
        probes.name_ids[probe] = Some(id);
        Ok(id)
    }

    /// The run's index of a probed thread, added (named from /proc) when first seen; its
    /// process is accounted from `of_run_since` (CLOCK_MONOTONIC), when it is the run's (a
    /// tracepoint's task may be anyone's).
    fn probe_thread(
        &mut self,
        probes: &mut ProbeSpans,
        pid: u32,
        tid: u32,
        of_run_since: Option<i64>,
    ) -> Result<u32> {
        if let Some(&index) = probes.threads.get(&(pid, tid)) {
            return Ok(index);
        }
        // A task gone from /proc is named as the kernel's records named it.
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map(|n| n.trim_end().to_owned())
            .ok()
            .or_else(|| probes.recorder.task_name(tid).map(str::to_owned))
            .unwrap_or_default();
        self.writer.send(Write::Thread(ThreadInfo {
            pid,
            tid,
            name,
            dropped: 0,
        }))?;
        let index = self.threads_added;
        self.threads_added += 1;
        match of_run_since {
            Some(since) => self
                .accounting()
                .observe_instrumented(pid, since - self.meta.origin_mono_ns),
            None => _ = probes.other_tasks.insert(index),
        }
        probes.threads.insert((pid, tid), index);
        Ok(index)
    }

    /// `--pair`: the events drained since the last call made spans (at every drain, so that
    /// they count towards the window's opening as soon as the SDK's would).
    fn pair_fresh_events(&mut self) -> Result<()> {
        if let Some(mut probes) = self.probes.take() {
            let paired = self.pair_events(&mut probes);
            self.probes = Some(probes);
            paired?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.pair_fresh_events()?;
        // Names first: the store gives them the converter's ids in this order.
        for (kind, name) in self.conv.take_named() {
            self.writer.send(match kind {
                name_kind::STAGE => Write::Stage(name),
                name_kind::COUNTER => Write::CounterName(name),
                _ => Write::EventName(name),
            })?;
        }
        if !self.conv.spans.is_empty() {
            let capacity = self.conv.spans.capacity();
            let next = self
                .writer
                .spare_spans()
                .unwrap_or_else(|| Vec::with_capacity(capacity));
            let spans = std::mem::replace(&mut self.conv.spans, next);
            self.writer.send(Write::Spans(spans))?;
        }
        if !self.conv.counters.is_empty() {
            self.writer
                .send(Write::Counters(std::mem::take(&mut self.conv.counters)))?;
        }
        if !self.conv.events.is_empty() {
            self.events_paired = 0;
            self.writer
                .send(Write::Events(std::mem::take(&mut self.conv.events)))?;
        }
        // Id 0 is a bad id until the run's end shows names were refused (`finish`).
        self.meta.invalid_records = self.conv.invalid_records + self.conv.refused_name_records;
        self.meta.first_span_ns = self.conv.first_span_ns;
        Ok(())
    }

    /// Whether to list the session directory now: something was created there (or, without
    /// inotify, every `SCAN_EVERY`), a ring was still being made, or the safety beat is due.
    fn scan_due(&mut self) -> bool {
        // Read the events every time, so that they never pile up.
        let created = self.dir_watch.as_mut().is_some_and(DirWatch::changed);
        let every = match self.dir_watch {
            Some(_) => SCAN_EVERY_WATCHED,
            None => SCAN_EVERY,
        };
        created || self.rescan || self.last_scan.is_none_or(|t| t.elapsed() >= every)
    }

    /// Opens rings that appeared since the last scan, counts threads that could not make
    /// one, and notices a session directory removed under the run.
    fn scan(&mut self) -> Result<()> {
        self.rescan = false;
        if self.meta.session.session_lost_ns.is_none() && !self.session.still_there() {
            let at = self.now_ns();
            self.meta.session.session_lost_ns = Some(at);
            log::warn!(
                "the session directory {} was removed {:.2} s after launch, while the run was recording (by another framelab that took it for stale, or by hand): threads that start from now on cannot record",
                self.session.path().display(),
                at as f64 / 1e9
            );
        }
        let Ok(entries) = std::fs::read_dir(self.session.path()) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let file_name = entry.file_name();
            let name = file_name.to_str().unwrap_or("");
            if let Some(marker) = name.strip_prefix(wire::UNRECORDED_PREFIX) {
                self.count_unrecorded(marker);
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let is_ring = name.starts_with("r-");
            if !is_ring || self.seen_paths.contains(&path) {
                continue;
            }
            match Ring::open(&path) {
                Ok(Some(mut ring)) => {
                    let thread = ThreadInfo {
                        pid: ring.pid,
                        tid: ring.tid,
                        name: ring.thread_name.clone(),
                        dropped: 0,
                    };
                    self.writer.send(Write::Thread(thread))?;
                    ring.thread_index = Some(self.threads_added);
                    self.threads_added += 1;
                    let read = self.conv.refresh_names(ring.pid);
                    if let Some(spill) = self.spill.as_mut() {
                        spill.new_thread(&ring, read);
                    }
                    // A recording process is accounted from its first ring, however short it lives.
                    let now = self.now_ns();
                    self.accounting().observe_instrumented(ring.pid, now);
                    self.unready.remove(&path);
                    self.seen_paths.insert(path);
                    self.rings.push(ring);
                }
                // Still being created by its thread: try again at the next drain.
                Ok(None) => {
                    let since = *self.unready.entry(path).or_insert_with(Instant::now);
                    self.rescan |= since.elapsed() < UNREADY_RETRY_FOR;
                }
                // Never read: its records are lost, and the run says so.
                Err(OpenError::Foreign(problem)) => {
                    self.seen_paths.insert(path);
                    let facts = &mut self.meta.session;
                    count_ring(
                        &mut facts.foreign_rings,
                        &mut facts.foreign_ring_details,
                        &problem,
                    );
                    self.warn(problem);
                }
                // Damaged before it was first read: counted like any damaged ring.
                Err(OpenError::Corrupt(problem)) => {
                    self.seen_paths.insert(path.clone());
                    let facts = &mut self.meta.session;
                    count_ring(
                        &mut facts.corrupt_rings,
                        &mut facts.corrupt_ring_details,
                        &problem,
                    );
                    self.warn(problem);
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(())
    }

    /// Notes processes of the run (not watched ones) that run as a user who cannot write the
    /// session directory: a command that changed user (`su`, `setpriv`, `runuser`) records
    /// nothing, and the report must say why. A pid is looked at on every call until it is
    /// found foreign: it may change user after it was first seen.
    pub fn check_users(&mut self) {
        let pids: Vec<u32> = self
            .accounting()
            .live_pids()
            .filter(|&(_, role)| role != ProcessRole::Watched)
            .map(|(pid, _)| pid)
            .collect();
        for pid in pids {
            self.check_user(pid);
        }
    }

    /// `check_users` for one process (also called on a zombie about to be reaped, which
    /// may have lived too short for a reading).
    pub fn check_user(&mut self, pid: u32) {
        use std::os::unix::fs::MetadataExt;
        // Found foreign already, or recording (then it can write the session).
        if self.users_checked.contains(&pid) || self.conv.names.contains_key(&pid) {
            return;
        }
        let Some(owner) = self.session_owner else {
            return;
        };
        // /proc/PID belongs to the process's effective user.
        let Ok(meta) = std::fs::metadata(format!("/proc/{pid}")) else {
            return;
        };
        let uid = meta.uid();
        if uid != owner && uid != 0 && !self.session_shared {
            self.other_users.entry(uid).or_default().insert(pid);
            self.users_checked.insert(pid);
        }
    }

    /// A thread that ran unrecorded: `<errno>-<pid>-<tid>[-<n>]` (`wire::UNRECORDED_PREFIX`).
    fn count_unrecorded(&mut self, marker: &str) {
        let errno = marker
            .split('-')
            .next()
            .and_then(|e| e.parse::<i32>().ok())
            .unwrap_or(0);
        let facts = &mut self.meta.session;
        match facts
            .unrecorded_threads
            .iter_mut()
            .find(|u| u.errno == errno)
        {
            Some(u) => u.threads += 1,
            None => facts
                .unrecorded_threads
                .push(crate::model::UnrecordedThreads { errno, threads: 1 }),
        }
        if facts.shm_dir.is_empty() {
            facts.shm_dir = self.session.base().display().to_string();
        }
    }

    fn warn(&mut self, problem: String) {
        if self.warnings.insert(problem.clone()) {
            log::warn!("{}", crate::display::text(&problem));
        }
    }

    /// A ring the program damaged: counted, described in the run, said on stderr. What was
    /// read from it before is kept.
    fn set_aside(&mut self, ring: &Ring, problem: String) {
        let what = format!(
            "thread {} ({}) of process {}: {problem}",
            ring.tid, ring.thread_name, ring.pid
        );
        let facts = &mut self.meta.session;
        count_ring(
            &mut facts.corrupt_rings,
            &mut facts.corrupt_ring_details,
            &what,
        );
        self.warn(format!(
            "the ring of {what}; it is no longer read (the program damaged it), its earlier records are kept"
        ));
    }

    /// A ring whose thread is done: record its drop count and remove the file.
    fn retire(&mut self, ring: &Ring) -> Result<()> {
        if !self.rings.iter().any(|r| r.pid == ring.pid) {
            self.conv.close_names_file(ring.pid);
        }
        let dropped = ring.dropped();
        self.meta.dropped_events += dropped;
        if let Some(thread) = ring.thread_index {
            self.writer.send(Write::ThreadDropped(thread, dropped))?;
        }
        let _ = std::fs::remove_file(&ring.path);
        Ok(())
    }

    /// Commits what was recorded so far; a killed framelab loses at most what came after.
    pub fn commit(&mut self) -> Result<()> {
        self.note_loaded_files();
        if let Some(spill) = self.spill.as_mut() {
            let written = spill.refresh_names(&mut self.conv);
            self.spilled_or_stop(written)?;
        }
        self.flush()?;
        let mut meta = self.meta.clone();
        if !self.window_closed {
            meta.window_end_ns = self.now_ns();
        }
        meta.dropped_events += self.rings.iter().map(Ring::dropped).sum::<u64>();
        self.writer.send(Write::Meta(Box::new(meta)))?;
        self.writer.send(Write::Commit {
            drained_mono_ns: self.drained_mono_ns,
        })
    }

    /// Drains what is left, writes the final metadata and process table, and closes the file.
    pub fn finish(mut self) -> Result<(i64, RunMeta)> {
        // The sampler's last readings and its sender go before the writer is stopped.
        if let Some(sampler) = self.sampler.take() {
            let sources = sampler.stop();
            for s in sources.iter().filter(|s| s.state == SourceState::Stopped) {
                log::warn!("telemetry source {} stopped: {}", s.source, s.detail);
            }
            self.writer.send(Write::SampleSources(sources))?;
        }
        // Rings created since the last scan (threads that lived only milliseconds) too.
        self.last_scan = None;
        if let Some(spill) = self.spill.as_mut() {
            // The records on their way past the page cache land, or are copied.
            spill.settle(Instant::now() + DIRECT_SETTLE);
        }
        self.drain()?;
        self.flush()?;
        for ring in std::mem::take(&mut self.rings) {
            self.retire(&ring)?;
        }
        if let Some(spill) = self.spill.take() {
            self.fold(spill)?;
        }
        if let Some(mut probes) = self.probes.take() {
            let finished = probes.recorder.finish();
            self.keep_probe_records(&mut probes, finished.drained)?;
            self.pair_events(&mut probes)?;
            self.flush()?;
            crate::probes::say_what_was_missed(&finished.facts, finished.lost, &probes.loaded);
            let facts = &mut self.meta.session;
            facts.probes = finished.facts;
            facts.probe_records_lost = finished.lost;
            facts.probe_busiest_thread = finished.busiest_thread;
            facts.probe_pairs = probes.pairs.finish();
        }
        let pids: Vec<u32> = self.conv.names.keys().copied().collect();
        for pid in pids {
            self.conv.refresh_names(pid);
        }
        self.meta.names_refused = self.conv.names.values().map(|n| n.refused).sum();
        if self.meta.names_refused > 0 {
            // Id 0 is then a refused name's: its records are missing, not invalid.
            self.meta.invalid_records = self.conv.invalid_records;
            self.meta.session.refused_name_records = self.conv.refused_name_records;
        }
        // Users whose processes recorded nothing: they could not write the session.
        for (uid, pids) in std::mem::take(&mut self.other_users) {
            if !pids.iter().any(|pid| self.conv.names.contains_key(pid)) {
                self.meta
                    .session
                    .foreign_users
                    .push(super::dir::describe_uid(uid));
            }
        }
        self.say_what_was_not_recorded();
        if !self.window_closed {
            let now = self.now_ns();
            self.meta.window_end_ns = now;
        }
        let mut processes = self.accounting().results();
        if let (Some(facts), Some(cpu), Some(meter)) = (
            self.meta.session.run_group.as_mut(),
            self.group.over_window(),
            &self.group.meter,
        ) {
            // cpu.stat counts µs, cpuacct.usage ns.
            let resolution = match meter.mechanism() {
                super::rungroup::Mechanism::Cgroup2 => 1000,
                _ => 1,
            };
            let window = self.meta.window_end_ns - self.meta.window_start_ns;
            processes.extend(super::rungroup::not_seen_row(
                &processes, cpu, window, resolution, facts,
            ));
        }
        self.writer.send(Write::Processes(processes))?;
        for name in self.accounting().unmatched_names() {
            log::warn!("no process named '{name}' was found during the run (--watch {name})");
        }
        self.writer.send(Write::Meta(Box::new(self.meta.clone())))?;
        self.writer.send(Write::Commit {
            drained_mono_ns: self.drained_mono_ns,
        })?;
        let run_id = self.writer.run_id();
        self.writer.stop()?.finish()?;
        Ok((run_id, self.meta))
    }
}

impl Collector {
    /// The spill converted as the drain would have converted it (each chunk with its
    /// drain's latest end and clock segments, the names as read then), handed to the writer
    /// as it goes (which encodes blocks on its thread meanwhile); then removed.
    fn fold(&mut self, spill: Spilling) -> Result<()> {
        let started = Instant::now();
        let spilled = spill.records();
        let mut writer = spill.into_writer();
        // The last drain's chunks; what cannot be written is folded from memory.
        let unwritten = writer.write().is_err();
        let path = writer.path().to_owned();
        let unreadable = |e: std::io::Error| {
            anyhow::anyhow!(
                "cannot read back the records' spill {}: {e}",
                path.display()
            )
        };
        let (_, file) = crate::spill::file::open(&path)
            .map_err(unreadable)?
            .ok_or_else(|| unreadable(std::io::ErrorKind::NotFound.into()))?;
        // Every name the records use was read while spilling: none is read again.
        self.conv.read_names_from(None);
        use std::io::Read as _;
        let [head, records] = match unwritten {
            true => writer.unwritten(),
            false => [&[][..], &[][..]],
        };
        let spilled_then_held = file.chain(head).chain(records);
        let data = crate::spill::file::open_data(&path);
        let folded = crate::spill::file::read_chunks(spilled_then_held, data.as_ref(), |chunk| {
            if let crate::spill::file::Chunk::Records(drained) = chunk {
                self.conv.convert_drained(&drained);
                if self.conv.held() >= FOLD_HOLD_RECORDS {
                    // At the writer's pace: a few batches queued, not the whole spill.
                    while self.writer.spans_in_flight() >= FOLD_BATCHES_QUEUED {
                        if self.writer.wait_for_spare_spans().is_none() {
                            break;
                        }
                    }
                    self.flush()?;
                }
            }
            Ok(())
        });
        self.conv
            .read_names_from(Some(self.session.path().to_owned()));
        folded?;
        self.flush()?;
        self.say_conversion_warnings();
        crate::spill::file::remove(&path);
        drop(writer);
        if std::env::var_os("FRAMELAB_SPILL_TIMES").is_some() {
            log::info!(
                "folded {spilled} spilled records in {:.3} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }

    /// A spill that could not be written (a full disk): folded now, what it holds and what
    /// was not written alike, removed (its space freed), and the run converts as it goes
    /// from here; a full disk is then the writer's to say, with what the run file kept.
    fn spilled_or_stop(&mut self, written: Result<()>) -> Result<()> {
        let Err(problem) = written else {
            return Ok(());
        };
        let Some(spill) = self.spill.take() else {
            return Err(problem);
        };
        log::warn!("{problem:#}; the records are converted as they come from now on");
        let kept = SpillKept {
            records: spill.records(),
            spill: spill.path().to_owned(),
        };
        // The fold writes the run file, on the disk that may be full: that is said as the
        // writer says it (what was kept, what was lost), not as the spill's failure, with
        // the records the spill still holds for a later fold.
        self.fold(spill)
            .map_err(|e| match e.is::<crate::store::DiskFull>() {
                true => e.context(kept),
                false => anyhow::anyhow!("{problem:#}, and folding it failed: {e:#}"),
            })
    }

    /// One stderr line per kind of loss the report's notes explain: the end of a run is
    /// where someone reading the terminal looks.
    fn say_what_was_not_recorded(&self) {
        let facts = &self.meta.session;
        let unrecorded = facts.unrecorded();
        if unrecorded > 0 {
            let why = if facts.shm_full() {
                format!("no memory left in {} for their rings", facts.shm_dir)
            } else {
                "their rings could not be made".to_owned()
            };
            log::warn!(
                "{unrecorded} thread{} ran unrecorded: {why} (see the report's notes)",
                if unrecorded == 1 { "" } else { "s" }
            );
        }
        for user in &facts.foreign_users {
            log::warn!(
                "processes of the run ran as {user} and recorded nothing: the session directory is private to framelab's user; if they are instrumented, rerun with --session-user {}",
                user.split(' ').next().unwrap_or("USER")
            );
        }
    }
}

/// Records a spill kept on disk when the disk filled and folding it failed: the spill stays
/// beside the run file, and a reader of the file folds it in once there is room.
#[derive(Debug)]
pub struct SpillKept {
    pub records: u64,
    pub spill: PathBuf,
}

impl std::fmt::Display for SpillKept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} records kept in {}",
            self.records,
            self.spill.display()
        )
    }
}

/// The accounting, even after a panic on the other thread (a bug): the run goes on with
/// the accounting as that thread left it, rather than losing everything else it recorded.
fn lock(accounting: &Mutex<Accounting>) -> MutexGuard<'_, Accounting> {
    accounting.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a tick drains: always, unless the rings may be left to fill (`waits_for_fill`:
/// spilling, and every producer wakes the collector at a quarter full); then when something
/// woke the collector, or `SPILL_DRAIN_EVERY` after the last drain.
fn drain_due(waits_for_fill: bool, woken: bool, since_last: Option<Duration>) -> bool {
    !waits_for_fill || woken || since_last.is_none_or(|t| t >= SPILL_DRAIN_EVERY)
}

/// One more ring that could not be read (damaged, or foreign), and what was wrong with it,
/// kept for the first few: the count says how many, the run file need not hold every reason.
fn count_ring(count: &mut u64, details: &mut Vec<String>, problem: &str) {
    const DETAILS_KEPT: usize = 10;
    *count += 1;
    if details.len() < DETAILS_KEPT {
        details.push(problem.to_owned());
    }
}

/// CPU framelab has used so far, all threads (the writer's too), user + sys.
fn own_cpu_ns() -> i64 {
    // SAFETY: getrusage with a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    super::launch::timeval_ns(usage.ru_utime) + super::launch::timeval_ns(usage.ru_stime)
}

/// Whether the process that made a ring may still write to it. The pid in a ring's header
/// is the process's pid in its own PID namespace, which may name another process here, or
/// none: alive when either the pid exists here or the process still holds the shared lock
/// the SDK keeps on its names file (`n-<pid>`; SDKs before that lock hold none).
fn process_alive(session: &std::path::Path, pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    if unsafe { libc::kill(pid as i32, 0) } == 0 {
        return true;
    }
    let Ok(names) = std::fs::File::open(session.join(format!("n-{pid}"))) else {
        return false;
    };
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own; released when `names` closes.
    unsafe { libc::flock(names.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spill_whose_producers_wake_it_is_drained_when_woken_or_every_250_ms() {
        let ms = |n| Some(Duration::from_millis(n));
        // Converting, or producers that cannot wake it: every tick drains.
        assert!(drain_due(false, false, ms(1)));
        // Left to fill: drained when woken, at the first tick, or 250 ms after the last.
        assert!(!drain_due(true, false, ms(50)));
        assert!(!drain_due(true, false, ms(249)));
        assert!(drain_due(true, false, ms(250)));
        assert!(drain_due(true, true, ms(1)));
        assert!(drain_due(true, false, None));
    }
}
