//! The NVML source through `dlopen`, against a stand-in for the driver's library
//! (tests/fixtures/nvml/fake_nvml.c, built here with the C compiler CI has): the binding's
//! symbols and struct layouts, an unsupported call named once, and a GPU lost mid-run that
//! stops the source while the run goes on. The real driver was checked on an H100:
//! docs/gpu-h100-report.md.

use crate::common;

use common::*;
use framelab::model::SourceState;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the fake library into `dir` and returns its path.
fn fake_nvml(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/fake_nvml.c");
    let library = dir.join("libnvidia-ml.so.1");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) builds the fake NVML library; CI has one");
    assert!(built.success(), "cc failed on {}", source.display());
    library
}

#[test]
fn the_binding_reads_every_metric_the_library_offers() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", &library)
        .args([
            "sources",
            "--count",
            "2",
            "--sample-every",
            "5ms",
            "--no-sample",
            "threads",
        ])
        // A process to ask the GPU about: the fake answers Not Supported.
        .args(["--pid", &std::process::id().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "nvml      on       GPU 0 Fake GPU · driver 0.fake; GPU 0 does not report process utilisation (Not Supported)"
        ),
        "{text}"
    );
    let row = |metric: &str| -> String {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(metric))
            .unwrap_or_else(|| panic!("no {metric} row in {text}"))
            .to_string()
    };
    assert!(
        row("sm_clock").ends_with("1980 1980"),
        "{}",
        row("sm_clock")
    );
    assert!(row("mem_clock").ends_with("2619 2619"));
    assert!(row("gpu_busy").ends_with("97 97"));
    assert!(row("mem_busy").ends_with("40 40"));
    assert!(row("power").ends_with("350000 350000"));
    assert!(
        row("energy").ends_with("1001750 1003500"),
        "{}",
        row("energy")
    );
    assert!(row("mem_used").ends_with("2147483648 2147483648"));
    assert!(row("throttle").ends_with("0x4 0x4"));
}

#[test]
fn a_gpu_lost_mid_run_stops_the_source_not_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let path = temp_run(&dir, "lost");
    // Ten calls a reading: the GPU is lost during the fifth reading.
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", &library)
        .env("FAKE_NVML_LOSE_AFTER", "45")
        .args(["run", "--fps", "500", "--sample-every", "5ms", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "spans", "300"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("framelab: warning: telemetry source nvml stopped: GPU 0 lost at "),
        "{err}"
    );

    let run = load(&path);
    assert_eq!(run.spans.len(), 900, "the run itself is whole");
    let nvml = &run.telemetry.sources[0];
    assert_eq!(nvml.state, SourceState::Stopped);
    assert!(
        nvml.detail
            .contains("(GPU is lost (NVML error 15)); its readings until then are kept"),
        "{}",
        nvml.detail
    );
    // Four whole readings before the loss, and the fifth's first five metrics: five SM
    // clock readings (fewer only if a call were put off as slow, which the fake never is
    // unless this machine stalls the sampler twice in a row).
    let sm_clock = run
        .telemetry
        .series
        .iter()
        .position(|s| s.source == "nvml" && s.metric == "sm_clock")
        .unwrap();
    let kept = run
        .telemetry
        .samples
        .iter()
        .filter(|s| s.series as usize == sm_clock)
        .count();
    assert!((1..=5).contains(&kept), "{kept} SM clock readings kept");
    let text = stdout(&out);
    assert!(text.contains("nvml      stopped  GPU 0 lost at "), "{text}");
}
