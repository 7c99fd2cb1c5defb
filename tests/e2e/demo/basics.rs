//! `framelab demo` end to end: the real pipeline under a real session.

use crate::common;

use common::*;
use framelab::analyze::analyze;

fn demo(depth: u32) -> (framelab::model::Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "demo");
    // 30 fps keeps even an unoptimised test build well inside its budget.
    let out = framelab()
        .args([
            "demo",
            "--fps",
            "30",
            "--depth",
            &depth.to_string(),
            "--duration",
            "4s",
            "--warmup",
            "1s",
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (load(&path), stdout(&out))
}

fn check(depth: u32) {
    let (run, report) = demo(depth);
    let analysis = analyze(&run);
    for stage in ["capture", "convert", "encode", "packetize", "send"] {
        assert!(
            analysis.stage_names.iter().any(|s| s == stage),
            "stage {stage} in {:?}",
            analysis.stage_names
        );
        assert!(report.contains(stage), "report shows {stage}");
    }
    // Paced at 30 fps over a ~3 s window: the pacer never runs ahead of its rate, however
    // fast the machine. A busy machine may fall behind, so the lower bound is only "some".
    let window_s = (run.meta.window_end_ns - run.meta.window_start_ns) as f64 / 1e9;
    let expected = 30.0 * window_s;
    assert!(
        analysis.frames >= 5 && (analysis.frames as f64) < 1.05 * expected + 1.0,
        "{} frames in a {window_s:.2} s window at 30 fps",
        analysis.frames
    );
    // Every frame the pipeline made is accounted for: warmup, measured or after the window.
    let ids: std::collections::BTreeSet<u64> = run.spans.iter().map(|s| s.frame).collect();
    let (first, last) = (*ids.first().unwrap(), *ids.last().unwrap());
    assert_eq!(ids.len() as u64, last - first + 1, "no frame id is missing");
    assert_eq!(
        analysis.window.warmup_frames
            + analysis.frames
            + analysis.window.after_frames
            + analysis.window.open_frames,
        ids.len() as u64
    );
    assert!(
        analysis.window.warmup_frames >= 1,
        "the first second's frames are excluded as warmup: {}",
        analysis.window.warmup_frames
    );
    assert_eq!(analysis.dropped_events, 0);
    // An IDR every 2 s (60 frames): a window of ~3 s need not hold one when a loaded
    // machine falls behind, so the window is checked against the run's own keyframes.
    let keyframes = analysis
        .counters
        .iter()
        .find(|c| c.name == "keyframe")
        .expect("keyframe counter");
    let run_keyframes = counter_values(&run, "keyframe");
    assert_eq!(
        run_keyframes.first().map(|&(_, key)| key),
        Some(1),
        "the stream opens with an IDR frame"
    );
    assert!(
        (1..=analysis.frames).contains(&keyframes.frames),
        "measured frames say whether they are keyframes: {} of {}",
        keyframes.frames,
        analysis.frames
    );
    let in_run: i64 = run_keyframes.iter().map(|&(_, key)| key).sum();
    assert!(
        (0..=in_run).contains(&keyframes.total),
        "{} keyframes in the window, {in_run} in the run",
        keyframes.total
    );
    let bytes = analysis
        .counters
        .iter()
        .find(|c| c.name == "bytes")
        .expect("bytes counter");
    assert!(bytes.total > 0 && bytes.bits_per_second.is_some());
    let threads: std::collections::HashSet<u32> = run.spans.iter().map(|s| s.thread).collect();
    assert_eq!(
        threads.len(),
        depth as usize,
        "depth {depth} runs its stages on {depth} thread(s)"
    );
}

#[test]
fn demo_at_depth_1_runs_every_stage_serially() {
    check(1);
}

#[test]
fn demo_at_depth_2_overlaps_frames_on_two_threads() {
    check(2);
}

#[test]
fn demo_with_the_sleep_pacer_names_it_and_records_how_late_it_woke() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "sleep");
    let out = framelab()
        .args([
            "demo",
            "--fps",
            "30",
            "--pacer",
            "sleep",
            "--duration",
            "2s",
            "--warmup",
            "1s",
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("demo (depth 1, sleep pacer)"), "{report}");
    assert!(report.contains("--pacer sleep"), "{report}");
    let run = load(&path);
    let analysis = analyze(&run);
    // One lateness value per frame the pacer let through: never negative.
    let late = pacer_values(&run);
    assert!(
        late.len() as u64 >= analysis.frames,
        "{} pacer values",
        late.len()
    );
    assert!(late.iter().all(|&(_, ns)| ns >= 0));
    assert!(analysis.pacing.is_some());
    assert!(
        report.contains("jitter") && report.contains("Δ interval"),
        "{report}"
    );
}

/// The pacer's `pacer_late_ns` values of a run: (frame, ns).
fn pacer_values(run: &framelab::model::Run) -> Vec<(u64, i64)> {
    counter_values(run, "pacer_late_ns")
}

/// A counter's values over the whole run, warmup included: (frame, value), by frame.
fn counter_values(run: &framelab::model::Run, name: &str) -> Vec<(u64, i64)> {
    let id = (run.counter_names.iter())
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("counter {name}")) as u16;
    let mut values: Vec<(u64, i64)> = (run.counters.iter())
        .filter(|c| c.counter == id)
        .map(|c| (c.frame, c.value))
        .collect();
    values.sort_unstable();
    values
}

