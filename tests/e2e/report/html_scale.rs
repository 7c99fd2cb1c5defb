//! The HTML report of a 10M-span run (2M frames × 5 stages on two threads, 120 fps): how
//! long `framelab report --format html` and the text report take beside `framelab hist` of
//! the same file (the baseline: one read of the spans), timed in turn, the order rotated
//! each round, with the load average; how big the page is; and how soon headless Chromium
//! has drawn it, by the page's own clock (performance.now(), paint timing) and by the
//! browser's wall time beside an empty page's. A measurement, ignored by default; times
//! are printed, never asserted (BENCHMARKS.md has the figures):
//!
//!     cargo test --release --test html_scale -- --ignored --nocapture
//!
//! `HTML_SCALE_DIR=DIR` keeps the run file and the page there (and reuses the run file);
//! `FRAMELAB_BIN=PATH` times another framelab binary (the test binary copied elsewhere).

use crate::common;

use common::Jitter;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use framelab::model::{EndReason, Run, RunMeta, Span, ThreadInfo};

const FRAMES: u64 = 2_000_000;
const STAGES: u16 = 5;
const BUDGET_NS: i64 = 8_333_333;
const ROUNDS: usize = 3;

/// Stages 0–2 on thread 0, 3–4 on thread 1, 200–1600 µs each, 10 µs apart; one frame in
/// 10 000 stalls its third stage by 20 ms (the worst frames the page must show).
fn ten_million_spans() -> Run {
    let mut jitter = Jitter(0x2545_f491_4f6c_dd1d);
    let mut spans = Vec::with_capacity((FRAMES * STAGES as u64) as usize);
    for thread in 0..2u32 {
        for frame in 0..FRAMES {
            let mut t = frame as i64 * BUDGET_NS;
            for stage in 0..STAGES {
                let stall = if stage == 2 && frame % 10_000 == 77 {
                    20_000_000
                } else {
                    0
                };
                let dur = 200_000 + jitter.next(1_400_000) + stall;
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
            name: "html scale".into(),
            target_fps: Some(120.0),
            window_start_ns: 5_000_000_000,
            window_end_ns: FRAMES as i64 * BUDGET_NS,
            end_reason: EndReason::Duration,
            ..RunMeta::default()
        },
        stages: (0..STAGES).map(|s| format!("stage{s}")).collect(),
        threads: vec![ThreadInfo::default(), ThreadInfo::default()],
        spans,
        ..Run::default()
    }
}

fn seconds_of(mut command: Command) -> f64 {
    let t = Instant::now();
    let status = command.stdout(Stdio::null()).status().expect("runs");
    assert!(status.success(), "{command:?}");
    t.elapsed().as_secs_f64()
}

fn framelab() -> Command {
    let bin = std::env::var_os("FRAMELAB_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_framelab")),
        PathBuf::from,
    );
    Command::new(bin)
}

fn report(file: &Path, html: Option<&Path>) -> Command {
    let mut c = framelab();
    c.arg("report").arg(file);
    if let Some(out) = html {
        c.args(["--format", "html", "-o"]).arg(out);
    }
    c
}

fn hist(file: &Path) -> Command {
    let mut c = framelab();
    c.arg("hist").arg(file);
    c
}

fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `<body>` attributes the page sets, and the browser's wall time.
fn open_in_chromium(page: &Path) -> Option<(String, f64)> {
    let profile = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // Lets the page's paint timings and animation frames happen before the dump.
        .args(["--virtual-time-budget=10000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let wall = t.elapsed().as_secs_f64();
    let dom = String::from_utf8_lossy(&out.stdout);
    let body = dom.find("<body").map(|at| {
        let end = dom[at..].find('>').unwrap_or(0);
        dom[at..at + end + 1].to_owned()
    })?;
    Some((body, wall))
}

#[test]
#[ignore]
fn html_of_ten_million_spans() {
    let keep = std::env::var_os("HTML_SCALE_DIR").map(PathBuf::from);
    let temp = tempfile::tempdir().unwrap();
    let dir = keep.clone().unwrap_or_else(|| temp.path().to_owned());
    let file = dir.join("html_scale.framelab");
    if !file.exists() {
        framelab::store::write_run(&file, &ten_million_spans()).unwrap();
    }
    let page = dir.join("html_scale.html");

    // Warm the page cache once, then hist, text and HTML in turn, the order rotated.
    seconds_of(hist(&file));
    println!("load average before: {}", load_average());
    let (mut times, names) = (
        [vec![], vec![], vec![]],
        ["hist", "text report", "html report"],
    );
    for round in 0..ROUNDS {
        for k in 0..3 {
            let which = (round + k) % 3;
            let command = match which {
                0 => hist(&file),
                1 => report(&file, None),
                _ => report(&file, Some(&page)),
            };
            times[which].push(seconds_of(command));
        }
    }
    println!("load average after: {}", load_average());
    let size = std::fs::metadata(&page).unwrap().len();
    for (name, t) in names.iter().zip(&times) {
        println!("{name:<12} s: {t:.2?}");
    }
    for (name, t) in names.iter().zip(&times).skip(1) {
        let ratios: Vec<f64> = t.iter().zip(&times[0]).map(|(a, h)| a / h).collect();
        println!("{name} ÷ hist: {ratios:.2?}");
    }
    println!("page: {:.2} MB", size as f64 / 1e6);

    let empty = dir.join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><html><body>empty</body></html>").unwrap();
    for _ in 0..ROUNDS {
        match (open_in_chromium(&page), open_in_chromium(&empty)) {
            (Some((body, wall)), Some((_, empty_wall))) => {
                println!("chromium: {body}");
                println!(
                    "chromium wall: page {wall:.2} s, empty page {empty_wall:.2} s, difference {:.2} s",
                    wall - empty_wall
                );
            }
            _ => println!("SKIPPED: no chromium here; the page was not opened"),
        }
    }
}
