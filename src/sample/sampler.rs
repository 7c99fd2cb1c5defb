//! The sampler thread: opens the sources, reads each at its interval, hands batches of
//! readings to a sink (the run file writer), and at the end reports how each source fared.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::amdgpu::Amdgpu;
use super::cpufreq::Cpufreq;
use super::nvml::NvmlSource;
use super::rapl::Rapl;
use super::threads::{self, Threads};
use super::{ProcessTree, Readings, SamplingOptions, SourceKind, Tick};
use crate::model::{Sample, SampleSeries, SourceState, SourceStatus};
use crate::session::taskstats::ThreadExits;

pub use super::readings::Batch;

/// Readings are handed over this often (the writer commits about twice a second)...
const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// ...or when this many are waiting.
const FLUSH_SAMPLES: usize = 8192;

enum Source {
    Nvml(NvmlSource),
    Amdgpu(Amdgpu),
    Cpufreq(Cpufreq),
    Rapl(Rapl),
    // Boxed: its maps and counters make it several times the size of the others.
    Threads(Box<Threads>),
}

impl Source {
    fn open(kind: SourceKind, opts: &SamplingOptions) -> Result<Source, String> {
        let roots = &opts.roots;
        Ok(match kind {
            SourceKind::Nvml => Source::Nvml(NvmlSource::open(roots.nvml_library.as_deref())?),
            SourceKind::Amdgpu => Source::Amdgpu(Amdgpu::open(&roots.sys)?),
            SourceKind::Cpufreq => Source::Cpufreq(Cpufreq::open(&roots.sys)?),
            SourceKind::Rapl => Source::Rapl(Rapl::open(&roots.sys)?),
            SourceKind::Threads => Source::Threads(Box::new(Threads::open(
                &roots.proc,
                crate::session::procfs::system_ticks_per_second(),
            )?)),
        })
    }

    fn read(&mut self, tick: &Tick, out: &mut Readings) -> Result<(), String> {
        match self {
            Source::Nvml(s) => s.read(tick, out),
            Source::Amdgpu(s) => s.read(tick, out),
            Source::Cpufreq(s) => s.read(tick, out),
            Source::Rapl(s) => s.read(tick, out),
            Source::Threads(s) => s.read(tick, out),
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::Nvml(s) => s.describe(),
            Source::Amdgpu(s) => s.describe(),
            Source::Cpufreq(s) => s.describe(),
            Source::Rapl(s) => s.describe(),
            Source::Threads(s) => s.describe(),
        }
    }

    /// The shortest interval worth reading this source at (see each module for why).
    fn min_every(&self) -> Duration {
        match self {
            Source::Threads(_) => threads::MIN_EVERY,
            _ => Duration::ZERO,
        }
    }
}

struct Slot {
    kind: SourceKind,
    state: SourceState,
    source: Option<Source>,
    /// Why it is off, disabled or stopped.
    why: String,
    every: Duration,
    due: Instant,
    reads: u64,
    /// Readings skipped because the thread woke too late for them.
    missed: u64,
    cpu_ns: i64,
    opened: Instant,
    last_read: Option<Instant>,
}

/// CPU time of the calling thread.
fn thread_cpu_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_THREAD_CPUTIME_ID exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The sources and their bookkeeping, driven by the thread or by `read_once`.
struct Core {
    window_closed: Arc<AtomicBool>,
    /// The reading at the window's close was taken.
    close_read: bool,
    /// Set when the measured window opens: every source is read at once.
    window_opening: Arc<AtomicBool>,
    slots: Vec<Slot>,
    readings: Readings,
    tree: ProcessTree,
    origin_mono_ns: i64,
}

impl Core {
    fn open(opts: &SamplingOptions, tree: ProcessTree, origin_mono_ns: i64) -> Core {
        Core::new(Core::open_sources(opts), tree, origin_mono_ns)
    }

