//! MangoHud CSV logs: one frame per row.
//!
//! A log is the system line pair (`os,cpu,gpu,ram,kernel,driver,cpuscheduler` and its
//! values, kept as a note), then the frame header (`fps,frametime,...,elapsed`) and one row
//! per frame (per `log_interval`, 0 meaning every frame). `log_versioning` adds `v1`, the
//! version and `---` lines, which are skipped; a file holding several logs one after
//! another has each later log placed after the end of the one before.
//!
//! Each row is a span `frametime` ending at `elapsed` (ns since logging started) and
//! lasting `frametime`: microseconds in MangoHud 0.6, milliseconds from 0.7 on. Which one
//! is told from `fps` ≈ 1e6/frametime or 1e3/frametime, else from the columns 0.7 added
//! (`cpu_power`, `swap_used`, `process_rss`), and said in a note.
//!
//! The other columns are sample series (source `mangohud`, metric = column, at the middle of
//! each frame, written where the value changes): loads in thousandths of a percent (`m%`), temperatures in °C, clocks in
//! MHz (rounded to whole units), power W → mW, memory GiB → bytes (MangoHud logs GiB).
//! Columns of unknown unit are left out and named in a note.

use super::decimal::text_scaled;
use super::generic::{csv_rows, field_text, in_range, Gauge};
use super::in_order::InOrder;
use super::{ImportError, Location, TraceBuilder};
use crate::model::{SampleSeries, SeriesKind};

/// Known sample columns: (name, unit stored, factor from the logged unit).
const SAMPLE_COLUMNS: [(&str, &str, i64); 13] = [
    // Loads are logged with decimals (52.1739): kept to 0.001 %.
    ("cpu_load", "m%", 1_000),
    ("gpu_load", "m%", 1_000),
    ("cpu_temp", "C", 1),
    ("gpu_temp", "C", 1),
    ("gpu_core_clock", "MHz", 1),
    ("gpu_mem_clock", "MHz", 1),
    ("cpu_mhz", "MHz", 1),
    ("cpu_power", "mW", 1_000),
    ("gpu_power", "mW", 1_000),
    ("gpu_vram_used", "B", 1 << 30),
    ("ram_used", "B", 1 << 30),
    ("swap_used", "B", 1 << 30),
    ("process_rss", "B", 1 << 30),
];

/// Columns that only 0.7 and later write (when frametime became milliseconds).
const NEWER_COLUMNS: [&str; 3] = ["cpu_power", "swap_used", "process_rss"];

/// The frame header of one log in the file.
struct Header {
    line: u64,
    names: Vec<String>,
    fps: Option<usize>,
    frametime: usize,
    elapsed: usize,
    /// (column, index into SAMPLE_COLUMNS).
    samples: Vec<(usize, usize)>,
}

impl Header {
    fn parse(b: &TraceBuilder, line: u64, record: &csv::ByteRecord) -> Result<Header, ImportError> {
        let names: Vec<String> = (0..record.len())
            .map(|i| field_text(record, i).to_ascii_lowercase())
            .collect();
        let find = |name: &str| names.iter().position(|n| n == name);
        let (Some(frametime), Some(elapsed)) = (find("frametime"), find("elapsed")) else {
            return Err(b.error(
                Location::Line(line),
                format!(
                    "the MangoHud frame header has no frametime or no elapsed column ({}): \
                     logs before MangoHud 0.6 lack them; record again with a newer MangoHud",
                    names.join(",")
                ),
            ));
        };
        let samples = SAMPLE_COLUMNS
            .iter()
            .enumerate()
            .filter_map(|(k, (name, _, _))| find(name).map(|i| (i, k)))
            .collect();
        Ok(Header {
            line,
            fps: find("fps"),
            frametime,
            elapsed,
            samples,
            names,
        })
    }

    fn unknown_columns(&self) -> Vec<&str> {
        self.names
            .iter()
            .enumerate()
            .filter(|&(i, _)| {
                Some(i) != self.fps
                    && i != self.frametime
                    && i != self.elapsed
                    && !self.samples.iter().any(|&(c, _)| c == i)
            })
            .map(|(_, n)| n.as_str())
            .collect()
    }

