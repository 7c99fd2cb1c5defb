//! How much memory the analysis of a run file takes, counted by a global allocator that
//! tracks the bytes the program holds (SQLite's own page cache, a few MB allocated in C,
//! is not counted). Deterministic: the same allocations on every machine, no RSS.
//!
//! The small tests run by default; the two big ones are measurements (BENCHMARKS.md) and
//! hold every subcommand that reads a whole run (report in three formats, hist, whatif,
//! export, compare of 2 and of 4 runs, history add) to a peak of its own and to twice the
//! run file's size (issues 29 and 31):
//!
//!     cargo test --release --test report_memory -- --ignored --nocapture
//!
//! With `REPORT_MEMORY_KEEP=DIR` the big run files are left in DIR (`rate.framelab`,
//! `stages.framelab`), to measure `framelab report` and `hist` on them with `/usr/bin/time -v`.

#[path = "e2e/common/mod.rs"]
mod common;

use common::Jitter;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use framelab::analyze::compact::{
    analyze_columns, analyze_from, column_fallbacks, load_columns, read_frames, streamed, Columns,
    ANALYSIS_KEEPS,
};
use framelab::compare::{self, CompareOptions};
use framelab::hist::{render_from, HistOptions};
use framelab::model::{EndReason, Run, RunMeta, Span, ThreadInfo};
use framelab::render::Format;
use framelab::report;
use framelab::store;
use framelab::whatif::{self, Changes};

struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize, block: usize) {
    let now = HELD.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
    LARGEST.fetch_max(block, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; only counts are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size(), layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size(), layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size(), new_size);
            } else {
                HELD.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The counts are global: tests that measure run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes held at the peak of `f` beyond what was held before it, the largest single block
/// it asked for, and what it returned.
fn measured<T>(f: impl FnOnce() -> T) -> (usize, usize, T) {
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    LARGEST.store(0, Ordering::Relaxed);
    let out = f();
    (
        PEAK.load(Ordering::Relaxed) - before,
        LARGEST.load(Ordering::Relaxed),
        out,
    )
}

/// `testprog rate`'s shape, the worst case: one span per frame, one stage, one thread,
/// frames every `period_ns`, ids counting up.
fn one_span_per_frame(frames: u64, period_ns: i64) -> Run {
    let mut jitter = Jitter(0x2545_f491_4f6c_dd1d);
    let spans = (0..frames)
        .map(|frame| Span {
            frame,
            stage: 0,
            thread: 0,
            start_ns: frame as i64 * period_ns + jitter.next(1000),
            dur_ns: 10 + jitter.next(40),
        })
        .collect();
    Run {
        meta: RunMeta {
            name: "rate".into(),
            window_end_ns: frames as i64 * period_ns,
            end_reason: EndReason::Exited,
            ..RunMeta::default()
        },
        stages: vec!["rate".into()],
        threads: vec![main_thread(1)],
        spans,
        ..Run::default()
    }
}

/// tests/e2e/report/scale.rs's shape: 5 stages on two threads, 120 fps, a 5 s warmup.
fn five_stages(frames: u64) -> Run {
    const BUDGET_NS: i64 = 8_333_333;
    let mut jitter = Jitter(0x9e37_79b9_7f4a_7c15);
    let mut spans = Vec::with_capacity(frames as usize * 5);
    for thread in 0..2u32 {
        for frame in 0..frames {
            let mut t = frame as i64 * BUDGET_NS;
            for stage in 0..5u16 {
                let dur = 200_000 + jitter.next(1_400_000);
                if (stage < 3) == (thread == 0) {
                    spans.push(Span {
                        frame,
                        stage,
                        thread,
                        start_ns: t,
                        dur_ns: dur,
                    });
                }
                t += dur + 10_000;
            }
        }
    }
    Run {
        meta: RunMeta {
            target_fps: Some(120.0),
            window_start_ns: 5_000_000_000,
            window_end_ns: frames as i64 * BUDGET_NS,
            end_reason: EndReason::Duration,
            ..RunMeta::default()
        },
        stages: (0..5).map(|s| format!("stage{s}")).collect(),
        threads: vec![main_thread(1), main_thread(2)],
        spans,
        ..Run::default()
    }
}

/// A thread of process 1 with this tid (`whatif` needs to know which thread ran what).
fn main_thread(tid: u32) -> ThreadInfo {
    ThreadInfo {
        pid: 1,
        tid,
        name: format!("t{tid}"),
        dropped: 0,
    }
}

/// Writes `run` to `path` and forgets it: what is measured after reads only the file.
fn written(path: &Path, run: Run) -> usize {
    let spans = run.spans.len();
    store::write_run(path, &run).unwrap();
    spans
}

/// Copies a run file to `REPORT_MEMORY_KEEP`, when set.
fn keep(path: &Path) {
    if let Some(dir) = std::env::var_os("REPORT_MEMORY_KEEP") {
        let to = Path::new(&dir).join(path.file_name().unwrap());
        std::fs::copy(path, &to).unwrap();
        println!("kept {}", to.display());
    }
}

/// Peak bytes per span of the report's analysis, of `hist` and of `hist --linear 10us`
/// on the file, printed.
fn per_span(path: &Path, spans: usize) -> (f64, f64, f64) {
    let started = Instant::now();
    let (report_peak, _, analysis) = measured(|| {
        let run = store::open_run(path, None).unwrap();
        analyze_from(&run.head, &run).unwrap()
    });
    let report_s = started.elapsed().as_secs_f64();
    assert!(analysis.frames > 0);
    let hist = |opts: HistOptions| {
        let started = Instant::now();
        let (peak, _, text) = measured(|| {
            let run = store::open_run(path, None).unwrap();
            render_from(&run.head, &run, &opts).unwrap()
        });
        assert!(text.contains('@'));
        (peak, started.elapsed().as_secs_f64())
    };
    let (hist_peak, hist_s) = hist(HistOptions::default());
    let (linear_peak, linear_s) = hist(HistOptions {
        linear: Some(framelab::hist::layout::LinearSpec::step(10_000)),
        ..HistOptions::default()
    });
    let per = |peak: usize| peak as f64 / spans as f64;
    let mib = |peak: usize| peak as f64 / (1 << 20) as f64;
    println!(
        "{spans} spans: report analysis {:.1} B/span ({:.0} MiB, {report_s:.2} s), \
         hist {:.1} B/span ({:.0} MiB, {hist_s:.2} s), hist --linear {:.1} B/span \
         ({:.0} MiB, {linear_s:.2} s)",
        per(report_peak),
        mib(report_peak),
        per(hist_peak),
        mib(hist_peak),
        per(linear_peak),
        mib(linear_peak),
    );
    (per(report_peak), per(hist_peak), per(linear_peak))
}

/// Where the peaks of `report`, its HTML page and `whatif` come from: the reading of the
/// spans into columns (its peak, and what it leaves held), then each step after it, its
/// peak counted with what reading left held. Printed in bytes a span (BENCHMARKS.md).
fn phases(path: &Path, spans: usize) {
    let b = |bytes: usize| bytes as f64 / spans as f64;
    let held = || HELD.load(Ordering::Relaxed);
    let run = store::open_run(path, None).unwrap();
    let at_start = held();
    // The report reads no columns (issue 29, issue 31): the frame table, then the reads of
    // the analysis; where it cannot do without them, they are read after all (counted).
    let (read, _, (table, frame_spans)) = measured(|| read_frames(&run).unwrap());
    let left = held() - at_start;
    let (analysis, _, a) =
        measured(|| streamed::analyze(&run.head, table, frame_spans, &run, &mut |_| {}).unwrap());
    match a {
        Some(a) => {
            assert!(a.frames > 0);
            println!(
                "report by phase, without columns: the frame table {:.1} B/span at its peak, \
                 {:.1} held after; the analysis {:.1} more at its peak ({:.1} in all)",
                b(read),
                b(left),
                b(analysis),
                b(left + analysis)
            );
        }
        None => println!(
            "report by phase: the reads without columns could not give the analysis (a \
             thread's spans far out of start order, or frames in no order a read groups): \
             the columns are read"
        ),
    }
    let (read, _, (columns, table)) = measured(|| load_columns(&run, ANALYSIS_KEEPS).unwrap());
    let left = held() - at_start;
    let (analysis, _, a) = measured(|| {
        analyze_columns(
            &run.head,
            Columns::Owned(Box::new(columns)),
            &table,
            &run,
            &mut |_| {},
        )
        .unwrap()
    });
    assert!(a.frames > 0);
    drop(table);
    println!(
        "report by phase, from columns: reading {:.1} B/span at its peak, {:.1} held after; the \
         analysis {:.1} more at its peak ({:.1} in all)",
        b(read),
        b(left),
        b(analysis),
        b(left + analysis)
    );
    // The page reads and analyses the run as the text report does, then takes its plots
    // from the frames.
    let (analysis, _, (data, a)) =
        measured(|| report::html::run_data::RunData::analyze(&run.head, &run).unwrap());
    let before_page = held() - at_start;
    let (page, _, _) = measured(|| data.document(&a));
    println!(
        "report --format html by phase: reading and the analysis {:.1} B/span at their peak, \
         {:.1} held after; the page's data {:.1} more ({:.1} in all)",
        b(analysis),
        b(before_page),
        b(page),
        b(before_page + page)
    );
    // whatif reads the columns only where the spans fit no other way (`whatif_stored`
    // holds nothing by frame with one span a frame, and places the spans of several).
    let (read, _, (columns, table)) = measured(|| load_columns(&run, ANALYSIS_KEEPS).unwrap());
    let left = held() - at_start;
    let changes = Changes {
        depth: Some(2),
        ..Changes::default()
    };
    let (model, _, w) =
        measured(|| whatif::whatif_columns(&run.head, columns, table, None, &changes).unwrap());
    assert!(w.frames > 0);
    println!(
        "whatif --depth 2 from columns (its last resort) by phase: reading {:.1} B/span, \
         {:.1} held after; the model {:.1} more ({:.1} in all)",
        b(read),
        b(left),
        b(model),
        b(left + model)
    );
}

/// What each subcommand that reads a whole run holds at its peak, in bytes per span.
#[derive(Debug)]
struct Peaks {
    report_text: f64,
    report_json: f64,
    report_html: f64,
    whatif: f64,
    export: f64,
    /// The file as two variants (one run each), and as four.
    compare: f64,
    compare_four: f64,
    history_add: f64,
}

/// `measured`, printed as bytes per span and MiB with the time taken.
fn peak_per_span<T>(what: &str, spans: usize, f: impl FnOnce() -> T) -> (f64, T) {
    let started = Instant::now();
    let (peak, _, out) = measured(f);
    let per_span = peak as f64 / spans as f64;
    println!(
        "{what}: {per_span:.1} B/span ({:.0} MiB, {:.2} s)",
        peak as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    (per_span, out)
}

/// The peaks of `report` in its three formats, `whatif --depth 2`, `export --format
/// perfetto` and `compare` of the file with itself, as the subcommands run them.
fn subcommand_peaks(path: &Path, spans: usize) -> Peaks {
    let report = |format: Format| {
        let run = store::open_run(path, None).unwrap();
        report::render(&analyze_from(&run.head, &run).unwrap(), format, false).unwrap()
    };
    let (report_text, text) = peak_per_span("report", spans, || report(Format::Text));
    assert!(text.contains("fps"), "{text}");
    let (report_json, json) = peak_per_span("report --format json", spans, || report(Format::Json));
    assert!(json.starts_with('{'));
    let (report_html, html) = peak_per_span("report --format html", spans, || {
        let run = store::open_run(path, None).unwrap();
        report::html::run_html(&run.head, &run).unwrap().0
    });
    assert!(html.contains("<html"));
    let (whatif, prediction) = peak_per_span("whatif --depth 2", spans, || {
        let run = store::open_run(path, None).unwrap();
        let changes = Changes {
            depth: Some(2),
            ..Changes::default()
        };
        whatif::whatif_stored(&run, &changes).unwrap()
    });
    assert!(prediction.frames > 0 && prediction.predicted.fps.is_some());
    let (export, written) = peak_per_span("export --format perfetto", spans, || {
        let mut run = store::open_run(path, None).unwrap();
        framelab::export::export_stored(
            &mut run,
            Format::Perfetto,
            Path::new("/dev/null"),
            Some(path),
        )
        .unwrap()
    });
    assert_eq!(written as usize, spans);
    let compare_as = |variants: &[&str]| {
        let file = path.to_str().unwrap();
        let sources: Vec<compare::Source> = (variants.iter())
            .map(|v| compare::parse_named_source(&format!("{v}={file}")).unwrap())
            .collect();
        let comparison = compare::compare(&sources, &CompareOptions::default()).unwrap();
        assert!(!compare::any_regression(&comparison));
    };
    let (compare, ()) = peak_per_span("compare (the run as 2 variants)", spans, || {
        compare_as(&["a", "b"])
    });
    let (compare_four, ()) = peak_per_span("compare (the run as 4 variants)", spans, || {
        compare_as(&["a", "b", "c", "d"])
    });
    let (history_add, records) = peak_per_span("history add (its records)", spans, || {
        let revision = framelab::history::add::Revision {
            commit: "0".repeat(40),
            branch: None,
            dirty: false,
        };
        framelab::history::add::records(path, &revision, &[]).unwrap()
    });
    assert_eq!(records.records.len(), 1);
    println!(
        "analyses that fell back to the columns so far (report, compare, history add): {}",
        column_fallbacks()
    );
    Peaks {
        report_text,
        report_json,
        report_html,
        whatif,
        export,
        compare,
        compare_four,
        history_add,
    }
}

#[test]
fn the_analysis_of_a_run_file_never_holds_its_spans() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rate.framelab");
    let spans = written(&path, one_span_per_frame(200_000, 5_000));

    let (peak, largest, analysis) = measured(|| {
        let run = store::open_run(&path, None).unwrap();
        analyze_from(&run.head, &run).unwrap()
    });
    println!("report: peak {peak} B, largest block {largest} B, {spans} spans");
    assert_eq!(analysis.frames, 200_000);
    // A Vec<Span> would be one block of 32 bytes a span; the biggest here is a column of
    // frame starts or ends, 8 bytes a frame (12 while it grows by half).
    assert!(largest <= 12 * spans, "largest block {largest} B");
    // Loading the run alone took 32 bytes a span, the analysis 70 more. Fixed costs (per
    // stage tables, a chunk of rows) are ~2.5 MB. Issue 29: the columns were read beside
    // the frame table as it was built (16 bytes a frame, 20 while packed); the table is
    // read first now, the columns beside it packed.
    let fixed = 4 << 20;
    assert!(
        peak <= REPORT_BYTES_PER_SPAN * spans + fixed,
        "peak {peak} B for {spans} spans"
    );

    let (peak, largest, text) = measured(|| {
        let run = store::open_run(&path, None).unwrap();
        render_from(&run.head, &run, &HistOptions::default()).unwrap()
    });
    println!("hist: peak {peak} B, largest block {largest} B");
    assert!(text.starts_with("@rate (µs):"), "{text}");
    assert!(largest <= 12 * spans, "hist: largest block {largest} B");
    assert!(
        peak <= REPORT_BYTES_PER_SPAN * spans + fixed,
        "hist: peak {peak} B for {spans} spans"
    );
}

#[test]
fn whatif_and_the_exports_never_hold_the_run() {
    let _alone = alone();
    // Issue 29: whatif --depth 2 held 337 bytes a span (a loaded run, a vector of spans
    // and one of tasks per frame), the export ~40 (a loaded run and its sort order).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rate.framelab");
    let spans = written(&path, one_span_per_frame(200_000, 5_000));
    let changes = Changes {
        depth: Some(2),
        ..Changes::default()
    };
    let (peak, _, prediction) = measured(|| {
        let run = store::open_run(&path, None).unwrap();
        whatif::whatif_stored(&run, &changes).unwrap()
    });
    println!("whatif: peak {peak} B, {spans} spans");
    assert_eq!(prediction.frames, 200_000);
    assert!(
        peak <= WHATIF_BYTES_PER_SPAN * spans + WHATIF_FIXED_BYTES,
        "whatif: peak {peak} B for {spans} spans"
    );
    // Chrome and CSV loaded the whole run (Vec<Span>, 32 bytes a span) until they streamed
    // too. Spans in start order already: nothing waits; a frame's span count is 4 bytes.
    // Written thread by thread (as an import or a file written by another tool can be),
    // the Perfetto export sorted the whole run in memory (40 bytes a span) until it merged
    // the threads' sorted runs as it read them (issue 31 item 8).
    // 500k spans: the 20 MB the sort took is well over the bound.
    let by_thread = dir.path().join("stages.framelab");
    let by_thread_spans = written(&by_thread, five_stages(100_000));
    for (path, spans) in [(&path, spans), (&by_thread, by_thread_spans)] {
        for format in [Format::Perfetto, Format::Chrome, Format::Csv] {
            let (peak, _, written) = measured(|| {
                let mut run = store::open_run(path, None).unwrap();
                framelab::export::export_stored(
                    &mut run,
                    format,
                    Path::new("/dev/null"),
                    Some(path),
                )
                .unwrap()
            });
            println!(
                "export --format {format} of {}: peak {peak} B",
                path.display()
            );
            assert_eq!(written as usize, spans);
            assert!(
                peak <= EXPORT_BYTES_PER_SPAN * spans + EXPORT_FIXED_BYTES,
                "export --format {format} of {}: peak {peak} B for {spans} spans",
                path.display()
            );
        }
    }
}

#[test]
fn compare_holds_one_run_at_a_time_whatever_their_number() {
    let _alone = alone();
    // Issue 29: compare loaded every run in parallel (one per core) and kept all of each
    // run's frame values, so its peak grew with the number of runs. It reads one at a
    // time now and keeps only the ranks its percentiles read.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.framelab");
    let spans = 200_000;
    for _ in 0..8 {
        written(&path, one_span_per_frame(spans as u64, 5_000));
    }
    let ids: Vec<i64> = (store::list_runs(&path).unwrap().iter())
        .map(|m| m.id)
        .collect();
    let peak_with = |per_side: usize| {
        let file = path.to_str().unwrap();
        let side = |name: &str, ids: &[i64]| {
            let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
            compare::parse_named_source(&format!("{name}={file}:{}", ids.join(","))).unwrap()
        };
        let sources = [
            side("a", &ids[..per_side]),
            side("b", &ids[4..4 + per_side]),
        ];
        let (peak, _, comparison) =
            measured(|| compare::compare(&sources, &CompareOptions::default()).unwrap());
        assert!(!compare::any_regression(&comparison));
        println!(
            "compare, {per_side} run(s) a side: peak {peak} B ({:.1} B/span of one run)",
            peak as f64 / spans as f64
        );
        peak
    };
    let (one, four) = (peak_with(1), peak_with(4));
    assert!(
        four as f64 <= 1.3 * one as f64,
        "4 runs a side: {four} B, 1 run a side: {one} B"
    );
}

/// The HTML page reads a run of several spans a frame as the text report does (issue 31
/// item 8): its analysis holds what the report's does, with at most the frame table beside
/// it (8 bytes a frame, kept for the plots), not the columns (the page's analysis of this
/// run held 15.4 MB against the report's 12.4 while it read them; the same 12.4 since).
#[test]
fn the_html_page_of_several_spans_a_frame_reads_no_columns() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stages.framelab");
    let frames = 100_000;
    let spans = written(&path, five_stages(frames));
    let run = store::open_run(&path, None).unwrap();
    let (report, _, analysis) = measured(|| analyze_from(&run.head, &run).unwrap());
    let (html, _, (_, page_analysis)) =
        measured(|| report::html::run_data::RunData::analyze(&run.head, &run).unwrap());
    println!("{spans} spans: the report's analysis {report} B, the page's {html} B");
    assert_eq!(
        serde_json::to_string(&page_analysis).unwrap(),
        serde_json::to_string(&analysis).unwrap()
    );
    let table = 8 * frames as usize;
    assert!(
        html <= report + table + (256 << 10),
        "the page's analysis {html} B, the report's {report} B"
    );
}

