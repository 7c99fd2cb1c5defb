//! ffmpeg `-benchmark_all` logs: one `bench:` line per codec call, read into spans.
//!
//! ffmpeg prints, on stderr among its other messages,
//! `bench:     1234 user       56 sys     1300 real encode_video 0.0 `: the process's
//! user and system CPU time (`getrusage`) and the wall time, in µs, that passed since
//! its benchmark clock was last reset, which it does just before each codec call. The
//! step is `decode_<type>`, `encode_<type>` or `flush_<type>` (the encoder drained at
//! the end); the stream is `FILE.STREAM` of an input for decoders (`FILE:STREAM` since
//! ffmpeg 7) and of an output for encoders.
//!
//! How the lines become a run:
//! - **Stage** = the step (`decode_video`), **thread** = the stream, as a synthetic
//!   thread named `input #0:0` or `output #0:0` of a process named `ffmpeg`.
//! - **Time**: the lines carry no timestamp, so spans are laid end to end on one
//!   timeline in log order, each `real` µs long. ffmpeg ≤ 6.0 runs the codec calls one
//!   after another on one thread, and ffmpeg ≥ 6.1 (one thread per codec) still keeps a
//!   single benchmark clock for all threads, so each line measures from the previous
//!   line of any stream: a single timeline matches what was measured either way. The
//!   time between calls that ffmpeg does not measure (filters, muxing, its own logging)
//!   is absent, so the timeline is shorter than the wall time; each span's duration,
//!   and so each stage's distribution, is exact.
//! - **Frames**: ffmpeg calls a codec until it has nothing more to give, one line per
//!   call (typically a call that returns a frame or packet and one that returns EAGAIN),
//!   so consecutive lines of one step on one stream are the calls for one packet or
//!   frame and share a frame id: the k-th such group of a stream's decoder is frame k,
//!   as is the k-th group of its encoder. A stream's `flush_*` lines continue its
//!   encoder's count (they are one more group: the end of the stream). Frame ids of
//!   audio start at 1,000,000,000 and of subtitles at 2,000,000,000 (3,000,000,000
//!   for other types), so a video frame and an audio frame are never one frame.
//! - **Samples**: each line's user and sys CPU times become readings (ns, as gauges)
//!   of series `ffmpeg`/`user_time` and `ffmpeg`/`sys_time` of its stream, at the start
//!   of its span. They are the whole process's CPU time over the call, codec worker
//!   threads included.
//! - `    Last message repeated N times` (ffmpeg's log folds identical lines) after a
//!   bench line stands for N more of that line: N more spans. Its running form on a
//!   terminal, ending in `\r`, is only a progress display and is ignored.
//! - `-benchmark`'s totals (`bench: utime=… stime=… rtime=…`, `bench: maxrss=…`)
//!   become notes. Every other line is counted in one note.
//! - ffmpeg prints its differences as unsigned numbers: a difference that went negative
//!   (threads racing on the shared clock) reads as a number ≥ 2^63, which is taken back
//!   as the negative value it was; such a line gives no span (or no CPU reading) and is
//!   counted in a note.

use std::collections::HashMap;

use super::{ImportError, Location, TraceBuilder};
use crate::model::{SampleSeries, SeriesKind};

/// The synthetic process every stream's thread belongs to.
const FFMPEG_PID: u32 = 1;

/// Frame ids of each media type start here times the type's index.
const FRAME_SPACE: u64 = 1_000_000_000;

/// Spans `Last message repeated` may add per input byte (beyond a fixed allowance): a
/// real log folds a handful of lines at a time; a count far beyond the file's size is a
/// corrupt or crafted file, refused rather than filling memory.
const REPEATS_PER_BYTE: usize = 4;
const REPEATS_ALLOWANCE: usize = 65_536;

