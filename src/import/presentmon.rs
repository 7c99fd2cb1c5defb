//! PresentMon CSV (1.x and 2.x columns): one frame per present of one swap chain.
//!
//! Each row is a present. The frame it stands for is the interval the tool defines:
//! - PresentMon 2 (`MsBetweenAppStart`, or `FrameTime` with `--v2_metrics`): from the
//!   CPU start of this frame to the CPU start of the next, stage `between app start`.
//!   The CPU start is the present time minus `MsCPUBusy` when the file has both (exact to
//!   the tool's 0.1 µs), else the `CPUStart*` column (whose default form has only 0.1 ms).
//! - PresentMon 1 (`MsBetweenPresents` only): ending at the present (`TimeInSeconds`),
//!   one interval long, stage `between presents`.
//!
//! So a frame's total is the tool's frame time, and the intervals between frame ends are
//! the same series from the second row on (to within 1 µs for PresentMon 1, whose two
//! columns are each rounded to the µs). The other per-frame `Ms*` columns (`MsCPUBusy`,
//! `MsGPUBusy`, `MsUntilDisplayed`, ...) become sample series (source `presentmon`, metric
//! = column, entity = pid, label = application, unit ns): one reading per row that has a
//! value, equal values included, at the middle of its frame.
//! `NA` is a missing value. A present not displayed (`Dropped` = 1, or in 2.x an `NA`
//! `MsUntilDisplayed`) is a `dropped` event at its present time, counted in a note.
//!
//! One process and one swap chain: by default the swap chain with the most rows, of any
//! process but the desktop compositor `dwm.exe` (taken only when alone or asked for);
//! `--process NAME` picks by application name (case-insensitive, `.exe` optional) or pid,
//! then its busiest swap chain. What was left out is said in a note. Times are exact decimals; QPC ticks are converted at the frequency the
//! file's own intervals imply (10 MHz on current Windows).

use std::collections::HashMap;

use super::decimal::text_scaled;
use super::generic::{csv_rows, field_text, in_range};
use super::in_order::{InOrder, SteppedBack};
use super::{ImportError, Location, TraceBuilder};
use crate::model::{SampleSeries, SeriesKind};

/// How a time column counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clock {
    Seconds,
    Millis,
    /// QueryPerformanceCounter ticks, frequency not in the file.
    Qpc,
    /// `CPUStartTime`: seconds in some versions, milliseconds in others.
    SecondsOrMillis,
    /// `2024-3-5 14:03:07.123456789`, local time.
    DateTime,
}

/// A time column resolved to ns: the unit decided, QPC frequency known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimeScale {
    Decimal(i64),
    Ticks { per_second: i64 },
    DateTime,
}

impl TimeScale {
    fn ns(self, text: &str) -> Option<i64> {
        match self {
            TimeScale::Decimal(factor) => text_scaled(text, factor),
            TimeScale::Ticks { per_second } => {
                let ticks: i128 = text.trim().parse::<i64>().ok()?.into();
                let per_second = i128::from(per_second.max(1));
                let ns = (ticks * 1_000_000_000 + per_second / 2).div_euclid(per_second);
                i64::try_from(ns).ok()
            }
            TimeScale::DateTime => date_time_ns(text),
        }
    }
}

/// Time columns by name (lower case), best first.
const PRESENT_TIMES: [(&str, Clock); 5] = [
    ("timeinseconds", Clock::Seconds),
    ("timeinms", Clock::Millis),
    ("timeinqpc", Clock::Qpc),
    ("qpctime", Clock::Qpc),
    ("timeindatetime", Clock::DateTime),
];
const CPU_START_TIMES: [(&str, Clock); 7] = [
    ("cpustartqpc", Clock::Qpc),
    ("cpustartqpctime", Clock::Millis),
    ("cpustartqpctimeinms", Clock::Millis),
    ("cpustarttimeinms", Clock::Millis),
    ("cpustarttimeinseconds", Clock::Seconds),
    ("cpustarttime", Clock::SecondsOrMillis),
    ("cpustartdatetime", Clock::DateTime),
];
/// `--v2_metrics` files name their per-frame times without the `Ms`.
const V2_METRICS: [&str; 13] = [
    "cpubusy",
    "cpuwait",
    "gpulatency",
    "gputime",
    "gpubusy",
    "gpuwait",
    "videobusy",
    "displaylatency",
    "displayedtime",
    "animationerror",
    "allinputtophotonlatency",
    "clicktophotonlatency",
    "instrumentedlatency",
];

/// Which column holds what.
struct Columns {
    names: Vec<String>,
    app: Option<usize>,
    pid: Option<usize>,
    swap_chain: Option<usize>,
    /// The frame interval and its stage name.
    interval: usize,
    between_presents: Option<usize>,
    between_app_start: Option<usize>,
    present_time: Option<(usize, Clock)>,
    cpu_start: Option<(usize, Clock)>,
    cpu_busy: Option<usize>,
    dropped: Option<usize>,
    until_displayed: Option<usize>,
    /// Per-frame durations read as samples.
    samples: Vec<usize>,
}

