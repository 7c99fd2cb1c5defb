//! `framelab history`'s order of runs recorded in one second: the order they were
//! launched in, whatever their ids and the order they were added. A version-1 store,
//! SQLite or PostgreSQL, is upgraded when opened and keeps the order it showed.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::basics::{add, export_csv, ok, record, show_json};
use crate::common::framelab;
use crate::common::postgres as history_pg;

/// The run id `history add` gives the run file's run.
fn run_id(path: &Path) -> String {
    framelab::history::add::run_id(&framelab::store::list_runs(path).unwrap()[0])
}

/// Two real runs, `first` launched before `second` on this boot, dated to one second of
/// 2020 where `second`'s run id sorts first: ordered by id, as version 1 ordered runs of
/// one second, they stand the wrong way round.
fn two_runs_of_one_second(dir: &tempfile::TempDir) -> (PathBuf, PathBuf) {
    let first = record(dir, "first", 10);
    let second = record(dir, "second", 10);
    let meta = |path: &Path| framelab::store::list_runs(path).unwrap().remove(0);
    let (mut a, mut b) = (meta(&first), meta(&second));
    assert!(
        a.origin_mono_ns < b.origin_mono_ns,
        "launched one after the other"
    );
    let id = framelab::history::add::run_id;
    let date = (0..60)
        .map(|s| format!("2020-01-01T10:00:{s:02}Z"))
        .find(|date| {
            (a.started_at, b.started_at) = (date.clone(), date.clone());
            id(&b) < id(&a)
        })
        .expect("a second where the later run's id sorts first");
    for path in [&first, &second] {
        let db = rusqlite::Connection::open(path).unwrap();
        db.execute("UPDATE runs SET started_at = ?1", [&date])
            .unwrap();
    }
    (first, second)
}

/// The commits of the store's fps series, oldest first.
fn fps_commits(store: &str) -> Vec<String> {
    let shown = show_json(store, &["--metric", "fps"]);
    let commits = shown["series"][0]["commits"].as_array().unwrap();
    (commits.iter())
        .map(|c| c["commit"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn runs_of_one_second_stand_in_launch_order() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = two_runs_of_one_second(&dir);
    // Added the wrong way round, an add each (a change point would be put at c1).
    let store = dir.path().join("h.sqlite").display().to_string();
    ok(add(&store, "c2", &[&second]));
    ok(add(&store, "c1", &[&first]));
    assert_eq!(fps_commits(&store), ["c1", "c2"]);

    // Given the wrong way round to one add: the export has the first run's rows first.
    let one = dir.path().join("one.sqlite").display().to_string();
    ok(add(&one, "c1", &[&second, &first]));
    let mut ids: Vec<String> = export_csv(&one).iter().map(|r| r[0].to_owned()).collect();
    ids.dedup();
    assert_eq!(ids, [run_id(&first), run_id(&second)]);
}

/// The two runs added to `store` (c1 the first launched, c2 the second), the store taken
/// back to version 1 by `downgrade`, then opened by three readers at once: upgraded once,
/// in version 1's order (by run id, so c2 first); a run added after comes last.
fn upgraded_keeps_its_order(store: &str, downgrade: impl Fn(&str), version: impl Fn() -> i64) {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = two_runs_of_one_second(&dir);
    ok(add(store, "c1", &[&first]));
    ok(add(store, "c2", &[&second]));
    downgrade(
        "ALTER TABLE runs DROP COLUMN launch_mono_ns; ALTER TABLE runs DROP COLUMN add_order; \
         UPDATE framelab_history SET schema_version = 1",
    );
    assert_eq!(version(), 1);
    let readers: Vec<_> = (0..3)
        .map(|_| {
            framelab()
                .args(["history", "show", "--history", store])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for reader in readers {
        ok(reader.wait_with_output().unwrap());
    }
    assert_eq!(version(), 2);
    assert_eq!(fps_commits(store), ["c2", "c1"]);
    let third = record(&dir, "third", 10);
    ok(add(store, "c3", &[&third]));
    assert_eq!(fps_commits(store), ["c2", "c1", "c3"]);
}

#[test]
fn a_version_1_sqlite_store_is_upgraded_and_keeps_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite");
    let db = || rusqlite::Connection::open(&path).unwrap();
    upgraded_keeps_its_order(
        path.to_str().unwrap(),
        |sql| db().execute_batch(sql).unwrap(),
        || {
            db().query_row("SELECT schema_version FROM framelab_history", [], |r| {
                r.get(0)
            })
            .unwrap()
        },
    );
}

#[test]
fn a_version_1_postgres_store_is_upgraded_and_keeps_its_order() {
    let Some(server) = history_pg::server_or_skip() else {
        return;
    };
    let url = server.create_database("upgrade");
    upgraded_keeps_its_order(
        &url,
        |sql| server.client("upgrade").batch_execute(sql).unwrap(),
        || {
            (server.client("upgrade"))
                .query_one("SELECT schema_version FROM framelab_history", &[])
                .unwrap()
                .get(0)
        },
    );
}
