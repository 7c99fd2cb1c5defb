//! Waits, threads, the bottleneck and `framelab whatif` end to end: the real demo pipeline
//! under a real session, and imported runs. Structure only: which waits, threads and
//! stages are named, never how long anything took.

use crate::common;

use common::*;

const DEMO_STAGES: [&str; 5] = ["capture", "convert", "encode", "packetize", "send"];

/// `framelab demo --depth D` for a short while at 30 fps: the run file's path.
fn demo(dir: &tempfile::TempDir, depth: u32) -> std::path::PathBuf {
    let path = temp_run(dir, &format!("demo{depth}"));
    let out = framelab()
        .args(["demo", "--fps", "30", "--depth", &depth.to_string()])
        .args(["--duration", "2s", "--warmup", "500ms", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

fn run_ok(args: &[&str], path: &std::path::Path) -> String {
    let out = framelab().args(args).arg(path).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn json(args: &[&str], path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&run_ok(args, path)).unwrap()
}

/// The error of a command that must fail: one line (clap adds its pointer to --help), no
/// panic.
fn one_line_error(args: &[&str], path: &std::path::Path) -> String {
    let out = framelab().args(args).arg(path).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = stderr(&out);
    let lines: Vec<&str> = (err.lines())
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
        .collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn the_demo_at_depth_two_waits_between_its_threads_and_names_its_bottleneck() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(&dir, 2);
    let report = json(&["report", "--format", "json"], &path);
    let p = &report["pipeline"];
    let waits: Vec<&str> = (p["waits"].as_array().unwrap().iter())
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    // The frame crosses from the capture thread to the encoding one between convert and
    // encode; every wait joins two of the demo's stages.
    for expected in ["capture→convert", "convert→encode", "encode→packetize"] {
        assert!(waits.contains(&expected), "{expected} in {waits:?}");
    }
    for w in &waits {
        let (from, to) = w.split_once('→').unwrap();
        assert!(
            DEMO_STAGES.contains(&from) && DEMO_STAGES.contains(&to),
            "{w}"
        );
    }
    assert!(p["work"]["count"].as_u64().unwrap() > 0);
    // Two threads, one of them the capture thread; the bottleneck is one of them and one
    // of the demo's stages.
    let threads: Vec<&str> = (p["resources"].as_array().unwrap().iter())
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(threads.len(), 2, "{threads:?}");
    assert!(threads.contains(&"demo-capture"), "{threads:?}");
    let b = &p["bottleneck"];
    assert!(threads.contains(&b["resource"].as_str().unwrap()));
    assert!(DEMO_STAGES.contains(&b["stage"].as_str().unwrap()));
    assert!(b["fps_bound"].as_f64().unwrap() > 0.0);
    // The worst frames carry their work and waits.
    assert!(report["worst_frames"][0]["work_ns"].as_i64().is_some());

    let text = run_ok(&["report"], &path);
    for shown in [
        "  bound ",
        "convert→encode",
        "frame work",
        "frame waits",
        "demo-capture",
    ] {
        assert!(text.contains(shown), "{shown} in\n{text}");
    }
    let markdown = run_ok(&["report", "--format", "markdown"], &path);
    assert!(markdown.contains("| wait (µs) |") && markdown.contains("**bound**"));

    // What-if at depth 1: the same two threads, one frame in flight. (The run's own depth is
    // the most frames seen in flight: 1 or 2, as fast as the machine was.)
    let w = json(&["whatif", "--depth", "1", "--format", "json"], &path);
    let resources = w["schedule"]["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2);
    assert_eq!(w["schedule"]["depth"], 1);
    let recorded_depth = w["recorded_schedule"]["depth"].as_u64().unwrap();
    assert!((1..=2).contains(&recorded_depth), "{recorded_depth}");
    assert!(w["predicted"]["fps"].as_f64().unwrap() > 0.0);
}

#[test]
fn whatif_splits_a_depth_one_demo_and_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(&dir, 1);
    let w = json(&["whatif", "--depth", "2", "--format", "json"], &path);
    assert_eq!(w["recorded_schedule"]["depth"], 1);
    let resources = w["schedule"]["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2);
    // The first stage stays first, on the first thread; every stage is placed once.
    assert_eq!(resources[0][1][0], "capture");
    let placed: usize = (resources.iter())
        .map(|r| r[1].as_array().unwrap().len())
        .sum();
    assert_eq!(placed, DEMO_STAGES.len());
    let text = run_ok(&["whatif", "--stage-scale", "encode=0.5"], &path);
    assert!(
        text.contains("encode × 0.5") && text.contains("assumptions"),
        "{text}"
    );
    let moved = run_ok(&["whatif", "--move", "encode=gpu"], &path);
    assert!(moved.contains("gpu: encode"), "{moved}");

    let e = one_line_error(&["whatif", "--depth", "0"], &path);
    assert!(e.contains("--depth") && e.contains("1 to 64"), "{e}");
    let e = one_line_error(&["whatif", "--stage-scale", "nope=0.5"], &path);
    assert!(
        e.contains("unknown stage `nope`") && e.contains("encode"),
        "{e}"
    );
    let e = one_line_error(&["whatif", "--move", "nope=main"], &path);
    assert!(e.contains("unknown stage `nope`"), "{e}");
    let e = one_line_error(&["whatif", "--stage-scale", "encode=0"], &path);
    assert!(e.contains("outside 0.001 to 1000"), "{e}");
    let e = one_line_error(&["whatif", "--stage-scale", "encode"], &path);
    assert!(e.contains("STAGE=FACTOR"), "{e}");
}

/// `framelab import` of a CSV; the run file.
fn import(dir: &tempfile::TempDir, name: &str, csv: &str) -> std::path::PathBuf {
    let input = dir.path().join(format!("{name}.csv"));
    std::fs::write(&input, csv).unwrap();
    let path = temp_run(dir, name);
    let out = framelab()
        .arg("import")
        .arg(&input)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

#[test]
fn imported_runs_without_threads_or_with_one_stage_say_so() {
    let dir = tempfile::tempdir().unwrap();
    // Two stages a frame, no thread ids: waits, but no threads to be busy.
    let mut csv = String::from("start_us,dur_us,name,frame\n");
    for f in 0..20 {
        csv.push_str(&format!(
            "{},200,decode,{f}\n{},100,show,{f}\n",
            f * 1000,
            f * 1000 + 300
        ));
    }
    let path = import(&dir, "nothreads", &csv);
    let report = run_ok(&["report"], &path);
    assert!(report.contains("decode→show"), "{report}");
    assert!(report.contains("The run has no thread ids"), "{report}");
    let e = one_line_error(&["whatif", "--depth", "2"], &path);
    assert!(e.contains("no thread ids"), "{e}");

    // One stage a frame: no waits to show, said once.
    let mut csv = String::from("start_us,dur_us,name,frame,tid\n");
    for f in 0..20 {
        csv.push_str(&format!("{},200,decode,{f},7\n", f * 1000));
    }
    let path = import(&dir, "onestage", &csv);
    let report = run_ok(&["report"], &path);
    assert!(report.contains("Waits need two stages or more"), "{report}");
    assert!(!report.contains("frame waits"), "{report}");
}

/// A program faster than its target is not paced by it: the bound line must not say the
/// target sets the rate (it did for the README's example, 325 fps against --fps 300); a
/// program that keeps to its target well below its bound is.
#[test]
fn the_target_sets_the_rate_only_for_a_run_that_kept_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let bound_line = |name: &str, fps: &str, program: &[&str]| {
        let (out, _) = run_testprog(&dir, name, &["--fps", fps], program);
        assert!(out.status.success(), "{}", stderr(&out));
        let report = stdout(&out);
        let bound = report.lines().find(|l| l.contains("bound"));
        bound.expect("a bound line").to_owned()
    };
    // About 2 ms of work a frame: hundreds of fps, unpaced, against a 50 fps target.
    let bound = bound_line("unpaced", "50", &["work", "300", "2000"]);
    assert!(!bound.contains("sets the rate"), "{bound}");
    // A frame every 1 ms exactly, each 10 µs of work, against a 1000 fps target: paced at
    // 1000. An imported trace, so that no machine's load decides it (a real program on
    // 1 ms deadlines kept 948.6 fps on a loaded machine once, below the 1000 it aimed at).
    let events: Vec<serde_json::Value> = (0..3000)
        .map(|i| {
            serde_json::json!({"name": "work", "ph": "X", "ts": 1000 * i, "dur": 10,
                "pid": 1, "tid": 1, "args": {"frame": i}})
        })
        .collect();
    let trace = dir.path().join("paced.json");
    std::fs::write(
        &trace,
        serde_json::json!({ "traceEvents": events }).to_string(),
    )
    .unwrap();
    let path = temp_run(&dir, "paced");
    let out = framelab()
        .args(["import", "--frame-arg", "frame", "--fps", "1000", "-o"])
        .arg(&path)
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report = run_ok(&["report"], &path);
    let bound = report
        .lines()
        .find(|l| l.contains("bound"))
        .expect("a bound line");
    assert!(
        bound.contains(
            "allows 100000.0 fps · observed 1000.3 fps (the target 1000 fps sets the rate)"
        ),
        "{bound}"
    );
}
