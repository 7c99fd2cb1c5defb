//! Generic CSV and JSON Lines: one record per row or line, each a span (start and dur,
//! or start and end) or an instant event (a time and no duration).
//!
//! Which column holds what: `--map FIELD=COLUMN` (fields `start`, `end`, `dur`, `time`,
//! `name`, `frame`, `thread`, `thread_name`, `pid`, `key`); a field not mapped is looked
//! for under its usual names, case-insensitively:
//!
//! | field  | names (each also with a unit suffix `_ns`, `_us`, `_ms`, `_s`) |
//! | ------ | ------------------------------------------------------------ |
//! | start  | `start`, `ts`                                               |
//! | end    | `end`                                                       |
//! | dur    | `dur`, `duration`                                           |
//! | time   | `time`, `t`, `timestamp`                                    |
//!
//! and `name` or `stage`, `frame`, `pid`, `tid` or `thread`, `thread_name`, `key` (or the
//! column `--key` names). Time numbers are in the unit their column's suffix names
//! (`start_ns`, `dur_us`), else in `--time-unit`; they are read as exact decimals.
//!
//! Threads: `tid` is a number. A `thread` column is the thread's name when a `tid` column
//! is also there (framelab's own CSV export writes both); alone, a number in it is the
//! tid and text is a name, the named threads numbered 1, 2, ... in order of appearance.
//!
//! A record whose name is `framelab:launch` (what `framelab export --format csv` writes
//! first) sets the time origin, so a round trip keeps every start to the nanosecond.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::value::RawValue;

use super::decimal::text_scaled;
use super::keys::key_of;
use super::{ImportError, Location, TimeUnit, TraceBuilder};
use crate::formats::LAUNCH_MARKER;

/// The things a record may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Start,
    End,
    Dur,
    Time,
    Name,
    Frame,
    Thread,
    ThreadName,
    Pid,
    Key,
}

impl Field {
    const ALL: [Field; 10] = [
        Field::Start,
        Field::End,
        Field::Dur,
        Field::Time,
        Field::Name,
        Field::Frame,
        Field::Thread,
        Field::ThreadName,
        Field::Pid,
        Field::Key,
    ];

    /// The name `--map` uses.
    fn name(self) -> &'static str {
        match self {
            Field::Start => "start",
            Field::End => "end",
            Field::Dur => "dur",
            Field::Time => "time",
            Field::Name => "name",
            Field::Frame => "frame",
            Field::Thread => "thread",
            Field::ThreadName => "thread_name",
            Field::Pid => "pid",
            Field::Key => "key",
        }
    }

    /// Column names looked for when `--map` does not name one, best first.
    fn usual_names(self) -> &'static [&'static str] {
        match self {
            Field::Start => &["start", "ts"],
            Field::End => &["end"],
            Field::Dur => &["dur", "duration"],
            Field::Time => &["time", "t", "timestamp"],
            Field::Name => &["name", "stage"],
            Field::Frame => &["frame"],
            Field::Thread => &["tid", "thread"],
            Field::ThreadName => &["thread_name"],
            Field::Pid => &["pid"],
            Field::Key => &["key"],
        }
    }

    fn is_time(self) -> bool {
        matches!(self, Field::Start | Field::End | Field::Dur | Field::Time)
    }

    fn index(self) -> usize {
        self as usize
    }
}

const UNIT_SUFFIXES: [(&str, TimeUnit); 4] = [
    ("_ns", TimeUnit::Ns),
    ("_us", TimeUnit::Us),
    ("_ms", TimeUnit::Ms),
    ("_s", TimeUnit::S),
];

/// The unit a column's name states (`dur_us`), if any.
fn unit_in_name(column: &str) -> Option<TimeUnit> {
    let lower = column.to_ascii_lowercase();
    UNIT_SUFFIXES
        .iter()
        .find(|(suffix, _)| lower.ends_with(suffix) && lower.len() > suffix.len())
        .map(|&(_, unit)| unit)
}

/// Whether `column` is `name` (one of `field`'s usual names), bare or, for a time, with a
/// unit suffix.
fn is_named(field: Field, name: &str, column: &str) -> bool {
    let lower = column.trim().to_ascii_lowercase();
    lower == name
        || (field.is_time()
            && UNIT_SUFFIXES
                .iter()
                .any(|(suffix, _)| lower.strip_suffix(suffix) == Some(name)))
}

