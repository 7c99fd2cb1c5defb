//! Scheduler tracing while the run goes: `sched:sched_switch` and `sched:sched_wakeup` on
//! every CPU, kept only for the tasks of the run.
//!
//! Per CPU rather than per thread with `inherit`: a thread's switch *in* and its wakeup are
//! recorded in the context of another task (the one leaving the CPU, the waker), which an
//! event attached to the thread never sees. One event of each per CPU, both writing to one
//! ring per CPU, drained on a thread of its own; each record is decoded in place (no
//! allocation). Which tasks are the run's, two ways:
//!
//! - **By the run's cgroup** (`Scope::Cgroup`, where the run has a cgroup v2 group and no
//!   `--watch-pid`): the switch event is opened on the group (`PERF_FLAG_PID_CGROUP`), so the
//!   kernel records it only while a task of the run is the CPU's current one. The tracepoint
//!   fires before the kernel switches the CPU's cgroup, so it gives every switch *out* of a
//!   run's task (with `prev_state` and the task taking the CPU); a switch *into* one happens
//!   in the leaving task's context and is not recorded, so the same event also asks for
//!   context-switch records (`context_switch`), whose switch-in record the kernel writes once
//!   the CPU is the incoming task's. Wakeups stay system-wide (a wakeup happens in the
//!   waker's context, often an interrupt on an idle CPU) and are kept for the threads the
//!   switches showed. No `/proc` read decides anything, so the rings may wait: the thread
//!   sleeps until a ring passes its watermark, at most `LONGEST_SLEEP`.
//! - **By `/proc`** (`Scope::Everyone`, the fallback): every switch of the machine, kept
//!   when one of its tasks is a descendant of framelab or a watched process, looked up once
//!   per task in /proc while it lives; so the rings are drained every `DRAIN_EVERY`, before
//!   a short-lived task's /proc entry is gone.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::tracefs::{self, Field, Tracepoint};
use super::waking::{self, StopBell};
use super::{SchedSlice, SchedSource, SchedTimeline};
use crate::perf_event::bindings as b;
use crate::perf_event::cursor::{self, Cursor};
use crate::perf_event::members::Membership;
use crate::perf_event::task_records::{self, Fork, TaskRecord};
use crate::perf_event::{self, Ring};

const SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU | b::PERF_SAMPLE_RAW) as u64;
/// 1 MiB a CPU: about 10,000 records, 50 ms of 200,000 switches and wakeups a second.
const RING_PAGES: usize = 256;
/// `Scope::Everyone`: each drain is a wakeup of framelab, but /proc must be read while the
/// run's short-lived tasks live (BENCHMARKS.md, "Scheduler tracing").
const DRAIN_EVERY: Duration = Duration::from_millis(50);
/// `Scope::Cgroup`: the kernel wakes the thread once a ring is a quarter full (~2,500
/// records), which leaves three quarters (~37 ms of 200,000 records a second on one CPU)
/// for the thread to get a CPU; else it drains once a second.
const WATERMARK_BYTES: u32 = (RING_PAGES as u32 / 4) * 4096;
const LONGEST_SLEEP: Duration = Duration::from_secs(1);
/// `prev_state` bits that mean the task left the CPU to sleep or stop; none set (or only
/// the kernel's "preempted" marker above them) means it was still runnable.
const SLEEP_STATE_BITS: i64 = 0xff;
/// `prev_state` bits of a task's last switch: it exited (`X` dead, `Z` zombie).
const EXITED_STATE_BITS: i64 = 0x30;

/// The raw fields used, where this kernel puts them.
#[derive(Clone, Copy)]
struct Layout {
    common_type: Field,
    switch_id: u64,
    prev_comm: Field,
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
            prev_comm: switch.field("prev_comm")?,
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
        prev_comm: [u8; 16],
        prev_runnable: bool,
        prev_exited: bool,
        next: u32,
        next_comm: [u8; 16],
    },
    /// A context-switch record of the run's cgroup: `tid` got the CPU.
    SwitchIn {
        cpu: u32,
        tid: u32,
    },
    Wakeup {
        tid: u32,
        target_cpu: u32,
    },
    /// `Scope::Everyone`: the kernel made a task (whose it is, while /proc may not say),
    /// or one ended (`exited`: forgotten a drain later).
    Task {
        task: Fork,
        exited: bool,
    },
}

