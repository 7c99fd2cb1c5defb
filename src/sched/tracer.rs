//! Scheduler tracing while the run goes: `sched:sched_switch` and `sched:sched_wakeup` on
//! every CPU, system-wide, kept only for the tasks of the run.
//!
//! System-wide per CPU rather than per thread with `inherit`: a thread's switch *in* and its
//! wakeup are recorded in the context of another task (the one leaving the CPU, the waker),
//! which an event attached to the thread never sees. So one event of each per CPU, both
//! writing to one ring per CPU, drained every 50 ms on a thread of its own; each record is
//! decoded in place (no allocation) and dropped unless one of its tasks belongs to the run
//! (a descendant of framelab, or a watched process; looked up once per task in /proc).

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::tracefs::{self, Field, Tracepoint};
use super::{SchedSlice, SchedSource, SchedTimeline};
use crate::perf_event::bindings as b;
use crate::perf_event::cursor::{self, Cursor};
use crate::perf_event::members::Membership;
use crate::perf_event::{self, Ring};

const SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU | b::PERF_SAMPLE_RAW) as u64;
/// 1 MiB a CPU: about 10,000 records, 50 ms of 200,000 switches and wakeups a second.
const RING_PAGES: usize = 256;
/// Each drain is a wakeup of framelab: few of them (BENCHMARKS.md, "Scheduler tracing").
const DRAIN_EVERY: Duration = Duration::from_millis(50);
/// `prev_state` bits that mean the task left the CPU to sleep or stop; none set (or only
/// the kernel's "preempted" marker above them) means it was still runnable.
const SLEEP_STATE_BITS: i64 = 0xff;

/// The raw fields used, where this kernel puts them.
#[derive(Clone, Copy)]
struct Layout {
    common_type: Field,
    switch_id: u64,
    prev_pid: Field,
    prev_state: Field,
    next_comm: Field,
    next_pid: Field,
    wakeup_pid: Field,
    target_cpu: Field,
}

impl Layout {
    fn read(switch: &Tracepoint, wakeup: &Tracepoint) -> Result<Layout, String> {
        Ok(Layout {
            common_type: switch.field("common_type")?,
            switch_id: switch.id,
            prev_pid: switch.field("prev_pid")?,
            prev_state: switch.field("prev_state")?,
            next_comm: switch.field("next_comm")?,
            next_pid: switch.field("next_pid")?,
            wakeup_pid: wakeup.field("pid")?,
            target_cpu: wakeup.field("target_cpu")?,
        })
    }
}

/// One decoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Switch {
        cpu: u32,
        prev: u32,
        prev_runnable: bool,
        next: u32,
        next_comm: [u8; 16],
    },
    Wakeup {
        tid: u32,
        target_cpu: u32,
    },
}

/// Where a traced thread is now.
#[derive(Clone, Debug)]
enum State {
    Running,
    Runnable(Arc<str>),
    Blocked,
}

struct Trace {
    layout: Layout,
    rings: Vec<Ring>,
    /// The wakeup events, writing into the switch event's ring of their CPU.
    others: Vec<OwnedFd>,
    members: Membership,
    /// What each CPU runs now, by CPU number (from every switch, the run's or not).
    on_cpu: Vec<[u8; 16]>,
    threads: HashMap<u32, (State, u64)>,
    comms: HashMap<[u8; 16], Arc<str>>,
    slices: Vec<SchedSlice>,
    lost: u64,
    /// Switches of the run's threads off a CPU, and those of them whose switch onto it was
    /// never seen (`Unseen`).
    switch_outs: u64,
    unseen_returns: u64,
    batch: Vec<(u64, Event)>,
}

/// How complete a traced timeline is: some kernels (the 2-core development VM's, and the
/// GPU host's) never report a switch out of the idle task on CPUs other than 0, so a thread
/// that slept and woke there seems to stay blocked until it next leaves the CPU. Each such
/// leaving is an unseen return; the caller falls back to schedstat when they are many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unseen {
    pub switch_outs: u64,
    pub unseen_returns: u64,
}

