//! Ctrl-C in the middle of a bench: the run in progress is finalised and marked
//! interrupted, every finished run is kept, and `--resume` completes the experiment.

use crate::common;

use common::*;

#[test]
fn ctrl_c_stops_and_resume_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stop.framelab");
    // The second run's command sends framelab Ctrl-C's signal as it starts (its parent:
    // bench runs it directly), then runs: a run in progress is interrupted, whatever the
    // machine's speed (the test once waited for a run on record and signalled then, which
    // a loaded machine could delay past the last run). Later runs, the resumed ones
    // included, only run.
    let count = dir.path().join("count");
    let forever = format!(
        "sh -c 'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; \
         [ \"$n\" -eq 1 ] && kill -INT $PPID; exec {} forever'",
        example("testprog"),
        count = count.display()
    );
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
    let out = args(false).output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));
    let stopped = framelab::store::load_experiment(&file).unwrap().unwrap();
    let with = |e: &framelab::experiment::Experiment, status| {
        e.runs.iter().filter(|r| r.status == status).count()
    };
    use framelab::experiment::RunStatus;
    assert_eq!(
        (
            with(&stopped, RunStatus::Ok),
            with(&stopped, RunStatus::Interrupted)
        ),
        (1, 1),
        "the first run kept, the second interrupted: {:?}",
        stopped.runs
    );

    let resumed = args(true).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let done = framelab::store::load_experiment(&file).unwrap().unwrap();
    assert_eq!(with(&done, RunStatus::Ok), 4, "{:?}", done.runs);
    assert!(stdout(&resumed).contains("y vs x"));
}
