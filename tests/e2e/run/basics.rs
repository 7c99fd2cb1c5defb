//! `framelab run` end to end: real programs, real sessions, real run files.

use crate::common;

use common::session::{run_until, until_exists, wait_for};
use common::*;
use framelab::analyze::analyze;
use framelab::model::{EndReason, ProcessRole};
use std::collections::HashMap;

fn stage_id(run: &framelab::model::Run, name: &str) -> u16 {
    run.stages
        .iter()
        .position(|s| s == name)
        .unwrap_or_else(|| panic!("stage {name} missing: {:?}", run.stages)) as u16
}

#[test]
fn records_every_span_counter_and_event_of_a_program_that_exits() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "spans", &["--fps", "500"], &["spans", "200"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&path.display().to_string()),
        "prints where the run file is"
    );

    let run = load(&path);
    assert_eq!(run.meta.end_reason, EndReason::Exited);
    assert_eq!(run.meta.exit.as_ref().unwrap().code, Some(0));
    assert_eq!(run.meta.dropped_events, 0);
    assert_eq!(run.meta.invalid_records, 0);
    for name in ["a", "b", "c"] {
        let id = stage_id(&run, name);
        assert_eq!(
            run.spans.iter().filter(|s| s.stage == id).count(),
            200,
            "stage {name}"
        );
    }
    assert_eq!(run.counters.len(), 200);
    assert_eq!(run.counters.iter().map(|c| c.value).sum::<i64>(), 20_000);
    assert_eq!(run.events.len(), 200);

    // A lap starts exactly where the previous one ended, and follows the span of `a`.
    let (a, b, c) = (
        stage_id(&run, "a"),
        stage_id(&run, "b"),
        stage_id(&run, "c"),
    );
    let by_frame = |stage| {
        run.spans
            .iter()
            .filter(|s| s.stage == stage)
            .map(|s| (s.frame, *s))
            .collect::<HashMap<_, _>>()
    };
    let (sa, sb, sc) = (by_frame(a), by_frame(b), by_frame(c));
    for frame in 0..200 {
        assert_eq!(sb[&frame].end_ns(), sc[&frame].start_ns, "frame {frame}");
        assert!(sb[&frame].start_ns >= sa[&frame].end_ns());
        assert!(sa[&frame].dur_ns >= 300_000, "a burns 300 µs");
    }

    let analysis = analyze(&run);
    assert_eq!(analysis.frames, 200);
    assert_eq!(analysis.window.warmup_frames, 0);
    let command = analysis
        .processes
        .iter()
        .find(|p| p.role == ProcessRole::Command)
        .expect("command row");
    assert!(
        command.user_ns + command.sys_ns > 50_000_000,
        "≥ 200 frames × 600 µs of burning: {command:?}"
    );
    assert!(run.threads.len() == 1 && run.threads[0].pid == command.pid);
}

#[test]
fn a_crashing_program_keeps_what_it_recorded_and_the_report_names_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "abort", &[], &["abort", "50"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "a crashed command makes framelab exit 3: {}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("SIGABRT"),
        "report says how it crashed:\n{}",
        stdout(&out)
    );
    // And stderr, for whoever reads the report from a file or as JSON (it said nothing).
    assert!(
        stderr(&out).contains("framelab: the command crashed: killed by SIGABRT (signal 6)"),
        "{}",
        stderr(&out)
    );
    let run = load(&path);
    let exit = run.meta.exit.clone().unwrap();
    assert!(exit.crashed);
    assert_eq!(exit.signal, Some(libc::SIGABRT));
    assert_eq!(
        run.spans
            .iter()
            .filter(|s| s.stage == stage_id(&run, "a"))
            .count(),
        50,
        "every recorded span survived the crash"
    );
}

