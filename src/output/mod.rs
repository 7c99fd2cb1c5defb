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

pub use crate::model::captured::{CapturedOutput, MetricValue, COMMAND_ROLE, KEEP_BYTES};
