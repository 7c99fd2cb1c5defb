//! Per-role CPU in comparisons: a command that hands work to a watched daemon, judged on the
//! command's CPU and the daemon's separately (the "codec × path" table of issue 12).

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter itself, not a version manager's shim that starts a shell first.
fn python() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn row<'a>(c: &'a Value, metric: &str) -> &'a Value {
    c["groups"][0]["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric} in {c}"))
}

fn median(row: &Value, side: &str) -> f64 {
    row[side]["median"].as_f64().unwrap()
}

struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_watched_daemons_cpu_is_compared_apart_from_the_commands() {
    let Some(python) = python() else {
        eprintln!("skipped: no python3 to run the daemon");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (request, reply) = (dir.path().join("request"), dir.path().join("reply"));
    for fifo in [&request, &reply] {
        let status = Command::new("mkfifo").arg(fifo).status().unwrap();
        assert!(status.success());
    }
    let mut daemon = Daemon(
        Command::new(&python)
            .arg(data("decoderd.py"))
            .args([&request, &reply])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Ready once it has named itself and said so.
    let mut line = String::new();
    std::io::BufReader::new(daemon.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");

    let client = |daemon_ms: u32| {
        format!(
            "{python} {} {} {} 30 {daemon_ms}",
            data("decode_client.py"),
            request.display(),
            reply.display()
        )
    };
    let file = dir.path().join("daemon.framelab");
    let out = framelab()
        .args(["bench", "-n", "3", "--seed", "1", "--format", "json"])
        .args(["--watch-pid", &daemon.0.id().to_string()])
        .arg("--variant")
        .arg(format!("light={}", client(40)))
        .arg("--variant")
        .arg(format!("heavy={}", client(160)))
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c: Value = serde_json::from_str(&stdout(&out)).unwrap();

    // The daemon's CPU follows the work asked of it: 40 ms, then 160 ms (± a clock tick
    // at each edge of the window where /proc is the source).
    let daemon_cpu = row(&c, "cpu.decoderd");
    let (light, heavy) = (
        median(daemon_cpu, "baseline"),
        median(daemon_cpu, "variant"),
    );
    assert!((0.02..0.07).contains(&light), "daemon, light: {light} s");
    assert!((0.13..0.20).contains(&heavy), "daemon, heavy: {heavy} s");
    // The command burns the same 30 ms (plus the interpreter's start) in both.
    let command_cpu = row(&c, "cpu.command");
    let (a, b) = (
        median(command_cpu, "baseline"),
        median(command_cpu, "variant"),
    );
    assert!(a >= 0.03 && b >= 0.03, "command: {a} s, {b} s");
    assert!(
        (a - b).abs() < (heavy - light) / 2.0,
        "command: {a} s vs {b} s"
    );
    // Load is CPU over the window, per role; the whole run's CPU is their sum.
    assert!(median(row(&c, "load.decoderd"), "variant") > 0.0);
    let total = median(row(&c, "cpu"), "variant");
    assert!(
        total >= heavy + b - 0.03,
        "total {total} s, parts {heavy} + {b}"
    );
    // Cores are load ÷ 100: shown when asked for, not judged twice by default.
    let keys = c["metrics"].to_string();
    assert!(!keys.contains("\"cores"), "{keys}");

    // The seed table, with no SQL: wall, each role's CPU, load and cores, as Markdown.
    let md = framelab()
        .args(["compare", "--format", "markdown"])
        .args([
            "--metric",
            "wall,cpu.command,cpu.decoderd,load,cores,cores.decoderd",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(md.status.code(), Some(0), "{}", stderr(&md));
    let md = stdout(&md);
    for label in [
        "| CPU, command | s |",
        "| CPU, decoderd | s |",
        "| cores | cores |",
        "| cores, decoderd | cores |",
    ] {
        assert!(md.contains(label), "{label} in\n{md}");
    }
    let csv = framelab()
        .args(["compare", "--format", "csv", "--metric", "cores.decoderd"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        stdout(&csv).contains(",cores.decoderd,cores,lower_is_better,"),
        "{}",
        stdout(&csv)
    );
}
