//! Ctrl-C in the middle of a bench: the run in progress is finalised and marked
//! interrupted, every finished run is kept, and `--resume` completes the experiment.

use crate::common;

use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn runs_recorded(file: &std::path::Path) -> usize {
    framelab::store::load_experiment(file)
        .ok()
        .flatten()
        .map_or(0, |e| e.runs.len())
}

#[test]
fn ctrl_c_stops_and_resume_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stop.framelab");
    let forever = format!("{} forever", example("testprog"));
    let args = |resume: bool| {
        let mut cmd = framelab();
        cmd.args(["bench", "-n", "2", "--duration", "500ms", "--show", "a.p50"])
            .arg("--variant")
            .arg(format!("x={forever}"))
            .arg("--variant")
            .arg(format!("y={forever}"))
            .arg("-o")
            .arg(&file);
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    let child = args(false)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (a safety limit, not a measurement) until a run is on record, then Ctrl-C.
    let limit = Instant::now() + Duration::from_secs(60);
    while runs_recorded(&file) < 1 && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));
    let stopped = framelab::store::load_experiment(&file).unwrap().unwrap();
    let ok = |e: &framelab::experiment::Experiment| {
        e.runs
            .iter()
            .filter(|r| r.status == framelab::experiment::RunStatus::Ok)
            .count()
    };
    assert!(ok(&stopped) >= 1 && ok(&stopped) < 4, "{:?}", stopped.runs);

    let resumed = args(true).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let done = framelab::store::load_experiment(&file).unwrap().unwrap();
    assert_eq!(ok(&done), 4, "{:?}", done.runs);
    assert!(stdout(&resumed).contains("y vs x"));
}
