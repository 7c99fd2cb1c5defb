//! `framelab history check`: change points over each series, named by the commit where the
//! metric moved, judged a regression or an improvement by which way the metric is better.
//! One series is one machine (and branch): series are checked apart, never pooled.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

mod render;

pub use render::{render, CheckFormat};

use super::changepoint::{detect, ChangePoint, DetectError, Options};
use super::series::Series;
use crate::stats::Direction;

pub const SCHEMA: &str = "framelab.history.check/1";

#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    pub detect: Options,
    /// Which way is better for metrics from output, by key, as their definitions stated
    /// (`--metric NAME:higher=...`); built-in metrics are known (`builtin_direction`).
    pub directions: BTreeMap<String, Direction>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub schema: &'static str,
    pub method: Method,
    pub series: Vec<SeriesCheck>,
}

/// The method and settings, so a reader of the JSON knows what "significant" meant.
#[derive(Clone, Debug, Serialize)]
pub struct Method {
    pub name: &'static str,
    pub significance: f64,
    pub permutations: usize,
    pub min_segment: usize,
    pub min_relative_change: f64,
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeriesCheck {
    pub metric: String,
    pub machine: String,
    pub branch: Option<String>,
    pub points: usize,
    pub direction: Direction,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Checked {
        changes: Vec<Change>,
        /// Points whose value was NaN or infinite, left out of the detection.
        left_out: Vec<LeftOut>,
    },
    Skipped {
        reason: String,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct LeftOut {
    pub commit: String,
    pub run_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Regression,
    Improvement,
    /// The metric's better direction is unknown: it moved, which is all that can be said.
    Moved,
}

#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// The first commit at the new level: where the metric moved.
    pub commit: String,
    /// The last commit at the old level (the change lies between the two).
    pub previous_commit: String,
    pub run_id: String,
    pub recorded_at_unix_s: i64,
    /// The commit's position in the series (oldest is 0).
    pub index: usize,
    pub before: f64,
    pub after: f64,
    pub relative_change: Option<f64>,
    pub p_value: f64,
    pub confidence: f64,
    pub kind: ChangeKind,
}

impl CheckReport {
    /// Whether any metric regressed (`--fail-on-regression`).
    pub fn has_regression(&self) -> bool {
        self.changes()
            .any(|(_, c)| c.kind == ChangeKind::Regression)
    }

    /// Every change with its series, in the series' order.
    pub fn changes(&self) -> impl Iterator<Item = (&SeriesCheck, &Change)> {
        self.series.iter().flat_map(|s| match &s.outcome {
            Outcome::Checked { changes, .. } => changes.iter().map(move |c| (s, c)).collect(),
            Outcome::Skipped { .. } => Vec::new(),
        })
    }
}

/// Looks for changes in each series on its own.
pub fn check(series: &[Series], opts: &CheckOptions) -> CheckReport {
    let mut seen = HashSet::new();
    let results = series
        .iter()
        .map(|s| {
            let direction = opts
                .directions
                .get(&s.metric)
                .copied()
                .unwrap_or_else(|| builtin_direction(&s.metric));
            let first = seen.insert((&s.metric, &s.machine, &s.branch));
            SeriesCheck {
                metric: s.metric.clone(),
                machine: s.machine.clone(),
                branch: s.branch.clone(),
                points: s.points.len(),
                direction,
                outcome: if s.machine.is_empty() {
                    skipped("no machine fingerprint: results of unknown machines are never pooled")
                } else if !first {
                    skipped(
                        "a second series of this metric, machine and branch: not merged with \
                         the first (one series each is expected)",
                    )
                } else {
                    check_one(s, direction, &opts.detect)
                },
            }
        })
        .collect();
    let d = &opts.detect;
    CheckReport {
        schema: SCHEMA,
        method: Method {
            name: "E-divisive means (Matteson & James 2014), permutation test",
            significance: d.significance,
            permutations: d.permutations,
            min_segment: d.min_segment,
            min_relative_change: d.min_relative_change,
            seed: d.seed,
        },
        series: results,
    }
}

fn skipped(reason: &str) -> Outcome {
    Outcome::Skipped {
        reason: reason.to_owned(),
    }
}

fn check_one(series: &Series, direction: Direction, opts: &Options) -> Outcome {
    let (finite, left_out): (Vec<usize>, Vec<usize>) =
        (0..series.points.len()).partition(|&i| series.points[i].value.is_finite());
    let values: Vec<f64> = finite.iter().map(|&i| series.points[i].value).collect();
    // Each series draws its own permutations, whichever others are checked with it.
    let opts = Options {
        seed: crate::stats::seed::derive_seed(
            opts.seed,
            &format!(
                "{}\0{}\0{}",
                series.metric,
                series.machine,
                series.branch.as_deref().unwrap_or("")
            ),
        ),
        ..opts.clone()
    };
    let found = match detect(&values, &opts) {
        Ok(found) => found,
        Err(DetectError::TooFewPoints(t)) => {
            let unusable = match left_out.len() {
                0 => String::new(),
                n => format!(" ({n} more not finite)"),
            };
            return skipped(&format!("{} points{unusable}, need {}", t.have, t.need));
        }
        Err(e) => return skipped(&e.to_string()),
    };
    let point = |k: usize| &series.points[finite[k]];
    Outcome::Checked {
        changes: found
            .iter()
            .map(|c| Change {
                commit: point(c.index).commit.clone(),
                previous_commit: point(c.index - 1).commit.clone(),
                run_id: point(c.index).run_id.clone(),
                recorded_at_unix_s: point(c.index).recorded_at_unix_s,
                index: finite[c.index],
                before: c.before,
                after: c.after,
                relative_change: c.relative_change,
                p_value: c.p_value,
                confidence: c.confidence(),
                kind: kind_of(c, direction),
            })
            .collect(),
        left_out: left_out
            .iter()
            .map(|&i| LeftOut {
                commit: series.points[i].commit.clone(),
                run_id: series.points[i].run_id.clone(),
            })
            .collect(),
    }
}

fn kind_of(change: &ChangePoint, direction: Direction) -> ChangeKind {
    let up = change.after > change.before;
    match (direction, up) {
        (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
            ChangeKind::Improvement
        }
        (Direction::HigherIsBetter, false) | (Direction::LowerIsBetter, true) => {
            ChangeKind::Regression
        }
        (Direction::Unstated, _) => ChangeKind::Moved,
    }
}

/// Which way is better for the metrics `compare` defines, by key
/// (`crate::compare::metrics::catalogue`): fps higher, every time, CPU, memory, energy and
/// late share lower. Any other key is a metric from output whose direction was not
/// stated: never called a regression.
pub fn builtin_direction(key: &str) -> Direction {
    const LOWER: [&str; 7] = [
        "late",
        "cpu_per_frame",
        "load",
        "cores",
        "peak_rss",
        "wall",
        "cpu",
    ];
    const LOWER_PREFIXES: [&str; 6] = [
        "energy_per_frame.",
        "cpu.",
        "load.",
        "cores.",
        "cpu_per_frame.",
        "cpu_per.",
    ];
    const PERCENTILES: [&str; 3] = [".p50", ".p95", ".p99"];
    if key == "fps" {
        Direction::HigherIsBetter
    } else if LOWER.contains(&key)
        || LOWER_PREFIXES.iter().any(|p| key.starts_with(p))
        || PERCENTILES.iter().any(|s| key.ends_with(s))
    {
        Direction::LowerIsBetter
    } else {
        Direction::Unstated
    }
}
