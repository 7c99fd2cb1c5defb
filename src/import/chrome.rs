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

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::decimal::{scaled, DecimalError, Grammar};
use super::keys::{fnv1a, key_of};
use super::{ImportError, Location, TraceBuilder};
use crate::formats::LAUNCH_MARKER;
use crate::model::{SampleSeries, SeriesKind};

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

/// How reading the events array ended.
struct Walked {
    /// The byte after the closing `]` (the file's end when cut off).
    end: usize,
    /// The file ended inside the array (Chrome leaves the `]` off a trace cut short).
    cut_off: bool,
}

/// Reads the events array opening at `open` into `b`.
fn read_events(
    input: Src,
    open: usize,
    framelab: bool,
    b: &mut TraceBuilder,
) -> Result<Walked, ImportError> {
    let mut importer = Importer::new(b, framelab);
    if let Some(process) = b.opts.process.clone() {
        importer.keep_pids = Some(pids_named(input, open, &process, b)?);
    }
    let walked = walk(input, open, b, false, &mut |b, event, at| {
        importer.handle(b, event, at)
    })?;
    importer.finish(b);
    Ok(walked)
}

/// `--process NAME`: the pids whose `process_name` metadata is NAME (a first pass, since
/// Chrome writes the metadata last).
fn pids_named(
    input: Src,
    open: usize,
    process: &str,
    b: &mut TraceBuilder,
) -> Result<HashSet<u32>, ImportError> {
    let mut names: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    walk(input, open, b, true, &mut |_, event, _| {
        if event.ph.as_deref() == Some("M") && event.name.as_deref() == Some("process_name") {
            if let Some(name) = event.args.and_then(|a| string_arg(a, "name")) {
                let pid = event.pid();
                names.entry(name.into_owned()).or_default().push(pid);
            }
        }
        Ok(())
    })?;
    match names.get(process) {
        Some(pids) => Ok(pids.iter().copied().collect()),
        None => {
            let known: Vec<&str> = names.keys().take(20).map(String::as_str).collect();
            Err(b.error(
                Location::Whole,
                format!(
                    "no process named {process:?} in this trace (--process); its processes: {}",
                    if known.is_empty() {
                        "none named".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ))
        }
    }
}

type EventHandler<'h, 'a> =
    dyn FnMut(&mut TraceBuilder, RawEvent<'a>, u64) -> Result<(), ImportError> + 'h;

/// Calls `handle` with each event of the array opening at `open` and its byte offset.
/// `quiet` (a first pass) skips bad events without counting them.
fn walk<'a>(
    input: Src<'a>,
    open: usize,
    b: &mut TraceBuilder,
    quiet: bool,
    handle: &mut EventHandler<'_, 'a>,
) -> Result<Walked, ImportError> {
    use serde_json::error::Category;
    let mut pos = open + 1;
    loop {
        pos = skip_ws(input, pos);
        match input.get(pos) {
            Some(b']') => {
                return Ok(Walked {
                    end: pos + 1,
                    cut_off: false,
                })
            }
            None => return Ok(cut_off(input, b, quiet)),
            Some(_) => {}
        }
        match json_value::<RawEvent>(input, pos) {
            Ok((event, end)) => {
                handle(b, event, pos as u64)?;
                pos = end;
            }
            // Valid JSON but not an event: skip over it.
            Err(e) if e.category == Category::Data => match json_value::<IgnoredAny>(input, pos) {
                Ok((_, end)) => {
                    if !quiet {
                        b.bad(e.location(), format!("bad trace event: {}", e.message))?;
                    }
                    pos = end;
                }
                Err(e) if e.category == Category::Eof => {
                    return cut_inside_event(input, pos, b, quiet)
                }
                Err(e) => return Err(e.fatal(b)),
            },
            Err(e) if e.category == Category::Eof => return cut_inside_event(input, pos, b, quiet),
            Err(e) => return Err(e.fatal(b)),
        }
        pos = skip_ws(input, pos);
        match input.get(pos) {
            Some(b',') => pos += 1,
            Some(b']') => {
                return Ok(Walked {
                    end: pos + 1,
                    cut_off: false,
                })
            }
            None => return Ok(cut_off(input, b, quiet)),
            Some(_) => return Err(unexpected(b, input, pos, "',' or ']' after a trace event")),
        }
    }
}

/// The file ends inside the event at `pos`: a bad record (the ones before it are kept).
fn cut_inside_event(
    input: Src,
    pos: usize,
    b: &mut TraceBuilder,
    quiet: bool,
) -> Result<Walked, ImportError> {
    if !quiet {
        b.bad(
            Location::Byte(pos as u64),
            "the file ends inside this event: the trace is cut short \
             (--skip-bad imports the events before it)",
        )?;
    }
    Ok(Walked {
        end: input.len(),
        cut_off: true,
    })
}

/// The file ends between events: Chrome's way of leaving a trace cut short.
fn cut_off(input: Src, b: &mut TraceBuilder, quiet: bool) -> Walked {
    if !quiet {
        b.note(
            "the events array has no closing ']' (Chrome leaves it off a trace cut short); \
             every complete event was read",
        );
    }
    Walked {
        end: input.len(),
        cut_off: true,
    }
}

fn cut_short(b: &TraceBuilder, pos: usize) -> ImportError {
    b.error(
        Location::Byte(pos as u64),
        "the file ends inside the trace object: it is cut short",
    )
}

fn unexpected(b: &TraceBuilder, input: Src, pos: usize, wanted: &str) -> ImportError {
    let found = match input.get(pos) {
        Some(&c) if c.is_ascii_graphic() => format!("'{}'", c as char),
        Some(c) => format!("byte 0x{c:02x}"),
        None => "the end of the file".into(),
    };
    b.error(
        Location::Byte(pos as u64),
        format!("not valid JSON here: expected {wanted}, found {found}"),
    )
}

fn skip_ws(input: Src, mut pos: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = input.get(pos) {
        pos += 1;
    }
    pos
}

/// The input, and the same as text when it is valid UTF-8 (then strings need no checking
/// as they are read, which is most of the parsing time saved).
#[derive(Clone, Copy)]
struct Src<'a> {
    bytes: &'a [u8],
    text: Option<&'a str>,
}

impl<'a> Src<'a> {
    fn new(bytes: &'a [u8]) -> Src<'a> {
        Src {
            bytes,
            text: std::str::from_utf8(bytes).ok(),
        }
    }

    fn get(&self, pos: usize) -> Option<&'a u8> {
        self.bytes.get(pos)
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes from `pos` on (none past the end).
    fn from(&self, pos: usize) -> &'a [u8] {
        self.bytes.get(pos..).unwrap_or_default()
    }
}

/// A JSON error, placed in the whole input.
struct JsonError {
    at: usize,
    message: String,
    category: serde_json::error::Category,
}

impl JsonError {
    fn location(&self) -> Location {
        Location::Byte(self.at as u64)
    }

    fn fatal(self, b: &TraceBuilder) -> ImportError {
        use serde_json::error::Category;
        let message = match self.category {
            Category::Eof => "the file ends in the middle of the trace: it is cut short".into(),
            _ => format!("not valid JSON: {}", self.message),
        };
        b.error(self.location(), message)
    }
}

/// The JSON value at `pos`, and the byte after it.
fn json_value<'a, T: Deserialize<'a>>(input: Src<'a>, pos: usize) -> Result<(T, usize), JsonError> {
    let (next, consumed) = match input.text.and_then(|t| t.get(pos..)) {
        Some(rest) => {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<T>();
            (stream.next(), stream.byte_offset())
        }
        None => {
            let mut stream = serde_json::Deserializer::from_slice(input.from(pos)).into_iter::<T>();
            (stream.next(), stream.byte_offset())
        }
    };
    match next {
        Some(Ok(value)) => Ok((value, pos + consumed)),
        Some(Err(e)) => Err(JsonError {
            at: pos + offset_of(input.from(pos), e.line(), e.column()),
            message: message_of(&e),
            category: e.classify(),
        }),
        None => Err(JsonError {
            at: input.len(),
            message: "the file ends here".into(),
            category: serde_json::error::Category::Eof,
        }),
    }
}

/// serde_json's message without its " at line L column C" (the caller gives a byte offset).
fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// The byte offset of serde_json's 1-based line and 0-based column in `text`.
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text)
            .nth(line - 2)
            .map_or(text.len(), |newline| newline + 1)
    };
    line_start.saturating_add(column).min(text.len())
}