impl Unseen {
    /// Over 1% of the switches (and more than a start-up's few): the timeline's on-CPU
    /// time would be missing whole runs of the threads.
    pub fn too_many(self) -> bool {
        self.unseen_returns > 2 && self.unseen_returns * 100 > self.switch_outs
    }
}

pub struct Tracer {
    trace: Arc<Mutex<Trace>>,
    stop: Arc<AtomicBool>,
    drainer: Option<JoinHandle<()>>,
}

impl Tracer {
    /// Opens the two tracepoints on every CPU and starts draining. `Err` is the line to
    /// print (what was refused and how to get it).
    pub fn start(framelab: u32, watched: Vec<u32>) -> Result<Tracer, String> {
        let root = tracefs::root()?;
        let switch = tracefs::tracepoint(&root, "sched", "sched_switch")?;
        let wakeup = tracefs::tracepoint(&root, "sched", "sched_wakeup")?;
        let layout = Layout::read(&switch, &wakeup)?;
        let mut rings = Vec::new();
        let mut others = Vec::new();
        for cpu in perf_event::cpus() {
            let fd = open(switch.id, cpu).map_err(|e| refusal(&e))?;
            let ring = Ring::map(fd, RING_PAGES).map_err(|e| format!("cannot map: {e}"))?;
            let wake = open(wakeup.id, cpu).map_err(|e| refusal(&e))?;
            perf_event::redirect(&wake, ring.fd()).map_err(|e| refusal(&e))?;
            rings.push(ring);
            others.push(wake);
        }
        for ring in &rings {
            perf_event::enable(ring.fd()).map_err(|e| perf_event::refusal(&e))?;
        }
        for fd in &others {
            perf_event::enable(fd).map_err(|e| perf_event::refusal(&e))?;
        }
        let members = Membership::new(framelab, watched);
        let trace = Arc::new(Mutex::new(Trace::new(layout, rings, others, members)));
        let stop = Arc::new(AtomicBool::new(false));
        let drainer = {
            let (trace, stop) = (trace.clone(), stop.clone());
            std::thread::Builder::new()
                .name("framelab-sched".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(DRAIN_EVERY);
                        trace.lock().unwrap().drain();
                    }
                })
                .map_err(|e| format!("cannot start the scheduler tracing thread: {e}"))?
        };
        Ok(Tracer {
            trace,
            stop,
            drainer: Some(drainer),
        })
    }

    /// Stops tracing; slices in ns after `origin_mono_ns`, by thread then time.
    pub fn finish(mut self, origin_mono_ns: i64) -> (SchedTimeline, Unseen) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.drainer.take() {
            let _ = t.join();
        }
        let mut trace = self.trace.lock().unwrap();
        for ring in &trace.rings {
            perf_event::disable(ring.fd());
        }
        for fd in &trace.others {
            perf_event::disable(fd);
        }
        trace.drain();
        let now = framelab_probe::monotonic_ns();
        trace.close_all(now);
        let mut slices = std::mem::take(&mut trace.slices);
        for s in &mut slices {
            s.start_ns -= origin_mono_ns;
        }
        slices.sort_by_key(|s| (s.tid, s.start_ns));
        let unseen = Unseen {
            switch_outs: trace.switch_outs,
            unseen_returns: trace.unseen_returns,
        };
        let timeline = SchedTimeline {
            source: SchedSource::Tracepoints,
            detail: String::new(),
            resolution_ns: 1,
            lost: trace.lost,
            slices,
        };
        (timeline, unseen)
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.drainer.take() {
            let _ = t.join();
        }
    }
}