#[test]
fn duration_stops_the_command_and_warmup_frames_are_kept_but_excluded() {
    // Warmup frames need a first frame before --duration − --warmup: a slow start-up
    // gets more room.
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = record_with_room(
        &["1200ms", "4800ms", "19200ms"],
        |duration| {
            let (out, path) = run_testprog(
                &dir,
                "duration",
                &["--fps", "500", "--warmup", "300ms", "--duration", duration],
                &["forever"],
            );
            assert!(
                out.status.success(),
                "stopped by framelab is not a failure: {}",
                stderr(&out)
            );
            (out, load(&path))
        },
        |(_, run)| analyze(run).window.warmup_frames > 0,
    );
    assert_eq!(run.meta.end_reason, EndReason::Duration);
    assert!(!run.meta.exit.as_ref().unwrap().crashed);
    assert!(run.meta.window_start_ns >= 300_000_000);
    assert!(run.meta.window_end_ns > run.meta.window_start_ns);
    let analysis = analyze(&run);
    assert!(
        analysis.window.warmup_frames > 0,
        "warmup frames are in the file"
    );
    let all_frames: std::collections::HashSet<u64> = run.spans.iter().map(|s| s.frame).collect();
    assert_eq!(
        analysis.frames
            + analysis.window.warmup_frames
            + analysis.window.after_frames
            + analysis.window.open_frames,
        all_frames.len() as u64,
        "measured, warmup, after the window and still open at the stop: every frame once"
    );
}

#[test]
fn ctrl_c_finalises_the_run_and_keeps_what_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "interrupted");
    let child = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "forever"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until something is on disk, then interrupt (as a terminal's Ctrl-C would).
    wait_for("a span on disk", || {
        path.exists() && framelab::store::load_run(&path, None).is_ok_and(|r| !r.spans.is_empty())
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("stage"),
        "the report is printed:\n{}",
        stdout(&out)
    );
    let run = load(&path);
    assert_eq!(run.meta.end_reason, EndReason::Interrupted);
    assert!(!run.spans.is_empty());
}

#[test]
fn frames_crossing_threads_get_end_to_end_totals() {
    let (_, run) = record_testprog(&[], &["threads", "100"]);
    assert_eq!(run.threads.len(), 2, "{:?}", run.threads);
    assert!(run.threads.iter().any(|t| t.name == "consumer"));
    let (produce, consume) = (stage_id(&run, "produce"), stage_id(&run, "consume"));
    let analysis = analyze(&run);
    assert_eq!(analysis.frames, 100);
    // total = consume end − produce start for every frame, so it is at least both stages.
    let total = analysis.total.as_ref().unwrap();
    assert!(total.min_ns >= 600_000.0, "{total:?}");
    for frame in 0..100u64 {
        let p = run
            .spans
            .iter()
            .find(|s| s.frame == frame && s.stage == produce)
            .unwrap();
        let c = run
            .spans
            .iter()
            .find(|s| s.frame == frame && s.stage == consume)
            .unwrap();
        assert_ne!(p.thread, c.thread);
        assert!(c.end_ns() > p.start_ns);
    }
}

#[test]
fn two_processes_share_a_session_and_frames_cross_between_them() {
    let (_, run) = record_testprog(&[], &["processes", "100"]);
    let pids: std::collections::HashSet<u32> = run.threads.iter().map(|t| t.pid).collect();
    assert_eq!(pids.len(), 2, "{:?}", run.threads);
    let (parent, child) = (stage_id(&run, "parent"), stage_id(&run, "child"));
    assert_eq!(run.spans.iter().filter(|s| s.stage == parent).count(), 100);
    assert_eq!(run.spans.iter().filter(|s| s.stage == child).count(), 100);
    assert_eq!(analyze(&run).frames, 100);
    assert!(
        run.processes.iter().any(|p| p.role == ProcessRole::Child),
        "the child process is accounted: {:?}",
        run.processes
    );
}

#[test]
fn drops_in_a_tiny_ring_are_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2_000_000u64;
    let (out, path) = run_testprog(
        &dir,
        "drops",
        &["--ring-records", "16"],
        &["flood", &n.to_string()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    assert!(
        run.meta.dropped_events > 0,
        "a 16-record ring cannot keep up with a flood"
    );
    assert_eq!(
        run.spans.len() as u64 + run.meta.dropped_events,
        n,
        "every span is either recorded or counted as dropped"
    );
    assert_eq!(run.threads[0].dropped, run.meta.dropped_events);
    let report = stdout(&out);
    assert!(
        report.contains(&run.meta.dropped_events.to_string()),
        "the report shows the drop count:\n{report}"
    );
}

#[test]
fn an_uninstrumented_command_gets_a_process_report_and_a_throughput() {
    let (_, run) = record_testprog(&["--frames", "30"], &["cpu", "400"]);
    assert!(run.spans.is_empty());
    let analysis = analyze(&run);
    let summary = analysis.cpu.expect("the command's CPU was measured");
    let cpu = summary.user_ns + summary.sys_ns;
    assert!(
        cpu >= 380_000_000,
        "400 ms of CPU burnt shows as CPU: {summary:?}"
    );
    assert!(analysis.observed_fps.is_some_and(|f| f > 0.0));
    assert!(summary.cpu_per_frame_ns.is_some_and(|c| c > 10_000_000.0));
}

#[test]
fn watched_processes_are_accounted_over_the_same_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = std::process::Command::new(example("testprog"))
        .args(["cpu", "20000"])
        .spawn()
        .unwrap();
    let cpu_before = cpu_ns(daemon.id());
    let daemon_pid = daemon.id().to_string();
    let (out, path) = run_testprog(
        &dir,
        "watch",
        &["--duration", "1s", "--watch-pid", &daemon_pid],
        &["forever"],
    );
    let cpu_after = cpu_ns(daemon.id());
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_watched_within(&load(&path), daemon.id(), cpu_before, cpu_after);
}

#[test]
fn too_many_names_are_refused_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "names", &[], &["names", "5000"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("names were refused"),
        "{}",
        stderr(&out)
    );
    let run = load(&path);
    assert_eq!(
        run.meta.names_refused,
        5000 - framelab_probe::wire::MAX_NAMES as u64
    );
    assert_eq!(run.stages.len(), framelab_probe::wire::MAX_NAMES as usize);
    // One span under each refused name: missing for that cause, not invalid.
    let refused = 5000 - framelab_probe::wire::MAX_NAMES as u64;
    assert_eq!(run.meta.invalid_records, 0);
    assert_eq!(run.meta.session.refused_name_records, refused);
    let notes = report_json(&path)["notes"].to_string();
    assert!(
        notes.contains(&format!("{refused} records under them are missing")),
        "{notes}"
    );
    assert!(!notes.contains("invalid record"), "{notes}");
}