/// A JSON string, borrowed from the input when it holds no escapes.
struct Text<'a>(Cow<'a, str>);

impl Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

/// One trace event as written: strings borrowed, numbers and objects as their JSON text.
#[derive(Deserialize)]
#[serde(expecting = "a trace event object")]
struct RawEvent<'a> {
    #[serde(borrow)]
    ph: Option<Text<'a>>,
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    cat: Option<Text<'a>>,
    pid: Option<Id32>,
    tid: Option<Id32>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    id2: Option<&'a RawValue>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
}

impl<'a> RawEvent<'a> {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    fn pid(&self) -> u32 {
        self.pid.map_or(0, |id| id.0)
    }

    /// An event without a tid is on its process's main thread.
    fn tid(&self) -> u32 {
        self.tid.map_or(self.pid(), |id| id.0)
    }
}

/// A pid or tid, a number or a string: small numbers as themselves (negative ones as their
/// 32-bit two's complement), larger ones and strings (by `key_of`) folded to 32 bits.
#[derive(Clone, Copy)]
struct Id32(u32);

impl Id32 {
    fn fold(key: u64) -> Id32 {
        Id32(match u32::try_from(key) {
            Ok(id) => id,
            Err(_) if key >= 0xFFFF_FFFF_8000_0000 => key as u32,
            Err(_) => (key ^ (key >> 32)) as u32,
        })
    }
}

