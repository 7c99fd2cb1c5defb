//! bpftrace histograms: the text maps of `hist()` and `lhist()` that bpftrace prints at
//! exit or on `print(@map)`, and the same maps in its JSON output (`-f json`).
//!
//! Text:
//! ```text
//! @usecs:
//! [0]                    3 |@@@                                                 |
//! [2, 4)                12 |@@@@@@@@@@@@@                                       |
//! [8K, 16K)              5 |@@@@@                                               |
//! ```
//! `[0]` is the bucket [0, 1); `[2, 4)` is [2, 4); `(..., 0)` and `[250, ...)` are open
//! on one side (`None`). Suffixes K, M, G, T, P, E are powers of 1024, as bpftrace
//! prints them (`[8K, 16K)` is [8192, 16384)). Keyed maps are `@lat[nginx]:` and
//! `@[comm, pid]:`; a stack key spans lines (`@t[` … `]:`) and is read as its frames
//! joined with `; `.
//!
//! JSON: one message a line; `{"type": "hist", "data": {"@usecs": [{"min": 0, "max": 0,
//! "count": 3}, …]}}` with inclusive bounds (`min` absent: open below, `max` absent: open
//! above), keyed maps as `{"@lat": {"nginx": [...]}}` (bpftrace joins a multi-part key
//! with `,`, without the space of the text form). lhist() is also `"hist"`.
//!
//! Each print of a map is one histogram: a map printed again (`interval:s:5 {
//! print(@x); clear(@x); }`) gives `@x`, `@x #2`, `@x #3`, ... in print order. The unit
//! is guessed from the map's name: a word `usecs`/`us` gives `us`, `nsecs`/`ns` `ns`,
//! `msecs`/`ms` `ms`, `bytes` `bytes`, else none. Other maps (`count()`, `sum()`,
//! `stats()`, ...), maps printed empty, and other output (printf, time) are counted in
//! notes.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ImportError, Location, TraceBuilder};
use crate::model::{Bucket, Histogram};

pub fn parse(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    let first = input
        .split(|&c| c == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty());
    let Some(first) = first else {
        return Err(b.error(
            Location::Whole,
            "the file is empty; save bpftrace's output, e.g. `bpftrace script.bt > out.txt` \
             (or with -f json)",
        ));
    };
    let mut prints = Prints::default();
    if first.starts_with(b"{") {
        parse_json(input, &mut prints, b)?;
    } else {
        parse_text(input, &mut prints, b)?;
    }
    prints.finish(b)
}

/// What was read, for numbering the prints of a map and for the notes.
#[derive(Default)]
struct Prints {
    /// How many times each map (with its key) was printed so far.
    seen: HashMap<String, u32>,
    histograms: u64,
    empty: u64,
    other_values: u64,
    other_lines: u64,
    repaired: u64,
}

impl Prints {
    /// One printed histogram; the name numbered when the map was printed before.
    fn emit(&mut self, name: String, buckets: Vec<Bucket>, b: &mut TraceBuilder) {
        if buckets.is_empty() {
            self.empty += 1;
            return;
        }
        let times = self.seen.entry(name.clone()).or_insert(0);
        *times = times.saturating_add(1);
        let unit = unit_of(&name).to_owned();
        let name = if *times == 1 {
            name
        } else {
            format!("{name} #{times}")
        };
        self.histograms += 1;
        b.histogram(Histogram {
            name,
            unit,
            buckets,
        });
    }

    fn finish(self, b: &mut TraceBuilder) -> Result<(), ImportError> {
        if self.histograms == 0 {
            let why = if self.other_values > 0 || self.empty > 0 {
                format!(
                    "no hist() or lhist() map with buckets in this bpftrace output ({} other \
                     map values, {} empty maps); framelab imports histograms only",
                    self.other_values, self.empty
                )
            } else {
                "no bpftrace histogram: expected `@name:` lines followed by buckets like \
                 `[4, 8)   12 |@@@@   |`, or the JSON lines of `bpftrace -f json`"
                    .to_owned()
            };
            return Err(b.error(Location::Whole, why));
        }
        if self.repaired > 0 {
            b.note(format!(
                "{} JSON buckets with bpftrace's 32-bit overflowed bounds (min -2147483648, \
                 max 0) read as [2G, 4G), as its text output prints them",
                self.repaired
            ));
        }
        if self.empty > 0 {
            b.note(format!(
                "{} maps printed with no buckets (cleared or zeroed) ignored",
                self.empty
            ));
        }
        if self.other_values > 0 {
            b.note(format!(
                "{} non-histogram map values ignored (count(), sum(), avg(), stats(), ...)",
                self.other_values
            ));
        }
        if self.other_lines > 0 {
            b.note(format!(
                "{} other lines ignored (printf, time, ...)",
                self.other_lines
            ));
        }
        Ok(())
    }
}

