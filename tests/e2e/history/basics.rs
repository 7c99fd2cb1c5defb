//! `framelab history`: real runs of the real binary added to a SQLite store and to a real
//! PostgreSQL server (several writer processes at once), shown, exported, read back; a
//! write cut short leaves nothing; a newer schema and an unreachable server are one line.

use crate::common;
use crate::common::postgres as history_pg;

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use common::{error_line, framelab, run_testprog, stderr, stdout};

/// A real run of testprog (`spans N`), recorded by the real binary.
pub(super) fn record(dir: &tempfile::TempDir, name: &str, frames: u32) -> PathBuf {
    let (out, path) = run_testprog(dir, name, &[], &["spans", &frames.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// A copy of a run file as if recorded on another machine (its host renamed).
fn on_other_machine(run: &Path, copy: &Path, host: &str) -> PathBuf {
    std::fs::copy(run, copy).unwrap();
    let db = rusqlite::Connection::open(copy).unwrap();
    db.execute("UPDATE runs SET host_name = ?1", [host])
        .unwrap();
    copy.to_owned()
}

pub(super) fn history(args: &[&str]) -> Output {
    framelab()
        .arg("history")
        .args(args)
        .output()
        .expect("framelab runs")
}

pub(super) fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        stdout(&out),
        stderr(&out)
    );
    out
}

pub(super) fn add(store: &str, commit: &str, files: &[&Path]) -> Output {
    let mut args = vec![
        "add", "--store", store, "--commit", commit, "--branch", "main",
    ];
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    history(&args)
}

pub(super) fn show_json(store: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["show", "--format", "json", "--store", store];
    args.extend(extra);
    serde_json::from_str(&stdout(&ok(history(&args)))).unwrap()
}

/// The CSV export, read back: one record per value.
pub(super) fn export_csv(store: &str) -> Vec<csv::StringRecord> {
    let out = ok(history(&["export", "--format", "csv", "--store", store]));
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        framelab::history::export::COLUMNS
    );
    reader.records().map(Result::unwrap).collect()
}

fn run_ids(records: &[csv::StringRecord]) -> std::collections::BTreeSet<String> {
    records.iter().map(|r| r[0].to_owned()).collect()
}