#[test]
fn a_killed_framelab_leaves_a_readable_run_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "killed");
    let mut child = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "forever"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("100 spans on disk", || {
        framelab::store::load_run(&path, None).is_ok_and(|r| r.spans.len() > 100)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let run = load(&path);
    assert!(run.spans.len() > 100);
    assert_eq!(run.meta.end_reason, EndReason::Unfinished);
    let report = framelab().args(["report"]).arg(&path).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
}

#[test]
fn processes_watched_by_name_are_accounted() {
    let dir = tempfile::tempdir().unwrap();
    // A daemon with a name of its own: a copy of the test program.
    let daemon_exe = dir.path().join("fl-test-daemon");
    std::fs::copy(example("testprog"), &daemon_exe).unwrap();
    let mut daemon = std::process::Command::new(&daemon_exe)
        .args(["cpu", "20000"])
        .spawn()
        .unwrap();
    let cpu_before = cpu_ns(daemon.id());
    let watch = [
        "--duration",
        "1s",
        "--watch",
        "fl-test-daemon",
        "--watch",
        "no-such-daemon-xyz",
    ];
    let (out, path) = run_testprog(&dir, "watch-name", &watch, &["forever"]);
    let cpu_after = cpu_ns(daemon.id());
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no process named 'no-such-daemon-xyz'"),
        "{}",
        stderr(&out)
    );
    assert_watched_within(&load(&path), daemon.id(), cpu_before, cpu_after);
}

/// A process's user + sys CPU from /proc, as the test sees it.
fn cpu_ns(pid: u32) -> i64 {
    common::session::cpu_ns(pid).expect("the daemon runs")
}

/// The run's watched row is `pid`'s and counts its CPU inside framelab's window, which lies
/// inside the test's own before/after readings: more than nothing, no more than that (± a
/// clock tick each).
fn assert_watched_within(run: &framelab::model::Run, pid: u32, before: i64, after: i64) {
    let watched = (run.processes.iter())
        .find(|p| p.role == ProcessRole::Watched)
        .expect("watched row");
    assert_eq!(watched.pid, pid);
    let counted = watched.user_ns + watched.sys_ns;
    assert!(counted > 0, "{watched:?}");
    assert!(
        counted <= after - before + 20_000_000,
        "{watched:?} counted more than the {} ns the daemon used",
        after - before
    );
}