/// The id a context-switch record gives a thread whose id the kernel has already
/// released: one that is exiting, switched back in after its process let it go. Its switch
/// out, through the tracepoint, still names it.
const NO_ID: u32 = u32::MAX;

/// Where a traced thread is now.
#[derive(Clone, Debug)]
enum State {
    Running,
    Runnable(Arc<str>),
    Blocked,
}

/// Which tasks the rings carry, and so how the run's are told apart.
enum Scope {
    /// The kernel's: switches of the run's cgroup only; a wakeup is kept for a thread
    /// already seen to switch.
    Cgroup,
    /// Every task's, the run's told by the kernel's fork records or looked up in /proc.
    Everyone(Box<Membership>),
}

/// What a CPU runs now: a task named by a switch, or a thread of the run that got it.
#[derive(Clone, Copy)]
enum Holder {
    Comm([u8; 16]),
    Run(u32),
}

struct Trace {
    layout: Layout,
    rings: Vec<Ring>,
    /// The wakeup events, writing into the switch event's ring of their CPU.
    others: Vec<OwnedFd>,
    scope: Scope,
    /// What each CPU runs now, by CPU number (`Scope::Everyone`: from every switch, the
    /// run's or not; `Scope::Cgroup`: from those of the run's threads, so a switch between
    /// two other tasks goes unseen).
    on_cpu: Vec<Holder>,
    /// `Scope::Cgroup`: the run's threads' names, from their switches out.
    run_comms: HashMap<u32, [u8; 16]>,
    threads: HashMap<u32, (State, u64)>,
    /// By CPU: when a thread of the run got it with no id (see `NO_ID`), to be named by its
    /// next switch out, which is that thread's.
    nameless_in: Vec<Option<u64>>,
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
    bell: Arc<StopBell>,
    drainer: Option<JoinHandle<()>>,
    /// Which way the run's tasks are told apart, said in the run's `scheduler` line.
    filtered: String,
}

/// The events, by CPU: the switch event, which owns the CPU's ring, and the wakeup event
/// writing into it.
#[derive(Default)]
struct Opened {
    rings: Vec<Ring>,
    others: Vec<OwnedFd>,
}

impl Opened {
    /// One CPU's ring, mapped over its switch event `fd`, with the wakeup event on every
    /// task of that CPU written into it.
    fn add_cpu(&mut self, fd: OwnedFd, wakeup: u64, cpu: i32) -> Result<(), String> {
        let ring = Ring::map(fd, RING_PAGES).map_err(|e| format!("cannot map: {e}"))?;
        let wake =
            perf_event::open(&mut tracepoint_attr(wakeup), -1, cpu).map_err(|e| refusal(&e))?;
        perf_event::redirect(&wake, ring.fd()).map_err(|e| refusal(&e))?;
        self.rings.push(ring);
        self.others.push(wake);
        Ok(())
    }
}

