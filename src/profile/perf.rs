//! The sampling event of `--profile`: what each sample carries and how it is opened, on the
//! shared perf-event layer (`crate::perf_event`: the system call, the rings). Events are
//! inherited by every child and thread; one ring per CPU takes every thread's samples.

use std::io;
use std::os::fd::OwnedFd;

use crate::perf_event::bindings as b;
use crate::perf_event::read_proc_number;
pub use crate::perf_event::{cpus, disable, enable, paranoid, redirect, Ring};

/// What each sample carries. Records other than samples carry TID, TIME and CPU too
/// (`sample_id_all`), so every record can be put in time order.
pub const SAMPLE_TYPE: u64 = (b::PERF_SAMPLE_IP
    | b::PERF_SAMPLE_TID
    | b::PERF_SAMPLE_TIME
    | b::PERF_SAMPLE_CPU
    | b::PERF_SAMPLE_CALLCHAIN) as u64;
/// Added for DWARF unwinding: the user registers and a copy of the user stack.
pub const SAMPLE_TYPE_DWARF: u64 =
    SAMPLE_TYPE | (b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER) as u64;

/// x86-64 registers framehop needs: bp (6), sp (7), ip (8), in the kernel's numbering.
#[cfg(target_arch = "x86_64")]
pub const REGS_USER_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
#[cfg(not(target_arch = "x86_64"))]
pub const REGS_USER_MASK: u64 = 0;

/// The event sampled: CPU cycles where the machine has a PMU, the cpu-clock timer where it
/// has none (most VMs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Cycles,
    CpuClock,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Cycles => "cycles",
            Event::CpuClock => "cpu-clock",
        }
    }
}

/// How one event is opened.
#[derive(Clone, Copy, Debug)]
pub struct EventSpec {
    pub event: Event,
    pub hz: u64,
    pub kernel: bool,
    /// Bytes of user stack copied per sample (0: frame pointers only).
    pub stack_bytes: u32,
    /// Ask for each mapped file's build id (Linux 5.12 and later), to tell a binary
    /// replaced during the run.
    pub build_id: bool,
}

impl EventSpec {
    fn attr(&self) -> b::perf_event_attr {
        // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
        let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
        attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
        (attr.type_, attr.config) = match self.event {
            Event::Cycles => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CPU_CYCLES as u64),
            Event::CpuClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CPU_CLOCK as u64),
        };
        attr.__bindgen_anon_1.sample_freq = self.hz;
        attr.set_freq(1);
        attr.sample_type = if self.stack_bytes > 0 {
            SAMPLE_TYPE_DWARF
        } else {
            SAMPLE_TYPE
        };
        if self.stack_bytes > 0 {
            attr.sample_regs_user = REGS_USER_MASK;
            attr.sample_stack_user = self.stack_bytes;
        }
        attr.set_disabled(1);
        attr.set_inherit(1);
        attr.set_mmap(1);
        attr.set_mmap2(1);
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
        attr.set_sample_id_all(1);
        attr.set_build_id(u64::from(self.build_id));
        attr.set_exclude_hv(1);
        attr.set_exclude_kernel(u64::from(!self.kernel));
        attr.set_exclude_callchain_kernel(u64::from(!self.kernel));
        // Samples are timed on CLOCK_MONOTONIC, the clock of every span.
        attr.set_use_clockid(1);
        attr.clockid = libc::CLOCK_MONOTONIC;
        attr.sample_max_stack = max_stack() as u16;
        attr
    }
}

/// The deepest call chain the kernel records (`kernel.perf_event_max_stack`, 127 by default).
pub fn max_stack() -> u32 {
    read_proc_number("/proc/sys/kernel/perf_event_max_stack")
        .map_or(127, |n| n.clamp(1, u16::MAX as u64) as u32)
}

/// The highest sampling rate the kernel allows (`kernel.perf_event_max_sample_rate`).
pub fn max_sample_rate() -> Option<u64> {
    read_proc_number("/proc/sys/kernel/perf_event_max_sample_rate")
}

/// Opens one event for thread `tid` on `cpu`. Errors are the system call's.
pub fn open(spec: &EventSpec, tid: i32, cpu: i32) -> io::Result<OwnedFd> {
    crate::perf_event::open(&mut spec.attr(), tid, cpu)
}
