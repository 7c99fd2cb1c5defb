//! Hostile strings and absurd numbers (issue 11 items 9–12): names that drive the terminal,
//! flags that wrapped or allocated without end, inputs without end, trailing garbage.

mod common;

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
    // `--prepare false` stops a build that would start the runs at the first.
    let mut args = vec!["bench", "-n", "10000", "--prepare", "false"]
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
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
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
