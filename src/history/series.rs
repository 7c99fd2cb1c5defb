//! A metric's values over commits, on one machine (and one branch when asked): what `show`
//! tables and plots, and what change-point detection reads. Machines are never mixed.

use std::collections::BTreeMap;

use super::store::{Filter, Store, ValueRow};

/// One run's value of one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub commit: String,
    pub branch: Option<String>,
    pub recorded_at_unix_s: i64,
    pub run_id: String,
    pub value: f64,
}

/// A metric's points on one machine (fingerprint), oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub metric: String,
    /// In the unit a report prints (µs for times): the last recorded, if it ever changed.
    pub unit: String,
    /// `lower`, `higher` or empty, as recorded last.
    pub direction: String,
    pub machine: String, /* fingerprint */
    pub branch: Option<String>,
    pub points: Vec<Point>, /* oldest first */
}

impl Series {
    /// This series cut into one per branch (runs without a branch are one); a series of
    /// one branch already is returned as it is.
    pub fn by_branch(self) -> Vec<Series> {
        if self.branch.is_some() {
            return vec![self];
        }
        let mut by_branch: BTreeMap<Option<String>, Vec<Point>> = BTreeMap::new();
        for point in self.points {
            by_branch
                .entry(point.branch.clone())
                .or_default()
                .push(point);
        }
        (by_branch.into_iter())
            .map(|(branch, points)| Series {
                metric: self.metric.clone(),
                unit: self.unit.clone(),
                direction: self.direction.clone(),
                machine: self.machine.clone(),
                branch,
                points,
            })
            .collect()
    }
}

/// One Series per metric × machine (× branch when the filter names one), in metric then
/// machine order; points oldest first (by recording time, then run id).
pub fn load_series(store: &mut Store, filter: &Filter) -> anyhow::Result<Vec<Series>> {
    Ok(series_from_rows(
        store.values(filter)?,
        filter.branch.as_deref(),
    ))
}

/// Groups values into series (see [`load_series`]); `branch` is what the rows were
/// narrowed to, if anything.
pub fn series_from_rows(rows: Vec<ValueRow>, branch: Option<&str>) -> Vec<Series> {
    // Points, and the (time, unit, direction) recorded last.
    type Grouped = (Vec<Point>, (i64, String, String));
    let mut grouped: BTreeMap<(String, String), Grouped> = BTreeMap::new();
    for row in rows {
        let (points, last) = grouped.entry((row.metric, row.machine)).or_default();
        if points.is_empty() || row.recorded_at_unix_s >= last.0 {
            *last = (row.recorded_at_unix_s, row.unit, row.direction);
        }
        points.push(Point {
            commit: row.commit,
            branch: row.branch,
            recorded_at_unix_s: row.recorded_at_unix_s,
            run_id: row.run_id,
            value: row.value,
        });
    }
    grouped
        .into_iter()
        .map(|((metric, machine), (mut points, (_, unit, direction)))| {
            points.sort_by(|a, b| {
                (a.recorded_at_unix_s, &a.run_id).cmp(&(b.recorded_at_unix_s, &b.run_id))
            });
            Series {
                metric,
                unit,
                direction,
                machine,
                branch: branch.map(str::to_owned),
                points,
            }
        })
        .collect()
}