/// The field `--map FIELD=COLUMN` names, or why there is none.
fn field_named(field: &str, column: &str) -> Result<Field, String> {
    (Field::ALL.into_iter())
        .find(|f| f.name().eq_ignore_ascii_case(field.trim()))
        .ok_or_else(|| {
            let known: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
            format!(
                "--map {field}={column}: there is no field {field:?}; the fields are {}",
                known.join(", ")
            )
        })
}

/// Each `--map FIELD=COLUMN` names a field: checked before any file is read, a usage
/// error.
pub fn check_map(map: &[(String, String)]) -> anyhow::Result<()> {
    for (field, column) in map {
        field_named(field, column).map_err(crate::usage::UsageError)?;
    }
    Ok(())
}

/// `--map` and `--key` as (field, column) pairs; an unknown field is an error.
fn explicit_columns(b: &TraceBuilder) -> Result<Vec<(Field, String)>, ImportError> {
    let mut out = Vec::new();
    for (field, column) in &b.opts.map {
        let f = field_named(field, column).map_err(|why| b.error(Location::Whole, why))?;
        out.push((f, column.clone()));
    }
    if let Some(key) = &b.opts.key {
        if !out.iter().any(|(f, _)| *f == Field::Key) {
            out.push((Field::Key, key.clone()));
        }
    }
    Ok(out)
}

/// A start named with `--map` but no duration or end to go with it: every record would be
/// an event, not the span the start was named for. The message says what to add.
fn start_without_length(
    b: &TraceBuilder,
    has: impl Fn(Field) -> bool,
    what: &str,
    found: &str,
) -> Option<String> {
    let (_, column) = b
        .opts
        .map
        .iter()
        .find(|(field, _)| Field::Start.name().eq_ignore_ascii_case(field.trim()))?;
    if has(Field::Dur) || has(Field::End) {
        return None;
    }
    Some(format!(
        "--map start={column}: a span needs its length too, and no dur or end {what} was found \
         among {found}; add --map dur={}/--map end={}, or use --map time={column} for events",
        what.to_uppercase(),
        what.to_uppercase()
    ))
}

/// Which column (by index into `columns`) holds each field, from a CSV header.
struct ColumnMap {
    index: [Option<usize>; 10],
    /// ns per unit of each time field's numbers.
    scale: [i64; 10],
}

impl ColumnMap {
    fn from_header(b: &TraceBuilder, columns: &[String]) -> Result<ColumnMap, ImportError> {
        let mut map = ColumnMap {
            index: [None; 10],
            scale: [b.opts.time_unit.ns_per_unit(); 10],
        };
        let found = || columns.join(", ");
        for (field, column) in explicit_columns(b)? {
            let Some(i) = columns
                .iter()
                .position(|c| c.trim().eq_ignore_ascii_case(column.trim()))
            else {
                return Err(b.error(
                    Location::Line(1),
                    format!(
                        "--map {}={column}: no column {column:?}; the columns are {}",
                        field.name(),
                        found()
                    ),
                ));
            };
            map.index[field.index()] = Some(i);
        }
        let explicit: Vec<usize> = map.index.iter().flatten().copied().collect();
        for field in Field::ALL {
            if map.index[field.index()].is_some() {
                continue;
            }
            // Usual names in their order of preference; a column mapped explicitly is taken.
            map.index[field.index()] = field.usual_names().iter().find_map(|&name| {
                (0..columns.len())
                    .find(|&i| !explicit.contains(&i) && is_named(field, name, &columns[i]))
            });
        }
        // `thread` next to `tid`: the tid is the number, `thread` the name.
        if let Some(i) = map.index[Field::Thread.index()] {
            let is_tid = columns[i].trim().eq_ignore_ascii_case("tid");
            if is_tid && map.index[Field::ThreadName.index()].is_none() {
                map.index[Field::ThreadName.index()] = (0..columns.len()).find(|&j| {
                    !explicit.contains(&j) && columns[j].trim().eq_ignore_ascii_case("thread")
                });
            }
        }
        for field in Field::ALL.into_iter().filter(|f| f.is_time()) {
            if let Some(unit) = map.index[field.index()].and_then(|i| unit_in_name(&columns[i])) {
                map.scale[field.index()] = unit.ns_per_unit();
            }
        }
        let has = |f: Field| map.index[f.index()].is_some();
        if let Some(message) = start_without_length(b, has, "column", &found()) {
            return Err(b.error(Location::Line(1), message));
        }
        if map.index[Field::Start.index()].is_none() && map.index[Field::Time.index()].is_none() {
            return Err(b.error(
                Location::Line(1),
                format!(
                    "no start or time column among {}; name them, e.g. --map start=COLUMN \
                     --map dur=COLUMN --map name=COLUMN (or --map time=COLUMN for events), \
                     and --time-unit",
                    found()
                ),
            ));
        }
        Ok(map)
    }
}

