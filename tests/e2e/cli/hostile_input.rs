//! Hostile strings and absurd numbers (issue 11 items 9–12): names that drive the terminal,
//! flags that wrapped or allocated without end, inputs without end, trailing garbage.

use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;

use common::{error_line, example, framelab, stderr, stdout};

/// The stage name `testprog hostile` records: retitle the window, clear the screen.
const ESCAPES: &str = "\x1b]0;pwned\x07\x1b[2J";

fn output_of(args: &[&str], dir: &Path) -> std::process::Output {
    framelab().args(args).current_dir(dir).output().unwrap()
}

/// Nothing a terminal acts on, and small: the 10 KB name is shown cut.
fn assert_safe(what: &str, out: &std::process::Output) {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !bytes.contains(&0x1b) && !bytes.contains(&0x07),
            "{what}: a control byte reached {stream}"
        );
        assert!(
            bytes.len() < 40_000,
            "{what}: {} bytes on {stream}",
            bytes.len()
        );
    }
}

#[test]
fn names_that_drive_the_terminal_are_shown_escaped_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let testprog = example("testprog");
    // Two files of two runs each: a comparison needs two runs a side.
    for file in ["a.framelab", "b.framelab"] {
        for _ in 0..2 {
            let out = output_of(
                &["run", "-o", file, "--", &testprog, "hostile", "20"],
                dir.path(),
            );
            assert_safe("run", &out);
            assert!(
                stdout(&out).contains(r"\x1b]0;pwned\x07\x1b[2J"),
                "{}",
                stdout(&out)
            );
        }
    }
    for args in [
        &["report", "a.framelab", "--run-id", "1"][..],
        &[
            "report",
            "a.framelab",
            "--run-id",
            "1",
            "--format",
            "markdown",
        ],
        &["report", "a.framelab"],
        &["hist", "a.framelab"],
        &["hist", "a.framelab", "--by", "thread"],
        &["hist", "a.framelab", "--linear", "50us"],
        &["compare", "a.framelab", "b.framelab", "--resamples", "200"],
        &[
            "compare",
            "a.framelab",
            "b.framelab",
            "--resamples",
            "200",
            "--format",
            "markdown",
        ],
        &[
            "compare",
            "a.framelab",
            "b.framelab",
            "--resamples",
            "200",
            "--format",
            "csv",
        ],
    ] {
        assert_safe(&args.join(" "), &output_of(args, dir.path()));
    }
    let markdown = stdout(&output_of(
        &[
            "report",
            "a.framelab",
            "--run-id",
            "1",
            "--format",
            "markdown",
        ],
        dir.path(),
    ));
    assert!(
        markdown.contains(r"\\x1b\]0;pwned\\x07\\x1b\[2J"),
        "{markdown}"
    );
    // A stage asked for by a name that is not there lists the stages, escaped.
    let out = output_of(&["hist", "a.framelab", "--stage", "nope"], dir.path());
    assert!(
        !out.stderr.contains(&0x1b) && out.stderr.len() < 2000,
        "{}",
        stderr(&out)
    );

    // JSON and the run file keep every name whole.
    let json: serde_json::Value = serde_json::from_slice(
        &output_of(
            &["report", "a.framelab", "--run-id", "1", "--format", "json"],
            dir.path(),
        )
        .stdout,
    )
    .unwrap();
    let names: Vec<&str> = json["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&ESCAPES), "{names:?}");
    assert!(names.contains(&"L".repeat(10_000).as_str()));
    let run = framelab::store::load_run(&dir.path().join("a.framelab"), Some(1)).unwrap();
    assert!(run.stages.iter().any(|s| s == ESCAPES));
    assert!(run.threads.iter().any(|t| t.name.contains('\x1b')));
}

