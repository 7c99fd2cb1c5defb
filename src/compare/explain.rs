//! Why a variant's rate or latency changed, in the words of the pipeline analysis: which
//! stages got faster or slower, which waits grew or shrank, where the bottleneck went.
//! Medians over each variant's runs; shown, never used for a verdict.

use std::collections::BTreeMap;

use super::load::Loaded;
use super::RunData;
use crate::analyze::pipeline::PipelineSummary;
use crate::experiment::RunStatus;

/// A change worth a word: at least this fraction of the baseline's value...
const RELATIVE: f64 = 0.10;
/// ...and at least this many ns (a 10% change of 2 µs is noise).
const ABSOLUTE_NS: f64 = 20_000.0;

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        }
    })
}

/// A variant's typical figures: medians over its runs.
#[derive(Default)]
struct Typical {
    stages: BTreeMap<String, f64>,
    waits: BTreeMap<String, f64>,
    work: Option<f64>,
    waited: Option<f64>,
    /// (resource, stage) most runs name, its busy % and fps bound (medians).
    bottleneck: Option<(String, String, f64, f64)>,
}

fn typical(runs: &[&RunData]) -> Typical {
    let mut stages: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut waits: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let (mut work, mut waited) = (Vec::new(), Vec::new());
    let mut bottlenecks: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for r in runs {
        for (name, values) in &r.stages {
            if let Some(p50) = values.percentile(0.5) {
                stages.entry(name.clone()).or_default().push(p50);
            }
        }
        let Some(p) = &r.pipeline else { continue };
        for w in &p.waits {
            if let Some(d) = &w.dist {
                waits.entry(w.name.clone()).or_default().push(d.p50_ns);
            }
        }
        work.extend(p.work.as_ref().map(|d| d.p50_ns));
        waited.extend(p.waited.as_ref().map(|d| d.p50_ns));
        if let Some(b) = &p.bottleneck {
            (bottlenecks
                .entry((b.resource.clone(), b.stage.clone()))
                .or_default())
            .push((b.busy_pct, b.fps_bound));
        }
    }
    let most = bottlenecks.into_iter().max_by_key(|(_, v)| v.len());
    Typical {
        stages: (stages.into_iter())
            .filter_map(|(k, v)| Some((k, median(v)?)))
            .collect(),
        waits: (waits.into_iter())
            .filter_map(|(k, v)| Some((k, median(v)?)))
            .collect(),
        work: median(work),
        waited: median(waited),
        bottleneck: most.and_then(|((resource, stage), v)| {
            let busy = median(v.iter().map(|x| x.0).collect())?;
            let fps = median(v.iter().map(|x| x.1).collect())?;
            Some((resource, stage, busy, fps))
        }),
    }
}

fn us(ns: f64) -> String {
    crate::report::format::us(ns)
}

/// `encode p50 2527 → 120 µs (−95%)` when the change is worth a word.
fn change(label: &str, from: f64, to: f64) -> Option<String> {
    let delta = to - from;
    if delta.abs() < ABSOLUTE_NS || (from > 0.0 && (delta / from).abs() < RELATIVE) {
        return None;
    }
    let pct = if from > 0.0 {
        format!(" ({:+.0}%)", delta / from * 100.0).replace('-', "−")
    } else {
        String::new()
    };
    Some(format!("{label} {} → {} µs{pct}", us(from), us(to)))
}

fn explain_pair(base: &Typical, other: &Typical) -> Vec<String> {
    let mut parts = Vec::new();
    for (name, &to) in &other.stages {
        if let Some(&from) = base.stages.get(name) {
            parts.extend(change(&format!("{name} p50"), from, to));
        }
    }
    let names: std::collections::BTreeSet<&String> =
        base.waits.keys().chain(other.waits.keys()).collect();
    for name in names {
        let (from, to) = (base.waits.get(name), other.waits.get(name));
        parts.extend(change(
            &format!("{name} wait p50"),
            from.copied().unwrap_or(0.0),
            to.copied().unwrap_or(0.0),
        ));
    }
    if let (Some(a), Some(b), Some(c), Some(d)) = (base.work, other.work, base.waited, other.waited)
    {
        parts.push(format!(
            "per frame: work p50 {} → {} µs, waits p50 {} → {} µs",
            us(a),
            us(b),
            us(c),
            us(d)
        ));
    }
    match (&base.bottleneck, &other.bottleneck) {
        (Some((r1, s1, b1, f1)), Some((r2, s2, b2, f2))) => {
            let what = if (r1, s1) == (r2, s2) {
                format!("bottleneck stays {s1} on {r1}")
            } else if s1 == s2 {
                format!("bottleneck {s1} moved from thread {r1} to {r2}")
            } else {
                format!("bottleneck moved from {s1} ({r1}) to {s2} ({r2})")
            };
            parts.push(format!(
                "{what}: {b1:.0}% → {b2:.0}% busy, allows {f1:.0} → {f2:.0} fps"
            ));
        }
        (None, Some((r, s, b, f))) => {
            parts.push(format!(
                "bottleneck {s} ({r}) {b:.0}% busy, allows {f:.0} fps"
            ));
        }
        _ => {}
    }
    parts
}