pub fn parse(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(b.error(
            Location::Whole,
            "the file is empty; capture ffmpeg's stderr with -benchmark_all, e.g. \
             `ffmpeg -benchmark_all -i IN ... 2> log.txt`",
        ));
    }
    let mut log = BenchLog::new(input.len());
    for (index, line) in input.split(|&c| c == b'\n').enumerate() {
        let at = Location::Line(index as u64 + 1);
        // A CRLF line end is not a progress line's `\r`.
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Progress lines end in `\r` and the next message follows on the same line.
        let mut segments = line.split(|&c| c == b'\r').peekable();
        while let Some(segment) = segments.next() {
            let ends_line = segments.peek().is_none();
            log.segment(segment, ends_line, at, b)?;
        }
    }
    log.finish(b)
}

/// One `bench:` line's numbers, µs (negative when ffmpeg's difference wrapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BenchLine<'a> {
    user_us: i64,
    sys_us: i64,
    real_us: i64,
    step: &'a str,
    stream: &'a str,
}

impl BenchLine<'_> {
    /// Decoders name an input stream; encoders and their flushes an output stream.
    fn is_input(&self) -> bool {
        self.step.starts_with("decode")
    }

    /// `video` of `decode_video`.
    fn media(&self) -> &str {
        self.step.split_once('_').map_or("", |(_, media)| media)
    }
}

/// A stream's synthetic thread and its two CPU series.
#[derive(Clone, Copy)]
struct Stream {
    thread: u32,
    user_series: u32,
    sys_series: u32,
}

