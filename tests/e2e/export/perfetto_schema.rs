//! The Perfetto export decoded with Perfetto's own schema, not framelab's: runs
//! `benches/validate/check_perfetto.py pypi` (the classes Google generates from
//! perfetto_trace.proto and ships in the `perfetto` package on PyPI) on real imports and
//! on the script's edge-case run. It rebuilds every slice as Perfetto's trace processor
//! does and compares each value, to the ns, with the run file and the CSV export; it also
//! checks wire types, sequence flags, interning and the order of track descriptors.
//!
//! Needs python3 with `venv` and pip's registry (PyPI) for `perfetto` and `protobuf`,
//! installed into a virtual environment under target/. Without them the test says why on
//! the terminal and passes without running, unless `FRAMELAB_REQUIRE_PYTHON=1` (set by
//! .ci/run), where that is a failure.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{framelab, output_text, python_skip_or_fail, python_venv, stderr};

fn skip_or_fail(why: &str) {
    python_skip_or_fail(
        "export_perfetto_schema",
        why,
        "the Perfetto export was not decoded with Perfetto's schema (needs python3, \
         python3-venv and PyPI)",
    );
}

/// The work folder's virtual environment with `perfetto` and `protobuf`, or why not.
fn venv_with_perfetto(work: &Path) -> Result<PathBuf, String> {
    let bin = python_venv(work)?;
    let has_schema = |bin: &Path| {
        Command::new(bin)
            .args([
                "-c",
                "from perfetto.protos.perfetto.trace import perfetto_trace_pb2",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has_schema(&bin) {
        return Ok(bin);
    }
    let install = Command::new(&bin)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "perfetto",
            "protobuf",
        ])
        .output()
        .map_err(|e| format!("pip cannot be started: {e}"))?;
    if !install.status.success() || !has_schema(&bin) {
        return Err(format!(
            "pip install perfetto protobuf failed: {}",
            output_text(&install)
        ));
    }
    Ok(bin)
}

fn import(fixture: &str, out: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = framelab()
        .arg("import")
        .arg(root.join("tests/fixtures/import").join(fixture))
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn every_value_of_the_perfetto_export_decodes_with_perfettos_schema() {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("perfetto-schema");
    std::fs::create_dir_all(&work).unwrap();
    let python = match venv_with_perfetto(&work) {
        Ok(python) => python,
        Err(why) => return skip_or_fail(&why),
    };
    let dir = tempfile::tempdir().unwrap();
    // Real captures: PresentMon (tid 0, telemetry series), MangoHud (pid 0: no process
    // known), Chrome (instants, 7 threads of 3 processes, counters) and Chromium's own
    // Perfetto trace.
    let runs: Vec<PathBuf> = [
        "presentmon-v1-farcrynewdawn.csv",
        "mangohud-0.6.8-glxgears-llvmpipe.csv",
        "chrome-156-headless-startup.json.gz",
        "chromium-156-startup.pftrace.gz",
    ]
    .iter()
    .map(|fixture| {
        let run = dir.path().join(format!("{fixture}.framelab"));
        import(fixture, &run);
        run
    })
    .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/validate/check_perfetto.py");
    let check = Command::new(&python)
        .arg(script)
        .arg("pypi")
        .arg(env!("CARGO_BIN_EXE_framelab"))
        .args(&runs)
        .arg("--edge-cases")
        .output()
        .unwrap();
    let output = output_text(&check);
    println!("{output}");
    assert!(check.status.success(), "mismatches:\n{output}");
    assert!(output.contains("all values match"), "{output}");
    // Every run was checked, spans and all.
    for run in &runs {
        let name = run.file_name().unwrap().to_string_lossy();
        assert!(
            output.contains(&format!("| {name} | slices vs CSV export |")),
            "{name} not checked:\n{output}"
        );
    }
}