    /// Opens every source not switched off, each one's CPU counted as its own.
    fn open_sources(opts: &SamplingOptions) -> Vec<Slot> {
        let now = Instant::now();
        SourceKind::ALL
            .into_iter()
            .map(|kind| {
                let mut slot = Slot {
                    kind,
                    state: SourceState::On,
                    source: None,
                    why: String::new(),
                    every: opts.every,
                    due: now,
                    reads: 0,
                    missed: 0,
                    cpu_ns: 0,
                    opened: now,
                    last_read: None,
                };
                if opts.disabled.contains(&kind) {
                    slot.state = SourceState::Disabled;
                    slot.why = format!("switched off with --no-sample {}", kind.name());
                    return slot;
                }
                let cpu = thread_cpu_ns();
                match Source::open(kind, opts) {
                    Ok(source) => {
                        slot.every = opts.every.max(source.min_every());
                        slot.source = Some(source);
                    }
                    Err(why) => {
                        slot.state = SourceState::Off;
                        slot.why = why;
                    }
                }
                slot.cpu_ns += thread_cpu_ns() - cpu;
                slot
            })
            .collect()
    }

    /// Gives the threads source the threads' ends from their exit records.
    fn hear_thread_exits(&mut self, exits: ThreadExits) {
        for slot in &mut self.slots {
            if let Some(Source::Threads(threads)) = slot.source.as_mut() {
                threads.hear_exits(exits.clone());
            }
        }
    }

    fn new(slots: Vec<Slot>, tree: ProcessTree, origin_mono_ns: i64) -> Core {
        Core {
            window_closed: Arc::new(AtomicBool::new(false)),
            close_read: false,
            window_opening: Arc::new(AtomicBool::new(false)),
            slots,
            readings: Readings::new(SourceKind::ALL.iter().map(|k| k.name()).collect()),
            tree,
            origin_mono_ns,
        }
    }

    /// Whether the window has closed and its closing reading is still to take.
    fn closes_window_now(&self) -> bool {
        !self.close_read && self.window_closed.load(Ordering::Acquire)
    }

    fn t_ns(&self) -> i64 {
        framelab_probe::monotonic_ns() as i64 - self.origin_mono_ns
    }

    /// Reads every source that is due (all of them when `closing`). Returns when the next
    /// one is due.
    fn tick(&mut self, closing: bool) -> Option<Instant> {
        let now = Instant::now();
        let t_ns = self.t_ns();
        // The window's first reading: every source, every process and thread there is now,
        // so what counters counted before it is not the window's.
        let opening = self.window_opening.swap(false, Ordering::AcqRel);
        // And its last: counters read rarely end at its edge, not at the run's end after
        // the command was stopped (a GPU's energy, read 1.2 s after the window, put the
        // stopping program's low power into the window's mean: 7% low).
        let closes_window = self.closes_window_now();
        self.close_read |= closes_window;
        let is_due = |slot: &Slot| {
            slot.source.is_some()
                && (closing || opening || closes_window || due_by(slot.due, now, slot.every))
        };
        // A wakeup for the processes' sweep alone: the tree is not walked for nobody.
        if !self.slots.iter().any(is_due) {
            return self.next_due();
        }
        let pids = if opening {
            self.tree.refresh_now(now)
        } else {
            self.tree.pids(now)
        };
        let tick = Tick {
            t_ns,
            pids,
            closing,
            window_closed: self.window_closed.load(Ordering::Relaxed),
            opening,
            closes_window,
            origin_mono_ns: self.origin_mono_ns,
        };
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if !is_due(slot) {
                continue;
            }
            let Some(source) = slot.source.as_mut() else {
                continue;
            };
            self.readings.begin(index, t_ns, closing);
            let cpu = thread_cpu_ns();
            let result = source.read(&tick, &mut self.readings);
            slot.cpu_ns += thread_cpu_ns() - cpu;
            slot.reads += 1;
            slot.last_read = Some(Instant::now());
            if let Err(why) = result {
                slot.state = SourceState::Stopped;
                slot.why = why;
                slot.source = None;
                continue;
            }
            // Late ticks are skipped, not caught up: readings stay evenly spaced.
            slot.due += slot.every;
            if slot.due <= now {
                let behind = (now - slot.due).as_nanos() / slot.every.as_nanos().max(1);
                slot.missed += 1 + behind as u64;
                slot.due = now + slot.every;
            }
        }
        self.next_due()
    }

    /// When the next source is due; `None` with every source off or stopped.
    fn next_due(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter(|s| s.source.is_some())
            .map(|s| s.due)
            .min()
    }

    fn statuses(&self) -> Vec<SourceStatus> {
        self.slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let problems = self.readings.problems(index);
                let mut detail = match (&slot.source, slot.state) {
                    (Some(source), _) => source.describe(),
                    _ => slot.why.clone(),
                };
                if slot.missed > 0 {
                    detail.push_str(&format!(
                        "; {} missed (the sampler thread woke too late; load or a short --sample-every)",
                        if slot.missed == 1 {
                            "1 reading".to_string()
                        } else {
                            format!("{} readings", slot.missed)
                        }
                    ));
                }
                if problems.skipped > 0 {
                    detail.push_str(&format!(
                        "; {} skipped (first: {})",
                        if problems.skipped == 1 {
                            "1 value".to_string()
                        } else {
                            format!("{} values", problems.skipped)
                        },
                        problems.first.unwrap_or_default()
                    ));
                }
                SourceStatus {
                    source: slot.kind.name().into(),
                    state: slot.state,
                    detail,
                    every_ns: slot.every.as_nanos() as i64,
                    reads: slot.reads,
                    skipped: problems.skipped,
                    cpu_ns: slot.cpu_ns,
                    wall_ns: slot
                        .last_read
                        .map_or(0, |t| t.duration_since(slot.opened).as_nanos() as i64),
                }
            })
            .collect()
    }
}

