//! framelab-probe: record where each frame's time goes, at the cost of a clock read.
//!
//! ```no_run
//! use framelab_probe::{Counter, Laps, Stage};
//!
//! let decode = Stage::new("decode");
//! let (scale, encode) = (Stage::new("scale"), Stage::new("encode"));
//! let bytes = Counter::new("bytes");
//! for frame in 0..1000u64 {
//!     let _span = decode.span(frame); // recorded when `_span` drops
//!     let mut laps = Laps::start(frame); // one clock read per boundary
//!     // ... scale ...
//!     laps.lap(scale);
//!     // ... encode ...
//!     laps.lap(encode);
//!     bytes.add(frame, 1500);
//! }
//! ```
//!
//! Without `FRAMELAB_SESSION` in the environment (set by `framelab run`) every call is a
//! no-op costing one relaxed load and a branch. With a session, each thread writes fixed-size
//! records into its own ring in shared memory: no lock, no system call, no allocation. When
//! the ring is full the newest record is dropped and counted.

mod clock;
pub mod ffi;
pub mod pacer;
mod queue;
mod session;
mod sys;
pub mod wire;

use std::marker::PhantomData;
use std::sync::atomic::Ordering::{Relaxed, Release};

use session::{MODE, MODE_OFF, RING};
use wire::{kind, name_kind, Record, RingHeader, FLAG_LAP};

pub use clock::ticks;
pub use pacer::{LatePolicy, Pacer};
pub use queue::{gpu_queue_name, Queue};
pub use session::names_refused;
pub use sys::monotonic_ns;

/// The current thread's ring, or null when not recording.
#[inline(always)]
fn ring() -> *mut RingHeader {
    if MODE.load(Relaxed) == MODE_OFF {
        return std::ptr::null_mut();
    }
    let ring = RING.with(|r| r.get());
    if ring.is_null() {
        return session::attach_thread();
    }
    ring
}

/// Appends one record; drops it (and counts the drop) when the ring is full.
#[inline(always)]
unsafe fn push(ring: *mut RingHeader, record: Record) {
    let h = &*ring;
    let head = h.head.load(Relaxed);
    let capacity = h.capacity;
    if head >= h.check_at.load(Relaxed) && !look_at_tail(h, head) {
        return;
    }
    let slots = ring.cast::<u8>().add(wire::HEADER_BYTES).cast::<Record>();
    slots.add((head & (capacity - 1)) as usize).write(record);
    h.head.store(head.wrapping_add(1), Release);
}

/// The slow path, at `check_at`: whether the record fits (else it is counted dropped),
/// waking a sleeping collector once the ring is a quarter full, and where to look next:
/// at a quarter full from the tail just read, past that every eighth of the ring (the
/// collector may have gone to sleep since), and never later than full.
#[cold]
#[inline(never)]
fn look_at_tail(h: &RingHeader, head: u64) -> bool {
    let tail = h.tail.load(std::sync::atomic::Ordering::Acquire);
    let used = head.wrapping_sub(tail);
    let capacity = h.capacity;
    if used >= capacity {
        h.dropped.store(h.dropped.load(Relaxed) + 1, Relaxed);
        return false;
    }
    let quarter = wire::wake_fill(capacity);
    let next = if used < quarter {
        tail.wrapping_add(quarter)
    } else {
        session::wake_collector();
        head.wrapping_add((capacity / 8).max(1))
    };
    h.check_at
        .store(next.min(tail.wrapping_add(capacity)), Relaxed);
    true
}

#[inline(always)]
fn record(kind: u8, name: u16, flags: u64, frame: u64, a: u64, b: u64) {
    let ring = ring();
    if !ring.is_null() {
        // SAFETY: a non-null ring is this thread's live mapping.
        unsafe { push(ring, Record::new(kind, name, flags, frame, a, b)) }
    }
}

/// Whether this process is recording into a session.
pub fn enabled() -> bool {
    !ring().is_null()
}

/// A named stage of a frame (`capture`, `encode`). Create once, use in the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stage(u16);

/// A named per-frame number (`bytes`, `keyframe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Counter(u16);

/// A named kind of instant event (`commit`, `release`), keyed per occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event(u16);