    fn is_newer_layout(&self) -> bool {
        NEWER_COLUMNS
            .iter()
            .any(|c| self.names.iter().any(|n| n == c))
    }
}

/// What a line of the file is.
enum Line {
    /// `os,cpu,...`: the next line holds the values.
    SystemHeader(Vec<String>),
    FrameHeader,
    /// `v1`, a version, `-----SYSTEM INFO-----`.
    Decoration,
    Data,
}

fn classify(record: &csv::ByteRecord) -> Line {
    let first = record.get(0).unwrap_or_default().trim_ascii();
    // Frame rows start with a number: the common case, decided at a glance.
    if first
        .first()
        .is_some_and(|c| c.is_ascii_digit() || *c == b'-')
        && record.len() > 1
    {
        return Line::Data;
    }
    if first.eq_ignore_ascii_case(b"os") {
        return Line::SystemHeader(
            (0..record.len())
                .map(|i| field_text(record, i).into_owned())
                .collect(),
        );
    }
    if record
        .iter()
        .any(|f| f.trim_ascii().eq_ignore_ascii_case(b"frametime"))
    {
        return Line::FrameHeader;
    }
    // `v1`, `0.8.1` or `v0.7.2-1`, and the dashed section titles: not a truncated number.
    let dots = first.iter().filter(|&&c| c == b'.').count();
    if first.starts_with(b"---") || (record.len() == 1 && (first.starts_with(b"v") || dots >= 2)) {
        return Line::Decoration;
    }
    Line::Data
}

/// Frametime unit, decided per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameUnit {
    Micros,
    Millis,
}

impl FrameUnit {
    fn ns_per_unit(self) -> i64 {
        match self {
            FrameUnit::Micros => 1_000,
            FrameUnit::Millis => 1_000_000,
        }
    }

    fn name(self) -> &'static str {
        match self {
            FrameUnit::Micros => "microseconds (MangoHud 0.6)",
            FrameUnit::Millis => "milliseconds (MangoHud 0.7 and later)",
        }
    }
}

/// A row of the frame header's width whose first field is a number: a frame, not the
/// system values (which start with the OS's name).
fn is_frame_row(record: &csv::ByteRecord, header: Option<&Header>) -> bool {
    let first = field_text(record, 0);
    header.is_some_and(|h| h.names.len() == record.len()) && first.parse::<f64>().is_ok()
}

/// Tells µs from ms by fps × frametime (1e6 or 1e3) over the first rows; the layout when
/// fps says nothing. Returns the unit and how it was told.
fn frame_unit(input: &[u8], first_header: &Header) -> (FrameUnit, &'static str) {
    let (mut micros, mut millis) = (0u32, 0u32);
    let mut header_seen = false;
    for (_, record) in csv_rows(input) {
        match classify(&record) {
            Line::FrameHeader => header_seen = true,
            Line::Data if header_seen => {
                let value = |i: Option<usize>| {
                    i.and_then(|i| field_text(&record, i).parse::<f64>().ok())
                        .filter(|v| v.is_finite() && *v > 0.0)
                };
                if let (Some(fps), Some(ft)) =
                    (value(first_header.fps), value(Some(first_header.frametime)))
                {
                    // Geometric middle of 1e3 and 1e6: the product is one or the other.
                    if fps * ft > 31_623.0 {
                        micros += 1;
                    } else {
                        millis += 1;
                    }
                }
                if micros + millis >= 1000 {
                    break;
                }
            }
            _ => {}
        }
    }
    if micros + millis > 0 {
        let unit = if micros >= millis {
            FrameUnit::Micros
        } else {
            FrameUnit::Millis
        };
        return (unit, "fps × frametime");
    }
    if first_header.is_newer_layout() {
        (FrameUnit::Millis, "the columns (no fps to check)")
    } else {
        (FrameUnit::Micros, "the columns (no fps to check)")
    }
}

/// One row read and checked.
struct Row {
    end_ns: i64,
    dur_ns: i64,
    samples: Vec<(usize, i64)>,
}