impl Columns {
    fn find(b: &TraceBuilder, header: &csv::ByteRecord) -> Result<Columns, ImportError> {
        let names: Vec<String> = (0..header.len())
            .map(|i| field_text(header, i).into_owned())
            .collect();
        let lower: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        let find = |name: &str| lower.iter().position(|n| n == name);
        let find_any = |table: &[(&str, Clock)]| {
            table
                .iter()
                .find_map(|&(name, clock)| find(name).map(|i| (i, clock)))
        };
        let between_presents = find("msbetweenpresents");
        let between_app_start = find("msbetweenappstart").or_else(|| find("frametime"));
        let Some(interval) = between_app_start.or(between_presents) else {
            return Err(b.error(
                Location::Line(1),
                format!(
                    "no MsBetweenPresents or MsBetweenAppStart column among {}: is this a \
                     PresentMon CSV? (for another CSV pass --format csv)",
                    names.join(", ")
                ),
            ));
        };
        let samples = (0..names.len())
            .filter(|&i| i != interval)
            .filter(|&i| {
                let n = &lower[i];
                (n.starts_with("ms") && n.len() > 2) || V2_METRICS.contains(&n.as_str())
            })
            .collect();
        Ok(Columns {
            app: find("application"),
            pid: find("processid"),
            swap_chain: find("swapchainaddress"),
            interval,
            between_presents,
            between_app_start,
            present_time: find_any(&PRESENT_TIMES),
            cpu_start: find_any(&CPU_START_TIMES),
            cpu_busy: find("mscpubusy").or_else(|| find("cpubusy")),
            dropped: find("dropped"),
            until_displayed: find("msuntildisplayed").or_else(|| find("displaylatency")),
            samples,
            names,
        })
    }

    /// `MsBetweenAppStart` → `between app start`.
    fn stage_name(&self) -> String {
        let name = &self.names[self.interval];
        let bare = name
            .strip_prefix("Ms")
            .or_else(|| name.strip_prefix("ms"))
            .unwrap_or(name);
        let mut out = String::new();
        for c in bare.chars() {
            if c.is_uppercase() && !out.is_empty() {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
        }
        out
    }
}

/// One swap chain of one process, and how many presents it has.
#[derive(Clone, Debug)]
struct Chain {
    app: String,
    pid: String,
    swap_chain: String,
    rows: u64,
}

impl Chain {
    fn process(&self) -> String {
        format!("{} (pid {})", self.app, self.pid)
    }