/// "N runs added" (or "1 run added") from an add's stderr.
fn added(out: &Output) -> usize {
    let text = stderr(out);
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("framelab: ")?;
            let (n, tail) = rest.split_once(' ')?;
            (tail.starts_with("run added") || tail.starts_with("runs added"))
                .then(|| n.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no 'runs added' line in: {text}"))
}

/// Waits (bounded) for a path to exist: a process reached a point, not a time.
fn wait_for(path: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the writer ended ({status}) before it was mid-write");
        }
        assert!(Instant::now() < deadline, "the writer never got mid-write");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `history add` that stops inside its transaction after the first run's rows, until
/// `flag` is removed.
fn paused_add(store: &str, flag: &Path, files: &[&Path]) -> Child {
    let mut command = framelab();
    command
        .args([
            "history", "add", "--store", store, "--commit", "c9", "--branch", "main",
        ])
        .args(files)
        .env("FRAMELAB_HISTORY_TEST_PAUSE", flag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().expect("framelab starts")
}

#[test]
fn sqlite_store_adds_shows_exports_and_keeps_machines_apart() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 30);
    let b = record(&dir, "b", 30);
    let c = on_other_machine(&a, &dir.path().join("c.framelab"), "other-machine");
    let store = dir.path().join("h.sqlite").display().to_string();

    let first = ok(history(&[
        "add",
        "--store",
        &store,
        "--commit",
        "c1",
        "--branch",
        "main",
        "--tag",
        "ci=nightly",
        a.to_str().unwrap(),
    ]));
    assert_eq!(added(&first), 1);
    ok(add(&store, "c2", &[&b, &c]));
    let values = export_csv(&store).len();

    // Again: nothing new, and it says so.
    let again = ok(add(&store, "c2", &[&a, &b]));
    assert_eq!(added(&again), 0);
    assert!(
        stderr(&again).contains("already in history: 2 runs skipped"),
        "{}",
        stderr(&again)
    );
    assert_eq!(export_csv(&store).len(), values);

    // fps: one series per machine, never one series of both.
    let shown = show_json(&store, &["--metric", "fps"]);
    let series = shown["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "{shown:#}");
    assert_ne!(series[0]["machine"], series[1]["machine"]);
    let runs: Vec<u64> = series
        .iter()
        .map(|s| {
            s["commits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["runs"].as_u64().unwrap())
                .sum()
        })
        .collect();
    let mut sorted = runs.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [1, 2],
        "two runs on this machine, one on the other: {shown:#}"
    );
    let hosts: Vec<&str> = shown["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["hostname"].as_str().unwrap())
        .collect();
    assert!(hosts.contains(&"other-machine"), "{hosts:?}");
    // --machine by host name narrows to that machine.
    let other = show_json(&store, &["--machine", "other-machine", "--metric", "fps"]);
    assert_eq!(other["series"].as_array().unwrap().len(), 1);

    // The stage percentiles and CPU per frame compare knows are there, per run.
    let records = export_csv(&store);
    let metrics: std::collections::BTreeSet<&str> = records.iter().map(|r| &r[5]).collect();
    for m in [
        "fps",
        "a.p50",
        "b.p99",
        "total.p99",
        "cpu_per_frame",
        "peak_rss",
    ] {
        assert!(metrics.contains(m), "{m} missing from {metrics:?}");
    }
    assert_eq!(run_ids(&records).len(), 3);
    let tagged: Vec<&csv::StringRecord> =
        records.iter().filter(|r| &r[8] == "ci=nightly").collect();
    assert!(!tagged.is_empty() && tagged.iter().all(|r| &r[1] == "c1"));

    // Parquet, read back with the parquet crate: the same rows as the CSV.
    let parquet = dir.path().join("h.parquet");
    ok(history(&[
        "export",
        "--format",
        "parquet",
        "--store",
        &store,
        "-o",
        parquet.to_str().unwrap(),
    ]));
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    let reader = SerializedFileReader::new(std::fs::File::open(&parquet).unwrap()).unwrap();
    let rows: Vec<parquet::record::Row> = reader
        .get_row_iter(None)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), records.len());
    for (row, record) in rows.iter().zip(&records) {
        assert_eq!(row.get_string(0).unwrap(), &record[0]);
        assert_eq!(row.get_string(5).unwrap(), &record[5]);
        assert_eq!(
            row.get_double(6).unwrap(),
            record[6].parse::<f64>().unwrap()
        );
    }

    // The text table names the machine of each.
    let text = stdout(&ok(history(&[
        "show", "--store", &store, "--metric", "fps",
    ])));
    assert!(
        text.contains("other-machine") && text.contains("c2"),
        "{text}"
    );
}

#[test]
fn a_newer_schema_and_a_missing_store_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    let store = dir.path().join("h.sqlite").display().to_string();
    let missing = history(&["show", "--store", &store]);
    assert!(!missing.status.success());
    assert!(
        error_line(&missing).contains("no history at"),
        "{}",
        stderr(&missing)
    );
    assert!(!Path::new(&store).exists(), "a reader created the store");

    // Outside a git repository, the commit must be given; a tag must be KEY=VALUE.
    for (args, says) in [
        (
            vec!["add", "--store", &store, a.to_str().unwrap()],
            "--commit SHA",
        ),
        (
            vec![
                "add",
                "--store",
                &store,
                "--commit",
                "c1",
                "--tag",
                "oops",
                a.to_str().unwrap(),
            ],
            "KEY=VALUE",
        ),
    ] {
        let out = framelab()
            .current_dir(dir.path())
            .arg("history")
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(error_line(&out).contains(says), "{}", stderr(&out));
    }
    ok(add(&store, "c1", &[&a]));
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute("UPDATE framelab_history SET schema_version = 99", [])
        .unwrap();
    for out in [
        history(&["show", "--store", &store]),
        add(&store, "c1", &[&a]),
    ] {
        assert!(!out.status.success());
        let line = error_line(&out);
        assert!(
            line.contains("schema version 99") && line.contains("newer"),
            "{line}"
        );
    }
}

