//! Sampling the processes of a run while it goes: events attached to each process's
//! threads on every CPU (inherited by the threads and children they create), one ring per
//! CPU drained on a thread of its own every few milliseconds. Addresses are resolved to
//! file offsets as the samples come (the processes may be gone at the end); symbols are
//! looked up once the run has ended (`symbols`).

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::maps::{Location, Maps};
use super::perf::{self, Event, EventSpec, Ring};
use super::records::{self, Record};
use super::unwind::Unwinding;
use crate::perf_event::refusal;

/// What `--profile` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProfileOptions {
    pub hz: u64,
    pub call_graph: CallGraph,
}

/// How user stacks are walked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallGraph {
    /// The top of the user stack is copied with each sample and unwound with the binaries'
    /// DWARF unwind tables (works without frame pointers); the frame-pointer chain is kept
    /// where it is longer
    #[default]
    Dwarf,
    /// The kernel follows frame pointers (cheapest; stacks of code built without them
    /// miss callers)
    Fp,
}

/// Bytes of user stack copied per sample with `--call-graph dwarf`; deeper stacks lose
/// their outermost frames (counted as truncated). 32 KiB up to 1 kHz (video encoders keep
/// big buffers on the stack: 8 KiB, perf's default, cut 5% of the demo's stacks), 8 KiB
/// above, where copying 32 KiB per sample would cost too much.
fn stack_copy_bytes(hz: u64) -> u32 {
    if hz <= 1000 {
        32 * 1024
    } else {
        8 * 1024
    }
}

/// One sample before symbols: its raw stack is an index into `Recording::stacks`.
#[derive(Clone, Copy, Debug)]
pub struct RawSample {
    pub mono_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub stack: u32,
}

/// What the sampling left when it stopped.
pub struct Recording {
    pub spec: EventSpec,
    pub samples: Vec<RawSample>,
    /// Distinct stacks, root first, each address resolved to where it points.
    pub stacks: Vec<Vec<Location>>,
    pub maps: Maps,
    pub lost: u64,
    pub throttled: u64,
    /// Samples whose chain reached the kernel's depth limit (their roots are missing).
    pub truncated: u64,
    /// Why kernel stacks are missing, when they are.
    pub notes: Vec<String>,
}

struct State {
    spec: EventSpec,
    /// One ring per CPU: the first event opened there; every later one writes into it.
    rings: HashMap<i32, Ring>,
    /// Data pages of each new ring: `ring_pages`, or fewer where the kernel refused that
    /// much locked memory (an unprivileged user: kernel.perf_event_mlock_kb).
    ring_pages: usize,
    /// Events redirected into a ring (kept open: closing one stops its sampling).
    others: Vec<OwnedFd>,
    cpus: Vec<i32>,
    attached: HashSet<u32>,
    maps: Maps,
    stack_ids: HashMap<Vec<Location>, u32>,
    stacks: Vec<Vec<Location>>,
    samples: Vec<RawSample>,
    lost: u64,
    throttled: u64,
    truncated: u64,
    max_stack: usize,
    scratch: Vec<Vec<u8>>,
    /// With `--call-graph dwarf`.
    unwinding: Option<Unwinding>,
}

/// What a run needs of its profiler once the command runs: more processes sampled as they
/// are found (services, watched ones), what to tell the user, and what was recorded once
/// the command has ended. `Profiler` is the real one; the supervisor's tests stand a
/// scripted one in for it (`session/executor_mock.rs`).
pub trait RunProfiler {
    /// Samples `pid` too, with its threads and children.
    fn attach(&self, pid: u32);
    /// What the run should be told about the profile (kernel stacks refused...).
    fn notes(&self) -> &[String];
    /// Stops sampling and hands over what was recorded.
    fn finish(self: Box<Self>) -> Recording;
}

impl RunProfiler for Profiler {
    fn attach(&self, pid: u32) {
        Profiler::attach(self, pid)
    }