impl<'de> Deserialize<'de> for Id32 {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = Id32;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id32, E> {
                Ok(Id32::fold(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id32, E> {
                Ok(Id32::fold(v as u64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id32, E> {
                Ok(Id32::fold(key_of(&v.to_string())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id32, E> {
                Ok(Id32::fold(key_of(v)))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

/// Calls `f` with each key and value of the JSON object `object` (nothing if it is not one).
fn for_each_arg<'a>(object: &'a RawValue, f: impl FnMut(&str, &'a RawValue)) {
    struct Entries<F>(F);
    impl<'de, F: FnMut(&str, &'de RawValue)> Visitor<'de> for Entries<F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Text<'de>>()? {
                let value: &'de RawValue = map.next_value()?;
                (self.0)(&key, value);
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(object.get());
    let _ = de.deserialize_map(Entries(f));
}

/// `args.NAME`, if `args` is an object holding it.
fn arg<'a>(args: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    let mut found = None;
    for_each_arg(args, |key, value| {
        if found.is_none() && key == name {
            found = Some(value);
        }
    });
    found
}

fn string_arg<'a>(args: &'a RawValue, name: &str) -> Option<Cow<'a, str>> {
    let value = arg(args, name)?;
    serde_json::from_str::<Text<'a>>(value.get())
        .ok()
        .map(|t| t.0)
}

/// A frame id or key: numbers as themselves, strings by `key_of`, anything else hashed.
fn key_of_raw(raw: &RawValue) -> u64 {
    let text = raw.get();
    if text.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<Text>(text) {
            return key_of(&s);
        }
    }
    key_of(text)
}

/// An event's `id`, or its `id2` (`{"local": ID}` or `{"global": ID}`).
fn id_key(event: &RawEvent) -> Option<u64> {
    if let Some(id) = event.id {
        return Some(key_of_raw(id));
    }
    let mut key = None;
    for_each_arg(event.id2?, |scope, value| {
        // A local and a global id of the same value are different things.
        let salt = if scope == "global" {
            0x9E37_79B9_7F4A_7C15
        } else {
            0
        };
        key = Some(key_of_raw(value) ^ salt);
    });
    key
}

/// A counter's value (a JSON number, not a string) in thousandths: exact to 10^-3 below
/// 9.2·10^15, beyond that an integer (fractions there are below the value's precision).
fn counter_milli(text: &str) -> Result<i128, DecimalError> {
    if text.starts_with('"') {
        return Err(DecimalError::NotANumber);
    }
    match scaled(text.as_bytes(), 1_000, Grammar::JSON) {
        Err(DecimalError::OutOfRange) => {
            scaled(text.as_bytes(), 1, Grammar::JSON).map(|v| i128::from(v) * 1_000)
        }
        milli => milli.map(i128::from),
    }
}

/// Microseconds as written → nanoseconds, within ±`MAX_TIME_NS`.
fn micros_to_ns(text: &str) -> Result<i64, &'static str> {
    const TOO_LARGE: &str = "is too large (more than 73 years in microseconds)";
    let ns = scaled(text.as_bytes(), 1_000, Grammar::JSON).map_err(|e| match e {
        DecimalError::NotANumber => "is not a number of microseconds",
        DecimalError::OutOfRange => TOO_LARGE,
    })?;
    if i128::from(ns).abs() > MAX_TIME_NS {
        return Err(TOO_LARGE);
    }
    Ok(ns)
}

/// Text for an error message, cut short.
fn shown(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Where slices' frame ids come from.
enum FrameRule {
    /// Each slice is a frame of its own.
    EachSlice,
    /// `args.NAME` (`--frame-arg`, or `frame` in framelab exports).
    Arg(String),
    /// `--frame-regex` on the name.
    Regex,
}

/// A slice begun (`B`, `b`) and not yet ended.
struct Open<'a> {
    name: Cow<'a, str>,
    args: Option<&'a RawValue>,
    thread: u32,
    start_ns: i64,
}

/// Async slices match on pid, category, id and name (the strings as hashes).
type AsyncKey = (u32, u64, u64, u64);

/// Counter readings of one series, held until the end: a fractional value anywhere makes
/// the whole series milli-units.
struct PendingSeries {
    metric: String,
    pid: u32,
    /// (time in ns, value × 1000).
    readings: Vec<(i64, i128)>,
    fractional: bool,
}

/// What could not become spans, events or samples, for the notes.
#[derive(Default)]
struct Tally {
    unmatched_ends: u64,
    mismatched_ends: u64,
    unmatched_async_ends: u64,
    no_frame: u64,
    other_process: u64,
    non_numeric_counters: u64,
    counters_out_of_range: u64,
    ignored: BTreeMap<String, u64>,
}

/// At most this many distinct unknown phases are named in the note; more are "other".
const MAX_IGNORED_KINDS: usize = 32;

struct Importer<'a> {
    frames: FrameRule,
    /// The argument holding an instant's key.
    key_arg: Option<String>,
    framelab: bool,
    keep_pids: Option<HashSet<u32>>,
    open: HashMap<(u32, u32), Vec<Open<'a>>>,
    open_async: HashMap<AsyncKey, Vec<Open<'a>>>,
    series: Vec<PendingSeries>,
    series_ids: HashMap<(u32, u64, u64), usize>,
    tally: Tally,
    last_thread: Option<((u32, u32), u32)>,
    /// `process_name` metadata, for the counter series' labels.
    process_names: HashMap<u32, String>,
    recent_stages: Vec<(String, u16)>,
    next_recent: usize,
}

/// How many stage names `Importer::stage` keeps at hand.
const RECENT_STAGES: usize = 16;

impl<'a> Importer<'a> {
    fn new(b: &TraceBuilder, framelab: bool) -> Importer<'a> {
        let frames = if let Some(arg) = &b.opts.frame_arg {
            FrameRule::Arg(arg.clone())
        } else if b.opts.frame_regex.is_some() {
            FrameRule::Regex
        } else if framelab {
            FrameRule::Arg("frame".into())
        } else {
            FrameRule::EachSlice
        };
        let key_arg = b
            .opts
            .key
            .clone()
            .or_else(|| framelab.then(|| "key".to_owned()));
        Importer {
            frames,
            key_arg,
            framelab,
            keep_pids: None,
            open: HashMap::new(),
            open_async: HashMap::new(),
            series: Vec::new(),
            series_ids: HashMap::new(),
            tally: Tally::default(),
            last_thread: None,
            process_names: HashMap::new(),
            recent_stages: Vec::new(),
            next_recent: 0,
        }
    }

    fn handle(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: u64,
    ) -> Result<(), ImportError> {
        let at = Location::Byte(at);
        let Some(ph) = event.ph.as_deref() else {
            return b.bad(at, "trace event without \"ph\" (its phase, e.g. \"X\")");
        };
        let instant = matches!(ph, "i" | "I" | "n" | "R");
        if instant && event.name() == LAUNCH_MARKER {
            if let Some(t) = self.time(b, event.ts, "ts", at)? {
                b.set_origin(t);
            }
            return Ok(());
        }
        if let Some(keep) = &self.keep_pids {
            if !keep.contains(&event.pid()) {
                if ph != "M" {
                    self.tally.other_process += 1;
                }
                return Ok(());
            }
        }
        match ph {
            "X" => self.complete(b, event, at),
            "B" => self.begin(b, event, at),
            "E" => self.end(b, event, at),
            "b" | "S" => self.async_begin(b, event, at),
            "e" | "F" => self.async_end(b, event, at),
            "i" | "I" | "n" => self.instant(b, event, at),
            "C" => self.counter(b, event, at),
            "M" => {
                self.metadata(b, &event);
                Ok(())
            }
            other => {
                self.ignore(other);
                Ok(())
            }
        }
    }

    fn ignore(&mut self, phase: &str) {
        let ignored = &mut self.tally.ignored;
        if let Some(n) = ignored.get_mut(phase) {
            *n += 1;
        } else if ignored.len() < MAX_IGNORED_KINDS {
            ignored.insert(phase.to_owned(), 1);
        } else {
            *ignored.entry("other".into()).or_default() += 1;
        }
    }

    /// A time field in ns; `None` when it was bad and `--skip-bad` skips the event.
    fn time(
        &self,
        b: &mut TraceBuilder,
        raw: Option<&RawValue>,
        field: &str,
        at: Location,
    ) -> Result<Option<i64>, ImportError> {
        let problem = match raw.map(|r| (r, micros_to_ns(r.get()))) {
            None => format!("trace event without \"{field}\" (microseconds)"),
            // A framelab export's times are relative to the launch: some may precede it.
            Some((_, Ok(ns))) if ns >= 0 || (self.framelab && field == "ts") => {
                return Ok(Some(ns))
            }
            Some((raw, Ok(_))) => format!(
                "negative \"{field}\" ({}): times and durations are microseconds and cannot \
                 be negative",
                shown(raw.get())
            ),
            Some((raw, Err(why))) => format!("\"{field}\" {why}: {}", shown(raw.get())),
        };
        b.bad(at, problem)?;
        Ok(None)
    }

    fn thread(&mut self, b: &mut TraceBuilder, event: &RawEvent) -> u32 {
        let pid_tid = (event.pid(), event.tid());
        match self.last_thread {
            Some((key, id)) if key == pid_tid => id,
            _ => {
                let id = b.thread(pid_tid.0, pid_tid.1);
                self.last_thread = Some((pid_tid, id));
                id
            }
        }
    }

    /// The stage id of `name`; recent names are kept here, as looking them up in the
    /// builder (hashing each name) is a good part of the time on big traces.
    fn stage(
        &mut self,
        b: &mut TraceBuilder,
        name: &str,
        at: Location,
    ) -> Result<u16, ImportError> {
        if let Some((_, id)) = self.recent_stages.iter().find(|(n, _)| n == name) {
            return Ok(*id);
        }
        let id = b.stage(name, at)?;
        if self.recent_stages.len() < RECENT_STAGES {
            self.recent_stages.push((name.to_owned(), id));
        } else {
            let slot = self.next_recent % RECENT_STAGES;
            self.recent_stages[slot] = (name.to_owned(), id);
            self.next_recent += 1;
        }
        Ok(id)
    }

    /// The frame id and stage of a slice, or `None` (counted) when the frame rule finds no
    /// frame in it. The begin's args are looked at first, then the end's.
    fn frame_and_stage(
        &mut self,
        b: &mut TraceBuilder,
        name: &str,
        args: [Option<&RawValue>; 2],
        at: Location,
    ) -> Result<Option<(u64, u16)>, ImportError> {
        let name = if name.is_empty() { UNNAMED } else { name };
        let frame = match &self.frames {
            FrameRule::EachSlice => Some((b.next_frame(), None)),
            FrameRule::Arg(wanted) => args
                .into_iter()
                .flatten()
                .find_map(|a| arg(a, wanted))
                .map(|v| (key_of_raw(v), None)),
            FrameRule::Regex => b
                .opts
                .frame_in_name(name)
                .map(|(frame, stage)| (frame, Some(stage))),
        };
        let Some((frame, stage_name)) = frame else {
            self.tally.no_frame += 1;
            return Ok(None);
        };
        let stage = self.stage(b, stage_name.as_deref().unwrap_or(name), at)?;
        Ok(Some((frame, stage)))
    }

    fn complete(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(start) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let Some(dur) = self.time(b, event.dur, "dur", at)? else {
            return Ok(());
        };
        let thread = self.thread(b, &event);
        if let Some((frame, stage)) =
            self.frame_and_stage(b, event.name(), [event.args, None], at)?
        {
            b.span(frame, stage, thread, start, dur);
        }
        Ok(())
    }

    fn begin(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(start) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let thread = self.thread(b, &event);
        let pid_tid = (event.pid(), event.tid());
        let name = event.name.map_or(Cow::Borrowed(""), |n| n.0);
        self.open.entry(pid_tid).or_default().push(Open {
            name,
            args: event.args,
            thread,
            start_ns: start,
        });
        Ok(())
    }

    fn end(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(end) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let pid_tid = (event.pid(), event.tid());
        let Some(open) = self.open.get_mut(&pid_tid).and_then(Vec::pop) else {
            self.tally.unmatched_ends += 1;
            return Ok(());
        };
        if event
            .name
            .as_deref()
            .is_some_and(|n| !n.is_empty() && n != open.name)
        {
            self.tally.mismatched_ends += 1;
        }
        self.close(b, open, end, event.args, at)
    }

    /// A begun slice ended at `end`: a span, unless it ends before it began.
    fn close(
        &mut self,
        b: &mut TraceBuilder,
        open: Open<'a>,
        end: i64,
        end_args: Option<&'a RawValue>,
        at: Location,
    ) -> Result<(), ImportError> {
        let dur = end - open.start_ns;
        if dur < 0 {
            return b.bad(
                at,
                format!(
                    "the end of {:?} (ts {end} ns) comes before its begin (ts {} ns)",
                    shown(&open.name),
                    open.start_ns
                ),
            );
        }
        if let Some((frame, stage)) =
            self.frame_and_stage(b, &open.name, [open.args, end_args], at)?
        {
            b.span(frame, stage, open.thread, open.start_ns, dur);
        }
        Ok(())
    }

    fn async_key(event: &RawEvent) -> AsyncKey {
        let pid = event.pid();
        let cat = fnv1a(event.cat.as_deref().unwrap_or("").as_bytes());
        let name = fnv1a(event.name().as_bytes());
        (pid, cat, name, id_key(event).unwrap_or(0))
    }

    fn async_begin(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(start) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let thread = self.thread(b, &event);
        let key = Self::async_key(&event);
        let name = event.name.map_or(Cow::Borrowed(""), |n| n.0);
        self.open_async.entry(key).or_default().push(Open {
            name,
            args: event.args,
            thread,
            start_ns: start,
        });
        Ok(())
    }

    fn async_end(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(end) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let key = Self::async_key(&event);
        let Some(open) = self.open_async.get_mut(&key).and_then(Vec::pop) else {
            self.tally.unmatched_async_ends += 1;
            return Ok(());
        };
        self.close(b, open, end, event.args, at)
    }

    fn instant(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(t) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let from_arg = (self.key_arg.as_deref())
            .zip(event.args)
            .and_then(|(name, args)| arg(args, name));
        let key = match from_arg {
            Some(raw) => key_of_raw(raw),
            None => id_key(&event).unwrap_or(0),
        };
        let thread = self.thread(b, &event);
        let name = if event.name().is_empty() {
            UNNAMED
        } else {
            event.name()
        };
        b.event(name, key, thread, t, at)
    }

    fn counter(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(t) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let Some(args) = event.args else {
            self.tally.non_numeric_counters += 1;
            return Ok(());
        };
        let pid = event.pid();
        let name = event.name();
        let id = id_key(&event).map(|id| id.to_string());
        let mut readings = Vec::new();
        for_each_arg(args, |key, value| readings.push((key.to_owned(), value)));
        for (key, value) in readings {
            let milli = match counter_milli(value.get()) {
                Ok(milli) => milli,
                Err(DecimalError::NotANumber) => {
                    self.tally.non_numeric_counters += 1;
                    continue;
                }
                Err(DecimalError::OutOfRange) => {
                    self.tally.counters_out_of_range += 1;
                    continue;
                }
            };
            let name_hash = fnv1a(name.as_bytes())
                ^ id.as_deref()
                    .map_or(0, |i| fnv1a(i.as_bytes()).rotate_left(17));
            let index = *self
                .series_ids
                .entry((pid, name_hash, fnv1a(key.as_bytes())))
                .or_insert_with(|| {
                    let base = match &id {
                        Some(id) => format!("{name}[{id}]"),
                        None => name.to_owned(),
                    };
                    let metric = if key == "value" {
                        base
                    } else {
                        format!("{base}.{key}")
                    };
                    self.series.push(PendingSeries {
                        metric,
                        pid,
                        readings: Vec::new(),
                        fractional: false,
                    });
                    self.series.len() - 1
                });
            let series = &mut self.series[index];
            series.fractional |= milli % 1000 != 0;
            series.readings.push((t, milli));
        }
        Ok(())
    }

    fn metadata(&mut self, b: &mut TraceBuilder, event: &RawEvent<'a>) {
        let Some(name) = event.args.and_then(|a| string_arg(a, "name")) else {
            return;
        };
        let pid = event.pid();
        match event.name() {
            "process_name" => {
                b.name_process(pid, &name);
                self.process_names.insert(pid, name.into_owned());
            }
            "thread_name" => b.name_thread(pid, event.tid(), &name),
            _ => {}
        }
    }

    /// Counter series handed over; one note for each kind of thing left out.
    fn finish(mut self, b: &mut TraceBuilder) {
        let mut fractional = 0;
        for pending in std::mem::take(&mut self.series) {
            fractional += usize::from(pending.fractional);
            let (unit, divisor) = if pending.fractional {
                ("milli", 1)
            } else {
                ("", 1000)
            };
            let label = match self.process_names.get(&pending.pid) {
                Some(name) => format!("{name} (pid {})", pending.pid),
                None => format!("pid {}", pending.pid),
            };
            let series = b.series(SampleSeries {
                source: "chrome".into(),
                metric: pending.metric,
                entity: pending.pid.to_string(),
                label,
                unit: unit.into(),
                kind: SeriesKind::Gauge,
            });
            for (t, milli) in pending.readings {
                match i64::try_from(milli / divisor) {
                    Ok(value) => b.sample(series, t, value),
                    Err(_) => self.tally.counters_out_of_range += 1,
                }
            }
        }
        if fractional > 0 {
            b.note(format!(
                "{fractional} counter series had fractional values: stored × 1000, unit \"milli\""
            ));
        }
        let unclosed: usize = self.open.values().map(Vec::len).sum();
        let unclosed_async: usize = self.open_async.values().map(Vec::len).sum();
        let t = &self.tally;
        let mut notes = Vec::new();
        if unclosed > 0 {
            notes.push(format!(
                "{unclosed} slices begun (B) were never ended (E): left out"
            ));
        }
        if t.unmatched_ends > 0 {
            notes.push(format!(
                "{} slice ends (E) had no open begin (B) on their thread: left out",
                t.unmatched_ends
            ));
        }
        if t.mismatched_ends > 0 {
            notes.push(format!(
                "{} slice ends (E) named another slice than the one they closed (closed anyway)",
                t.mismatched_ends
            ));
        }
        if unclosed_async > 0 {
            notes.push(format!(
                "{unclosed_async} async slices begun (b/S) were never ended (e/F): left out"
            ));
        }
        if t.unmatched_async_ends > 0 {
            notes.push(format!(
                "{} async slice ends (e/F) matched no begin (same pid, cat, id and name): left out",
                t.unmatched_async_ends
            ));
        }
        if t.no_frame > 0 {
            let why = match &self.frames {
                FrameRule::Arg(name) => format!("had no args.{name} frame id"),
                _ => "had names --frame-regex does not match".to_owned(),
            };
            notes.push(format!("{} slices {why}: left out", t.no_frame));
        }
        if t.other_process > 0 {
            notes.push(format!(
                "{} events of other processes than --process left out",
                t.other_process
            ));
        }
        if t.non_numeric_counters > 0 {
            notes.push(format!(
                "{} counter values (C) were not numbers: left out",
                t.non_numeric_counters
            ));
        }
        if t.counters_out_of_range > 0 {
            notes.push(format!(
                "{} counter values did not fit 64 bits: left out",
                t.counters_out_of_range
            ));
        }
        if !t.ignored.is_empty() {
            let total: u64 = t.ignored.values().sum();
            let kinds: Vec<String> = t
                .ignored
                .iter()
                .map(|(phase, n)| format!("{phase:?} ×{n}"))
                .collect();
            notes.push(format!(
                "{total} events of phases framelab does not import (flows, samples, objects, \
                 marks...) ignored: {}",
                kinds.join(", ")
            ));
        }
        for note in notes {
            b.note(note);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{parse_bytes, Format, ImportOptions};
    use crate::model::Run;

    fn import(json: &str) -> Result<Run, ImportError> {
        parse_bytes(Format::Chrome, json.as_bytes(), ImportOptions::default())
    }

    fn import_with(json: &str, opts: ImportOptions) -> Result<Run, ImportError> {
        parse_bytes(Format::Chrome, json.as_bytes(), opts)
    }

    fn skip_bad() -> ImportOptions {
        ImportOptions {
            skip_bad: true,
            ..ImportOptions::default()
        }
    }

    /// (frame, stage, pid, tid, start_ns, dur_ns) in the order they were made.
    fn spans(run: &Run) -> Vec<(u64, &str, u32, u32, i64, i64)> {
        run.spans
            .iter()
            .map(|s| {
                let t = &run.threads[s.thread as usize];
                let stage = run.stages[usize::from(s.stage)].as_str();
                (s.frame, stage, t.pid, t.tid, s.start_ns, s.dur_ns)
            })
            .collect()
    }

    fn notes(run: &Run) -> Vec<String> {
        run.import.as_ref().unwrap().notes.clone()
    }

    #[test]
    fn microseconds_become_exact_nanoseconds_within_the_time_range() {
        assert_eq!(micros_to_ns("1234.5675"), Ok(1_234_568));
        assert_eq!(micros_to_ns("\"12.5\""), Ok(12_500));
        assert_eq!(micros_to_ns("2305843009213693.952"), Ok(1 << 61));
        assert!(micros_to_ns("2305843009213693.953")
            .unwrap_err()
            .contains("too large"));
        assert!(micros_to_ns("1e999999").unwrap_err().contains("too large"));
        assert!(micros_to_ns(".5").unwrap_err().contains("not a number"));
    }

    #[test]
    fn counter_values_are_thousandths_and_huge_ones_integers() {
        assert_eq!(counter_milli("12.3456"), Ok(12_346));
        assert_eq!(counter_milli("1e17"), Ok(100_000_000_000_000_000_000));
        assert_eq!(counter_milli("\"12\""), Err(DecimalError::NotANumber));
        assert_eq!(counter_milli("1e19"), Err(DecimalError::OutOfRange));
    }

    #[test]
    fn complete_slices_in_array_form() {
        let run = import(
            r#"[
            {"ph":"X","name":"capture","cat":"a","pid":1,"tid":2,"ts":1000.5,"dur":250.25},
            {"ph":"X","name":"encode","pid":1,"tid":3,"ts":1.0005e3,"dur":0.001},
            {"ph":"X","name":"capture","pid":1,"tid":2,"ts":"1300","dur":1}
            ]"#,
        )
        .unwrap();
        // The earliest ts (1000.5 µs) is the origin.
        assert_eq!(
            spans(&run),
            [
                (0, "capture", 1, 2, 0, 250_250),
                (1, "encode", 1, 3, 0, 1),
                (2, "capture", 1, 2, 299_500, 1_000),
            ]
        );
        assert_eq!(run.meta.origin_mono_ns, 1_000_500);
        assert!(notes(&run).is_empty());
    }

    #[test]
    fn object_form_with_events_anywhere_and_names() {
        let run = import(
            r#"{"displayTimeUnit":"ns","metadata":{"x":[1,{"traceEvents":2}]},
            "traceEvents":[
              {"ph":"M","name":"process_name","pid":7,"args":{"name":"game"}},
              {"ph":"M","name":"thread_name","pid":7,"tid":8,"args":{"name":"render"}},
              {"ph":"M","name":"process_sort_index","pid":7,"args":{"sort_index":1}},
              {"ph":"X","name":"draw","pid":7,"tid":8,"ts":10,"dur":2},
              {"ph":"X","name":"sim","pid":7,"tid":9,"ts":11,"dur":3}
            ],
            "otherData":{"version":"x"}}"#,
        )
        .unwrap();
        assert_eq!(
            spans(&run),
            [(0, "draw", 7, 8, 0, 2_000), (1, "sim", 7, 9, 1_000, 3_000)]
        );
        let names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["render", "game"],
            "unnamed threads take the process name"
        );
    }

    #[test]
    fn begin_end_pairs_per_thread_and_what_does_not_pair() {
        let run = import(
            r#"[
            {"ph":"B","name":"outer","pid":1,"tid":1,"ts":0},
            {"ph":"B","name":"inner","pid":1,"tid":1,"ts":1},
            {"ph":"B","name":"other thread","pid":1,"tid":2,"ts":1.5},
            {"ph":"E","pid":1,"tid":1,"ts":2},
            {"ph":"E","name":"not outer","pid":1,"tid":1,"ts":5},
            {"ph":"E","pid":1,"tid":1,"ts":6},
            {"ph":"E","pid":2,"tid":1,"ts":6},
            {"ph":"B","name":"never ends","pid":1,"tid":1,"ts":7}
            ]"#,
        )
        .unwrap();
        assert_eq!(
            spans(&run),
            [
                (0, "inner", 1, 1, 1_000, 1_000),
                (1, "outer", 1, 1, 0, 5_000)
            ]
        );
        assert_eq!(
            notes(&run),
            [
                "2 slices begun (B) were never ended (E): left out",
                "2 slice ends (E) had no open begin (B) on their thread: left out",
                "1 slice ends (E) named another slice than the one they closed (closed anyway)",
            ]
        );
    }

    #[test]
    fn async_slices_match_on_category_id_and_name() {
        let run = import(
            r#"[
            {"ph":"b","name":"load","cat":"net","id":"0x1","pid":1,"tid":1,"ts":0},
            {"ph":"b","name":"load","cat":"net","id":"0x2","pid":1,"tid":1,"ts":1},
            {"ph":"b","name":"load","cat":"net","id2":{"local":"0x1"},"pid":1,"tid":4,"ts":2},
            {"ph":"e","name":"load","cat":"net","id":"0x2","pid":1,"tid":9,"ts":4},
            {"ph":"e","name":"load","cat":"net","id":1,"pid":1,"tid":9,"ts":5},
            {"ph":"e","name":"load","cat":"other","id":"0x1","pid":1,"tid":9,"ts":6},
            {"ph":"S","name":"legacy","cat":"x","id":7,"pid":1,"tid":1,"ts":3},
            {"ph":"F","name":"legacy","cat":"x","id":7,"pid":1,"tid":1,"ts":8.25}
            ]"#,
        )
        .unwrap();
        // Ends match by value (`"0x1"` and `1` are the same id); the span is on the begin's
        // thread. The never-ended begin at 0 is not a span: the origin is the first span's.
        assert_eq!(
            spans(&run),
            [
                (0, "load", 1, 1, 0, 3_000),
                (1, "load", 1, 4, 1_000, 3_000),
                (2, "legacy", 1, 1, 2_000, 5_250),
            ]
        );
        assert_eq!(
            notes(&run),
            [
                "1 async slices begun (b/S) were never ended (e/F): left out",
                "1 async slice ends (e/F) matched no begin (same pid, cat, id and name): left out",
            ]
        );
    }