/// Parsing state across lines; names borrow from the input.
struct BenchLog<'a> {
    /// Where the next span starts, ns.
    cursor_ns: i64,
    /// The last message when it was a bench line: what `Last message repeated` repeats.
    repeatable: Option<BenchLine<'a>>,
    /// The previous bench line's (step, stream) and frame id: consecutive lines of one
    /// step on one stream are one frame's calls.
    group: Option<(&'a str, &'a str, u64)>,
    /// Next group number per (media type, input?, stream).
    next_group: HashMap<(usize, bool, &'a str), u64>,
    streams: HashMap<(bool, &'a str), Stream>,
    repeats_left: usize,
    bench_lines: u64,
    other_lines: u64,
    negative_real: u64,
    negative_cpu: u64,
    totals: Vec<String>,
}

impl<'a> BenchLog<'a> {
    fn new(input_len: usize) -> BenchLog<'a> {
        BenchLog {
            cursor_ns: 0,
            repeatable: None,
            group: None,
            next_group: HashMap::new(),
            streams: HashMap::new(),
            repeats_left: input_len
                .saturating_mul(REPEATS_PER_BYTE)
                .saturating_add(REPEATS_ALLOWANCE),
            bench_lines: 0,
            other_lines: 0,
            negative_real: 0,
            negative_cpu: 0,
            totals: Vec::new(),
        }
    }

    /// One message: a line, or the part of a line before or after a progress `\r`.
    fn segment(
        &mut self,
        segment: &'a [u8],
        ends_line: bool,
        at: Location,
        b: &mut TraceBuilder,
    ) -> Result<(), ImportError> {
        let text = segment.trim_ascii();
        if text.is_empty() {
            return Ok(());
        }
        if let Some(payload) = bench_payload(text) {
            return self.bench(payload, at, b);
        }
        if let Some(count) = repeat_count(text) {
            if !ends_line {
                // A terminal's running count, rewritten in place until the final one.
                return Ok(());
            }
            return self.repeat(count, at, b);
        }
        self.other_lines += 1;
        self.repeatable = None;
        Ok(())
    }

    /// The text after `bench:`.
    fn bench(
        &mut self,
        payload: &'a [u8],
        at: Location,
        b: &mut TraceBuilder,
    ) -> Result<(), ImportError> {
        self.repeatable = None;
        let Ok(payload) = std::str::from_utf8(payload) else {
            return b.bad(
                at,
                "a bench: line that is not UTF-8 text; is the log corrupt?",
            );
        };
        let payload = payload.trim();
        if payload.starts_with("utime=") || payload.starts_with("maxrss=") {
            self.totals.push(payload.chars().take(200).collect());
            return Ok(());
        }
        let line = match parse_bench(payload) {
            Ok(line) => line,
            Err(why) => return b.bad(at, why),
        };
        self.record(&line, at, b)?;
        self.repeatable = Some(line);
        Ok(())
    }

    /// `Last message repeated N times`: N more of the previous message when it was a
    /// bench line; the repeat of any other message is another ignored line.
    fn repeat(
        &mut self,
        count: Result<u64, ()>,
        at: Location,
        b: &mut TraceBuilder,
    ) -> Result<(), ImportError> {
        let Some(line) = self.repeatable else {
            self.other_lines += 1;
            return Ok(());
        };
        let Ok(count) = count else {
            return b.bad(
                at,
                "`Last message repeated N times` with N not a whole number; is the log corrupt?",
            );
        };
        let fits = usize::try_from(count).is_ok_and(|n| n <= self.repeats_left);
        if !fits {
            self.repeatable = None;
            return b.bad(
                at,
                format!(
                    "`Last message repeated {count} times` repeats a bench line more often than \
                     a log of this size can hold; is the log corrupt?"
                ),
            );
        }
        self.repeats_left -= count as usize;
        for _ in 0..count {
            self.record(&line, at, b)?;
        }
        Ok(())
    }

    /// One call: a span on its stream's thread and its CPU readings.
    fn record(
        &mut self,
        line: &BenchLine<'a>,
        at: Location,
        b: &mut TraceBuilder,
    ) -> Result<(), ImportError> {
        self.bench_lines += 1;
        let stage = b.stage(line.step, at)?;
        let stream = self.stream(line, b);
        let frame = self.frame(line);
        if line.real_us < 0 {
            self.negative_real += 1;
            return Ok(());
        }
        let Some(dur_ns) = line.real_us.checked_mul(1000) else {
            return b.bad(
                at,
                format!(
                    "real time {} µs is too large to be a real time; is the log corrupt?",
                    line.real_us
                ),
            );
        };
        let Some(end_ns) = self.cursor_ns.checked_add(dur_ns) else {
            return b.bad(
                at,
                "the bench lines add up to more than 292 years; is the log corrupt?",
            );
        };
        let start_ns = self.cursor_ns;
        b.span(frame, stage, stream.thread, start_ns, dur_ns);
        self.cursor_ns = end_ns;
        for (us, series) in [
            (line.user_us, stream.user_series),
            (line.sys_us, stream.sys_series),
        ] {
            match us.checked_mul(1000) {
                Some(ns) if ns >= 0 => b.sample(series, start_ns, ns),
                _ => self.negative_cpu += 1,
            }
        }
        Ok(())
    }

    /// The thread and series of the line's stream, made on first sight.
    fn stream(&mut self, line: &BenchLine<'a>, b: &mut TraceBuilder) -> Stream {
        let key = (line.is_input(), line.stream);
        if let Some(&stream) = self.streams.get(&key) {
            return stream;
        }
        let name = thread_name(line.is_input(), line.stream);
        let tid = u32::try_from(self.streams.len() + 1).unwrap_or(u32::MAX);
        let thread = b.thread(FFMPEG_PID, tid);
        b.name_thread(FFMPEG_PID, tid, &name);
        b.name_process(FFMPEG_PID, "ffmpeg");
        let mut series = |metric: &str| {
            b.series(SampleSeries {
                source: "ffmpeg".into(),
                metric: metric.into(),
                entity: name.clone(),
                label: name.clone(),
                unit: "ns".into(),
                kind: SeriesKind::Gauge,
            })
        };
        let stream = Stream {
            thread,
            user_series: series("user_time"),
            sys_series: series("sys_time"),
        };
        self.streams.insert(key, stream);
        stream
    }

    /// The frame id: the same as the previous line's when it was the same step on the
    /// same stream, else the next group of this stream's decoder or encoder.
    fn frame(&mut self, line: &BenchLine<'a>) -> u64 {
        if let Some((step, stream, frame)) = self.group {
            if step == line.step && stream == line.stream {
                return frame;
            }
        }
        let media = media_index(line.media());
        let next = self
            .next_group
            .entry((media, line.is_input(), line.stream))
            .or_insert(0);
        let frame = (media as u64 * FRAME_SPACE).saturating_add(*next);
        *next = next.saturating_add(1);
        self.group = Some((line.step, line.stream, frame));
        frame
    }

    fn finish(self, b: &mut TraceBuilder) -> Result<(), ImportError> {
        if self.bench_lines == 0 {
            let why = if self.totals.is_empty() {
                "no `bench: … user … sys … real STEP STREAM` line: was ffmpeg run with \
                 -benchmark_all, and is this its stderr?"
            } else {
                "only ffmpeg's -benchmark totals, no per-call lines: run ffmpeg with \
                 -benchmark_all for those"
            };
            return Err(b.error(Location::Whole, why));
        }
        if self.negative_real > 0 {
            b.note(format!(
                "{} bench lines with a negative real time (ffmpeg's threads share one \
                 benchmark clock) gave no span",
                self.negative_real
            ));
        }
        if self.negative_cpu > 0 {
            b.note(format!(
                "{} negative user/sys CPU times (ffmpeg's threads share one benchmark clock) \
                 were not recorded",
                self.negative_cpu
            ));
        }
        if self.other_lines > 0 {
            b.note(format!(
                "{} other ffmpeg log lines ignored (not bench lines)",
                self.other_lines
            ));
        }
        for total in self.totals {
            b.note(format!("ffmpeg -benchmark: {total}"));
        }
        Ok(())
    }
}

