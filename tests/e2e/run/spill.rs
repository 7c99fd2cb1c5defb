//! Records kept raw during the run (`RUN.framelab-spill`) and converted after it: the run
//! holds what converting as it went holds, the spill is gone, and a framelab killed while
//! spilling leaves a spill the next open of the run file folds in.

use std::time::Duration;

use crate::common::session::wait_for;
use crate::common::*;

/// What a run holds, whatever its times: names (sorted: which thread makes its ring first
/// is the threads' race, in either run), and counts.
fn contents(run: &framelab::model::Run) -> String {
    fn sorted(mut names: Vec<&str>) -> Vec<&str> {
        names.sort_unstable();
        names
    }
    format!(
        "stages {:?} threads {:?} spans {} counters {} events {} frames {} invalid {} dropped {}",
        sorted(run.stages.iter().map(String::as_str).collect()),
        sorted(run.threads.iter().map(|t| t.name.as_str()).collect()),
        run.spans.len(),
        run.counters.len(),
        run.events.len(),
        {
            let mut frames: Vec<u64> = run.spans.iter().map(|s| s.frame).collect();
            frames.sort_unstable();
            frames.dedup();
            frames.len()
        },
        run.meta.invalid_records,
        run.meta.dropped_events
    )
}

#[test]
fn a_spilled_run_holds_what_converting_as_it_went_holds_and_leaves_no_spill() {
    let dir = tempfile::tempdir().unwrap();
    // Stages with laps, a counter and an event per frame (spans), then several threads.
    for program in [&["spans", "400"][..], &["threads", "300"]] {
        let (spilled, path) = run_testprog_with_env(
            &dir,
            "spilled",
            &[("FRAMELAB_SPILL_TIMES", "1")],
            &[],
            program,
        );
        assert!(spilled.status.success(), "{}", stderr(&spilled));
        assert!(
            stderr(&spilled).contains(" spilled records in "),
            "the run spilled: {}",
            stderr(&spilled)
        );
        let mut spill = path.as_os_str().to_owned();
        spill.push("-spill");
        assert!(
            !std::path::Path::new(&spill).exists(),
            "the spill is removed"
        );
        let (converted, converted_path) = run_testprog_with_env(
            &dir,
            "converted",
            &[("FRAMELAB_SPILL", "off"), ("FRAMELAB_SPILL_TIMES", "1")],
            &[],
            program,
        );
        assert!(converted.status.success(), "{}", stderr(&converted));
        assert!(!stderr(&converted).contains("spilled records"));
        let (spilled, converted) = (load(&path), load(&converted_path));
        assert_eq!(contents(&spilled), contents(&converted), "{program:?}");
        assert!(spilled.spans.len() >= 600, "{}", contents(&spilled));
    }
}

#[test]
fn a_framelab_killed_while_spilling_leaves_every_drained_record_to_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.framelab");
    let mut spill = path.as_os_str().to_owned();
    spill.push("-spill");
    let spill = std::path::PathBuf::from(spill);
    let mut child = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "rate", "20000", "120"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A second of records or more in the spill (20,000 records of 32 bytes).
    wait_for("records in the spill", || {
        std::fs::metadata(&spill).is_ok_and(|m| m.len() > 700_000)
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));

    // What the spill holds, read as the fold reads it, and what the last commit holds.
    let (_, file) = framelab::spill::file::open(&spill).unwrap().unwrap();
    let mut spilled = 0u64;
    let data = framelab::spill::file::open_data(&spill);
    framelab::spill::file::read_chunks(file, data.as_ref(), |chunk| {
        if let framelab::spill::file::Chunk::Records(drained) = chunk {
            spilled += drained.records.len() as u64;
        }
        Ok(())
    })
    .unwrap();
    assert!(spilled >= 20_000, "{spilled}");

    let out = framelab()
        .args(["report", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert_eq!(
        said.lines()
            .filter(|l| l.contains("folded"))
            .collect::<Vec<_>>(),
        [format!(
            "framelab: folded {spilled} records left by a run that did not finish"
        )],
        "{said}"
    );
    assert!(!spill.exists(), "the spill is removed once folded");
    let run = load(&path);
    assert_eq!(run.meta.end_reason, framelab::model::EndReason::Unfinished);
    assert_eq!(run.meta.invalid_records, 0);
    // Every span drained, in order of frame: none lost but those never drained.
    let mut frames: Vec<u64> = run.spans.iter().map(|s| s.frame).collect();
    frames.sort_unstable();
    frames.dedup();
    assert_eq!(frames.len(), run.spans.len(), "each frame once");
    assert_eq!(
        frames.last().copied(),
        Some(run.spans.len() as u64 - 1),
        "no gap"
    );
    assert!(
        run.spans.len() as u64 >= spilled,
        "{} < {spilled}",
        run.spans.len()
    );
}

/// 400k spans at 100k spans/s with files of at most 8 MiB (SIGXFSZ ignored: a write past it
/// fails with EFBIG). The spill (32 bytes a record) passes that at ~260k records, the run file
/// (~13 bytes a span) never does. Rings of 2 MiB, under the limit too. `direct`: the drains'
/// 512 KiB go past the page cache where the filesystem takes it (not tmpfs).
fn limited_to_8_mib(
    dir: &std::path::Path,
    direct: bool,
) -> (std::process::Output, std::path::PathBuf) {
    let path = dir.join("limited.framelab");
    let script = format!(
        "trap '' XFSZ; ulimit -f 8192; exec '{}' run -o '{}' -- '{}' rate 100000 4",
        env!("CARGO_BIN_EXE_framelab"),
        path.display(),
        example("testprog")
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("FRAMELAB_RING_RECORDS", "65536")
        .env("FRAMELAB_SPILL_TIMES", "1")
        .env("FRAMELAB_SPILL_DIRECT", if direct { "on" } else { "off" })
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (out, path)
}

/// Every one of the 400k frames once, nothing dropped.
fn each_of_400k_frames_once(path: &std::path::Path) {
    let run = load(path);
    assert_eq!(run.meta.dropped_events, 0);
    let mut frames: Vec<u64> = run.spans.iter().map(|s| s.frame).collect();
    frames.sort_unstable();
    frames.dedup();
    assert_eq!(frames.len(), run.spans.len(), "each record once");
    assert_eq!(frames, (0..400_000).collect::<Vec<_>>(), "none lost");
}

#[test]
fn a_spill_that_cannot_grow_is_folded_and_the_rest_converted_each_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = limited_to_8_mib(dir.path(), false);
    let said = stderr(&out);
    assert!(
        said.contains("could not be written (File too large")
            && said.contains("converted as they come from now on"),
        "{said}"
    );
    each_of_400k_frames_once(&path);
}

#[test]
fn records_written_past_the_page_cache_into_a_file_that_cannot_grow_are_none_lost() {
    // The drains' 512 KiB go into the data file (until EFBIG at 8 MiB turns direct writes off,
    // or a slow disk pauses them) and the rest into the spill (which may pass 8 MiB in turn,
    // and be folded): whichever way it goes, every record is in the run once.
    let tmp = std::env::temp_dir();
    if framelab::spill::direct::on_tmpfs(&std::fs::File::open(&tmp).unwrap()) {
        eprintln!(
            "skipped: {} is tmpfs, where the spill takes no direct write",
            tmp.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = limited_to_8_mib(dir.path(), true);
    each_of_400k_frames_once(&path);
}