/// Threads named by text, numbered in order of appearance; threads already named.
#[derive(Default)]
struct Threads {
    by_name: HashMap<String, u32>,
    named: HashSet<(u32, u32)>,
}

/// One record's fields as text (a JSON string's content, a number's digits); `None`
/// where absent, empty or null.
type Lookup<'a> = dyn Fn(Field) -> Result<Option<Cow<'a, str>>, String> + 'a;

/// Turns one record into a span, an event or the time origin.
fn take_record(
    b: &mut TraceBuilder,
    at: Location,
    get: &Lookup<'_>,
    scale: &dyn Fn(Field) -> i64,
    threads: &mut Threads,
) -> Result<(), ImportError> {
    match read_record(get, scale, threads) {
        Ok(record) => record.emit(b, at, threads),
        Err(why) => b.bad(at, why),
    }
}

/// A record read and checked, not yet given to the builder.
struct Record {
    name: Option<String>,
    start: i64,
    dur: Option<i64>,
    frame: Option<u64>,
    key: Option<u64>,
    pid: u32,
    tid: u32,
    thread_name: Option<String>,
}

fn read_record(
    get: &Lookup<'_>,
    scale: &dyn Fn(Field) -> i64,
    threads: &mut Threads,
) -> Result<Record, String> {
    let time = |field: Field| -> Result<Option<i64>, String> {
        match get(field)? {
            None => Ok(None),
            Some(text) => (text_scaled(&text, scale(field)).and_then(in_range))
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "{} {text:?} is not a number (or is out of range)",
                        field.name()
                    )
                }),
        }
    };
    let start = match time(Field::Start)? {
        Some(t) => Some(t),
        None => time(Field::Time)?,
    };
    let Some(start) = start else {
        return Err("no start or time value".into());
    };
    let dur = match (time(Field::Dur)?, time(Field::End)?) {
        (Some(d), _) => Some(d),
        (None, Some(end)) => Some(
            end.checked_sub(start)
                .ok_or_else(|| "end − start is out of range".to_string())?,
        ),
        (None, None) => None,
    };
    if let Some(d) = dur.filter(|&d| d < 0) {
        return Err(format!(
            "negative duration ({d} ns): end before start, or a negative dur"
        ));
    }
    let number = |field: Field| -> Result<Option<u32>, String> {
        match get(field)? {
            None => Ok(None),
            Some(text) => text.trim().parse::<u32>().map(Some).map_err(|_| {
                format!(
                    "{} {text:?} is not a whole number from 0 to {}",
                    field.name(),
                    u32::MAX
                )
            }),
        }
    };
    let pid = number(Field::Pid)?.unwrap_or(0);
    let mut thread_name = get(Field::ThreadName)?.map(Cow::into_owned);
    let tid = match get(Field::Thread)? {
        None => 0,
        Some(text) => match text.trim().parse::<u32>() {
            Ok(tid) => tid,
            Err(_) => {
                let next = threads.by_name.len() as u32 + 1;
                let tid = *threads.by_name.entry(text.to_string()).or_insert(next);
                thread_name.get_or_insert_with(|| text.into_owned());
                tid
            }
        },
    };
    Ok(Record {
        name: get(Field::Name)?.map(Cow::into_owned),
        start,
        dur,
        frame: get(Field::Frame)?.map(|f| key_of(&f)),
        key: get(Field::Key)?.map(|k| key_of(&k)),
        pid,
        tid,
        thread_name,
    })
}

