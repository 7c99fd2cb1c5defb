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
/// machine order; points oldest first (`ValueRow::history_order`).
pub fn load_series(store: &mut Store, filter: &Filter) -> anyhow::Result<Vec<Series>> {
    Ok(series_from_rows(
        store.values(filter)?,
        filter.branch.as_deref(),
    ))
}

/// Groups values into series (see [`load_series`]); `branch` is what the rows were
/// narrowed to, if anything.
pub fn series_from_rows(mut rows: Vec<ValueRow>, branch: Option<&str>) -> Vec<Series> {
    // Oldest first: each series' points come in order, and its unit and direction are
    // the ones recorded last.
    rows.sort_by(|a, b| a.history_order().cmp(&b.history_order()));
    let mut grouped: BTreeMap<(String, String), (Vec<Point>, String, String)> = BTreeMap::new();
    for row in rows {
        let (points, unit, direction) = grouped.entry((row.metric, row.machine)).or_default();
        (*unit, *direction) = (row.unit, row.direction);
        points.push(Point {
            commit: row.commit,
            branch: row.branch,
            recorded_at_unix_s: row.recorded_at.unix_s,
            run_id: row.run_id,
            value: row.value,
        });
    }
    grouped
        .into_iter()
        .map(|((metric, machine), (points, unit, direction))| Series {
            metric,
            unit,
            direction,
            machine,
            branch: branch.map(str::to_owned),
            points,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::store::RecordedAt;

    fn row(run_id: &str, machine: &str, recorded_at: RecordedAt, unit: &str) -> ValueRow {
        ValueRow {
            run_id: run_id.into(),
            commit: format!("c-{run_id}"),
            branch: None,
            machine: machine.into(),
            recorded_at,
            metric: "fps".into(),
            value: 60.0,
            unit: unit.into(),
            direction: "higher_is_better".into(),
        }
    }

    /// Two runs of one second on one machine, the later launched with the id that sorts
    /// first and added first: the earlier launch is the older point, and the unit is the
    /// later run's. Another machine's run of that second is a series of its own.
    #[test]
    fn points_of_one_second_are_in_launch_order() {
        let at = |launch_mono_ns, add_order| RecordedAt {
            unix_s: 1_800_000_000,
            launch_mono_ns,
            add_order,
        };
        let rows = vec![
            row("00aa", "m1", at(2_000, 1), "fps (new)"),
            row("ffbb", "m1", at(1_000, 2), "fps"),
            row("0011", "m2", at(1_500, 3), "fps"),
        ];
        let series = series_from_rows(rows, None);
        assert_eq!(series.len(), 2);
        let ids: Vec<&str> = series[0].points.iter().map(|p| p.run_id.as_str()).collect();
        assert_eq!(ids, ["ffbb", "00aa"]);
        assert_eq!(series[0].unit, "fps (new)");
        assert_eq!(series[1].points.len(), 1);
    }
}
