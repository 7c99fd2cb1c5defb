//! The one perf-event layer of framelab: opening events with `perf_event_open`, reading
//! their ring buffers, and saying in one line why the kernel refused. Sampled profiles
//! (`crate::profile`) and scheduler tracing (`crate::sched`) both open their events here.
//!
//! The system call and the `perf_event_attr` layout come from `perf-event-open-sys` (thin,
//! kept in step with the kernel's headers by the `perf-event` project); the ring reading is
//! a few lines on top of it, so no higher-level crate's idea of one event per counter gets
//! in the way of what framelab needs: one ring per CPU that several events write to
//! (`PERF_EVENT_IOC_SET_OUTPUT`).

pub mod cursor;
pub mod members;
pub mod task_records;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use perf_event_open_sys as sys;
pub use perf_event_open_sys::bindings;
use sys::bindings as b;

/// `kernel.perf_event_paranoid`, where it can be read.
pub fn paranoid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

pub fn read_proc_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

/// Opens the event `attr` describes for thread `tid` (-1: every task) on `cpu`. Errors are
/// the system call's.
pub fn open(attr: &mut b::perf_event_attr, tid: i32, cpu: i32) -> io::Result<OwnedFd> {
    if let Some(errno) = simulated_refusal() {
        return Err(io::Error::from_raw_os_error(errno));
    }
    // SAFETY: a valid attr; the returned descriptor is ours.
    let fd = unsafe { sys::perf_event_open(attr, tid, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as u64) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the event `attr` describes on `cpu` for the tasks of one cgroup (`cgroup`: its
/// directory, open): the kernel records it only while one of them is the CPU's current task
/// (`PERF_FLAG_PID_CGROUP`). Errors are the system call's.
pub fn open_in_cgroup(
    attr: &mut b::perf_event_attr,
    cgroup: &OwnedFd,
    cpu: i32,
) -> io::Result<OwnedFd> {
    if let Some(errno) = simulated_refusal() {
        return Err(io::Error::from_raw_os_error(errno));
    }
    let flags = (b::PERF_FLAG_FD_CLOEXEC | b::PERF_FLAG_PID_CGROUP) as u64;
    // SAFETY: a valid attr and an open cgroup directory; the returned descriptor is ours.
    let fd = unsafe { sys::perf_event_open(attr, cgroup.as_raw_fd(), cpu, -1, flags) };
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
        self.for_each(|record| out.push(record.to_vec()));
    }

    /// Shows every complete record written since the last call to `visit` (header
    /// included), then frees their space: no allocation per record, for rings that carry
    /// many small ones (scheduler switches).
    pub fn for_each(&mut self, mut visit: impl FnMut(&[u8])) {
        let head = self.head().load(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        // SAFETY: the data area follows the metadata page.
        let data = unsafe { self.base.add(page_size()) };
        let mut record = Vec::new();
        while tail + 8 <= head {
            let mut header = [0u8; 8];
            self.copy(data, tail, &mut header);
            let size = u16::from_ne_bytes([header[6], header[7]]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            record.resize(size as usize, 0);
            self.copy(data, tail, &mut record);
            visit(&record);
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

pub(crate) fn page_size() -> usize {
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

/// Why `perf_event_open` failed, said in one line with what to change.
pub fn refusal(error: &io::Error) -> String {
    let paranoid = paranoid()
        .map(|p| format!("kernel.perf_event_paranoid is {p}"))
        .unwrap_or_else(|| "kernel.perf_event_paranoid is unknown".to_owned());
    match error.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open was refused ({error}; {paranoid}): run as root, give framelab \
             CAP_PERFMON (sudo setcap cap_perfmon+ep \"$(command -v framelab)\"), or lower \
             the setting (sudo sysctl kernel.perf_event_paranoid=1)"
        ),
        Some(libc::ENOSYS) => "perf_event_open is not available (this container or kernel \
             forbids it): allow it in the container's seccomp profile, or run outside the \
             container"
            .to_owned(),
        _ => format!("perf_event_open failed ({error}); {paranoid}"),
    }
}
