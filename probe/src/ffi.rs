//! The C ABI (see include/framelab.h). Ids are plain integers; 0 is "no name". Invalid ids
//! are not checked here (that would cost the hot path): the collector counts records whose
//! id the process never interned and reports them. Null pointers are no-ops. Nothing here
//! can panic (errors are ignored or turn recording off), and a panic in an `extern "C"`
//! function aborts rather than unwinding into C.

use std::ffi::{c_char, CStr};

use crate::wire::{kind, Record, FLAG_LAP};
use crate::{ring, session, ticks, Counter, Event, Stage};

/// A running span, returned by `fl_begin` and passed to `fl_end`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct FlSpan {
    pub frame: u64,
    pub start: u64,
    pub stage: u32,
    pub live: u32,
}

/// Laps state: the frame and the last boundary.
#[repr(C)]
pub struct FlLaps {
    pub frame: u64,
    pub last: u64,
    pub live: u32,
}

/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn intern(kind: char, name: *const c_char) -> u32 {
    if name.is_null() {
        return 0;
    }
    let name = CStr::from_ptr(name).to_string_lossy();
    session::intern(kind, &name) as u32
}

/// # Safety
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fl_stage(name: *const c_char) -> u32 {
    intern(crate::wire::name_kind::STAGE, name)
}

/// # Safety
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fl_counter(name: *const c_char) -> u32 {
    intern(crate::wire::name_kind::COUNTER, name)
}

/// # Safety
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fl_event_kind(name: *const c_char) -> u32 {
    intern(crate::wire::name_kind::EVENT, name)
}

#[no_mangle]
pub extern "C" fn fl_enabled() -> i32 {
    crate::enabled() as i32
}

/// Whether recording is off for the whole process: checked first so that the disabled path
/// of each entry point is a load and a branch, with no stack frame.
#[inline(always)]
fn off() -> bool {
    crate::session::MODE.load(std::sync::atomic::Ordering::Relaxed) == crate::session::MODE_OFF
}

#[no_mangle]
pub extern "C" fn fl_begin(stage: u32, frame: u64) -> FlSpan {
    if off() {
        return FlSpan {
            frame,
            start: 0,
            stage,
            live: 0,
        };
    }
    begin_on(stage, frame)
}

#[inline(never)]
fn begin_on(stage: u32, frame: u64) -> FlSpan {
    let live = !ring().is_null();
    FlSpan {
        frame,
        start: if live { ticks() } else { 0 },
        stage,
        live: live as u32,
    }
}

/// Takes the span by pointer: passing the 24-byte struct by value made C callers copy it
/// with wide loads over narrow stores, a store-forwarding stall that tripled the disabled
/// cost.
///
/// # Safety
/// `span` is null or points to an `FlSpan` (from `fl_begin`, or zeroed).
#[no_mangle]
pub unsafe extern "C" fn fl_end(span: *const FlSpan) {
    match span.as_ref() {
        Some(span) if span.live != 0 => end_on(span.stage, span.frame, span.start),
        _ => {}
    }
}

#[inline(never)]
fn end_on(stage: u32, frame: u64, start: u64) {
    let end = ticks();
    // Looked up again: C code may end a span on another thread than the one that began it.
    let ring = ring();
    if !ring.is_null() {
        let record = Record::new(kind::SPAN, clamp_id(stage), 0, frame, start, end);
        // SAFETY: a non-null ring is this thread's live mapping.
        unsafe { crate::push(ring, record) }
    }
}

#[no_mangle]
pub extern "C" fn fl_laps_start(frame: u64) -> FlLaps {
    if off() {
        return FlLaps {
            frame,
            last: 0,
            live: 0,
        };
    }
    let live = !ring().is_null();
    FlLaps {
        frame,
        last: if live { ticks() } else { 0 },
        live: live as u32,
    }
}

/// # Safety
/// `laps` is null or points to an `FlLaps` from `fl_laps_start`.
#[no_mangle]
pub unsafe extern "C" fn fl_lap(laps: *mut FlLaps, stage: u32) {
    match laps.as_mut() {
        Some(laps) if laps.live != 0 => lap_on(laps, stage),
        _ => {}
    }
}

#[inline(never)]
fn lap_on(laps: &mut FlLaps, stage: u32) {
    let now = ticks();
    let ring = ring();
    if !ring.is_null() {
        let record = Record::new(
            kind::SPAN,
            clamp_id(stage),
            FLAG_LAP,
            laps.frame,
            laps.last,
            now,
        );
        // SAFETY: a non-null ring is this thread's live mapping.
        unsafe { crate::push(ring, record) }
    }
    laps.last = now;
}

/// # Safety
/// `laps` is null or points to an `FlLaps`.
#[no_mangle]
pub unsafe extern "C" fn fl_laps_skip(laps: *mut FlLaps) {
    if let Some(laps) = laps.as_mut() {
        if laps.live != 0 {
            laps.last = ticks();
        }
    }
}

