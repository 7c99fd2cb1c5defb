//! What one probe hit costs the probed thread, measured on this machine before the run.
//!
//! The cost depends on the probed function's first instruction: a 5-byte nop lets the
//! kernel jump to a trampoline, `push` is emulated, and anything else is single-stepped (on
//! a VM a trap to the hypervisor, ten times dearer). So framelab carries one tiny function
//! per kind of first instruction (below, in assembly, so no compiler changes them), probes
//! each one at its entry and return in its own process, calls it many times with and
//! without the probes, and takes the difference per call. The span the probes record
//! around such an empty function is the part of that cost that falls inside every span
//! (the entry trap's tail and the return trap's head): the recorder subtracts it.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::uprobe::Pmu;
use crate::perf_event::{self, Ring};

/// What the kernel does at a probed instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstructionClass {
    /// `nopl 0x0(%rax,%rax,1)`: replaced by a call into a trampoline (kernels 6.18+).
    Nop5,
    /// `nop`: what `<sys/sdt.h>` puts at a USDT probe; emulated.
    Nop1,
    /// `push %reg`: emulated by the kernel, no single step.
    Push,
    /// `endbr64` (functions built with CET protection, Debian's default).
    Endbr64,
    /// Anything else: executed out of line by single-stepping.
    #[default]
    SingleStep,
}

impl InstructionClass {
    pub const ALL: [InstructionClass; 5] = [
        InstructionClass::Nop5,
        InstructionClass::Nop1,
        InstructionClass::Push,
        InstructionClass::Endbr64,
        InstructionClass::SingleStep,
    ];

    /// The class of the instruction `bytes` starts with.
    pub fn of(bytes: &[u8]) -> InstructionClass {
        match bytes {
            [0x0f, 0x1f, 0x44, 0x00, 0x00, ..] => InstructionClass::Nop5,
            [0x90, ..] => InstructionClass::Nop1,
            [0x50..=0x57, ..] | [0x41, 0x50..=0x57, ..] => InstructionClass::Push,
            [0xf3, 0x0f, 0x1e, 0xfa, ..] => InstructionClass::Endbr64,
            _ => InstructionClass::SingleStep,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            InstructionClass::Nop5 => "5-byte nop, trampoline",
            InstructionClass::Nop1 => "nop, emulated",
            InstructionClass::Push => "push, emulated",
            InstructionClass::Endbr64 => "endbr64",
            InstructionClass::SingleStep => "single-stepped",
        }
    }

    /// The calibration function of this class.
    fn sample(self) -> unsafe extern "C" fn() {
        match self {
            InstructionClass::Nop5 => framelab_cost_nop5,
            InstructionClass::Nop1 => framelab_cost_nop1,
            InstructionClass::Push => framelab_cost_push,
            InstructionClass::Endbr64 => framelab_cost_endbr64,
            InstructionClass::SingleStep => framelab_cost_lea,
        }
    }
}

// One function per class, each starting with the instruction of its class.
std::arch::global_asm!(
    ".pushsection .text.framelab_cost,\"ax\",@progbits",
    ".globl framelab_cost_nop5",
    ".type framelab_cost_nop5,@function",
    "framelab_cost_nop5:",
    ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
    "ret",
    ".size framelab_cost_nop5, .-framelab_cost_nop5",
    ".globl framelab_cost_nop1",
    ".type framelab_cost_nop1,@function",
    "framelab_cost_nop1:",
    "nop",
    "ret",
    ".size framelab_cost_nop1, .-framelab_cost_nop1",
    ".globl framelab_cost_push",
    ".type framelab_cost_push,@function",
    "framelab_cost_push:",
    "push rbp",
    "pop rbp",
    "ret",
    ".size framelab_cost_push, .-framelab_cost_push",
    ".globl framelab_cost_endbr64",
    ".type framelab_cost_endbr64,@function",
    "framelab_cost_endbr64:",
    "endbr64",
    "ret",
    ".size framelab_cost_endbr64, .-framelab_cost_endbr64",
    ".globl framelab_cost_lea",
    ".type framelab_cost_lea,@function",
    "framelab_cost_lea:",
    "lea rax, [rip]",
    "ret",
    ".size framelab_cost_lea, .-framelab_cost_lea",
    // Two USDT-style sites one byte apart: a span from a begin probe to an end probe.
    ".globl framelab_cost_nop_pair",
    ".type framelab_cost_nop_pair,@function",
    "framelab_cost_nop_pair:",
    "nop",
    "nop",
    "ret",
    ".size framelab_cost_nop_pair, .-framelab_cost_nop_pair",
    ".popsection",
);

