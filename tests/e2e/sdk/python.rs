//! The Python package (python/): installed with the one command docs/python.md gives
//! (`pip install './python[test]'`) into a virtual environment under target/, then its
//! pytest suite run against the framelab binary cargo just built. This is how the README's
//! `cargo test --workspace` covers Python too.
//!
//! Needs python3 ≥ 3.9 with `venv` (tests/tools/install.sh, which .ci/run calls, installs
//! it) and pip's registry (PyPI) for maturin, pytest, pandas and polars. Without a usable
//! python3 the test says why on the terminal and passes without running, unless
//! `FRAMELAB_REQUIRE_PYTHON=1` (set by .ci/run), where that is a failure.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{output_text, python_skip_or_fail, python_venv};

fn skip_or_fail(why: &str) {
    python_skip_or_fail(
        "python_e2e",
        why,
        "run tests/tools/install.sh (python3 and python3-venv)",
    );
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

#[test]
fn the_python_package_installs_and_passes_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-e2e");
    std::fs::create_dir_all(&work).unwrap();
    let python = match python_venv(&work) {
        Ok(python) => python,
        Err(why) => return skip_or_fail(&why),
    };

    let install = run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("{}[test]", root.join("python").display()))
        // The extension's Rust build is kept here between runs, not in python/target.
        .env("CARGO_TARGET_DIR", work.join("build")));
    assert!(
        install.status.success(),
        "pip install ./python[test] failed:\n{}",
        output_text(&install)
    );

    let tests = run(Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .current_dir(&work)
        .env("FRAMELAB_BIN", env!("CARGO_BIN_EXE_framelab"))
        .env("FRAMELAB_REQUIRE_BIN", "1")
        .env_remove("FRAMELAB_SESSION"));
    let output = output_text(&tests);
    println!("{output}");
    assert!(tests.status.success(), "pytest failed:\n{output}");
    assert!(
        output.contains(" passed") && !output.contains(" skipped"),
        "pytest skipped tests:\n{output}"
    );
}

/// The package reads run files of the schema this framelab writes: a schema bump (docs/run-file.md)
/// must bump `SCHEMA_VERSION` in python/framelab/_read.py too. Needs no Python.
#[test]
fn the_package_reads_the_schema_framelab_writes() {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("python/framelab/_read.py"),
    )
    .unwrap();
    let declared = source
        .lines()
        .find_map(|l| l.strip_prefix("SCHEMA_VERSION = "))
        .expect("_read.py declares SCHEMA_VERSION");
    assert_eq!(
        declared.trim().parse::<i64>().unwrap(),
        framelab::store::SCHEMA_VERSION,
        "python/framelab/_read.py reads another schema than framelab writes"
    );
}