    fn holds(&self, cols: &Columns, record: &csv::ByteRecord) -> bool {
        let same = |col: Option<usize>, want: &str| {
            col.is_none_or(|i| record.get(i).unwrap_or_default().trim_ascii() == want.as_bytes())
        };
        same(cols.app, &self.app)
            && same(cols.pid, &self.pid)
            && same(cols.swap_chain, &self.swap_chain)
    }
}

/// Every swap chain in the file in order of first appearance, with its row count.
fn count_chains(input: &[u8], cols: &Columns) -> Vec<Chain> {
    let mut chains: Vec<Chain> = Vec::new();
    let mut index: HashMap<(String, String, String), usize> = HashMap::new();
    let text = |r: &csv::ByteRecord, col: Option<usize>| {
        col.map_or_else(String::new, |i| field_text(r, i).into_owned())
    };
    for (_, record) in csv_rows(input).skip(1) {
        if record.len() != cols.names.len() {
            continue;
        }
        let key = (
            text(&record, cols.app),
            text(&record, cols.pid),
            text(&record, cols.swap_chain),
        );
        let i = *index.entry(key.clone()).or_insert_with(|| {
            chains.push(Chain {
                app: key.0,
                pid: key.1,
                swap_chain: key.2,
                rows: 0,
            });
            chains.len() - 1
        });
        chains[i].rows += 1;
    }
    chains
}

/// The swap chain to import, and notes on what was left out.
fn choose_chain(b: &TraceBuilder, chains: &[Chain]) -> Result<(Chain, Vec<String>), ImportError> {
    // Processes in order of first appearance, with their total rows.
    let mut processes: Vec<(String, String, u64)> = Vec::new();
    for c in chains {
        match processes
            .iter_mut()
            .find(|(app, pid, _)| *app == c.app && *pid == c.pid)
        {
            Some(p) => p.2 += c.rows,
            None => processes.push((c.app.clone(), c.pid.clone(), c.rows)),
        }
    }
    let candidates: Vec<&Chain> = match &b.opts.process {
        // The desktop compositor presents on its own; it is what one measures only when asked.
        None if chains.iter().any(|c| !is_compositor(&c.app)) => {
            chains.iter().filter(|c| !is_compositor(&c.app)).collect()
        }
        None => chains.iter().collect(),
        Some(wanted) => {
            let w = wanted.trim();
            let matching: Vec<&Chain> = chains
                .iter()
                .filter(|c| {
                    c.app.eq_ignore_ascii_case(w)
                        || c.app.eq_ignore_ascii_case(&format!("{w}.exe"))
                        || c.pid == w
                })
                .collect();
            if matching.is_empty() {
                let listed: Vec<String> = processes
                    .iter()
                    .map(|(app, pid, rows)| format!("{app} (pid {pid}, {rows} presents)"))
                    .collect();
                return Err(b.error(
                    Location::Whole,
                    format!(
                        "--process {w}: no such application or pid; the file has {}",
                        listed.join(", ")
                    ),
                ));
            }
            matching
        }
    };
    // The busiest swap chain; of equals, the first seen.
    let Some(chosen) = candidates.into_iter().rev().max_by_key(|c| c.rows).cloned() else {
        return Err(b.error(
            Location::Whole,
            "no presents: the file has a PresentMon header but no rows",
        ));
    };
    let notes = left_out_notes(&chosen, chains, &processes);
    Ok((chosen, notes))
}

fn is_compositor(app: &str) -> bool {
    app.eq_ignore_ascii_case("dwm.exe")
}

fn left_out_notes(
    chosen: &Chain,
    chains: &[Chain],
    processes: &[(String, String, u64)],
) -> Vec<String> {
    let mut notes = Vec::new();
    let others: Vec<String> = processes
        .iter()
        .filter(|(app, pid, _)| !(*app == chosen.app && *pid == chosen.pid))
        .map(|(app, pid, rows)| format!("{app} pid {pid}: {rows}"))
        .collect();
    let other_rows: u64 = processes
        .iter()
        .filter(|(app, pid, _)| !(*app == chosen.app && *pid == chosen.pid))
        .map(|p| p.2)
        .sum();
    if !others.is_empty() {
        notes.push(format!(
            "PresentMon: kept {} swap chain {} ({} presents); left out {other_rows} presents \
             of other processes ({}); pick another with --process NAME",
            chosen.process(),
            chosen.swap_chain,
            chosen.rows,
            others.join(", ")
        ));
    }
    let siblings: Vec<&Chain> = chains
        .iter()
        .filter(|c| c.app == chosen.app && c.pid == chosen.pid && c.swap_chain != chosen.swap_chain)
        .collect();
    if !siblings.is_empty() {
        let rows: u64 = siblings.iter().map(|c| c.rows).sum();
        let listed: Vec<String> = siblings
            .iter()
            .map(|c| format!("{}: {}", c.swap_chain, c.rows))
            .collect();
        notes.push(format!(
            "PresentMon: kept swap chain {} of {}: {} presents; left out {rows} presents on \
             its other swap chains ({})",
            chosen.swap_chain,
            chosen.process(),
            chosen.rows,
            listed.join(", ")
        ));
    }
    notes
}

/// Where each frame sits in time.
#[derive(Clone, Copy, Debug)]
enum Anchor {
    /// Starts at the present time minus `MsCPUBusy`.
    PresentMinusBusy {
        present: usize,
        scale: TimeScale,
        busy: usize,
    },
    /// Starts at the CPU start column.
    CpuStart { column: usize, scale: TimeScale },
    /// Ends at the present time.
    PresentEnd { present: usize, scale: TimeScale },
}

/// Sums of (time column difference, interval) over consecutive presents: what a clock
/// of unknown unit is compared with.
fn clock_evidence(
    input: &[u8],
    cols: &Columns,
    chain: &Chain,
    time: usize,
    time_scale: TimeScale,
    interval: usize,
    interval_is_previous: bool,
) -> Option<(i128, i128)> {
    let (mut sum_time, mut sum_interval) = (0i128, 0i128);
    let mut previous: Option<(i64, Option<i64>)> = None;
    for (_, record) in csv_rows(input).skip(1) {
        if record.len() != cols.names.len() || !chain.holds(cols, &record) {
            continue;
        }
        let t = time_scale.ns(&field_text(&record, time));
        let iv = text_scaled(&field_text(&record, interval), 1_000_000);
        if let (Some(t), Some((t0, iv0))) = (t, previous) {
            let expected = if interval_is_previous { iv0 } else { iv };
            if let Some(expected) = expected.filter(|&e| e > 0 && t > t0) {
                sum_time = sum_time.saturating_add(i128::from(t) - i128::from(t0));
                sum_interval = sum_interval.saturating_add(i128::from(expected));
            }
        }
        previous = t.map(|t| (t, iv));
    }
    (sum_interval > 0).then_some((sum_time, sum_interval))
}

/// The ns scale of a time column, deciding what the file leaves open from its own
/// intervals. Returns the scale and, where something was decided, a note.
fn resolve_clock(
    input: &[u8],
    cols: &Columns,
    chain: &Chain,
    column: usize,
    clock: Clock,
    reference: Option<usize>,
    reference_is_previous: bool,
) -> (TimeScale, Option<String>) {
    let name = &cols.names[column];
    let evidence = |scale| {
        reference.and_then(|r| {
            clock_evidence(input, cols, chain, column, scale, r, reference_is_previous)
        })
    };
    match clock {
        Clock::Seconds => (TimeScale::Decimal(1_000_000_000), None),
        Clock::Millis => (TimeScale::Decimal(1_000_000), None),
        Clock::DateTime => (TimeScale::DateTime, None),
        Clock::SecondsOrMillis => {
            // Read as ms, a seconds column moves 1000 times too slowly.
            let ratio = evidence(TimeScale::Decimal(1_000_000));
            let is_ms = ratio.is_some_and(|(t, iv)| t.saturating_mul(1000) > iv.saturating_mul(32));
            let unit = if is_ms { "milliseconds" } else { "seconds" };
            let how = if ratio.is_some() {
                "as its differences match the intervals"
            } else {
                "(assumed: too few presents to tell)"
            };
            let scale = TimeScale::Decimal(if is_ms { 1_000_000 } else { 1_000_000_000 });
            (
                scale,
                Some(format!("PresentMon: {name} read in {unit} {how}")),
            )
        }
        Clock::Qpc => {
            // Ticks per second = Σticks / Σseconds, read at 1 tick = 1 ns.
            const TEN_MHZ: i64 = 10_000_000;
            let ratio = evidence(TimeScale::Ticks {
                per_second: 1_000_000_000,
            });
            let inferred = ratio.and_then(|(ticks, ns)| {
                let per_second = ticks.checked_mul(1_000_000_000)?.checked_add(ns / 2)? / ns;
                i64::try_from(per_second).ok().filter(|&f| f > 0)
            });
            let per_second = match inferred {
                // Within 0.1%: the intervals' rounding, not another clock.
                Some(f) if f.abs_diff(TEN_MHZ) <= (TEN_MHZ / 1000) as u64 => TEN_MHZ,
                Some(f) => f,
                None => TEN_MHZ,
            };
            let how = match inferred {
                Some(_) => "as the file's intervals imply",
                None => "(assumed, the usual Windows rate: too few presents to tell)",
            };
            (
                TimeScale::Ticks { per_second },
                Some(format!(
                    "PresentMon: {name} counts QPC ticks, read at {per_second} per second {how}"
                )),
            )
        }
    }
}

/// How frames are placed, and notes on what was decided.
fn choose_anchor(
    b: &TraceBuilder,
    input: &[u8],
    cols: &Columns,
    chain: &Chain,
) -> Result<(Anchor, Vec<String>), ImportError> {
    let app_start = cols.between_app_start == Some(cols.interval);
    let mut notes = Vec::new();
    if app_start {
        if let (Some((present, clock)), Some(busy)) = (cols.present_time, cols.cpu_busy) {
            let (scale, note) = resolve_clock(
                input,
                cols,
                chain,
                present,
                clock,
                cols.between_presents,
                false,
            );
            notes.extend(note);
            return Ok((
                Anchor::PresentMinusBusy {
                    present,
                    scale,
                    busy,
                },
                notes,
            ));
        }
        if let Some((column, clock)) = cols.cpu_start {
            let (scale, note) =
                resolve_clock(input, cols, chain, column, clock, Some(cols.interval), true);
            notes.extend(note);
            return Ok((Anchor::CpuStart { column, scale }, notes));
        }
    }
    let Some((present, clock)) = cols.present_time else {
        return Err(b.error(
            Location::Line(1),
            format!(
                "no time column (TimeInSeconds, TimeInMs, TimeInQPC or CPUStart...) among {}",
                cols.names.join(", ")
            ),
        ));
    };
    let (scale, note) = resolve_clock(
        input,
        cols,
        chain,
        present,
        clock,
        Some(cols.interval),
        false,
    );
    notes.extend(note);
    Ok((Anchor::PresentEnd { present, scale }, notes))
}

/// PresentMon writes a swap chain's presents in order, and each frame starts after the one
/// before (on the fixtures, by 6.6 ms at least); rows of other processes and swap chains
/// interleave and are not compared. Both columns of PresentMon 1 are rounded to the µs: a
/// start may come out that much before the one before it when a frame took no time.
const START_ROUNDING_NS: i64 = 2_000;

/// Why a frame starting before the previous frame of its swap chain is a bad record.
fn stepped_back(back: &SteppedBack) -> String {
    format!(
        "the frame starts {:.6} s before the one of line {} (the swap chain's row before \
         it), and PresentMon writes a swap chain's presents in order: an edited or damaged \
         time; pass --skip-bad to skip such rows",
        back.seconds(),
        back.from_line
    )
}

/// What the rows added up to, for the notes.
#[derive(Default)]
struct Tally {
    frames: u64,
    not_displayed: u64,
    no_interval: u64,
    negative: u64,
}

/// One row read and checked.
struct Present {
    start_ns: i64,
    dur_ns: i64,
    present_ns: i64,
    displayed: bool,
    /// (index into `Columns::samples`, value in ns).
    samples: Vec<(usize, i64)>,
}

enum Row {
    Frame(Present),
    NoInterval,
    Negative,
}

fn read_row(cols: &Columns, anchor: Anchor, record: &csv::ByteRecord) -> Result<Row, String> {
    let text = |i: usize| field_text(record, i);
    let ms = |i: usize| -> Result<Option<i64>, String> {
        let t = text(i);
        if t.is_empty() || t.eq_ignore_ascii_case("na") {
            return Ok(None);
        }
        (text_scaled(&t, 1_000_000).and_then(in_range))
            .map(Some)
            .ok_or_else(|| format!("{} {t:?} is not a number of ms", cols.names[i]))
    };
    let time = |i: usize, scale: TimeScale| -> Result<i64, String> {
        let t = text(i);
        (scale.ns(&t).and_then(in_range))
            .ok_or_else(|| format!("{} {t:?} is not a time this column holds", cols.names[i]))
    };
    let Some(dur) = ms(cols.interval)? else {
        return Ok(Row::NoInterval);
    };
    if dur < 0 {
        return Ok(Row::Negative);
    }
    let (start, present) = match anchor {
        Anchor::PresentMinusBusy {
            present,
            scale,
            busy,
        } => {
            let p = time(present, scale)?;
            let busy = ms(busy)?.ok_or_else(|| format!("{} is NA", cols.names[busy]))?;
            (p.checked_sub(busy).ok_or("time out of range")?, p)
        }
        Anchor::CpuStart { column, scale } => {
            let s = time(column, scale)?;
            (s, s)
        }
        Anchor::PresentEnd { present, scale } => {
            let p = time(present, scale)?;
            (p.checked_sub(dur).ok_or("time out of range")?, p)
        }
    };
    in_range(start).ok_or("time out of range")?;
    let displayed = match (cols.dropped, cols.until_displayed) {
        (Some(i), _) => text(i) != "1",
        (None, Some(i)) => !text(i).eq_ignore_ascii_case("na"),
        (None, None) => true,
    };
    let mut samples = Vec::with_capacity(cols.samples.len());
    for (k, &i) in cols.samples.iter().enumerate() {
        if let Some(v) = ms(i)? {
            samples.push((k, v));
        }
    }
    Ok(Row::Frame(Present {
        start_ns: start,
        dur_ns: dur,
        present_ns: present,
        displayed,
        samples,
    }))
}

pub fn parse(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    let Some((_, header)) = csv_rows(input).next() else {
        return Err(b.error(Location::Whole, "empty file: no PresentMon header"));
    };
    let cols = Columns::find(b, &header)?;
    let chains = count_chains(input, &cols);
    let (chain, notes) = choose_chain(b, &chains)?;
    for note in notes {
        b.note(note);
    }
    let (anchor, notes) = choose_anchor(b, input, &cols, &chain)?;
    for note in notes {
        b.note(note);
    }

    let pid: u32 = chain.pid.parse().unwrap_or(0);
    let app = if chain.app.is_empty() {
        "PresentMon"
    } else {
        &chain.app
    };
    let thread = b.thread(pid, 0);
    b.name_thread(pid, 0, app);
    b.name_process(pid, app);
    let stage = b.stage(&cols.stage_name(), Location::Line(1))?;
    // Each per-present column's series, made at its first value. Every row's value is a
    // reading: each is a measurement of its own present, so equal values in a row are
    // kept (run-length folding, right for a sensor a log repeats, would drop presents from
    // the telemetry table's count and percentiles).
    let mut series: Vec<Option<u32>> = vec![None; cols.samples.len()];
    let mut tally = Tally::default();
    let mut starts = InOrder::new(START_ROUNDING_NS);
    for (line, record) in csv_rows(input).skip(1) {
        let at = Location::Line(line);
        if record.len() != cols.names.len() {
            b.bad(
                at,
                format!(
                    "{} fields where the header has {}: a truncated or damaged row",
                    record.len(),
                    cols.names.len()
                ),
            )?;
            continue;
        }
        if !chain.holds(&cols, &record) {
            continue;
        }
        let present = match read_row(&cols, anchor, &record) {
            Ok(Row::Frame(p)) => match starts.check(p.start_ns, line) {
                Ok(()) => p,
                Err(back) => {
                    b.bad(at, stepped_back(&back))?;
                    continue;
                }
            },
            Ok(Row::NoInterval) => {
                tally.no_interval += 1;
                continue;
            }
            Ok(Row::Negative) => {
                tally.negative += 1;
                continue;
            }
            Err(why) => {
                b.bad(at, why)?;
                continue;
            }
        };
        let frame = b.next_frame();
        b.span(frame, stage, thread, present.start_ns, present.dur_ns);
        tally.frames += 1;
        if !present.displayed {
            tally.not_displayed += 1;
            b.event("dropped", frame, thread, present.present_ns, at)?;
        }
        let middle = present.start_ns + present.dur_ns / 2;
        for (k, value) in present.samples {
            let id = match series[k] {
                Some(id) => id,
                None => {
                    let id = b.series(SampleSeries {
                        source: "presentmon".into(),
                        metric: cols.names[cols.samples[k]].clone(),
                        entity: chain.pid.clone(),
                        label: app.to_owned(),
                        unit: "ns".into(),
                        kind: SeriesKind::Gauge,
                    });
                    series[k] = Some(id);
                    id
                }
            };
            b.sample(id, middle, value);
        }
    }
    tally_notes(b, &cols, &tally);
    Ok(())
}

fn tally_notes(b: &mut TraceBuilder, cols: &Columns, tally: &Tally) {
    let interval = &cols.names[cols.interval];
    if tally.not_displayed > 0 {
        let why = match (cols.dropped, cols.until_displayed) {
            (Some(_), _) => "Dropped = 1".to_string(),
            (None, Some(i)) => format!("{} NA", cols.names[i]),
            (None, None) => String::new(),
        };
        b.note(format!(
            "PresentMon: {} of {} presents were not displayed ({why}); each is a \"dropped\" \
             event",
            tally.not_displayed, tally.frames
        ));
    }
    if tally.no_interval > 0 {
        b.note(format!(
            "PresentMon: {} presents have no {interval} (NA) and are not frames",
            tally.no_interval
        ));
    }
    if tally.negative > 0 {
        b.note(format!(
            "PresentMon: {} presents have a negative {interval} and are not frames",
            tally.negative
        ));
    }
}

/// `2024-3-5 14:03:07.123456789` (PresentMon's `--date_time`) as ns since 2000-01-01
/// 00:00 of the same (local) clock (an epoch that keeps the ns well inside i64).
fn date_time_ns(text: &str) -> Option<i64> {
    let (date, time) = text.trim().split_once(' ')?;
    let mut ymd = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    if ymd.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut hms = time.split(':');
    let (h, min, sec) = (hms.next()?, hms.next()?, hms.next()?);
    if hms.next().is_some() {
        return None;
    }
    let (h, min): (i64, i64) = (h.parse().ok()?, min.parse().ok()?);
    if !(0..24).contains(&h) || !(0..60).contains(&min) {
        return None;
    }
    let sec_ns = text_scaled(sec, 1_000_000_000).filter(|&s| (0..61_000_000_000).contains(&s))?;
    // Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's method).
    let y = if m <= 2 { y - 1 } else { y };
    if !(0..=10_000).contains(&y) {
        return None;
    }
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    // 10957: days from 1970-01-01 to 2000-01-01.
    let days = era * 146_097 + doe - 719_468 - 10_957;
    let secs = days.checked_mul(86_400)?.checked_add(h * 3600 + min * 60)?;
    secs.checked_mul(1_000_000_000)?.checked_add(sec_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Format, ImportOptions};
    use crate::model::Run;

    use crate::import::test_support::{fixture, longest_interval_ns, Importer};

    const IMPORT: Importer = Importer(Format::Presentmon);

    /// (frame, start, dur) of the first `n` spans in frame order.
    fn first_spans(run: &Run, n: usize) -> Vec<(u64, i64, i64)> {
        let mut v: Vec<_> = run
            .spans
            .iter()
            .map(|s| (s.frame, s.start_ns, s.dur_ns))
            .collect();
        v.sort();
        v.truncate(n);
        v
    }

    fn series<'r>(run: &'r Run, metric: &str) -> (usize, &'r SampleSeries) {
        let id = run
            .telemetry
            .series
            .iter()
            .position(|s| s.metric == metric)
            .unwrap_or_else(|| panic!("no series {metric}"));
        (id, &run.telemetry.series[id])
    }