    fn notes(&self) -> &[String] {
        Profiler::notes(self)
    }

    fn finish(self: Box<Self>) -> Recording {
        Profiler::finish(*self)
    }
}

#[cfg(test)]
impl Recording {
    /// A recording of these samples, each with an empty stack, sampled as `spec` says: for
    /// a scripted profiler, which samples nothing real.
    pub fn scripted(hz: u64, samples: Vec<RawSample>, notes: Vec<String>) -> Recording {
        let spec = EventSpec {
            event: Event::CpuClock,
            hz,
            kernel: false,
            stack_bytes: 0,
            build_id: false,
        };
        Recording {
            spec,
            samples,
            stacks: vec![Vec::new()],
            maps: Maps::default(),
            lost: 0,
            throttled: 0,
            truncated: 0,
            notes,
        }
    }
}

pub struct Profiler {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    drainer: Option<JoinHandle<()>>,
    notes: Vec<String>,
}

impl Profiler {
    /// Opens the first events on `pid`'s threads, choosing the event and whether kernel
    /// stacks can be had. `Err` is the line to print: the run goes on unprofiled.
    pub fn start(options: ProfileOptions, pid: u32) -> Result<Profiler, String> {
        let cpus = perf::cpus();
        let mut notes = Vec::new();
        let dwarf = options.call_graph == CallGraph::Dwarf && perf::REGS_USER_MASK != 0;
        let mut spec = EventSpec {
            event: Event::Cycles,
            hz: options.hz,
            kernel: true,
            stack_bytes: if dwarf {
                stack_copy_bytes(options.hz)
            } else {
                0
            },
            build_id: true,
        };
        // Children forked from here on inherit the events; those forked before are
        // attached on their own (listed first: a child is missed rather than sampled twice).
        let earlier_children = children(pid);
        // Probe on the first CPU: the event the machine has, kernel stacks if allowed.
        let probe = loop {
            match perf::open(&spec, pid as i32, cpus[0]) {
                Ok(fd) => break fd,
                // A kernel before 5.12 knows no build ids in mapping records.
                Err(e) if spec.build_id && e.raw_os_error() == Some(libc::EINVAL) => {
                    spec.build_id = false;
                }
                Err(e)
                    if spec.event == Event::Cycles
                        && matches!(
                            e.raw_os_error(),
                            Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL)
                        ) =>
                {
                    // No hardware PMU (most VMs): the kernel's CPU clock timer samples instead.
                    spec.event = Event::CpuClock;
                }
                Err(e)
                    if spec.kernel
                        && matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) =>
                {
                    spec.kernel = false;
                    notes.push(format!(
                        "kernel stacks are not sampled: {}",
                        refusal(&e)
                            .replace("perf_event_open was refused", "refused for the kernel")
                    ));
                }
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                    return Err("the command exited before profiling could begin".to_owned())
                }
                Err(e) => return Err(refusal(&e)),
            }
        };
        let pages = ring_pages(spec.stack_bytes, cpus.len());
        let state = State {
            spec,
            rings: HashMap::new(),
            ring_pages: pages,
            others: Vec::new(),
            cpus: cpus.clone(),
            attached: HashSet::new(),
            maps: Maps::default(),
            stack_ids: HashMap::new(),
            stacks: Vec::new(),
            samples: Vec::new(),
            lost: 0,
            throttled: 0,
            truncated: 0,
            max_stack: perf::max_stack() as usize,
            scratch: Vec::new(),
            unwinding: dwarf.then(Unwinding::default),
        };
        let state = Arc::new(Mutex::new(state));
        {
            let mut s = state.lock().unwrap();
            let full = s.ring_pages;
            s.adopt(probe, cpus[0]).map_err(|e| {
                format!(
                    "cannot map the sampling ring ({e}): run as root, or raise the locked \
                     memory the kernel allows (sudo sysctl kernel.perf_event_mlock_kb=8196)"
                )
            })?;
            if s.ring_pages < full {
                let kib = |pages: usize| pages * crate::perf_event::page_size() / 1024;
                notes.push(format!(
                    "the sampling ring of each CPU is {} KiB, not {} KiB: the kernel allows this \
                     user no more locked memory (kernel.perf_event_mlock_kb is {}); samples may \
                     be lost (their count is in the profile), where raising it \
                     (sudo sysctl kernel.perf_event_mlock_kb={}) or recording with framelab run \
                     --call-graph fp would keep them",
                    kib(s.ring_pages),
                    kib(full),
                    std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
                        .map_or("unknown".to_owned(), |t| t.trim().to_owned()),
                    kib(full) + 4
                ));
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let drainer = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::Builder::new()
                .name("framelab-profile".into())
                .spawn(move || drain_loop(&state, &stop))
                .map_err(|e| format!("cannot start the profiling thread: {e}"))?
        };
        let profiler = Profiler {
            state,
            stop,
            drainer: Some(drainer),
            notes,
        };
        // The rest of the first thread's CPUs, then its other threads and children.
        profiler.attach_first(pid, &cpus[1..]);
        for child in earlier_children {
            profiler.attach_tree(child);
        }
        Ok(profiler)
    }

    fn attach_first(&self, pid: u32, cpus: &[i32]) {
        let mut s = self.state.lock().unwrap();
        for &cpu in cpus {
            if let Ok(fd) = perf::open(&s.spec, pid as i32, cpu) {
                let _ = s.adopt(fd, cpu);
            }
        }
        let threads: Vec<u32> = tasks(pid).into_iter().filter(|&t| t != pid).collect();
        s.attach_threads(&threads);
        s.attached.insert(pid);
        s.maps.read_proc(pid);
        s.enable_all();
    }

    /// Samples `pid` too (a service, a watched process), with its threads and the children
    /// it already has; nothing if it is sampled already (directly or as a descendant).
    pub fn attach(&self, pid: u32) {
        if !self.state.lock().unwrap().covers(pid) {
            self.attach_tree(pid);
        }
    }

    /// `pid` and the children it has now: those forked before its events were opened
    /// did not inherit them.
    fn attach_tree(&self, pid: u32) {
        // Listed before the events open, as in `start`.
        let earlier_children = children(pid);
        {
            let mut s = self.state.lock().unwrap();
            if !s.attached.insert(pid) {
                return;
            }
            s.attach_threads(&tasks(pid));
            s.maps.read_proc(pid);
            s.enable_all();
        }
        for child in earlier_children {
            self.attach_tree(child);
        }
    }

    /// What the run should be told about the profile (kernel stacks refused...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Stops sampling and hands over what was recorded.
    pub fn finish(mut self) -> Recording {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.drainer.take() {
            let _ = t.join();
        }
        let mut s = self.state.lock().unwrap();
        for ring in s.rings.values() {
            perf::disable(ring.fd());
        }
        for fd in &s.others {
            perf::disable(fd);
        }
        s.drain();
        s.samples.sort_by_key(|x| x.mono_ns);
        Recording {
            spec: s.spec,
            samples: std::mem::take(&mut s.samples),
            stacks: std::mem::take(&mut s.stacks),
            maps: std::mem::take(&mut s.maps),
            lost: s.lost,
            throttled: s.throttled,
            truncated: s.truncated,
            notes: std::mem::take(&mut self.notes),
        }
    }
}

