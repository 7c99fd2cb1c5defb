//! No process of the command's tree outlives framelab, even when framelab is killed with -9:
//! PDEATHSIG reaches only the direct child, the guardian process the whole group.

use crate::common;
use crate::common::session as session_common;

use common::*;
use session_common::{descendants, running, wait_for};

/// `sh -c 'testprog forever & testprog forever; wait'`: two grandchildren of framelab.
fn shell_with_two_grandchildren() -> Vec<String> {
    let prog = example("testprog");
    vec![
        "sh".into(),
        "-c".into(),
        format!("{prog} forever & {prog} forever; wait"),
    ]
}

fn testprogs_below(pid: u32) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "testprog")
        })
        .collect()
}

/// `framelab run --grace 1s ARGS -o FILE -- sh -c '…'` with its two grandchildren running;
/// framelab and every process below it.
fn start_with_two_grandchildren(
    file: &std::path::Path,
    args: &[&str],
) -> (std::process::Child, Vec<u32>) {
    let child = framelab()
        .args(["run", "--grace", "1s"])
        .args(args)
        .arg("-o")
        .arg(file)
        .arg("--")
        .args(shell_with_two_grandchildren())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut tree = Vec::new();
    wait_for("sh and both testprogs", || {
        tree = descendants(child.id());
        testprogs_below(child.id()).len() == 2
    });
    (child, tree)
}

/// Kills what a failed test left behind.
fn cleanup(pids: &[u32]) {
    for &p in pids {
        // SAFETY: plain kill.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
}

#[test]
fn kill_9_of_framelab_leaves_no_descendant_running() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, tree) = start_with_two_grandchildren(&dir.path().join("killed.framelab"), &[]);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let survivors = || {
        tree.iter()
            .copied()
            .filter(|&p| running(p))
            .collect::<Vec<_>>()
    };
    for _ in 0..200 {
        if survivors().is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = survivors();
    cleanup(&left);
    panic!("processes of the command outlived framelab's kill -9 by 10 s: {left:?} of {tree:?}");
}

#[test]
fn a_normal_stop_ends_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stopped.framelab");
    let (mut child, tree) = start_with_two_grandchildren(&file, &["--duration", "30s"]);
    // Ctrl-C: framelab stops the command (the shell's background job ignores SIGINT, so the
    // group gets SIGTERM after the grace) and returns once it is all gone.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    let left: Vec<u32> = tree.iter().copied().filter(|&p| running(p)).collect();
    cleanup(&left);
    assert!(
        left.is_empty(),
        "{left:?} of {tree:?} still run after framelab returned"
    );
}