/// The text after `bench:` when the message is a bench line: at its start, or after a
/// `-loglevel` prefix such as `[info] `.
fn bench_payload(text: &[u8]) -> Option<&[u8]> {
    const MARK: &[u8] = b"bench:";
    if let Some(rest) = text.strip_prefix(MARK) {
        return Some(rest);
    }
    let at = memchr::memmem::find(text, b"] bench:")?;
    text.get(at + 2 + MARK.len()..)
}

/// `Last message repeated N times`: `Some(Ok(N))`, or `Some(Err(()))` when N is not a
/// number.
fn repeat_count(text: &[u8]) -> Option<Result<u64, ()>> {
    let rest = text.strip_prefix(b"Last message repeated ")?;
    let number = rest.strip_suffix(b" times")?;
    let parsed = std::str::from_utf8(number)
        .ok()
        .and_then(|n| n.trim().parse::<u64>().ok());
    Some(parsed.ok_or(()))
}

/// `1234 user 56 sys 1300 real decode_video 0.0` (the text after `bench:`).
fn parse_bench(payload: &str) -> Result<BenchLine<'_>, String> {
    const SHAPE: &str = "expected `bench: USER user SYS sys REAL real STEP STREAM` (µs)";
    let mut words = payload.split_whitespace();
    let mut number = |label: &str| -> Result<i64, String> {
        let value = words
            .next()
            .ok_or_else(|| format!("a bench: line cut short; {SHAPE}"))?;
        let parsed = value
            .parse::<u64>()
            .map_err(|_| format!("{value:?} is not a number of µs before `{label}`; {SHAPE}"))?;
        if words.next() != Some(label) {
            return Err(format!("no `{label}` after {value}; {SHAPE}"));
        }
        // ffmpeg prints a signed difference as unsigned: ≥ 2^63 is a negative one.
        Ok(parsed as i64)
    };
    let user_us = number("user")?;
    let sys_us = number("sys")?;
    let real_us = number("real")?;
    let step = words
        .next()
        .ok_or_else(|| format!("no step name after `real`; {SHAPE}"))?;
    if !step.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err(format!(
            "{step:?} is not a step name like decode_video; {SHAPE}"
        ));
    }
    let stream = words.next().unwrap_or("");
    if let Some(extra) = words.next() {
        return Err(format!("unexpected {extra:?} after the stream; {SHAPE}"));
    }
    Ok(BenchLine {
        user_us,
        sys_us,
        real_us,
        step,
        stream,
    })
}

