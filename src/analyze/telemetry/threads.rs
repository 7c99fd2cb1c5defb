//! The busiest threads of the command's processes over the measured window, from the
//! `threads` source's running totals.

use std::collections::BTreeMap;

use super::series::Points;
use super::ThreadRow;
use crate::model::SampleSeries;

/// How many threads the report names.
pub const BUSIEST: usize = 10;

/// A thread's total over the window: its value at the end minus at the start, read every
/// `every_ns` ([`Points::counter_at`]). A thread born during the run has a 0 reading at its
/// birth; one older than the run (a watched daemon's) counts from its first reading, never
/// from its birth: its lifetime is not the window's.
fn delta(points: &Points, start: i64, end: i64, every_ns: i64) -> i64 {
    let at = |t| points.counter_at(t, every_ns);
    ((at(end) - at(start)).round() as i64).max(0)
}

pub fn busiest_threads(
    series: &[SampleSeries],
    points: &[Points],
    (start, end): (i64, i64),
    every_ns: i64,
) -> Vec<ThreadRow> {
    // entity "PID/TID" → row.
    let mut rows: BTreeMap<(u32, u32), ThreadRow> = BTreeMap::new();
    for (id, s) in series.iter().enumerate() {
        if s.source != "threads" {
            continue;
        }
        let Some((pid, tid)) = s
            .entity
            .split_once('/')
            .and_then(|(p, t)| Some((p.parse().ok()?, t.parse().ok()?)))
        else {
            continue;
        };
        let row = rows.entry((pid, tid)).or_insert_with(|| ThreadRow {
            pid,
            tid,
            name: s.label.clone(),
            ..ThreadRow::default()
        });
        let d = delta(&points[id], start, end, every_ns);
        match s.metric.as_str() {
            "cpu_time" => row.cpu_ns = d,
            "ctx_voluntary" => row.ctx_voluntary = d,
            "ctx_involuntary" => row.ctx_involuntary = d,
            "minflt" => row.minflt = d,
            "majflt" => row.majflt = d,
            _ => {}
        }
    }
    let window_ns = (end - start).max(1);
    let process_names: BTreeMap<u32, String> = rows
        .values()
        .filter(|r| r.pid == r.tid)
        .map(|r| (r.pid, r.name.clone()))
        .collect();
    let mut rows: Vec<ThreadRow> = rows
        .into_values()
        .map(|mut r| {
            r.load_pct = r.cpu_ns as f64 * 100.0 / window_ns as f64;
            r.process = process_names.get(&r.pid).cloned().unwrap_or_default();
            r
        })
        .collect();
    rows.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
    rows.truncate(BUSIEST);
    rows
}