/// Bounds of the peaks, in bytes per span, with one span per frame (the worst case).
/// whatif held 29 beyond the fixed 4 MiB before its outcome kept only totals and ends and
/// the frame table was packed, 17 after, and 14 since the spans are read in two passes,
/// its delays and intervals are taken without vectors of ends and sorts need no buffer
/// (issue 29); 8 to 10 since its measured figures come from its frames once the table is
/// dropped and one span a frame holds no rows (issue 31). The report and hist, read once
/// beside the table being built (16 bytes a frame, 20 while packed), held the columns and
/// that; 12 and 4 since. whatif holds nothing by frame since it reads the run again for
/// each replay without a frame table and selects its figures from reads (issue 29): what
/// it holds is its six selections' first buckets (0.9 MiB each), whatever the run's length.
const WHATIF_BYTES_PER_SPAN: usize = 1;
const WHATIF_FIXED_BYTES: usize = 8 << 20;
const REPORT_BYTES_PER_SPAN: usize = 18;
const EXPORT_BYTES_PER_SPAN: usize = 8;
/// What an export holds whatever the run's size: the Perfetto export's chunks of output in
/// flight between the thread that encodes and the one that writes (four of 1 MiB) and its
/// readers' chunks of spans (a few of 256 KiB each).
const EXPORT_FIXED_BYTES: usize = 8 << 20;

