//! How much memory the analysis of a run file takes, counted by a global allocator that
//! tracks the bytes the program holds (SQLite's own page cache, a few MB allocated in C,
//! is not counted). Deterministic: the same allocations on every machine, no RSS.
//!
//! The small test runs by default; the two big ones are measurements (BENCHMARKS.md):
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

use framelab::analyze::compact::analyze_from;
use framelab::hist::{render_from, HistOptions};
use framelab::model::{EndReason, Run, RunMeta, Span, ThreadInfo};
use framelab::store;

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
        threads: vec![ThreadInfo::default()],
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
        threads: vec![ThreadInfo::default(), ThreadInfo::default()],
        spans,
        ..Run::default()
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

/// Peak bytes per span of the report's analysis and of `hist` on the file, printed.
fn per_span(path: &Path, spans: usize) -> (f64, f64) {
    let started = Instant::now();
    let (report_peak, _, analysis) = measured(|| {
        let run = store::open_run(path, None).unwrap();
        analyze_from(&run.head, &run).unwrap()
    });
    let report_s = started.elapsed().as_secs_f64();
    assert!(analysis.frames > 0);
    let started = Instant::now();
    let (hist_peak, _, text) = measured(|| {
        let run = store::open_run(path, None).unwrap();
        render_from(&run.head, &run, &HistOptions::default()).unwrap()
    });
    let hist_s = started.elapsed().as_secs_f64();
    assert!(text.contains('@'));
    let (report, hist) = (
        report_peak as f64 / spans as f64,
        hist_peak as f64 / spans as f64,
    );
    println!(
        "{spans} spans: report analysis {report:.1} B/span ({:.0} MiB, {report_s:.2} s), \
         hist {hist:.1} B/span ({:.0} MiB, {hist_s:.2} s)",
        report_peak as f64 / (1 << 20) as f64,
        hist_peak as f64 / (1 << 20) as f64,
    );
    (report, hist)
}

#[test]
fn the_analysis_of_a_run_file_never_holds_its_spans() {
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
    // stage tables, a chunk of rows) are ~2.5 MB.
    let fixed = 4 << 20;
    assert!(
        peak <= 36 * spans + fixed,
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
        peak <= 36 * spans + fixed,
        "hist: peak {peak} B for {spans} spans"
    );
}

#[test]
#[ignore]
fn twelve_million_spans_one_per_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rate.framelab");
    // testprog rate 200000 60: a frame every 5 µs for 60 s.
    let spans = written(&path, one_span_per_frame(12_000_000, 5_000));
    keep(&path);
    let (report, hist) = per_span(&path, spans);
    assert!(report <= 40.0 && hist <= 40.0);
}

#[test]
#[ignore]
fn ten_million_spans_five_stages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stages.framelab");
    let spans = written(&path, five_stages(2_000_000));
    keep(&path);
    let (report, hist) = per_span(&path, spans);
    assert!(report <= 40.0 && hist <= 40.0);
}
