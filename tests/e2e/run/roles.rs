//! Per-role CPU in comparisons: a command that hands work to a watched daemon, judged on the
//! command's CPU and the daemon's separately (the "codec × path" table of issue 12).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::json::row;
use common::*;
use serde_json::Value;

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn median(row: &Value, side: &str) -> f64 {
    row[side]["median"].as_f64().unwrap()
}

/// The decoder daemon on two FIFOs in `dir`, once it has said it is ready.
fn start_daemon(python: &str, dir: &Path) -> (Started, PathBuf, PathBuf) {
    let (request, reply) = (dir.join("request"), dir.join("reply"));
    for fifo in [&request, &reply] {
        let status = Command::new("mkfifo").arg(fifo).status().unwrap();
        assert!(status.success());
    }
    let daemon = start_ready(
        Command::new(python)
            .arg(data("decoderd.py"))
            .args([&request, &reply]),
    );
    (daemon, request, reply)
}

#[test]
fn a_watched_daemons_cpu_is_compared_apart_from_the_commands() {
    let Some(python) = python_executable() else {
        eprintln!("skipped: no python3 to run the daemon");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (daemon, request, reply) = start_daemon(&python, dir.path());
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

/// The seed's table — codec × path: wall, the command's CPU, the daemon's CPU, load, cores —
/// from one `framelab compare --format markdown`, over a real bench of a real process tree.
/// The structure (variants, parameter values, roles, tables) is the bench's own; the timings
/// are then set to fixed values in the file so that the whole Markdown is a snapshot.
#[test]
fn the_codec_by_path_table_is_one_compare() {
    let Some(python) = python_executable() else {
        eprintln!("skipped: no python3 to run the daemon");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (daemon, request, reply) = start_daemon(&python, dir.path());
    let job = |path: &str| {
        format!(
            "{path}={python} {} {} {} {{codec}} {path}",
            data("decode.py"),
            request.display(),
            reply.display()
        )
    };
    let file = dir.path().join("codecs.framelab");
    let out = framelab()
        .args(["bench", "-n", "3", "--param", "codec=h264,hevc,av1"])
        .args(["--watch-pid", &daemon.0.id().to_string()])
        .args(["--variant", &job("cpu"), "--variant", &job("daemon")])
        .args(["--format", "json", "--show", "cpu.decoderd", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The daemon did the av1 decodes of the daemon path: 60 ms each, a clock tick either way.
    let c: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let av1 = c["sweeps"][0]["rows"][2]["medians"][1].as_f64().unwrap();
    assert!(
        (0.05..0.075).contains(&av1),
        "daemon CPU, av1 by the daemon: {av1} s"
    );

    let temp = format!("{}/", dir.path().display());
    set_fixed_timings(&file, &[(&python, "python3"), (&data(""), ""), (&temp, "")]);
    let md = framelab()
        .args(["compare", "--format", "markdown", "--show"])
        .arg("wall,cpu.command,cpu.decoderd,load,cores")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(md.status.code(), Some(0), "{}", stderr(&md));
    let md = stdout(&md).replace(&file.display().to_string(), "codecs.framelab");
    framelab::snapshot::check("compare_codec_by_path.md", &md);
}

/// Gives every run of the codec bench fixed timings — wall, the command's CPU and the
/// daemon's, by codec, path and repetition (1% apart), and a quiet machine — and rewrites the
/// paths in its commands.
fn set_fixed_timings(file: &Path, paths: &[(&str, &str)]) {
    let db = rusqlite::Connection::open(file).unwrap();
    let runs: Vec<(i64, String, String, i64)> = db
        .prepare("SELECT run_id, variant, params_json, repetition FROM experiment_runs")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(runs.len(), 18);
    for (run, variant, params, repetition) in runs {
        let cost_ms = match serde_json::from_str::<Value>(&params).unwrap()["codec"]
            .as_str()
            .unwrap()
        {
            "h264" => 20.0,
            "hevc" => 40.0,
            _ => 60.0,
        };
        let (own_ms, daemon_ms) = if variant == "cpu" {
            (cost_ms, 0.2)
        } else {
            (5.0, cost_ms)
        };
        let spread = 1.0 + 0.01 * repetition as f64;
        let ns = |ms: f64| (ms * spread * 1e6).round() as i64;
        let interpreter_ms = 30.0;
        let wall = ns(60.0 + own_ms + daemon_ms);
        db.execute(
            "UPDATE runs SET window_start_ns = 0, window_end_ns = ?2 WHERE run_id = ?1",
            (run, wall),
        )
        .unwrap();
        db.execute(
            "UPDATE processes SET user_ns = 0, sys_ns = 0, wall_ns = ?2, cpu_resolution_ns = 1000 \
             WHERE run_id = ?1",
            (run, wall),
        )
        .unwrap();
        db.execute(
            "UPDATE processes SET user_ns = ?2 WHERE run_id = ?1 AND role = 'command'",
            (run, ns(interpreter_ms + own_ms)),
        )
        .unwrap();
        let watched = db
            .execute(
                "UPDATE processes SET user_ns = ?2 WHERE run_id = ?1 AND role = 'watched'",
                (run, ns(daemon_ms)),
            )
            .unwrap();
        assert_eq!(watched, 1, "run {run} has the daemon");
    }
    // The machine as it was: how busy it was, and the CPU time the hypervisor or interrupts
    // took from every task, are not part of the table.
    db.execute(
        "UPDATE fingerprints SET load_avg_1m = 0.1, cpu_mhz = 3000",
        [],
    )
    .unwrap();
    db.execute(
        "UPDATE framelab SET value = json_remove(value, '$.cpu_taken') \
         WHERE key LIKE 'session_facts.%'",
        [],
    )
    .unwrap();
    for (path, written) in paths {
        for (table, column) in [("experiments", "spec_json"), ("runs", "command_json")] {
            db.execute(
                &format!("UPDATE {table} SET {column} = replace({column}, ?1, ?2)"),
                [path, written],
            )
            .unwrap();
        }
    }
}