impl Tracer {
    /// Opens the two tracepoints on every CPU and starts draining: kept for the run's
    /// cgroup by the kernel where `run_cgroup` is given and nothing is watched beside it,
    /// else (or where the kernel refuses the cgroup) for framelab's descendants and
    /// `watched`, looked up in /proc. `Err` is the line to print (what was refused and how
    /// to get it).
    pub fn start(
        framelab: u32,
        watched: Vec<u32>,
        run_cgroup: Option<&Path>,
    ) -> Result<Tracer, String> {
        let root = tracefs::root()?;
        let switch = tracefs::tracepoint(&root, "sched", "sched_switch")?;
        let wakeup = tracefs::tracepoint(&root, "sched", "sched_wakeup")?;
        let layout = Layout::read(&switch, &wakeup)?;
        let ids = (switch.id, wakeup.id);
        let by_cgroup = match (run_cgroup, watched.is_empty()) {
            (None, _) => Err("the run has no cgroup v2 group".to_owned()),
            (Some(_), false) => Err("watched processes are outside the run's cgroup".to_owned()),
            (Some(dir), true) => open_for_cgroup(ids, dir),
        };
        let (scope, opened, longest_sleep, filtered) = match by_cgroup {
            Ok(opened) => (
                Scope::Cgroup,
                opened,
                LONGEST_SLEEP,
                "kept for the run's cgroup by the kernel".to_owned(),
            ),
            Err(why) => (
                Scope::Everyone(Box::new(Membership::new(framelab, watched))),
                open_for_everyone(ids)?,
                DRAIN_EVERY,
                format!("every task's switches, the run's found in /proc ({why})"),
            ),
        };
        for ring in &opened.rings {
            perf_event::enable(ring.fd()).map_err(|e| perf_event::refusal(&e))?;
        }
        for fd in &opened.others {
            perf_event::enable(fd).map_err(|e| perf_event::refusal(&e))?;
        }
        let trace = Trace::new(layout, opened.rings, opened.others, scope);
        let trace = Arc::new(Mutex::new(trace));
        let bell = Arc::new(StopBell::new().map_err(|e| format!("cannot make an eventfd: {e}"))?);
        let drainer = {
            let (trace, bell) = (trace.clone(), bell.clone());
            // The ring descriptors stay open as long as `trace`, which the thread holds.
            let mut fds: Vec<i32> = (trace.lock().unwrap().rings.iter())
                .map(|r| std::os::fd::AsRawFd::as_raw_fd(r.fd()))
                .collect();
            std::thread::Builder::new()
                .name("framelab-sched".into())
                .spawn(move || {
                    while !waking::wait(&mut fds, &bell, longest_sleep) {
                        trace.lock().unwrap().drain();
                    }
                })
                .map_err(|e| format!("cannot start the scheduler tracing thread: {e}"))?
        };
        Ok(Tracer {
            trace,
            bell,
            drainer: Some(drainer),
            filtered,
        })
    }