impl Drop for Profiler {
    /// A profiler dropped unfinished (the command could not start) stops its thread.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.drainer.take() {
            let _ = t.join();
        }
    }
}

fn drain_loop(state: &Mutex<State>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        state.lock().unwrap().drain();
    }
}

/// Pages of each CPU's ring: 1 MiB, 10 ms of samples at 4 kHz with deep stacks many
/// times over. With stack copies, 64 MiB shared by the CPUs, between 8 and 32 MiB each: the
/// first sample of a module waits for its unwind tables to load (250 ms for a program with
/// a 23 MB debug library, on the 2-core VM), and 8 MiB there lost 300-600 of ~3,700
/// samples at 5 kHz on two CPUs; 32 MiB lost none.
fn ring_pages(stack_bytes: u32, cpus: usize) -> usize {
    if stack_bytes == 0 {
        return 256;
    }
    let page = crate::perf_event::page_size();
    let pages = ((64 << 20) / cpus.max(1) / page).clamp((8 << 20) / page, (32 << 20) / page);
    // The kernel wants a power of two: the one at or below.
    1 << pages.ilog2()
}

impl State {
    fn adopt(&mut self, fd: OwnedFd, cpu: i32) -> io::Result<()> {
        match self.rings.get(&cpu) {
            Some(ring) => {
                perf::redirect(&fd, ring.fd())?;
                self.others.push(fd);
            }
            None => {
                // Halved while the kernel refuses the locked memory, down to 64 KiB.
                let ring = loop {
                    match Ring::map(fd.try_clone()?, self.ring_pages) {
                        Err(e) if e.raw_os_error() == Some(libc::EPERM) && self.ring_pages > 16 => {
                            self.ring_pages /= 2;
                        }
                        mapped => break mapped?,
                    }
                };
                self.rings.insert(cpu, ring);
            }
        }
        Ok(())
    }