#[test]
fn imported_names_are_escaped_too() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(10_000);
    let trace = format!(
        r#"[{{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{{"name":"\u001b[2Jthread"}}}},
            {{"ph":"M","name":"process_name","pid":1,"args":{{"name":"proc\u001b]0;t\u0007"}}}},
            {{"ph":"X","name":"\u001b]0;pwned\u0007 #1","pid":1,"tid":2,"ts":0,"dur":5}},
            {{"ph":"X","name":"{long} #1","pid":1,"tid":2,"ts":5,"dur":5}},
            {{"ph":"X","name":"\u001b]0;pwned\u0007 #2","pid":1,"tid":2,"ts":16,"dur":5}},
            {{"ph":"X","name":"{long} #2","pid":1,"tid":2,"ts":21,"dur":5}}]"#
    );
    std::fs::write(dir.path().join("t.json"), trace).unwrap();
    let args = [
        "import",
        "t.json",
        "--frame-regex",
        r"#(\d+)",
        "-o",
        "t.framelab",
    ];
    let out = output_of(&args, dir.path());
    assert_safe("import", &out);
    for format in ["text", "markdown"] {
        assert_safe(
            format,
            &output_of(&["report", "t.framelab", "--format", format], dir.path()),
        );
    }
    assert_safe(
        "hist",
        &output_of(&["hist", "t.framelab", "--by", "thread"], dir.path()),
    );
}

/// A usage error (exit 2) whose line names `limit`. In a directory of its own: a build
/// that accepted the value would run and leave a run file.
fn refused(args: &[&str], limit: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = output_of(args, dir.path());
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    let line = error_line(&out);
    assert!(line.contains(limit), "{args:?}: {line}");
}

#[test]
fn absurd_numbers_are_refused_naming_their_limit() {
    // Each of these was accepted: wrapped to a negative or huge value, or allocated.
    refused(&["run", "--warmup", "3000000h", "--", "true"], "168h");
    refused(&["run", "--budget", "3000000h", "--", "true"], "1000s");
    refused(&["run", "--duration", "3000000h", "--", "true"], "168h");
    refused(
        &["bench", "-n", "2", "--duration", "3000000h", "--", "true"],
        "168h",
    );
    refused(&["run", "--fps", "1e308", "--", "true"], "0.001 to 1000000");
    refused(&["import", "--fps", "1e308", "x.csv"], "0.001 to 1000000");
    refused(&["compare", "--resamples", "0", "a", "b"], "100 to 1000000");
    refused(
        &["compare", "--resamples", "1000000000000", "a", "b"],
        "100 to 1000000",
    );
    refused(&["sources", "--pid", "4294967295"], "pid_max");
    refused(&["run", "--live", "1ns", "--", "true"], "100ms");
    refused(
        &["run", "--ring-records", "1000", "--", "true"],
        "power of two",
    );
    refused(&["run", "--sample-every", "3000000h", "--", "true"], "1h");
    refused(&["timers", "--duration", "3000000h"], "1h");
    refused(&["report", "--run-id=-1", "x.framelab"], "from 1 to");
    refused(&["import", "--max-input", "5TiB", "x.csv"], "1TiB");
    // Last: a build without the bound allocates its schedule (2.6 GB and more) first.
    refused(&["bench", "-n", "1000000000", "--", "true"], "2 to 10000");
}

#[test]
fn a_bench_of_too_many_runs_is_refused_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    // `--setup false` stops a build that would start the runs before the first.
    let mut args = vec!["bench", "-n", "10000", "--setup", "false"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    for v in 0..11 {
        args.push("--variant".into());
        args.push(format!("v{v}=true"));
    }
    let out = framelab()
        .args(&args)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        error_line(&out).contains("the most is 100000"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file made"
    );
}