/// The running sampler thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    window_closed: Arc<AtomicBool>,
    window_opening: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<SourceStatus>>>,
    /// Told once the sources are open.
    opened: Option<mpsc::Receiver<()>>,
    /// Where `begin` hands the thread what it needs to read.
    hand: Arc<Hand>,
}

/// What passes from `begin` to the thread, which waits for it once its sources are open.
#[derive(Default)]
struct Hand {
    state: Mutex<Handing>,
    changed: Condvar,
}

#[derive(Default)]
struct Handing {
    begin: Option<Begin>,
    /// The sampler is finishing: a thread not begun yet ends without reading.
    cancelled: bool,
}

impl Hand {
    /// What `begin` gave, once given; `None` when the sampler finished first.
    fn wait(&self) -> Option<Begin> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(begin) = state.begin.take() {
                return Some(begin);
            }
            if state.cancelled {
                return None;
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn set(&self, change: impl FnOnce(&mut Handing)) {
        change(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()));
        self.changed.notify_all();
    }
}

/// What reading needs that is only known once the command started.
struct Begin {
    origin_mono_ns: i64,
    tree: ProcessTree,
    sink: Box<dyn FnMut(Batch) -> bool + Send>,
    sweep: Option<Sweep>,
    thread_exits: Option<ThreadExits>,
}

/// Work of someone else's done on this thread's wakeups (the session's reading of its
/// processes, at the same interval as the threads): one thread wakes for both.
pub struct Sweep {
    pub every: Duration,
    pub run: Box<dyn FnMut() + Send>,
}

impl Sweep {
    /// Runs it if it is due at `now` (`due_by`), or if `riding` (the sources were just
    /// read: this wakeup is paid for) and half its interval has passed since it ran; when
    /// it is due next. Riding on the sources' readings keeps the two on one wakeup.
    fn run_if_due(&mut self, due: &mut Instant, now: Instant, riding: bool) -> Instant {
        // Half its interval has passed since it ran when it is due within the other half.
        if due_by(*due, now, self.every) || (riding && now + self.every / 2 >= *due) {
            (self.run)();
            // Late ones are skipped, as the sources' readings are.
            *due = now + self.every;
        }
        *due
    }

    /// When the thread wakes next for a sweep due at `due` and a reading due at
    /// `next_reading`: a sweep due shortly before a reading (by half its interval at most)
    /// waits for it. Without this the two kept a few ms apart for the whole run, each
    /// waking the thread (strace: two wakeups every 50 ms, 7 ms apart).
    fn wakes_at(&self, due: Instant, next_reading: Option<Instant>) -> Instant {
        match next_reading {
            Some(reading) if due < reading && reading - due <= self.every / 2 => reading,
            _ => due,
        }
    }
}

/// Whether something read every `every` and due at `due` is read at `now`: a little early
/// too, so that a wakeup for one reading takes the others due within a millisecond (or an
/// eighth of their interval) rather than sleeping again for each.
fn due_by(due: Instant, now: Instant, every: Duration) -> bool {
    due <= now + (every / 8).min(Duration::from_millis(1))
}

