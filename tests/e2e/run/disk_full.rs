//! A disk that fills up mid-run: framelab says so, with what it kept and what it lost,
//! instead of a later failure ("the run file writer already stopped") hiding the cause.

use crate::common;
use crate::common::session as session_common;

use common::*;
use session_common::Tmpfs;

#[test]
fn a_full_disk_mid_run_is_reported_with_what_was_kept() {
    let Some(disk) = Tmpfs::mount("a_full_disk_mid_run_is_reported_with_what_was_kept", "1m")
    else {
        return;
    };
    let path = disk.path().join("full.framelab");
    // 50k spans/s for 10 s is some 20 MB of run file: the 1 MB disk fills within a second.
    let out = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "rate", "50000", "10"])
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
    // "N spans kept in FILE, the last M s lost": N is what the file holds.
    let kept: usize = line[expected.len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no span count in {line}"));
    assert!(
        line.contains(" spans kept in ") && line.contains(" s lost"),
        "{line}"
    );
    assert!(kept > 0, "{line}");
    let run = load(&path);
    assert_eq!(run.spans.len(), kept, "{line}");
}