extern "C" {
    fn framelab_cost_nop5();
    fn framelab_cost_nop1();
    fn framelab_cost_push();
    fn framelab_cost_endbr64();
    fn framelab_cost_lea();
    fn framelab_cost_nop_pair();
}

/// How the probes of one option are placed on the code they watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// An entry probe alone (`--usdt-event`, `--frame-probe`).
    Entry,
    /// A function's entry and return (`--probe`): a span.
    Call,
    /// Two entry probes, the begin and the end of a span (`--usdt BEGIN,END`).
    Pair,
}

/// What one call through the probes costs, measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calibration {
    /// The probed thread's time per call (every hit of it), in ns.
    pub per_call_ns: i64,
    /// Of that, what lies between a span's two timestamps: the median span recorded
    /// around an empty function. `None` for an entry alone, or a pair of sites of a class
    /// framelab has no calibration function for.
    pub in_span_ns: Option<i64>,
}

/// Calls per measurement: enough to see µs per call, few enough to take milliseconds.
const CALLS: usize = 400;
/// Measurements kept per class: the least disturbed one counts.
const ROUNDS: usize = 3;

/// Cost of one call through probes of `shape` on an instruction of `class`, measured here
/// and now. `Err` is why it could not be measured.
pub fn measure(pmu: &Pmu, class: InstructionClass, shape: Shape) -> Result<Calibration, String> {
    // (function, the offsets of its probes in it and whether each is a return probe)
    let (function, probes): (unsafe extern "C" fn(), &[(u64, bool)]) = match shape {
        Shape::Entry => (class.sample(), &[(0, false)]),
        Shape::Call => (class.sample(), &[(0, false), (0, true)]),
        // `<sys/sdt.h>` puts a `nop` at each site: the only class a pair is measured for.
        Shape::Pair if class == InstructionClass::Nop1 => {
            (framelab_cost_nop_pair, &[(0, false), (1, false)])
        }
        Shape::Pair => {
            let entry = measure(pmu, class, Shape::Entry)?;
            return Ok(Calibration {
                per_call_ns: 2 * entry.per_call_ns,
                in_span_ns: None,
            });
        }
    };
    let (path, offset) = own_file_offset(function as usize)
        .ok_or("cannot find framelab's own code in /proc/self/maps")?;
    let call_all = || {
        let f = std::hint::black_box(function);
        let started = Instant::now();
        for _ in 0..CALLS {
            // SAFETY: the functions above take nothing, clobber only rax, and return.
            unsafe { f() };
        }
        started.elapsed().as_nanos() as i64
    };
    // Before the events exist: an opened uprobe traps at every call even while disabled.
    let plain = (0..ROUNDS).map(|_| call_all()).min().unwrap_or(0);
    // Opened as a run opens them (every task, one event per CPU, one ring per CPU that
    // the CPU's other events write into), so a hit takes the kernel the same path; the
    // rings are large enough for every sample of a round (writing them is part of a hit).
    let mut rings = Vec::new();
    let mut others = Vec::new();
    let mut ids = Vec::new();
    for cpu in perf_event::cpus() {
        let mut ring: Option<Ring> = None;
        for (index, &(delta, retprobe)) in probes.iter().enumerate() {
            let refusal = |e: std::io::Error| {
                super::uprobe::refusal(&e, "framelab's own calibration function")
            };
            let fd = pmu
                .open(&path, offset + delta, 0, retprobe, 0, -1, cpu)
                .map_err(refusal)?;
            ids.push((super::uprobe::id(&fd).map_err(refusal)?, index));
            match &ring {
                None => ring = Some(Ring::map(fd, 64).map_err(|e| format!("cannot map: {e}"))?),
                Some(target) => {
                    perf_event::redirect(&fd, target.fd()).map_err(|e| perf_event::refusal(&e))?;
                    others.push(fd);
                }
            }
        }
        rings.extend(ring);
    }
    for fd in rings.iter().map(Ring::fd).chain(&others) {
        perf_event::enable(fd).map_err(|e| perf_event::refusal(&e))?;
    }
    // An untimed round first: the kernel sets up its per-process probe state at the
    // first hits.
    call_all();
    // SAFETY: gettid has no preconditions.
    let own_tid = unsafe { libc::gettid() } as u32;
    let mut times: Vec<Vec<i64>> = vec![Vec::new(); probes.len()];
    let mut read_times = |rings: &mut [Ring], keep: bool| {
        for ring in rings.iter_mut() {
            ring.for_each(|record| {
                // Only this thread's calls: another framelab of the same file may be
                // calibrating too.
                let Some((id, tid, time)) = sample(record) else {
                    return;
                };
                let probe = ids.iter().find(|(i, _)| *i == id).map(|(_, p)| *p);
                if let (true, true, Some(probe)) = (keep, tid == own_tid, probe) {
                    times[probe].push(time);
                }
            });
        }
    };
    read_times(&mut rings, false);
    let mut probed = i64::MAX;
    for _ in 0..ROUNDS {
        probed = probed.min(call_all());
        read_times(&mut rings, true);
    }
    for fd in rings.iter().map(Ring::fd).chain(&others) {
        perf_event::disable(fd);
    }
    // This thread may have moved between CPUs: each probe's hits in time order.
    for t in &mut times {
        t.sort_unstable();
    }
    // A probe that did not fire on every call measured nothing.
    if let Some(hits) = times.iter().map(Vec::len).find(|&n| n != ROUNDS * CALLS) {
        return Err(format!(
            "the calibration probe ({}) fired {hits} times in {} calls",
            class.describe(),
            ROUNDS * CALLS
        ));
    }
    // Calls follow each other on this one thread: the Nth begin and the Nth end are one
    // call's.
    // The median of each round's spans, the least disturbed round's kept (as for the
    // cost per call): a loaded machine slows whole rounds.
    let in_span_ns = match &times[..] {
        [begins, ends] => {
            let spans: Vec<i64> = begins.iter().zip(ends).map(|(b, e)| e - b).collect();
            spans
                .chunks(CALLS)
                .map(|round| {
                    let mut round = round.to_vec();
                    round.sort_unstable();
                    round[round.len() / 2].max(0)
                })
                .min()
        }
        _ => None,
    };
    Ok(Calibration {
        per_call_ns: ((probed - plain) / CALLS as i64).max(0),
        in_span_ns,
    })
}