/// One line per variant other than the baseline whose runs have a pipeline analysis.
pub fn explain(loaded: &Loaded, baseline: &str) -> Vec<String> {
    let runs_of = |variant: &str| -> Vec<&RunData> {
        (loaded.runs.iter())
            .filter(|r| r.variant == variant && r.status == RunStatus::Ok)
            .filter_map(|r| r.data.as_ref())
            .collect()
    };
    let has_pipeline =
        |runs: &[&RunData]| runs.iter().any(|r| r.pipeline.as_ref().is_some_and(useful));
    let base_runs = runs_of(baseline);
    if !has_pipeline(&base_runs) {
        return Vec::new();
    }
    let base = typical(&base_runs);
    (loaded.variants.iter())
        .filter(|v| v.as_str() != baseline)
        .filter_map(|v| {
            let runs = runs_of(v);
            if !has_pipeline(&runs) {
                return None;
            }
            let parts = explain_pair(&base, &typical(&runs));
            (!parts.is_empty()).then(|| format!("{v} vs {baseline}: {}", parts.join("; ")))
        })
        .collect()
}

fn useful(p: &PipelineSummary) -> bool {
    !p.waits.is_empty() || p.bottleneck.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::pipeline::{Bottleneck, WaitRow};
    use crate::analyze::Dist;
    use crate::stats::SortedValues;

    fn run(encode_us: i64, wait_us: f64, resource: &str, stage: &str, busy: f64) -> RunData {
        let dist = |us: f64| Dist {
            count: 1,
            p50_ns: us * 1e3,
            ..Dist::default()
        };
        RunData {
            stages: vec![
                ("convert".into(), SortedValues::all(&[400_000i64])),
                ("encode".into(), SortedValues::all(&[encode_us * 1000])),
            ],
            pipeline: Some(PipelineSummary {
                waits: vec![WaitRow {
                    name: "convert→encode".into(),
                    from: "convert".into(),
                    to: "encode".into(),
                    dist: Some(dist(wait_us)),
                    overlaps: 0,
                }],
                work: Some(dist(3000.0)),
                waited: Some(dist(wait_us)),
                bottleneck: Some(Bottleneck {
                    resource: resource.into(),
                    queue: false,
                    stage: stage.into(),
                    busy_pct: busy,
                    fps_bound: 100.0 / busy * 100.0,
                }),
                ..PipelineSummary::default()
            }),
            ..RunData::default()
        }
    }

    #[test]
    fn a_stage_that_fell_a_wait_that_grew_and_a_bottleneck_that_moved() {
        let (a, b) = (
            run(4485, 0.0, "main", "encode", 80.0),
            run(120, 4300.0, "capture", "convert", 50.0),
        );
        let parts = explain_pair(&typical(&[&a]), &typical(&[&b]));
        assert_eq!(
            parts,
            [
                "encode p50 4485 → 120 µs (−97%)",
                "convert→encode wait p50 0.00 → 4300 µs",
                "per frame: work p50 3000 → 3000 µs, waits p50 0.00 → 4300 µs",
                "bottleneck moved from encode (main) to convert (capture): 80% → 50% busy, \
                 allows 125 → 200 fps",
            ]
        );
        // The same runs on both sides: nothing moved but the line on the bottleneck.
        let same = explain_pair(&typical(&[&a]), &typical(&[&a]));
        assert_eq!(same.len(), 2);
        assert!(
            same[1].starts_with("bottleneck stays encode on main"),
            "{same:?}"
        );
    }
}
