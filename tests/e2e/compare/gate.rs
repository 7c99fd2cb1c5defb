//! Which metrics `framelab compare` tests, and how strictly: the primary metric alone at
//! the full α, the others Holm-corrected among themselves only once it changed, metrics
//! identical by construction counted once (docs/metrics.md, "Which metrics are tested, and
//! how strictly"). The runs are built by hand (every frame time known), written as run
//! files and compared by the binary: no wall-clock timing decides anything here.

use crate::common;

use std::path::Path;

use common::{framelab, stderr, stdout};
use framelab::model::*;

const MS: i64 = 1_000_000;
const FRAMES: u64 = 200;

/// A run of one stage, `frame`, whose frames follow each other on one thread: frame times
/// about 4 ms × `slower` × (1 + k %), so runs of one side never tie and a side `slower`
/// 1.2 has every run beyond every run of a side at 1.0. CPU is 90% of the run × `cpu`.
fn run(slower: f64, cpu: f64, k: u64) -> Run {
    let mut spans = Vec::new();
    let mut t = 0i64;
    for i in 0..FRAMES {
        // ±5% per frame, deterministic.
        let wobble = ((i * 7919 + k * 104_729) % 101) as f64 / 1000.0 - 0.05;
        let dur = (4.0 * MS as f64 * slower * (1.0 + k as f64 / 100.0) * (1.0 + wobble)) as i64;
        spans.push(Span {
            frame: i,
            stage: 0,
            thread: 0,
            start_ns: t,
            dur_ns: dur,
        });
        t += dur;
    }
    let end = t + MS;
    Run {
        meta: RunMeta {
            name: "gate test".into(),
            command: vec!["./host".into()],
            started_at: "2026-11-28T12:00:00Z".into(),
            host: Host {
                hostname: "h".into(),
                cpu_model: "Test CPU".into(),
                cores: 2,
                kernel: "6.18".into(),
                clocksource: "tsc".into(),
            },
            window_start_ns: 0,
            window_end_ns: end,
            end_reason: EndReason::Exited,
            exit: Some(ExitInfo {
                code: Some(0),
                signal: None,
                crashed: false,
            }),
            ..RunMeta::default()
        },
        stages: vec!["frame".into()],
        threads: vec![ThreadInfo {
            pid: 10,
            tid: 10,
            name: "main".into(),
            dropped: 0,
        }],
        spans,
        processes: vec![ProcessStats {
            pid: 10,
            name: "host".into(),
            role: ProcessRole::Command,
            user_ns: (end as f64 * 0.9 * cpu) as i64,
            wall_ns: end,
            peak_rss_bytes: 50 << 20,
            ..ProcessStats::default()
        }],
        ..Run::default()
    }
}

/// Four runs a side: `a` at 1.0, `b` with frame times × `slower` and CPU × `cpu`.
fn four_a_side(dir: &Path, slower: f64, cpu: f64) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, b) = (dir.join("a.framelab"), dir.join("b.framelab"));
    for k in 0..4 {
        framelab::store::write_run(&a, &run(1.0, 1.0, k)).unwrap();
        framelab::store::write_run(&b, &run(slower, cpu * (1.0 + k as f64 / 100.0), k)).unwrap();
    }
    (a, b)
}