/// A uprobe sample's event id, thread and time (`super::uprobe::SAMPLE_TYPE`: id, pid and
/// tid, then time).
fn sample(record: &[u8]) -> Option<(u64, u32, i64)> {
    use crate::perf_event::{bindings as b, cursor};
    let (kind, _) = cursor::header(record)?;
    if kind != b::PERF_RECORD_SAMPLE {
        return None;
    }
    let mut c = cursor::Cursor::after_header(record);
    let id = c.u64();
    let (_pid, tid) = (c.u32(), c.u32());
    Some((id, tid, c.u64() as i64))
}

/// The file and file offset of code at `address` of this process.
fn own_file_offset(address: usize) -> Option<(std::path::PathBuf, u64)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        let _perms = fields.next()?;
        let pgoff = u64::from_str_radix(fields.next()?, 16).ok()?;
        let path = fields.nth(2)?;
        (start <= address && address < end && path.starts_with('/'))
            .then(|| (path.into(), (address - start) as u64 + pgoff))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_instructions_are_classed_by_their_bytes() {
        assert_eq!(
            InstructionClass::of(&[0x0f, 0x1f, 0x44, 0, 0, 0xc3]),
            InstructionClass::Nop5
        );
        assert_eq!(InstructionClass::of(&[0x55, 0x48]), InstructionClass::Push);
        assert_eq!(InstructionClass::of(&[0x41, 0x57]), InstructionClass::Push);
        assert_eq!(
            InstructionClass::of(&[0xf3, 0x0f, 0x1e, 0xfa]),
            InstructionClass::Endbr64
        );
        assert_eq!(
            InstructionClass::of(&[0x48, 0x8d, 0x05]),
            InstructionClass::SingleStep
        );
        assert_eq!(InstructionClass::of(&[]), InstructionClass::SingleStep);
    }

    #[test]
    fn each_calibration_function_starts_with_its_class() {
        for class in InstructionClass::ALL {
            let f = class.sample() as usize as *const u8;
            // SAFETY: reading the first bytes of our own code.
            let bytes = unsafe { std::slice::from_raw_parts(f, 5) };
            assert_eq!(InstructionClass::of(bytes), class);
            assert!(own_file_offset(f as usize).is_some());
        }
    }
}
