//! The page of a run of one span a frame, read as the text report reads it (issue 29:
//! the page of 10M spans held the frame table, 8 bytes a frame, and sorted every stage's
//! durations and the intervals; the text report holds neither). The analysis is
//! `compact::frameless`'s, beside the scheduler's split as the text report's is; the
//! distribution curves are asked of its selections, the late frames, stutters and worst
//! frames shown as its reads pass them, and the frame plots made from a read of their own
//! on a thread beside it (every frame in end order, through the analysis' reordering
//! buffer). The page is the one the frame table gave, byte for byte (the tests below).

use super::{
    fps_at_grid, frame_plot, gantt, secs, stage_curve, us, Curves, Drawn, WorstPoints,
    FRAME_BUCKETS, MAX_DETAIL_POINTS,
};
use crate::analyze::compact::frameless::{self, by_end, Asked, FrameWatch};
use crate::analyze::compact::split_beside;
use crate::analyze::frames::{resolve_window, ResolvedWindow};
use crate::analyze::stats::Ranked;
use crate::analyze::Analysis;
use crate::model::{Run, Span, SpanSource};
use crate::render::plot::Series;
use crate::report::html::decimate::{level_sizes, Levels};

/// What the page draws of a run of one span a frame, made as reads passed its frames.
pub(super) struct Passed {
    window: ResolvedWindow,
    /// Totals and intervals, by end.
    plots: (Series, Series),
    marked: Marked,
}

impl Passed {
    /// The frame plots, markers and timelines.
    pub(super) fn drawn(
        self,
        head: &Run,
        analysis: &Analysis,
        stage_order: &[(usize, String)],
    ) -> Drawn {
        let Marked {
            late,
            stutters,
            worst,
        } = self.marked;
        // Each worst frame is its one span.
        let spans_of = |frame: u64| {
            let s = worst.iter().find(|s| s.frame == frame)?;
            Some((s.start_ns, vec![(s.stage, s.thread, s.start_ns, s.dur_ns)]))
        };
        let gantt = match worst.is_empty() {
            true => Vec::new(),
            false => gantt(spans_of, head, analysis, stage_order),
        };
        Drawn {
            window: self.window,
            plots: self.plots,
            late: late.markers(),
            stutters: stutters.markers(),
            gantt,
        }
    }
}

/// The late frames, stutters and worst frames the analysis' reads show as they pass them.
#[derive(Default)]
struct Marked {
    late: WorstPoints,
    stutters: WorstPoints,
    /// The worst frames' spans, worst first.
    worst: Vec<Span>,
}

impl FrameWatch for Marked {
    fn late(&mut self, end_ns: i64, total_ns: i64) {
        self.late.push(secs(end_ns), us(total_ns as f64));
    }

    fn stutter(&mut self, end_ns: i64, interval_ns: i64) {
        self.stutters.push(secs(end_ns), us(interval_ns as f64));
    }

    fn worst(&mut self, spans: &[Span]) {
        self.worst = spans.to_vec();
    }
}

/// The page's data and the analysis of `head`'s run; `None` when it is not of one span a
/// frame with ids counting up and frames nearly in end order (the caller reads the frame
/// table).
pub(super) fn analyze(
    head: &Run,
    source: &(dyn SpanSource + Sync),
) -> anyhow::Result<Option<(Passed, Curves, Analysis)>> {
    // Nothing started beside the analysis (the split, the plots' read) for a run of
    // several spans a frame.
    if !frameless::may_fit(head, source)? {
        return Ok(None);
    }
    let ask_stages = |r: &dyn Ranked| {
        stage_curve(r);
    };
    let ask_intervals = |r: &dyn Ranked| {
        fps_at_grid(r);
    };
    let asked = Asked {
        stages: Some(&ask_stages),
        intervals: Some(&ask_intervals),
        ..Asked::default()
    };
    let mut marked = Marked::default();
    let (analysed, plots) = crate::parallel::join(
        || {
            let analyse = |tell: &mut dyn FnMut(_)| {
                frameless::analyze_unsplit_asking(head, source, asked, &mut marked, tell)
            };
            split_beside(head, source, analyse, |(analysis, _)| analysis)
        },
        || frame_plots(source),
    );
    let (Some((analysis, values)), Some(by_end)) = (analysed?, plots?) else {
        return Ok(None);
    };
    let mut curves = Curves::default();
    for (id, values) in &values.stages {
        curves.stage(*id, values);
    }
    curves.intervals(&values.intervals);
    let passed = Passed {
        window: resolve_window(&head.meta, by_end.last_end_ns),
        plots: by_end.plots,
        marked,
    };
    Ok(Some((passed, curves, analysis)))
}

/// The frame plots of every frame of a run of one span a frame, read in end order.
struct ByEnd {
    /// Totals and intervals, by end.
    plots: (Series, Series),
    frames: usize,
    last_end_ns: Option<i64>,
}