    /// Stops tracing; slices in ns after `origin_mono_ns`, by thread then time.
    pub fn finish(mut self, origin_mono_ns: i64) -> (SchedTimeline, Unseen) {
        self.stop_draining();
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
            detail: self.filtered.clone(),
            resolution_ns: 1,
            lost: trace.lost,
            slices,
        };
        (timeline, unseen)
    }

    fn stop_draining(&mut self) {
        self.bell.ring();
        if let Some(t) = self.drainer.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop_draining();
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

/// The switch event on the run's cgroup (with its context-switch records, and a
/// watermark), the wakeup event on every task; `Err` says why the kernel would not.
fn open_for_cgroup((switch, wakeup): (u64, u64), dir: &Path) -> Result<Opened, String> {
    let group: OwnedFd = std::fs::File::open(dir)
        .map_err(|e| format!("cannot open {}: {e}", dir.display()))?
        .into();
    let mut opened = Opened::default();
    for cpu in perf_event::cpus() {
        let mut attr = tracepoint_attr(switch);
        attr.set_context_switch(1);
        attr.set_sample_id_all(1);
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark = WATERMARK_BYTES;
        let fd = perf_event::open_in_cgroup(&mut attr, &group, cpu)
            .map_err(|e| format!("the kernel refused a cgroup filter: {e}"))?;
        opened.add_cpu(fd, wakeup, cpu)?;
    }
    Ok(opened)
}

/// Both events on every task of each CPU.
fn open_for_everyone((switch, wakeup): (u64, u64)) -> Result<Opened, String> {
    let mut opened = Opened::default();
    for cpu in perf_event::cpus() {
        let fd =
            perf_event::open(&mut tracepoint_attr(switch), -1, cpu).map_err(|e| refusal(&e))?;
        opened.add_cpu(fd, wakeup, cpu)?;
        // A task that lived between two drains is known as the run's by its fork.
        let ring = opened.rings.last().expect("add_cpu maps a ring");
        opened
            .others
            .extend(task_records::open_or_none(cpu, ring.fd()));
    }
    Ok(opened)
}

fn tracepoint_attr(id: u64) -> b::perf_event_attr {
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
    attr
}

impl Trace {
    fn new(layout: Layout, rings: Vec<Ring>, others: Vec<OwnedFd>, scope: Scope) -> Trace {
        Trace {
            layout,
            rings,
            others,
            scope,
            on_cpu: Vec::new(),
            run_comms: HashMap::new(),
            threads: HashMap::new(),
            nameless_in: Vec::new(),
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
        if let Scope::Everyone(members) = &mut self.scope {
            members.drained();
        }
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
                prev_comm,
                prev_runnable,
                prev_exited,
                next,
                next_comm,
            } => {
                if let Some(since) = self
                    .nameless_in
                    .get_mut(cpu as usize)
                    .and_then(Option::take)
                {
                    // The thread that got this CPU with no id is the one leaving it now.
                    if !matches!(self.threads.get(&prev), Some((State::Running, _))) {
                        self.enter(prev, State::Running, since);
                    }
                }
                self.hold(cpu, Holder::Comm(next_comm));
                // The cgroup's event fires only while a task of the run leaves the CPU.
                let (prev_is_run, next_is_run) = match &mut self.scope {
                    Scope::Cgroup => (true, false),
                    Scope::Everyone(members) => (members.contains(prev), members.contains(next)),
                };
                if prev_is_run {
                    self.switch_out(time, prev, prev_runnable, next_comm);
                    if matches!(self.scope, Scope::Cgroup) {
                        self.run_comms.insert(prev, prev_comm);
                        if prev_exited {
                            // Its id may be another task's next: no wakeup of that one
                            // is the run's.
                            self.threads.remove(&prev);
                            self.run_comms.remove(&prev);
                        }
                    }
                }
                if next_is_run {
                    self.enter(next, State::Running, time);
                }
            }
            Event::SwitchIn { cpu, tid: NO_ID } => {
                self.hold(cpu, Holder::Run(NO_ID));
                let slot = cpu as usize;
                if slot >= self.nameless_in.len() {
                    self.nameless_in.resize(slot + 1, None);
                }
                self.nameless_in[slot] = Some(time);
            }
            Event::SwitchIn { cpu, tid } => {
                self.hold(cpu, Holder::Run(tid));
                if !matches!(self.threads.get(&tid), Some((State::Running, _))) {
                    self.enter(tid, State::Running, time);
                }
            }
            Event::Task { task, exited } => {
                if let Scope::Everyone(members) = &mut self.scope {
                    members.learn(&if exited {
                        TaskRecord::Exit(task)
                    } else {
                        TaskRecord::Fork(task)
                    });
                }
            }
            Event::Wakeup { tid, target_cpu } => {
                let blocked = match &mut self.scope {
                    // A thread of the run switched before it can sleep and be woken.
                    Scope::Cgroup => matches!(self.threads.get(&tid), Some((State::Blocked, _))),
                    Scope::Everyone(members) => {
                        members.contains(tid)
                            && (self.threads.get(&tid))
                                .is_none_or(|(s, _)| matches!(s, State::Blocked))
                    }
                };
                if blocked {
                    // Woken: it waits for whatever holds its CPU now.
                    let by = self.holder_name(target_cpu);
                    self.enter(tid, State::Runnable(by), time);
                }
            }
        }
    }

    /// A thread of the run leaves its CPU: runnable (named after the task taking the CPU)
    /// or blocked.
    fn switch_out(&mut self, time: u64, tid: u32, runnable: bool, taker: [u8; 16]) {
        self.switch_outs += 1;
        // Leaving a CPU it was never seen to get: its return went unreported.
        if matches!(
            self.threads.get(&tid),
            Some((State::Blocked | State::Runnable(_), _))
        ) {
            self.unseen_returns += 1;
        }
        let state = if runnable {
            State::Runnable(self.comm(taker))
        } else {
            State::Blocked
        };
        self.enter(tid, state, time);
    }

    fn hold(&mut self, cpu: u32, holder: Holder) {
        let cpu = cpu as usize;
        if cpu >= self.on_cpu.len() {
            self.on_cpu.resize(cpu + 1, Holder::Comm([0; 16]));
        }
        self.on_cpu[cpu] = holder;
    }

    /// The name of what `cpu` runs now; a thread of the run not yet seen to leave a CPU is
    /// named from /proc, once.
    fn holder_name(&mut self, cpu: u32) -> Arc<str> {
        let raw = match self.on_cpu.get(cpu as usize).copied() {
            None => [0; 16],
            Some(Holder::Comm(raw)) => raw,
            Some(Holder::Run(NO_ID)) => return "(an exiting thread)".into(),
            Some(Holder::Run(tid)) => *self.run_comms.entry(tid).or_insert_with(|| {
                let text = std::fs::read(format!("/proc/{tid}/comm")).unwrap_or_default();
                let mut raw = [0u8; 16];
                let name = text.strip_suffix(b"\n").unwrap_or(&text);
                raw[..name.len().min(16)].copy_from_slice(&name[..name.len().min(16)]);
                raw
            }),
        };
        self.comm(raw)
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
    let (kind, misc) = cursor::header(record)?;
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
                let prev_state = layout.prev_state.int(raw);
                Event::Switch {
                    cpu,
                    prev: layout.prev_pid.int(raw) as u32,
                    prev_comm: comm_field(layout.prev_comm, raw),
                    prev_runnable: prev_state & SLEEP_STATE_BITS == 0,
                    prev_exited: prev_state & EXITED_STATE_BITS != 0,
                    next: layout.next_pid.int(raw) as u32,
                    next_comm: comm_field(layout.next_comm, raw),
                }
            } else {
                Event::Wakeup {
                    tid: layout.wakeup_pid.int(raw) as u32,
                    target_cpu: layout.target_cpu.int(raw) as u32,
                }
            };
            Some(Decoded::Event(time, event))
        }
        // Only switches in: the tracepoint gave the switch out, with more.
        b::PERF_RECORD_SWITCH_CPU_WIDE if misc & b::PERF_RECORD_MISC_SWITCH_OUT == 0 => {
            let _next_prev_pid_tid = c.u64();
            // `sample_id_all`: the incoming task's pid and tid, time, CPU.
            let _pid = c.u32();
            let tid = c.u32();
            let time = c.u64();
            let cpu = c.u32();
            Some(Decoded::Event(time, Event::SwitchIn { cpu, tid }))
        }
        b::PERF_RECORD_FORK | b::PERF_RECORD_EXIT => match TaskRecord::read(record)? {
            TaskRecord::Fork(task) => Some(Decoded::Event(
                task.time,
                Event::Task {
                    task,
                    exited: false,
                },
            )),
            TaskRecord::Exit(task) => Some(Decoded::Event(
                task.time,
                Event::Task { task, exited: true },
            )),
            TaskRecord::Comm { .. } => None,
        },
        b::PERF_RECORD_LOST => {
            let _id = c.u64();
            Some(Decoded::Lost(c.u64()))
        }
        _ => None,
    }
}

