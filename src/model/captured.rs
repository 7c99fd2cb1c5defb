//! What a run took from its command's output: the metrics it printed and the last bytes of
//! each stream (filled by `crate::output` and the session, kept in the run file).

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