    #[test]
    fn instants_keyed_and_the_launch_marker_is_the_origin() {
        let opts = ImportOptions {
            key: Some("req".into()),
            ..ImportOptions::default()
        };
        let run = import_with(
            r#"[
            {"ph":"i","name":"send","pid":1,"tid":1,"ts":100,"args":{"req":"0x10"}},
            {"ph":"X","name":"work","pid":1,"tid":1,"ts":101,"dur":1},
            {"ph":"I","name":"recv","pid":1,"tid":1,"ts":103,"id":5},
            {"ph":"n","name":"mark","pid":1,"tid":2,"ts":104,"id2":{"local":3}},
            {"ph":"i","name":"bare","pid":1,"tid":2,"ts":105},
            {"ph":"i","name":"framelab:launch","pid":0,"tid":0,"ts":99.999}
            ]"#,
            opts,
        )
        .unwrap();
        let events: Vec<(&str, u64, i64)> = run
            .events
            .iter()
            .map(|e| {
                (
                    run.event_names[usize::from(e.event)].as_str(),
                    e.key,
                    e.t_ns,
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                ("send", 16, 1),
                ("recv", 5, 3_001),
                ("mark", 3, 4_001),
                ("bare", 0, 5_001)
            ]
        );
        assert_eq!(spans(&run), [(0, "work", 1, 1, 1_001, 1_000)]);
        assert_eq!(run.threads.len(), 2, "the marker makes no thread");
    }

