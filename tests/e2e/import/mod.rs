//! `framelab import`: each format from real captures.

mod chrome;
mod csv;
mod ffmpeg_bpftrace;
mod perfetto;
mod wayland;

use std::path::{Path, PathBuf};

use crate::common::framelab;

/// A file of tests/fixtures/import (its sources: SOURCES.md there).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// `framelab import INPUT -o RUN EXTRA…`: framelab's output.
fn import_into(input: &Path, run: &Path, extra: &[&str]) -> std::process::Output {
    framelab()
        .arg("import")
        .arg(input)
        .arg("-o")
        .arg(run)
        .args(extra)
        .output()
        .expect("framelab runs")
}

/// How many spans of `stage` the run holds (0 for a stage it does not name).
fn stage_count(run: &framelab::model::Run, stage: &str) -> usize {
    let id = run.stages.iter().position(|s| s == stage);
    (run.spans.iter())
        .filter(|s| Some(usize::from(s.stage)) == id)
        .count()
}
