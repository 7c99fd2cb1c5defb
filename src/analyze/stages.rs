//! The stage table (a distribution per stage over measured frames) and the worst frames'
//! breakdown, both from one pass over the spans.

use super::frames::{Frames, Measured, NO_FRAME};
use super::{Dist, StageRow, WorstFrame};
use crate::model::Span;

/// How many worst frames a report lists.
pub const WORST_FRAMES: usize = 10;

/// Indices (into `Frames::all`) of the `k` measured frames with the largest totals, largest
/// first; on a tie the frame that ended first comes first.
pub fn pick_worst(frames: &Frames, measured: &Measured, k: usize) -> Vec<u32> {
    let mut worst: Vec<(i64, u32)> = Vec::with_capacity(k + 1);
    for &i in &measured.order {
        let total = frames.all[i as usize].total_ns();
        if k == 0 || (worst.len() == k && total <= worst[k - 1].0) {
            continue;
        }
        let at = worst.partition_point(|&(t, _)| t >= total);
        worst.insert(at, (total, i));
        worst.truncate(k);
    }
    worst.into_iter().map(|(_, i)| i).collect()
}

/// A stage's name by id; `stage#ID` for an id the run never named.
pub fn stage_name(stage_names: &[String], id: usize) -> String {
    stage_names
        .get(id)
        .cloned()
        .unwrap_or_else(|| format!("stage#{id}"))
}

/// Stage rows, in order of each stage's earliest measured span start.
pub struct StageTable {
    pub names: Vec<String>,
    pub rows: Vec<StageRow>,
    pub worst: Vec<WorstFrame>,
}