    #[test]
    fn counters_become_series_and_fractions_milli_units() {
        let run = import(
            r#"[
            {"ph":"C","name":"queue","pid":3,"tid":1,"ts":0,"args":{"value":2}},
            {"ph":"C","name":"queue","pid":3,"tid":1,"ts":1,"args":{"value":5}},
            {"ph":"C","name":"mem","pid":3,"ts":0,"args":{"heap":1.5,"stack":"big"}},
            {"ph":"C","name":"mem","pid":3,"ts":2,"args":{"heap":2}}
            ]"#,
        )
        .unwrap();
        let series = &run.telemetry.series;
        let described: Vec<(&str, &str, &str, &str)> = series
            .iter()
            .map(|s| {
                (
                    s.source.as_str(),
                    s.metric.as_str(),
                    s.entity.as_str(),
                    s.unit.as_str(),
                )
            })
            .collect();
        assert_eq!(
            described,
            [
                ("chrome", "queue", "3", ""),
                ("chrome", "mem.heap", "3", "milli")
            ]
        );
        let samples: Vec<(u32, i64, i64)> = (run.telemetry.samples.iter())
            .map(|s| (s.series, s.t_ns, s.value))
            .collect();
        assert_eq!(
            samples,
            [(0, 0, 2), (0, 1_000, 5), (1, 0, 1_500), (1, 2_000, 2_000)]
        );
        assert_eq!(
            notes(&run),
            [
                "1 counter series had fractional values: stored × 1000, unit \"milli\"",
                "1 counter values (C) were not numbers: left out",
            ]
        );
    }

