//! Every way a run file or an output path can be wrong gives one line naming the problem
//! and the fix, never a panic.

use crate::common::store as store_common;

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{error_line, framelab};
use framelab::model::RunMeta;
use framelab::store::{list_runs, load_run, RunWriter, SCHEMA_VERSION};
use store_common::*;

/// The error of loading `path`, checked to be one line in every rendering.
fn load_error(path: &Path) -> String {
    let err = load_run(path, None).expect_err("loading should fail");
    one_line(err)
}

fn one_line(err: anyhow::Error) -> String {
    for text in [format!("{err}"), format!("{err:#}")] {
        assert!(!text.contains('\n'), "not one line: {text:?}");
    }
    eprintln!("message: {err}");
    err.to_string()
}

fn assert_mentions(message: &str, words: &[&str]) {
    for w in words {
        assert!(message.contains(w), "{message:?} lacks {w:?}");
    }
}

/// A recorded run big enough to span many pages (~60k spans, ~2 MB).
fn recorded(dir: &Path) -> PathBuf {
    let path = dir.join("good.framelab");
    write_run(&path, &sample_run("good", 20_000));
    path
}

/// A tiny xorshift so corruption is varied yet reproducible.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn overwrite(path: &Path, at: usize, bytes: &[u8]) {
    let mut data = fs::read(path).unwrap();
    data[at..at + bytes.len()].copy_from_slice(bytes);
    fs::write(path, data).unwrap();
}

#[test]
fn a_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.framelab");
    let msg = load_error(&path);
    assert_mentions(&msg, &["nope.framelab", "does not exist", "check the path"]);
    assert!(!path.exists(), "reading must not create the file");
    assert_mentions(
        &one_line(list_runs(&path).unwrap_err()),
        &["does not exist"],
    );
}

#[test]
fn a_directory() {
    let dir = tempfile::tempdir().unwrap();
    assert_mentions(&load_error(dir.path()), &["is a directory"]);
}

#[test]
fn a_text_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.framelab");
    fs::write(&path, "frame,stage,start\n1,encode,100\n").unwrap();
    assert_mentions(
        &load_error(&path),
        &[
            "not a framelab run file",
            "not an SQLite database",
            "framelab run",
        ],
    );
}

#[test]
fn random_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise.framelab");
    fs::write(&path, noise(7, 10_000)).unwrap();
    assert_mentions(&load_error(&path), &["not an SQLite database"]);
}

#[test]
fn an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.framelab");
    fs::write(&path, b"").unwrap();
    assert_mentions(
        &load_error(&path),
        &["is empty (0 bytes)", "record the run again"],
    );
}

#[test]
fn an_sqlite_database_that_is_not_framelab() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    assert_mentions(
        &load_error(&path),
        &["an SQLite database but not a framelab run file"],
    );
    // An empty SQLite database (schema-less) is not a run either.
    let blank = dir.path().join("blank.db");
    rusqlite::Connection::open(&blank)
        .unwrap()
        .execute_batch("PRAGMA user_version = 1")
        .unwrap();
    assert_mentions(&load_error(&blank), &["empty SQLite database"]);
}

#[test]
fn a_file_of_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE framelab SET value = ?1 WHERE key = 'schema_version'",
            [(SCHEMA_VERSION + 1).to_string()],
        )
        .unwrap();
    let msg = load_error(&path);
    assert!(
        msg.ends_with(&format!(
            "was written by a newer framelab (schema {}, this build reads ≤ {SCHEMA_VERSION}): \
             upgrade framelab",
            SCHEMA_VERSION + 1
        )),
        "{msg}"
    );
    // Nor will the writer append to it.
    let err = RunWriter::create(&path, &RunMeta::default()).err().unwrap();
    assert_mentions(&one_line(err), &["newer framelab", "upgrade framelab"]);
}