impl Sampler {
    /// Starts the sampler's thread, which opens the sources and then waits for `begin`.
    /// Opened before the command starts, the sources' start-up (NVML loads its library and
    /// initialises: about 40 ms of CPU on a GPU host) is not inside the measured window.
    pub fn open(opts: SamplingOptions) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let window_closed = Arc::new(AtomicBool::new(false));
        let closed = window_closed.clone();
        let window_opening = Arc::new(AtomicBool::new(false));
        let opening = window_opening.clone();
        let (opened_tx, opened) = mpsc::channel();
        let hand = Arc::new(Hand::default());
        let handed = hand.clone();
        let spawned = std::thread::Builder::new()
            .name("framelab-sampler".into())
            .spawn(move || {
                let slots = Core::open_sources(&opts);
                let _ = opened_tx.send(());
                // No `begin`: the command never started, and nothing is read.
                let Some(Begin {
                    origin_mono_ns,
                    tree,
                    mut sink,
                    mut sweep,
                    thread_exits,
                }) = handed.wait()
                else {
                    return Vec::new();
                };
                let mut core = Core::new(slots, tree, origin_mono_ns);
                if let Some(exits) = thread_exits {
                    core.hear_thread_exits(exits);
                }
                core.window_closed = closed;
                core.window_opening = opening;
                let mut flushed = Instant::now();
                let mut sweep_due = flushed;
                let mut sink_alive = true;
                let mut flush = |core: &mut Core, sink_alive: &mut bool| {
                    let batch = core.readings.take_batch();
                    if *sink_alive && !batch.is_empty() {
                        *sink_alive = sink(batch);
                    }
                };
                while !stopping.load(Ordering::Acquire) {
                    let started = Instant::now();
                    let next = core.tick(false);
                    let read = core.slots.iter().any(|s| s.last_read >= Some(started));
                    let next_sweep = (sweep.as_mut()).map(|sweep| {
                        let due = sweep.run_if_due(&mut sweep_due, started, read);
                        sweep.wakes_at(due, next)
                    });
                    if flushed.elapsed() >= FLUSH_EVERY
                        || core.readings.pending_samples() >= FLUSH_SAMPLES
                    {
                        flush(&mut core, &mut sink_alive);
                        flushed = Instant::now();
                    }
                    // Every source off or stopped, no sweep: sleep until the end of the run.
                    let due = [next, next_sweep]
                        .into_iter()
                        .flatten()
                        .min()
                        .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
                    // Parking costs one futex wait, no spinning; `stop` unparks at once.
                    loop {
                        let now = Instant::now();
                        if now >= due
                            || stopping.load(Ordering::Acquire)
                            || core.window_opening.load(Ordering::Acquire)
                            || core.closes_window_now()
                        {
                            break;
                        }
                        std::thread::park_timeout(due - now);
                    }
                }
                // A last reading of everything at the end, so totals cover the whole run.
                core.tick(true);
                flush(&mut core, &mut sink_alive);
                core.statuses()
            });
        Sampler {
            stop,
            window_closed,
            window_opening,
            handle: spawned.ok(),
            opened: Some(opened),
            hand,
        }
    }

    /// Waits up to `longest` for the sources to be open; `false` when they are not yet (a
    /// driver that hangs: they go on opening beside the command).
    pub fn wait_open(&mut self, longest: Duration) -> bool {
        let Some(opened) = &self.opened else {
            return true;
        };
        match opened.recv_timeout(longest) {
            Err(mpsc::RecvTimeoutError::Timeout) => false,
            // Open, or the thread is gone (its status says why): nothing to wait for.
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.opened = None;
                true
            }
        }
    }

    /// Starts reading, as soon as the sources are open: the run's clock starts at
    /// `origin_mono_ns`, its processes are `tree`'s, and `sink` receives the readings in
    /// order (when it returns false they are dropped from then on). `sweep`, if any, runs
    /// on the thread's wakeups from then on. `thread_exits`, if any, brings the threads'
    /// ends from their exit records.
    pub fn begin(
        &mut self,
        origin_mono_ns: i64,
        tree: ProcessTree,
        sink: Box<dyn FnMut(Batch) -> bool + Send>,
        sweep: Option<Sweep>,
        thread_exits: Option<ThreadExits>,
    ) {
        let begin = Begin {
            origin_mono_ns,
            tree,
            sink,
            sweep,
            thread_exits,
        };
        self.hand.set(|state| state.begin = Some(begin));
    }

    /// Opens the sources and starts reading at once (`open`, then `begin`).
    pub fn start(
        opts: SamplingOptions,
        origin_mono_ns: i64,
        tree: ProcessTree,
        sink: Box<dyn FnMut(Batch) -> bool + Send>,
    ) -> Sampler {
        let mut sampler = Sampler::open(opts);
        sampler.begin(origin_mono_ns, tree, sink, None, None);
        sampler
    }

    /// Tells the sources the measured window opened: they are all read at once, so running
    /// totals (a thread's CPU time) have a reading at its start.
    pub fn open_window(&self) {
        self.window_opening.store(true, Ordering::Release);
        if let Some(handle) = &self.handle {
            handle.thread().unpark();
        }
    }

    /// Tells the sources the measured window closed (what ends after is the command
    /// being stopped, not news).
    pub fn close_window(&self) {
        self.window_closed.store(true, Ordering::Release);
        if let Some(handle) = &self.handle {
            handle.thread().unpark();
        }
    }

    /// Stops the thread after a last reading and returns each source's status. The sink
    /// has received every reading when this returns.
    pub fn stop(mut self) -> Vec<SourceStatus> {
        match self.finish() {
            Some(Ok(statuses)) => statuses,
            Some(Err(_)) => vec![failed_status("the sampler thread crashed")],
            None => vec![failed_status("the sampler thread could not be started")],
        }
    }

    fn finish(&mut self) -> Option<std::thread::Result<Vec<SourceStatus>>> {
        // A thread not begun ends without reading; what `begin` gave it and it did not take
        // (the sink, which keeps the run file's writer waiting) is dropped here.
        self.hand.set(|state| {
            state.cancelled = true;
            state.begin = None;
        });
        self.stop.store(true, Ordering::Release);
        // A thread still opening a source (a driver that hangs) is left to it: joining it
        // would hang framelab too.
        if !self.wait_open(Duration::ZERO) {
            self.handle.take();
            return Some(Ok(vec![failed_status(
                "the sources were still opening when the run ended (a GPU driver that \
                 hangs?): nothing was read",
            )]));
        }
        let handle = self.handle.take()?;
        handle.thread().unpark();
        Some(handle.join())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn failed_status(why: &str) -> SourceStatus {
    SourceStatus {
        source: "sampler".into(),
        state: SourceState::Stopped,
        detail: why.into(),
        ..SourceStatus::default()
    }
}

/// What `framelab sources` shows: `count` readings `every` apart, on this thread.
pub fn read_once(
    opts: &SamplingOptions,
    tree: ProcessTree,
    count: u32,
) -> (Vec<SourceStatus>, Vec<SampleSeries>, Vec<Sample>) {
    let origin = framelab_probe::monotonic_ns() as i64;
    let mut core = Core::open(opts, tree, origin);
    let mut samples = Vec::new();
    for i in 0..count.max(1) {
        if i > 0 {
            std::thread::sleep(opts.every);
        }
        core.tick(i + 1 == count.max(1));
        samples.extend(core.readings.take_batch().samples);
    }
    let series = core.readings.all_series().to_vec();
    (core.statuses(), series, samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_stopped_before_it_began_ends_without_reading() {
        let mut sampler = Sampler::open(SamplingOptions::default());
        assert!(sampler.wait_open(Duration::from_secs(60)));
        // Waiting again is free: the sources are open.
        assert!(sampler.wait_open(Duration::ZERO));
        assert_eq!(sampler.stop(), Vec::new());
    }

    #[test]
    fn a_sweep_runs_when_due_or_rides_on_a_reading_past_half_its_interval() {
        let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = runs.clone();
        let every = Duration::from_millis(50);
        let mut sweep = Sweep {
            every,
            run: Box::new(move || _ = counted.fetch_add(1, Ordering::Relaxed)),
        };
        let t0 = Instant::now();
        let mut due = t0 + every;
        // Not due, nothing read: nothing.
        assert_eq!(sweep.run_if_due(&mut due, t0, false), t0 + every);
        // The sources were read, but the last run is less than half an interval ago.
        let early = t0 + Duration::from_millis(20);
        assert_eq!(sweep.run_if_due(&mut due, early, true), t0 + every);
        assert_eq!(runs.load(Ordering::Relaxed), 0);
        // Past half of it: it rides on that reading, and counts its interval from there.
        let riding = t0 + Duration::from_millis(30);
        assert_eq!(sweep.run_if_due(&mut due, riding, true), riding + every);
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        // Due within the millisecond of slack: a wakeup a little early takes it.
        let just_before = due - Duration::from_micros(500);
        sweep.run_if_due(&mut due, just_before, false);
        assert_eq!(runs.load(Ordering::Relaxed), 2);
        // Late by several intervals: one run, the missed ones skipped.
        let late = due + every * 3;
        assert_eq!(sweep.run_if_due(&mut due, late, false), late + every);
        assert_eq!(runs.load(Ordering::Relaxed), 3);
    }

    /// A sweep due a little before a reading waits for it, and then runs on the reading's
    /// wakeup (it is overdue there): from then on the two share every wakeup.
    #[test]
    fn a_sweep_due_shortly_before_a_reading_waits_for_it() {
        let every = Duration::from_millis(50);
        let mut sweep = Sweep {
            every,
            run: Box::new(|| {}),
        };
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        // 7 ms before the reading (as strace saw): wait for it.
        assert_eq!(sweep.wakes_at(ms(43), Some(ms(50))), ms(50));
        // Half an interval before it, at most.
        assert_eq!(sweep.wakes_at(ms(25), Some(ms(50))), ms(50));
        assert_eq!(sweep.wakes_at(ms(24), Some(ms(50))), ms(24));
        // Due after the reading, or with no reading to come: its own time.
        assert_eq!(sweep.wakes_at(ms(60), Some(ms(50))), ms(60));
        assert_eq!(sweep.wakes_at(ms(60), None), ms(60));
        // On the reading's wakeup it is overdue: it runs, and is next due with the reading.
        let mut due = ms(43);
        assert_eq!(sweep.run_if_due(&mut due, ms(50), true), ms(100));
    }

    /// With every source switched off the thread still wakes for the sweep, and the sweep
    /// runs on that thread, never after `stop` returned.
    #[test]
    fn a_sweep_runs_on_the_sampler_thread_until_it_stops() {
        let opts = SamplingOptions {
            every: Duration::from_millis(5),
            disabled: SourceKind::ALL.to_vec(),
            ..SamplingOptions::default()
        };
        let runs = Arc::new(Mutex::new(Vec::new()));
        let seen = runs.clone();
        let mut sampler = Sampler::open(opts);
        let tree = ProcessTree::fixed(crate::session::procfs::Procfs::system(), Vec::new());
        let sweep = Sweep {
            every: Duration::from_millis(5),
            run: Box::new(move || {
                let name = std::thread::current().name().map(str::to_owned);
                seen.lock().unwrap().push(name);
            }),
        };
        sampler.begin(0, tree, Box::new(|_| true), Some(sweep), None);
        // However slow the machine, three sweeps come; the deadline only ends a hang.
        let deadline = Instant::now() + Duration::from_secs(120);
        while runs.lock().unwrap().len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        sampler.stop();
        let after_stop = runs.lock().unwrap().len();
        assert!(after_stop >= 3, "{after_stop} sweeps");
        assert!(runs
            .lock()
            .unwrap()
            .iter()
            .all(|name| name.as_deref() == Some("framelab-sampler")));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(runs.lock().unwrap().len(), after_stop, "a sweep after stop");
    }

    /// The sweep's wakeups tick the sources too: with none due, the processes are not
    /// looked for.
    #[test]
    fn the_processes_are_looked_for_only_when_a_source_reads() {
        let tree = || {
            ProcessTree::fixed(
                crate::session::procfs::Procfs::system(),
                vec![std::process::id()],
            )
        };
        let all_off = SamplingOptions {
            disabled: SourceKind::ALL.to_vec(),
            ..SamplingOptions::default()
        };
        let mut core = Core::open(&all_off, tree(), 0);
        core.window_opening.store(true, Ordering::Release);
        assert_eq!(core.tick(false), None);
        assert_eq!(core.tick(true), None);
        assert!(!core.tree.looked());

        let threads_only = SamplingOptions {
            disabled: SourceKind::ALL
                .into_iter()
                .filter(|k| *k != SourceKind::Threads)
                .collect(),
            ..SamplingOptions::default()
        };
        let mut core = Core::open(&threads_only, tree(), 0);
        assert!(core.tick(false).is_some());
        assert!(core.tree.looked());
    }

    #[test]
    fn a_sampler_dropped_before_it_began_lets_its_thread_end() {
        let sampler = Sampler::open(SamplingOptions::default());
        // Drop joins the thread: waiting for `begin` forever would hang here.
        drop(sampler);
    }
}