    fn attach_threads(&mut self, tids: &[u32]) {
        for &tid in tids {
            for cpu in self.cpus.clone() {
                // A thread that ended meanwhile (ESRCH) is simply not sampled.
                if let Ok(fd) = perf::open(&self.spec, tid as i32, cpu) {
                    let _ = self.adopt(fd, cpu);
                }
            }
        }
    }

    fn enable_all(&self) {
        for ring in self.rings.values() {
            let _ = perf::enable(ring.fd());
        }
        for fd in &self.others {
            let _ = perf::enable(fd);
        }
    }

    /// Whether `pid` or one of its ancestors is attached (then inheritance covers it).
    fn covers(&self, pid: u32) -> bool {
        let mut at = pid;
        for _ in 0..64 {
            if self.attached.contains(&at) {
                return true;
            }
            match parent(at) {
                Some(p) if p > 1 => at = p,
                _ => return false,
            }
        }
        false
    }

    fn drain(&mut self) {
        let mut raw = std::mem::take(&mut self.scratch);
        let mut cpus: Vec<i32> = self.rings.keys().copied().collect();
        cpus.sort_unstable();
        for cpu in cpus {
            if let Some(ring) = self.rings.get_mut(&cpu) {
                ring.drain(&mut raw);
            }
        }
        let sample_type = if self.spec.stack_bytes > 0 {
            perf::SAMPLE_TYPE_DWARF
        } else {
            perf::SAMPLE_TYPE
        };
        let regs = perf::REGS_USER_MASK.count_ones() as usize;
        let mut decoded: Vec<(u64, Record)> = raw
            .drain(..)
            .filter_map(|r| records::decode(&r, sample_type, regs))
            .map(|r| (time_of(&r), r))
            .collect();
        self.scratch = raw;
        // Across CPUs in time order: an exec on one CPU before the samples after it on another.
        decoded.sort_by_key(|(t, _)| *t);
        for (_, record) in decoded {
            self.apply(record);
        }
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Sample(s) => self.sample(s),
            Record::Mmap {
                pid,
                start,
                len,
                pgoff,
                path,
                build_id,
                ..
            } => self.maps.add(pid, start, len, pgoff, &path, &build_id),
            Record::Exec { pid, .. } => self.maps.exec(pid),
            Record::Fork { pid, ppid, .. } => self.maps.fork(pid, ppid),
            Record::Lost { count } => self.lost += count,
            Record::Throttle => self.throttled += 1,
        }
    }

    fn sample(&mut self, s: records::Sample) {
        let (kernel, user_fp, addresses) = split_chain(&s);
        let mut truncated = addresses >= self.max_stack;
        let user = match &mut self.unwinding {
            Some(unwinding) if !s.stack.is_empty() => {
                let maps = &self.maps;
                let (dwarf, past_copy) = unwinding.unwind(
                    s.pid,
                    maps.generation(s.pid),
                    || maps.exec_mappings(s.pid),
                    &s.regs,
                    &s.stack,
                );
                // The frame-pointer chain where DWARF found less (code without unwind tables).
                if dwarf.len() >= user_fp.len() {
                    // Cut only if the copy was full: a shorter one held the whole stack.
                    truncated = past_copy && s.stack.len() >= self.spec.stack_bytes as usize;
                    dwarf
                } else {
                    user_fp
                }
            }
            _ => user_fp,
        };
        if truncated {
            self.truncated += 1;
        }
        // Leaf first, then reversed: root first, as stacks are stored.
        let mut locations: Vec<Location> = kernel.into_iter().map(Location::Kernel).collect();
        locations.extend(user.iter().map(|&a| self.maps.locate(s.pid, a)));
        // An outermost "caller" in no mapping is a word of the stack read as a return
        // address where the walk went past the real frames (a value, not code).
        while locations.len() > 1 && matches!(locations.last(), Some(Location::Unmapped(_))) {
            locations.pop();
        }
        locations.reverse();
        let next = self.stacks.len() as u32;
        let stack = match self.stack_ids.get(&locations) {
            Some(&id) => id,
            None => {
                self.stack_ids.insert(locations.clone(), next);
                self.stacks.push(locations);
                next
            }
        };
        self.samples.push(RawSample {
            mono_ns: s.time,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            stack,
        });
    }
}