/// Why the tracepoints could not be opened, with what gives them: system-wide raw
/// tracepoints need more than a profile of one's own processes (`perf_event_paranoid`
/// -1, not 1).
fn refusal(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused the sched tracepoints ({error}; kernel.perf_event_paranoid \
             is {}): run as root, give framelab CAP_PERFMON (sudo setcap cap_perfmon+ep \
             \"$(command -v framelab)\"), or allow them to every user (sudo sysctl \
             kernel.perf_event_paranoid=-1)",
            perf_event::paranoid().map_or_else(|| "unknown".to_owned(), |p| p.to_string())
        ),
        _ => perf_event::refusal(error),
    }
}

fn open(id: u64, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    attr.type_ = b::PERF_TYPE_TRACEPOINT;
    attr.config = id;
    attr.__bindgen_anon_1.sample_period = 1;
    attr.sample_type = SAMPLE_TYPE;
    attr.set_disabled(1);
    // Timed on CLOCK_MONOTONIC, the clock of every span.
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    perf_event::open(&mut attr, -1, cpu)
}

impl Trace {
    fn new(layout: Layout, rings: Vec<Ring>, others: Vec<OwnedFd>, members: Membership) -> Trace {
        Trace {
            layout,
            rings,
            others,
            members,
            on_cpu: Vec::new(),
            threads: HashMap::new(),
            comms: HashMap::new(),
            slices: Vec::new(),
            lost: 0,
            switch_outs: 0,
            unseen_returns: 0,
            batch: Vec::new(),
        }
    }

    fn drain(&mut self) {
        let mut batch = std::mem::take(&mut self.batch);
        let layout = self.layout;
        let mut lost = 0;
        for ring in &mut self.rings {
            ring.for_each(|record| match decode(record, &layout) {
                Some(Decoded::Event(time, event)) => batch.push((time, event)),
                Some(Decoded::Lost(n)) => lost += n,
                None => {}
            });
        }
        self.lost += lost;
        // Across CPUs in time order: a thread leaves one CPU before it runs on another.
        batch.sort_by_key(|(t, _)| *t);
        for (time, event) in batch.drain(..) {
            self.apply(time, event);
        }
        self.batch = batch;
    }

    fn comm(&mut self, raw: [u8; 16]) -> Arc<str> {
        self.comms
            .entry(raw)
            .or_insert_with(|| {
                let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                String::from_utf8_lossy(&raw[..len]).into()
            })
            .clone()
    }

    fn apply(&mut self, time: u64, event: Event) {
        match event {
            Event::Switch {
                cpu,
                prev,
                prev_runnable,
                next,
                next_comm,
            } => {
                let cpu = cpu as usize;
                if cpu >= self.on_cpu.len() {
                    self.on_cpu.resize(cpu + 1, [0; 16]);
                }
                self.on_cpu[cpu] = next_comm;
                if self.members.contains(prev) {
                    self.switch_outs += 1;
                    // Leaving a CPU it was never seen to get: its return went unreported.
                    if matches!(
                        self.threads.get(&prev),
                        Some((State::Blocked | State::Runnable(_), _))
                    ) {
                        self.unseen_returns += 1;
                    }
                    let state = if prev_runnable {
                        State::Runnable(self.comm(next_comm))
                    } else {
                        State::Blocked
                    };
                    self.enter(prev, state, time);
                }
                if self.members.contains(next) {
                    self.enter(next, State::Running, time);
                }
            }
            Event::Wakeup { tid, target_cpu } => {
                if !self.members.contains(tid) {
                    return;
                }
                let blocked = self
                    .threads
                    .get(&tid)
                    .is_none_or(|(s, _)| matches!(s, State::Blocked));
                if blocked {
                    // Woken: it waits for whatever holds its CPU now.
                    let holder =
                        (self.on_cpu.get(target_cpu as usize).copied()).unwrap_or_default();
                    let by = self.comm(holder);
                    self.enter(tid, State::Runnable(by), time);
                }
            }
        }
    }

    /// `tid` goes to `state` at `time`: the stretch it leaves becomes a slice.
    fn enter(&mut self, tid: u32, state: State, time: u64) {
        if let Some((was, since)) = self.threads.insert(tid, (state, time)) {
            self.close(tid, was, since, time);
        }
    }