/// # Safety
/// `laps` is null or points to an `FlLaps`.
#[no_mangle]
pub unsafe extern "C" fn fl_laps_next_frame(laps: *mut FlLaps, frame: u64) {
    if let Some(laps) = laps.as_mut() {
        laps.frame = frame;
    }
}

#[no_mangle]
pub extern "C" fn fl_span_ns(stage: u32, frame: u64, start_ns: u64, end_ns: u64) {
    if off() {
        return;
    }
    Stage(clamp_id(stage)).record_ns(frame, start_ns, end_ns);
}

/// A named queue for C (`fl_queue` in the header): a GPU stream, a DMA engine.
pub struct FlQueue(crate::Queue);

impl FlQueue {
    /// The queue's name as recorded.
    pub fn name(&self) -> &str {
        self.0.name()
    }
}

/// A queue named `name` (cut to 31 bytes); null for a null name. Free it with fl_queue_free.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fl_queue_new(name: *const c_char) -> *mut FlQueue {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    let name = CStr::from_ptr(name).to_string_lossy();
    Box::into_raw(Box::new(FlQueue(crate::Queue::new(&name))))
}

/// The queue of GPU `device`'s stream `stream`, named `gpu<device>.stream<stream>`
/// (`crate::gpu_queue_name`). Free it with fl_queue_free.
#[no_mangle]
pub extern "C" fn fl_queue_new_gpu(device: u32, stream: u64) -> *mut FlQueue {
    Box::into_raw(Box::new(FlQueue(crate::Queue::gpu(device, stream))))
}

/// `fl_span_ns` for a span that ran on `queue`; a null queue does nothing.
///
/// # Safety
/// `queue` is null or from `fl_queue_new` and not freed.
#[no_mangle]
pub unsafe extern "C" fn fl_span_ns_on(
    queue: *const FlQueue,
    stage: u32,
    frame: u64,
    start_ns: u64,
    end_ns: u64,
) {
    if off() {
        return;
    }
    if let Some(q) = queue.as_ref() {
        Stage(clamp_id(stage)).record_ns_on(&q.0, frame, start_ns, end_ns);
    }
}

/// Frees a queue (its ring is closed); null does nothing.
///
/// # Safety
/// `queue` is null or from `fl_queue_new`, not freed, and no thread records on it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn fl_queue_free(queue: *mut FlQueue) {
    if !queue.is_null() {
        drop(Box::from_raw(queue));
    }
}

#[no_mangle]
pub extern "C" fn fl_count(counter: u32, frame: u64, value: i64) {
    if off() {
        return;
    }
    Counter(clamp_id(counter)).add(frame, value);
}

#[no_mangle]
pub extern "C" fn fl_event(event: u32, key: u64) {
    if off() {
        return;
    }
    Event(clamp_id(event)).mark(key);
}

#[no_mangle]
pub extern "C" fn fl_now_ns() -> u64 {
    crate::monotonic_ns()
}

#[no_mangle]
pub extern "C" fn fl_names_refused() -> u32 {
    crate::names_refused()
}

/// Ids wider than 16 bits cannot be real; record them as 0 so the collector counts them.
fn clamp_id(id: u32) -> u16 {
    u16::try_from(id).unwrap_or(0)
}

/// An opaque pacer for C (`fl_pacer` in the header).
pub struct FlPacer(crate::Pacer);

/// A pacer at `fps` with late `policy` (0 catch up, 1 skip, 2 re-anchor); null for a rate
/// outside [1/3600, 1e6] fps or an unknown policy.
#[no_mangle]
pub extern "C" fn fl_pacer_new(fps: f64, policy: i32) -> *mut FlPacer {
    let Some(policy) = crate::LatePolicy::from_c(policy) else {
        return std::ptr::null_mut();
    };
    match crate::Pacer::new(fps, policy) {
        Ok(pacer) => Box::into_raw(Box::new(FlPacer(pacer))),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Waits for `frame`'s slot; returns how late it starts against the grid in ns (tens of ns
/// on time: the spin's own overshoot), or -1 for a null pacer.
///
/// # Safety
/// `pacer` is null or from `fl_pacer_new`, not freed, not used by another thread meanwhile.
#[no_mangle]
pub unsafe extern "C" fn fl_pacer_wait(pacer: *mut FlPacer, frame: u64) -> i64 {
    match pacer.as_mut() {
        Some(p) => p.0.wait(frame).late_ns.min(i64::MAX as u64) as i64,
        None => -1,
    }
}

/// Frees a pacer; null does nothing.
///
/// # Safety
/// `pacer` is null or from `fl_pacer_new` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn fl_pacer_free(pacer: *mut FlPacer) {
    if !pacer.is_null() {
        drop(Box::from_raw(pacer));
    }
}
