//! Metrics from the command's own output: a number it prints (`--metric
//! 'req_s:higher=Requests per second:\s+([\d.]+)'`) or writes to a JSON file
//! (`--metric 'p99:lower=json:result.json:$.latency.p99'`), taken once per run and judged
//! by `compare` like any built-in metric (docs/bench.md, "Metrics from the program's
//! output").
//!
//! - `spec`: the one syntax of a definition, its checks and the errors that teach it;
//! - `scan`: matching lines of a stream as they go by, keeping only what is needed;
//! - `json_path`: `$.a.b[0]` over a JSON document;
//! - `evaluate`: from what was seen (or the file) to a value or a one-line reason.

mod evaluate;
pub mod json_path;
pub mod scan;
pub mod spec;

pub use evaluate::{evaluate_json, evaluate_output, FileBefore};
pub use scan::{Scanner, Seen};
pub use spec::{parse_metrics, MetricSource, MetricSpec, Pick, Stream, RESERVED_NAMES};

use serde::{Deserialize, Serialize};

/// One metric of one run: its value, or why there is none (never a silent zero).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    pub name: String,
    /// Which part of the run printed it: `command` (services will add their role names).
    pub role: String,
    pub value: Option<f64>,
    /// As given in the definition (`req/s`), or empty.
    pub unit: String,
    /// Which way is better, when the definition said.
    pub direction: Option<crate::stats::Direction>,
    /// The definition as given (`req_s:higher=Requests per second:\s+([\d.]+)`).
    pub definition: String,
    /// Why there is no value, in one line quoting what was expected.
    pub failure: Option<String>,
}

/// What a run kept of one of its command's streams: the last bytes, and how many more
/// there were (dropped from the front so the file stays small).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedOutput {
    pub role: String,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// Everything the command wrote to it.
    pub bytes: u64,
    /// Dropped from the front: `bytes` − what `content` holds.
    pub dropped: u64,
    /// The last bytes (at most `KEEP_BYTES`), as written.
    #[serde(skip)]
    pub content: Vec<u8>,
    /// Something went wrong reading it (a process outside the command's group kept it
    /// open, a read error); empty when all went well.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// How much of each stream a run keeps: the last 1 MiB.
pub const KEEP_BYTES: usize = 1 << 20;

/// The role of the measured command (what services will be told apart from).
pub const COMMAND_ROLE: &str = "command";
