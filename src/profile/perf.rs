//! Opening sampling events with `perf_event_open` and reading their ring buffers.
//!
//! The system call and the `perf_event_attr` layout come from `perf-event-open-sys` (thin,
//! kept in step with the kernel's headers by the `perf-event` project); the ring reading is
//! a few lines on top of it, so no higher-level crate's idea of one event per counter gets
//! in the way of what framelab needs: one ring per CPU that every thread's event writes to
//! (`PERF_EVENT_IOC_SET_OUTPUT`), events inherited by every child and thread.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use perf_event_open_sys as sys;
use sys::bindings as b;

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

pub fn paranoid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

fn read_proc_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

/// Opens one event for thread `tid` on `cpu`. Errors are the system call's.
pub fn open(spec: &EventSpec, tid: i32, cpu: i32) -> io::Result<OwnedFd> {
    if let Some(errno) = simulated_refusal() {
        return Err(io::Error::from_raw_os_error(errno));
    }
    let mut attr = spec.attr();
    // SAFETY: a valid attr; the returned descriptor is ours.
    let fd =
        unsafe { sys::perf_event_open(&mut attr, tid, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as u64) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `FRAMELAB_TEST_PERF_ERRNO=13`: behave as if the kernel refused with that errno, so the
/// refusal path is tested on machines that allow profiling.
fn simulated_refusal() -> Option<i32> {
    std::env::var("FRAMELAB_TEST_PERF_ERRNO")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// Sends `fd`'s records to `target`'s ring (both on the same CPU).
pub fn redirect(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // SAFETY: two perf event descriptors we own.
    if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn enable(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: a perf event descriptor we own.
    if unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn disable(fd: &OwnedFd) {
    // SAFETY: a perf event descriptor we own.
    unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
}

/// The ring buffer of one event: a metadata page, then `2^n` data pages.
pub struct Ring {
    base: *mut u8,
    len: usize,
    data_size: u64,
    // Owned so the mapping's event outlives it.
    fd: OwnedFd,
}

// SAFETY: the mapping is only read and its tail written through &mut self.
unsafe impl Send for Ring {}

impl Ring {
    pub fn map(fd: OwnedFd, data_pages: usize) -> io::Result<Ring> {
        let page = page_size();
        let len = page * (1 + data_pages);
        // SAFETY: mapping a perf event descriptor as the kernel documents.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            base: base as *mut u8,
            len,
            data_size: (page * data_pages) as u64,
            fd,
        })
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: data_head is a u64 at offset 1024 of the metadata page.
        unsafe { &*(self.base.add(1024) as *const AtomicU64) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: data_tail is a u64 at offset 1032 of the metadata page.
        unsafe { &*(self.base.add(1032) as *const AtomicU64) }
    }

    /// Appends every complete record written since the last call to `out`, each as its
    /// bytes (header included), and frees their space.
    pub fn drain(&mut self, out: &mut Vec<Vec<u8>>) {
        let head = self.head().load(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        // SAFETY: the data area follows the metadata page.
        let data = unsafe { self.base.add(page_size()) };
        while tail + 8 <= head {
            let mut header = [0u8; 8];
            self.copy(data, tail, &mut header);
            let size = u16::from_ne_bytes([header[6], header[7]]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            let mut record = vec![0u8; size as usize];
            self.copy(data, tail, &mut record);
            out.push(record);
            tail += size;
        }
        fence(Ordering::Release);
        self.tail().store(tail, Ordering::Release);
    }

    fn copy(&self, data: *const u8, at: u64, into: &mut [u8]) {
        let start = (at % self.data_size) as usize;
        let first = into.len().min(self.data_size as usize - start);
        // SAFETY: both ranges lie inside the data area, which wraps at data_size.
        unsafe {
            std::ptr::copy_nonoverlapping(data.add(start), into.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, into.as_mut_ptr().add(first), into.len() - first);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping what `map` mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// CPUs events are opened on: every possible one (a thread may move to any).
pub fn cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, z) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(z)) = (a.parse::<i32>(), z.parse::<i32>()) {
            cpus.extend(a..=z);
        }
    }
    if cpus.is_empty() {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
        cpus.extend(0..n as i32);
    }
    cpus
}
