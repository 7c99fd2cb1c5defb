//! The JSON reader: the events array walked one event at a time, with the place of every
//! error in the whole input, and what a trace cut short leaves.

use std::collections::{BTreeMap, HashSet};

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::*;
use crate::import::{ImportError, Location, TraceBuilder};

/// How reading the events array ended.
pub(super) struct Walked {
    /// The byte after the closing `]` (the file's end when cut off).
    pub(super) end: usize,
    /// The file ended inside the array (Chrome leaves the `]` off a trace cut short).
    pub(super) cut_off: bool,
}

/// Reads the events array opening at `open` into `b`.
pub(super) fn read_events(
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
    importer.refuse_unmatched_rule(b)?;
    importer.finish(b);
    Ok(walked)
}

/// `--process NAME`: the pids whose `process_name` metadata is NAME (a first pass, since
/// Chrome writes the metadata last).
pub(super) fn pids_named(
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

pub(super) type EventHandler<'h, 'a> =
    dyn FnMut(&mut TraceBuilder, RawEvent<'a>, u64) -> Result<(), ImportError> + 'h;

/// Calls `handle` with each event of the array opening at `open` and its byte offset.
/// `quiet` (a first pass) skips bad events without counting them.
pub(super) fn walk<'a>(
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
pub(super) fn cut_inside_event(
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
pub(super) fn cut_off(input: Src, b: &mut TraceBuilder, quiet: bool) -> Walked {
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

pub(super) fn cut_short(b: &TraceBuilder, pos: usize) -> ImportError {
    b.error(
        Location::Byte(pos as u64),
        "the file ends inside the trace object: it is cut short",
    )
}

pub(super) fn unexpected(b: &TraceBuilder, input: Src, pos: usize, wanted: &str) -> ImportError {
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

pub(super) fn skip_ws(input: Src, mut pos: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = input.get(pos) {
        pos += 1;
    }
    pos
}

/// The input, and the same as text when it is valid UTF-8 (then strings need no checking
/// as they are read, which is most of the parsing time saved).
#[derive(Clone, Copy)]
pub(super) struct Src<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) text: Option<&'a str>,
}

impl<'a> Src<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Src<'a> {
        Src {
            bytes,
            text: std::str::from_utf8(bytes).ok(),
        }
    }

    pub(super) fn get(&self, pos: usize) -> Option<&'a u8> {
        self.bytes.get(pos)
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The bytes from `pos` on (none past the end).
    pub(super) fn from(&self, pos: usize) -> &'a [u8] {
        self.bytes.get(pos..).unwrap_or_default()
    }
}

/// A JSON error, placed in the whole input.
pub(super) struct JsonError {
    pub(super) at: usize,
    pub(super) message: String,
    pub(super) category: serde_json::error::Category,
}

impl JsonError {
    pub(super) fn location(&self) -> Location {
        Location::Byte(self.at as u64)
    }

    pub(super) fn fatal(self, b: &TraceBuilder) -> ImportError {
        use serde_json::error::Category;
        let message = match self.category {
            Category::Eof => "the file ends in the middle of the trace: it is cut short".into(),
            _ => format!("not valid JSON: {}", self.message),
        };
        b.error(self.location(), message)
    }
}

/// The JSON value at `pos`, and the byte after it.
pub(super) fn json_value<'a, T: Deserialize<'a>>(
    input: Src<'a>,
    pos: usize,
) -> Result<(T, usize), JsonError> {
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
pub(super) fn message_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// The byte offset of serde_json's 1-based line and 0-based column in `text`.
pub(super) fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text)
            .nth(line - 2)
            .map_or(text.len(), |newline| newline + 1)
    };
    line_start.saturating_add(column).min(text.len())
}
