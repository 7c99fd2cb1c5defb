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

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{framelab, python, python_skip_or_fail, stderr};

fn skip_or_fail(why: &str) {
    python_skip_or_fail(
        "export_perfetto_schema",
        why,
        "the Perfetto export was not decoded with Perfetto's schema (needs python3, \
         python3-venv and PyPI)",
    );
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A virtual environment under target/ with `perfetto` and `protobuf`, or why not.
fn venv_with_perfetto(work: &Path) -> Result<PathBuf, String> {
    let dir = work.join("venv");
    let bin = dir.join("bin/python");
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
    let _ = std::fs::remove_dir_all(&dir);
    let made = Command::new(python())
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .map_err(|e| format!("{} cannot be started: {e}", python()))?;
    if !made.status.success() {
        return Err(format!("`{} -m venv` failed: {}", python(), text(&made)));
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
            text(&install)
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
    let output = text(&check);
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
