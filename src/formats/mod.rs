//! What the importer and the exporter of one trace format agree on: the names framelab
//! writes into a trace and recognises when it reads one back, the run description an
//! export carries, and the wire schema of Perfetto traces. `import` and `export` both
//! depend on this module and never on each other.

pub mod carried;
pub mod perfetto;

use crate::model::SampleSeries;

/// The instant marking the run's launch (its time origin) in exported traces: the
/// importers take it as the origin, so times come back unchanged.
pub const LAUNCH_MARKER: &str = "framelab:launch";

/// How a telemetry series is named in every trace framelab writes (a Chrome counter, a
/// Perfetto counter track): `SOURCE.METRIC[ENTITY] (UNIT)`, e.g. `nvml.sm_clock[0] (MHz)`.
/// The Chrome importer gives a counter of this name its series back.
pub fn series_name(s: &SampleSeries) -> String {
    let mut name = format!("{}.{}", s.source, s.metric);
    if !s.entity.is_empty() {
        name.push_str(&format!("[{}]", s.entity));
    }
    if !s.unit.is_empty() {
        name.push_str(&format!(" ({})", s.unit));
    }
    name
}
