//! Options given together: each combination does what the docs say, or is refused with one
//! line and a non-zero exit before anything runs, never silently ignored.

use crate::common;

use common::json::framelab_json;
use common::*;
use std::path::{Path, PathBuf};

/// One error line containing `needle`, a non-zero exit, no panic.
fn refused(out: &std::process::Output, needle: &str) -> String {
    assert_ne!(out.status.code(), Some(0), "{}", stderr(out));
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
    let line = error_line(out);
    assert!(line.contains(needle), "expected '{needle}' in: {line}");
    line
}

fn bench(dir: &Path, args: &[&str], marker: &Path) -> std::process::Output {
    framelab()
        .current_dir(dir)
        .arg("bench")
        .args(args)
        .arg("--")
        .arg("touch")
        .arg(marker)
        .output()
        .unwrap()
}

/// A bench of one command and no --param lists its runs instead of comparing them: the
/// options only a comparison uses were ignored after every run had been done (exit 0, no
/// export written). Now refused before the first run.
#[test]
fn a_bench_of_one_variant_refuses_comparison_options() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let export = dir.path().join("c.json");
    let export = export.to_str().unwrap();
    for (option, value) in [
        ("--export-json", export),
        ("--export-csv", export),
        ("--export-markdown", export),
        ("--format", "csv"),
        ("--format", "html"),
        ("--baseline", "touch"),
        ("--baseline-value", "1"),
        ("--show", "wall"),
        ("--noise", "5%"),
        ("--resamples", "500"),
    ] {
        let out = bench(
            dir.path(),
            &["-n", "2", "-o", "one.framelab", option, value],
            &marker,
        );
        let line = refused(&out, "one variant and no --param");
        assert!(line.contains(option), "{line}");
        assert!(!marker.exists(), "{option}: the bench ran before refusing");
        assert!(!Path::new(export).exists(), "{option}");
        assert!(!dir.path().join("one.framelab").exists(), "{option}");
    }
    // What a listing does use is fine: --format markdown, json.
    let out = bench(
        dir.path(),
        &["-n", "2", "-o", "/dev/null", "--format", "json"],
        &marker,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists());
}

/// A --warmup as long as --duration was refused only when the first run started, after
/// every --setup (a build, say) had run.
#[test]
fn a_bench_whose_warmup_outlasts_its_runs_is_refused_before_setup() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let setup = dir.path().join("setup");
    let out = bench(
        dir.path(),
        &[
            "-n",
            "2",
            "--warmup",
            "2s",
            "--duration",
            "1s",
            "-o",
            "/dev/null",
            "--setup",
            &format!("touch {}", setup.display()),
        ],
        &marker,
    );
    refused(&out, "must be shorter than --duration");
    assert!(!setup.exists(), "--setup ran before the refusal");
    assert!(!marker.exists());
}