/// Issue 25 point 5: the pacer's oversleep is a wait before the frame, not its work. The
/// frame starts at its first real stage (capture), so no total, frame work, thread or bound
/// contains it, and the report says how late the pacer woke in a line of its own.
#[test]
fn the_demo_totals_exclude_the_pacers_lateness_and_the_report_says_how_late_it_woke() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "paced");
    let out = framelab()
        .args(["demo", "--fps", "30", "--pacer", "sleep"])
        .args(["--duration", "2s", "--warmup", "500ms", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let run = load(&path);
    assert!(
        !run.stages.iter().any(|s| s == "pace"),
        "the pacer records no stage: {:?}",
        run.stages
    );
    // Every frame starts where its capture starts: nothing of the pacer's comes before it.
    let capture = run.stages.iter().position(|s| s == "capture").unwrap() as u16;
    let mut first_start = std::collections::BTreeMap::<u64, (i64, u16)>::new();
    for s in &run.spans {
        let e = first_start.entry(s.frame).or_insert((s.start_ns, s.stage));
        if s.start_ns < e.0 {
            *e = (s.start_ns, s.stage);
        }
    }
    assert!(
        first_start.values().all(|&(_, stage)| stage == capture),
        "a frame started with another stage than capture"
    );

    // The report's pacer summary is the measured frames' values, and nothing else has them.
    let a = analyze(&run);
    let json = report_json(&path);
    let late = pacer_values(&run);
    let measured = &json["pacer"]["late"];
    // The pacer waits once before every frame: one value for each measured frame.
    assert_eq!(measured["count"].as_u64(), Some(a.frames), "{measured}");
    let max = late.iter().map(|&(_, ns)| ns).max().unwrap() as f64;
    assert!(measured["max_ns"].as_f64().unwrap() <= max);
    assert!(!(a.counters.iter()).any(|c| c.name == "pacer_late_ns"));
    let line = (text.lines())
        .find(|l| l.trim_start().starts_with("pacer "))
        .unwrap_or_else(|| panic!("no pacer line in\n{text}"));
    for shown in [
        "woke late p50",
        "p99",
        "max",
        "waits",
        "not in its stages, total or frame work",
    ] {
        assert!(line.contains(shown), "{shown} in {line}");
    }
    // Work and waits add up to the total with nothing of the pacer in either, and the
    // thread's stages are the pipeline's only.
    let p = a.pipeline.as_ref().unwrap();
    assert!(!p.waits.iter().any(|w| w.from == "pace" || w.to == "pace"));
    for r in &p.resources {
        assert!(!r.stages.iter().any(|s| s.stage == "pace"), "{r:?}");
    }
    let (work, waits, total) = (
        p.work.as_ref().unwrap(),
        p.waited.as_ref().unwrap(),
        a.total.as_ref().unwrap(),
    );
    assert!((work.mean_ns + waits.mean_ns - total.mean_ns).abs() < 1.0);
    assert!(
        !text.contains("pace→capture") && !text.contains(" pace "),
        "{text}"
    );
}

#[test]
fn an_unknown_pacer_is_refused() {
    let out = run(&["demo", "--pacer", "busy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid value 'busy'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn demo_takes_the_run_options_that_make_sense_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "options");
    // 10 fps: light enough to run beside the other demo tests on a small machine.
    let out = framelab()
        .args(["demo", "--fps", "10", "--duration", "2s"])
        .args(["--warmup", "500ms"])
        .args(["--sample-every", "20ms", "--no-sample", "threads"])
        .args(["--name", "demo under test", "--format", "json"])
        .args(["--live", "1s", "--live-linear", "1ms"])
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    assert_eq!(run.meta.name, "demo under test");
    // The sampling options reached the run: every source asked for 20 ms, threads off.
    let sources = &run.telemetry.sources;
    assert!(!sources.is_empty());
    assert!(
        sources.iter().all(|s| s.every_ns == 20_000_000),
        "{sources:?}"
    );
    let threads = sources.iter().find(|s| s.source == "threads").unwrap();
    assert_eq!(
        threads.state,
        framelab::model::SourceState::Disabled,
        "{threads:?}"
    );
    assert!(run.telemetry.series.iter().all(|s| s.source != "threads"));
    // The report is the JSON asked for, and says the same.
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["name"], "demo under test");
    assert_eq!(report["telemetry"]["every_ns"], 20_000_000);
    // --live printed the linear histograms, the run's last interval included.
    let err = stderr(&out);
    assert!(err.contains("@encode (ms, 1 ms buckets):"), "{err}");
    assert!(err.contains("(end of the run) ---"), "{err}");
}

/// A demo shorter than its 3 s warmup warms up for a fifth of itself instead of failing;
/// a warmup given both as a time and as frames is refused, as `run` refuses it.
#[test]
fn the_demo_warmup_fits_a_short_run_and_is_given_one_way() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "short");
    let out = framelab()
        .args([
            "demo",
            "--fps",
            "10",
            "--duration",
            "1s",
            "--no-sample",
            "threads",
        ])
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    assert_eq!(run.meta.warmup_ns, 200_000_000);
    let both = framelab()
        .args(["demo", "--warmup", "1s", "--warmup-frames", "3", "-o"])
        .arg(dir.path().join("both.framelab"))
        .output()
        .unwrap();
    assert_conflict(&both);
}