/// The frame plots of `source`'s run; `None` when it is not of one span a frame. Read once
/// with as many frames as its spans (the recorded count), again in the rare run where
/// fewer were frames (spans out of range).
fn frame_plots(source: &dyn SpanSource) -> anyhow::Result<Option<ByEnd>> {
    let mut n = source.span_count_hint();
    loop {
        let Some(by_end) = frame_plots_of(source, n)? else {
            return Ok(None);
        };
        if by_end.frames == n {
            return Ok(Some(by_end));
        }
        n = by_end.frames;
    }
}

/// [`frame_plots`] levelled for `n` frames.
fn frame_plots_of(source: &dyn SpanSource, n: usize) -> anyhow::Result<Option<ByEnd>> {
    let sizes = |n: usize| level_sizes(n, FRAME_BUCKETS, MAX_DETAIL_POINTS);
    // Kept by (end, total) and (end, interval): at most 2 × 131k points a series.
    let mut totals: Levels<(i64, i64)> = Levels::new(n, &sizes(n));
    let intervals_n = n.saturating_sub(1);
    let mut intervals: Levels<(i64, i64)> = Levels::new(intervals_n, &sizes(intervals_n));
    let mut last_end_ns: Option<i64> = None;
    let whole = by_end::for_each_frame_by_end(source, &mut |end_ns, total_ns, _| {
        totals.add((end_ns, total_ns), total_ns as f64 / 1e3);
        if let Some(before) = last_end_ns.replace(end_ns) {
            let between = end_ns.saturating_sub(before);
            intervals.add((end_ns, between), between as f64 / 1e3);
        }
    })?;
    if !whole {
        return Ok(None);
    }
    let frames = totals.added();
    let point = |(end_ns, ns): (i64, i64)| (secs(end_ns), ns as f64 / 1e3);
    let series = |label, levels: Levels<(i64, i64)>| {
        let count = levels.added();
        frame_plot(label, (count, levels.finish()), None, point)
    };
    let plots = (series("total", totals), series("interval", intervals));
    Ok(Some(ByEnd {
        plots,
        frames,
        last_end_ns,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{by_thread, html_of, with_telemetry};
    use super::super::RunData;
    use super::*;
    use crate::analyze::fixtures::{crashed_run, degenerate_runs, reference_run, span, MS};

    /// Runs of one span a frame: stopped mid-frame or not, with a budget and late frames,
    /// stutters, frames ending out of order on two threads, a span out of range, a
    /// scheduler-less run with telemetry; long enough for levels of detail.
    fn one_span_runs() -> Vec<Run> {
        let mut runs = Vec::new();
        let mut run = with_telemetry();
        run.counters.clear();
        run.counter_names.clear();
        run.spans = (0..30_000u64)
            .map(|i| {
                let t = i as i64 * 10 * MS;
                let slow = match i % 97 {
                    5 => 25 * MS,
                    50 => 9 * MS,
                    _ => (i % 13) as i64 * 1000,
                };
                // Every 40th frame on the other thread, ending after the next one starts.
                let (thread, dur) = match i % 40 {
                    7 => (1, 14 * MS),
                    _ => (0, 4 * MS + slow),
                };
                span(i, (i % 3) as u16, thread, t, dur)
            })
            .collect();
        run.spans[1234].dur_ns = -3;
        run.meta.window_start_ns = 5_000 * 10 * MS;
        run.meta.window_end_ns = 29_000 * 10 * MS;
        runs.push(run.clone());
        // One stage, no telemetry, the window from the last span.
        let mut one = run.clone();
        one.telemetry = Default::default();
        for s in &mut one.spans {
            s.stage = 0;
        }
        one.meta.window_end_ns = 0;
        runs.push(one);
        // A few frames: every point plotted.
        let mut few = run;
        few.spans.truncate(500);
        few.meta.window_start_ns = 0;
        few.meta.window_end_ns = 400 * 10 * MS;
        runs.push(few);
        runs
    }

    /// The page read without a frame table is the page the frame table gave, byte for
    /// byte; runs of another shape are left to the frame table.
    #[test]
    fn the_page_without_a_frame_table_is_the_page_the_table_gave() {
        for run in one_span_runs() {
            let from_table = {
                let (data, analysis) = RunData::analyze_with_table(&run, &run).unwrap();
                assert!(matches!(data.frames, super::super::Frames::Table(_)));
                html_of(data, &analysis)
            };
            let (passed, curves, analysis) = analyze(&run, &run).unwrap().expect("one span");
            let data = RunData {
                head: &run,
                frames: super::super::Frames::Passed(Box::new(passed)),
                curves,
            };
            let page = html_of(data, &analysis);
            assert!(page == from_table, "{}: the pages differ", run.meta.name);
            // And the page's own analysis takes this way.
            let (data, _) = RunData::analyze(&run, &run).unwrap();
            assert!(matches!(data.frames, super::super::Frames::Passed(_)));
            // Late frames, stutters and several levels of detail are on it.
            assert!(page.contains("\"late\":{\"of\":"), "late markers");
        }
        let mut others = vec![reference_run(), by_thread(), crashed_run()];
        others.extend(degenerate_runs());
        for run in others {
            if run.spans.windows(2).any(|w| w[1].frame <= w[0].frame) {
                assert!(analyze(&run, &run).unwrap().is_none(), "{}", run.meta.name);
            }
        }
    }
}