impl Record {
    fn emit(
        self,
        b: &mut TraceBuilder,
        at: Location,
        threads: &mut Threads,
    ) -> Result<(), ImportError> {
        let start = self.start;
        if self.dur.is_none() && self.name.as_deref() == Some(LAUNCH_MARKER) {
            b.set_origin(start);
            return Ok(());
        }
        let thread = b.thread(self.pid, self.tid);
        if let Some(name) = self.thread_name.filter(|n| !n.is_empty()) {
            if threads.named.insert((self.pid, self.tid)) {
                b.name_thread(self.pid, self.tid, &name);
            }
        }
        match self.dur {
            Some(dur) => {
                let stage = b.stage(self.name.as_deref().unwrap_or("span"), at)?;
                let frame = match self.frame {
                    Some(f) => f,
                    None => b.next_frame(),
                };
                b.span(frame, stage, thread, start, dur);
                Ok(())
            }
            None => {
                let key = self.key.or(self.frame).unwrap_or(0);
                b.event(
                    self.name.as_deref().unwrap_or("event"),
                    key,
                    thread,
                    start,
                    at,
                )
            }
        }
    }
}

/// CSV with a header row: one span or event per row. Quoted fields, CRLF and a UTF-8 BOM
/// are fine; a row with more or fewer fields than the header is a bad record.
pub fn parse_csv(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let mut records = records_of(reader);
    let header = loop {
        match records.next() {
            None => {
                return Err(b.error(
                    Location::Whole,
                    "empty file: a CSV needs a header row naming its columns",
                ))
            }
            Some(Err(e)) => return Err(b.error(Location::Line(1), format!("unreadable CSV: {e}"))),
            Some(Ok(r)) if r.iter().all(|f| f.is_empty()) => continue,
            Some(Ok(r)) => break r,
        }
    };
    let columns: Vec<String> = header
        .iter()
        .map(|c| String::from_utf8_lossy(c).trim().to_owned())
        .collect();
    let map = ColumnMap::from_header(b, &columns)?;
    let mut threads = Threads::default();
    let scale = |f: Field| map.scale[f.index()];
    for record in records {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                b.bad(Location::Line(line), format!("unreadable CSV row: {e}"))?;
                continue;
            }
        };
        let at = Location::Line(record.position().map_or(0, |p| p.line()));
        if record.len() != columns.len() {
            if record.len() == 1 && record.get(0).is_some_and(|f| f.trim_ascii().is_empty()) {
                continue;
            }
            b.bad(
                at,
                format!(
                    "{} fields where the header has {}",
                    record.len(),
                    columns.len()
                ),
            )?;
            continue;
        }
        let get = |field: Field| -> Result<Option<Cow<'_, str>>, String> {
            let Some(raw) = map.index[field.index()].and_then(|i| record.get(i)) else {
                return Ok(None);
            };
            let text = std::str::from_utf8(raw)
                .map_err(|_| format!("column {} is not UTF-8 text", field.name()))?
                .trim();
            Ok((!text.is_empty()).then_some(Cow::Borrowed(text)))
        };
        take_record(b, at, &get, &scale, &mut threads)?;
    }
    Ok(())
}

/// JSON Lines: one object per line, fields named as in a CSV header (values numbers or
/// strings; null is absent). Blank lines are skipped.
pub fn parse_jsonl(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let explicit = explicit_columns(b)?;
    let unit = b.opts.time_unit;
    let mut threads = Threads::default();
    let mut checked_first = false;
    let mut line_no = 0u64;
    for line in input.split(|&c| c == b'\n') {
        line_no += 1;
        let at = Location::Line(line_no);
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            b.bad(at, "not UTF-8 text")?;
            continue;
        };
        let object: HashMap<String, &RawValue> = match serde_json::from_str(text) {
            Ok(o) => o,
            Err(e) => {
                b.bad(at, format!("not a JSON object: {e}"))?;
                continue;
            }
        };
        let keys = JsonKeys::resolve(&object, &explicit, unit);
        if !checked_first {
            checked_first = true;
            keys.check_first(b, at, &object)?;
        }
        let get = |field: Field| keys.text(&object, field);
        let scale = |field: Field| keys.scale[field.index()];
        take_record(b, at, &get, &scale, &mut threads)?;
    }
    if !checked_first {
        return Err(b.error(
            Location::Whole,
            "empty file: JSON Lines needs one object per line",
        ));
    }
    Ok(())
}

/// Which key of one JSON object holds each field.
struct JsonKeys {
    key: [Option<String>; 10],
    scale: [i64; 10],
    explicit: [bool; 10],
}