    #[test]
    fn v1_frames_end_at_each_present() {
        let run = IMPORT
            .result_with(
                fixture("presentmon-v1-farcrynewdawn.csv"),
                ImportOptions::default(),
            )
            .unwrap();
        assert_eq!(run.spans.len(), 1171);
        assert_eq!(run.stages, vec!["between presents".to_string()]);
        // TimeInSeconds 10.907744, 10.924241, 10.940913; MsBetweenPresents 16.811, 16.497,
        // 16.672. The origin is the first frame's start, 10.907744 s − 16.811 ms.
        assert_eq!(run.meta.origin_mono_ns, 10_890_933_000);
        assert_eq!(
            first_spans(&run, 3),
            vec![
                (0, 0, 16_811_000),
                (1, 16_811_000, 16_497_000),
                (2, 33_308_000, 16_672_000),
            ]
        );
        let t = &run.threads[0];
        assert_eq!(
            (t.pid, t.tid, t.name.as_str()),
            (9208, 0, "FarCryNewDawn.exe")
        );
        // No present of this capture was dropped.
        assert!(run.events.is_empty());
        let notes = run.import.as_ref().unwrap().notes.join("\n");
        assert!(!notes.contains("not displayed"), "{notes}");
        // Per-frame columns as ns samples at the middle of each frame.
        let (id, s) = series(&run, "MsInPresentAPI");
        assert_eq!(
            (s.unit.as_str(), s.entity.as_str(), s.label.as_str()),
            ("ns", "9208", "FarCryNewDawn.exe")
        );
        let first = run
            .telemetry
            .samples
            .iter()
            .find(|x| x.series as usize == id)
            .unwrap();
        assert_eq!((first.t_ns, first.value), (16_811_000 / 2, 1_334_000));
        let metrics: Vec<&str> = run
            .telemetry
            .series
            .iter()
            .map(|s| s.metric.as_str())
            .collect();
        assert_eq!(
            metrics,
            vec![
                "MsBetweenDisplayChange",
                "MsInPresentAPI",
                "MsUntilRenderComplete",
                "MsUntilDisplayed"
            ]
        );
    }