fn read_row(header: &Header, unit: FrameUnit, record: &csv::ByteRecord) -> Result<Row, String> {
    let text = |i: usize| field_text(record, i);
    let elapsed = text(header.elapsed);
    let end_ns = (text_scaled(&elapsed, 1).and_then(in_range))
        .ok_or_else(|| format!("elapsed {elapsed:?} is not a number of ns"))?;
    let ft = text(header.frametime);
    let dur_ns = (text_scaled(&ft, unit.ns_per_unit()).and_then(in_range))
        .ok_or_else(|| format!("frametime {ft:?} is not a number"))?;
    let mut samples = Vec::with_capacity(header.samples.len());
    for &(column, k) in &header.samples {
        let t = text(column);
        if t.is_empty() {
            continue;
        }
        let (name, _, factor) = SAMPLE_COLUMNS[k];
        let value = (text_scaled(&t, factor).and_then(in_range))
            .ok_or_else(|| format!("{name} {t:?} is not a number"))?;
        samples.push((k, value));
    }
    Ok(Row {
        end_ns,
        dur_ns,
        samples,
    })
}

/// Counts for the notes.
#[derive(Default)]
struct Tally {
    frames: u64,
    negative: u64,
    logs: u32,
    /// Sum of the gaps between consecutive ends and of the frame times, to tell a
    /// per-frame log from one taken every `log_interval`.
    gaps_ns: i128,
    frame_ns: i128,
}

pub fn parse(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    let mut rows = csv_rows(input).peekable();
    if rows.peek().is_none() {
        return Err(b.error(Location::Whole, "empty file: no MangoHud log"));
    }
    let first_header = match csv_rows(input).find(|(_, r)| matches!(classify(r), Line::FrameHeader))
    {
        Some((line, record)) => Header::parse(b, line, &record)?,
        None => {
            return Err(b.error(
                Location::Whole,
                "no MangoHud frame header (fps,frametime,...,elapsed) in the file: is it a \
                 MangoHud log? (for another CSV pass --format csv)",
            ))
        }
    };
    let (unit, told_by) = frame_unit(input, &first_header);
    b.note(format!(
        "MangoHud: frametime read in {} as told by {told_by}",
        unit.name()
    ));
    let unknown = first_header.unknown_columns();
    if !unknown.is_empty() {
        b.note(format!(
            "MangoHud: columns not imported (unit unknown): {}",
            unknown.join(", ")
        ));
    }

    let thread = b.thread(0, 0);
    b.name_thread(0, 0, "MangoHud");
    let stage = b.stage("frametime", Location::Line(first_header.line))?;
    // The system line pair: names, then values (labels for the CPU and GPU series).
    let mut system: Option<Vec<String>> = None;
    let mut system_names: Vec<String> = Vec::new();
    // The line of a system header whose values come next.
    let mut pending_system: Option<u64> = None;
    let mut header: Option<Header> = None;
    let mut gauges: Vec<Option<Gauge>> = (0..SAMPLE_COLUMNS.len()).map(|_| None).collect();
    let mut tally = Tally::default();
    // Later logs in one file restart `elapsed` at 0: they are moved past the end of the
    // previous one.
    let (mut offset, mut last_end): (i64, Option<i64>) = (0, None);
    let mut previous_end: Option<i64> = None;
    // A log's `elapsed` never goes back (it restarts with the next log's header).
    let mut ends = InOrder::new(0);
    for (line, record) in rows {
        let at = Location::Line(line);
        if let Some(system_line) = pending_system.take() {
            if !is_frame_row(&record, header.as_ref()) {
                let values = (0..record.len()).map(|i| field_text(&record, i).into_owned());
                system = Some(values.collect());
                continue;
            }
            // A frame row where the values should be: the header line stray (a damaged or
            // spliced log), and the row a frame like any other.
            b.bad(
                Location::Line(system_line),
                "a system header (os,cpu,...) followed by a frame row, not by its values",
            )?;
        }
        match classify(&record) {
            Line::SystemHeader(names) => {
                system_names = names;
                pending_system = Some(line);
            }
            Line::Decoration => {}
            Line::FrameHeader => {
                header = Some(Header::parse(b, line, &record)?);
                tally.logs += 1;
                if let Some(end) = last_end {
                    offset = end;
                }
                previous_end = None;
                ends.restart();
            }
            Line::Data => {
                let Some(h) = &header else {
                    b.bad(at, "a data row before the frame header (fps,frametime,...)")?;
                    continue;
                };
                if record.len() != h.names.len() {
                    b.bad(
                        at,
                        format!(
                            "{} fields where the header has {}: a truncated or damaged row",
                            record.len(),
                            h.names.len()
                        ),
                    )?;
                    continue;
                }
                let row = match read_row(h, unit, &record) {
                    Ok(row) => row,
                    Err(why) => {
                        b.bad(at, why)?;
                        continue;
                    }
                };
                if row.dur_ns < 0 {
                    tally.negative += 1;
                    continue;
                }
                let Some(end) = row.end_ns.checked_add(offset).and_then(in_range) else {
                    b.bad(at, "elapsed is out of range")?;
                    continue;
                };
                if let Err(back) = ends.check(end, line) {
                    b.bad(
                        at,
                        format!(
                            "elapsed goes {:.6} s back from the row of line {}, and MangoHud \
                             stamps a log's rows in order: an edited or damaged row; pass \
                             --skip-bad to skip such rows",
                            back.seconds(),
                            back.from_line
                        ),
                    )?;
                    continue;
                }
                let start = end.saturating_sub(row.dur_ns);
                let frame = b.next_frame();
                b.span(frame, stage, thread, start, row.dur_ns);
                tally.frames += 1;
                if let Some(prev) = previous_end {
                    tally.gaps_ns += i128::from(end) - i128::from(prev);
                    tally.frame_ns += i128::from(row.dur_ns);
                }
                previous_end = Some(end);
                last_end = Some(last_end.map_or(end, |l| l.max(end)));
                let middle = start + row.dur_ns / 2;
                for (k, value) in row.samples {
                    let gauge = gauges[k].get_or_insert_with(|| {
                        Gauge::new(b.series(sample_series(k, system.as_deref())))
                    });
                    gauge.push(b, middle, value);
                }
            }
        }
    }
    for gauge in gauges.iter_mut().flatten() {
        gauge.finish(b);
    }
    if let Some(values) = &system {
        b.note(system_note(&system_names, values));
    }
    tally_notes(b, &tally);
    Ok(())
}