/// A sample's call chain as kernel and user lookup addresses, leaf first (a caller's
/// return address less one: the call is the instruction before), and how many addresses
/// the chain held.
fn split_chain(s: &records::Sample) -> (Vec<u64>, Vec<u64>, usize) {
    let single = [s.ip];
    let chain: &[u64] = if s.callchain.is_empty() {
        &single
    } else {
        &s.callchain
    };
    let (mut kernel, mut user) = (Vec::new(), Vec::new());
    let mut in_kernel = false;
    let mut first_in_context = true;
    let mut addresses = 0;
    for &entry in chain {
        if entry >= records::CONTEXT_MAX {
            in_kernel = entry == records::CONTEXT_KERNEL;
            first_in_context = true;
            continue;
        }
        addresses += 1;
        let addr = if first_in_context {
            entry
        } else {
            entry.saturating_sub(1)
        };
        first_in_context = false;
        if in_kernel {
            kernel.push(addr);
        } else {
            user.push(addr);
        }
    }
    (kernel, user, addresses)
}

fn time_of(record: &Record) -> u64 {
    match record {
        Record::Sample(s) => s.time,
        Record::Mmap { time, .. } | Record::Exec { time, .. } | Record::Fork { time, .. } => *time,
        Record::Lost { .. } | Record::Throttle => 0,
    }
}

/// The threads of `pid` now.
fn tasks(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The children of every thread of `pid` now.
fn children(pid: u32) -> Vec<u32> {
    tasks(pid)
        .into_iter()
        .flat_map(|tid| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's closing parenthesis: state, then ppid.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::ring_pages;

    #[test]
    fn stack_copies_share_64_mib_of_rings_between_8_and_32_each() {
        let mib = |pages: usize| (pages * crate::perf_event::page_size()) >> 20;
        assert_eq!(mib(ring_pages(8192, 2)), 32);
        assert_eq!(
            mib(ring_pages(8192, 3)),
            16,
            "21 MiB rounds down to a power of two"
        );
        assert_eq!(mib(ring_pages(8192, 16)), 8);
        assert_eq!(mib(ring_pages(8192, 128)), 8);
        assert_eq!(mib(ring_pages(0, 2)), 1);
    }
}