    #[test]
    fn v2_keeps_the_busiest_swap_chain_and_says_what_it_left_out() {
        let run = IMPORT
            .result_with(
                fixture("presentmon-v2-presentbench-multiprocess.csv"),
                ImportOptions::default(),
            )
            .unwrap();
        assert_eq!(run.spans.len(), 258);
        assert_eq!(run.stages, vec!["between app start".to_string()]);
        let t = &run.threads[0];
        assert_eq!((t.pid, t.name.as_str()), (24892, "PresentBench.exe"));
        // The chain's first row: TimeInQPC 2466961626795, MsCPUBusy 10.5535 (so the CPU
        // started at tick 2466961521260, as its CPUStartQPC says), MsBetweenAppStart 11.0804;
        // the second row's CPUStartQPC is 2466961632064, MsBetweenAppStart 11.0437. 10 MHz.
        let cpu_start_1 = 246_696_152_126_000i64; // 2466961521260 ticks × 100 ns
        let cpu_start_2 = 246_696_163_206_400i64;
        assert_eq!(run.meta.origin_mono_ns, cpu_start_1);
        assert_eq!(
            first_spans(&run, 2),
            vec![
                (0, 0, 11_080_400),
                (1, cpu_start_2 - cpu_start_1, 11_043_700)
            ]
        );
        // Frame ends meet the next frame's start: the interval series is the frame time.
        assert_eq!(cpu_start_1 + 11_080_400, cpu_start_2);
        let notes = run.import.as_ref().unwrap().notes.join("\n");
        assert!(
            notes.contains(
                "kept PresentBench.exe (pid 24892) swap chain 0x2A70D2CAC00 (258 presents); \
                 left out 382 presents of other processes (dwm.exe pid 2656: 358, \
                 steamwebhelper.exe pid 3980: 24); pick another with --process NAME"
            ),
            "{notes}"
        );
        assert!(
            notes.contains("left out 7 presents on its other swap chains (0x0: 7)"),
            "{notes}"
        );
        assert!(
            notes.contains("TimeInQPC counts QPC ticks, read at 10000000 per second"),
            "{notes}"
        );
        assert!(
            notes.contains("84 of 258 presents were not displayed (MsUntilDisplayed NA)"),
            "{notes}"
        );
        assert_eq!(run.events.len(), 84);
        assert_eq!(run.event_names, vec!["dropped".to_string()]);
        // Samples: MsCPUBusy of the first frame, at its middle; NA-only columns have none.
        let (id, _) = series(&run, "MsCPUBusy");
        let first = run
            .telemetry
            .samples
            .iter()
            .find(|x| x.series as usize == id)
            .unwrap();
        assert_eq!((first.t_ns, first.value), (11_080_400 / 2, 10_553_500));
        assert!(!run
            .telemetry
            .series
            .iter()
            .any(|s| s.metric == "MsPCLatency"));
        assert!(run
            .telemetry
            .series
            .iter()
            .any(|s| s.metric == "MsBetweenPresents"));
    }