/// Threads the scheduler saw run inside [start, end] that the `threads` source never read
/// (they lived between two of its readings): how many, and their time on CPU there.
pub fn unread(
    series: &[SampleSeries],
    slices: &[crate::model::sched::SchedSlice],
    start: i64,
    end: i64,
) -> (u64, i64) {
    let read: std::collections::BTreeSet<u32> = (series.iter())
        .filter(|s| s.source == "threads")
        .filter_map(|s| s.entity.split_once('/')?.1.parse().ok())
        .collect();
    let mut unread: BTreeMap<u32, i64> = BTreeMap::new();
    for slice in slices {
        let inside = slice.start_ns >= start && slice.start_ns < end;
        if inside && slice.on_cpu_ns > 0 && !read.contains(&slice.tid) {
            *unread.entry(slice.tid).or_default() += slice.on_cpu_ns;
        }
    }
    (unread.len() as u64, unread.values().sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sched::SchedSlice;
    use crate::model::SeriesKind;

    #[test]
    fn threads_the_scheduler_saw_but_no_reading_did_are_counted_with_their_cpu() {
        let read = SampleSeries {
            source: "threads".into(),
            metric: "cpu_time".into(),
            entity: "10/11".into(),
            label: "worker".into(),
            unit: "ns".into(),
            kind: SeriesKind::Counter,
        };
        let slice = |tid, start_ns, on_cpu_ns| SchedSlice {
            tid,
            start_ns,
            dur_ns: on_cpu_ns,
            on_cpu_ns,
            runnable_ns: 0,
            by: String::new(),
        };
        let slices = [
            slice(11, 100 * MS, 5 * MS),   // read: not counted
            slice(12, 100 * MS, 3 * MS),   // never read
            slice(12, 200 * MS, 2 * MS),   // the same thread again
            slice(13, 150 * MS, 4 * MS),   // never read
            slice(14, 150 * MS, 0),        // runnable only: not a thread that ran
            slice(15, 2_000 * MS, 9 * MS), // after the window
        ];
        assert_eq!(unread(&[read], &slices, 0, 1_000 * MS), (2, 9 * MS));
    }

    const MS: i64 = 1_000_000;

    fn counter(entity: &str, label: &str, metric: &str) -> SampleSeries {
        SampleSeries {
            source: "threads".into(),
            metric: metric.into(),
            entity: entity.into(),
            label: label.into(),
            unit: "ns".into(),
            kind: SeriesKind::Counter,
        }
    }

    #[test]
    fn ranks_threads_by_cpu_over_the_window() {
        let series = vec![
            counter("100/100", "host", "cpu_time"),
            counter("100/101", "encoder", "cpu_time"),
            counter("100/101", "encoder", "ctx_involuntary"),
            // Born inside the window: counted from 0.
            counter("100/102", "late", "cpu_time"),
            // A watched daemon's thread, 5 s old when first read inside the window.
            counter("200/200", "daemon", "cpu_time"),
        ];
        let points = vec![
            Points(vec![
                (0, 1_000 * MS),
                (500 * MS, 1_050 * MS),
                (1_000 * MS, 1_100 * MS),
            ]),
            Points(vec![(0, 0), (500 * MS, 300 * MS), (1_000 * MS, 700 * MS)]),
            Points(vec![(0, 5), (1_000 * MS, 45)]),
            Points(vec![
                (580 * MS, 0),
                (600 * MS, 20 * MS),
                (1_000 * MS, 60 * MS),
            ]),
            Points(vec![(510 * MS, 5_000 * MS), (1_000 * MS, 5_030 * MS)]),
        ];
        // Window 500 ms .. 1 s: encoder 400 ms (80%), host 50 ms, late 60 ms (born at 580),
        // the daemon 30 ms (not its 5 s lifetime).
        let rows = busiest_threads(&series, &points, (500 * MS, 1_000 * MS), 50 * MS);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["encoder", "late", "host", "daemon"]);
        assert_eq!(rows[3].cpu_ns, 30 * MS);
        assert_eq!(rows[0].cpu_ns, 400 * MS);
        assert_eq!(rows[0].load_pct, 80.0);
        // The step value at 500 ms is still the first reading's 5: 40 switches.
        assert_eq!(rows[0].ctx_involuntary, 40);
        assert_eq!(rows[0].process, "host");
        assert_eq!(rows[1].cpu_ns, 60 * MS);
    }

    #[test]
    fn a_window_between_two_readings_counts_a_busy_thread_from_its_start() {
        // A thread on CPU all along, read every 50 ms, and once more as the window closes
        // at 980 ms; the window opens at 75 ms, between two readings. From the reading
        // before it, the thread had 930 ms of a 905 ms window (103%).
        let series = vec![counter("1/1", "main", "cpu_time")];
        let mut readings: Vec<(i64, i64)> = (0..20).map(|i| (i * 50 * MS, i * 50 * MS)).collect();
        readings.push((980 * MS, 980 * MS));
        let rows = busiest_threads(&series, &[Points(readings)], (75 * MS, 980 * MS), 50 * MS);
        assert_eq!(rows[0].cpu_ns, 905 * MS);
        assert_eq!(rows[0].load_pct, 100.0);
    }
}