/// The unit a map's name suggests: one of its `_`-separated words.
fn unit_of(name: &str) -> &'static str {
    let ident = name.trim_start_matches('@');
    let ident = ident.split(['[', ' ']).next().unwrap_or("");
    let lower = ident.to_ascii_lowercase();
    for word in lower.split(|c: char| !c.is_ascii_alphanumeric()) {
        match word {
            "usecs" | "usec" | "us" => return "us",
            "nsecs" | "nsec" | "ns" => return "ns",
            "msecs" | "msec" | "ms" => return "ms",
            "bytes" => return "bytes",
            _ => {}
        }
    }
    ""
}

/// A key as one line: the frames of a stack key joined with `; `.
fn one_line_key(key: &str) -> String {
    if !key.contains('\n') {
        return key.to_owned();
    }
    key.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A JSON map key as bpftrace's text output writes it, so both name a map alike: the parts
/// of a key are joined with "," in JSON and ", " in text (a part holding a comma itself
/// cannot be told apart).
fn json_key_as_text(key: &str) -> String {
    if key.contains('\n') {
        return one_line_key(key);
    }
    key.replace(',', ", ")
}

// ---- text ------------------------------------------------------------------------------

/// Where the text parser is.
enum Block {
    Outside,
    /// Inside a key that spans lines (`@t[` … `]:`): the map and the key's lines so far.
    Key {
        ident: String,
        parts: Vec<String>,
        line: u64,
    },
    /// Reading a histogram's buckets.
    Hist {
        name: String,
        buckets: Vec<Bucket>,
    },
}

/// What a line starting with `@` is.
#[derive(Debug, PartialEq, Eq)]
enum Header {
    /// `@usecs:` / `@lat[nginx]:`, a histogram's first line.
    Hist(String),
    /// `@t[`: a key that goes on over the next lines.
    KeyStart(String),
    /// `@count[x]: 5`: another kind of map.
    Value,
}

fn parse_text(input: &[u8], prints: &mut Prints, b: &mut TraceBuilder) -> Result<(), ImportError> {
    let mut block = Block::Outside;
    for (index, line) in input.split(|&c| c == b'\n').enumerate() {
        let line_no = index as u64 + 1;
        let at = Location::Line(line_no);
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        block = match block {
            Block::Key {
                ident,
                mut parts,
                line,
            } => {
                if text.starts_with(']') {
                    if text == "]:" {
                        Block::Hist {
                            name: format!("@{ident}[{}]", parts.join("; ")),
                            buckets: Vec::new(),
                        }
                    } else {
                        prints.other_values += 1;
                        Block::Outside
                    }
                } else {
                    if !text.is_empty() {
                        parts.push(text.to_owned());
                    }
                    Block::Key { ident, parts, line }
                }
            }
            // Inside a histogram any `[`/`(` line is a bucket, however mangled.
            Block::Hist { name, mut buckets } if text.starts_with(['[', '(']) => {
                match parse_bucket(text) {
                    Ok(bucket) => match follows(buckets.last(), &bucket) {
                        Ok(()) => buckets.push(bucket),
                        Err(why) => b.bad(at, why)?,
                    },
                    Err(why) => b.bad(at, why)?,
                }
                Block::Hist { name, buckets }
            }
            Block::Hist { name, buckets } => {
                prints.emit(name, buckets, b);
                outside(text, at, prints, b)?
            }
            Block::Outside => outside(text, at, prints, b)?,
        };
    }
    match block {
        Block::Outside => {}
        Block::Hist { name, buckets } => prints.emit(name, buckets, b),
        Block::Key { line, .. } => b.bad(
            Location::Line(line),
            "a map key that never ends (no `]:` line): is the output cut short?",
        )?,
    }
    Ok(())
}

/// A line outside any histogram: a map's first line, or something else.
fn outside(
    text: &str,
    at: Location,
    prints: &mut Prints,
    b: &mut TraceBuilder,
) -> Result<Block, ImportError> {
    if text.is_empty() {
        return Ok(Block::Outside);
    }
    match header(text) {
        Some(Header::Hist(name)) => {
            return Ok(Block::Hist {
                name,
                buckets: Vec::new(),
            })
        }
        Some(Header::KeyStart(ident)) => {
            let line = match at {
                Location::Line(n) => n,
                _ => 0,
            };
            return Ok(Block::Key {
                ident,
                parts: Vec::new(),
                line,
            });
        }
        Some(Header::Value) => prints.other_values += 1,
        None if looks_like_bucket(text) => b.bad(
            at,
            "a histogram bucket with no `@map:` line above it: is the output cut or mixed \
             with other text?",
        )?,
        None if text.starts_with("Attaching ") => {}
        None => prints.other_lines += 1,
    }
    Ok(Block::Outside)
}

/// `@name:`, `@name[key]:`, `@name[` or `@name…: value`; `None` for other lines.
fn header(text: &str) -> Option<Header> {
    let rest = text.strip_prefix('@')?;
    let ident_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (ident, after) = rest.split_at(ident_len);
    if after == ":" {
        return Some(Header::Hist(format!("@{ident}")));
    }
    if after.starts_with(": ") {
        return Some(Header::Value);
    }
    if after == "[" {
        return Some(Header::KeyStart(ident.to_owned()));
    }
    if after.starts_with('[') {
        if let Some(name) = text.strip_suffix(':').filter(|n| n.ends_with(']')) {
            return Some(Header::Hist(name.to_owned()));
        }
        if after.contains("]: ") {
            return Some(Header::Value);
        }
    }
    None
}

fn looks_like_bucket(text: &str) -> bool {
    (text.starts_with('[') || text.starts_with('(')) && text.ends_with('|')
}

/// `[2, 4)    12 |@@@   |` → [2, 4) × 12.
fn parse_bucket(text: &str) -> Result<Bucket, String> {
    const SHAPE: &str = "expected a bucket like `[2, 4)   12 |@@@   |`";
    let close = text
        .find([']', ')'])
        .ok_or_else(|| format!("a bucket with no closing `)` or `]`; {SHAPE}"))?;
    // Both are ASCII, so every slice below falls on a character boundary.
    let open = text.get(..1).unwrap_or("");
    let closer = text.get(close..close + 1).unwrap_or("");
    let label = text
        .get(1..close)
        .ok_or_else(|| format!("bucket {text:?}: {SHAPE}"))?;
    let (lo, hi) = match label.split_once(',') {
        None if open == "[" && closer == "]" => {
            let v = bound(label)?;
            let next = v
                .checked_add(1)
                .ok_or_else(|| format!("bucket [{label}] is out of range"))?;
            (Some(v), Some(next))
        }
        None => return Err(format!("bucket {text:?}: {SHAPE}")),
        Some((lo, hi)) => {
            let lo = match (open, lo.trim()) {
                ("(", "...") => None,
                ("[", lo) => Some(bound(lo)?),
                _ => return Err(format!("bucket {label:?} opens badly; {SHAPE}")),
            };
            let hi = match (closer, hi.trim()) {
                (")", "...") => None,
                (")", hi) => Some(bound(hi)?),
                _ => return Err(format!("bucket {label:?} closes badly; {SHAPE}")),
            };
            (lo, hi)
        }
    };
    let rest = text.get(close + 1..).unwrap_or("").trim_start();
    let (count, bar) = rest
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((rest, ""));
    let count = count
        .parse::<u64>()
        .map_err(|_| format!("{count:?} is not a count; {SHAPE}"))?;
    let bar = bar.trim();
    let bar_ok = bar.len() >= 2
        && bar.starts_with('|')
        && bar.ends_with('|')
        && bar
            .bytes()
            .skip(1)
            .take(bar.len() - 2)
            .all(|c| c == b'@' || c == b' ');
    if !bar_ok {
        return Err(format!("no `|@@@  |` bar after the count; {SHAPE}"));
    }
    let bucket = Bucket { lo, hi, count };
    check_bounds(&bucket)?;
    Ok(bucket)
}

/// `8K` → 8192: bpftrace's suffixes are powers of 1024.
fn bound(text: &str) -> Result<i64, String> {
    let text = text.trim();
    const SUFFIXES: [char; 6] = ['K', 'M', 'G', 'T', 'P', 'E'];
    let (digits, power) = match text.strip_suffix(SUFFIXES) {
        Some(digits) => {
            let suffix = text.chars().last().unwrap_or(' ');
            let power = SUFFIXES.iter().position(|&s| s == suffix).unwrap_or(0) as u32 + 1;
            (digits, power)
        }
        None => (text, 0),
    };
    let value = digits
        .parse::<i64>()
        .map_err(|_| format!("{text:?} is not a bucket bound like 4, 8K or 2M"))?;
    1024i64
        .checked_pow(power)
        .and_then(|scale| value.checked_mul(scale))
        .ok_or_else(|| format!("bucket bound {text:?} is out of range"))
}

fn check_bounds(bucket: &Bucket) -> Result<(), String> {
    match (bucket.lo, bucket.hi) {
        (None, None) => Err("a bucket open on both sides".into()),
        (Some(lo), Some(hi)) if lo >= hi => {
            Err(format!("bucket [{lo}, {hi}) is empty or reversed"))
        }
        _ => Ok(()),
    }
}

/// Buckets go up without overlapping; only the first is open below, only the last above.
fn follows(previous: Option<&Bucket>, next: &Bucket) -> Result<(), String> {
    let Some(previous) = previous else {
        return Ok(());
    };
    match (previous.hi, next.lo) {
        (Some(hi), Some(lo)) if hi <= lo => Ok(()),
        _ => Err(format!(
            "bucket {} does not come after {}: buckets must go up",
            show(next),
            show(previous)
        )),
    }
}

fn show(bucket: &Bucket) -> String {
    let side = |v: Option<i64>| v.map_or("...".to_owned(), |v| v.to_string());
    format!("[{}, {})", side(bucket.lo), side(bucket.hi))
}

// ---- JSON ------------------------------------------------------------------------------

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// `{"min": 2, "max": 3, "count": 12}`: inclusive bounds.
#[derive(Deserialize)]
struct JsonBucket {
    min: Option<i64>,
    max: Option<i64>,
    count: u64,
}

fn parse_json(input: &[u8], prints: &mut Prints, b: &mut TraceBuilder) -> Result<(), ImportError> {
    for (index, line) in input.split(|&c| c == b'\n').enumerate() {
        let at = Location::Line(index as u64 + 1);
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            b.bad(at, "a line that is not UTF-8 text in bpftrace JSON output")?;
            continue;
        };
        let message: Message = match serde_json::from_str(line) {
            Ok(m) => m,
            Err(e) => {
                b.bad(
                    at,
                    format!(
                        "not a bpftrace JSON message ({e}); expected {{\"type\": …, \"data\": …}}"
                    ),
                )?;
                continue;
            }
        };
        match (message.kind.as_str(), message.data) {
            ("hist", Some(data)) => json_hist(data, at, prints, b)?,
            ("map" | "stats", Some(data)) => prints.other_values += json_values(data),
            ("attached_probes", _) => {}
            _ => prints.other_lines += 1,
        }
    }
    Ok(())
}