impl JsonKeys {
    fn resolve(
        object: &HashMap<String, &RawValue>,
        explicit: &[(Field, String)],
        unit: TimeUnit,
    ) -> JsonKeys {
        let mut keys = JsonKeys {
            key: Default::default(),
            scale: [unit.ns_per_unit(); 10],
            explicit: [false; 10],
        };
        for (field, column) in explicit {
            keys.key[field.index()] = Some(column.clone());
            keys.explicit[field.index()] = true;
        }
        for field in Field::ALL {
            if keys.key[field.index()].is_some() {
                continue;
            }
            // Sorted so that of two keys matching one name the choice does not depend on
            // the map's order.
            keys.key[field.index()] = field.usual_names().iter().find_map(|&name| {
                object
                    .keys()
                    .filter(|k| is_named(field, name, k) && !explicit.iter().any(|(_, c)| c == *k))
                    .min()
                    .cloned()
            });
        }
        if let Some(thread) = &keys.key[Field::Thread.index()] {
            if thread.eq_ignore_ascii_case("tid") && keys.key[Field::ThreadName.index()].is_none() {
                keys.key[Field::ThreadName.index()] = object
                    .keys()
                    .find(|k| k.eq_ignore_ascii_case("thread"))
                    .cloned();
            }
        }
        for field in Field::ALL.into_iter().filter(|f| f.is_time()) {
            if let Some(u) = keys.key[field.index()].as_deref().and_then(unit_in_name) {
                keys.scale[field.index()] = u.ns_per_unit();
            }
        }
        keys
    }

    /// The first record decides whether the file can be read at all.
    fn check_first(
        &self,
        b: &TraceBuilder,
        at: Location,
        object: &HashMap<String, &RawValue>,
    ) -> Result<(), ImportError> {
        let mut found: Vec<&str> = object.keys().map(String::as_str).collect();
        found.sort_unstable();
        for field in Field::ALL {
            if let (true, Some(key)) = (self.explicit[field.index()], &self.key[field.index()]) {
                if !object.contains_key(key) && field.is_time() {
                    return Err(b.error(
                        at,
                        format!(
                            "--map {}={key}: the first record has no field {key:?}; its fields \
                             are {}",
                            field.name(),
                            found.join(", ")
                        ),
                    ));
                }
            }
        }
        let has = |f: Field| self.key[f.index()].is_some();
        if let Some(message) = start_without_length(b, has, "field", &found.join(", ")) {
            return Err(b.error(at, message));
        }
        if self.key[Field::Start.index()].is_none() && self.key[Field::Time.index()].is_none() {
            return Err(b.error(
                at,
                format!(
                    "no start or time field among {}; name them, e.g. --map start=FIELD \
                     --map dur=FIELD --map name=FIELD (or --map time=FIELD for events), and \
                     --time-unit",
                    found.join(", ")
                ),
            ));
        }
        Ok(())
    }

    fn text<'a>(
        &self,
        object: &HashMap<String, &'a RawValue>,
        field: Field,
    ) -> Result<Option<Cow<'a, str>>, String> {
        let Some(raw) = self.key[field.index()].as_ref().and_then(|k| object.get(k)) else {
            return Ok(None);
        };
        let raw = raw.get().trim();
        match raw.as_bytes().first() {
            Some(b'"') => {
                let s: String = serde_json::from_str(raw)
                    .map_err(|e| format!("field {} is not a JSON string: {e}", field.name()))?;
                let s = s.trim();
                Ok((!s.is_empty()).then(|| Cow::Owned(s.to_owned())))
            }
            Some(b'-' | b'0'..=b'9') => Ok(Some(Cow::Borrowed(raw))),
            _ if raw == "null" => Ok(None),
            _ => Err(format!(
                "field {} is {raw:.40}, not a number or a string",
                field.name()
            )),
        }
    }
}

/// The largest time, duration or sample value (in ns or the series' unit) importers accept,
/// about 73 years of ns: times rebased to any origin in range, plus a duration, stay
/// inside i64.
pub(crate) const MAX_VALUE: i64 = 1 << 61;

/// `value` if its magnitude is at most `MAX_VALUE`.
pub(crate) fn in_range(value: i64) -> Option<i64> {
    (-MAX_VALUE..=MAX_VALUE).contains(&value).then_some(value)
}

/// Readings of one per-row sensor column (MangoHud's), written only where the value
/// changes: the first and last row of each run of equal values are kept, so the reading
/// nearest any frame is still its own row's value, and a sensor column that repeats for
/// hundreds of frames costs two samples instead of hundreds. Not for a column measured per
/// frame (PresentMon's `Ms*`): there every row is a reading, and folding equal rows would
/// drop frames from the telemetry table's statistics.
pub(crate) struct Gauge {
    series: u32,
    last: Option<(i64, i64)>,
    last_written: bool,
}