#[test]
fn a_newer_schema_is_told_by_the_header_before_sqlite_parses_it() {
    // A future schema may use SQL this SQLite cannot parse; the header says enough.
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
        .unwrap();
    assert_mentions(
        &load_error(&path),
        &[&format!(
            "newer framelab (schema {}, this build reads ≤ {SCHEMA_VERSION}): upgrade framelab",
            SCHEMA_VERSION + 1
        )],
    );
    let err = RunWriter::create(&path, &RunMeta::default()).err().unwrap();
    assert_mentions(
        &one_line(err),
        &[
            &format!("schema {}", SCHEMA_VERSION + 1),
            "upgrade framelab",
        ],
    );
}

#[test]
fn a_file_cut_in_half() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path());
    let data = fs::read(&path).unwrap();
    fs::write(&path, &data[..data.len() / 2]).unwrap();
    assert_mentions(&load_error(&path), &["is truncated", "copy the file again"]);
    // Cut inside the header itself.
    fs::write(&path, &data[..60]).unwrap();
    assert_mentions(&load_error(&path), &["is truncated"]);
}

#[test]
fn a_file_with_bytes_overwritten_in_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path());
    let len = fs::metadata(&path).unwrap().len() as usize;
    overwrite(&path, len / 2, &noise(3, 16 * 1024));
    assert_mentions(&load_error(&path), &["corrupt", "restore an intact copy"]);
}

#[test]
fn damage_anywhere_gives_an_error_or_a_run_never_a_panic() {
    // Damage that happens to land in unused space or in a value SQLite cannot check
    // still loads: SQLite has no checksums. What matters is that nothing panics.
    let dir = tempfile::tempdir().unwrap();
    let good = recorded(dir.path());
    let len = fs::metadata(&good).unwrap().len() as usize;
    let path = dir.path().join("damaged.framelab");
    let mut failures = 0;
    for i in 0..40u64 {
        fs::copy(&good, &path).unwrap();
        let size = [1usize, 8, 100, 4096][i as usize % 4];
        let at = (noise(i + 11, 8)
            .iter()
            .fold(0usize, |a, &b| a * 256 + b as usize))
            % (len - size);
        overwrite(&path, at, &noise(i + 1, size));
        if let Err(e) = load_run(&path, None) {
            one_line(e);
            failures += 1;
        }
    }
    assert!(failures > 0, "no damage was noticed at all");
}

#[test]
fn zeroed_pages_in_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path());
    let len = fs::metadata(&path).unwrap().len() as usize;
    overwrite(&path, (len / 2) & !4095, &vec![0u8; 8192]);
    assert_mentions(&load_error(&path), &["corrupt"]);
}

#[test]
fn a_run_id_that_does_not_exist_lists_those_that_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.framelab");
    write_run(&path, &sample_run("a", 5));
    write_run(&path, &sample_run("b", 5));
    let err = load_run(&path, Some(9)).unwrap_err();
    let msg = one_line(err);
    assert_mentions(
        &msg,
        &["has no run 9", "it holds runs 1, 2", "pass one of those"],
    );
}

#[test]
fn a_file_whose_recording_never_committed_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("norun.framelab");
    let w = RunWriter::create(&path, &RunMeta::default()).unwrap();
    w.finish().unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("DELETE FROM runs", []).unwrap();
    drop(conn);
    assert_mentions(&load_error(&path), &["holds no runs", "framelab run -o"]);
}

#[test]
fn hand_edited_records_that_name_missing_stages_or_hold_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path());
    let conn = rusqlite::Connection::open(&path).unwrap();
    // The stage byte of the block's 10th span (12-byte records, stage at byte 10).
    let (first_id, layout, mut records): (i64, i64, Vec<u8>) = conn
        .query_row(
            "SELECT first_id, layout, records FROM span_blocks ORDER BY first_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(layout, 1, "narrow records");
    records[9 * 12 + 10] = 40;
    conn.execute(
        "UPDATE span_blocks SET records = ?1 WHERE first_id = ?2",
        (records, first_id),
    )
    .unwrap();
    drop(conn);
    assert_mentions(
        &load_error(&path),
        &["damaged or was edited by hand", "stage 40", "3 stages"],
    );
    // Found while it is streamed out: the input is damaged, not the output unwritable.
    let csv = dir.path().join("out.csv");
    let out = framelab()
        .args(["export", "--format", "csv", "-o"])
        .arg(&csv)
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = error_line(&out);
    assert!(
        line.contains("damaged or was edited by hand") && !line.contains("cannot write"),
        "{line}"
    );

    let path = dir.path().join("text.framelab");
    write_run(&path, &sample_run("t", 10));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE span_blocks SET base_start_ns = 'soon'", [])
        .unwrap();
    conn.execute("UPDATE runs SET span_count = 9223372036854775807", [])
        .unwrap();
    drop(conn);
    assert_mentions(
        &load_error(&path),
        &["span_blocks.base_start_ns holds text where an integer belongs"],
    );
}