/// `{"@usecs": [buckets]}` or `{"@lat": {"key": [buckets], …}}`.
fn json_hist(
    data: &RawValue,
    at: Location,
    prints: &mut Prints,
    b: &mut TraceBuilder,
) -> Result<(), ImportError> {
    let maps: BTreeMap<String, &RawValue> = match serde_json::from_str(data.get()) {
        Ok(maps) => maps,
        Err(e) => return b.bad(at, format!("a hist message whose data is not a map ({e})")),
    };
    for (map, value) in maps {
        if value.get().trim_start().starts_with('{') {
            let keyed: BTreeMap<String, Vec<JsonBucket>> = match serde_json::from_str(value.get()) {
                Ok(keyed) => keyed,
                Err(e) => {
                    b.bad(at, format!("map {map}: keys without bucket lists ({e})"))?;
                    continue;
                }
            };
            for (key, buckets) in keyed {
                let name = format!("{map}[{}]", json_key_as_text(&key));
                json_buckets(name, &buckets, at, prints, b)?;
            }
        } else {
            let buckets: Vec<JsonBucket> = match serde_json::from_str(value.get()) {
                Ok(buckets) => buckets,
                Err(e) => {
                    b.bad(at, format!("map {map}: not a list of buckets ({e})"))?;
                    continue;
                }
            };
            json_buckets(map, &buckets, at, prints, b)?;
        }
    }
    Ok(())
}