impl Gauge {
    pub(crate) fn new(series: u32) -> Gauge {
        Gauge {
            series,
            last: None,
            last_written: false,
        }
    }

    pub(crate) fn push(&mut self, b: &mut TraceBuilder, t_ns: i64, value: i64) {
        match self.last {
            Some((_, last)) if last == value => self.last_written = false,
            Some((t, last)) => {
                if !self.last_written {
                    b.sample(self.series, t, last);
                }
                b.sample(self.series, t_ns, value);
                self.last_written = true;
            }
            None => {
                b.sample(self.series, t_ns, value);
                self.last_written = true;
            }
        }
        self.last = Some((t_ns, value));
    }

    /// Writes the last reading, if a run of equal values was still open.
    pub(crate) fn finish(&mut self, b: &mut TraceBuilder) {
        if let (Some((t, value)), false) = (self.last, self.last_written) {
            b.sample(self.series, t, value);
            self.last_written = true;
        }
    }
}

/// The rows of a CSV as byte records with their 1-based line numbers; fields are not
/// checked against the header (callers do).
pub(crate) fn csv_rows(input: &[u8]) -> impl Iterator<Item = (u64, csv::ByteRecord)> + '_ {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    records_of(reader)
        .filter_map(|r| r.ok())
        .filter(|r| !r.iter().all(|f| f.trim_ascii().is_empty()))
        .map(|r| (r.position().map_or(0, |p| p.line()), r))
}

