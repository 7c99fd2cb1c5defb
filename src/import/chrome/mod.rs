//! Chrome trace event JSON (chrome://tracing, Perfetto's JSON, `--trace-startup` files): the
//! array form `[{...}, ...]` (its `]` may be missing: Chrome leaves it off a trace cut short)
//! and the object form `{"traceEvents": [...], ...}` with its keys in any order.
//!
//! What becomes what:
//! - `X` (complete), `B`/`E` (matched per thread as a stack) and `b`/`e`, `S`/`F` (async,
//!   matched by pid, category, id and name) become spans. The frame id is `args.ARG` with
//!   `--frame-arg ARG`, else taken from the name by `--frame-regex` (slices without one are
//!   left out and counted), else each slice is a frame of its own. A framelab export (marked
//!   by `otherData.framelab`, see [`crate::export::chrome`]) takes frames from `args.frame`,
//!   keys from `args.key`, may hold times before its launch (negative `ts`), and gives back
//!   the rest of the run from `otherData.framelab.description` (`crate::formats::carried`).
//! - `i`/`I`/`n` instants become events, keyed by the `--key` argument, else `id` (or
//!   `id2`), else 0. The `framelab:launch` instant is the time origin, not an event.
//! - `C` counters become sample series (source `chrome`, metric `NAME` for the usual
//!   `{"value": v}` and `NAME.KEY` otherwise, entity the pid, label the process). A series
//!   whose values are all integers keeps them; one with a fractional value stores every
//!   value × 1000 with unit `milli` (rounded half away from zero past 3 decimals).
//! - `M` names processes and threads; flows and the other phases are counted in a note.
//! - `--process NAME` keeps the processes whose `process_name` is NAME.
//!
//! `ts` and `dur` are microseconds, turned into integer nanoseconds from their decimal text
//! (never through a float): `1234567890.123` µs is exactly 1234567890123 ns. Digits past
//! the nanosecond are rounded half away from zero. A negative `ts` or `dur` is a bad record.
//!
//! The events array is read one event at a time into borrowed fields, so memory stays near
//! the input's size whatever the trace holds.

mod event;
mod importer;
#[cfg(test)]
mod tests;
mod walk;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ImportError, Location, TraceBuilder};
use event::*;
use importer::*;
use walk::*;

/// Times beyond ±2^61 ns (73 years) are refused: rebasing and adding a duration must not
/// overflow 64 bits.
const MAX_TIME_NS: i128 = 1 << 61;

/// The name given to slices that have none.
const UNNAMED: &str = "(unnamed)";

pub fn parse(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    let input = Src::new(input);
    let bom = if input.bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let start = skip_ws(input, bom);
    match input.get(start) {
        None => Err(b.error(
            Location::Whole,
            "the file is empty; a Chrome trace is a JSON array of events or an object with \
             \"traceEvents\"",
        )),
        Some(b'[') => {
            let walked = read_events(input, start, false, b)?;
            if !walked.cut_off {
                note_trailing(input, walked.end, b);
            }
            Ok(())
        }
        Some(b'{') => read_object(input, start, b),
        Some(_) => Err(b.error(
            Location::Byte(start as u64),
            "not a Chrome trace: it must be a JSON array of events or an object with \
             \"traceEvents\"; pass --format if it is another format",
        )),
    }
}

/// The object form: `traceEvents` is read where it stands, except that a framelab marker
/// in `otherData` after it must be known first (then the events are read last).
fn read_object(input: Src, open: usize, b: &mut TraceBuilder) -> Result<(), ImportError> {
    let mut pos = open + 1;
    let mut framelab = false;
    let mut deferred: Option<usize> = None;
    let mut events_read = false;
    loop {
        pos = skip_ws(input, pos);
        match input.get(pos) {
            Some(b'}') => {
                pos += 1;
                break;
            }
            Some(b'"') => {}
            None => return Err(cut_short(b, pos)),
            Some(_) => return Err(unexpected(b, input, pos, "a key of the trace object")),
        }
        let (key, after) = json_value::<Text>(input, pos).map_err(|e| e.fatal(b))?;
        pos = skip_ws(input, after);
        if input.get(pos) != Some(&b':') {
            return Err(unexpected(b, input, pos, "':' after a key"));
        }
        pos = skip_ws(input, pos + 1);
        match &*key {
            "traceEvents" => {
                if events_read || deferred.is_some() {
                    return Err(b.error(
                        Location::Byte(pos as u64),
                        "a second \"traceEvents\" array; a trace holds one",
                    ));
                }
                if input.get(pos) != Some(&b'[') {
                    return Err(b.error(
                        Location::Byte(pos as u64),
                        "\"traceEvents\" is not an array of events",
                    ));
                }
                let marker_may_follow = memchr::memmem::find(input.from(pos), b"\"framelab\"");
                if framelab || marker_may_follow.is_none() {
                    let walked = read_events(input, pos, framelab, b)?;
                    events_read = true;
                    if walked.cut_off {
                        return Ok(());
                    }
                    pos = walked.end;
                } else {
                    match json_value::<IgnoredAny>(input, pos) {
                        Ok((_, end)) => {
                            deferred = Some(pos);
                            pos = end;
                        }
                        // Cut off inside the events: read what there is now.
                        Err(e) if e.category == serde_json::error::Category::Eof => {
                            read_events(input, pos, framelab, b)?;
                            return Ok(());
                        }
                        Err(e) => return Err(e.fatal(b)),
                    }
                }
            }
            "otherData" => {
                let (raw, end) = json_value::<&RawValue>(input, pos).map_err(|e| e.fatal(b))?;
                if is_framelab_marker(raw) {
                    framelab = true;
                    b.mark_framelab_export();
                    if let Some(description) = run_description(raw) {
                        b.describe_run(description.get());
                    }
                }
                pos = end;
            }
            _ => {
                pos = json_value::<IgnoredAny>(input, pos)
                    .map_err(|e| e.fatal(b))?
                    .1
            }
        }
        pos = skip_ws(input, pos);
        match input.get(pos) {
            Some(b',') => pos += 1,
            Some(b'}') => {
                pos += 1;
                break;
            }
            None => return Err(cut_short(b, pos)),
            Some(_) => return Err(unexpected(b, input, pos, "',' or '}' in the trace object")),
        }
    }
    match deferred {
        Some(at) => {
            read_events(input, at, framelab, b)?;
        }
        None if !events_read => {
            return Err(b.error(
                Location::Whole,
                "the JSON object has no \"traceEvents\" array: not a Chrome trace",
            ))
        }
        None => {}
    }
    note_trailing(input, pos, b);
    Ok(())
}

/// `otherData: {"framelab": {...}}`: written by framelab's exporter.
fn is_framelab_marker(other_data: &RawValue) -> bool {
    let mut found = false;
    for_each_arg(other_data, |key, _| found |= key == "framelab");
    found
}

/// `otherData.framelab.description`: the run a framelab export carries.
fn run_description(other_data: &RawValue) -> Option<Box<RawValue>> {
    #[derive(Deserialize)]
    struct OtherData {
        framelab: Option<Framelab>,
    }
    #[derive(Deserialize)]
    struct Framelab {
        description: Option<Box<RawValue>>,
    }
    let other: OtherData = serde_json::from_str(other_data.get()).ok()?;
    other.framelab?.description
}

fn note_trailing(input: Src, end: usize, b: &mut TraceBuilder) {
    let rest = skip_ws(input, end);
    if rest < input.len() {
        b.note(format!(
            "{} bytes after the end of the trace (byte {rest}) were ignored",
            input.len() - rest
        ));
    }
}
