//! `framelab sources`: each telemetry source's state and its raw readings, as the source
//! gave them (units included), so what framelab sees can be checked against other tools.

use std::time::Duration;

use crate::model::{Sample, SampleSeries, SourceStatus};
use crate::render::columns::{render as table, Column};
use crate::render::style::Style;
use crate::render::Value;

pub fn render(
    sources: &[SourceStatus],
    series: &[SampleSeries],
    samples: &[Sample],
    every: Duration,
) -> String {
    let st = Style::default();
    let reads = sources.iter().map(|s| s.reads).max().unwrap_or(0);
    let mut out = format!(
        "framelab sources · {reads} reading{} {} apart\n",
        if reads == 1 { "" } else { "s" },
        humantime::format_duration(every)
    );
    for s in sources {
        let cost = if s.reads > 0 {
            format!(
                " ({:.0} µs of CPU per reading)",
                s.cpu_ns as f64 / s.reads as f64 / 1e3
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  {:<9} {:<9}{}{cost}\n",
            s.source,
            super::telemetry::state_word(s.state),
            s.detail
        ));
    }
    if series.is_empty() {
        return out;
    }
    let columns = [
        Column::new("source", 9),
        Column::new("metric", 16),
        Column::new("entity", 10),
        Column::new("label", 12),
        Column::new("unit", 7),
        Column::new("readings", 10),
    ];
    let rows: Vec<Vec<Value>> = series
        .iter()
        .enumerate()
        .map(|(id, s)| {
            let values: Vec<Value> = samples
                .iter()
                .filter(|x| x.series as usize == id)
                .map(|x| match s.kind {
                    crate::model::SeriesKind::Bitmask => Value::Flags(x.value),
                    _ => Value::Count(x.value),
                })
                .collect();
            vec![
                Value::Text(s.source.clone()),
                Value::Text(s.metric.clone()),
                Value::Text(s.entity.clone()),
                Value::Text(s.label.clone()),
                Value::Text(s.unit.clone()),
                Value::Several(values),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(&columns, &rows, false, &st));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SeriesKind, SourceState};

    /// Each series' raw readings as the source gave them: whole numbers, flags in hex.
    #[test]
    fn raw_readings_are_shown_as_the_source_gave_them() {
        let status = SourceStatus {
            source: "nvml".into(),
            state: SourceState::On,
            detail: "GPU0".into(),
            every_ns: 50_000_000,
            reads: 2,
            skipped: 0,
            cpu_ns: 400_000,
            wall_ns: 100_000_000,
        };
        let series = |metric: &str, unit: &str, kind| SampleSeries {
            source: "nvml".into(),
            metric: metric.into(),
            entity: "0".into(),
            label: "H200".into(),
            unit: unit.into(),
            kind,
        };
        let sample = |series, value| Sample {
            series,
            t_ns: 0,
            value,
        };
        let text = render(
            &[status],
            &[
                series("sm_clock", "MHz", SeriesKind::Gauge),
                series("throttle", "flags", SeriesKind::Bitmask),
            ],
            &[sample(0, 1980), sample(1, 5), sample(0, 1965), sample(1, 0)],
            Duration::from_millis(50),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "  nvml      on       GPU0 (200 µs of CPU per reading)"
        );
        assert!(lines[4].ends_with("MHz  1980 1965"), "{text}");
        assert!(lines[5].ends_with("flags    0x5 0x0"), "{text}");
    }
}
