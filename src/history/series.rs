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
    pub machine: String, /* fingerprint */
    pub branch: Option<String>,
    pub points: Vec<Point>, /* oldest first */
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
    let mut grouped: BTreeMap<(String, String), Vec<Point>> = BTreeMap::new();
    for row in rows {
        grouped
            .entry((row.metric, row.machine))
            .or_default()
            .push(Point {
                commit: row.commit,
                branch: row.branch,
                recorded_at_unix_s: row.recorded_at_unix_s,
                run_id: row.run_id,
                value: row.value,
            });
    }
    grouped
        .into_iter()
        .map(|((metric, machine), mut points)| {
            points.sort_by(|a, b| {
                (a.recorded_at_unix_s, &a.run_id).cmp(&(b.recorded_at_unix_s, &b.run_id))
            });
            Series {
                metric,
                machine,
                branch: branch.map(str::to_owned),
                points,
            }
        })
        .collect()
}