    #[test]
    fn process_option_picks_by_name_or_pid() {
        let input = fixture("presentmon-v2-presentbench-multiprocess.csv");
        for wanted in ["DWM.exe", "dwm", "2656"] {
            let opts = ImportOptions {
                process: Some(wanted.into()),
                ..Default::default()
            };
            let run = IMPORT.result_with(&input, opts).unwrap();
            // dwm has two swap chains of 174 presents: the first seen is kept.
            assert_eq!(run.spans.len(), 174, "{wanted}");
            assert_eq!(run.threads[0].name, "dwm.exe");
            let notes = run.import.unwrap().notes.join("\n");
            assert!(
                notes.contains("kept dwm.exe (pid 2656) swap chain 0x19D7EF5E390"),
                "{notes}"
            );
            assert!(
                notes.contains("0x19D7F1BA8F0: 174, 0x0: 5, 0x100000000: 5"),
                "{notes}"
            );
        }
        let opts = ImportOptions {
            process: Some("game.exe".into()),
            ..Default::default()
        };
        let err = IMPORT.result_with(&input, opts).unwrap_err();
        assert!(err
            .message
            .contains("--process game.exe: no such application or pid"));
        assert!(
            err.message.contains("dwm.exe (pid 2656, 358 presents)"),
            "{}",
            err.message
        );
    }