/// The reader's records, a new one for each row. The csv crate's iterators clone one
/// record whose list of field ends keeps the size of the widest row read: every row after
/// a row of a million fields copied a million offsets (a damaged log took minutes).
fn records_of<R: std::io::Read>(
    mut reader: csv::Reader<R>,
) -> impl Iterator<Item = csv::Result<csv::ByteRecord>> {
    std::iter::from_fn(move || {
        let mut record = csv::ByteRecord::new();
        match reader.read_byte_record(&mut record) {
            Ok(true) => Some(Ok(record)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    })
}

/// A CSV field as trimmed text; invalid UTF-8 is replaced.
pub(crate) fn field_text(record: &csv::ByteRecord, index: usize) -> Cow<'_, str> {
    let raw = record.get(index).unwrap_or_default().trim_ascii();
    String::from_utf8_lossy(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::pair::PairSpec;
    use crate::import::test_support::Importer;
    use crate::import::{parse_bytes, Format, ImportOptions};
    use crate::model::Run;

    fn spans(run: &Run) -> Vec<crate::model::NamedSpan> {
        run.named_spans()
    }

    fn row(
        frame: u64,
        stage: &str,
        pid: u32,
        tid: u32,
        thread: &str,
        start: i64,
        dur: i64,
    ) -> (u64, String, u32, u32, String, i64, i64) {
        (frame, stage.into(), pid, tid, thread.into(), start, dur)
    }

    #[test]
    fn csv_spans_with_default_column_names() {
        let text = "\u{feff}frame,stage,pid,tid,thread,start_ns,dur_ns\r\n\
                    0,decode,10,11,\"dec, main\",1000,500\r\n\
                    0,render,10,12,gpu,1600,250\r\n\
                    1,decode,10,11,\"dec, main\",2000,400\r\n";
        let run = Importer(Format::Csv)
            .result_with(text, ImportOptions::default())
            .unwrap();
        assert_eq!(
            spans(&run),
            vec![
                row(0, "decode", 10, 11, "dec, main", 0, 500),
                row(0, "render", 10, 12, "gpu", 600, 250),
                row(1, "decode", 10, 11, "dec, main", 1000, 400),
            ]
        );
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 0);
    }

    #[test]
    fn csv_with_map_time_unit_and_end_columns() {
        let text = "When,Until,What\n1.5,2.25,a\n3,3.001,b\n";
        let opts = ImportOptions {
            map: vec![
                ("start".into(), "when".into()),
                ("end".into(), "Until".into()),
                ("name".into(), "What".into()),
            ],
            time_unit: TimeUnit::Ms,
            ..Default::default()
        };
        let run = Importer(Format::Csv).result_with(text, opts).unwrap();
        assert_eq!(
            spans(&run),
            vec![
                row(0, "a", 0, 0, "", 0, 750_000),
                row(1, "b", 0, 0, "", 1_500_000, 1_000),
            ]
        );
    }

    #[test]
    fn the_column_suffix_names_the_unit() {
        let text = "ts_us,dur_us,name\n10.5,2.0005,x\n";
        let run = Importer(Format::Csv)
            .result_with(text, ImportOptions::default())
            .unwrap();
        assert_eq!(run.spans[0].dur_ns, 2_001);
        let text = "t,name\n3,tick\n";
        let opts = ImportOptions {
            time_unit: TimeUnit::S,
            ..Default::default()
        };
        let run = Importer(Format::Csv).result_with(text, opts).unwrap();
        assert_eq!(run.events.len(), 1);
        assert_eq!(run.event_names, vec!["tick".to_string()]);
        assert_eq!(run.meta.origin_mono_ns, 3_000_000_000);
    }

    #[test]
    fn thread_text_is_a_name_and_numbers_are_tids() {
        let text = "start,dur,name,thread\n0,1,a,render\n5,1,a,42\n9,1,a,audio\n10,1,b,render\n";
        let run = Importer(Format::Csv)
            .result_with(text, ImportOptions::default())
            .unwrap();
        assert_eq!(
            spans(&run),
            vec![
                row(0, "a", 0, 1, "render", 0, 1),
                row(1, "a", 0, 42, "", 5, 1),
                row(2, "a", 0, 2, "audio", 9, 1),
                row(3, "b", 0, 1, "render", 10, 1),
            ]
        );
    }

    #[test]
    fn missing_columns_are_one_clear_error() {
        let err = Importer(Format::Csv)
            .result_with("a,b,c\n1,2,3\n", ImportOptions::default())
            .unwrap_err();
        assert_eq!(err.at, Location::Line(1));
        assert!(err.message.contains("a, b, c"), "{}", err.message);
        assert!(err.message.contains("--map start="), "{}", err.message);
        let opts = ImportOptions {
            map: vec![("start".into(), "nope".into())],
            ..Default::default()
        };
        let err = Importer(Format::Csv)
            .result_with("a,b\n1,2\n", opts)
            .unwrap_err();
        assert!(
            err.message.contains("no column \"nope\""),
            "{}",
            err.message
        );
        let opts = ImportOptions {
            map: vec![("begin".into(), "a".into())],
            ..Default::default()
        };
        let err = Importer(Format::Csv)
            .result_with("a,b\n1,2\n", opts)
            .unwrap_err();
        assert!(
            err.message.contains("no field \"begin\""),
            "{}",
            err.message
        );
        let err = Importer(Format::Csv)
            .result_with("", ImportOptions::default())
            .unwrap_err();
        assert!(err.message.contains("empty"), "{}", err.message);
    }

    #[test]
    fn a_start_named_without_a_length_is_refused_not_read_as_events() {
        let opts = || ImportOptions {
            map: vec![("start".into(), "begin".into())],
            ..Default::default()
        };
        let err = Importer(Format::Csv)
            .result_with("begin,step\n1,a\n", opts())
            .unwrap_err();
        assert!(
            err.message
                .contains("--map start=begin: a span needs its length too")
                && err.message.contains("among begin, step")
                && err.message.contains("--map time=begin for events"),
            "{}",
            err.message
        );
        let err = Importer(Format::Jsonl)
            .result_with("{\"begin\": 1, \"step\": \"a\"}\n", opts())
            .unwrap_err();
        assert!(
            err.message.contains("no dur or end field"),
            "{}",
            err.message
        );
        // With a duration found by its usual name it is a span.
        let run = Importer(Format::Csv)
            .result_with("begin,dur,name\n1,2,a\n", opts())
            .unwrap();
        assert_eq!(run.spans.len(), 1);
    }

    #[test]
    fn bad_rows_stop_or_are_counted_with_skip_bad() {
        let text = "start,dur,name\n0,10,a\n20,-5,a\n30,x,a\n40,10\n50,10,a\n";
        let err = Importer(Format::Csv)
            .result_with(text, ImportOptions::default())
            .unwrap_err();
        assert_eq!(err.at, Location::Line(3));
        assert!(err.message.contains("negative duration"), "{}", err.message);
        let opts = ImportOptions {
            skip_bad: true,
            ..Default::default()
        };
        let run = Importer(Format::Csv).result_with(text, opts).unwrap();
        assert_eq!(run.spans.len(), 2);
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 3);
        assert_eq!(
            info.first_skipped.as_deref(),
            Some("input:3: negative duration (-5 ns): end before start, or a negative dur")
        );
    }

    #[test]
    fn events_pair_into_spans_by_key() {
        let text = "time,name,key\n100,request,7\n150,request,8\n400,response,8\n\
                    1100,response,7\n1200,response,9\n";
        let opts = ImportOptions {
            pairs: vec![PairSpec::parse("request:response").unwrap()],
            time_unit: TimeUnit::Us,
            ..Default::default()
        };
        let run = Importer(Format::Csv).result_with(text, opts).unwrap();
        assert_eq!(run.events.len(), 5);
        let paired: Vec<(u64, i64, i64)> = run
            .spans
            .iter()
            .map(|s| (s.frame, s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(paired, vec![(7, 0, 1_000_000), (8, 50_000, 250_000)]);
        let notes = run.import.unwrap().notes.join("\n");
        assert!(notes.contains("1 response with no request"), "{notes}");
    }

    #[test]
    fn jsonl_spans_events_and_the_key_option() {
        let text = "{\"start\": 1000, \"dur\": 250, \"name\": \"decode\", \"frame\": \"f1\", \
                    \"tid\": 3, \"thread\": \"worker\"}\n\
                    \n\
                    {\"ts\": 2000, \"name\": \"req\", \"id\": \"abc\"}\r\n\
                    {\"ts\": 2500.5, \"name\": \"resp\", \"id\": \"abc\", \"extra\": [1,2]}\n";
        let opts = ImportOptions {
            key: Some("id".into()),
            pairs: vec![PairSpec::parse("req:resp").unwrap()],
            ..Default::default()
        };
        let run = Importer(Format::Jsonl).result_with(text, opts).unwrap();
        let got = spans(&run);
        assert_eq!(got[0], row(key_of("f1"), "decode", 0, 3, "worker", 0, 250));
        assert_eq!(run.events.len(), 2);
        assert_eq!(run.events[0].key, key_of("abc"));
        let paired = run.spans.iter().find(|s| s.frame == key_of("abc")).unwrap();
        assert_eq!((paired.start_ns, paired.dur_ns), (1000, 501));
    }

    #[test]
    fn jsonl_bad_lines_are_counted_with_skip_bad() {
        let text = "{\"start\": 0, \"dur\": 5, \"name\": \"a\"}\nnot json\n[1]\n\
                    {\"start\": true, \"dur\": 5}\n{\"start\": 10, \"dur\": 5, \"name\": \"a\"}\n";
        let err = Importer(Format::Jsonl)
            .result_with(text, ImportOptions::default())
            .unwrap_err();
        assert_eq!(err.at, Location::Line(2));
        let opts = ImportOptions {
            skip_bad: true,
            ..Default::default()
        };
        let run = Importer(Format::Jsonl).result_with(text, opts).unwrap();
        assert_eq!(run.spans.len(), 2);
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 3);
        assert!(info
            .first_skipped
            .unwrap()
            .starts_with("input:2: not a JSON object"));
        let err = Importer(Format::Jsonl)
            .result_with("{\"a\": 1}\n", ImportOptions::default())
            .unwrap_err();
        assert!(err.message.contains("among a;"), "{}", err.message);
    }

    #[test]
    fn a_launch_marker_sets_the_origin() {
        let text = "frame,stage,pid,tid,thread,start_ns,dur_ns\n,framelab:launch,,,,0,\n\
                    3,draw,1,1,main,5000,10\n";
        let run = Importer(Format::Csv)
            .result_with(text, ImportOptions::default())
            .unwrap();
        assert_eq!(spans(&run), vec![row(3, "draw", 1, 1, "main", 5000, 10)]);
        assert!(run.events.is_empty());
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs: [&[u8]; 8] = [
            b"start\n\"unterminated",
            b"start,dur\n1,2,3\n",
            b"\xff\xfe,\x00\n1,2\n",
            b"start,end\n-9223372036854775808,9223372036854775807\n",
            b"time\n99999999999999999999999999999999\n",
            b"{\"start\": 1e308, \"dur\": 1}\n",
            b"{\"start\": 1, \"dur\": 1, \"pid\": -1}\n",
            b"{}\n{\"start\": 1}",
        ];
        for input in inputs {
            for skip_bad in [false, true] {
                let opts = ImportOptions {
                    skip_bad,
                    ..Default::default()
                };
                let _ = parse_bytes(Format::Csv, input, opts.clone());
                let _ = parse_bytes(Format::Jsonl, input, opts);
            }
        }
    }
}