fn json_buckets(
    name: String,
    json: &[JsonBucket],
    at: Location,
    prints: &mut Prints,
    b: &mut TraceBuilder,
) -> Result<(), ImportError> {
    let mut buckets: Vec<Bucket> = Vec::with_capacity(json.len());
    for j in json {
        let bucket = match json_bucket(buckets.last(), j) {
            Ok((bucket, repaired)) => {
                prints.repaired += u64::from(repaired);
                bucket
            }
            Err(why) => return b.bad(at, format!("map {name}: {why}")),
        };
        if let Err(why) = check_bounds(&bucket).and_then(|()| follows(buckets.last(), &bucket)) {
            return b.bad(at, format!("map {name}: {why}"));
        }
        buckets.push(bucket);
    }
    prints.emit(name, buckets, b);
    Ok(())
}

/// Inclusive `min`/`max` to `[lo, hi)`; true when it is bpftrace 0.17's overflowed
/// `{"min": -2147483648, "max": 0}` after [1G, 2G), read as [2G, 4G).
fn json_bucket(previous: Option<&Bucket>, j: &JsonBucket) -> Result<(Bucket, bool), String> {
    const TWO_G: i64 = 1 << 31;
    let overflowed = j.min == Some(-TWO_G)
        && matches!(j.max, Some(0 | -1))
        && previous.is_some_and(|p| p.hi == Some(TWO_G));
    if overflowed {
        let bucket = Bucket {
            lo: Some(TWO_G),
            hi: Some(2 * TWO_G),
            count: j.count,
        };
        return Ok((bucket, true));
    }
    let hi = match j.max {
        Some(max) => Some(
            max.checked_add(1)
                .ok_or_else(|| format!("bucket max {max} is out of range"))?,
        ),
        None => None,
    };
    let bucket = Bucket {
        lo: j.min,
        hi,
        count: j.count,
    };
    Ok((bucket, false))
}

