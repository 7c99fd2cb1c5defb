//! Running framelab for a JSON document and reading it: the run-and-parse steps the
//! end-to-end tests of several subcommands share.
#![allow(dead_code)]

use std::process::Output;

use serde_json::Value;

use super::{framelab, stderr, stdout};

/// What a command printed on stdout, as JSON; the panic shows the text when it is not.
pub fn stdout_json(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

/// Runs `framelab ARGS`, which must succeed (its stderr says why not), for its JSON.
pub fn framelab_json(args: &[&str]) -> Value {
    let out = framelab().args(args).output().expect("framelab runs");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout_json(&out)
}

/// The row of `metric` in comparison `i` of the first group of a comparison (`compare` or
/// `bench --format json`).
pub fn comparison_row<'a>(c: &'a Value, i: usize, metric: &str) -> &'a Value {
    c["groups"][0]["comparisons"][i]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no comparison {i} in {c}"))
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric} in {c}"))
}

/// The row of `metric` in the first comparison of the first group.
pub fn row<'a>(c: &'a Value, metric: &str) -> &'a Value {
    comparison_row(c, 0, metric)
}
