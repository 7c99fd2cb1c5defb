//! The machine next to each worst frame: for every source, the reading nearest the frame
//! (inside it if any, the latest; else the closest to either edge), and the throttle
//! reasons seen during late frames.

use std::collections::BTreeMap;

use super::series::{display_unit, distance, is_energy, joules_per_unit, Points};
use super::{FrameSamples, FrameSpan, Nearest, ThrottleSummary};
use crate::model::{SampleSeries, SeriesKind};
use crate::sample::nvml::throttle::{is_slowdown, reason_names};

/// The readings shown next to a frame, in column order: (source, metric, column title).
/// GPU clock and busy % first: they explain most GPU-bound spikes.
const HEADLINES: [(&str, &str, &str); 8] = [
    ("nvml", "sm_clock", "MHz"),
    ("nvml", "gpu_busy", "busy %"),
    ("nvml", "power", "W"),
    ("nvml", "throttle", "throttle"),
    ("amdgpu", "sclk", "MHz"),
    ("amdgpu", "gpu_busy", "busy %"),
    ("amdgpu", "power", "W"),
    ("rapl", "energy", "W"),
];

/// A short name for the device of a series: `GPU0`, `card1`, `package-0`.
pub fn device_name(s: &SampleSeries) -> String {
    match s.source.as_str() {
        "nvml" => format!("GPU{}", s.entity),
        "amdgpu" => format!("card{}", s.entity),
        _ => s.label.clone(),
    }
}

/// The columns a worst-frame table shows for this run: (column title, series ids). The
/// CPU frequency column averages every core's reading of one tick.
pub fn columns(series: &[SampleSeries]) -> Vec<(String, Vec<usize>)> {
    let mut columns = Vec::new();
    for (source, metric, title) in HEADLINES {
        for (id, s) in series.iter().enumerate() {
            if s.source == source && s.metric == metric {
                columns.push((format!("{} {title}", device_name(s)), vec![id]));
            }
        }
    }
    let cores: Vec<usize> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.source == "cpufreq" && s.metric == "freq")
        .map(|(id, _)| id)
        .collect();
    if !cores.is_empty() {
        columns.push(("CPU MHz".into(), cores));
    }
    columns
}

/// One column's reading for a frame.
fn reading(series: &[SampleSeries], points: &[Points], ids: &[usize], f: &FrameSpan) -> Nearest {
    let first = &series[ids[0]];
    let (scale, unit) = display_unit(&first.unit);
    let mut nearest = Nearest {
        unit: unit.to_string(),
        ..Nearest::default()
    };
    if is_energy(first) {
        // Power over the interval between readings that holds the frame's end.
        let per_unit = joules_per_unit(&first.unit).unwrap_or(0.0);
        if let Some((rate, dist)) = points[ids[0]].rate_near(f.start_ns, f.end_ns) {
            nearest.value = Some(rate * per_unit);
            nearest.distance_ns = Some(dist);
            nearest.unit = "W".into();
        }
        return nearest;
    }
    if ids.len() > 1 {
        // Cores are read in one tick: the mean of the nearest tick's readings.
        let p = &points[ids[0]];
        let Some(i) = p.nearest(f.start_ns, f.end_ns) else {
            return nearest;
        };
        let t = p.0[i].0;
        let values: Vec<f64> = ids
            .iter()
            .filter_map(|&id| {
                points[id]
                    .0
                    .iter()
                    .find(|&&(at, _)| at == t)
                    .map(|&(_, v)| v as f64)
            })
            .collect();
        nearest.value = Some(values.iter().sum::<f64>() / values.len().max(1) as f64 * scale);
        nearest.distance_ns = Some(distance(t, f.start_ns, f.end_ns));
        return nearest;
    }
    let p = &points[ids[0]];
    let Some(i) = p.nearest(f.start_ns, f.end_ns) else {
        return nearest;
    };
    let (t, v) = p.0[i];
    nearest.distance_ns = Some(distance(t, f.start_ns, f.end_ns));
    if first.kind == SeriesKind::Bitmask {
        nearest.flags = Some(
            reason_names(v as u64)
                .into_iter()
                .filter(|n| is_slowdown(n))
                .collect(),
        );
    } else {
        nearest.value = Some(v as f64 * scale);
    }
    nearest
}

pub fn frame_samples(
    series: &[SampleSeries],
    points: &[Points],
    worst: &[FrameSpan],
) -> (Vec<String>, Vec<FrameSamples>) {
    let columns = columns(series);
    if columns.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let titles = columns.iter().map(|(t, _)| t.clone()).collect();
    let rows = worst
        .iter()
        .map(|f| FrameSamples {
            frame: f.frame,
            end_s: f.end_ns as f64 / 1e9,
            total_ns: f.end_ns - f.start_ns,
            readings: columns
                .iter()
                .map(|(_, ids)| reading(series, points, ids, f))
                .collect(),
        })
        .collect();
    (titles, rows)
}