/// `--frames N` is what the whole command did: it cannot be split by a warmup, and it says
/// nothing when framelab stopped the command before it finished.
#[test]
fn frames_given_by_the_user_cover_the_whole_run_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "split");
    let refused = framelab()
        .args(["run", "--frames", "500", "--warmup", "200ms", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", "sleep 0.5"])
        .output()
        .unwrap();
    // A usage error, as the README's exit codes say.
    assert_eq!(refused.status.code(), Some(2));
    let line = error_line(&refused);
    assert!(
        line.contains("--frames 500") && line.contains("--warmup"),
        "{line}"
    );
    assert!(!file.exists(), "nothing was run, nothing written");
    let bench = framelab()
        .args(["bench", "-n", "2", "--frames", "5", "--warmup", "1s", "-o"])
        .arg(dir.path().join("b.framelab"))
        .args(["--", "sh", "-c", "true"])
        .output()
        .unwrap();
    assert_eq!(bench.status.code(), Some(2));
    assert!(error_line(&bench).contains("--frames 5"));

    // Stopped by --duration: the 40 units were not all done, so no rate.
    let stopped = temp_run(&dir, "stopped");
    let out = framelab()
        .args(["run", "--frames", "40", "--duration", "300ms", "-o"])
        .arg(&stopped)
        .args(["--", "sleep", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let a = analyze(&load(&stopped));
    assert_eq!(a.observed_fps, None);
    assert!(!a.frames_from_hint);
    assert!(
        a.notes
            .iter()
            .any(|n| n.starts_with("--frames 40 gave no throughput")),
        "{:?}",
        a.notes
    );

    // Run to its end: N over the whole run, and the report says so.
    let whole = temp_run(&dir, "whole");
    let out = framelab()
        .args(["run", "--frames", "40", "-o"])
        .arg(&whole)
        .args(["--", "sleep", "0.3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let a = analyze(&load(&whole));
    assert_eq!(a.window.start_ns, 0);
    let fps = a.observed_fps.unwrap();
    let expected = 40.0 / (a.window.length_ns as f64 / 1e9);
    assert!((fps - expected).abs() < 1e-9, "{fps} vs {expected}");
    let text = stdout(&out);
    assert!(
        text.contains("40 given by --frames over the whole run"),
        "{text}"
    );
    assert!(
        text.contains("(fps from --frames: includes start-up and shutdown)"),
        "{text}"
    );
}

/// Stopped by --duration inside a frame: that frame lacks the stages it never reached and
/// must not be measured (it made `total min` a fraction of every real frame's).
#[test]
fn a_frame_cut_short_by_the_stop_is_not_measured() {
    // Ten frames of ~15 ms need the start-up to leave them room: a slow one gets more.
    let (out, run) = record_with_room(
        &["1s", "4s", "16s"],
        |duration| record_testprog(&["--duration", duration], &["slow-middle"]),
        |(_, run)| analyze(run).frames >= 10,
    );
    let a = analyze(&run);
    let count = |name: &str| {
        let row = a.stages.iter().find(|r| r.name == name).unwrap();
        row.dist.count
    };
    assert!(a.frames >= 10, "{} frames", a.frames);
    for stage in ["grab", "encode", "send"] {
        assert_eq!(count(stage), a.frames, "every measured frame has {stage}");
    }
    let total_min_ns = a.total.as_ref().unwrap().min_ns;
    assert!(
        total_min_ns >= 15e6,
        "total min {total_min_ns} ns: a frame without its encode"
    );
    // The signal lands inside a frame (grab or encode or send) nearly always; when the frame
    // had recorded a stage, it is counted as excluded and the report says which stages.
    if a.window.open_frames > 0 {
        assert!(!a.window.open_frames_lack.is_empty());
        assert!(stdout(&out).contains("when the command stopped excluded (lacking"));
    }
}

/// When frame `frame` began (its first span).
fn frame_start(run: &framelab::model::Run, frame: u64) -> i64 {
    (run.spans.iter())
        .filter(|s| s.frame == frame)
        .map(|s| s.start_ns)
        .min()
        .unwrap_or_else(|| panic!("no span of frame {frame}"))
}

/// A slow start-up (1 s before the first frame) is not warmup: by default the warmup counts
/// from the first frame, so the cold first frame (50 ms) stays out of the statistics.
#[test]
fn warmup_counts_from_the_first_frame() {
    let program = ["late-start", "1000", "150"];
    let (out, run) = record_testprog(&["--warmup", "300ms"], &program);
    let a = analyze(&run);
    let first = run.meta.first_span_ns.expect("first span seen");
    assert!(
        first >= 900_000_000,
        "the first frame came after the start-up: {first}"
    );
    assert_eq!(
        run.meta.warmup_from,
        framelab::model::WarmupFrom::FirstFrame
    );
    assert!(run.meta.window_start_ns >= first + 300_000_000);
    // The cold frame began before the window, so it is warmup, not measured (its 50 ms
    // against the others' 2 ms is no test: a loaded machine stretches any sleep).
    assert!(
        frame_start(&run, 0) < run.meta.window_start_ns,
        "cold frame measured"
    );
    assert!(a.window.warmup_frames >= 1);
    assert!(stdout(&out).contains("warmup from the first frame"));

    // Counted from launch, as before: the window opens during the start-up.
    let (_, run) = record_testprog(&["--warmup", "300ms", "--warmup-from", "launch"], &program);
    let a = analyze(&run);
    assert_eq!(run.meta.window_start_ns, 300_000_000);
    let step = a.stages.iter().find(|r| r.name == "step").unwrap();
    assert!(step.dist.max_ns >= 50e6, "from launch the cold frame is in");
}

#[test]
fn warmup_by_frame_count() {
    let (out, run) = record_testprog(&["--warmup-frames", "10"], &["late-start", "100", "60"]);
    let a = analyze(&run);
    assert_eq!(a.window.warmup_frames, 10);
    assert_eq!(a.frames, 50);
    // The window opens where frame 10 began: the cold frame 0 is out of it.
    assert_eq!(run.meta.window_start_ns, frame_start(&run, 10));
    assert!(stdout(&out).contains("after the first 10 frames"));
    // Frames faster than framelab looks (5000 in a burst): still exactly the first 10 out,
    // the window opening where frame 11 began, not when framelab next drained the rings.
    let (_, run) = record_testprog(&["--warmup-frames", "10"], &["flood", "5000"]);
    let a = analyze(&run);
    assert_eq!((a.window.warmup_frames, a.frames), (10, 4990));
    // A time and a number of frames both say when the window opens.
    let both = run_args_error(&["--warmup", "1s", "--warmup-frames", "3"]);
    assert!(both.contains("give one"), "{both}");
}

/// A run stopped (--duration) before frame N+1 of --warmup-frames N began: every frame was
/// warmup, and the window is empty at the end. It was the whole run, reported as "no
/// warmup", with every warmup frame measured.
#[test]
fn a_run_that_ends_inside_its_warmup_frames_measures_no_frame() {
    let (out, run) = record_testprog(
        &["--duration", "600ms", "--warmup-frames", "100000"],
        &["slow-middle"],
    );
    let a = analyze(&run);
    assert!(
        a.window.warmup_frames >= 5,
        "{} warmup frames",
        a.window.warmup_frames
    );
    assert_eq!(a.frames, 0, "frames measured though the warmup never ended");
    assert!(
        run.meta.window_start_ns >= 500_000_000,
        "window from {} ns: it covered the warmup",
        run.meta.window_start_ns
    );
    // Empty, not the microseconds between opening and closing (CPU and load over them).
    assert_eq!(run.meta.window_start_ns, run.meta.window_end_ns);
    let text = stdout(&out);
    assert!(text.contains("after the first 100000 frames"), "{text}");
    assert!(
        text.contains("the run ended before its warmup did"),
        "{text}"
    );
    // No load over an empty window: the note says none can be computed (it showed 0.0%).
    let cpu = a.cpu.expect("the command was measured");
    assert_eq!((cpu.load_pct, cpu.cores), (None, None));
    let cpu_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("cpu "))
        .unwrap();
    assert!(!cpu_line.contains("load"), "{cpu_line}");
}

/// --warmup counts from the first frame; a run that ends before first frame + warmup (a
/// late first frame, a short --duration) measures no frame. It measured from launch +
/// warmup, the first frames included, and said the warmup counted from launch.
#[test]
fn a_run_that_ends_inside_its_warmup_from_the_first_frame_measures_no_frame() {
    // --duration D with --warmup W: the first frame comes after a sleep of D − W, so the
    // warmup from it ends after D. It must also come before D, which only a fast enough
    // start-up gives: without such a frame the run is made again with more room.
    const SLEEP_MS: u64 = 100;
    let (out, run) = record_with_room(
        &[900, 3_900, 15_900],
        |warmup_ms: u64| {
            record_testprog(
                &[
                    "--warmup",
                    &format!("{warmup_ms}ms"),
                    "--duration",
                    &format!("{}ms", warmup_ms + SLEEP_MS),
                ],
                &["late-start", &SLEEP_MS.to_string(), "100000"],
            )
        },
        |(_, run)| !run.spans.is_empty(),
    );
    let a = analyze(&run);
    assert_eq!(
        run.meta.warmup_from,
        framelab::model::WarmupFrom::FirstFrame
    );
    assert!(
        a.window.warmup_frames >= 1,
        "no frame before the end of the run even with {} s to start: {text}",
        run.meta.duration_ns.unwrap_or(0) as f64 / 1e9,
        text = stdout(&out)
    );
    assert_eq!(a.frames, 0, "{}", stdout(&out));
    assert_eq!(run.meta.window_start_ns, run.meta.window_end_ns);
    assert!(stdout(&out).contains("the run ended before its warmup did"));
    // The same when the command exits before its first frame + warmup. Its one frame comes
    // after a sleep longer than the warmup, so after launch + warmup however slow the
    // start (where the window opened provisionally), and it exits 50 ms later, well inside
    // the warmup from that frame.
    let (_, run) = record_testprog(&["--warmup", "1s"], &["late-start", "1100", "1"]);
    let a = analyze(&run);
    assert_eq!(a.frames, 0, "frames within the warmup were measured");
    assert!(a.window.warmup_frames >= 1);
}

/// --warmup-from says where --warmup counts from: alone (no --warmup) or with
/// --warmup-frames it changed nothing and was silently ignored; now refused.
#[test]
fn warmup_from_without_a_warmup_is_refused() {
    let line = run_args_error(&["--warmup-from", "launch"]);
    assert!(line.contains("there is no --warmup"), "{line}");
    let out = framelab()
        .args([
            "run",
            "--warmup-from",
            "launch",
            "--warmup-frames",
            "3",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_conflict(&out);
}

/// A command that records no frame: the warmup falls back to launch, and the file says so.
#[test]
fn an_uninstrumented_command_warms_up_from_launch() {
    let dir = tempfile::tempdir().unwrap();
    let (file, go) = (temp_run(&dir, "sh"), dir.path().join("go"));
    // The command lasts until framelab's first commit, which follows a look at the run
    // 500 ms after the launch or later: past the warmup, so the window has opened by then
    // however slow the machine (a 0.6 s sleep left it 0.4 s).
    let out = run_until(
        framelab()
            .args(["run", "--warmup", "200ms", "-o"])
            .arg(&file)
            .args(["--", "sh", "-c", &until_exists(&go)]),
        &file,
        &go,
        "framelab's first commit",
        |conn| conn.query_row("SELECT max(window_end_ns) > 0 FROM runs", [], |r| r.get(0)),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    assert_eq!(run.meta.warmup_from, framelab::model::WarmupFrom::Launch);
    assert_eq!(run.meta.window_start_ns, 200_000_000);
}

fn run_args_error(args: &[&str]) -> String {
    let out = framelab()
        .arg("run")
        .args(args)
        .args(["--", "true"])
        .output()
        .unwrap();
    // Options that cannot go together: a usage error, as the parser's own.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    error_line(&out)
}

/// Runs recorded into one file without variants are listed without offering `compare`,
/// which refuses such a file ("only one variant"); a run in full is offered.
#[test]
fn a_file_of_plain_runs_does_not_offer_a_comparison_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "again");
    for _ in 0..2 {
        let (out, _) = run_testprog(&dir, "again", &[], &["spans", "20"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let listing = framelab().arg("report").arg(&file).output().unwrap();
    let text = stdout(&listing);
    assert!(text.contains("--run-id 1"), "{text}");
    assert!(!text.contains("verdicts"), "{text}");
    let compare = framelab().arg("compare").arg(&file).output().unwrap();
    assert_eq!(compare.status.code(), Some(1), "{}", stdout(&compare));
}

/// `run --tag KEY=VALUE`: kept in the run file, shown in every report header (control
/// characters escaped, kept whole in JSON), carried into history, and `compare --by KEY`
/// makes a variant of each value. Bad tags are one line each.
#[test]
fn tags_are_kept_shown_carried_into_history_and_group_a_compare() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tagged.framelab");
    let record = |tags: &[&str], us: &str| {
        let mut cmd = framelab();
        cmd.arg("run");
        for tag in tags {
            cmd.args(["--tag", tag]);
        }
        let out = cmd
            .arg("-o")
            .arg(&file)
            .arg("--")
            .arg(example("testprog"))
            .args(["work", "10", us])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let first = record(&["build=debug", "note=two\x1b[2Jlines"], "300");
    let header = stdout(&first);
    assert!(
        header.contains("tags      build=debug · note=two\\x1b[2Jlines"),
        "{header}"
    );
    assert!(!header.contains('\x1b'), "{header}");
    record(&["build=release"], "100");
    record(&["build=debug"], "300");
    record(&["build=release"], "100");
    record(&[], "100");

    let json = framelab()
        .args(["report", "--format", "json", "--run-id", "1"])
        .arg(&file)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["tags"][0]["key"], "build");
    assert_eq!(
        report["tags"][1]["value"], "two\x1b[2Jlines",
        "JSON keeps it whole"
    );
    let markdown = framelab()
        .args(["report", "--format", "markdown", "--run-id", "2"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(stdout(&markdown).contains("- **tags** build=release"));

    // compare --by build: debug and release, two runs each; the untagged run is counted.
    let by = framelab()
        .args([
            "compare", "--by", "build", "--format", "json", "--show", "work.p50",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(by.status.code(), Some(0), "{}", stderr(&by));
    assert!(
        stderr(&by).contains("--by build: 1 run without a tag build left out"),
        "{}",
        stderr(&by)
    );
    let c: serde_json::Value = serde_json::from_str(&stdout(&by)).unwrap();
    assert_eq!(c["baseline"], "debug");
    assert_eq!(c["runs"]["debug"], 2);
    assert_eq!(c["runs"]["release"], 2);
    let none = framelab()
        .args(["compare", "--by", "cc"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        error_line(&none).contains("--by cc: no run tagged cc among the runs given"),
        "{}",
        stderr(&none)
    );

    // History keeps each run's tags with history add's own.
    let store = dir.path().join("h.sqlite");
    let add = framelab()
        .args([
            "history",
            "add",
            "--commit",
            "c1",
            "--tag",
            "ci=nightly",
            "--store",
        ])
        .arg(&store)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(add.status.code(), Some(0), "{}", stderr(&add));
    let export = framelab()
        .args(["history", "export", "--format", "csv", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let csv = stdout(&export);
    assert!(csv.contains("build=debug;ci=nightly;note=two"), "{csv}");
    assert!(csv.contains("build=release;ci=nightly"), "{csv}");

    // Bad tags: one line each, nothing recorded.
    for (tags, said) in [
        (&["nokey"][..], "--tag nokey: give it as KEY=VALUE"),
        (&["a=1", "a=2"][..], "--tag a is given twice (a=1 and a=2)"),
        (&["a b=1"][..], "the key before '=' must be letters"),
    ] {
        let mut cmd = framelab();
        cmd.arg("run");
        for tag in tags {
            cmd.args(["--tag", tag]);
        }
        let out = cmd
            .args(["-o", "/dev/null", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(error_line(&out).contains(said), "{}", stderr(&out));
    }
}