fn comm_field(field: Field, raw: &[u8]) -> [u8; 16] {
    let mut comm = [0u8; 16];
    let text = field.text(raw);
    comm[..text.len().min(16)].copy_from_slice(&text[..text.len().min(16)]);
    comm
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let f = |offset, size| Field { offset, size };
        Layout {
            common_type: f(0, 2),
            switch_id: 1,
            prev_comm: f(8, 16),
            prev_pid: f(24, 4),
            prev_state: f(32, 8),
            next_comm: f(40, 16),
            next_pid: f(56, 4),
            wakeup_pid: f(24, 4),
            target_cpu: f(32, 4),
        }
    }

    fn trace_of(members: &[u32]) -> Trace {
        let mut run = Membership::new(1, Vec::new());
        for &t in members {
            run.set(t, true);
        }
        Trace::new(
            layout(),
            Vec::new(),
            Vec::new(),
            Scope::Everyone(Box::new(run)),
        )
    }

    /// What the run's cgroup's events give: only switches out of its tasks, and switches
    /// into them as records of their own; wakeups of every task.
    fn cgroup_trace() -> Trace {
        Trace::new(layout(), Vec::new(), Vec::new(), Scope::Cgroup)
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
            prev_comm: comm("app"),
            prev_runnable,
            prev_exited: false,
            next,
            next_comm: comm(next_comm),
        }
    }

    fn switch_in(tid: u32) -> Event {
        Event::SwitchIn { cpu: 0, tid }
    }

    fn slices(t: &Trace) -> Vec<(i64, i64, i64, &str)> {
        t.slices
            .iter()
            .map(|s| (s.start_ns, s.on_cpu_ns, s.runnable_ns, s.by.as_str()))
            .collect()
    }

    /// Tasks unknown to /proc (ids above the kernel's largest), made while the run went:
    /// their forks say whose they are, so a process that lived and was reaped between two
    /// drains has its time on the CPU; one another process made has none.
    #[test]
    fn a_task_gone_from_proc_is_traced_by_its_fork() {
        let (framelab, child, stranger) = (5_000_000, 5_000_001, 5_000_002);
        let mut t = Trace::new(
            layout(),
            Vec::new(),
            Vec::new(),
            Scope::Everyone(Box::new(Membership::new(framelab, Vec::new()))),
        );
        let fork = |pid, ppid| Event::Task {
            task: Fork {
                pid,
                ppid,
                tid: pid,
                ptid: ppid,
                time: 0,
            },
            exited: false,
        };
        t.apply(50, fork(child, framelab));
        t.apply(60, fork(stranger, 5_000_099));
        t.apply(100, switch(0, true, child, "app"));
        t.apply(400, switch(child, true, stranger, "other"));
        t.apply(700, switch(stranger, true, child, "app"));
        t.apply(900, switch(child, false, 0, "swapper/0"));
        t.close_all(900);
        assert_eq!(
            slices(&t),
            [(100, 300, 0, ""), (400, 0, 300, "other"), (700, 200, 0, "")]
        );
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
        assert_eq!(
            slices(&t),
            vec![
                (100, 200, 0, ""),
                (300, 0, 400, "hog"),
                (700, 100, 0, ""),
                // Blocked 800-900 is no slice; woken at 900 on an idle CPU.
                (900, 0, 50, "swapper/0"),
            ]
        );
    }

    /// A thread preempted while it exits, after its process released its id: the kernel's
    /// record of its return to the CPU gives no id (-1), its last switch out names it. The
    /// return is its, not a thread -1's that runs to the end of the run.
    #[test]
    fn an_exiting_threads_return_with_no_id_is_the_next_switch_outs() {
        let mut t = cgroup_trace();
        t.apply(100, switch_in(7));
        t.apply(300, switch(7, true, 50, "hog"));
        t.apply(700, switch_in(NO_ID));
        let mut exits = switch(7, false, 0, "swapper/0");
        if let Event::Switch { prev_exited, .. } = &mut exits {
            *prev_exited = true;
        }
        t.apply(800, exits);
        t.close_all(2000);
        assert_eq!(
            slices(&t),
            vec![(100, 200, 0, ""), (300, 0, 400, "hog"), (700, 100, 0, "")]
        );
        assert_eq!((t.switch_outs, t.unseen_returns), (2, 0));
    }

    /// The same schedule as the kernel gives it for the run's cgroup: no switch out of the
    /// hog or the idle task (neither is the run's), a switch-in record for each return of
    /// the run's thread instead, and the wakeup from the idle CPU. The slices are the same.
    #[test]
    fn the_cgroups_switch_in_records_give_the_same_slices() {
        let mut t = cgroup_trace();
        t.apply(100, switch_in(7));
        t.apply(300, switch(7, true, 50, "hog"));
        t.apply(700, switch_in(7));
        t.apply(800, switch(7, false, 0, "swapper/0"));
        t.apply(
            900,
            Event::Wakeup {
                tid: 7,
                target_cpu: 0,
            },
        );
        t.apply(950, switch_in(7));
        assert_eq!(
            slices(&t),
            vec![
                (100, 200, 0, ""),
                (300, 0, 400, "hog"),
                (700, 100, 0, ""),
                (900, 0, 50, "swapper/0"),
            ]
        );
        assert_eq!((t.switch_outs, t.unseen_returns), (2, 0));
    }

    /// Only threads the switches showed are the run's: a wakeup of any other task leaves
    /// nothing, nor one of a thread that exited (its id may be reused outside the run).
    #[test]
    fn with_the_cgroup_only_threads_seen_to_switch_are_woken() {
        let mut t = cgroup_trace();
        let wake = |tid| Event::Wakeup { tid, target_cpu: 0 };
        t.apply(100, wake(5));
        t.apply(200, switch_in(7));
        t.apply(
            300,
            Event::Switch {
                cpu: 0,
                prev: 7,
                prev_comm: comm("app"),
                prev_runnable: false,
                prev_exited: true,
                next: 0,
                next_comm: comm("swapper/0"),
            },
        );
        t.apply(400, wake(7));
        t.close_all(1000);
        assert_eq!(slices(&t), vec![(200, 100, 0, "")]);
    }

    /// A thread of the run woken while another of its threads holds the CPU waits for that
    /// one, named as it was when it last left a CPU.
    #[test]
    fn with_the_cgroup_a_wait_for_a_thread_of_the_run_names_it() {
        let mut t = cgroup_trace();
        t.apply(100, switch_in(8));
        t.apply(
            150,
            Event::Switch {
                cpu: 0,
                prev: 8,
                prev_comm: comm("encoder"),
                prev_runnable: true,
                prev_exited: false,
                next: 7,
                next_comm: comm("app"),
            },
        );
        t.apply(150, switch_in(7));
        t.apply(200, switch(7, false, 8, "encoder"));
        t.apply(200, switch_in(8));
        t.apply(
            250,
            Event::Wakeup {
                tid: 7,
                target_cpu: 0,
            },
        );
        t.apply(400, switch(8, false, 7, "app"));
        t.apply(400, switch_in(7));
        let all = slices(&t);
        assert!(all.contains(&(250, 0, 150, "encoder")), "{all:?}");
    }

    #[test]
    fn tasks_outside_the_run_leave_no_slices() {
        let mut t = trace_of(&[]);
        let Scope::Everyone(members) = &mut t.scope else {
            unreachable!()
        };
        members.set(5, false);
        members.set(6, false);
        t.apply(100, switch(5, true, 6, "x"));
        t.apply(200, switch(6, false, 5, "y"));
        assert!(t.slices.is_empty());
    }

    #[test]
    fn a_sample_record_decodes_with_the_layout_of_the_format_file() {
        let mut raw = vec![0u8; 64];
        raw[0..2].copy_from_slice(&1u16.to_ne_bytes());
        raw[8..11].copy_from_slice(b"app");
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
        let record = record(b::PERF_RECORD_SAMPLE, 0, &body);
        let Some(Decoded::Event(time, event)) = decode(&record, &layout()) else {
            panic!("not decoded")
        };
        assert_eq!(time, 1234);
        // prev_state 0x100 is the kernel's "R+": preempted, still runnable.
        assert_eq!(
            event,
            Event::Switch {
                cpu: 1,
                prev: 7,
                prev_comm: comm("app"),
                prev_runnable: true,
                prev_exited: false,
                next: 9,
                next_comm: comm("hog"),
            }
        );
    }

    /// A context-switch record with `sample_id_all` (pid, tid, time, CPU): a switch in
    /// is the incoming task's; a switch out is left to the tracepoint.
    #[test]
    fn a_switch_in_record_decodes_and_a_switch_out_record_is_skipped() {
        let mut body = Vec::new();
        body.extend(50u32.to_ne_bytes());
        body.extend(51u32.to_ne_bytes());
        body.extend(6u32.to_ne_bytes());
        body.extend(7u32.to_ne_bytes());
        body.extend(4321u64.to_ne_bytes());
        body.extend(1u32.to_ne_bytes());
        body.extend(0u32.to_ne_bytes());
        let kind = b::PERF_RECORD_SWITCH_CPU_WIDE;
        let Some(Decoded::Event(time, event)) = decode(&record(kind, 0, &body), &layout()) else {
            panic!("not decoded")
        };
        assert_eq!((time, event), (4321, Event::SwitchIn { cpu: 1, tid: 7 }));
        let out = record(kind, b::PERF_RECORD_MISC_SWITCH_OUT as u16, &body);
        assert!(decode(&out, &layout()).is_none());
    }

    fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut record = Vec::new();
        record.extend(kind.to_ne_bytes());
        record.extend(misc.to_ne_bytes());
        record.extend(((8 + body.len()) as u16).to_ne_bytes());
        record.extend(body);
        record
    }
}
