//! `framelab history check`: change points over each series, named by the commit where the
//! metric moved, judged a regression or an improvement by which way the metric is better.
//! One series is one machine (and branch): series are checked apart, never pooled.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

mod render;

pub use render::render;

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
    /// Of `before` and `after` (µs for times).
    pub unit: String,
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

    /// Whether a metric regressed at one of its series' newest `newest` points: in CI, an
    /// old regression that was accepted then need not fail every later check.
    pub fn has_regression_in_newest(&self, newest: usize) -> bool {
        self.changes()
            .any(|(s, c)| c.kind == ChangeKind::Regression && c.index + newest >= s.points)
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
                unit: s.unit.clone(),
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
    // Every series draws the same permutations, whichever others are checked with it: two
    // series equal up to scale (`load` and `cores`) get the same answer.
    let found = match detect(&values, opts) {
        Ok(found) => found,
        Err(DetectError::TooFewPoints(t)) => {
            let unusable = match left_out.len() {
                0 => String::new(),
                n => format!(" ({n} more not finite)"),
            };
            let have = crate::units::plural(t.have as u64, "point", "points");
            return skipped(&format!("{have}{unusable}, need {}", t.need));
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
/// (`crate::compare::metrics::catalogue`): fps higher, every time, CPU, memory, power,
/// energy and late share lower. Any other key is a metric from output whose direction was not
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
    const LOWER_PREFIXES: [&str; 8] = [
        "energy_per_frame.",
        "energy_per.",
        "power.",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::series::Point;
    use crate::render::Format;

    /// A series whose values step from `before` to `after` at index `at` of `n`, with a
    /// small deterministic wobble (±0.1%).
    fn series(metric: &str, machine: &str, n: usize, at: usize, before: f64, after: f64) -> Series {
        Series {
            metric: metric.into(),
            unit: "µs".into(),
            direction: String::new(),
            machine: machine.into(),
            branch: Some("main".into()),
            points: (0..n)
                .map(|i| {
                    let level = if i < at { before } else { after };
                    let wobble = 1.0 + 0.001 * (((i * 7919) % 13) as f64 / 6.0 - 1.0);
                    Point {
                        commit: commit(i),
                        branch: Some("main".into()),
                        recorded_at_unix_s: 1_700_000_000 + i as i64,
                        run_id: format!("run-{i}"),
                        value: level * wobble,
                    }
                })
                .collect(),
        }
    }

    /// A commit id as git writes it, its first 8 digits the index.
    fn commit(i: usize) -> String {
        format!("{i:08x}{}", "ab".repeat(16))
    }

    fn only_change(report: &CheckReport) -> &Change {
        let changes: Vec<_> = report.changes().collect();
        assert_eq!(changes.len(), 1, "{changes:?}");
        changes[0].1
    }

    #[test]
    fn a_drop_in_fps_is_a_regression_named_by_its_commit() {
        let report = check(
            &[series("fps", "m1", 40, 25, 120.0, 112.0)],
            &CheckOptions::default(),
        );
        let change = only_change(&report);
        assert_eq!(change.kind, ChangeKind::Regression);
        assert_eq!(change.index, 25);
        assert_eq!(change.commit, commit(25));
        assert_eq!(change.previous_commit, commit(24));
        assert_eq!(change.run_id, "run-25");
        assert!((change.relative_change.unwrap() + 0.0667).abs() < 0.002);
        assert!(change.confidence >= 0.99);
        assert!(report.has_regression());
        // 15 points since: among the newest 15, not the newest 14.
        assert!(report.has_regression_in_newest(15));
        assert!(!report.has_regression_in_newest(14));
    }

    #[test]
    fn which_way_is_better_decides_regression_or_improvement() {
        let opts = CheckOptions::default();
        let kind = |metric: &str, before, after| {
            only_change(&check(&[series(metric, "m", 30, 15, before, after)], &opts)).kind
        };
        assert_eq!(kind("fps", 100.0, 110.0), ChangeKind::Improvement);
        assert_eq!(kind("total.p99", 8.0e6, 8.4e6), ChangeKind::Regression);
        assert_eq!(kind("encode.p50", 8.0e6, 7.0e6), ChangeKind::Improvement);
        assert_eq!(kind("cpu_per_frame", 300.0, 330.0), ChangeKind::Regression);
        // A metric from output with no stated direction only moves...
        assert_eq!(kind("req_s", 1000.0, 900.0), ChangeKind::Moved);
        let report = check(&[series("req_s", "m", 30, 15, 1000.0, 900.0)], &opts);
        assert!(!report.has_regression());
        // ...until its definition's direction is given.
        let stated = CheckOptions {
            directions: [("req_s".to_owned(), Direction::HigherIsBetter)].into(),
            ..CheckOptions::default()
        };
        let report = check(&[series("req_s", "m", 30, 15, 1000.0, 900.0)], &stated);
        assert_eq!(only_change(&report).kind, ChangeKind::Regression);
    }

    #[test]
    fn builtin_directions_agree_with_what_compare_defines() {
        use crate::analyze::cpu::RoleCpu;
        use crate::compare::{metrics::catalogue, RunData};
        let role = |name: &str| RoleCpu {
            role: name.into(),
            cpu_ns: 1_000_000,
            load_pct: Some(10.0),
            cpu_resolution_ns: 1,
        };
        let run = RunData {
            observed_fps: Some(60.0),
            wall_ns: 1_000_000_000,
            cpu_ns: 5_000_000,
            cpu_measured: true,
            load_pct: Some(50.0),
            cpu_per_frame_ns: Some(1000.0),
            peak_rss_bytes: 1 << 20,
            late: Some((1, 60)),
            stages: vec![(
                "decode".into(),
                crate::stats::SortedValues::all(&[1i64, 2, 3]),
            )],
            totals: crate::stats::SortedValues::all(&[3i64, 4, 5]),
            energy: vec![crate::analyze::telemetry::EnergyRow {
                device: "GPU0".into(),
                avg_power_w: 250.0,
                joules: 30.0,
                joules_per_frame: Some(0.5),
                ..Default::default()
            }],
            cpu_resolution_ns: 1,
            work_units: 60,
            roles: vec![role("command"), role("server")],
            waits: vec![(
                "decode→encode".into(),
                crate::stats::SortedValues::all(&[1i64, 2]),
            )],
            ..RunData::default()
        };
        let metrics = catalogue(&[&run]);
        assert!(metrics.len() > 25, "{}", metrics.len());
        for m in metrics {
            assert_eq!(builtin_direction(&m.key), m.direction, "{}", m.key);
        }
        assert_eq!(builtin_direction("frames_encoded"), Direction::Unstated);
    }

    #[test]
    fn machines_are_checked_apart() {
        // The same metric on two machines of different speed: pooled, the second machine's
        // points would look like a step; apart, neither moved.
        let fast = series("total.p99", "fast-box", 20, 20, 5.0e6, 5.0e6);
        let slow = series("total.p99", "slow-box", 20, 20, 9.0e6, 9.0e6);
        let stepped = series("total.p99", "third", 30, 18, 5.0e6, 5.5e6);
        let report = check(&[fast, slow, stepped], &CheckOptions::default());
        let changes: Vec<_> = report.changes().collect();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].0.machine, "third");
        assert_eq!(changes[0].1.index, 18);
    }

    #[test]
    fn a_series_of_one_point_says_one_point() {
        // A store's first add: every series has one point, and the skip says so in English.
        let report = check(
            &[series("fps", "m", 1, 1, 60.0, 60.0)],
            &CheckOptions::default(),
        );
        let Outcome::Skipped { reason } = &report.series[0].outcome else {
            panic!("one point cannot be checked")
        };
        assert_eq!(reason, "1 point, need 10");
    }

    #[test]
    fn series_that_cannot_be_checked_say_why() {
        let mut nameless = series("fps", "", 30, 30, 60.0, 60.0);
        nameless.metric = "fps".into();
        let report = check(
            &[
                series("fps", "m", 4, 4, 60.0, 60.0),
                series("wall", "m", 30, 30, 1.0, 1.0),
                series("wall", "m", 30, 30, 1.0, 1.0),
                nameless,
            ],
            &CheckOptions::default(),
        );
        let reasons: Vec<String> = (report.series.iter())
            .map(|s| match &s.outcome {
                Outcome::Skipped { reason } => reason.clone(),
                Outcome::Checked { .. } => "checked".into(),
            })
            .collect();
        assert_eq!(reasons[0], "4 points, need 10");
        assert_eq!(reasons[1], "checked");
        assert!(
            reasons[2].starts_with("a second series of this metric"),
            "{}",
            reasons[2]
        );
        assert!(
            reasons[3].starts_with("no machine fingerprint"),
            "{}",
            reasons[3]
        );
    }

    #[test]
    fn values_that_are_not_numbers_are_left_out_and_listed() {
        let mut s = series("fps", "m", 30, 20, 100.0, 90.0);
        s.points[3].value = f64::NAN;
        s.points[10].value = f64::INFINITY;
        let report = check(&[s], &CheckOptions::default());
        let Outcome::Checked { changes, left_out } = &report.series[0].outcome else {
            panic!("{report:?}");
        };
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].index, 20, "the index counts every point");
        assert_eq!(changes[0].commit, commit(20));
        let left: Vec<&str> = left_out.iter().map(|l| l.run_id.as_str()).collect();
        assert_eq!(left, ["run-3", "run-10"]);
        assert!(render(&report, Format::Text)
            .unwrap()
            .contains("2 points with a value that is not"));

        let mut few = series("fps", "m", 11, 11, 100.0, 100.0);
        few.points[0].value = f64::NAN;
        few.points[1].value = f64::NAN;
        let report = check(&[few], &CheckOptions::default());
        assert!(matches!(&report.series[0].outcome,
            Outcome::Skipped { reason } if reason == "9 points (2 more not finite), need 10"));
    }

    #[test]
    fn rendered_as_text_markdown_and_json() {
        let report = check(
            &[
                series("fps", "m1", 40, 25, 120.0, 112.0),
                series("total.p99", "m1", 40, 40, 8.0e6, 8.0e6),
                series("wall", "m1\x1b[2J", 3, 3, 1.0, 1.0),
            ],
            &CheckOptions::default(),
        );
        let text = render(&report, Format::Text).unwrap();
        assert!(
            text.starts_with(
                "history check: 3 series on 2 machines: 1 regression, 0 improvements, 0 moved \
             (direction unknown), 1 skipped\n"
            ),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.contains("regression  ") || l.ends_with("regression"))
            .unwrap();
        assert!(
            row.contains("fps") && row.contains("00000019abab") && row.contains("−6.7%"),
            "{row}"
        );
        assert!(row.contains("120.0") && row.contains("112.0"), "{row}");
        assert!(
            text.contains(r"wall on m1\x1b[2J (main): 3 points, need 10"),
            "{text}"
        );
        assert!(!text.contains('\x1b'));

        let md = render(&report, Format::Markdown).unwrap();
        assert!(md.contains("| metric | machine |"), "{md}");
        assert!(
            md.contains("- wall on m1\\\\x1b\\[2J (main): 3 points, need 10"),
            "{md}"
        );

        let json: serde_json::Value =
            serde_json::from_str(&render(&report, Format::Json).unwrap()).unwrap();
        assert_eq!(json["schema"], SCHEMA);
        assert_eq!(json["series"][0]["status"], "checked");
        assert_eq!(json["series"][0]["direction"], "higher_is_better");
        assert_eq!(json["series"][0]["changes"][0]["kind"], "regression");
        assert_eq!(json["series"][0]["changes"][0]["commit"], commit(25));
        assert_eq!(json["series"][2]["status"], "skipped");
        assert_eq!(json["series"][2]["machine"], "m1\x1b[2J");
        assert_eq!(json["method"]["significance"], 0.01);
    }
}