#[test]
fn hand_edited_span_blocks_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (edit, expected) in [
        (
            "UPDATE span_blocks SET records = 'abc'",
            "span_blocks.records holds text where a blob belongs",
        ),
        (
            "UPDATE span_blocks SET layout = 7",
            "span_blocks.layout is 7, not 1, 2 or 3",
        ),
        (
            "UPDATE span_blocks SET spans = spans + 1",
            "a span block says it holds",
        ),
    ] {
        let path = dir.path().join("edited.framelab");
        let _ = std::fs::remove_file(&path);
        write_run(&path, &sample_run("t", 10));
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(edit, []).unwrap();
        drop(conn);
        assert_mentions(
            &load_error(&path),
            &["damaged or was edited by hand", expected],
        );
    }
}

/// Every `create` failure happens before anything is recorded and leaves no file behind.
fn create_error(path: &Path) -> String {
    let err = RunWriter::create(path, &RunMeta::default())
        .err()
        .expect("create should fail");
    one_line(err)
}

#[test]
fn an_output_directory_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing/sub/run.framelab");
    let msg = create_error(&path);
    assert_mentions(
        &msg,
        &["does not exist", "create it or choose another output path"],
    );
    assert!(!path.exists());
}

#[test]
fn an_output_path_that_is_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    assert_mentions(
        &create_error(dir.path()),
        &["it is a directory", "run.framelab"],
    );
}

#[test]
fn an_output_path_under_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    fs::write(&file, "x").unwrap();
    assert_mentions(
        &create_error(&file.join("run.framelab")),
        &["is not a directory"],
    );
}

#[test]
fn an_output_path_no_one_can_write() {
    // Even root cannot create files in /proc.
    let msg = create_error(Path::new("/proc/framelab-test.framelab"));
    assert_mentions(
        &msg,
        &["cannot write the run file", "choose a writable output path"],
    );
}

#[test]
fn a_read_only_output_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
    let probe = locked.join("probe");
    if fs::write(&probe, "").is_ok() {
        // Running as root: permissions do not apply; the /proc test covers this path.
        fs::remove_file(&probe).unwrap();
        return;
    }
    let msg = create_error(&locked.join("run.framelab"));
    assert_mentions(
        &msg,
        &["cannot write the run file", "choose a writable output path"],
    );
}

#[test]
fn an_existing_file_that_is_not_a_run_file_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    fs::write(&text, "precious notes\n".repeat(100)).unwrap();
    assert_mentions(
        &create_error(&text),
        &[
            "refusing to write into",
            "not an SQLite database",
            "choose another output path",
        ],
    );
    assert_eq!(
        fs::read_to_string(&text).unwrap(),
        "precious notes\n".repeat(100)
    );

    let db = dir.path().join("other.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let before = fs::read(&db).unwrap();
    assert_mentions(
        &create_error(&db),
        &["refusing to write into", "not a framelab run file"],
    );
    assert_eq!(fs::read(&db).unwrap(), before);
}

#[test]
fn an_empty_existing_file_becomes_a_run_file() {
    // `touch run.framelab` or mktemp before recording is fine.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("touched.framelab");
    fs::write(&path, b"").unwrap();
    let run = sample_run("touched", 5);
    write_run(&path, &run);
    assert_same_run(&load_run(&path, None).unwrap(), &run);
}