impl Stage {
    /// Interns `name` (a lock and a lookup: keep it out of the per-frame loop).
    pub fn new(name: &str) -> Stage {
        Stage(session::intern(name_kind::STAGE, name))
    }

    /// The interned id (0 when the name table was full; such records are counted as invalid).
    pub fn id(self) -> u16 {
        self.0
    }

    /// Starts a span of this stage for `frame`; it is recorded when the guard drops.
    #[inline(always)]
    pub fn span(self, frame: u64) -> SpanGuard {
        let ring = ring();
        let start = if ring.is_null() { 0 } else { ticks() };
        SpanGuard {
            ring,
            stage: self.0,
            frame,
            start,
            _not_send: PhantomData,
        }
    }

    /// Records a span whose ends the program already has, in CLOCK_MONOTONIC nanoseconds
    /// (a stage timed elsewhere, GPU timestamps converted to the host clock).
    #[inline]
    pub fn record_ns(self, frame: u64, start_ns: u64, end_ns: u64) {
        record(kind::SPAN_NS, self.0, 0, frame, start_ns, end_ns);
    }
}

impl Counter {
    pub fn new(name: &str) -> Counter {
        Counter(session::intern(name_kind::COUNTER, name))
    }

    pub fn id(self) -> u16 {
        self.0
    }

    /// Attaches `value` to `frame`. Several values for one frame add up.
    #[inline(always)]
    pub fn add(self, frame: u64, value: i64) {
        record(kind::COUNTER, self.0, 0, frame, value as u64, 0);
    }
}

impl Event {
    pub fn new(name: &str) -> Event {
        Event(session::intern(name_kind::EVENT, name))
    }

    pub fn id(self) -> u16 {
        self.0
    }

    /// Records an instant now, with `key` for pairing (a buffer id, a request id).
    #[inline(always)]
    pub fn mark(self, key: u64) {
        let ring = ring();
        if !ring.is_null() {
            // SAFETY: a non-null ring is this thread's live mapping.
            unsafe { push(ring, Record::new(kind::EVENT, self.0, 0, key, ticks(), 0)) }
        }
    }
}

/// A running span; records `[start, drop]` for its stage and frame. Not `Send`: a span is
/// written by the thread that ran it.
#[must_use = "the span is recorded when this guard drops; bind it with `let _span = ...`"]
pub struct SpanGuard {
    ring: *mut RingHeader,
    stage: u16,
    frame: u64,
    start: u64,
    _not_send: PhantomData<*mut ()>,
}

impl Drop for SpanGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.ring.is_null() {
            let end = ticks();
            // SAFETY: the ring belongs to this thread (the guard is not Send) and lives as long as it.
            unsafe {
                push(
                    self.ring,
                    Record::new(kind::SPAN, self.stage, 0, self.frame, self.start, end),
                )
            }
        }
    }
}

/// Laps: consecutive stages of one frame on one thread, one clock read per boundary.
/// `lap(stage)` records `stage` from the previous boundary to now.
pub struct Laps {
    ring: *mut RingHeader,
    frame: u64,
    last: u64,
    _not_send: PhantomData<*mut ()>,
}

impl Laps {
    #[inline(always)]
    pub fn start(frame: u64) -> Laps {
        let ring = ring();
        let last = if ring.is_null() { 0 } else { ticks() };
        Laps {
            ring,
            frame,
            last,
            _not_send: PhantomData,
        }
    }

    /// Ends `stage` now; the next stage starts at this same instant.
    #[inline(always)]
    pub fn lap(&mut self, stage: Stage) {
        if !self.ring.is_null() {
            let now = ticks();
            // SAFETY: as for SpanGuard.
            unsafe {
                push(
                    self.ring,
                    Record::new(kind::SPAN, stage.0, FLAG_LAP, self.frame, self.last, now),
                )
            }
            self.last = now;
        }
    }

    /// Moves the boundary to now without recording (time between stages that is not a stage).
    #[inline(always)]
    pub fn skip(&mut self) {
        if !self.ring.is_null() {
            self.last = ticks();
        }
    }

    /// Moves on to the next frame, starting from the last boundary.
    #[inline(always)]
    pub fn next_frame(&mut self, frame: u64) {
        self.frame = frame;
    }
}
