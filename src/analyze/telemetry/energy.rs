//! Energy over the measured window, average power and energy per frame, per source and
//! device: from an energy counter when the source has one (NVML's total energy, RAPL),
//! else by integrating power readings (trapezoids).
//!
//! Readings rarely cover the whole window (the first comes after the source opened), so
//! energy is measured over the covered part and the window's energy is its mean power ×
//! the window's length; `covered_pct` says how much was covered.

use super::series::{is_energy, joules_per_unit, watts_per_unit, Points};
use super::EnergyRow;
use crate::model::{SampleSeries, SeriesKind};

/// Energy of one counter series over [start, end]: (joules, covered ns).
fn from_counter(points: &Points, joules_per_unit: f64, start: i64, end: i64) -> Option<(f64, i64)> {
    let first = points.0.first()?.0;
    let last = points.0.last()?.0;
    let (from, to) = (start.max(first), end.min(last));
    if to <= from {
        return None;
    }
    let delta = points.interpolate(to)? - points.interpolate(from)?;
    Some((delta * joules_per_unit, to - from))
}

/// Energy from power readings over [start, end] by trapezoids, the ends interpolated.
fn from_power(points: &Points, watts_per_unit: f64, start: i64, end: i64) -> Option<(f64, i64)> {
    let first = points.0.first()?.0;
    let last = points.0.last()?.0;
    let (from, to) = (start.max(first), end.min(last));
    if to <= from {
        return None;
    }
    let mut knots = vec![(from, points.interpolate(from)?)];
    knots.extend(
        points
            .within(from, to)
            .iter()
            .filter(|&&(t, _)| t > from && t < to)
            .map(|&(t, v)| (t, v as f64)),
    );
    knots.push((to, points.interpolate(to)?));
    let unit_ns: f64 = knots
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) as f64 * (w[0].1 + w[1].1) / 2.0)
        .sum();
    Some((unit_ns * watts_per_unit / 1e9, to - from))
}

/// One row per device with an energy counter, or else a power gauge.
pub fn energy_rows(
    series: &[SampleSeries],
    points: &[Points],
    start: i64,
    end: i64,
    frames: u64,
) -> Vec<EnergyRow> {
    let window_ns = end - start;
    let mut rows = Vec::new();
    let has_counter = |s: &SampleSeries| {
        series
            .iter()
            .any(|o| is_energy(o) && o.source == s.source && o.entity == s.entity)
    };
    for (id, s) in series.iter().enumerate() {
        let p = &points[id];
        let measured = if is_energy(s) {
            joules_per_unit(&s.unit)
                .and_then(|j| from_counter(p, j, start, end))
                .map(|m| (m, "energy counter"))
        } else if s.metric == "power" && s.kind == SeriesKind::Gauge && !has_counter(s) {
            watts_per_unit(&s.unit)
                .and_then(|w| from_power(p, w, start, end))
                .map(|m| (m, "power readings"))
        } else {
            None
        };
        let Some(((joules, covered_ns), method)) = measured else {
            continue;
        };
        let avg_power_w = joules * 1e9 / covered_ns as f64;
        let window_joules = avg_power_w * window_ns as f64 / 1e9;
        rows.push(EnergyRow {
            source: s.source.clone(),
            entity: s.entity.clone(),
            label: s.label.clone(),
            device: super::frames::device_name(s),
            method: method.into(),
            joules: window_joules,
            avg_power_w,
            joules_per_frame: (frames > 0).then(|| window_joules / frames as f64),
            covered_pct: covered_ns as f64 * 100.0 / window_ns.max(1) as f64,
        });
    }
    name_devices_apart(&mut rows);
    rows
}