/// Throttle reasons (slowdowns only) of every GPU during late frames, and how often each
/// was set over the whole window. `None` without a throttle series.
pub fn throttle_summary(
    series: &[SampleSeries],
    points: &[Points],
    late: &[FrameSpan],
    start: i64,
    end: i64,
) -> Option<ThrottleSummary> {
    let ids: Vec<usize> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == SeriesKind::Bitmask && s.metric == "throttle")
        .map(|(id, _)| id)
        .collect();
    if ids.is_empty() {
        return None;
    }
    let mut during_late: BTreeMap<String, u64> = BTreeMap::new();
    for f in late {
        let mut seen = std::collections::BTreeSet::new();
        for &id in &ids {
            let p = &points[id];
            let inside = p.within(f.start_ns, f.end_ns);
            let readings: Vec<i64> = if inside.is_empty() {
                p.nearest(f.start_ns, f.end_ns)
                    .map(|i| p.0[i].1)
                    .into_iter()
                    .collect()
            } else {
                inside.iter().map(|&(_, v)| v).collect()
            };
            for v in readings {
                for name in reason_names(v as u64) {
                    seen.insert(format!("{} {name}", device_name(&series[id])));
                }
            }
        }
        for name in seen {
            *during_late.entry(name).or_default() += 1;
        }
    }
    let mut over_window: BTreeMap<String, u64> = BTreeMap::new();
    let mut readings = 0u64;
    for &id in &ids {
        for &(_, v) in points[id].within(start, end) {
            readings += 1;
            for name in reason_names(v as u64) {
                *over_window
                    .entry(format!("{} {name}", device_name(&series[id])))
                    .or_default() += 1;
            }
        }
    }
    let mut late_reasons: Vec<(String, u64)> = during_late.into_iter().collect();
    late_reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut window_reasons: Vec<(String, f64)> = over_window
        .into_iter()
        .map(|(n, c)| (n, c as f64 * 100.0 / readings.max(1) as f64))
        .collect();
    window_reasons.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(ThrottleSummary {
        late_frames: late.len() as u64,
        during_late: late_reasons,
        over_window_pct: window_reasons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn gauge(
        source: &str,
        metric: &str,
        entity: &str,
        unit: &str,
        kind: SeriesKind,
    ) -> SampleSeries {
        SampleSeries {
            source: source.into(),
            metric: metric.into(),
            entity: entity.into(),
            label: String::new(),
            unit: unit.into(),
            kind,
        }
    }

    #[test]
    fn each_column_takes_the_reading_nearest_the_frame() {
        let series = vec![
            gauge("nvml", "sm_clock", "0", "MHz", SeriesKind::Gauge),
            gauge("nvml", "gpu_busy", "0", "%", SeriesKind::Gauge),
            gauge("cpufreq", "freq", "0", "kHz", SeriesKind::Gauge),
            gauge("cpufreq", "freq", "1", "kHz", SeriesKind::Gauge),
            gauge("nvml", "throttle", "0", "flags", SeriesKind::Bitmask),
        ];
        let every50 = |values: [i64; 4]| {
            Points(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (i as i64 * 50 * MS, v))
                    .collect(),
            )
        };
        let points = vec![
            every50([1980, 1980, 1410, 1980]),
            every50([99, 100, 100, 60]),
            every50([3_000_000, 3_000_000, 2_000_000, 3_000_000]),
            every50([3_000_000, 3_000_000, 1_000_000, 3_000_000]),
            every50([0, 0, 0x4 | 0x1, 0]),
        ];
        // A frame from 90 to 96 ms: no reading inside; 100 ms is 4 ms after its end,
        // 50 ms is 40 ms before its start.
        let f = FrameSpan {
            frame: 7,
            start_ns: 90 * MS,
            end_ns: 96 * MS,
        };
        let (titles, rows) = frame_samples(&series, &points, &[f]);
        assert_eq!(
            titles,
            ["GPU0 MHz", "GPU0 busy %", "GPU0 throttle", "CPU MHz"]
        );
        let r = &rows[0].readings;
        assert_eq!(r[0].value, Some(1410.0));
        assert_eq!(r[0].distance_ns, Some(4 * MS));
        assert_eq!(r[1].value, Some(100.0));
        assert_eq!(
            r[2].flags.as_deref(),
            Some(&["sw_power_cap".to_string()][..])
        );
        // Mean of the two cores at 100 ms: (2000 + 1000) / 2 MHz.
        assert_eq!(r[3].value, Some(1500.0));
        assert_eq!(rows[0].total_ns, 6 * MS);
    }

    #[test]
    fn throttle_reasons_during_late_frames_and_over_the_window() {
        let series = vec![gauge("nvml", "throttle", "0", "flags", SeriesKind::Bitmask)];
        let points = vec![Points(vec![
            (0, 0x1),
            (10 * MS, 0x4),
            (20 * MS, 0x4 | 0x40),
            (30 * MS, 0),
        ])];
        let late = [
            FrameSpan {
                frame: 1,
                start_ns: 8 * MS,
                end_ns: 12 * MS,
            },
            FrameSpan {
                frame: 2,
                start_ns: 15 * MS,
                end_ns: 25 * MS,
            },
        ];
        let t = throttle_summary(&series, &points, &late, 0, 30 * MS).unwrap();
        assert_eq!(t.late_frames, 2);
        assert_eq!(
            t.during_late,
            vec![
                ("GPU0 sw_power_cap".to_string(), 2),
                ("GPU0 hw_thermal_slowdown".to_string(), 1)
            ]
        );
        // 4 readings: power cap in 2, idle in 1, thermal in 1.
        assert_eq!(
            t.over_window_pct[0],
            ("GPU0 sw_power_cap".to_string(), 50.0)
        );
    }
}