    fn close(&mut self, tid: u32, was: State, since: u64, time: u64) {
        let dur_ns = time.saturating_sub(since) as i64;
        if dur_ns <= 0 {
            return;
        }
        let slice = match was {
            State::Running => SchedSlice {
                tid,
                start_ns: since as i64,
                dur_ns,
                on_cpu_ns: dur_ns,
                runnable_ns: 0,
                by: String::new(),
            },
            State::Runnable(by) => SchedSlice {
                tid,
                start_ns: since as i64,
                dur_ns,
                on_cpu_ns: 0,
                runnable_ns: dur_ns,
                by: by.to_string(),
            },
            State::Blocked => return,
        };
        self.slices.push(slice);
    }

    fn close_all(&mut self, now: u64) {
        for (tid, (was, since)) in std::mem::take(&mut self.threads) {
            self.close(tid, was, since, now);
        }
    }
}

enum Decoded {
    Event(u64, Event),
    Lost(u64),
}

/// A sample of either tracepoint (`SAMPLE_TYPE`: pid, tid, time, cpu, raw), or a count of
/// records lost.
fn decode(record: &[u8], layout: &Layout) -> Option<Decoded> {
    let (kind, _) = cursor::header(record)?;
    let mut c = Cursor::after_header(record);
    match kind {
        b::PERF_RECORD_SAMPLE => {
            let _pid_tid = c.u64();
            let time = c.u64();
            let cpu = c.u32();
            let _reserved = c.u32();
            let size = c.u32() as usize;
            let raw = c.take(size);
            let event = if layout.common_type.int(raw) as u64 == layout.switch_id {
                let mut next_comm = [0u8; 16];
                let text = layout.next_comm.text(raw);
                next_comm[..text.len().min(16)].copy_from_slice(&text[..text.len().min(16)]);
                Event::Switch {
                    cpu,
                    prev: layout.prev_pid.int(raw) as u32,
                    prev_runnable: layout.prev_state.int(raw) & SLEEP_STATE_BITS == 0,
                    next: layout.next_pid.int(raw) as u32,
                    next_comm,
                }
            } else {
                Event::Wakeup {
                    tid: layout.wakeup_pid.int(raw) as u32,
                    target_cpu: layout.target_cpu.int(raw) as u32,
                }
            };
            Some(Decoded::Event(time, event))
        }
        b::PERF_RECORD_LOST => {
            let _id = c.u64();
            Some(Decoded::Lost(c.u64()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_of(members: &[u32]) -> Trace {
        let f = |offset, size| Field { offset, size };
        Trace::new(
            Layout {
                common_type: f(0, 2),
                switch_id: 1,
                prev_pid: f(24, 4),
                prev_state: f(32, 8),
                next_comm: f(40, 16),
                next_pid: f(56, 4),
                wakeup_pid: f(24, 4),
                target_cpu: f(32, 4),
            },
            Vec::new(),
            Vec::new(),
            {
                let mut run = Membership::new(1, Vec::new());
                for &t in members {
                    run.set(t, true);
                }
                run
            },
        )
    }

    fn comm(name: &str) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..name.len()].copy_from_slice(name.as_bytes());
        c
    }

    fn switch(prev: u32, prev_runnable: bool, next: u32, next_comm: &str) -> Event {
        Event::Switch {
            cpu: 0,
            prev,
            prev_runnable,
            next,
            next_comm: comm(next_comm),
        }
    }

    /// A kernel that drops switches out of the idle task: the thread's returns to the CPU
    /// are never seen, only its leaving; each leaving from "blocked" is counted, and a
    /// complete trace counts none.
    #[test]
    fn returns_to_a_cpu_that_were_never_seen_are_counted() {
        let mut complete = trace_of(&[7]);
        let mut missing = trace_of(&[7]);
        for round in 0..10u64 {
            let t = 1000 * round;
            complete.apply(t + 100, switch(0, true, 7, "app"));
            complete.apply(t + 300, switch(7, false, 0, "swapper/1"));
            // The same, without the switch from the idle task.
            missing.apply(t + 300, switch(7, false, 0, "swapper/1"));
        }
        assert_eq!((complete.switch_outs, complete.unseen_returns), (10, 0));
        assert_eq!((missing.switch_outs, missing.unseen_returns), (10, 9));
        let unseen = |t: &Trace| Unseen {
            switch_outs: t.switch_outs,
            unseen_returns: t.unseen_returns,
        };
        assert!(!unseen(&complete).too_many());
        assert!(unseen(&missing).too_many());
    }

    #[test]
    fn a_preemption_is_runnable_time_named_after_the_task_that_took_the_cpu() {
        let mut t = trace_of(&[7]);
        t.apply(100, switch(99, false, 7, "app"));
        t.apply(300, switch(7, true, 50, "hog"));
        t.apply(700, switch(50, true, 7, "app"));
        t.apply(800, switch(7, false, 0, "swapper/0"));
        t.apply(
            900,
            Event::Wakeup {
                tid: 7,
                target_cpu: 0,
            },
        );
        t.apply(950, switch(0, true, 7, "app"));
        let s: Vec<(i64, i64, i64, &str)> = t
            .slices
            .iter()
            .map(|s| (s.start_ns, s.on_cpu_ns, s.runnable_ns, s.by.as_str()))
            .collect();
        assert_eq!(
            s,
            vec![
                (100, 200, 0, ""),
                (300, 0, 400, "hog"),
                (700, 100, 0, ""),
                // Blocked 800-900 is no slice; woken at 900 on an idle CPU.
                (900, 0, 50, "swapper/0"),
            ]
        );
    }

    #[test]
    fn tasks_outside_the_run_leave_no_slices() {
        let mut t = trace_of(&[]);
        t.members.set(5, false);
        t.apply(100, switch(5, true, 6, "x"));
        t.members.set(6, false);
        t.apply(200, switch(6, false, 5, "y"));
        assert!(t.slices.is_empty());
    }

    #[test]
    fn a_sample_record_decodes_with_the_layout_of_the_format_file() {
        let t = trace_of(&[]);
        let mut raw = vec![0u8; 64];
        raw[0..2].copy_from_slice(&1u16.to_ne_bytes());
        raw[24..28].copy_from_slice(&7i32.to_ne_bytes());
        raw[32..40].copy_from_slice(&0x100i64.to_ne_bytes());
        raw[40..43].copy_from_slice(b"hog");
        raw[56..60].copy_from_slice(&9i32.to_ne_bytes());
        let mut body = Vec::new();
        body.extend(7u64.to_ne_bytes());
        body.extend(1234u64.to_ne_bytes());
        body.extend(1u32.to_ne_bytes());
        body.extend(0u32.to_ne_bytes());
        body.extend((raw.len() as u32).to_ne_bytes());
        body.extend(&raw);
        let mut record = Vec::new();
        record.extend(b::PERF_RECORD_SAMPLE.to_ne_bytes());
        record.extend(0u16.to_ne_bytes());
        record.extend(((8 + body.len()) as u16).to_ne_bytes());
        record.extend(body);
        let Some(Decoded::Event(time, event)) = decode(&record, &t.layout) else {
            panic!("not decoded")
        };
        assert_eq!(time, 1234);
        // prev_state 0x100 is the kernel's "R+": preempted, still runnable.
        assert_eq!(event, switch(7, true, 9, "hog").with_cpu(1));
    }

    impl Event {
        fn with_cpu(self, c: u32) -> Event {
            match self {
                Event::Switch {
                    prev,
                    prev_runnable,
                    next,
                    next_comm,
                    ..
                } => Event::Switch {
                    cpu: c,
                    prev,
                    prev_runnable,
                    next,
                    next_comm,
                },
                e => e,
            }
        }
    }
}