    #[test]
    fn flows_and_other_phases_are_counted_in_one_note() {
        let run = import(
            r#"[{"ph":"s","id":1,"ts":0},{"ph":"f","id":1,"ts":1},{"ph":"t","ts":1},
            {"ph":"P","ts":1},{"ph":"O","ts":1},{"ph":"N","ts":1},{"ph":"D","ts":1},
            {"ph":"R","name":"navigationStart","ts":1},{"ph":"c","ts":1},{"ph":"s","id":2,"ts":3}]"#,
        )
        .unwrap();
        assert!(run.spans.is_empty());
        assert_eq!(
            notes(&run),
            [
                "10 events of phases framelab does not import (flows, samples, objects, marks...) \
              ignored: \"D\" ×1, \"N\" ×1, \"O\" ×1, \"P\" ×1, \"R\" ×1, \"c\" ×1, \"f\" ×1, \
              \"s\" ×2, \"t\" ×1"
            ]
        );
    }

    #[test]
    fn a_missing_closing_bracket_is_accepted_and_noted() {
        for tail in ["", ",", ",\n", "\n"] {
            let json = format!(
                "[{{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}},\n\
                 {{\"ph\":\"X\",\"name\":\"b\",\"ts\":2,\"dur\":1}}{tail}"
            );
            let run = import(&json).unwrap();
            assert_eq!(run.spans.len(), 2, "{tail:?}");
            assert_eq!(
                notes(&run),
                ["the events array has no closing ']' (Chrome leaves it off a trace cut short); \
                  every complete event was read"]
            );
        }
        // A trailing comma before the bracket is forgiven too.
        assert_eq!(
            import(r#"[{"ph":"X","ts":1,"dur":1},]"#)
                .unwrap()
                .spans
                .len(),
            1
        );
    }

    #[test]
    fn a_file_cut_inside_an_event_is_an_error_at_its_byte() {
        let json = r#"[{"ph":"X","name":"a","ts":1,"dur":1},
{"ph":"X","name":"b","ts":2,"du"#;
        let err = import(json).unwrap_err();
        assert_eq!(err.at, Location::Byte(39));
        assert!(err.message.contains("ends inside this event"), "{err}");
        let run = import_with(json, skip_bad()).unwrap();
        assert_eq!(run.spans.len(), 1);
        assert_eq!(run.import.unwrap().skipped, 1);
        // The object form cut short, inside and after the events.
        let err = import(r#"{"traceEvents":[{"ph":"X","ts":1,"dur":1}"#).unwrap();
        assert_eq!(err.spans.len(), 1);
        let err = import(r#"{"traceEvents":[],"#).unwrap_err();
        assert_eq!(err.at, Location::Byte(18));
    }

    #[test]
    fn bad_events_name_their_byte_and_skip_bad_counts_them() {
        let cases = [
            (r#"[{"ph":"X","ts":-1,"dur":1}]"#, 1, "negative \"ts\" (-1)"),
            (
                r#"[{"ph":"X","ts":1,"dur":-0.5}]"#,
                1,
                "negative \"dur\" (-0.5)",
            ),
            (r#"[{"ph":"X","ts":1}]"#, 1, "without \"dur\""),
            (
                r#"[{"ph":"X","ts":"soon","dur":1}]"#,
                1,
                "\"ts\" is not a number",
            ),
            (r#"[{"ts":1}]"#, 1, "without \"ph\""),
            (
                r#"[{"ph":5,"ts":1}]"#,
                8,
                "bad trace event: invalid type: integer `5`",
            ),
            (r#"[ 17 ]"#, 4, "expected a trace event object"),
            (r#"[{"ph":"X","ts":1,"ts":2}]"#, 22, "duplicate field `ts`"),
            (
                r#"[{"ph":"E","ts":5,"pid":1},{"ph":"B","ts":6},{"ph":"E","ts":5}]"#,
                45,
                "comes before its begin",
            ),
        ];
        for (json, at, wanted) in cases {
            let err = import(json).unwrap_err();
            assert_eq!(err.at, Location::Byte(at), "{json}: {err}");
            assert!(err.message.contains(wanted), "{json}: {err}");
            let info = import_with(json, skip_bad()).unwrap().import.unwrap();
            assert_eq!(info.skipped, 1, "{json}");
        }
    }

    #[test]
    fn garbage_and_empty_files_are_errors() {
        for (input, at) in [
            ("", Location::Whole),
            ("  \n ", Location::Whole),
            ("hello", Location::Byte(0)),
            ("\u{feff}hello", Location::Byte(3)),
            ("{\"a\":1}", Location::Whole),
            ("{\"traceEvents\":{}}", Location::Byte(15)),
            ("[{\"ph\":\"i\",\"ts\":1} {}]", Location::Byte(19)),
            ("[{\"ph\":\"X\",]", Location::Byte(12)),
            ("[{\"ph\":\"X\",\"name\":\"\u{1}\"}]", Location::Byte(20)),
            ("{\"traceEvents\":[]]", Location::Byte(17)),
        ] {
            let err = import(input).unwrap_err();
            assert_eq!(err.at, at, "{input:?}: {err}");
        }
        assert!(import("\u{feff}[]").unwrap().spans.is_empty());
        let run = import("[] trailing").unwrap();
        assert_eq!(
            notes(&run),
            ["8 bytes after the end of the trace (byte 3) were ignored"]
        );
    }

    #[test]
    fn frame_ids_from_an_argument_or_the_name() {
        let json = r#"[
            {"ph":"X","name":"decode #12","pid":1,"tid":1,"ts":0,"dur":1,"args":{"f":12}},
            {"ph":"X","name":"present #12","pid":1,"tid":1,"ts":1,"dur":1,"args":{"f":"12"}},
            {"ph":"B","name":"decode #13","pid":1,"tid":1,"ts":2},
            {"ph":"E","pid":1,"tid":1,"ts":3,"args":{"f":13}},
            {"ph":"X","name":"idle","pid":1,"tid":1,"ts":4,"dur":1}
        ]"#;
        let by_arg = import_with(
            json,
            ImportOptions {
                frame_arg: Some("f".into()),
                ..ImportOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            spans(&by_arg),
            [
                (12, "decode #12", 1, 1, 0, 1_000),
                (12, "present #12", 1, 1, 1_000, 1_000),
                (13, "decode #13", 1, 1, 2_000, 1_000),
            ]
        );
        assert_eq!(
            notes(&by_arg),
            ["1 slices had no args.f frame id: left out"]
        );
        let by_name = import_with(
            json,
            ImportOptions {
                frame_regex: Some(regex::Regex::new(r"#(\d+)").unwrap()),
                ..ImportOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            spans(&by_name),
            [
                (12, "decode", 1, 1, 0, 1_000),
                (12, "present", 1, 1, 1_000, 1_000),
                (13, "decode", 1, 1, 2_000, 1_000),
            ]
        );
        assert_eq!(
            notes(&by_name),
            ["1 slices had names --frame-regex does not match: left out"]
        );
    }

    #[test]
    fn a_framelab_marker_after_the_events_still_counts() {
        let json = r#"{"traceEvents":[
            {"ph":"X","name":"a","pid":1,"tid":1,"ts":5,"dur":1,"args":{"frame":40}},
            {"ph":"i","name":"commit","pid":1,"tid":1,"ts":6,"args":{"key":9}},
            {"ph":"i","name":"framelab:launch","ts":0}
        ],"otherData":{"framelab":{"version":"0"}}}"#;
        let run = import(json).unwrap();
        assert_eq!(spans(&run), [(40, "a", 1, 1, 5_000, 1_000)]);
        assert_eq!(run.events[0].key, 9);
        // Without the marker, the same file is anyone's trace.
        let plain = import(&json.replace("framelab\":{", "other\":{")).unwrap();
        assert_eq!(spans(&plain), [(0, "a", 1, 1, 5_000, 1_000)]);
        assert_eq!(plain.events[0].key, 0);
    }

    #[test]
    fn process_filter_keeps_one_process_named_at_the_end() {
        let json = r#"[
            {"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1},
            {"ph":"X","name":"b","pid":2,"tid":1,"ts":0,"dur":1},
            {"ph":"X","name":"c","pid":"3","tid":1,"ts":0,"dur":1},
            {"ph":"M","name":"process_name","pid":1,"args":{"name":"game"}},
            {"ph":"M","name":"process_name","pid":2,"args":{"name":"compositor"}},
            {"ph":"M","name":"process_name","pid":3,"args":{"name":"game"}}
        ]"#;
        let opts = |name: &str| ImportOptions {
            process: Some(name.into()),
            ..ImportOptions::default()
        };
        let run = import_with(json, opts("game")).unwrap();
        let kept: Vec<&str> = spans(&run).iter().map(|s| s.1).collect();
        assert_eq!(kept, ["a", "c"]);
        assert_eq!(
            notes(&run),
            ["1 events of other processes than --process left out"]
        );
        let err = import_with(json, opts("editor")).unwrap_err();
        assert_eq!(
            err.message,
            "no process named \"editor\" in this trace (--process); its processes: compositor, game"
        );
    }

    #[test]
    fn string_and_huge_ids_fold_to_32_bits() {
        let run = import(
            r#"[{"ph":"X","name":"a","pid":"renderer","tid":-1,"ts":0,"dur":1},
            {"ph":"X","name":"a","pid":4294967296,"tid":7,"ts":0,"dur":1}]"#,
        )
        .unwrap();
        let t = &run.threads;
        assert_eq!(t[0].pid, {
            let k = key_of("renderer");
            (k ^ (k >> 32)) as u32
        });
        assert_eq!(t[0].tid, u32::MAX);
        assert_eq!((t[1].pid, t[1].tid), (1, 7));
    }

    #[test]
    fn escaped_names_are_unescaped() {
        let run = import(r#"[{"ph":"X","name":"a\"b\u00e9","ts":0,"dur":1}]"#).unwrap();
        assert_eq!(run.stages, ["a\"bé"]);
    }
}
