//! Usage errors (an option or its value wrong, contradictory, or not applying) exit 2 with
//! one line, as the argument parser's own do; what framelab could not do exits 1.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// `framelab ARGS` in `dir`.
fn framelab_in(dir: &Path, args: &[&str]) -> Output {
    framelab().current_dir(dir).args(args).output().unwrap()
}

/// Imports `csv` (spans with frames) as `dir/NAME.framelab`.
fn imported_spans(dir: &Path, name: &str) -> PathBuf {
    let mut csv = String::from("start_us,dur_us,name,frame\n");
    for f in 0..20 {
        csv.push_str(&format!("{},200,decode,{f}\n", f * 1000));
    }
    let input = dir.join(format!("{name}.csv"));
    std::fs::write(&input, csv).unwrap();
    let path = dir.join(format!("{name}.framelab"));
    let out = framelab_in(
        dir,
        &[
            "import",
            input.to_str().unwrap(),
            "-o",
            path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// A bench of two quick variants, 2 runs each, as `dir/NAME.framelab`.
fn experiment(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.framelab"));
    let out = framelab_in(
        dir,
        &[
            "bench",
            "-n",
            "2",
            "--variant",
            "a=true",
            "--variant",
            "b=true",
            "-o",
            path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// Exit `code` and exactly one error line, no panic.
fn assert_refused(out: &Output, code: i32, what: &str) -> String {
    let text = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{what}: {text}");
    assert!(!text.contains("panicked"), "{what}: {text}");
    error_line(out)
}

#[test]
fn usage_errors_exit_2_with_one_line_and_failures_1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spans = imported_spans(d, "spans");
    let spans = spans.to_str().unwrap();
    let exp = experiment(d, "exp");
    let exp = exp.to_str().unwrap();
    let bt = d.join("bt.framelab");
    let out = framelab_in(
        d,
        &[
            "import",
            &fixture("bpftrace-0.17-maps.txt"),
            "-o",
            bt.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let bt = bt.to_str().unwrap();
    let wayland = fixture("wayland-1.21-simple-shm-client.log.gz");
    let presentmon = fixture("presentmon-v1-farcrynewdawn.csv");
    let csv = d.join("spans.csv");
    let csv = csv.to_str().unwrap();
    let damaged = d.join("damaged.framelab");
    std::fs::write(&damaged, "not a run file ".repeat(500)).unwrap();
    let damaged = damaged.to_str().unwrap();
    let usage: Vec<Vec<&str>> = vec![
        vec![
            "bench", "-n", "2", "--param", "codec", "--", "echo", "{codec}",
        ],
        vec![
            "bench", "-n", "2", "--param", "codec=", "--", "echo", "{codec}",
        ],
        vec![
            "bench", "-n", "2", "--param", "=a,b", "--", "echo", "{codec}",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--param",
            "codec=a,,b",
            "--",
            "echo",
            "{codec}",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--param",
            "codec=a,a",
            "--",
            "echo",
            "{codec}",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--param",
            "codec=a,b",
            "--",
            "echo",
            "x",
        ],
        vec![
            "bench", "-n", "2", "--param", "k=a", "--param", "k=b", "--", "echo", "{k}",
        ],
        vec!["bench", "-n", "2", "--variant", "a"],
        vec!["bench", "-n", "2", "--variant", "=echo"],
        vec![
            "bench",
            "-n",
            "2",
            "--variant",
            "a=echo",
            "--variant",
            "a=echo",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--variant",
            "a='echo",
            "--variant",
            "b=echo",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--metric",
            r"x:higher=(\d+",
            "--",
            "echo",
        ],
        vec!["bench", "-n", "2", "--metric", r"x=(\d+)", "--", "echo"],
        vec![
            "bench",
            "-n",
            "2",
            "--metric",
            r"fps:higher=(\d+)",
            "--",
            "echo",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--baseline",
            "c",
            "--variant",
            "a=echo",
            "--variant",
            "b=echo",
        ],
        vec![
            "bench",
            "-n",
            "2",
            "--show",
            "nosuch",
            "--variant",
            "a=echo",
            "--variant",
            "b=echo",
        ],
        vec!["compare", exp, "--show", "nosuch"],
        vec!["compare", exp, "--baseline", "nosuch"],
        vec![
            "hist", spans, "--stage", "decode", "--min", "5ms", "--max", "2ms",
        ],
        vec![
            "hist", spans, "--stage", "decode", "--min", "5ms", "--max", "5ms",
        ],
        vec!["hist", spans, "--by", "process", "--stage", "total"],
        vec!["hist", spans, "--by", "thread", "--stage", "interval"],
        vec![
            "hist", spans, "--stage", "decode", "--linear", "1ms", "--format", "json",
        ],
        vec![
            "hist", spans, "--stage", "decode", "--linear", "1ms", "--below", "4ms",
        ],
        vec!["hist", spans, "--stage", "nosuch"],
        vec!["hist", spans, "--unit", "ms"],
        vec!["hist", bt, "--linear", "1ms"],
        vec!["import", &wayland, "--pair", "commit", "-o", "/dev/null"],
        vec!["import", &wayland, "--tag", "novalue", "-o", "/dev/null"],
        vec!["import", &wayland, "--process", "foo", "-o", "/dev/null"],
        vec!["import", &wayland, "--key", "id", "-o", "/dev/null"],
        vec!["import", csv, "--map", "bogus=begin", "-o", "/dev/null"],
        vec![
            "import",
            &presentmon,
            "--frame-arg",
            "frame",
            "-o",
            "/dev/null",
        ],
    ];
    for args in &usage {
        assert_refused(&framelab_in(d, args), 2, &args.join(" "));
    }
    let failures: Vec<Vec<&str>> = vec![
        vec!["report", "missing.framelab"],
        vec!["hist", "missing.framelab"],
        vec!["report", damaged],
        vec!["compare", damaged, exp],
    ];
    for args in &failures {
        assert_refused(&framelab_in(d, args), 1, &args.join(" "));
    }
}

/// A run on both sides of a comparison was compared silently (identical data read as
/// "equivalent"): refused, naming the run.
#[test]
fn the_same_run_on_both_sides_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), "exp");
    let exp = exp.to_str().unwrap();
    let out = framelab_in(
        dir.path(),
        &[
            "compare",
            "--variant",
            &format!("a={exp}:1,2"),
            "--variant",
            &format!("b={exp}:2,3"),
        ],
    );
    let line = assert_refused(&out, 2, "shared run");
    assert!(
        line.contains("run 2 of") && line.contains("two sides"),
        "{line}"
    );
    let apart = framelab_in(
        dir.path(),
        &[
            "compare",
            "--variant",
            &format!("a={exp}:1,2"),
            "--variant",
            &format!("b={exp}:3,4"),
        ],
    );
    assert!(apart.status.success(), "{}", stderr(&apart));
}

/// `--resume` with other variants said "-n RUNS is required", and another `--fps` "run
/// options": each names what differs, as docs/bench.md says.
#[test]
fn a_resume_with_other_options_names_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), "exp");
    let exp = exp.to_str().unwrap();
    for (given, named) in [
        (["--variant", "x=true"], "variants"),
        (["--fps", "60"], "--fps"),
    ] {
        let mut args = vec!["bench", "--resume", "-o", exp];
        args.extend(given);
        let line = assert_refused(&framelab_in(dir.path(), &args), 2, &args.join(" "));
        assert!(line.contains(named), "{line}");
        assert!(!line.contains("-n RUNS"), "{line}");
    }
}

/// A variant that fails every run exited 1 advising "record more runs": the bench ends as
/// one with failed runs does (3), lists the runs, and says how that variant's runs failed
/// and which one to look at.
#[test]
fn a_variant_that_fails_every_run_ends_the_bench_as_failed_runs_do() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("crash.framelab");
    let out = framelab_in(
        dir.path(),
        &[
            "bench",
            "-n",
            "2",
            "--shell",
            "--variant",
            "ok=true",
            "--variant",
            "bad=exit 7",
            "-o",
            exp.to_str().unwrap(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(!err.contains("record more runs"), "{err}");
    let line = (err.lines())
        .find(|l| l.contains("every run of variant 'bad' failed"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("2 runs") && line.contains('7'), "{line}");
    assert!(
        line.contains("framelab report") && line.contains("--run-id"),
        "{line}"
    );
    assert!(err.contains("2 runs failed"), "{err}");
    assert!(!stdout(&out).trim().is_empty(), "the runs are listed");
    // Nothing to compare: the file is pointed to with report, not compare.
    assert!(!err.contains("framelab compare"), "{err}");
}