/// `core@intel-rapl:1:0` for a device name that several rows share, so each metric a
/// comparison makes of them (`power.DEVICE`) names one device.
fn name_devices_apart(rows: &mut [EnergyRow]) {
    let names: Vec<String> = rows.iter().map(|r| r.device.clone()).collect();
    for row in rows.iter_mut() {
        if names.iter().filter(|n| **n == row.device).count() > 1 {
            row.device = format!("{}@{}", row.device, row.entity);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SeriesKind;

    fn series(source: &str, metric: &str, unit: &str, kind: SeriesKind) -> SampleSeries {
        SampleSeries {
            source: source.into(),
            metric: metric.into(),
            entity: "0".into(),
            label: "x".into(),
            unit: unit.into(),
            kind,
        }
    }

    const MS: i64 = 1_000_000;

    #[test]
    fn counter_energy_interpolates_the_window_edges() {
        // RAPL: 30 W steady = 30 000 µJ per ms, read every 100 ms from 0 to 1 s.
        let s = vec![series("rapl", "energy", "uJ", SeriesKind::Counter)];
        let p = vec![Points(
            (0..=10).map(|i| (i * 100 * MS, i * 3_000_000)).collect(),
        )];
        // Window 250 ms .. 750 ms: 0.5 s × 30 W = 15 J; 100 frames → 0.15 J each.
        let rows = energy_rows(&s, &p, 250 * MS, 750 * MS, 100);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert!((r.joules - 15.0).abs() < 1e-9, "{}", r.joules);
        assert!((r.avg_power_w - 30.0).abs() < 1e-9);
        assert!((r.joules_per_frame.unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(r.covered_pct, 100.0);
        assert_eq!(r.method, "energy counter");
    }

    #[test]
    fn partly_covered_windows_scale_the_mean_power() {
        // NVML energy in mJ: readings only from 500 ms on, 200 W (200 mJ/ms).
        let s = vec![series("nvml", "energy", "mJ", SeriesKind::Counter)];
        let p = vec![Points(
            (5..=10)
                .map(|i| (i * 100 * MS, 1_000_000 + (i - 5) * 20_000))
                .collect(),
        )];
        // Window 0 .. 1 s: covered 500 ms at 200 W → the window: 200 J; 50 frames: 4 J each.
        let rows = energy_rows(&s, &p, 0, 1000 * MS, 50);
        let r = &rows[0];
        assert!((r.avg_power_w - 200.0).abs() < 1e-9);
        assert!((r.joules - 200.0).abs() < 1e-9);
        assert!((r.joules_per_frame.unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(r.covered_pct, 50.0);
    }

    #[test]
    fn power_readings_are_integrated_when_there_is_no_counter() {
        // amdgpu power in µW: 100 W for 0..500 ms, then 200 W from 600 ms; ramp between.
        let s = vec![series("amdgpu", "power", "uW", SeriesKind::Gauge)];
        let readings = vec![
            (0, 100_000_000),
            (500 * MS, 100_000_000),
            (600 * MS, 200_000_000),
            (1000 * MS, 200_000_000),
        ];
        let p = vec![Points(readings)];
        // 0.5 s × 100 + 0.1 s × 150 + 0.4 s × 200 = 50 + 15 + 80 = 145 J over 1 s.
        let rows = energy_rows(&s, &p, 0, 1000 * MS, 0);
        let r = &rows[0];
        assert!((r.joules - 145.0).abs() < 1e-9, "{}", r.joules);
        assert!((r.avg_power_w - 145.0).abs() < 1e-9);
        assert_eq!(r.joules_per_frame, None);
        assert_eq!(r.method, "power readings");
    }

    #[test]
    fn devices_are_named_as_the_report_names_them_and_apart() {
        let mut s = vec![
            series("nvml", "energy", "mJ", SeriesKind::Counter),
            series("rapl", "energy", "uJ", SeriesKind::Counter),
            series("rapl", "energy", "uJ", SeriesKind::Counter),
        ];
        s[0].label = "NVIDIA H200".into();
        (s[1].entity, s[1].label) = ("intel-rapl:0:0".into(), "core".into());
        (s[2].entity, s[2].label) = ("intel-rapl:1:0".into(), "core".into());
        let p = vec![Points(vec![(0, 0), (MS, 100)]); 3];
        let names: Vec<String> = energy_rows(&s, &p, 0, MS, 1)
            .into_iter()
            .map(|r| r.device)
            .collect();
        assert_eq!(
            names,
            ["GPU0", "core@intel-rapl:0:0", "core@intel-rapl:1:0"]
        );
    }

    #[test]
    fn a_power_gauge_next_to_a_counter_is_not_counted_twice() {
        let s = vec![
            series("nvml", "power", "mW", SeriesKind::Gauge),
            series("nvml", "energy", "mJ", SeriesKind::Counter),
        ];
        let p = vec![
            Points(vec![(0, 100_000), (MS, 100_000)]),
            Points(vec![(0, 0), (MS, 100)]),
        ];
        let rows = energy_rows(&s, &p, 0, MS, 1);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].method, "energy counter");
    }
}
