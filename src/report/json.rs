//! The JSON report: every number of the analysis, units in the key names, under a
//! versioned schema so scripts can tell what they read.

use serde::Serialize;

use crate::analyze::Analysis;

/// Bump when a key is renamed, removed or changes meaning; adding keys keeps the version.
pub const SCHEMA: &str = "framelab.report/1";

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    #[serde(flatten)]
    analysis: &'a Analysis,
}

pub fn render(analysis: &Analysis) -> String {
    let report = Report {
        schema: SCHEMA,
        analysis,
    };
    // Serialising plain structs of numbers and strings cannot fail; keep a valid document anyway.
    let mut out = serde_json::to_string_pretty(&report)
        .unwrap_or_else(|e| format!("{{\"schema\": \"{SCHEMA}\", \"error\": \"{e}\"}}"));
    out.push('\n');
    out
}
