//! The fallback without permission for tracepoints: each thread's `schedstat` totals (time
//! on CPU, time waiting on a run queue), read by the thread sampler at its interval and
//! stored as the `threads` source's `cpu_time` and `run_wait` series. Between two readings
//! of a series, what it grew by is a slice; where in it the thread ran is not known, so a
//! span gets a share of a slice in proportion to how much of it the span covers: as
//! coarse as the sampling interval.

use super::{SchedSlice, SchedSource, SchedTimeline};
use crate::model::{SeriesKind, Telemetry};

/// Slices of every thread the `threads` source read, by thread then time.
pub fn slices(telemetry: &Telemetry) -> Vec<SchedSlice> {
    let mut out = Vec::new();
    // Samples are stored by series, then time.
    let mut by_series: Vec<Vec<(i64, i64)>> = vec![Vec::new(); telemetry.series.len()];
    for s in &telemetry.samples {
        if let Some(points) = by_series.get_mut(s.series as usize) {
            points.push((s.t_ns, s.value));
        }
    }
    for (series, points) in telemetry.series.iter().zip(&by_series) {
        let on_cpu = match series.metric.as_str() {
            "cpu_time" => true,
            "run_wait" => false,
            _ => continue,
        };
        if series.source != "threads" || series.kind != SeriesKind::Counter {
            continue;
        }
        let Some(tid) = series
            .entity
            .split_once('/')
            .and_then(|(_, t)| t.parse::<u32>().ok())
        else {
            continue;
        };
        for pair in points.windows(2) {
            let ((t0, v0), (t1, v1)) = (pair[0], pair[1]);
            let grew = (v1 - v0).max(0);
            if t1 <= t0 || grew == 0 {
                continue;
            }
            out.push(SchedSlice {
                tid,
                start_ns: t0,
                dur_ns: t1 - t0,
                on_cpu_ns: if on_cpu { grew } else { 0 },
                runnable_ns: if on_cpu { 0 } else { grew },
                by: String::new(),
            });
        }
    }
    out.sort_by_key(|s| (s.tid, s.start_ns));
    out
}

/// The timeline of a run recorded with the fallback: `None` where the threads were not
/// sampled (nothing to split spans with).
pub fn timeline(telemetry: &Telemetry, detail: String) -> Option<SchedTimeline> {
    let every_ns = telemetry
        .sources
        .iter()
        .find(|s| s.source == "threads")?
        .every_ns;
    Some(SchedTimeline {
        source: SchedSource::Schedstat,
        detail,
        resolution_ns: every_ns,
        lost: 0,
        slices: slices(telemetry),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Sample, SampleSeries};

    fn series(metric: &str, entity: &str) -> SampleSeries {
        SampleSeries {
            source: "threads".into(),
            metric: metric.into(),
            entity: entity.into(),
            label: "main".into(),
            unit: "ns".into(),
            kind: SeriesKind::Counter,
        }
    }

    #[test]
    fn readings_become_slices_of_what_grew_between_them() {
        let telemetry = Telemetry {
            sources: Vec::new(),
            series: vec![series("cpu_time", "10/11"), series("run_wait", "10/11")],
            samples: vec![
                Sample {
                    series: 0,
                    t_ns: 0,
                    value: 100,
                },
                Sample {
                    series: 0,
                    t_ns: 50,
                    value: 130,
                },
                Sample {
                    series: 1,
                    t_ns: 0,
                    value: 5,
                },
                Sample {
                    series: 1,
                    t_ns: 50,
                    value: 25,
                },
            ],
        };
        let s = slices(&telemetry);
        assert_eq!(s.len(), 2);
        assert!(s
            .iter()
            .all(|s| s.tid == 11 && s.start_ns == 0 && s.dur_ns == 50));
        assert_eq!(s.iter().map(|s| s.on_cpu_ns).sum::<i64>(), 30);
        assert_eq!(s.iter().map(|s| s.runnable_ns).sum::<i64>(), 20);
    }
}
