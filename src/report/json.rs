//! The JSON report: every number of the analysis, units in the key names, under a
//! versioned schema so scripts can tell what they read.

use serde::Serialize;

use crate::analyze::Analysis;

/// Bump when a key is renamed, removed or changes meaning; adding keys keeps the version.
pub const SCHEMA: &str = "framelab.report/3";

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    #[serde(flatten)]
    analysis: &'a Analysis,
}

pub fn render(analysis: &Analysis) -> String {
    let mut rounded = analysis.clone();
    round_cpu(&mut rounded);
    let report = Report {
        schema: SCHEMA,
        analysis: &rounded,
    };
    // Serialising plain structs of numbers and strings cannot fail; keep a valid document anyway.
    let mut out = serde_json::to_string_pretty(&report)
        .unwrap_or_else(|e| format!("{{\"schema\": \"{SCHEMA}\", \"error\": \"{e}\"}}"));
    out.push('\n');
    out
}

/// CPU figures derived from a CPU time (load %, cores, CPU per frame) carry no more digits
/// than that time's resolution gives them (`cpu_resolution_ns` beside them says what it is).
fn round_cpu(a: &mut Analysis) {
    use crate::analyze::cpu::{cores_resolution, load_resolution_pct};
    const MAX_DECIMALS: usize = 6;
    let round = |x: &mut f64, resolution: f64| {
        if resolution > 0.0 && x.is_finite() {
            let text = crate::units::fixed_to_resolution(*x, resolution, MAX_DECIMALS);
            *x = text.parse().unwrap_or(*x);
        }
    };
    for p in &mut a.processes {
        let load = load_resolution_pct(p.cpu_resolution_ns, p.wall_ns);
        round(&mut p.load_pct, load);
        round(&mut p.cores, cores_resolution(load, MAX_DECIMALS));
    }
    let window = a.window.length_ns;
    let Some(c) = &mut a.cpu else {
        return;
    };
    let load = load_resolution_pct(c.cpu_resolution_ns, window);
    if let (Some(l), Some(cores)) = (c.load_pct.as_mut(), c.cores.as_mut()) {
        round(l, load);
        round(cores, cores_resolution(load, MAX_DECIMALS));
    }
    if let (Some(per_frame), true) = (
        c.cpu_per_frame_ns.as_mut(),
        c.cpu_resolution_ns > 0 && c.work_units > 0,
    ) {
        round(per_frame, c.cpu_resolution_ns as f64 / c.work_units as f64);
    }
}