/// `input #0:0` / `output #0:1`, the notation of ffmpeg's stream mapping.
fn thread_name(is_input: bool, stream: &str) -> String {
    let side = if is_input { "input" } else { "output" };
    if stream.is_empty() {
        side.to_owned()
    } else {
        format!("{side} #{}", stream.replace('.', ":"))
    }
}

fn media_index(media: &str) -> usize {
    match media {
        "video" => 0,
        "audio" => 1,
        "subtitle" => 2,
        _ => 3,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::super::{parse_bytes, Format, ImportOptions};
    use crate::model::{Run, Span};

    use crate::import::test_support::{fixture, Importer};

    const IMPORT: Importer = Importer(Format::Ffmpeg);

    /// (spans, distinct frame ids, total ns, first frame, last frame).
    type StepSummary = (usize, usize, i64, u64, u64);

    /// Each (stage, thread name)'s summary.
    fn by_step(run: &Run) -> BTreeMap<(String, String), StepSummary> {
        let mut frames: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
        let mut out = BTreeMap::new();
        for s in &run.spans {
            let key = (
                run.stages[s.stage as usize].clone(),
                run.threads[s.thread as usize].name.clone(),
            );
            frames.entry(key.clone()).or_default().insert(s.frame);
            let e = out.entry(key).or_insert((0, 0, 0, u64::MAX, 0));
            e.0 += 1;
            e.2 += s.dur_ns;
            e.3 = e.3.min(s.frame);
            e.4 = e.4.max(s.frame);
        }
        for (key, e) in &mut out {
            e.1 = frames[key].len();
        }
        out
    }

    fn summary(spans: &[Span], run: &Run) -> Vec<(String, i64, i64, u64)> {
        spans
            .iter()
            .map(|s| {
                (
                    run.stages[s.stage as usize].clone(),
                    s.start_ns,
                    s.dur_ns,
                    s.frame,
                )
            })
            .collect()
    }

    /// Spans tile one timeline from 0: each starts where the one before ended.
    fn assert_end_to_end(run: &Run) {
        let mut at = 0;
        for s in &run.spans {
            assert_eq!(s.start_ns, at, "{s:?}");
            at = s.end_ns();
        }
    }

    fn key(stage: &str, thread: &str) -> (String, String) {
        (stage.to_owned(), thread.to_owned())
    }

    #[test]
    fn x264_encode_log_number_by_number() {
        let run = IMPORT.run(fixture("ffmpeg-5.1-x264-encode.log"));
        // 122 bench lines (one after a progress line's `\r`), no repeats.
        assert_eq!(run.spans.len(), 122);
        assert_end_to_end(&run);
        assert_eq!(
            summary(&run.spans[..6], &run),
            [
                ("decode_video".to_owned(), 0, 13_000, 0),
                ("decode_video".to_owned(), 13_000, 10_000, 0),
                ("encode_video".to_owned(), 23_000, 667_000, 0),
                // Line 21: `frame=    1 … speed=N/A    \rbench: …`.
                ("decode_video".to_owned(), 690_000, 8_000, 1),
                ("decode_video".to_owned(), 698_000, 1_000, 1),
                ("encode_video".to_owned(), 699_000, 535_000, 1),
            ]
        );
        let steps = by_step(&run);
        assert_eq!(
            steps[&key("decode_video", "input #0:0")],
            (61, 31, 187_000, 0, 30)
        );
        assert_eq!(
            steps[&key("encode_video", "output #0:0")],
            (30, 30, 60_318_000, 0, 29)
        );
        // The encoder's flush is one more group of its frames: the end of the stream.
        assert_eq!(
            steps[&key("flush_video", "output #0:0")],
            (31, 1, 215_207_000, 30, 30)
        );
        assert_eq!(steps.len(), 3);
        let last = run.spans.last().unwrap();
        assert_eq!(last.end_ns(), 275_712_000);
        assert_eq!(run.meta.window_end_ns, 275_712_000);
        assert!(run.threads.iter().all(|t| t.pid == 1));

        // CPU readings: one per span and series, at the span's start, in ns.
        let series = |metric: &str, entity: &str| {
            run.telemetry
                .series
                .iter()
                .position(|s| s.source == "ffmpeg" && s.metric == metric && s.entity == entity)
                .unwrap() as u32
        };
        let total = |id: u32| -> (usize, i64) {
            let mine: Vec<_> = run
                .telemetry
                .samples
                .iter()
                .filter(|s| s.series == id)
                .collect();
            (mine.len(), mine.iter().map(|s| s.value).sum())
        };
        assert_eq!(total(series("user_time", "input #0:0")), (61, 43_000));
        assert_eq!(total(series("sys_time", "input #0:0")), (61, 127_000));
        assert_eq!(total(series("user_time", "output #0:0")), (61, 159_876_000));
        assert_eq!(total(series("sys_time", "output #0:0")), (61, 16_822_000));
        let first_encode = run
            .telemetry
            .samples
            .iter()
            .find(|s| s.series == series("user_time", "output #0:0"))
            .unwrap();
        assert_eq!((first_encode.t_ns, first_encode.value), (23_000, 351_000));
        assert!(run.telemetry.series.iter().all(|s| s.unit == "ns"));

        let info = run.import.unwrap();
        assert_eq!(info.skipped, 0);
        assert_eq!(
            info.notes,
            ["38 other ffmpeg log lines ignored (not bench lines)"]
        );
    }

    #[test]
    fn audio_and_video_streams_are_threads_and_frames_of_their_own() {
        let run = IMPORT.run(fixture("ffmpeg-5.1-transcode-av.log"));
        assert_eq!(run.spans.len(), 273);
        assert_end_to_end(&run);
        let steps = by_step(&run);
        let audio = 1_000_000_000;
        assert_eq!(
            steps,
            BTreeMap::from([
                (
                    key("decode_audio", "input #0:1"),
                    (90, 44, 460_000, audio, audio + 43)
                ),
                (
                    key("decode_video", "input #0:0"),
                    (51, 28, 15_724_000, 0, 27)
                ),
                (
                    key("encode_audio", "output #0:1"),
                    (80, 40, 1_225_000, audio, audio + 39)
                ),
                (
                    key("encode_video", "output #0:0"),
                    (50, 25, 4_647_000, 0, 24)
                ),
                (
                    key("flush_audio", "output #0:1"),
                    (1, 1, 1_000, audio + 40, audio + 40)
                ),
                (key("flush_video", "output #0:0"), (1, 1, 3_000, 25, 25)),
            ])
        );
        assert_eq!(
            summary(&run.spans[..3], &run),
            [
                ("decode_audio".to_owned(), 0, 31_000, audio),
                ("decode_video".to_owned(), 31_000, 104_000, 0),
                ("decode_audio".to_owned(), 135_000, 14_000, audio + 1),
            ]
        );
        let names: BTreeSet<_> = run.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            BTreeSet::from(["input #0:0", "input #0:1", "output #0:0", "output #0:1"])
        );
        let info = run.import.unwrap();
        assert_eq!(
            info.notes,
            [
                "41 other ffmpeg log lines ignored (not bench lines)",
                "ffmpeg -benchmark: utime=0.020s stime=0.003s rtime=0.039s",
                "ffmpeg -benchmark: maxrss=62492kB",
            ]
        );
    }

    #[test]
    fn repeated_messages_expand_into_spans() {
        let log = fixture("ffmpeg-5.1-pcm-repeats.log");
        let text = String::from_utf8_lossy(&log);
        let bench_lines = text.lines().filter(|l| l.contains("bench:")).count();
        let repeats: usize = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Last message repeated "))
            .map(|n| n.trim_end_matches(" times").parse::<usize>().unwrap())
            .sum();
        assert_eq!((bench_lines, repeats), (154, 10));
        let run = IMPORT.run(&log);
        assert_eq!(run.spans.len(), bench_lines + repeats);
        assert_end_to_end(&run);
        // Lines 37-38: `1 user 0 sys 1 real decode_audio 0.0` and `Last message
        // repeated 1 times`: the same call twice, in the same frame.
        let i = run
            .spans
            .windows(2)
            .position(|w| {
                w[0] == Span {
                    start_ns: w[0].start_ns,
                    ..w[1]
                } && w[0].dur_ns == 1_000
            })
            .unwrap();
        assert_eq!(run.spans[i + 1].start_ns, run.spans[i].end_ns());
        let steps = by_step(&run);
        let audio = 1_000_000_000;
        assert_eq!(
            steps[&key("decode_audio", "input #0:0")],
            (83, 41, 119_000, audio, audio + 40)
        );
        assert_eq!(
            steps[&key("encode_audio", "output #0:0")],
            (80, 40, 196_000, audio, audio + 39)
        );
        assert_eq!(run.spans.last().unwrap().end_ns(), 316_000);
    }

    #[test]
    fn repeats_follow_only_the_message_just_before() {
        let log = b"bench:        5 user        1 sys        7 real decode_video 0.0 \n\
            \x20   Last message repeated 2 times\n\
            [libx264 @ 0x1] some message\n\
            \x20   Last message repeated 3 times\n\
            bench:        1 user        0 sys        2 real encode_video 0.0 \n\
            \x20   Last message repeated 1 times\r    Last message repeated 2 times\r    Last message repeated 2 times\n";
        let run = IMPORT.run(log);
        let durs: Vec<_> = run.spans.iter().map(|s| (s.dur_ns, s.frame)).collect();
        assert_eq!(
            durs,
            [
                (7_000, 0),
                (7_000, 0),
                (7_000, 0),
                (2_000, 0),
                (2_000, 0),
                (2_000, 0)
            ]
        );
        assert_end_to_end(&run);
        assert_eq!(
            run.import.unwrap().notes,
            ["2 other ffmpeg log lines ignored (not bench lines)"]
        );
    }

    #[test]
    fn log_level_prefixes_crlf_and_ffmpeg_7_stream_names() {
        let log = b"[info] bench:       10 user        2 sys       12 real decode_video 0:0 \r\n\
            bench:        3 user        1 sys        4 real encode_video 0.0 \r\n";
        let run = IMPORT.run(log);
        assert_eq!(run.spans.len(), 2);
        let names: Vec<_> = run.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["input #0:0", "output #0:0"]);
        assert_eq!(run.import.unwrap().notes, Vec::<String>::new());
    }

    #[test]
    fn negative_differences_give_no_span_and_a_note() {
        // -5 µs of real time and -1 µs of user time, as ffmpeg prints them unsigned.
        let log = b"bench: 18446744073709551615 user 0 sys 3 real encode_video 0.0\n\
            bench: 1 user 0 sys 18446744073709551611 real encode_video 0.0\n\
            bench: 1 user 0 sys 2 real encode_video 0.0\n";
        let run = IMPORT.run(log);
        let durs: Vec<_> = run.spans.iter().map(|s| (s.start_ns, s.dur_ns)).collect();
        assert_eq!(durs, [(0, 3_000), (3_000, 2_000)]);
        assert_eq!(
            run.import.unwrap().notes,
            [
                "1 bench lines with a negative real time (ffmpeg's threads share one benchmark \
                 clock) gave no span",
                "1 negative user/sys CPU times (ffmpeg's threads share one benchmark clock) \
                 were not recorded",
            ]
        );
    }

    #[test]
    fn malformed_bench_lines_stop_or_are_counted_with_skip_bad() {
        let log = b"bench:        5 user        1 sys        7 real decode_video 0.0\n\
            \x20   Last message repeated many times\n\
            bench:        x user        1 sys        7 real decode_video 0.0\n\
            bench:        5 user        1 sys\n\
            bench:        5 user        1 sys        7 real decode_video 0.0 extra\n\
            bench:        5 user        1 sys        7 real decode-video! 0.0\n\
            bench:        9 user        1 sys        8 real encode_video 0.0\n\
            bench:        1 user        1 sys 99999999999999999 real encode_video 0.0\n";
        let repeat = "input:2: `Last message repeated N times` with N not a whole number; is the \
                      log corrupt?";
        assert_eq!(IMPORT.error(log), repeat);
        assert_eq!(
            IMPORT.error(&log[memchr::memmem::find(log, b"bench:        x").unwrap()..]),
            "input:1: \"x\" is not a number of µs before `user`; expected `bench: USER user SYS \
             sys REAL real STEP STREAM` (µs)"
        );
        let run = IMPORT.run_skipping_bad(log);
        let durs: Vec<_> = run.spans.iter().map(|s| s.dur_ns).collect();
        assert_eq!(durs, [7_000, 8_000]);
        let info = run.import.unwrap();
        assert_eq!(info.skipped, 6);
        assert_eq!(info.first_skipped.as_deref(), Some(repeat));
    }

    #[test]
    fn absurd_repeat_counts_are_refused() {
        let log = b"bench: 1 user 0 sys 1 real decode_video 0.0\n\
            \x20   Last message repeated 4000000000 times\n";
        assert_eq!(
            IMPORT.error(log),
            "input:2: `Last message repeated 4000000000 times` repeats a bench line more often \
             than a log of this size can hold; is the log corrupt?"
        );
    }

    #[test]
    fn files_without_bench_lines_are_errors() {
        assert!(IMPORT.error(b"").contains("the file is empty"));
        assert!(IMPORT.error(b" \n\r\n").contains("the file is empty"));
        assert!(IMPORT
            .error(b"\x00\x01\xff garbage\nmore\n")
            .contains("no `bench: "));
        assert!(IMPORT
            .error(b"Input #0, lavfi\nStream mapping:\n")
            .contains("-benchmark_all"));
        assert_eq!(
            IMPORT.error(b"bench: utime=0.020s stime=0.003s rtime=0.039s\nbench: maxrss=62492kB\n"),
            "input: only ffmpeg's -benchmark totals, no per-call lines: run ffmpeg with \
             -benchmark_all for those"
        );
        assert!(IMPORT
            .error(b"bench: \xff\xfe\n")
            .starts_with("input:1: a bench: line that is not UTF-8"));
    }

    #[test]
    fn never_panics_on_cut_or_mangled_logs() {
        let log = fixture("ffmpeg-5.1-transcode-av.log");
        for cut in (0..log.len()).step_by(97) {
            let _ = parse_bytes(Format::Ffmpeg, &log[..cut], ImportOptions::default());
            let mut mangled = log[..cut].to_vec();
            mangled.extend_from_slice(b"bench: 1 user 2 sys\r\n    Last message repeated 9");
            let _ = parse_bytes(
                Format::Ffmpeg,
                &mangled,
                ImportOptions {
                    skip_bad: true,
                    ..ImportOptions::default()
                },
            );
        }
    }
}