/// --history adds the kept run file's runs: with -o /dev/null the run was measured and
/// silently left out of the history (exit 0, an empty store).
#[test]
fn history_with_no_run_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let marker = dir.path().join("ran");
    let out = framelab()
        .args(["run", "--history", store, "-o", "/dev/null", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let line = refused(&out, "keeps no file");
    assert!(line.contains("-o FILE"), "{line}");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(!marker.exists(), "the command ran before the refusal");
    let out = bench(
        dir.path(),
        &["-n", "2", "--history", store, "-o", "/dev/null"],
        &marker,
    );
    refused(&out, "keeps no file");
    assert!(!marker.exists(), "the bench ran before the refusal");
    // A store named as the run file was created there (history tables in the -o path),
    // then the run refused it as "not a framelab run file".
    let file = dir.path().join("r.framelab");
    let f = file.to_str().unwrap();
    let out = run(&["run", "-o", f, "--history", f, "--", "true"]);
    refused(&out, "is the run file (-o)");
    assert!(
        !file.exists(),
        "a history store was created at the run file's path"
    );
}

/// Outside a git repository run --history cannot know the commit; the line said to give
/// --commit SHA, an option run and bench do not have.
#[test]
fn history_outside_git_says_how_to_add_the_run_later() {
    let dir = tempfile::tempdir().unwrap();
    let out = framelab()
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .args([
            "run",
            "--history",
            "h.sqlite",
            "-o",
            "r.framelab",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let line = refused(&out, "not inside a git repository");
    assert!(
        line.contains("framelab history add FILE --commit SHA"),
        "{line}"
    );
}

/// --top sets the rows of the text tables; svg, folded, speedscope and JSON hold every
/// function, and --top was silently ignored there. folded and speedscope of two files.
#[test]
fn profile_top_is_refused_where_every_function_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "p", &["--profile=99"], &["spans", "50"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = path.to_str().unwrap();
    for format in ["svg", "folded", "speedscope", "json"] {
        let out = run(&["profile", path, "--top", "3", "--format", format]);
        let line = refused(&out, "--top 3");
        assert!(line.contains(&format!("--format {format}")), "{line}");
    }
    // Two files with --run-id are still a diff: the line said to pick a run with --run-id.
    for format in ["folded", "speedscope"] {
        let out = run(&["profile", path, path, "--run-id", "1", "--format", format]);
        refused(&out, "two files are a diff: give one run file");
    }
}

/// --baseline and --baseline-value name what the comparison at the end starts from: a
/// variant or value the bench does not have was refused after every run had been done.
/// A --param that no command names ran the same command at every value, its sweep table
/// of "changes" all noise. Both refused before the first run now.
#[test]
fn a_bench_refuses_a_baseline_or_parameter_it_cannot_use_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let two = |extra: &[&str]| {
        let mut args = vec!["bench", "-n", "2", "-o", "/dev/null"];
        args.extend_from_slice(&["--variant", "a=true", "--variant"]);
        let b = format!("b={touch}");
        let mut cmd = framelab();
        cmd.current_dir(dir.path()).args(&args).arg(b).args(extra);
        cmd.output().unwrap()
    };
    let line = refused(
        &two(&["--baseline", "zz"]),
        "--baseline zz: no such variant",
    );
    assert!(line.contains("a, b"), "{line}");
    refused(
        &two(&["--baseline-value", "3"]),
        "this bench has 2 variants",
    );
    assert!(!marker.exists(), "the bench ran before refusing");

    let sweep = |extra: &[&str], word: &str| {
        framelab()
            .current_dir(dir.path())
            .args(["bench", "-n", "2", "-o", "/dev/null", "--param", "n=1,2"])
            .args(extra)
            .args(["--", "touch"])
            .arg(format!("{}{word}", marker.display()))
            .output()
            .unwrap()
    };
    refused(
        &sweep(&["--baseline-value", "3"], "{n}"),
        "n takes the values 1, 2",
    );
    refused(
        &sweep(&["--baseline-value", "k=1"], "{n}"),
        "no parameter 'k'",
    );
    let line = refused(&sweep(&[], ""), "--param n: no command names {n}");
    assert!(line.contains("put {n} where the value goes"), "{line}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the bench ran before refusing"
    );
    // Named, the sweep runs, and --baseline-value picks one of its values.
    let out = sweep(&["--baseline-value", "2"], "{n}");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("ran1").exists() && dir.path().join("ran2").exists());
}

/// --ready-timeout bounds the wait for a --ready condition: without one (a service is
/// ready as soon as it started, or there is no service) it was silently ignored.
#[test]
fn ready_timeout_needs_a_ready_condition() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let out = framelab()
        .args([
            "run",
            "--ready-timeout",
            "5s",
            "-o",
            "/dev/null",
            "--",
            "touch",
        ])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--ready <NAME=HOW>"),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists());
}

