//! Metrics that are one measurement by construction, so a comparison tests them once
//! (`crate::stats::gatekeeping`): a stage's percentile and the total's when that stage's
//! spans are the frames (a single-stage run), fps and wall when every run did the same
//! number of frames (fps = N ÷ wall, as under `--frames N`), CPU and CPU per frame when
//! every run divides by the same number of frames, and cores, which are load ÷ 100.
//! Each rule is checked on the runs compared, so metrics that differ are never merged.

use super::extract::RunData;
use super::metrics::{Kind, Metric, RoleFigure};

/// For each metric, the index of the first metric it is one measurement with (its own
/// index when none), and why for each one merged into an earlier one.
pub fn hypotheses(metrics: &[Metric], runs: &[&RunData]) -> (Vec<usize>, Vec<Merged>) {
    let mut of: Vec<usize> = Vec::with_capacity(metrics.len());
    let mut merged = Vec::new();
    for (i, metric) in metrics.iter().enumerate() {
        let same = (0..i)
            .filter(|&j| of[j] == j)
            .find_map(|j| Some((j, identical(&metrics[j], metric, runs)?)));
        match same {
            Some((j, why)) => {
                of.push(j);
                merged.push(Merged {
                    metric: i,
                    with: j,
                    why,
                });
            }
            None => of.push(i),
        }
    }
    (of, merged)
}

/// Metric `metric` is tested as metric `with` is, for the reason `why`.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    pub metric: usize,
    pub with: usize,
    pub why: &'static str,
}

/// Why `a` and `b` are one measurement in every one of `runs`, or `None`.
fn identical(a: &Metric, b: &Metric, runs: &[&RunData]) -> Option<&'static str> {
    use Kind::*;
    use RoleFigure as F;
    if runs.is_empty() {
        return None;
    }
    let frames_per_run = || {
        same_in_every_run(runs, |r| {
            (r.work_units > 0 && r.cpu_per_frame_ns.is_some()).then_some(r.work_units as f64)
        })
    };
    let why = match (&a.kind, &b.kind) {
        (Percentile { stage: Some(s), p }, Percentile { stage: None, p: q })
        | (Percentile { stage: None, p: q }, Percentile { stage: Some(s), p })
            if p == q =>
        {
            let one_span_per_frame = |r: &RunData| {
                !r.totals.is_empty()
                    && (r.stages.iter()).any(|(n, v)| n == s && v.same_values(&r.totals))
            };
            runs.iter().all(|r| one_span_per_frame(r)).then_some(
                "each frame is one span of its only stage, so its percentiles are the totals'",
            )?
        }
        (Fps, Wall) | (Wall, Fps) => {
            same_in_every_run(runs, |r| Some(r.observed_fps? * r.wall_ns as f64 / 1e9)).then_some(
                "every run did the same number of frames, so fps is that number ÷ wall",
            )?
        }
        (Cpu, CpuPerFrame) | (CpuPerFrame, Cpu) => frames_per_run().then_some(
            "every run did the same number of frames, so CPU per frame is CPU ÷ that number",
        )?,
        (Load, Cores) | (Cores, Load) => "cores are load ÷ 100",
        (
            Role {
                role: r1,
                figure: f1,
            },
            Role {
                role: r2,
                figure: f2,
            },
        ) if r1 == r2 => match (f1, f2) {
            (F::Load, F::Cores) | (F::Cores, F::Load) => "cores are load ÷ 100",
            (F::Cpu, F::CpuPerFrame) | (F::CpuPerFrame, F::Cpu) => frames_per_run().then_some(
                "every run did the same number of frames, so CPU per frame is CPU ÷ that number",
            )?,
            _ => return None,
        },
        _ => return None,
    };
    Some(why)
}

/// Whether `f` gives every run the same finite, non-zero number (to rounding).
fn same_in_every_run(runs: &[&RunData], f: impl Fn(&RunData) -> Option<f64>) -> bool {
    let Some(values) = runs.iter().map(|r| f(r)).collect::<Option<Vec<f64>>>() else {
        return false;
    };
    let first = values[0];
    first.is_finite() && first != 0.0 && values.iter().all(|v| ((v - first) / first).abs() < 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::metrics::catalogue;
    use crate::stats::SortedValues;

    fn keyed(all: &[Metric], keys: &[&str]) -> Vec<Metric> {
        keys.iter()
            .map(|k| all.iter().find(|m| m.key == *k).unwrap().clone())
            .collect()
    }

    fn run(stage: Vec<i64>, totals: Vec<i64>, wall_ms: i64, frames: u64) -> RunData {
        RunData {
            stages: vec![("frame".into(), SortedValues::all(&stage))],
            totals: SortedValues::all(&totals),
            wall_ns: wall_ms * 1_000_000,
            observed_fps: Some(frames as f64 / (wall_ms as f64 / 1e3)),
            cpu_measured: true,
            cpu_ns: 7_000_000,
            work_units: frames,
            cpu_per_frame_ns: Some(7_000_000.0 / frames as f64),
            load_pct: Some(40.0),
            ..RunData::default()
        }
    }

    #[test]
    fn a_single_stage_runs_percentiles_are_the_totals() {
        let (a, b) = (
            run(vec![1, 2, 3], vec![1, 2, 3], 100, 3),
            run(vec![2, 3], vec![2, 3], 120, 2),
        );
        let all = catalogue(&[&a, &b]);
        let metrics = keyed(&all, &["fps", "frame.p50", "total.p50", "total.p99"]);
        let (of, merged) = hypotheses(&metrics, &[&a, &b]);
        assert_eq!(of, [0, 1, 1, 3]);
        assert_eq!(merged.len(), 1);
        // A second stage's frames (or a frame with two spans): no longer the totals.
        let c = run(vec![2, 3, 4], vec![2, 7], 120, 2);
        assert_eq!(hypotheses(&metrics, &[&a, &c]).0, [0, 1, 2, 3]);
    }

    #[test]
    fn fps_is_wall_only_at_a_fixed_frame_count() {
        let (a, b) = (
            run(vec![1], vec![1], 100, 300),
            run(vec![1], vec![1], 130, 300),
        );
        let all = catalogue(&[&a, &b]);
        let metrics = keyed(
            &all,
            &["fps", "wall", "cpu_per_frame", "cpu", "load", "cores"],
        );
        assert_eq!(hypotheses(&metrics, &[&a, &b]).0, [0, 0, 2, 2, 4, 4]);
        // Runs that did different numbers of frames: fps and wall say different things.
        let c = run(vec![1], vec![1], 130, 310);
        assert_eq!(hypotheses(&metrics, &[&a, &c]).0, [0, 1, 2, 3, 4, 4]);
    }
}
