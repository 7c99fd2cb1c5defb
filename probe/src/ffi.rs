//! The C ABI (see include/framelab.h). Ids are plain integers; 0 is "no name". Invalid ids
//! are not checked here (that would cost the hot path): the collector counts records whose
//! id the process never interned and reports them.

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

fn name_of(name: *const c_char) -> Option<String> {
    if name.is_null() {
        return None;
    }
    // SAFETY: the caller promises a NUL-terminated string; null is handled above.
    Some(
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn intern(kind: char, name: *const c_char) -> u32 {
    name_of(name).map_or(0, |n| session::intern(kind, &n) as u32)
}

#[no_mangle]
pub extern "C" fn fl_stage(name: *const c_char) -> u32 {
    intern(crate::wire::name_kind::STAGE, name)
}

#[no_mangle]
pub extern "C" fn fl_counter(name: *const c_char) -> u32 {
    intern(crate::wire::name_kind::COUNTER, name)
}

#[no_mangle]
pub extern "C" fn fl_event_kind(name: *const c_char) -> u32 {
    intern(crate::wire::name_kind::EVENT, name)
}

#[no_mangle]
pub extern "C" fn fl_enabled() -> i32 {
    crate::enabled() as i32
}

#[no_mangle]
pub extern "C" fn fl_begin(stage: u32, frame: u64) -> FlSpan {
    let live = !ring().is_null();
    FlSpan {
        frame,
        start: if live { ticks() } else { 0 },
        stage,
        live: live as u32,
    }
}

#[no_mangle]
pub extern "C" fn fl_end(span: FlSpan) {
    if span.live == 0 {
        return;
    }
    let end = ticks();
    // Looked up again: C code may end a span on another thread than the one that began it.
    let ring = ring();
    if !ring.is_null() {
        // SAFETY: a non-null ring is this thread's live mapping.
        unsafe {
            crate::push(
                ring,
                Record::new(
                    kind::SPAN,
                    clamp_id(span.stage),
                    0,
                    span.frame,
                    span.start,
                    end,
                ),
            )
        }
    }
}

#[no_mangle]
pub extern "C" fn fl_laps_start(frame: u64) -> FlLaps {
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
    let Some(laps) = laps.as_mut() else { return };
    if laps.live == 0 {
        return;
    }
    let now = ticks();
    let ring = ring();
    if !ring.is_null() {
        crate::push(
            ring,
            Record::new(
                kind::SPAN,
                clamp_id(stage),
                FLAG_LAP,
                laps.frame,
                laps.last,
                now,
            ),
        );
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
    Stage(clamp_id(stage)).record_ns(frame, start_ns, end_ns);
}

#[no_mangle]
pub extern "C" fn fl_count(counter: u32, frame: u64, value: i64) {
    Counter(clamp_id(counter)).add(frame, value);
}

#[no_mangle]
pub extern "C" fn fl_event(event: u32, key: u64) {
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