pub fn stage_table(
    spans: &[Span],
    stage_names: &[String],
    frames: &Frames,
    measured: &Measured,
    worst: &[u32],
) -> StageTable {
    let measured_frame = |i: usize| {
        let f = frames.span_frame[i];
        (f != NO_FRAME && measured.in_window[f as usize]).then_some(f)
    };

    // Pass 1: how many spans each stage has, and when it first starts.
    let mut count = vec![0usize; u16::MAX as usize + 1];
    let mut first_start = vec![i64::MAX; u16::MAX as usize + 1];
    for (i, s) in spans.iter().enumerate() {
        if measured_frame(i).is_some() {
            let st = s.stage as usize;
            count[st] += 1;
            first_start[st] = first_start[st].min(s.start_ns);
        }
    }
    let mut order: Vec<usize> = (0..count.len()).filter(|&s| count[s] > 0).collect();
    order.sort_by_key(|&s| (first_start[s], s));
    let mut column = vec![usize::MAX; count.len()];
    for (c, &s) in order.iter().enumerate() {
        column[s] = c;
    }

    // Worst frames: a column of sums each; `slot[frame] = position + 1`, 0 for the rest.
    let mut slot = vec![
        0u8;
        if worst.is_empty() {
            0
        } else {
            frames.all.len()
        }
    ];
    for (pos, &f) in worst.iter().enumerate() {
        slot[f as usize] = (pos + 1) as u8;
    }
    let mut worst_sums: Vec<Vec<Option<i64>>> = vec![vec![None; order.len()]; worst.len()];

    // Pass 2: durations, pre-sized so nothing reallocates.
    let mut durations: Vec<Vec<i64>> = order
        .iter()
        .map(|&s| Vec::with_capacity(count[s]))
        .collect();
    for (i, s) in spans.iter().enumerate() {
        let Some(f) = measured_frame(i) else { continue };
        let c = column[s.stage as usize];
        durations[c].push(s.dur_ns);
        if let Some(&pos) = slot.get(f as usize).filter(|&&p| p > 0) {
            let cell = &mut worst_sums[pos as usize - 1][c];
            *cell = Some(cell.unwrap_or(0).saturating_add(s.dur_ns));
        }
    }

    let names: Vec<String> = order.iter().map(|&s| stage_name(stage_names, s)).collect();
    let rows = names
        .iter()
        .zip(durations.iter_mut())
        .filter_map(|(name, d)| {
            Some(StageRow {
                name: name.clone(),
                dist: Dist::from_unsorted(d)?,
            })
        })
        .collect();
    let worst = worst
        .iter()
        .zip(worst_sums)
        .map(|(&f, stage_ns)| {
            let frame = &frames.all[f as usize];
            WorstFrame {
                frame: frame.id,
                t_s: frame.end_ns as f64 / 1e9,
                total_ns: frame.total_ns(),
                stage_ns,
                ..WorstFrame::default()
            }
        })
        .collect();
    StageTable { names, rows, worst }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::frames::{measure, resolve_window};
    use crate::model::RunMeta;

    fn span(frame: u64, stage: u16, start_ns: i64, dur_ns: i64) -> Span {
        Span {
            frame,
            stage,
            thread: 0,
            start_ns,
            dur_ns,
        }
    }

    fn setup(spans: &[Span], start: i64, end: i64) -> (Frames, Measured) {
        let frames = Frames::from_spans(spans);
        let meta = RunMeta {
            window_start_ns: start,
            window_end_ns: end,
            ..RunMeta::default()
        };
        let m = measure(&frames, &resolve_window(&meta, frames.last_end_ns));
        (frames, m)
    }

    #[test]
    fn worst_frames_largest_first_ties_by_end() {
        // Totals by frame: 0:10 1:30 2:20 3:30 4:5.
        let spans: Vec<Span> = [10, 30, 20, 30, 5]
            .iter()
            .enumerate()
            .map(|(i, &d)| span(i as u64, 0, i as i64 * 100, d))
            .collect();
        let (frames, m) = setup(&spans, 0, 10_000);
        let ids =
            |w: Vec<u32>| -> Vec<u64> { w.iter().map(|&i| frames.all[i as usize].id).collect() };
        assert_eq!(ids(pick_worst(&frames, &m, 3)), vec![1, 3, 2]);
        assert_eq!(ids(pick_worst(&frames, &m, 10)), vec![1, 3, 2, 0, 4]);
        assert!(pick_worst(&frames, &m, 0).is_empty());
    }

    #[test]
    fn stages_in_start_order_over_measured_frames_with_repeats_summed() {
        let names: Vec<String> = ["send", "capture", "encode"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let spans = [
            // Frame 0 is warmup (ends at 30 < 50): its long encode must not count.
            span(0, 2, 0, 30),
            // Frame 1: capture 100+10, encode 120+40 in two slices (20 + 20), send 170+5.
            span(1, 1, 100, 10),
            span(1, 2, 120, 20),
            span(1, 2, 145, 20),
            span(1, 0, 170, 5),
            // Frame 2: capture 200+12, encode 215+30, no send.
            span(2, 1, 200, 12),
            span(2, 2, 215, 30),
        ];
        let (frames, m) = setup(&spans, 50, 1_000);
        let worst = pick_worst(&frames, &m, WORST_FRAMES);
        let t = stage_table(&spans, &names, &frames, &m, &worst);
        // Earliest measured start: capture 100, encode 120, send 170.
        assert_eq!(t.names, vec!["capture", "encode", "send"]);
        assert_eq!(t.rows[0].dist.count, 2);
        assert_eq!(t.rows[0].dist.min_ns, 10.0);
        assert_eq!(t.rows[0].dist.max_ns, 12.0);
        assert_eq!(t.rows[1].dist.count, 3); // slices are spans: 20, 20, 30
        assert_eq!(t.rows[1].dist.p50_ns, 20.0);
        assert_eq!(t.rows[2].dist.count, 1);
        // Frame 1: total 175 − 100 = 75; frame 2: 245 − 200 = 45.
        assert_eq!(t.worst.len(), 2);
        assert_eq!(t.worst[0].frame, 1);
        assert_eq!(t.worst[0].total_ns, 75);
        assert_eq!(t.worst[0].stage_ns, vec![Some(10), Some(40), Some(5)]);
        assert_eq!(t.worst[1].stage_ns, vec![Some(12), Some(30), None]);
        assert_eq!(t.worst[1].t_s, 245e-9);
    }

    #[test]
    fn unnamed_stage_ids_get_a_placeholder_name() {
        let spans = [span(1, 5, 0, 10)];
        let (frames, m) = setup(&spans, 0, 100);
        let t = stage_table(&spans, &[], &frames, &m, &[]);
        assert_eq!(t.names, vec!["stage#5"]);
        assert!(t.worst.is_empty());
    }
}
