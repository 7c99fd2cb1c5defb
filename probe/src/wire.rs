//! The shared-memory layout between the SDK (producer) and the collector (consumer).
//!
//! A session is a directory (named by `FRAMELAB_SESSION`). Every recording thread owns one
//! ring file `r-<pid>-<tid>` in it (`r-<pid>-<tid>-<n>` when the kernel reused the tid of an
//! exited thread whose ring is still there: read pid and tid from the header); every
//! process appends its interned names to `n-<pid>` and holds a shared `flock` on it while it
//! lives (how the collector knows it ended, whatever PID namespace it is in); a thread that could not get a ring
//! leaves an empty `u-<errno>-<pid>-<tid>`; `lock` is the collector's liveness lock.
//! Rings are single-producer single-consumer: the thread writes records and advances `head`,
//! the collector copies them out and advances `tail`. Nothing here blocks.
//!
//! Waking the collector: the collector sleeps on the session's wakeup word (`WAKE_FILE`, a
//! futex word it sets to `COLLECTOR_ASLEEP` before it sleeps). A producer looks at its
//! ring's fill only at a threshold crossing (`RingHeader::check_at`); once its ring is a
//! quarter full or more and the word says the collector sleeps, it sets the word to
//! `COLLECTOR_AWAKE` and wakes it (`FUTEX_WAKE`): at most one system call per crossing,
//! none on a record's path otherwise. A ring whose producer does this says so in its header
//! (`FEATURE_WAKES`); rings of older SDKs lack it and are drained on the collector's tick.

use std::sync::atomic::{AtomicU32, AtomicU64};

pub const SESSION_ENV: &str = "FRAMELAB_SESSION";
/// Records per ring (rounded up to a power of two). Mostly for tests that force drops.
pub const RING_RECORDS_ENV: &str = "FRAMELAB_RING_RECORDS";
/// `tsc` or `mono`: which clock the SDK stamps with. The collector decides and sets it.
pub const CLOCK_ENV: &str = "FRAMELAB_CLOCK";
/// Where framelab makes session directories (default /dev/shm), read by framelab only.
pub const SHM_DIR_ENV: &str = "FRAMELAB_SHM_DIR";
/// The session's liveness lock, in its directory: the collector holds an exclusive `flock`
/// on it while it runs. The SDK makes no ring in a session whose lock it can take (no
/// collector); a directory without one (an older framelab) is taken as live.
pub const LOCK_FILE: &str = "lock";
/// `u-<errno>-<pid>-<tid>[-<n>]`, empty: a thread that could not get a ring (no space left
/// in shared memory: errno 28) runs unrecorded and leaves this so the collector counts it.
pub const UNRECORDED_PREFIX: &str = "u-";
/// The session's wakeup word: a file of `WAKE_FILE_BYTES` whose first 4 bytes (native
/// endian) are a futex word, made by the collector with the session. See the module docs.
pub const WAKE_FILE: &str = "wake";
pub const WAKE_FILE_BYTES: usize = 64;
/// The wakeup word's values: the collector runs (or ticks), or sleeps until woken.
pub const COLLECTOR_AWAKE: u32 = 0;
pub const COLLECTOR_ASLEEP: u32 = 1;
/// `RingHeader::features`: the producer wakes a sleeping collector when its ring passes a
/// quarter full (`wake_fill`).
pub const FEATURE_WAKES: u32 = 1;

pub const RING_MAGIC: u64 = u64::from_le_bytes(*b"FLRING01");
pub const WIRE_VERSION: u32 = 1;
pub const DEFAULT_RING_RECORDS: u64 = 1 << 16;
pub const MIN_RING_RECORDS: u64 = 4;
pub const MAX_RING_RECORDS: u64 = 1 << 24;
pub const HEADER_BYTES: usize = 256;
/// Names a process may intern. Ids are 1..=MAX_NAMES; 0 means "no name" (overflow or null).
pub const MAX_NAMES: u32 = 4095;

/// The first pseudo tid of a named queue (`crate::Queue`: a GPU stream, a DMA engine). A
/// queue's ring carries one of these in its header and the queue's name as its thread name,
/// so it is stored as one more thread of its process (no schema of its own). Linux tids stay
/// below 2^22 (PID_MAX_LIMIT), so no real thread has one.
pub const QUEUE_TID_BASE: u32 = 1 << 30;

/// Whether a thread id is a queue's pseudo tid (see [`QUEUE_TID_BASE`]).
pub fn is_queue_tid(tid: u32) -> bool {
    tid >= QUEUE_TID_BASE
}