    const V1_HEADER: &str = "Application,ProcessID,SwapChainAddress,Runtime,SyncInterval,\
        PresentFlags,Dropped,TimeInSeconds,msInPresentAPI,msBetweenPresents,AllowsTearing,\
        PresentMode,msUntilRenderComplete,msUntilDisplayed,msBetweenDisplayChange\n";

    #[test]
    fn dropped_presents_are_events_and_bad_rows_are_counted() {
        let text = format!(
            "{V1_HEADER}\
             game.exe,42,0x1,DXGI,1,0,0,1.000000,0.1,16.6667,0,Hardware: Legacy Flip,1,2,16.6\n\
             game.exe,42,0x1,DXGI,1,0,1,1.016667,0.1,16.6670,0,Hardware: Legacy Flip,1,0,0\n\
             game.exe,42,0x1,DXGI,1,0,0,1.033333,0.1,oops,0,Hardware: Legacy Flip,1,2,33.3\n\
             game.exe,42,0x1,DXGI,1,0,0,1.050000\n\
             game.exe,42,0x1,DXGI,1,0,0,1.066667,0.1,NA,0,Hardware: Legacy Flip,1,2,33.3\n\
             game.exe,42,0x1,DXGI,1,0,0,1.083333,0.1,16.6660,0,Hardware: Legacy Flip,1,2,16.7\n"
        );
        let err = IMPORT
            .result_with(text.as_bytes(), ImportOptions::default())
            .unwrap_err();
        assert_eq!(err.at, Location::Line(4));
        assert!(
            err.message
                .contains("msBetweenPresents \"oops\" is not a number"),
            "{}",
            err.message
        );
        let opts = ImportOptions {
            skip_bad: true,
            ..Default::default()
        };
        let run = IMPORT.result_with(text.as_bytes(), opts).unwrap();
        assert_eq!(
            first_spans(&run, 3),
            vec![
                (0, 0, 16_666_700),
                (1, 1_016_667_000 - 16_667_000 - 983_333_300, 16_667_000),
                (2, 1_083_333_000 - 16_666_000 - 983_333_300, 16_666_000),
            ]
        );
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 2);
        assert_eq!(
            info.first_skipped.as_deref(),
            Some("input:4: msBetweenPresents \"oops\" is not a number of ms")
        );
        let notes = info.notes.join("\n");
        assert!(
            notes.contains("1 of 3 presents were not displayed (Dropped = 1)"),
            "{notes}"
        );
        assert!(
            notes.contains("1 presents have no msBetweenPresents (NA)"),
            "{notes}"
        );
        assert_eq!(run.events.len(), 1);
        assert_eq!(
            (run.events[0].key, run.events[0].t_ns),
            (1, 1_016_667_000 - 983_333_300)
        );
    }

    #[test]
    fn cpu_start_time_in_seconds_or_ms_is_told_from_the_intervals() {
        // `--v2_metrics` style: no present time, CPUStartTime of unstated unit.
        for (times, unit) in [
            (["12.5000", "12.5167", "12.5333"], "seconds"),
            (["12500.0", "12516.7", "12533.3"], "milliseconds"),
        ] {
            let text = format!(
                "Application,ProcessID,SwapChainAddress,CPUStartTime,FrameTime,CPUBusy\n\
                 a.exe,1,0x1,{},16.7,10\na.exe,1,0x1,{},16.6,10\na.exe,1,0x1,{},16.7,10\n",
                times[0], times[1], times[2]
            );
            let run = IMPORT
                .result_with(text.as_bytes(), ImportOptions::default())
                .unwrap();
            assert_eq!(
                first_spans(&run, 3),
                vec![
                    (0, 0, 16_700_000),
                    (1, 16_700_000, 16_600_000),
                    (2, 33_300_000, 16_700_000)
                ],
                "{unit}"
            );
            assert_eq!(run.stages, vec!["frame time".to_string()]);
            let notes = run.import.unwrap().notes.join("\n");
            assert!(
                notes.contains(&format!("CPUStartTime read in {unit}")),
                "{notes}"
            );
        }
    }

    #[test]
    fn date_times() {
        assert_eq!(date_time_ns("2000-1-1 0:00:00.000000001"), Some(1));
        // 2024-03-05 14:03:07 UTC is Unix time 1709647387; 2000-01-01 is 946684800.
        assert_eq!(
            date_time_ns("2024-3-5 14:03:07.123456789"),
            Some((1_709_647_387 - 946_684_800) * 1_000_000_000 + 123_456_789)
        );
        assert_eq!(date_time_ns("2024-13-5 14:03:07"), None);
        assert_eq!(date_time_ns("garbage"), None);
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs: [&[u8]; 7] = [
            b"",
            b"MsBetweenPresents\n",
            b"MsBetweenPresents\n1\n",
            b"TimeInSeconds,MsBetweenPresents\n1e300,1\n-9223372036854775808,9223372036854775807\n",
            b"TimeInQPC,MsBetweenPresents\n9223372036854775807,1\n9223372036854775806,-1\n-5,0\n",
            b"CPUStartQPC,MsBetweenAppStart\n1,1\n2,1\n",
            b"TimeInDateTime,MsBetweenPresents\n99999-99-99 99:99:99,1\n",
        ];
        for input in inputs {
            for skip_bad in [false, true] {
                let opts = ImportOptions {
                    skip_bad,
                    process: Some("x".into()),
                    ..Default::default()
                };
                let _ = IMPORT.result_with(input, opts.clone());
                let _ = IMPORT.result_with(
                    input,
                    ImportOptions {
                        process: None,
                        ..opts
                    },
                );
            }
        }
    }

    #[test]
    fn a_frame_starting_before_the_one_before_it_is_a_bad_record() {
        // The Far Cry capture with line 51's TimeInSeconds set from 11.724241 to 1.0: kept,
        // it made a 9.9 s interval and low1_avg 1.2 fps instead of 29.5.
        let original = fixture("presentmon-v1-farcrynewdawn.csv");
        let edited = String::from_utf8(original.clone()).unwrap().replacen(
            "Composed: Copy with GPU GDI,0,11.724241,",
            "Composed: Copy with GPU GDI,0,1.0,",
            1,
        );
        let err = IMPORT.error(&edited);
        assert!(
            err.starts_with("input:51: the frame starts 10.707476 s before the one of line 50"),
            "{err}"
        );
        let run = IMPORT.run_skipping_bad(&edited);
        assert_eq!(run.import.as_ref().unwrap().skipped, 1);
        assert_eq!(run.spans.len(), 1170);
        let kept = IMPORT.run(&original);
        assert_eq!(longest_interval_ns(&run), longest_interval_ns(&kept));
        assert_eq!(longest_interval_ns(&kept), 80_095_000);
    }

    #[test]
    fn interleaved_processes_and_swap_chains_are_not_out_of_order() {
        // The v2 capture interleaves 7 swap chains of 3 processes, each one's rows in order.
        for process in [None, Some("dwm"), Some("steamwebhelper")] {
            let opts = ImportOptions {
                process: process.map(str::to_owned),
                ..ImportOptions::default()
            };
            let run = IMPORT.run_with(fixture("presentmon-v2-presentbench-multiprocess.csv"), opts);
            assert_eq!(run.import.unwrap().skipped, 0);
        }
    }
}