/// The series of sample column `k`; CPU and GPU columns are labelled with the model.
fn sample_series(k: usize, system: Option<&[String]>) -> SampleSeries {
    let (metric, unit, _) = SAMPLE_COLUMNS[k];
    let device = if metric.starts_with("gpu") { 2 } else { 1 };
    let label = match metric {
        m if m.starts_with("gpu") || m.starts_with("cpu") => system
            .and_then(|s| s.get(device))
            .cloned()
            .unwrap_or_default(),
        _ => String::new(),
    };
    let entity = match metric {
        m if m.starts_with("gpu") => "gpu",
        m if m.starts_with("cpu") => "cpu",
        "process_rss" => "process",
        _ => "system",
    };
    SampleSeries {
        source: "mangohud".into(),
        metric: metric.into(),
        entity: entity.into(),
        label,
        unit: unit.into(),
        kind: SeriesKind::Gauge,
    }
}

/// `MangoHud: os Debian GNU/Linux 12, cpu AMD EPYC, ...`: the system line pair, which
/// describes the machine the log was taken on.
fn system_note(names: &[String], values: &[String]) -> String {
    let pairs: Vec<String> = names
        .iter()
        .zip(
            values
                .iter()
                .map(String::as_str)
                .chain(std::iter::repeat("")),
        )
        .map(|(name, value)| format!("{name} {value}"))
        .collect();
    format!("MangoHud: {}", pairs.join(", "))
}

