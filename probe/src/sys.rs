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
