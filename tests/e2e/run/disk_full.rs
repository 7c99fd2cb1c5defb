//! A disk that fills up mid-run: framelab says so, with what it kept and what it lost,
//! instead of a later failure ("the run file writer already stopped") hiding the cause.

use crate::common;
use crate::common::session as session_common;

use common::*;
use session_common::Tmpfs;

#[test]
fn a_full_disk_mid_run_is_reported_with_what_was_kept() {
    // 50k spans/s for 10 s is some 20 MB of run file: the 1 MB disk fills within a second,
    // once the small spill is folded.
    full_disk(
        "a_full_disk_mid_run_is_reported_with_what_was_kept",
        "1m",
        "50000",
        "10",
    );
}

#[test]
fn a_spill_that_fills_the_disk_is_kept_for_a_later_fold() {
    // At 1M spans/s the spill fills 16 MB in well under the run, and folding it into the
    // run file on the same disk fails: its records stay in the spill, and say so.
    full_disk(
        "a_spill_that_fills_the_disk_is_kept_for_a_later_fold",
        "16m",
        "1000000",
        "4",
    );
}

fn full_disk(name: &str, size: &str, rate: &str, seconds: &str) {
    let Some(disk) = Tmpfs::mount(name, size) else {
        return;
    };
    let path = disk.path().join("full.framelab");
    let out = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "rate", rate, seconds])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    let line = error_line(&out);
    let expected = format!(
        "error: the disk holding {} is full: ",
        disk.path().display()
    );
    assert!(line.starts_with(&expected), "{line}");
    assert!(!line.contains("already stopped"), "{line}");
    // "N spans kept in FILE, the last M s lost" (or "nothing was committed"), or, when the
    // spill filled the disk first, "N spans in FILE and R more records in its spill SPILL,
    // not yet folded in": N is what the file holds, and the spill's R records are there.
    let kept: usize = line[expected.len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no span count in {line}"));
    let Some((_, after)) = line.split_once(" more records in its spill") else {
        assert!(
            line.contains(" spans kept in ")
                && (line.contains(" s lost") || line.contains("nothing was committed")),
            "{line}"
        );
        assert_eq!(load(&path).spans.len(), kept, "{line}");
        return;
    };
    assert!(after.contains("not yet folded in"), "{line}");
    let before = &line[..line.len() - after.len() - " more records in its spill".len()];
    let in_spill: usize = before
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no record count in {line}"));
    assert!(in_spill > 0, "{line}");
    // Moved to a disk with room, as the line says, the run file folds its spill in: the
    // spans kept and the spill's records (all spans here) are all there.
    let roomy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(disk.path()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), roomy.path().join(entry.file_name())).unwrap();
    }
    let run = load(&roomy.path().join("full.framelab"));
    assert_eq!(run.spans.len(), kept + in_spill, "{line}");
}