#[test]
fn an_endless_input_stops_at_the_limit() {
    let out = framelab()
        .args([
            "import",
            "/dev/zero",
            "--max-input",
            "8MiB",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("more than 8.0 MiB") && line.contains("--max-input"),
        "{line}"
    );
}

#[test]
fn a_decompression_bomb_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // 100 gzip members of 1 MiB of zeros each: about 100 KB that inflate to 100 MiB.
    let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    member.write_all(&vec![0u8; 1 << 20]).unwrap();
    let member = member.finish().unwrap();
    let bomb = dir.path().join("bomb.csv.gz");
    std::fs::write(&bomb, member.repeat(100)).unwrap();
    let out = framelab()
        .arg("import")
        .arg(&bomb)
        .args(["-o", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("decompression bomb") && line.contains("--max-ratio"),
        "{line}"
    );
}

#[test]
fn sigterm_ends_a_run_with_live_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.framelab");
    let mut child = framelab()
        .args(["run", "--live", "100ms", "-o"])
        .arg(&path)
        .arg("--")
        .arg(example("testprog"))
        .arg("forever")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first interval is printed the run is under way.
    let mut err = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("--- 0.0–0.1 s ---") {
        let n = err.read(&mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let pid = child.id();
    // SAFETY: signals the framelab this test started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    // A framelab that never stopped would hang the test: a guard kills it.
    let guard = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(60));
        // SAFETY: as above; harmless once it has exited.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    err.read_to_end(&mut seen).unwrap();
    let status = child.wait().unwrap();
    drop(guard);
    assert!(status.code().is_some(), "killed, not stopped: {status:?}");
    let run = common::load(&path);
    assert!(!run.spans.is_empty());
    assert_ne!(run.meta.end_reason, framelab::model::EndReason::Unfinished);
}

#[test]
fn trailing_garbage_after_a_chrome_trace_is_counted_in_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open("tests/fixtures/import/chrome-156-headless-startup.json.gz").unwrap(),
    )
    .read_to_end(&mut bytes)
    .unwrap();
    bytes.extend_from_slice(b"\n}}garbage");
    std::fs::write(dir.path().join("t.json"), &bytes).unwrap();
    let out = output_of(&["import", "t.json", "-o", "t.framelab"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("9 bytes after the end of the trace"),
        "{}",
        stdout(&out)
    );
}

/// Waits for `child` at most `limit`, killing it past that: a hang fails the test instead
/// of hanging it. The limit is a guard far above the deadline under test, never a measure.
fn wait_bounded(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> std::process::Output {
    if common::exited_within(&mut child, limit).is_none() {
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        panic!("still running after {limit:?}: {}", stderr(&out));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_postgres_server_that_never_answers_ends_history_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (out, run) = common::run_testprog(&dir, "a", &[], &["spans", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Accepts every connection and holds it open without a byte in answer.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.push(connection);
        }
    });
    let store = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=2");
    let run = run.to_str().unwrap();
    for args in [
        &["history", "show", "--store", &store][..],
        &["history", "check", "--store", &store],
        &["history", "add", run, "--commit", "c1", "--store", &store],
    ] {
        let child = framelab()
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_bounded(child, std::time::Duration::from_secs(120));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let line = error_line(&out);
        assert!(
            line.contains(&format!("127.0.0.1:{port}"))
                && line.contains("did not answer: it is hung or is not PostgreSQL")
                && line.contains("(waited 2 s)"),
            "{args:?}: {line}"
        );
    }
}

#[test]
fn a_huge_json_metric_file_is_read_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    // 64 MB of JSON: 32 million zeros, then the value. Held as values it takes over 1 GB.
    let mut text = Vec::with_capacity(66 << 20);
    text.extend_from_slice(b"{\"pad\": [0");
    text.extend_from_slice(&b",0".repeat(32 << 20));
    text.extend_from_slice(b"], \"v\": 42.5}");
    std::fs::write(dir.path().join("result.src"), &text).unwrap();
    drop(text);
    let mut command = framelab();
    command
        .args(["run", "--shell", "--metric", "v:lower=json:result.json:$.v"])
        .args(["-o", "m.framelab", "--", "cp result.src result.json"])
        .current_dir(dir.path());
    // Far less than the document as values; plenty for framelab streaming through it.
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 512 << 20,
                rlim_max: 512 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = common::load(&dir.path().join("m.framelab"));
    assert_eq!(run.metrics[0].value, Some(42.5), "{:?}", run.metrics[0]);
}