fn tally_notes(b: &mut TraceBuilder, tally: &Tally) {
    if tally.negative > 0 {
        b.note(format!(
            "MangoHud: {} rows have a negative frametime and are not frames",
            tally.negative
        ));
    }
    if tally.logs > 1 {
        b.note(format!(
            "MangoHud: the file holds {} logs one after another; each is placed after the \
             end of the one before, and the time between them is not known: the step from \
             one log's last frame to the next one's first counts as an interval ({} in the \
             fps figures and lows); import each log alone for figures without them",
            tally.logs,
            tally.logs - 1
        ));
    }
    // A per-frame log's ends are one frametime apart; one logged every log_interval
    // (100 ms by default) has gaps far longer than its frames.
    if tally.frame_ns > 0 && tally.gaps_ns > tally.frame_ns * 2 {
        b.note(
            "MangoHud: rows were logged every log_interval, not every frame: each span is the \
             frame current at that moment and the frames between are not in the log \
             (log_interval=0 logs every frame)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Format, ImportOptions};
    use crate::model::Run;

    use crate::import::test_support::{fixture, longest_interval_ns, Importer};

    const IMPORT: Importer = Importer(Format::Mangohud);

    fn frames(run: &Run) -> Vec<(u64, i64, i64)> {
        let mut v: Vec<_> = run
            .spans
            .iter()
            .map(|s| (s.frame, s.start_ns, s.dur_ns))
            .collect();
        v.sort();
        v
    }

    fn samples(run: &Run, metric: &str) -> Vec<(i64, i64)> {
        let id = run
            .telemetry
            .series
            .iter()
            .position(|s| s.metric == metric)
            .unwrap_or_else(|| panic!("no series {metric}"));
        run.telemetry
            .samples
            .iter()
            .filter(|s| s.series as usize == id)
            .map(|s| (s.t_ns, s.value))
            .collect()
    }

    #[test]
    fn glxgears_frames_are_microsecond_frametimes_ending_at_elapsed() {
        let run = IMPORT
            .result_with(
                fixture("mangohud-0.6.8-glxgears-llvmpipe.csv"),
                ImportOptions::default(),
            )
            .unwrap();
        assert_eq!(run.spans.len(), 3384);
        assert_eq!(run.stages, vec!["frametime".to_string()]);
        // Rows 1 and 2: frametime 86059 µs, elapsed 284963802 ns; 4596 µs, 289560585 ns.
        let origin = 284_963_802 - 86_059_000;
        assert_eq!(run.meta.origin_mono_ns, origin);
        let f = frames(&run);
        assert_eq!(f[0], (0, 0, 86_059_000));
        assert_eq!(f[1], (1, 289_560_585 - 4_596_000 - origin, 4_596_000));
        let info = run.import.as_ref().unwrap();
        let notes = info.notes.join("\n");
        assert!(
            notes.contains(
                "frametime read in microseconds (MangoHud 0.6) as told by fps × frametime"
            ),
            "{notes}"
        );
        assert!(
            notes.contains(
                "MangoHud: os Debian GNU/Linux 12 (bookworm), cpu AMD EPYC, gpu , ram 24683656, \
                 kernel 6.18.44-fc-v769, driver 4.5 Mesa 22.3.6, cpuscheduler "
            ),
            "{notes}"
        );
        assert!(!notes.contains("log_interval"), "{notes}");
        assert_eq!(info.skipped, 0);
        // cpu_load 52.1739 % in thousandths of a percent; ram_used 0.127605 GiB in bytes.
        let cpu = samples(&run, "cpu_load");
        assert_eq!(cpu[0], (86_059_000 / 2, 52_174));
        let ram = samples(&run, "ram_used");
        assert_eq!(ram[0].1, 137_014_825); // 0.127605 × 2^30 = 137014825.45
        let series = &run.telemetry.series;
        let gpu = series.iter().find(|s| s.metric == "gpu_power").unwrap();
        assert_eq!((gpu.unit.as_str(), gpu.entity.as_str()), ("mW", "gpu"));
        // A sensor that reads 0 throughout is two samples, not 3384.
        assert_eq!(samples(&run, "gpu_temp").len(), 2);
    }

    /// A system header spliced in mid-log with no values after it: the frame row that
    /// follows is a frame, and the stray header a bad record (refused, or skipped and
    /// counted), not the row taken for the machine's description.
    #[test]
    fn a_stray_system_header_does_not_swallow_the_next_frame() {
        let log = String::from_utf8(fixture("mangohud-0.6.8-glxgears-llvmpipe.csv")).unwrap();
        let mut lines: Vec<&str> = log.lines().collect();
        lines.insert(1000, "os,cpu,gpu,ram,kernel,driver,cpuscheduler");
        let spliced = lines.join("\n");
        assert!(
            IMPORT.error(&spliced).contains(
                "1001: a system header (os,cpu,...) followed by a frame row, not by its values"
            ),
            "{}",
            IMPORT.error(&spliced)
        );
        let run = IMPORT.run_skipping_bad(&spliced);
        assert_eq!(run.spans.len(), 3384, "every frame row is a frame");
        let info = run.import.as_ref().unwrap();
        assert_eq!(info.skipped, 1);
        assert!(
            info.notes
                .iter()
                .any(|n| n.contains("os Debian GNU/Linux 12")),
            "{:?}",
            info.notes
        );
    }

    /// A damaged row of a million fields near the top is refused with its line (how fast:
    /// BENCHMARKS.md, "Imports of a damaged log with a huge row").
    #[test]
    fn a_row_of_a_million_fields_is_refused_with_its_line() {
        let log = String::from_utf8(fixture("mangohud-0.6.8-vkcube-lavapipe.csv")).unwrap();
        let mut lines: Vec<String> = log.lines().map(str::to_owned).collect();
        lines.insert(600, "1,".repeat(1_000_000));
        let error = IMPORT.error(lines.join("\n"));
        assert!(
            error.contains("601: 1000001 fields where the header has 12"),
            "{error}"
        );
    }

    #[test]
    fn vkcube_first_frame_is_the_slow_start() {
        let run = IMPORT
            .result_with(
                fixture("mangohud-0.6.8-vkcube-lavapipe.csv"),
                ImportOptions::default(),
            )
            .unwrap();
        assert_eq!(run.spans.len(), 1197);
        let f = frames(&run);
        assert_eq!(f[0], (0, 0, 152_527_000));
        // Row 2: 6352 µs ending at 278886893 ns.
        assert_eq!(
            f[1],
            (
                1,
                278_886_893 - 6_352_000 - (272_535_378 - 152_527_000),
                6_352_000
            )
        );
        let cpu = samples(&run, "cpu_load");
        assert_eq!(cpu[0].1, 100_000);
    }

    #[test]
    fn appended_logs_say_their_junction_is_an_interval() {
        let mut both = fixture("mangohud-0.6.8-glxgears-llvmpipe.csv");
        both.extend(fixture("mangohud-0.6.8-vkcube-lavapipe.csv"));
        let run = IMPORT.result_with(both, ImportOptions::default()).unwrap();
        let info = run.import.as_ref().unwrap();
        let note = (info.notes.iter())
            .find(|n| n.contains("2 logs one after another"))
            .expect("a note on the two logs");
        assert!(
            note.contains("counts as an interval (1 in the fps figures"),
            "{note}"
        );
    }

    const NEW_HEADER: &str = "fps,frametime,cpu_load,cpu_power,gpu_load,cpu_temp,gpu_temp,\
        gpu_core_clock,gpu_mem_clock,gpu_vram_used,gpu_power,ram_used,swap_used,process_rss,\
        cpu_mhz,elapsed";

    #[test]
    fn newer_logs_have_millisecond_frametimes_and_versioning_lines() {
        let text = format!(
            "v1\n0.8.1\n---------------------SYSTEM INFO---------------------\n\
             os,cpu,gpu,ram,kernel,driver,cpuscheduler\n\
             Arch,\"Ryzen 7, 8 cores\",RX 7800,32768000,6.9,Mesa 24,performance\n\
             --------------------FRAME METRICS--------------------\n\
             {NEW_HEADER}\n\
             60.1,16.6667,40.5,35.25,90,45,70,2000,1000,1.5,100.125,12.25,0,2,4000,100000000\n\
             59.9,16.7,42,35.25,91,45,71,2000,1000,1.5,100.125,12.25,0,2,4000,116700000\n"
        );
        let run = IMPORT
            .result_with(text.as_bytes(), ImportOptions::default())
            .unwrap();
        assert_eq!(
            frames(&run),
            vec![
                (0, 0, 16_666_700),
                (1, 116_700_000 - 16_700_000 - 83_333_300, 16_700_000)
            ]
        );
        let notes = run.import.as_ref().unwrap().notes.join("\n");
        assert!(
            notes.contains("milliseconds (MangoHud 0.7 and later)"),
            "{notes}"
        );
        assert!(
            notes.contains("cpu Ryzen 7, 8 cores, gpu RX 7800"),
            "{notes}"
        );
        assert_eq!(samples(&run, "cpu_power")[0].1, 35_250);
        assert_eq!(samples(&run, "gpu_vram_used")[0].1, 1_610_612_736);
        assert_eq!(samples(&run, "cpu_mhz")[0].1, 4000);
        let cpu = run
            .telemetry
            .series
            .iter()
            .find(|s| s.metric == "cpu_load")
            .unwrap();
        assert_eq!(cpu.label, "Ryzen 7, 8 cores");
    }

    #[test]
    fn sampled_logs_and_bad_rows_are_reported() {
        let text = format!(
            "os,cpu,gpu,ram,kernel,driver,cpuscheduler\nA,B,C,1,K,D,S\n{NEW_HEADER}\n\
             60,16.6,1,0,0,0,0,0,0,0,0,0,0,0,0,100000000\n\
             60,16.6,1,0,0,0,0,0,0,0,0,0,0,0,0,200000000\n\
             60,oops,1,0,0,0,0,0,0,0,0,0,0,0,0,300000000\n\
             60,16.6,1,0,0\n\
             60,16.6,1,0,0,0,0,0,0,0,0,0,0,0,0,400000000\n"
        );
        let err = IMPORT
            .result_with(text.as_bytes(), ImportOptions::default())
            .unwrap_err();
        assert_eq!(err.at, Location::Line(6));
        assert!(
            err.message.contains("frametime \"oops\" is not a number"),
            "{}",
            err.message
        );
        let opts = ImportOptions {
            skip_bad: true,
            ..Default::default()
        };
        let run = IMPORT.result_with(text.as_bytes(), opts).unwrap();
        assert_eq!(run.spans.len(), 3);
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 2);
        assert_eq!(
            info.first_skipped.as_deref(),
            Some("input:6: frametime \"oops\" is not a number")
        );
        let notes = info.notes.join("\n");
        assert!(notes.contains("logged every log_interval"), "{notes}");
    }

    #[test]
    fn not_a_mangohud_log() {
        let err = IMPORT
            .result_with(b"a,b\n1,2\n", ImportOptions::default())
            .unwrap_err();
        assert!(
            err.message.contains("no MangoHud frame header"),
            "{}",
            err.message
        );
        let err = IMPORT
            .result_with(b"", ImportOptions::default())
            .unwrap_err();
        assert!(err.message.contains("empty"), "{}", err.message);
        let err = IMPORT
            .result_with(b"fps,frametime\n1,2\n", ImportOptions::default())
            .unwrap_err();
        assert!(err.message.contains("no elapsed"), "{}", err.message);
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs: [&[u8]; 6] = [
            b"os\n",
            b"frametime,elapsed\n-1,-9223372036854775808\n9223372036854775807,9223372036854775807\n",
            b"frametime,elapsed\n1e30,1\n",
            b"fps,frametime,elapsed\nnan,inf,1\n0,0,0\n",
            b"fps,frametime,elapsed\n1,1,1\nfps,frametime,elapsed\n1,1,9223372036854775807\n1,1,5\n",
            b"\xff\xfe\n,,,\nframetime,elapsed\n\"1\n",
        ];
        for input in inputs {
            for skip_bad in [false, true] {
                let opts = ImportOptions {
                    skip_bad,
                    ..Default::default()
                };
                let _ = IMPORT.result_with(input, opts);
            }
        }
    }

    #[test]
    fn an_elapsed_stepping_back_is_a_bad_record() {
        // The glxgears log with line 101's elapsed set from 534306965 to 100: kept, it
        // stretched the window and made low1_avg 74.9 fps instead of 197.7.
        let original = fixture("mangohud-0.6.8-glxgears-llvmpipe.csv");
        let edited = String::from_utf8(original.clone()).unwrap().replacen(
            ",0.127605,534306965\n",
            ",0.127605,100\n",
            1,
        );
        let err = IMPORT.error(&edited);
        assert!(
            err.starts_with("input:101: elapsed goes 0.532072 s back from the row of line 100"),
            "{err}"
        );
        let run = IMPORT.run_skipping_bad(&edited);
        assert_eq!(run.import.as_ref().unwrap().skipped, 1);
        let kept = IMPORT.run(&original);
        assert_eq!(run.spans.len() + 1, kept.spans.len());
        assert_eq!(longest_interval_ns(&run), longest_interval_ns(&kept));
    }
}
