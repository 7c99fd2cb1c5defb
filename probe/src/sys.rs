//! The few C library calls the SDK needs, declared here so the crate stays dependency-free.

use std::os::raw::{c_int, c_long, c_void};

pub const PROT_READ: c_int = 1;
pub const PROT_WRITE: c_int = 2;
pub const MAP_SHARED: c_int = 1;
pub const MAP_PRIVATE: c_int = 2;
pub const MAP_FIXED: c_int = 0x10;
pub const MAP_ANONYMOUS: c_int = 0x20;
pub const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
pub const CLOCK_MONOTONIC: c_int = 1;
pub const PR_GET_NAME: c_int = 16;
pub const TIMER_ABSTIME: c_int = 1;
pub const LOCK_SH: c_int = 1;
pub const LOCK_NB: c_int = 4;
pub const LOCK_UN: c_int = 8;
pub const EWOULDBLOCK: c_int = 11;
pub const EOPNOTSUPP: c_int = 95;
pub const O_RDWR: c_int = 2;
pub const O_CLOEXEC: c_int = 0o2000000;

/// `futex(2)`'s number where the SDK knows it; elsewhere producers do not wake the
/// collector (their rings do not say `FEATURE_WAKES`) and are drained on its tick.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const SYS_FUTEX: Option<c_long> = Some(202);
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "aarch64",
        target_arch = "riscv64",
        target_arch = "loongarch64"
    )
))]
const SYS_FUTEX: Option<c_long> = Some(98);
#[cfg(all(target_os = "linux", any(target_arch = "x86", target_arch = "arm")))]
const SYS_FUTEX: Option<c_long> = Some(240);
#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64",
        target_arch = "loongarch64",
        target_arch = "x86",
        target_arch = "arm"
    )
)))]
const SYS_FUTEX: Option<c_long> = None;
const FUTEX_WAKE: c_int = 1;

/// Whether this build can wake a waiter on a futex word.
pub const CAN_WAKE: bool = SYS_FUTEX.is_some();

/// Wakes one waiter on the futex word at `word` (shared between processes: not
/// `FUTEX_PRIVATE_FLAG`).
pub fn futex_wake(word: *const std::sync::atomic::AtomicU32) {
    if let Some(number) = SYS_FUTEX {
        // SAFETY: FUTEX_WAKE only reads the address to find its waiters; a bad address is
        // EFAULT, not a fault.
        unsafe { syscall(number, word, FUTEX_WAKE, 1 as c_int) };
    }
}

#[repr(C)]
pub struct Timespec {
    pub tv_sec: c_long,
    pub tv_nsec: c_long,
}

extern "C" {
    pub fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    pub fn munmap(addr: *mut c_void, len: usize) -> c_int;
    pub fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
    pub fn clock_nanosleep(
        clock: c_int,
        flags: c_int,
        request: *const Timespec,
        remain: *mut Timespec,
    ) -> c_int;
    /// Returns the error number (not -1 and errno) on failure.
    pub fn posix_fallocate(fd: c_int, offset: i64, len: i64) -> c_int;
    pub fn flock(fd: c_int, operation: c_int) -> c_int;
    pub fn close(fd: c_int) -> c_int;
    pub fn gettid() -> c_int;
    pub fn getpid() -> c_int;
    pub fn prctl(option: c_int, ...) -> c_int;
    pub fn open(path: *const std::os::raw::c_char, flags: c_int, ...) -> c_int;
    fn syscall(number: c_long, ...) -> c_long;
    pub fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