/// Every subcommand's peak within its bound, in bytes per span, and within twice the
/// run file's size (issue 31: no subcommand needs more than 2× the file).
fn assert_peaks(peaks: &Peaks, bounds: &Peaks, file_bytes_per_span: f64) {
    println!("{peaks:?}");
    println!("the file: {file_bytes_per_span:.1} B/span");
    let pairs = [
        ("report", peaks.report_text, bounds.report_text),
        (
            "report --format json",
            peaks.report_json,
            bounds.report_json,
        ),
        (
            "report --format html",
            peaks.report_html,
            bounds.report_html,
        ),
        ("whatif --depth 2", peaks.whatif, bounds.whatif),
        ("export --format perfetto", peaks.export, bounds.export),
        ("compare of 2", peaks.compare, bounds.compare),
        ("compare of 4", peaks.compare_four, bounds.compare_four),
        ("history add", peaks.history_add, bounds.history_add),
    ];
    let mut over = Vec::new();
    for (what, peak, bound) in pairs {
        if peak > bound {
            over.push(format!("{what}: {peak:.1} B/span, over its bound {bound}"));
        }
        if peak > 2.0 * file_bytes_per_span {
            over.push(format!(
                "{what}: {peak:.1} B/span, over 2× the file ({:.1})",
                2.0 * file_bytes_per_span
            ));
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

/// The file's size in bytes per span.
fn file_bytes_per_span(path: &Path, spans: usize) -> f64 {
    std::fs::metadata(path).unwrap().len() as f64 / spans as f64
}

#[test]
#[ignore]
fn twelve_million_spans_one_per_frame() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rate.framelab");
    // testprog rate 200000 60: a frame every 5 µs for 60 s.
    let spans = written(&path, one_span_per_frame(12_000_000, 5_000));
    keep(&path);
    let (report, hist, linear) = per_span(&path, spans);
    // hist held the spans as columns (19 bytes a span, 226 MiB on a 10M-span run); it
    // counts power-of-two buckets as it reads them now, without a frame table for one span
    // a frame: 0.1 (1 MiB). --linear held the values (4 bytes a span); it reads them a few
    // times now.
    assert!(report <= 1.0 && hist <= 1.0 && linear <= 1.0);
    phases(&path, spans);
    // One span per frame, in time order: the worst case for the columns, the best for
    // the export (nothing waits). Issue 29: 38.1 bytes a span (whatif, compare, history
    // add and the text report; the HTML report 46.8) while the columns were read beside
    // the frame table being built; the columns beside the packed table (23.3); no columns
    // at all, the frame table packed as it is built (12.5: the table's 8 and one set of
    // values at a time); neither frame table nor values (`frameless`: 0.5 for the report
    // and history add, 0.6 and 0.8 for compare of 2 and 4, about 6 MiB whatever the
    // run's length). whatif held 28.8 (its measured figures from the frame table beside
    // the columns, rows, frame bounds and delays a span): 23.3 since, what reading its
    // columns leaves and 0.2; 12.1 since it reads the spans again for each replay rather
    // than hold them, as the report does (the frame table's peak, issue 31); 0.8 (9 MiB)
    // since it holds nothing by frame: no frame table, the figures selected from reads
    // (issue 29: memory independent of the run's length). The HTML
    // report read columns whatever the run (23.5) until it read and analysed the run as
    // the text report did then (12.5) and held, beside the frame table, 4 bytes a frame at
    // a time for its plots (14.0 measured, its end order then grown by doubling); 1.4 since
    // it reads a run of one span a frame as the text report does, without a frame table,
    // its plots' points kept beside (issue 29).
    let bounds = Peaks {
        report_text: 1.0,
        report_json: 1.0,
        report_html: 2.0,
        whatif: 1.0,
        export: 5.0,
        compare: 1.0,
        compare_four: 1.0,
        history_add: 1.0,
    };
    let file = file_bytes_per_span(&path, spans);
    assert_peaks(&subcommand_peaks(&path, spans), &bounds, file);
}

/// The report of a run of one span a frame holds what it held for a run six times shorter:
/// no frame table and no set of values, the statistics taken from reads of the file (issue
/// 29: memory independent of the run's length). The allowance is what the selections may
/// keep of the buckets their percentiles fall in (their limit, 4 MiB each for a stage's
/// durations and the intervals), which a longer run fills sooner. With a scheduler
/// timeline, the split's on-CPU times are selected too (they were held, 4 bytes a span,
/// until issue 29's soak row: 8 and 48 MB here): 4 MiB more.
#[test]
#[ignore]
fn the_report_of_one_span_a_frame_holds_the_same_memory_at_any_length() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    for sched in [false, true] {
        let mut peaks = Vec::new();
        for frames in [2_000_000u64, 12_000_000] {
            let path = dir.path().join(format!("rate-{frames}.framelab"));
            let mut run = one_span_per_frame(frames, 5_000);
            if sched {
                run.sched = Some(sched_timeline(&run));
            }
            let spans = written(&path, run);
            let started = Instant::now();
            let (peak, _, text) = measured(|| {
                let run = store::open_run(&path, None).unwrap();
                report::render(&analyze_from(&run.head, &run).unwrap(), Format::Text, false)
                    .unwrap()
            });
            assert!(text.contains("fps"), "{text}");
            assert_eq!(text.contains("on-CPU p50"), sched, "{text}");
            println!(
                "{spans} spans{}: report {:.1} MiB at its peak ({:.2} s)",
                if sched { ", a scheduler timeline" } else { "" },
                peak as f64 / (1 << 20) as f64,
                started.elapsed().as_secs_f64()
            );
            peaks.push(peak as f64);
            std::fs::remove_file(&path).unwrap();
        }
        let allowance = ((if sched { 12 } else { 8 }) << 20) as f64;
        let (short, long) = (peaks[0], peaks[1]);
        assert!(
            long <= 1.1 * short + allowance,
            "12M spans{}: {long} bytes at the peak, 2M: {short}",
            if sched { " with a timeline" } else { "" }
        );
    }
}

/// whatif's peak at each of `lengths` frames of one span (`testprog rate`'s shape), in bytes.
fn whatif_peaks(lengths: &[u64]) -> Vec<usize> {
    let dir = tempfile::tempdir().unwrap();
    let changes = Changes {
        depth: Some(2),
        ..Changes::default()
    };
    let mut peaks = Vec::new();
    for &frames in lengths {
        let path = dir.path().join(format!("rate-{frames}.framelab"));
        let spans = written(&path, one_span_per_frame(frames, 5_000));
        let started = Instant::now();
        let (peak, _, prediction) = measured(|| {
            let run = store::open_run(&path, None).unwrap();
            whatif::whatif_stored(&run, &changes).unwrap()
        });
        assert_eq!(prediction.frames as u64, frames);
        assert!(prediction.predicted.fps.is_some());
        println!(
            "{spans} spans: whatif --depth 2 {:.1} MiB at its peak ({:.2} s)",
            peak as f64 / (1 << 20) as f64,
            started.elapsed().as_secs_f64()
        );
        peaks.push(peak);
        std::fs::remove_file(&path).unwrap();
    }
    peaks
}

/// What whatif's figures may keep of the buckets their percentiles fall in, at most, beyond
/// what a shorter run keeps: three outcomes (measured, the run as recorded, the what-if),
/// each its totals and intervals, a selection's limit each (4 MiB); a longer run fills
/// them sooner.
const WHATIF_SELECTIONS_BYTES: usize = (6 * 4) << 20;

/// whatif of a run of one span a frame holds what it holds for a run eight times shorter
/// (issue 29: memory independent of the run's length): the frames read again for each
/// replay, which frames are measured told span by span, the figures selected from reads.
/// It held a frame table (8 bytes a frame) and each outcome's totals and intervals (8
/// more): 13.8 bytes a span on the 10M-span run, 1012 MiB on an 84M-span soak.
#[test]
fn whatif_of_one_span_a_frame_holds_the_same_memory_at_any_length() {
    let _alone = alone();
    let peaks = whatif_peaks(&[500_000, 4_000_000]);
    let (short, long) = (peaks[0], peaks[1]);
    assert!(
        long <= short + WHATIF_SELECTIONS_BYTES,
        "4M spans: {long} bytes at the peak, 500k: {short}"
    );
}

/// [`whatif_of_one_span_a_frame_holds_the_same_memory_at_any_length`] at the lengths the
/// report's length test reads (2M and 12M spans): 7.2 and 9.0 MiB measured (release build,
/// 2-core VM); the old code held a frame table and its figures, 12.1 bytes a span.
#[test]
#[ignore]
fn whatif_holds_the_same_memory_at_two_and_twelve_million_spans() {
    let _alone = alone();
    let peaks = whatif_peaks(&[2_000_000, 12_000_000]);
    let (short, long) = (peaks[0], peaks[1]);
    assert!(
        long <= short + WHATIF_SELECTIONS_BYTES,
        "12M spans: {long} bytes at the peak, 2M: {short}"
    );
}

/// A scheduler timeline for the run's thread: a slice every 50 ms (as the schedstat
/// fallback reads them on the 2-core VM, /work/scale/10m.framelab), on a CPU for a varying
/// share of it, so that the spans' on-CPU times spread over many values. Stored as
/// tracepoint slices: the run file keeps those (schedstat's are rebuilt from telemetry).
/// 20 slices a second are what is held of it (the run's head), not a span's worth.
fn sched_timeline(run: &Run) -> framelab::sched::SchedTimeline {
    const SLICE_NS: i64 = 50_000_000;
    let mut jitter = Jitter(0x9e37_79b9_7f4a_7c15);
    let end = run.meta.window_end_ns + SLICE_NS;
    let slices = (0..end / SLICE_NS)
        .map(|k| {
            let on_cpu_ns = 5_000_000 + jitter.next(40_000_000);
            framelab::sched::SchedSlice {
                tid: 1,
                start_ns: k * SLICE_NS,
                dur_ns: SLICE_NS,
                on_cpu_ns,
                runnable_ns: SLICE_NS - on_cpu_ns,
                by: String::new(),
            }
        })
        .collect();
    framelab::sched::SchedTimeline {
        source: framelab::sched::SchedSource::Tracepoints,
        resolution_ns: 1,
        slices,
        ..Default::default()
    }
}

#[test]
#[ignore]
fn ten_million_spans_five_stages() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stages.framelab");
    let spans = written(&path, five_stages(2_000_000));
    keep(&path);
    let (report, hist, linear) = per_span(&path, spans);
    // hist: the frame table alone now, 5.7 bytes a span (it held the columns beside it);
    // --linear too (it held the values beside the table).
    assert!(report <= 15.0 && hist <= 8.0 && linear <= 8.0);
    phases(&path, spans);
    // Written thread by thread: the export sorted the whole run in memory (40 bytes a
    // span: the spans and their indices, sorted in place; 72 with keyed copies and a
    // merge sort's buffer); it merges the two threads' sorted runs as it reads them now
    // (4.5: a frame's span count and a few chunks a thread, issue 31 item 8). Issue 29:
    // 29.3 to 30.9 bytes a span before the two reads, the byte-wide threads and the
    // in-place sorts. Report, compare and history add held the columns (27.0 to 27.9, over
    // 2x the file's 12.2 bytes a span since the spans are stored in blocks); they read the
    // spans again for each thing they give, a frame's spans grouped as they are read for
    // the waits, 13.9 to 14.5 (issue 31 item 8). whatif held 20.7 (the columns and rows
    // into them), 19.0 with each measured span placed at its frame (11 bytes) beside the
    // frame table (24 bytes a frame at 120 fps), and 14.2 since the table is dropped before
    // the spans are placed (issue 31 item 8). The HTML page read the columns (27.0) until it
    // read the run as the text report does, the frame table kept for its plots (13.9).
    let bounds = Peaks {
        report_text: 15.0,
        report_json: 15.0,
        report_html: 15.0,
        whatif: 15.0,
        export: 6.0,
        compare: 15.5,
        compare_four: 16.0,
        history_add: 15.0,
    };
    let file = file_bytes_per_span(&path, spans);
    let fallbacks = column_fallbacks();
    let peaks = subcommand_peaks(&path, spans);
    // Each thread's spans in start order, two stretches in frame order: no columns.
    assert_eq!(
        column_fallbacks(),
        fallbacks,
        "an analysis read the columns"
    );
    assert_peaks(&peaks, &bounds, file);
}