/// A mistyped scheme is refused, not taken for a file under `./postgress:/…` (the run
/// said added, and never reached the team's server); a directory is named as one.
#[test]
fn a_mistyped_url_and_a_directory_are_refused_as_stores() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    for url in [
        "postgress://u:secret@db.example/perf",
        "mysql://u@127.0.0.1/db",
    ] {
        let out = framelab()
            .current_dir(dir.path())
            .args(["history", "add", "--commit", "c1", "--history", url])
            .arg(&a)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let line = error_line(&out);
        assert!(line.contains("postgres://"), "{line}");
        assert!(!line.contains("secret"), "{line}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(':'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let out = add(&dir.path().display().to_string(), "c1", &[&a]);
    assert!(!out.status.success());
    assert!(
        error_line(&out).contains("is a directory"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unreachable_server_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://someone:secret@127.0.0.1:{port}/bench");
    let out = add(&url, "c1", &[&a]);
    assert!(!out.status.success());
    let line = error_line(&out);
    assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");
    assert!(line.to_lowercase().contains("refused"), "{line}");
    assert!(
        !line.contains("secret"),
        "the password is never printed: {line}"
    );
}

#[test]
fn a_sqlite_writer_killed_mid_write_leaves_no_partial_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    let b = record(&dir, "b", 10);
    let c = record(&dir, "c", 10);
    let store = dir.path().join("h.sqlite").display().to_string();
    ok(add(&store, "c1", &[&a]));
    let before = export_csv(&store);

    let flag = dir.path().join("mid-write");
    let mut writer = paused_add(&store, &flag, &[&b, &c]);
    wait_for(&flag, &mut writer);
    writer.kill().unwrap();
    writer.wait().unwrap();

    assert_eq!(export_csv(&store), before, "nothing of b or c");
    assert_eq!(added(&ok(add(&store, "c9", &[&b, &c]))), 2);
}

#[test]
fn run_and_bench_add_to_history_at_the_git_commit() {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["init", "-q", "-b", "trunk"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    ]);
    let head = git(&["rev-parse", "HEAD"]);
    let testprog = common::example("testprog");
    let run = framelab()
        .current_dir(dir.path())
        .args([
            "run",
            "--history",
            "h.sqlite",
            "-o",
            "r.framelab",
            "--",
            &testprog,
            "spans",
            "10",
        ])
        .output()
        .unwrap();
    let run = ok(run);
    assert_eq!(added(&run), 1);
    let bench = framelab()
        .current_dir(dir.path())
        .args([
            "bench",
            "-n",
            "2",
            "--history",
            "h.sqlite",
            "-o",
            "e.framelab",
        ])
        .args(["--variant", &format!("short={testprog} spans 10")])
        .args(["--variant", &format!("long={testprog} spans 20")])
        .output()
        .unwrap();
    let bench = ok(bench);
    assert_eq!(added(&bench), 4);

    let store = dir.path().join("h.sqlite").display().to_string();
    let records = export_csv(&store);
    assert_eq!(run_ids(&records).len(), 5);
    assert!(records.iter().all(|r| r[1] == head && &r[2] == "trunk"));
    // The experiment's runs are kept apart from the plain run by their variant.
    let metrics: std::collections::BTreeSet<&str> = records.iter().map(|r| &r[5]).collect();
    assert!(metrics.contains("fps"), "{metrics:?}");
    assert!(
        metrics.contains("short:fps") && metrics.contains("long:fps"),
        "{metrics:?}"
    );
}

#[test]
fn postgres_many_writers_at_once_match_sqlite() {
    let Some(server) = history_pg::server_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let r: Vec<PathBuf> = (1..=4)
        .map(|i| record(&dir, &format!("r{i}"), 10))
        .collect();
    let r5 = on_other_machine(&r[0], &dir.path().join("r5.framelab"), "fleet-02");
    let url = server.create_database("many");

    // Six writers at once, overlapping (and in opposite orders), each run at one commit.
    let groups: [(&str, Vec<&Path>); 6] = [
        ("c1", vec![&r[0], &r[1]]),
        ("c1", vec![&r[1], &r[0]]),
        ("c1", vec![&r[0], &r[1]]),
        ("c2", vec![&r[2], &r[3]]),
        ("c2", vec![&r[3], &r[2], &r5]),
        ("c2", vec![&r5]),
    ];
    let writers: Vec<Child> = groups
        .iter()
        .map(|(commit, files)| {
            framelab()
                .args([
                    "history", "add", "--store", &url, "--commit", commit, "--branch", "main",
                ])
                .args(files)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let total: usize = writers
        .into_iter()
        .map(|w| added(&ok(w.wait_with_output().unwrap())))
        .sum();
    assert_eq!(total, 5, "each run added exactly once");

    let sqlite = dir.path().join("h.sqlite").display().to_string();
    ok(add(&sqlite, "c1", &[&r[0], &r[1]]));
    ok(add(&sqlite, "c2", &[&r[2], &r[3], &r5]));
    assert_eq!(show_json(&url, &[]), show_json(&sqlite, &[]));
    assert_eq!(export_csv(&url), export_csv(&sqlite));
    let text = |store: &str| stdout(&ok(history(&["show", "--store", store])));
    assert_eq!(text(&url), text(&sqlite));
}

#[test]
fn postgres_killed_mid_write_leaves_no_partial_run() {
    let Some(server) = history_pg::server_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    let b = record(&dir, "b", 10);
    let c = record(&dir, "c", 10);
    let url = server.create_database("cut");
    ok(add(&url, "c1", &[&a]));
    let before = export_csv(&url);

    let flag = dir.path().join("mid-write");
    let mut writer = paused_add(&url, &flag, &[&b, &c]);
    wait_for(&flag, &mut writer);
    server.kill();
    std::fs::remove_file(&flag).unwrap();
    let out = writer.wait_with_output().unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains(&format!("127.0.0.1:{}", server.port)),
        "{line}"
    );

    server.start_again().unwrap();
    assert_eq!(export_csv(&url), before, "nothing of b or c");
    // Adding them again now works, and a run added twice is still once.
    assert_eq!(added(&ok(add(&url, "c9", &[&a, &b, &c]))), 2);

    // A store of a newer schema is refused on PostgreSQL too.
    server
        .client("cut")
        .batch_execute("UPDATE framelab_history SET schema_version = 99")
        .unwrap();
    let line = error_line(&history(&["show", "--store", &url]));
    assert!(
        line.contains("schema version 99") && line.contains("newer"),
        "{line}"
    );
}

/// An independent reader: DuckDB reads both exports alike. Optional: only where python3
/// has the duckdb module (pip install duckdb); skipped, saying so, elsewhere.
#[test]
fn duckdb_reads_the_parquet_and_csv_exports_alike() {
    let has_duckdb = std::process::Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_duckdb {
        println!("SKIPPED: python3 has no duckdb module: the exports were not read by DuckDB");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 20);
    let b = on_other_machine(&a, &dir.path().join("b.framelab"), "fleet-02");
    let store = dir.path().join("h.sqlite").display().to_string();
    ok(add(&store, "c1", &[&a, &b]));
    let parquet = dir.path().join("h.parquet");
    let csv = dir.path().join("h.csv");
    for (format, file) in [("parquet", &parquet), ("csv", &csv)] {
        ok(history(&[
            "export",
            "--format",
            format,
            "--store",
            &store,
            "-o",
            file.to_str().unwrap(),
        ]));
    }
    let script = format!(
        "import duckdb\n\
         q = \"SELECT run_id, commit, coalesce(branch, ''), machine, epoch(recorded_at)::BIGINT, metric, value, unit, coalesce(tags, '') FROM {{}} ORDER BY ALL\"\n\
         p = duckdb.sql(q.format(\"'{}'\")).fetchall()\n\
         c = duckdb.sql(q.format(\"read_csv('{}')\")).fetchall()\n\
         m = duckdb.sql(\"SELECT count(DISTINCT machine) FROM '{}' WHERE metric = 'fps'\").fetchall()[0][0]\n\
         print('same' if p == c else 'differ', len(p), m)\n",
        parquet.display(),
        csv.display(),
        parquet.display()
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    let out = ok(out);
    let rows = export_csv(&store).len();
    assert_eq!(
        stdout(&out).trim(),
        format!("same {rows} 2"),
        "{}",
        stderr(&out)
    );
}

/// A real run of testprog doing `us` µs of work a frame, dated `minute` minutes into the
/// history (runs of a test start within a second; a history's commits are minutes apart).
fn record_work(dir: &tempfile::TempDir, name: &str, us: u32, minute: u32) -> PathBuf {
    let (out, path) = run_testprog(dir, name, &[], &["work", "40", &us.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = rusqlite::Connection::open(&path).unwrap();
    let date = format!("2026-11-01T10:{minute:02}:00Z");
    db.execute("UPDATE runs SET started_at = ?1", [date])
        .unwrap();
    path
}

#[test]
fn check_names_the_commit_where_work_doubled_and_fails_ci_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite").display().to_string();
    // Six commits at 200 µs of work a frame, then six at 400 µs from commit c6 on.
    for i in 0..12u32 {
        let us = if i < 6 { 200 } else { 400 };
        let run = record_work(&dir, &format!("r{i}"), us, i);
        ok(add(&store, &format!("c{i}"), &[&run]));
    }
    let checked = history(&[
        "check", "--store", &store, "--metric", "work.p50", "--format", "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&ok(checked))).unwrap();
    let series = report["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{report:#}");
    let changes = series[0]["changes"].as_array().expect("checked");
    assert_eq!(changes.len(), 1, "{report:#}");
    assert_eq!(changes[0]["commit"], "c6", "{report:#}");
    assert_eq!(changes[0]["kind"], "regression", "{report:#}");
    assert!(
        changes[0]["relative_change"].as_f64().unwrap() > 0.5,
        "{report:#}"
    );

    // CI: a regression fails the check; among the newest 3 results it is not.
    let failed = history(&[
        "check",
        "--store",
        &store,
        "--metric",
        "work.p50",
        "--fail-on-regression",
    ]);
    assert_eq!(failed.status.code(), Some(1), "{}", stdout(&failed));
    assert!(stdout(&failed).contains("c6"), "{}", stdout(&failed));
    assert_eq!(series[0]["unit"], "microseconds", "{report:#}");
    // Before and after with their unit: about 200 µs, then about 400 µs.
    let row = (stdout(&failed).lines())
        .find(|l| l.contains("c6"))
        .map(str::to_owned)
        .unwrap();
    assert_eq!(row.matches(" µs").count(), 2, "{row}");
    let recent = history(&[
        "check",
        "--store",
        &store,
        "--metric",
        "work.p50",
        "--fail-on-regression",
        "--newest",
        "3",
    ]);
    assert_eq!(recent.status.code(), Some(0), "{}", stdout(&recent));

    // Too few points for a metric: said, with how many are needed, and no failure.
    let short = dir.path().join("short.sqlite").display().to_string();
    let run = record_work(&dir, "s", 200, 0);
    ok(add(&short, "c0", &[&run]));
    let out = ok(history(&[
        "check", "--store", &short, "--metric", "work.p50",
    ]));
    assert!(stdout(&out).contains("need 10"), "{}", stdout(&out));
}

/// One name for the store: `history` commands take `--history STORE`, as `run` and `bench`
/// do; `--store`, the name they had first, still works but is no longer shown.
#[test]
fn the_store_is_named_history_everywhere_and_store_is_a_hidden_alias() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    let store = dir.path().join("h.sqlite").display().to_string();
    let a = a.to_str().unwrap();
    ok(history(&[
        "add",
        a,
        "--history",
        &store,
        "--commit",
        "c1",
        "--branch",
        "main",
    ]));
    let shown = show_json(&store, &[]);
    let again = serde_json::from_str::<serde_json::Value>(&stdout(&ok(history(&[
        "show",
        "--format",
        "json",
        "--history",
        &store,
    ]))))
    .unwrap();
    assert_eq!(shown, again, "--store and --history name one store");
    for sub in ["add", "show", "check", "export"] {
        let help = stdout(&ok(history(&[sub, "--help"])));
        assert!(help.contains("--history <STORE>"), "history {sub}: {help}");
        assert!(!help.contains("--store"), "history {sub}: {help}");
    }
    for sub in ["run", "bench"] {
        let out = framelab().args([sub, "--help"]).output().unwrap();
        assert!(stdout(&out).contains("--history <STORE>"), "{sub}");
    }
}

/// `history add` of `run` to `url`, with the environment given (and no PGPASSWORD or
/// PGPASSFILE but those).
fn add_with_env(url: &str, run: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = framelab();
    command
        .args(["history", "add", "--store", url, "--commit", "c1"])
        .arg(run)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env_remove("PGSSLMODE")
        .env_remove("PGSSLROOTCERT");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

#[test]
fn postgres_over_tls_verifies_the_server_and_takes_the_password_from_the_environment() {
    let Some(server) = history_pg::server_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = record(&dir, "a", 10);
    let certs = tempfile::tempdir().unwrap();
    let ca = history_pg::make_ca(certs.path(), "ca").unwrap();
    let other_ca = history_pg::make_ca(certs.path(), "other").unwrap();
    server.create_database("tls");
    server.local_sql("CREATE ROLE alice LOGIN PASSWORD 'wonder:land'; GRANT ALL ON DATABASE tls TO alice; ALTER DATABASE tls OWNER TO alice");
    let port = server.port;
    // Before TLS is on: require is refused, saying the server takes no TLS.
    let out = add_with_env(
        &format!("postgres://alice@127.0.0.1:{port}/tls?sslmode=require"),
        &run,
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("server does not support TLS (sslmode=require)"),
        "{line}"
    );
    server.require_tls(certs.path(), "ca", "alice").unwrap();
    let url = |mode: &str, root: &Path| {
        format!(
            "postgres://alice@127.0.0.1:{port}/tls?sslmode={mode}&sslrootcert={}",
            root.display()
        )
    };

    // verify-full with the CA that signed the server's certificate, the password from
    // PGPASSWORD: added.
    let out = add_with_env(
        &url("verify-full", &ca),
        &run,
        &[("PGPASSWORD", "wonder:land")],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // Another CA: refused, one line naming the server and the certificate.
    let out = add_with_env(
        &url("verify-full", &other_ca),
        &run,
        &[("PGPASSWORD", "wonder:land")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains(&format!("127.0.0.1:{port}")) && line.contains("certificate"),
        "{line}"
    );

    // verify-ca checks the chain only: a URL naming a host the certificate does not (the
    // server reached at 127.0.0.1 through hostaddr) passes verify-ca, not verify-full.
    let elsewhere = |mode: &str| {
        format!(
            "postgres://alice@wrong.example:{port}/tls?hostaddr=127.0.0.1&sslmode={mode}&sslrootcert={}",
            ca.display()
        )
    };
    let password = [("PGPASSWORD", "wonder:land")];
    let out = add_with_env(&elsewhere("verify-ca"), &run, &password);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = add_with_env(&elsewhere("verify-full"), &run, &password);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("certificate failed verification: it does not name wrong.example")
            && line.contains("sslmode=verify-ca"),
        "{line}"
    );
    let out = add_with_env(&url("verify-ca", &other_ca), &run, &password);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(error_line(&out).contains("certificate"), "{}", stderr(&out));

    // No root file anywhere (a HOME without ~/.postgresql/root.crt): require encrypts
    // without checking the certificate; verify-full is refused before connecting, as libpq.
    let home = tempfile::tempdir().unwrap();
    let bare = |mode: &str| format!("postgres://alice@127.0.0.1:{port}/tls?sslmode={mode}");
    let home_password = [
        ("PGPASSWORD", "wonder:land"),
        ("HOME", home.path().to_str().unwrap()),
    ];
    let out = add_with_env(&bare("require"), &run, &home_password);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = add_with_env(&bare("verify-full"), &run, &home_password);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("root certificate file") && line.contains("does not exist"),
        "{line}"
    );
    // The system's CAs go with verify-full only, as libpq.
    let out = add_with_env(
        &format!("{}&sslrootcert=system", bare("require")),
        &run,
        &home_password,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        error_line(&out).contains("sslrootcert=system"),
        "{}",
        stderr(&out)
    );

    // Without TLS, a server that takes TLS only refuses, and the line says TLS may help.
    let out = add_with_env(
        &format!("postgres://alice@127.0.0.1:{port}/tls?sslmode=disable"),
        &run,
        &[("PGPASSWORD", "wonder:land")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(line.contains("sslmode=disable"), "{line}");

    // The password from a password file (libpq's format, a colon escaped) readable by its
    // owner alone; the whole store URL from $FRAMELAB_HISTORY.
    let pgpass = dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{port}:tls:alice:wonder\\:land\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = url("verify-full", &ca);
    let shown = framelab()
        .args(["history", "show", "--format", "json"])
        .env("FRAMELAB_HISTORY", &store)
        .env("PGPASSFILE", &pgpass)
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains("\"commit\": \"c1\""),
        "{}",
        stdout(&shown)
    );
    // Readable by others: ignored with a warning, as libpq does, and the login fails.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = add_with_env(&store, &run, &[("PGPASSFILE", pgpass.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("0600"), "{}", stderr(&out));
}

#[test]
fn a_postgres_server_that_stops_answering_mid_write_ends_the_add_at_its_deadline() {
    let Some(server) = history_pg::server_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir, "a", 10);
    let b = record(&dir, "b", 10);
    let c = record(&dir, "c", 10);
    let url = format!("{}?connect_timeout=2", server.create_database("hang"));
    ok(add(&url, "c1", &[&a]));
    let before = export_csv(&url);

    // Mid-write (b's rows written, c's next), the writer's server process is stopped: its
    // next statement is never answered (the connection stays open).
    let flag = dir.path().join("mid-write");
    let mut writer = paused_add(&url, &flag, &[&b, &c]);
    wait_for(&flag, &mut writer);
    let backend: i32 = server
        .client("postgres")
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'framelab-history'",
            &[],
        )
        .unwrap()
        .get(0);
    // SAFETY: signals the server process serving this test's writer.
    unsafe { libc::kill(backend, libc::SIGSTOP) };
    std::fs::remove_file(&flag).unwrap();
    let hung = common::exited_within(&mut writer, Duration::from_secs(120)).is_none();
    if hung {
        writer.kill().unwrap();
    }
    // SAFETY: as above.
    unsafe { libc::kill(backend, libc::SIGCONT) };
    let out = writer.wait_with_output().unwrap();
    assert!(!hung, "still running at the guard: {}", stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains(&format!("127.0.0.1:{}", server.port))
            && line.contains("did not finish a statement")
            && line.contains("(waited 2 s)"),
        "{line}"
    );
    assert_eq!(export_csv(&url), before, "nothing of b or c");
}