#[test]
fn a_wayland_stamp_gone_back_is_a_bad_line_not_a_wrap() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open("tests/fixtures/import/wayland-1.23-simple-shm-client.log.gz").unwrap(),
    )
    .read_to_string(&mut log)
    .unwrap();
    std::fs::write(dir.path().join("clean.log"), &log).unwrap();
    // Line 300's stamp set to 0: 18 minutes back, far from where the counter wraps.
    let mut lines: Vec<String> = log.lines().map(str::to_owned).collect();
    let close = lines[299].find(']').unwrap();
    lines[299] = format!("[      0.000{}", &lines[299][close..]);
    std::fs::write(dir.path().join("edited.log"), lines.join("\n") + "\n").unwrap();

    let import = |file: &str, extra: &[&str]| {
        let mut args = vec!["import", file, "-o"];
        let out_name = format!("{file}.framelab");
        args.push(&out_name);
        args.extend_from_slice(extra);
        (output_of(&args, dir.path()), dir.path().join(&out_name))
    };
    let (out, _) = import("edited.log", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("edited.log:300:") && line.contains("no wrap") && line.contains("--skip-bad"),
        "{line}"
    );

    let window = |path: &Path| {
        let run = common::load(path);
        run.meta.window_end_ns - run.meta.window_start_ns
    };
    let (out, clean) = import("clean.log", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, skipped) = import("edited.log", &["--skip-bad"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    assert!(printed.contains("skipped 1 bad record"), "{printed}");
    assert_eq!(common::load(&skipped).import.unwrap().skipped, 1);
    // The window stays the log's own, not 71 minutes longer.
    assert!(
        window(&skipped) <= window(&clean),
        "{} > {}",
        window(&skipped),
        window(&clean)
    );
}

/// Names that drive a terminal: OSC retitle ended by BEL, CSI clear, an 8-bit CSI (C1),
/// a backspace and a DEL.
const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[2J\u{9b}31m\x08\x7fx";

/// No byte a terminal acts on: C0 controls but newline and tab, DEL, C1 controls. JSON
/// (`json`) escapes C0 as JSON does and keeps DEL and C1 as text, as JSON may.
fn assert_no_controls(what: &str, out: &std::process::Output, json: bool) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let c0 = bytes
            .iter()
            .any(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || (b == 0x7f && !json));
        let c1 = String::from_utf8_lossy(bytes)
            .chars()
            .any(|c| ('\u{80}'..='\u{9f}').contains(&c));
        assert!(
            !c0 && (json || !c1),
            "{what}: a control reached {stream}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn hostile_names_reach_no_terminal_from_whatif_history_or_bench() {
    let dir = tempfile::tempdir().unwrap();
    let name = serde_json::to_string(HOSTILE).unwrap();
    let name = name.trim_matches('"');
    let mut events = Vec::new();
    for frame in 1..=20 {
        let t = frame * 100;
        events.push(format!(
            r#"{{"ph":"X","name":"{name} #{frame}","pid":1,"tid":2,"ts":{t},"dur":30}}"#
        ));
        events.push(format!(
            r#"{{"ph":"X","name":"b #{frame}","pid":1,"tid":3,"ts":{},"dur":40}}"#,
            t + 30
        ));
    }
    events.push(format!(
        r#"{{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{{"name":"{name}"}}}}"#
    ));
    std::fs::write(
        dir.path().join("t.json"),
        format!("[{}]", events.join(",\n")),
    )
    .unwrap();
    let out = output_of(
        &[
            "import",
            "t.json",
            "--frame-regex",
            r"#(\d+)",
            "-o",
            "t.framelab",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for format in ["text", "markdown", "json"] {
        let out = output_of(
            &["whatif", "t.framelab", "--depth", "2", "--format", format],
            dir.path(),
        );
        assert!(out.status.success(), "whatif {format}: {}", stderr(&out));
        assert_no_controls(&format!("whatif {format}"), &out, format == "json");
    }

    // History: the commit and branch as given.
    let out = output_of(
        &[
            "history",
            "add",
            "t.framelab",
            "--commit",
            HOSTILE,
            "--branch",
            HOSTILE,
            "--store",
            "h.sqlite",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "history add: {}", stderr(&out));
    assert_no_controls("history add", &out, false);
    for format in ["text", "markdown", "json"] {
        let out = output_of(
            &["history", "show", "--store", "h.sqlite", "--format", format],
            dir.path(),
        );
        assert!(
            out.status.success(),
            "history show {format}: {}",
            stderr(&out)
        );
        assert_no_controls(&format!("history show {format}"), &out, format == "json");
        let out = output_of(
            &[
                "history", "check", "--store", "h.sqlite", "--format", format,
            ],
            dir.path(),
        );
        assert!(
            out.status.success(),
            "history check {format}: {}",
            stderr(&out)
        );
        assert_no_controls(&format!("history check {format}"), &out, format == "json");
    }

    // Bench: a variant of that name, its progress lines on stderr.
    let out = output_of(
        &[
            "bench",
            "-n",
            "2",
            "--variant",
            &format!("{HOSTILE}=true"),
            "--variant",
            "plain=true",
            "-o",
            "b.framelab",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "bench: {}", stderr(&out));
    assert_no_controls("bench", &out, false);
}

#[test]
fn spans_of_out_of_range_durations_are_counted_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = common::run_testprog(&dir, "s", &[], &["spans", "200"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = common::report_json(&path)["frames"].as_u64().unwrap();
    // The run rewritten with two spans changed: they are stored exactly, in wide blocks.
    let mut run = framelab::store::load_run(&path, None).unwrap();
    // The longest duration there is; an end past the clock's range.
    run.spans[100].dur_ns = i64::MAX;
    let frame = run.spans[100].frame;
    run.spans[120].start_ns = i64::MAX - 10;
    run.spans[120].dur_ns = 1000;
    let path = dir.path().join("edited.framelab");
    framelab::store::write_run(&path, &run).unwrap();
    let out = output_of(&["report", path.to_str().unwrap()], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("2 spans with a duration out of range skipped as invalid")
            && text.contains(&format!("the first: frame {frame}, ")),
        "{text}"
    );
    let json = common::report_json(&path);
    assert_eq!(json["negative_spans"], 2, "{json}");
    assert!(json["frames"].as_u64().unwrap() <= before);
}

#[test]
fn a_device_is_not_a_run_file_and_a_service_note_has_no_stray_label() {
    let out = framelab().args(["report", "/dev/zero"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(line.contains("/dev/zero is not a regular file"), "{line}");

    let dir = tempfile::tempdir().unwrap();
    let service = "stubborn=sh -c 'trap \"\" INT TERM; echo up; while :; do sleep 0.05; done'";
    let out = output_of(
        &[
            "run",
            "--grace",
            "200ms",
            "--service",
            service,
            "--ready",
            "stubborn=regex:up",
            "-o",
            "s.framelab",
            "--",
            "true",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = output_of(&["report", "s.framelab"], dir.path());
    let text = stdout(&out);
    assert!(text.contains("service stubborn ignored SIGINT"), "{text}");
    assert!(!text.contains("stdout: service"), "{text}");
}

#[test]
fn history_add_refuses_a_damaged_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let (out, a) = common::run_testprog(&dir, "a", &[], &["spans", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, b) = common::run_testprog(&dir, "b", &[], &["spans", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let add = |run: &Path| {
        output_of(
            &[
                "history",
                "add",
                run.to_str().unwrap(),
                "--commit",
                "c1",
                "--store",
                "h.sqlite",
            ],
            dir.path(),
        )
    };
    let out = add(&a);
    assert!(out.status.success(), "{}", stderr(&out));
    // A page no table owns, counted in the header: every read and write still works,
    // `PRAGMA quick_check` says "Page N: never used".
    let store = dir.path().join("h.sqlite");
    let mut bytes = std::fs::read(&store).unwrap();
    let pages = (bytes.len() / 4096) as u32;
    bytes.extend_from_slice(&[0u8; 4096]);
    bytes[28..32].copy_from_slice(&(pages + 1).to_be_bytes());
    std::fs::write(&store, &bytes).unwrap();

    let out = add(&b);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("h.sqlite is damaged")
            && line.contains("never used")
            && line.contains("nothing was added")
            && line.contains(".dump"),
        "{line}"
    );
    assert_eq!(
        std::fs::read(&store).unwrap(),
        bytes,
        "the store is untouched"
    );
}