/// An experiment named as one variant (`--variant NAME=FILE`) pooled every run of the file:
/// its warmup runs (never compared otherwise) and the runs of all its variants and
/// parameter values, under one name. Now warmup runs stay out, and pooling variants needs
/// the runs picked by id.
#[test]
fn a_named_experiment_keeps_its_warmup_runs_out_and_is_not_pooled_silently() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.framelab");
    let out = framelab()
        .args(["bench", "-n", "2", "--warmup-runs", "1", "--format", "json"])
        .args(["--variant", "a=true", "--variant", "b=sleep 0.01", "-o"])
        .arg(&exp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let plain = dir.path().join("plain.framelab");
    for _ in 0..2 {
        let out = framelab()
            .args(["run", "-o"])
            .arg(&plain)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let (e, p) = (exp.to_str().unwrap(), plain.to_str().unwrap());
    let out = run(&[
        "compare",
        "--variant",
        &format!("x={e}"),
        "--variant",
        &format!("y={p}"),
    ]);
    let line = refused(&out, "which one name would pool");
    assert!(line.contains("(a, b)") && line.contains(":3,5"), "{line}");
    // Runs 1 and 2 are the warmup round, 3 and 5 a's measured runs.
    let c = framelab_json(&[
        "compare",
        "--format",
        "json",
        "--variant",
        &format!("x={e}:1,3,5"),
        "--variant",
        &format!("y={p}"),
    ]);
    assert_eq!(
        c["runs"]["x"], 2,
        "the warmup run was compared: {}",
        c["runs"]
    );
    // Runs of an experiment picked by id: only the variants they are of are listed (the
    // others were listed with 0 runs, and the second file's b renamed exp:b).
    let c = framelab_json(&[
        "compare",
        "--format",
        "json",
        &format!("{e}:3,5"),
        &format!("{e}:4,6"),
    ]);
    assert_eq!(c["runs"], serde_json::json!({"a": 2, "b": 2}));
}

/// bench -o /dev/null of one variant listed its runs under the temporary file's name and
/// offered `framelab report /tmp/framelab-unkept-…/run.framelab --run-id 1`, a file
/// already removed.
#[test]
fn an_unkept_bench_listing_offers_no_file_to_read() {
    let out = run(&["bench", "-n", "2", "-o", "/dev/null", "--", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("framelab-unkept"), "{text}");
    assert!(!text.contains("framelab report"), "{text}");
    assert!(text.contains("not kept"), "{text}");
    let doc = framelab_json(&[
        "bench",
        "-n",
        "2",
        "-o",
        "/dev/null",
        "--format",
        "json",
        "--",
        "true",
    ]);
    assert_eq!(doc["file"], "/dev/null");
    // A comparison (a sweep) names no temporary file either, nor do its exports.
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("c.json");
    let out = run(&[
        "bench",
        "-n",
        "2",
        "-o",
        "/dev/null",
        "--param",
        "n=1,2",
        "--export-json",
        export.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "true {n}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("framelab-unkept"),
        "{}",
        stdout(&out)
    );
    let exported = std::fs::read_to_string(&export).unwrap();
    assert!(!exported.contains("framelab-unkept"), "{exported}");
    assert!(exported.contains("/dev/null (not kept)"), "{exported}");
}

/// demo's --warmup-from with --warmup 0s changed nothing (run and bench refuse it without a
/// --warmup; demo's default warmup is what it counts from when none is given).
#[test]
fn demo_warmup_from_with_no_warmup_is_refused() {
    let out = run(&[
        "demo",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--warmup-from",
        "launch",
        "-o",
        "/dev/null",
    ]);
    refused(&out, "--warmup is 0s");
}

/// --profile stores the stacks in the run file; with -o /dev/null they were sampled,
/// symbolized and thrown away, the line saying "see framelab profile /tmp/…" of a removed
/// file. --keep-output's output likewise.
#[test]
fn profile_or_keep_output_with_no_run_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let m = marker.to_str().unwrap();
    for args in [
        vec!["run", "--profile", "-o", "/dev/null", "--", "touch", m],
        vec![
            "bench",
            "-n",
            "2",
            "--profile",
            "-o",
            "/dev/null",
            "--",
            "touch",
            m,
        ],
        vec![
            "demo",
            "--duration",
            "300ms",
            "--profile",
            "-o",
            "/dev/null",
        ],
    ] {
        let out = run(&args);
        refused(&out, "--profile stores the sampled stacks in the run file");
        assert!(
            !stderr(&out).contains("framelab-unkept"),
            "{}",
            stderr(&out)
        );
    }
    // --keep-output keeps the output in the run file only: captured and thrown away.
    for command in ["run", "bench"] {
        let mut args = vec![command];
        if command == "bench" {
            args.extend(["-n", "2"]);
        }
        args.extend(["--keep-output", "-o", "/dev/null", "--", "touch", m]);
        let out = run(&args);
        refused(
            &out,
            "--keep-output keeps the command's output in the run file",
        );
    }
    assert!(!marker.exists(), "a command ran before the refusal");
}

/// `run -o` into a bench's experiment file added a run of no variant, never compared,
/// which compare then called "a bench stopped mid-run".
#[test]
fn a_run_into_an_experiment_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.framelab");
    let e = exp.to_str().unwrap();
    let out = run(&["bench", "-n", "2", "-o", e, "--", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let marker = dir.path().join("ran");
    let out = run(&["run", "-o", e, "--", "touch", marker.to_str().unwrap()]);
    refused(&out, "holds a bench's experiment");
    assert!(!marker.exists());
    let out = run(&["demo", "--duration", "300ms", "-o", e]);
    refused(&out, "holds a bench's experiment");
    assert_eq!(framelab::store::list_runs(&exp).unwrap().len(), 2);
}

/// A bench experiment at `path`: variants `a` and `b` (both `true`), two runs each.
fn a_b_experiment(path: &str) {
    let variants = ["--variant", "a=true", "--variant", "b=true"];
    let out = run(&[&["bench", "-n", "2", "-o", path][..], &variants].concat());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `bench --resume -o FILE` with run options but no variants went on with the stored
/// options, the ones given silently ignored (with variants given, a difference is refused).
#[test]
fn resume_refuses_options_that_differ_even_without_variants() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.framelab");
    let e = exp.to_str().unwrap();
    a_b_experiment(e);
    for extra in [
        vec!["--warmup", "5s"],
        vec!["--fps", "30"],
        vec!["-n", "3"],
        vec!["--duration", "1s"],
    ] {
        let mut args = vec!["bench", "--resume", "-o", e];
        args.extend(extra.iter().copied());
        refused(&run(&args), "the options given differ from the experiment");
    }
    // The same values as stored, or none: it resumes (nothing left to run).
    for extra in [vec![], vec!["-n", "2"]] {
        let mut args = vec!["bench", "--resume", "-o", e];
        args.extend(extra.iter().copied());
        let out = run(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    }
    assert_eq!(framelab::store::list_runs(&exp).unwrap().len(), 4);
}

/// compare -o FILE or --export-* FILE where FILE is the experiment compared wrote the
/// comparison over it (the experiment destroyed); report refuses that already. Two outputs
/// naming one file wrote one over the other.
#[test]
fn a_comparison_is_never_written_over_what_it_compares() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.framelab");
    let e = exp.to_str().unwrap();
    a_b_experiment(e);
    let other_name = dir.path().join(".").join("exp.framelab");
    let other = other_name.to_str().unwrap();
    for (option, target) in [
        ("-o", e),
        ("--export-json", e),
        ("--export-csv", other),
        ("--export-markdown", e),
    ] {
        let out = run(&["compare", e, option, target]);
        refused(&out, "a file being compared");
        assert_eq!(
            framelab::store::list_runs(&exp).unwrap().len(),
            4,
            "{option}"
        );
    }
    let c = dir.path().join("c.json");
    let c = c.to_str().unwrap();
    refused(
        &run(&["compare", e, "-o", c, "--export-json", c]),
        "-o and --export-json both name",
    );
    // bench: an export over its own experiment file (-o).
    let new = dir.path().join("new.framelab");
    let n = new.to_str().unwrap();
    let out = run(&[
        "bench",
        "-n",
        "2",
        "--variant",
        "a=true",
        "--variant",
        "b=true",
        "-o",
        n,
        "--export-json",
        n,
    ]);
    refused(&out, "a file being compared");
    assert!(!new.exists());
}

/// run/demo --html naming the run file (-o): refused after the run (the command ran and the
/// run was kept, the line saying "give another -o"); now before, naming --html.
#[test]
fn an_html_page_over_the_run_file_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.framelab");
    let f = file.to_str().unwrap();
    let marker = dir.path().join("ran");
    let out = run(&[
        "run",
        "-o",
        f,
        "--html",
        f,
        "--",
        "touch",
        marker.to_str().unwrap(),
    ]);
    refused(&out, "--html");
    assert!(error_line(&out).contains("is the run file"));
    assert!(!marker.exists() && !file.exists());
    let out = run(&["demo", "--duration", "300ms", "-o", f, "--html", f]);
    refused(&out, "is the run file");
    assert!(!file.exists());
}

/// A real capture of tests/fixtures/import.
fn capture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/import/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `framelab import FILE -o DIR/NAME.framelab ARGS`, which must succeed; the run file.
fn imported(dir: &Path, file: &str, name: &str, args: &[&str]) -> String {
    let out_path = dir.join(format!("{name}.framelab"));
    let out = framelab()
        .args(["import", &capture(file), "-o", out_path.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out_path.to_string_lossy().into_owned()
}

/// An import option the detected format never reads (`--process` on a MangoHud log,
/// `--pair` on ffmpeg's log, `--map` on a Chrome trace) was ignored: exit 0, a run of
/// something else than what was asked. Now refused before anything is parsed or written.
#[test]
fn import_options_the_format_never_reads_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("x.framelab");
    let o = out_path.to_str().unwrap();
    for (file, option, value, format) in [
        (
            "mangohud-0.6.8-glxgears-llvmpipe.csv",
            "--process",
            "glxgears",
            "mangohud",
        ),
        ("ffmpeg-5.1-x264-encode.log", "--pair", "a:b", "ffmpeg"),
        ("ffmpeg-5.1-x264-encode.log", "--time-unit", "ns", "ffmpeg"),
        (
            "chrome-156-headless-startup.json.gz",
            "--map",
            "start=ts",
            "chrome",
        ),
        (
            "chrome-156-headless-startup.json.gz",
            "--time-unit",
            "us",
            "chrome",
        ),
        (
            "wayland-1.23-simple-shm-client.log.gz",
            "--key",
            "id",
            "wayland",
        ),
        (
            "wayland-1.23-simple-shm-client.log.gz",
            "--process",
            "weston",
            "wayland",
        ),
        ("bpftrace-0.17-maps.txt", "--frame-arg", "frame", "bpftrace"),
        (
            "presentmon-v1-farcrynewdawn.csv",
            "--frame-regex",
            "#(\\d+)",
            "presentmon",
        ),
    ] {
        let out = framelab()
            .args(["import", &capture(file), "-o", o, option, value])
            .output()
            .unwrap();
        let line = refused(&out, "does not apply");
        assert!(line.contains(option) && line.contains(format), "{line}");
        assert!(!out_path.exists(), "{file} {option}: a run was written");
    }
    // --pair of an event the trace lacks: a note and exit 0, the run without the stage.
    let out = framelab()
        .args([
            "import",
            &capture("chrome-156-headless-startup.json.gz"),
            "-o",
            o,
        ])
        .args(["--pair", "a:b"])
        .output()
        .unwrap();
    let line = refused(&out, "no event named \"a\"");
    assert!(line.contains("its events: "), "{line}");
    assert!(!out_path.exists());
    // Where they apply they still work.
    let run = imported(
        dir.path(),
        "wayland-1.23-simple-shm-client.log.gz",
        "w",
        &["--pair", "commit:release"],
    );
    assert!(load(Path::new(&run))
        .stages
        .iter()
        .any(|s| s == "commit:release"));
    // --frame-arg and --frame-regex: Chrome used the argument and ignored the regex.
    let out = framelab()
        .args([
            "import",
            &capture("chrome-156-headless-startup.json.gz"),
            "-o",
            o,
        ])
        .args(["--frame-arg", "frame", "--frame-regex", "#(\\d+)"])
        .output()
        .unwrap();
    assert_conflict(&out);
}

/// `hist --min/--max/--linear/--buckets/--by` on a run holding only imported histograms
/// (bpftrace) printed them unchanged with their own buckets, exit 0: the options ignored.
#[test]
fn hist_layout_options_on_imported_histograms_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported(dir.path(), "bpftrace-0.17-maps.txt", "b", &[]);
    for args in [
        &["--min", "1ms"][..],
        &["--max", "1ms"],
        &["--linear", "1ms"],
        &["--buckets", "5"],
        &["--by", "thread"],
    ] {
        let out = framelab().args(["hist", &run]).args(args).output().unwrap();
        let line = refused(&out, "only imported histograms");
        assert!(line.contains(args[0]), "{line}");
        assert!(stdout(&out).is_empty());
    }
    let out = framelab().args(["hist", &run]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("@"), "{}", stdout(&out));
}

/// `export --format csv` of a run with no spans (an import of bpftrace histograms) wrote a
/// header alone, exit 0.
#[test]
fn a_csv_export_of_a_run_without_spans_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported(dir.path(), "bpftrace-0.17-maps.txt", "b", &[]);
    let csv = dir.path().join("b.csv");
    let out = framelab()
        .args([
            "export",
            &run,
            "--format",
            "csv",
            "-o",
            csv.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    refused(&out, "has no spans");
    assert!(!csv.exists());
    // A trace keeps the run's description (its histograms): still written.
    let json = dir.path().join("b.json");
    let out = framelab()
        .args([
            "export",
            &run,
            "--format",
            "chrome",
            "-o",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// whatif: a stage given twice to --stage-scale was scaled by the product, to --move put on
/// the last thread named; --unpaced on a run with no target changed nothing (the what-if
/// column equal to the model of the run, exit 0); a run with no spans was said to lack
/// thread ids "as PresentMon and MangoHud logs".
#[test]
fn whatif_options_that_repeat_or_change_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported(dir.path(), "ffmpeg-5.1-transcode-av.log", "ff", &[]);
    let whatif = |args: &[&str]| {
        framelab()
            .args(["whatif", &run])
            .args(args)
            .output()
            .unwrap()
    };
    let line = refused(
        &whatif(&[
            "--stage-scale",
            "flush_video=0.5",
            "--stage-scale",
            "flush_video=2",
        ]),
        "twice",
    );
    assert!(
        line.contains("--stage-scale") && line.contains("flush_video"),
        "{line}"
    );
    let line = refused(
        &whatif(&["--move", "flush_video=a", "--move", "flush_video=b"]),
        "twice",
    );
    assert!(line.contains("--move"), "{line}");
    refused(&whatif(&["--unpaced"]), "no target fps");
    let ok = whatif(&[
        "--stage-scale",
        "flush_video=0.5",
        "--stage-scale",
        "encode_video=2",
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    // With a target, --unpaced leaves the pacer out.
    let paced = imported(
        dir.path(),
        "ffmpeg-5.1-transcode-av.log",
        "paced",
        &["--fps", "60"],
    );
    let out = framelab()
        .args(["whatif", &paced, "--unpaced"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let hist = imported(dir.path(), "bpftrace-0.17-maps.txt", "b", &[]);
    let out = framelab().args(["whatif", &hist]).output().unwrap();
    let line = refused(&out, "no spans");
    assert!(!line.contains("PresentMon"), "{line}");
}

/// `history add/show --store RUNFILE`: an SQL error ("table runs already exists"), and show
/// advised `history add RUN --store RUNFILE`, which fails the same way.
#[test]
fn a_history_store_that_is_a_run_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported(dir.path(), "ffmpeg-5.1-x264-encode.log", "ff", &[]);
    let before = std::fs::read(&run).unwrap();
    let out = framelab()
        .args([
            "history", "add", &run, "--store", &run, "--commit", "abc123",
        ])
        .output()
        .unwrap();
    refused(&out, "is a framelab run file, not a history store");
    for sub in ["show", "check"] {
        let out = framelab()
            .args(["history", sub, "--store", &run])
            .output()
            .unwrap();
        refused(&out, "is a framelab run file, not a history store");
    }
    // run --history RUNFILE: refused before the command runs (inside git, as the test is).
    let marker = dir.path().join("ran");
    let kept = dir.path().join("new.framelab");
    let out = framelab()
        .args(["run", "--history", &run, "-o", kept.to_str().unwrap(), "--"])
        .args(["touch", marker.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let line = refused(&out, "is a framelab run file, not a history store");
    assert!(!line.contains("--store"), "run has no --store: {line}");
    // --store "" was SQLite's private temporary database: "1 run added to  at commit",
    // exit 0, nothing kept.
    let out = framelab()
        .args(["history", "add", &run, "--store", "", "--commit", "abc123"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is empty"), "{}", stderr(&out));
    assert!(!marker.exists() && !kept.exists());
    assert_eq!(std::fs::read(&run).unwrap(), before);
}

/// A history store in `dir` (h.sqlite) holding `run`'s runs at commit abc123.
fn store_holding(dir: &Path, run: &str) -> PathBuf {
    let store = dir.join("h.sqlite");
    let out = framelab()
        .args(["history", "add", run, "--store"])
        .arg(&store)
        .args(["--commit", "abc123"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    store
}

/// `history show --html STORE` wrote the trend page over the history store, and `history
/// export -o STORE` the export (csv or parquet): exit 0, every value lost. Both refused now.
#[test]
fn history_pages_and_exports_are_never_written_over_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported(dir.path(), "ffmpeg-5.1-x264-encode.log", "ff", &[]);
    let store = store_holding(dir.path(), &run);
    let s = store.to_str().unwrap();
    let before = std::fs::read(&store).unwrap();
    let out = framelab()
        .args(["history", "show", "--store", s, "--html", s])
        .output()
        .unwrap();
    refused(&out, "over the history store");
    assert!(stdout(&out).is_empty());
    for format in ["csv", "parquet"] {
        let out = framelab()
            .args([
                "history", "export", "--store", s, "--format", format, "-o", s,
            ])
            .output()
            .unwrap();
        refused(&out, "over the history store");
    }
    assert_eq!(std::fs::read(&store).unwrap(), before);
}

/// `history check --metric TYPO --fail-on-regression` checked no series and passed (exit
/// 0); `history export --metric TYPO` wrote a header alone. show already refused.
#[test]
fn history_filters_that_match_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported(dir.path(), "ffmpeg-5.1-x264-encode.log", "ff", &[]);
    let store = store_holding(dir.path(), &run);
    let s = store.to_str().unwrap();
    let out = framelab()
        .args([
            "history",
            "check",
            "--store",
            s,
            "--metric",
            "nosuch",
            "--fail-on-regression",
        ])
        .output()
        .unwrap();
    let line = refused(&out, "has no values for metric nosuch");
    assert!(line.contains("fps"), "the metrics it has: {line}");
    let out = framelab()
        .args(["history", "check", "--store", s, "--machine", "nosuch"])
        .output()
        .unwrap();
    refused(&out, "has no values for machine nosuch");
    let csv = dir.path().join("h.csv");
    let out = framelab()
        .args([
            "history", "export", "--store", s, "--format", "csv", "--branch", "nosuch",
        ])
        .args(["-o", csv.to_str().unwrap()])
        .output()
        .unwrap();
    refused(&out, "has no values for branch nosuch");
    assert!(!csv.exists());
}

/// `sources --pid P` with both sources that read P off (threads, and NVML's per-process
/// utilisation) read nothing of P, exit 0. With nvml on, --pid still asks the GPU about it
/// (telemetry_nvml checks that with the threads source off).
#[test]
fn sources_pid_with_threads_and_nvml_off_is_refused() {
    let me = std::process::id().to_string();
    let out = framelab()
        .args(["sources", "--pid", &me, "--no-sample", "threads"])
        .args(["--no-sample", "nvml", "--count", "1"])
        .output()
        .unwrap();
    refused(&out, "--pid is read by the threads and nvml sources");
    assert!(stdout(&out).is_empty());
    // Every source switched off: "0 readings", exit 0.
    let mut all = framelab();
    all.args(["sources", "--count", "1"]);
    for source in ["nvml", "amdgpu", "cpufreq", "rapl", "threads"] {
        all.args(["--no-sample", source]);
    }
    let out = all.output().unwrap();
    refused(&out, "every source off");
    assert!(stdout(&out).is_empty());
}

/// `import -o EXPERIMENT` appended a run of no variant to a bench's experiment (run and demo
/// refuse it); `import A A` read the capture twice into one run, every frame counted twice.
#[test]
fn an_import_into_an_experiment_or_of_one_file_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.framelab");
    let e = exp.to_str().unwrap();
    a_b_experiment(e);
    let before = std::fs::read(&exp).unwrap();
    let capture = capture("presentmon-v1-farcrynewdawn.csv");
    let out = framelab()
        .args(["import", &capture, "-o", e])
        .output()
        .unwrap();
    refused(&out, "holds a bench's experiment");
    assert_eq!(std::fs::read(&exp).unwrap(), before);

    let other_name = format!(
        "{}/tests/../tests/fixtures/import/presentmon-v1-farcrynewdawn.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let twice = dir.path().join("twice.framelab");
    for second in [capture.as_str(), other_name.as_str()] {
        let out = framelab()
            .args(["import", &capture, second, "-o", twice.to_str().unwrap()])
            .output()
            .unwrap();
        refused(&out, "is given twice");
        assert!(!twice.exists());
    }
}

/// `history add` of a file with no measured run (a failed run; an import of histograms
/// only, whose empty window gave a "wall 0 s" value) said "0 runs added", exit 0, and
/// created the store; the histograms-only run was added with that one value.
#[test]
fn history_add_of_nothing_measured_is_refused_before_the_store_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let failed = dir.path().join("failed.framelab");
    let out = framelab()
        .args(["run", "-o", failed.to_str().unwrap(), "--", "false"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let hists = imported(dir.path(), "bpftrace-0.17-maps.txt", "b", &[]);
    let store = dir.path().join("h.sqlite");
    let s = store.to_str().unwrap();
    for file in [failed.to_str().unwrap(), hists.as_str()] {
        let out = framelab()
            .args(["history", "add", file, "--store", s, "--commit", "abc123"])
            .output()
            .unwrap();
        refused(&out, "no measured run to add");
        assert!(!store.exists(), "{file}: the store was created");
    }
    // Beside a measured run: that one is added, the others counted.
    let good = imported(dir.path(), "ffmpeg-5.1-x264-encode.log", "ff", &[]);
    let out = framelab()
        .args([
            "history", "add", &hists, &good, "--store", s, "--commit", "abc123",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 run added"), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 run not added"), "{}", stderr(&out));
}

/// `timers --interval 1ns` measured 20 cells in which every deadline had passed before the
/// wait began (every strategy "0.05 µs late", "cheapest: spin"); `--interval 1ms,1000us`
/// measured the same interval twice. Both refused before measuring.
#[test]
fn timers_intervals_below_a_microsecond_or_repeated_are_refused() {
    for (interval, code, needle) in [
        ("1ns", 2, "least allowed, 1us"),
        ("999ns", 2, "least allowed, 1us"),
        ("1ms,1000us", 2, "given twice"),
        ("0ms", 2, "is zero"),
    ] {
        let out = framelab()
            .args(["timers", "--interval", interval, "--duration", "10ms"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{interval}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(needle),
            "{interval}: {}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "{interval}: measured anyway");
    }
    let out = framelab()
        .args([
            "timers",
            "--interval",
            "1us",
            "--duration",
            "1ms",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `export -o OTHER.framelab`, `history export -o RUN.framelab`, `history show --html
/// RUN.framelab`, `report -o RUN.framelab`: a text or CSV written over another run file (or
/// an experiment, or a history store), exit 0, its runs gone.
#[test]
fn no_export_or_page_is_written_over_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let source = imported(dir.path(), "ffmpeg-5.1-x264-encode.log", "src", &[]);
    let victim = imported(dir.path(), "ffmpeg-5.1-transcode-av.log", "victim", &[]);
    let exp = dir.path().join("exp.framelab");
    let e = exp.to_str().unwrap();
    a_b_experiment(e);
    let store = store_holding(dir.path(), &source);
    let s = store.to_str().unwrap();
    let before = std::fs::read(&victim).unwrap();
    let store_before = std::fs::read(&store).unwrap();
    let attempts: [&[&str]; 8] = [
        &["compare", e, "--export-json", &victim],
        &["compare", e, "--format", "csv", "-o", &victim],
        &["export", &source, "--format", "csv", "-o", &victim],
        &["export", &source, "--format", "chrome", "-o", s],
        &["report", &source, "-o", &victim],
        &[
            "history", "export", "--store", s, "--format", "csv", "-o", &victim,
        ],
        &[
            "history", "export", "--store", s, "--format", "parquet", "-o", &victim,
        ],
        &["history", "show", "--store", s, "--html", &victim],
    ];
    for args in attempts {
        let out = framelab().args(args).output().unwrap();
        refused(&out, "it is an SQLite database");
        assert!(stdout(&out).is_empty(), "{args:?}: worked before refusing");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    assert_eq!(std::fs::read(&store).unwrap(), store_before);
}

/// `--tag` is checked the same on run, bench and import, before anything runs or is read;
/// a bench's `VARIANT:` service or pin naming no variant, and `compare --by` on a bench's
/// experiment, are refused in one line.
#[test]
fn tags_and_per_variant_options_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    for args in [
        &["--tag", "novalue"][..],
        &["--tag", "k=1", "--tag", "k=2"][..],
    ] {
        let mut all = vec!["-n", "2", "--param", "x=1,2"];
        all.extend_from_slice(args);
        let out = framelab()
            .current_dir(dir.path())
            .arg("bench")
            .args(&all)
            .args([
                "--",
                "sh",
                "-c",
                &format!("touch {} {{x}}", marker.display()),
            ])
            .output()
            .unwrap();
        refused(&out, "--tag");
        assert!(!marker.exists());
    }
    let csv = dir.path().join("frames.csv");
    std::fs::write(&csv, "frame,stage,start_ns,dur_ns\n0,a,0,10\n").unwrap();
    let import = framelab()
        .current_dir(dir.path())
        .args(["import", "--tag", "a=1", "--tag", "a=2"])
        .arg(&csv)
        .output()
        .unwrap();
    refused(&import, "--tag a is given twice");
    assert!(!dir.path().join("frames.framelab").exists());
    // Given once, it is kept with the imported run.
    let tagged = framelab()
        .current_dir(dir.path())
        .args(["import", "--tag", "source=trace 1"])
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(tagged.status.code(), Some(0), "{}", stderr(&tagged));
    assert!(stdout(&tagged).contains("tags      source=trace 1"));
    let run = load(&dir.path().join("frames.framelab"));
    assert_eq!(run.meta.tags[0].value, "trace 1");

    let pin = framelab()
        .current_dir(dir.path())
        .args(["bench", "-n", "2", "--pin", "v9:0"])
        .args(["--variant", "v1=true", "--variant", "v2=true"])
        .output()
        .unwrap();
    refused(
        &pin,
        "--pin v9:0: no variant is named v9; the variants are v1, v2",
    );

    let experiment = dir.path().join("e.framelab");
    let bench = framelab()
        .args([
            "bench",
            "-n",
            "2",
            "--variant",
            "a=true",
            "--variant",
            "b=true",
            "-o",
        ])
        .arg(&experiment)
        .output()
        .unwrap();
    assert_eq!(bench.status.code(), Some(0), "{}", stderr(&bench));
    let by = framelab()
        .args(["compare", "--by", "build"])
        .arg(&experiment)
        .output()
        .unwrap();
    refused(&by, "is a bench's experiment, compared by its variants");
}