/// How many values a `map` or `stats` message prints: one per key, one when unkeyed.
fn json_values(data: &RawValue) -> u64 {
    let Ok(maps) = serde_json::from_str::<BTreeMap<String, &RawValue>>(data.get()) else {
        return 1;
    };
    maps.values()
        .map(|value| {
            let keyed = serde_json::from_str::<BTreeMap<String, &RawValue>>(value.get());
            match keyed {
                // A stats() value is itself an object of count/average/total.
                Ok(keys) if !keys.contains_key("average") => keys.len() as u64,
                _ => 1,
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::{parse_bytes, Format, ImportOptions};
    use crate::model::{Bucket, Histogram, Run};

    use crate::import::test_support::{fixture, Importer};

    const IMPORT: Importer = Importer(Format::Bpftrace);

    fn closed(lo: i64, hi: i64, count: u64) -> Bucket {
        Bucket {
            lo: Some(lo),
            hi: Some(hi),
            count,
        }
    }

    fn get<'a>(run: &'a Run, name: &str) -> &'a Histogram {
        run.histograms.iter().find(|h| h.name == name).unwrap()
    }

    fn total(h: &Histogram) -> u64 {
        h.buckets.iter().map(|b| b.count).sum()
    }

    /// Power-of-two buckets [2^(k-1), 2^k) from `from` on (`[0]` and `[1]` first).
    fn log2_buckets(counts: &[u64]) -> Vec<Bucket> {
        counts
            .iter()
            .enumerate()
            .map(|(k, &count)| match k {
                0 => closed(0, 1, count),
                k => closed(1 << (k - 1), 1 << k, count),
            })
            .collect()
    }

    fn names(run: &Run) -> Vec<&str> {
        run.histograms.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn text_maps_bucket_by_bucket() {
        let run = IMPORT.run(fixture("bpftrace-0.17-maps.txt"));
        assert_eq!(
            names(&run),
            [
                "@bytes[bpftrace, 7]",
                "@l",
                "@lat_ns[bpftrace]",
                "@neg",
                "@under",
                "@usecs"
            ]
        );
        let units: Vec<_> = run.histograms.iter().map(|h| h.unit.as_str()).collect();
        assert_eq!(units, ["bytes", "", "ns", "", "", "us"]);
        // Every map got one value per loop turn.
        for h in &run.histograms {
            assert_eq!(total(h), 300, "{}", h.name);
        }
        let mut neg = vec![Bucket {
            lo: None,
            hi: Some(0),
            count: 20,
        }];
        neg.extend(log2_buckets(&[1, 1, 2, 4, 8, 16, 32, 64, 128, 24]));
        assert_eq!(get(&run, "@neg").buckets, neg);

        let mut l: Vec<_> = (0..10).map(|k| closed(25 * k, 25 * k + 25, 25)).collect();
        l.push(Bucket {
            lo: Some(250),
            hi: None,
            count: 50,
        });
        assert_eq!(get(&run, "@l").buckets, l);

        let mut under = vec![Bucket {
            lo: None,
            hi: Some(0),
            count: 25,
        }];
        under.extend((0..5).map(|k| closed(1000 * k, 1000 * k + 1000, 25)));
        under.push(Bucket {
            lo: Some(5000),
            hi: None,
            count: 150,
        });
        assert_eq!(get(&run, "@under").buckets, under);

        // `[512K, 1M)` is [524288, 1048576): powers of 1024.
        let usecs = &get(&run, "@usecs").buckets;
        assert_eq!(usecs.len(), 21);
        assert_eq!(usecs[20], closed(524_288, 1_048_576, 26));
        assert_eq!(usecs[..3], log2_buckets(&[1, 0, 0]));
        let bytes = &get(&run, "@bytes[bpftrace, 7]").buckets;
        assert_eq!(bytes.len(), 33);
        assert_eq!(bytes[27], closed(67_108_864, 134_217_728, 1));
        assert_eq!(bytes[32], closed(1 << 31, 1 << 32, 278));

        let info = run.import.unwrap();
        assert_eq!(info.skipped, 0);
        assert_eq!(
            info.notes,
            ["4 non-histogram map values ignored (count(), sum(), avg(), stats(), ...)"]
        );
        assert!(run.spans.is_empty());
    }

    /// bpftrace draws each bar `count × 52 / max` characters long: the counts read back
    /// must draw the file's bars exactly.
    #[test]
    fn counts_read_draw_the_bars_of_the_file() {
        for name in ["bpftrace-0.17-maps.txt", "bpftrace-0.17-interval.txt"] {
            let text = String::from_utf8(fixture(name)).unwrap();
            let bars: Vec<usize> = text
                .lines()
                .filter(|l| l.starts_with('[') || l.starts_with('('))
                .map(|l| l.matches('@').count())
                .collect();
            let run = IMPORT.run(text.as_bytes());
            let drawn: Vec<usize> = run
                .histograms
                .iter()
                .flat_map(|h| {
                    let max = h.buckets.iter().map(|b| b.count).max().unwrap();
                    h.buckets.iter().map(move |b| (b.count * 52 / max) as usize)
                })
                .collect();
            assert_eq!(drawn, bars, "{name}");
        }
    }

    #[test]
    fn json_output_gives_the_same_histograms_as_text() {
        let text = IMPORT.run(fixture("bpftrace-0.17-maps.txt"));
        let json = IMPORT.run(fixture("bpftrace-0.17-maps.json"));
        // JSON joins a key's parts with "," where text writes ", ": named as text names them.
        assert_eq!(json.histograms, text.histograms);
        assert_eq!(
            json.import.unwrap().notes,
            [
                "1 JSON buckets with bpftrace's 32-bit overflowed bounds (min -2147483648, max \
                 0) read as [2G, 4G), as its text output prints them",
                "4 non-histogram map values ignored (count(), sum(), avg(), stats(), ...)",
            ]
        );
    }

    #[test]
    fn interval_prints_are_numbered_histograms() {
        let run = IMPORT.run(fixture("bpftrace-0.17-interval.txt"));
        let stack = "@stack_ms[_einittext+1015206556; __bpf_prog_test_run_raw_tp+106; \
                     bpf_prog_test_run_raw_tp+279; __sys_bpf+2593; __x64_sys_bpf+29; \
                     do_syscall_64+113; entry_SYSCALL_64_after_hwframe+118]";
        assert_eq!(
            names(&run),
            [
                "@usecs",
                "@k[1]",
                "@usecs #2",
                "@k[0]",
                "@k[1] #2",
                "@usecs #3",
                "@k[0] #2",
                "@k[1] #3",
                "@k[0] #3",
                "@k[1] #4",
                stack,
            ]
        );
        for n in ["@usecs", "@usecs #2", "@usecs #3"] {
            assert_eq!(total(get(&run, n)), 50, "{n}");
            assert_eq!(get(&run, n).unit, "us");
        }
        assert_eq!(
            get(&run, "@usecs #2").buckets,
            log2_buckets(&[1, 0, 1, 2, 4, 8, 16, 18])
        );
        let k = |count| {
            let mut k: Vec<_> = (0..4).map(|i| closed(10 * i, 10 * i + 10, count)).collect();
            k.push(Bucket {
                lo: Some(40),
                hi: None,
                count,
            });
            k
        };
        assert_eq!(get(&run, "@k[1]").buckets, k(10));
        assert_eq!(get(&run, "@k[1] #4").buckets, k(20));
        assert_eq!(get(&run, stack).buckets, [closed(8, 16, 1)]);
        assert_eq!(get(&run, stack).unit, "ms");
        assert_eq!(
            run.import.unwrap().notes,
            [
                "1 non-histogram map values ignored (count(), sum(), avg(), stats(), ...)",
                "3 other lines ignored (printf, time, ...)",
            ]
        );

        let json = IMPORT.run(fixture("bpftrace-0.17-interval.json"));
        assert_eq!(json.histograms.len(), 11);
        // Two runs of the script: the same buckets, the stack's addresses aside.
        for (t, j) in run.histograms.iter().zip(&json.histograms).take(10) {
            assert_eq!(t, j);
        }
        assert!(json.histograms[10]
            .name
            .starts_with("@stack_ms[_einittext+"));
        assert_eq!(json.histograms[10].buckets, [closed(8, 16, 1)]);
        assert_eq!(
            json.import.unwrap().notes,
            [
                "1 non-histogram map values ignored (count(), sum(), avg(), stats(), ...)",
                "3 other lines ignored (printf, time, ...)",
            ]
        );
    }

    #[test]
    fn suffixes_are_powers_of_1024_and_open_ends_are_none() {
        let text = b"@big_bytes:\n\
            (..., 0)   1 |@|\n\
            [0]        2 |@|\n\
            [1K, 2K)   3 |@|\n\
            [1M, 2M)   4 |@|\n\
            [1G, 2G)   5 |@|\n\
            [1T, 2T)   6 |@|\n\
            [1P, 2P)   7 |@|\n\
            [1E, 2E)   8 |@|\n\
            [4E, ...)  9 |@|\n";
        let run = IMPORT.run(text);
        let h = &run.histograms[0];
        assert_eq!(h.unit, "bytes");
        let k: i64 = 1024;
        assert_eq!(
            h.buckets,
            [
                Bucket {
                    lo: None,
                    hi: Some(0),
                    count: 1
                },
                closed(0, 1, 2),
                closed(k, 2 * k, 3),
                closed(k.pow(2), 2 * k.pow(2), 4),
                closed(k.pow(3), 2 * k.pow(3), 5),
                closed(k.pow(4), 2 * k.pow(4), 6),
                closed(k.pow(5), 2 * k.pow(5), 7),
                closed(k.pow(6), 2 * k.pow(6), 8),
                Bucket {
                    lo: Some(4 * k.pow(6)),
                    hi: None,
                    count: 9
                },
            ]
        );
    }

    #[test]
    fn units_from_map_names() {
        for (name, unit) in [
            ("@usecs", "us"),
            ("@lat_us[x]", "us"),
            ("@ns", "ns"),
            ("@latency_nsecs", "ns"),
            ("@ms", "ms"),
            ("@frame_msecs", "ms"),
            ("@read_bytes[nginx]", "bytes"),
            ("@status", ""),
            ("@", ""),
            ("@x[usecs]", ""),
        ] {
            assert_eq!(super::unit_of(name), unit, "{name}");
        }
    }

    #[test]
    fn malformed_buckets_stop_or_are_counted_with_skip_bad() {
        let text = b"@a:\n\
            [0]        2 |@@|\n\
            [1, 2)     x |@|\n\
            [2, 4)     3 no bar\n\
            [8, 4)     1 |@|\n\
            [16E, 32E) 1 |@|\n\
            [4, 8)     4 |@@@@|\n\
            [2]        1 |@|\n\
            \n\
            [8, 16)    1 |@|\n\
            @b[\n    frame+1\n";
        assert_eq!(
            IMPORT.error(text),
            "input:3: \"x\" is not a count; expected a bucket like `[2, 4)   12 |@@@   |`"
        );
        let run = IMPORT.run_skipping_bad(text);
        assert_eq!(
            run.histograms,
            [Histogram {
                name: "@a".into(),
                unit: "".into(),
                buckets: vec![closed(0, 1, 2), closed(4, 8, 4)],
            }]
        );
        let info = run.import.unwrap();
        // x count, no bar, reversed, going back, out of range, bucket with no map, the
        // key that never ends.
        assert_eq!(info.skipped, 7);
    }

    #[test]
    fn json_errors_name_the_line() {
        let json = b"{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n\
            {\"type\": \"hist\", \"data\": {\"@a\": [{\"min\": 0, \"max\": 0, \"count\": 1}]}}\n\
            {\"type\": \"hist\", \"data\": {\"@b\": [{\"min\": 4, \"max\": 7, \"count\": 1}, \
            {\"min\": 0, \"max\": 3, \"count\": 1}]}}\n\
            {\"type\": \"hist\", \"data\": {\"@c\": [{\"min\": 0, \"max\": 0}]}}\n\
            {\"type\": \"hist\", \"data\": [1, 2]}\n\
            {\"type\": \"hist\", \"data\": {\"@d\": {\"k\": 5}}}\n\
            {\"type\": \"hist\", \"data\": {\"@e\": [{\"min\": 0, \"max\": 9223372036854775807, \"count\": 1}]}}\n\
            not json\n\
            {\"type\": \"hist\", \"data\": {\"@f\": []}}\n\
            {\"type\": \"printf\", \"data\": \"hi\\n\"}\n";
        assert_eq!(
            IMPORT.error(json),
            "input:3: map @b: bucket [0, 4) does not come after [4, 8): buckets must go up"
        );
        let run = IMPORT.run_skipping_bad(json);
        assert_eq!(names(&run), ["@a"]);
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 6);
        assert_eq!(
            info.notes,
            [
                "1 maps printed with no buckets (cleared or zeroed) ignored",
                "1 other lines ignored (printf, time, ...)",
            ]
        );
    }

    #[test]
    fn files_without_histograms_are_errors() {
        assert!(IMPORT.error(b"").contains("the file is empty"));
        assert!(IMPORT.error(b"\n  \n").contains("the file is empty"));
        assert!(IMPORT
            .error(b"\x00\xff\x13 garbage\n")
            .contains("no bpftrace histogram"));
        assert_eq!(
            IMPORT.error(b"Attaching 1 probe...\n\n@count[x]: 5\n@b: \n\n"),
            "input: no hist() or lhist() map with buckets in this bpftrace output (1 other map \
             values, 1 empty maps); framelab imports histograms only"
        );
        assert!(IMPORT
            .error(b"{\"type\": \"map\", \"data\": {\"@n\": 3}}\n")
            .contains("no hist()"));
    }

    #[test]
    fn never_panics_on_cut_or_mangled_output() {
        for name in ["bpftrace-0.17-interval.txt", "bpftrace-0.17-maps.json"] {
            let input = fixture(name);
            for cut in (0..input.len()).step_by(61) {
                let _ = parse_bytes(Format::Bpftrace, &input[..cut], ImportOptions::default());
                let mut mangled = input[..cut].to_vec();
                mangled.extend_from_slice("[\u{e9}, ...)  1 |@|\n(]|\n[|\n@x[\n]: 1".as_bytes());
                let opts = ImportOptions {
                    skip_bad: true,
                    ..ImportOptions::default()
                };
                let _ = parse_bytes(Format::Bpftrace, &mangled, opts);
            }
        }
    }
}