fn compare(a: &Path, b: &Path, extra: &[&str]) -> serde_json::Value {
    let out = framelab()
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(["--format", "json", "--resamples", "2000"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn row<'a>(c: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    c["groups"][0]["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric} in {c}"))
}

/// The case: `bench -n 4` of two variants 20% apart read "inconclusive" on all 14
/// metrics (Holm over 14 needs p < 0.0036; 4 a side give at best 0.029). The primary
/// metric, fps, is now tested alone: regressed.
#[test]
fn four_runs_a_side_twenty_percent_apart_give_a_verdict_on_the_primary_metric() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = four_a_side(dir.path(), 1.2, 1.2);
    let c = compare(&a, &b, &[]);
    assert_eq!(c["schema"], "framelab.compare/3");
    assert_eq!(c["primary_metric"], "fps");
    let fps = row(&c, "fps");
    assert_eq!(fps["verdict"], "regressed", "{fps}");
    assert!(
        (fps["p_holm"].as_f64().unwrap() - 2.0 / 70.0).abs() < 1e-9,
        "{fps}"
    );
    // Wall is fps by construction here (every run did 200 frames): tested with it.
    let wall = row(&c, "wall");
    assert_eq!(wall["tested_as"], "fps", "{wall}");
    assert_eq!(wall["verdict"], "regressed", "{wall}");
    // The rest, Holm-corrected among themselves, cannot pass with 4 a side: inconclusive,
    // saying so, and never a verdict the runs cannot support.
    let p99 = row(&c, "frame.p99");
    assert_eq!(p99["verdict"], "inconclusive", "{p99}");
    let reason = p99["reason"].as_str().unwrap();
    assert!(
        reason.contains("tested after the primary metric"),
        "{reason}"
    );
    let notes = c["notes"].to_string();
    assert!(notes.contains("fps, the primary metric"), "{notes}");

    // The text says which metric is primary, in its header.
    let out = framelab().arg("compare").arg(&a).arg(&b).output().unwrap();
    let text = stdout(&out);
    let header: Vec<&str> = text.lines().take(3).collect();
    assert!(
        header.iter().any(|l| l.contains("primary metric: fps")),
        "{text}"
    );
    assert!(text.contains("p (adj.)"), "{text}");
}

/// A single-stage run's `frame.p50` is its `total.p50`: one hypothesis, not two. After fps,
/// Holm over one hypothesis is its own p (0.029), so both are regressed; counted twice,
/// 2 × 0.029 would not pass.
#[test]
fn a_single_stage_runs_frame_and_total_percentiles_count_once() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = four_a_side(dir.path(), 1.2, 1.2);
    let c = compare(&a, &b, &["--show", "fps,frame.p50,total.p50"]);
    for metric in ["frame.p50", "total.p50"] {
        let r = row(&c, metric);
        assert_eq!(r["verdict"], "regressed", "{r}");
    }
    assert_eq!(row(&c, "total.p50")["tested_as"], "frame.p50");
    let notes = c["notes"].to_string();
    assert!(
        notes.contains("total p50 is tested as frame p50"),
        "{notes}"
    );
}

/// The first `--show` is the primary metric. A change of CPU alone: judged after an fps
/// that did not move, it is not tested (and the reason names the option that would test
/// it); named first, it is regressed.
#[test]
fn the_first_shown_metric_is_primary_and_the_others_wait_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = four_a_side(dir.path(), 1.0, 1.2);
    let after_fps = compare(&a, &b, &["--show", "fps,cpu_per_frame"]);
    assert_eq!(after_fps["primary_metric"], "fps");
    let cpu = row(&after_fps, "cpu_per_frame");
    assert_eq!(cpu["verdict"], "inconclusive", "{cpu}");
    let reason = cpu["reason"].as_str().unwrap();
    assert!(
        reason.contains("primary metric, fps") && reason.contains("first with --show"),
        "{reason}"
    );
    let first = compare(&a, &b, &["--show", "cpu_per_frame,fps"]);
    assert_eq!(first["primary_metric"], "cpu_per_frame");
    assert_eq!(first["headline_metric"], "cpu_per_frame");
    assert_eq!(row(&first, "cpu_per_frame")["verdict"], "regressed");
}

/// The comparison page's variant colours say nothing about better or worse: no green and no
/// red for a variant (the verdicts' colours). The page's words are the text's, the primary
/// metric named.
#[test]
fn the_comparison_page_names_the_primary_metric() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = four_a_side(dir.path(), 1.2, 1.2);
    let page = dir.path().join("c.html");
    let out = framelab()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--resamples", "500", "--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let data = common::page_data(&page);
    // The page's words are the comparison's document, as text shows it: its title, every
    // heading and paragraph a line of the text (the primary metric's among them).
    let text = stdout(
        &framelab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--resamples", "500"])
            .output()
            .unwrap(),
    );
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert!(lines.contains(&data["title"].as_str().unwrap()), "{text}");
    let words: Vec<&str> = (data["blocks"].as_array().unwrap().iter())
        .filter_map(|b| b["heading"].as_str().or(b["paragraph"].as_str()))
        .collect();
    assert!(words.len() > 3, "{words:?}");
    for line in &words {
        assert!(lines.contains(line), "{line:?} is not in the text:\n{text}");
    }
    assert!(
        words.iter().any(|w| w.starts_with("primary metric: fps")),
        "{words:?}"
    );
    let b_row = &data["forests"][0]["rows"][1];
    assert_eq!(b_row["variant"], "b", "{b_row}");
}