/// The counter the SDK's pacer records per frame: how late it woke for that frame's slot,
/// in ns. The collector reads it as the pacer's lateness (its own report line), not as a
/// counter of the frame and not as a stage: waiting for a slot is not the frame's work.
pub const PACER_LATE_COUNTER: &str = "pacer_late_ns";

pub const CLOCK_TSC: u32 = 0;
pub const CLOCK_MONO: u32 = 1;

/// What a record holds. `a` and `b` are timestamps unless said otherwise.
pub mod kind {
    /// A stage of a frame: `a` start, `b` end, in the ring's clock. Laps write these too.
    pub const SPAN: u8 = 1;
    /// A stage of a frame with CLOCK_MONOTONIC nanoseconds given by the program.
    pub const SPAN_NS: u8 = 2;
    /// A counter of a frame: `a` is the value as i64.
    pub const COUNTER: u8 = 3;
    /// An instant event: `frame` holds its key, `a` its time.
    pub const EVENT: u8 = 4;
}

/// One fixed-size record: two per cache line, written with four stores.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// kind (bits 0..8) | name id (bits 16..32) | flags (bits 32..64)
    pub word: u64,
    pub frame: u64,
    pub a: u64,
    pub b: u64,
}

/// Set on span records written by a lap (the start is the previous boundary).
pub const FLAG_LAP: u64 = 1 << 32;

impl Record {
    #[inline(always)]
    pub fn new(kind: u8, name: u16, flags: u64, frame: u64, a: u64, b: u64) -> Self {
        Record {
            word: kind as u64 | (name as u64) << 16 | flags,
            frame,
            a,
            b,
        }
    }
    pub fn kind(&self) -> u8 {
        self.word as u8
    }
    pub fn name(&self) -> u16 {
        (self.word >> 16) as u16
    }
    pub fn is_lap(&self) -> bool {
        self.word & FLAG_LAP != 0
    }
}

/// The ring header at offset 0 of a ring file. Lines are split by owner to avoid false sharing.
#[repr(C, align(64))]
pub struct RingHeader {
    // Identity: written once before `magic` is published.
    pub magic: AtomicU64,
    pub version: u32,
    pub clock: u32,
    pub pid: u32,
    pub tid: u32,
    pub capacity: u64,
    pub thread_name: [u8; 32],
    // Producer-owned line.
    pub head: Aligned<AtomicU64>,
    pub dropped: AtomicU64,
    /// The `head` at which the producer next reads `tail`: when the ring may be full, or
    /// may have passed a quarter full (then it may wake the collector). Producer-private.
    pub check_at: AtomicU64,
    /// Set by the producer when its thread exits.
    pub closed: AtomicU32,
    /// What this producer does beyond version 1's protocol (`FEATURE_WAKES`); 0 from SDKs
    /// before it. Written once before `magic` is published.
    pub features: u32,
    // Consumer-owned line.
    pub tail: Aligned<AtomicU64>,
}

#[repr(C, align(64))]
pub struct Aligned<T>(pub T);

impl<T> std::ops::Deref for Aligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

const _: () = assert!(std::mem::size_of::<RingHeader>() <= HEADER_BYTES);
const _: () = assert!(std::mem::size_of::<Record>() == 32);
// What collectors of every version read stays where version 1 put it (tests/c/abi_test.c).
const _: () = assert!(
    std::mem::offset_of!(RingHeader, head) == 64
        && std::mem::offset_of!(RingHeader, dropped) == 128
        && std::mem::offset_of!(RingHeader, closed) == 144
        && std::mem::offset_of!(RingHeader, features) == 148
        && std::mem::offset_of!(RingHeader, tail) == 192
);

/// Records in a ring past which its producer wakes a sleeping collector: a quarter of it,
/// so that three quarters are left for the time the collector takes to wake.
pub fn wake_fill(capacity: u64) -> u64 {
    (capacity / 4).max(1)
}

pub fn ring_file_bytes(capacity: u64) -> usize {
    HEADER_BYTES + capacity as usize * std::mem::size_of::<Record>()
}

/// Kind of an interned name, as written in the names file.
pub mod name_kind {
    pub const STAGE: char = 's';
    pub const COUNTER: char = 'c';
    pub const EVENT: char = 'e';
    /// A name refused because the table was full (written with id 0).
    pub const REFUSED: char = '!';
}

/// A line of the names file: `<id> <kind> <name>\n`.
pub fn parse_name_line(line: &str) -> Option<(u16, char, &str)> {
    let mut parts = line.splitn(3, ' ');
    let id = parts.next()?.parse().ok()?;
    let kind = parts.next()?.chars().next()?;
    let name = parts.next()?;
    Some((id, kind, name))
}
