//! Frames from spans: start, end, total; the measured window; intervals between frames.
//!
//! A frame is every span that carries its id, over all threads and processes:
//! start = earliest span start, end = latest span end, total = end − start
//! (docs/metrics.md, "Frames").

use crate::model::{RunMeta, Span};

/// Marks a span that belongs to no frame (it was skipped).
pub const NO_FRAME: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub id: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

impl Frame {
    /// End-to-end latency, including any time spent waiting between stages.
    pub fn total_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Maps a frame id to its index in `Frames::all`.
#[derive(Clone, Debug)]
enum Lookup {
    /// Ids are dense enough for a table: `slots[id − min]`, NO_FRAME where absent.
    Dense { min: u64, slots: Vec<u32> },
    /// Sparse ids (hashes, timestamps): sorted, searched; `all` follows the same order.
    Sorted { ids: Vec<u64> },
}

/// Every frame of a run, and which frame each span belongs to.
#[derive(Clone, Debug)]
pub struct Frames {
    /// Frames with at least one usable span; dense ids in first-seen order, sparse ids sorted.
    pub all: Vec<Frame>,
    /// For each span of the run, the index of its frame in `all`, or `NO_FRAME`.
    pub span_frame: Vec<u32>,
    /// Spans skipped because their duration is negative (a broken clock).
    pub negative_spans: u64,
    /// The latest end of any usable span.
    pub last_end_ns: Option<i64>,
    lookup: Lookup,
}

impl Frames {
    /// Groups spans by frame id in two passes, without per-span allocation.
    pub fn from_spans(spans: &[Span]) -> Frames {
        let usable = |s: &Span| s.dur_ns >= 0;
        let mut negative_spans = 0u64;
        let (mut min_id, mut max_id) = (u64::MAX, 0u64);
        for s in spans {
            if usable(s) {
                min_id = min_id.min(s.frame);
                max_id = max_id.max(s.frame);
            } else {
                negative_spans += 1;
            }
        }
        let usable_count = spans.len() as u64 - negative_spans;
        let mut span_frame = vec![NO_FRAME; spans.len()];
        let mut all: Vec<Frame> = Vec::new();
        let mut last_end_ns: Option<i64> = None;
        if usable_count == 0 {
            return Frames {
                all,
                span_frame,
                negative_spans,
                last_end_ns,
                lookup: Lookup::Sorted { ids: Vec::new() },
            };
        }

        // A direct table costs 4 bytes per id in the range: worth it unless ids are sparse.
        let range = max_id - min_id;
        let dense = range < usable_count.saturating_mul(4).saturating_add(1024);
        let mut lookup = if dense {
            Lookup::Dense {
                min: min_id,
                slots: vec![NO_FRAME; range as usize + 1],
            }
        } else {
            let mut ids: Vec<u64> = spans
                .iter()
                .filter(|s| usable(s))
                .map(|s| s.frame)
                .collect();
            ids.sort_unstable();
            ids.dedup();
            all = ids
                .iter()
                .map(|&id| Frame {
                    id,
                    start_ns: i64::MAX,
                    end_ns: i64::MIN,
                })
                .collect();
            Lookup::Sorted { ids }
        };

        for (i, s) in spans.iter().enumerate() {
            if !usable(s) {
                continue;
            }
            let idx = match &mut lookup {
                Lookup::Dense { min, slots } => {
                    let slot = &mut slots[(s.frame - *min) as usize];
                    if *slot == NO_FRAME {
                        *slot = all.len() as u32;
                        all.push(Frame {
                            id: s.frame,
                            start_ns: i64::MAX,
                            end_ns: i64::MIN,
                        });
                    }
                    *slot
                }
                Lookup::Sorted { ids } => match ids.binary_search(&s.frame) {
                    Ok(k) => k as u32,
                    Err(_) => continue, // cannot happen: every usable id is in `ids`
                },
            };
            // Saturating: a corrupt record must not overflow (and panic in debug builds).
            let end = s.start_ns.saturating_add(s.dur_ns);
            let f = &mut all[idx as usize];
            f.start_ns = f.start_ns.min(s.start_ns);
            f.end_ns = f.end_ns.max(end);
            span_frame[i] = idx;
            last_end_ns = Some(last_end_ns.map_or(end, |l| l.max(end)));
        }
        Frames {
            all,
            span_frame,
            negative_spans,
            last_end_ns,
            lookup,
        }
    }

    /// Index in `all` of the frame with this id, if it has a usable span.
    pub fn index_of(&self, id: u64) -> Option<u32> {
        match &self.lookup {
            Lookup::Dense { min, slots } => {
                let off = id.checked_sub(*min)?;
                let slot = *slots.get(usize::try_from(off).ok()?)?;
                (slot != NO_FRAME).then_some(slot)
            }
            Lookup::Sorted { ids } => ids.binary_search(&id).ok().map(|k| k as u32),
        }
    }
}

/// The measured window actually used, after repairing an unfinished run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedWindow {
    pub start_ns: i64,
    pub end_ns: i64,
    /// The run was not finalised (end ≤ start), so the window ends at the last span end.
    pub end_from_last_span: bool,
}

impl ResolvedWindow {
    pub fn length_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns).max(0)
    }

    /// Window length in seconds, `None` when it is empty (nothing to divide by).
    pub fn seconds(&self) -> Option<f64> {
        let len = self.length_ns();
        (len > 0).then(|| len as f64 / 1e9)
    }
}

/// The window from the run's metadata; a run killed before finalising has end ≤ start,
/// and then the last span end closes it.
pub fn resolve_window(meta: &RunMeta, last_span_end_ns: Option<i64>) -> ResolvedWindow {
    if meta.window_end_ns > meta.window_start_ns {
        return ResolvedWindow {
            start_ns: meta.window_start_ns,
            end_ns: meta.window_end_ns,
            end_from_last_span: false,
        };
    }
    ResolvedWindow {
        start_ns: meta.window_start_ns,
        end_ns: last_span_end_ns
            .unwrap_or(meta.window_start_ns)
            .max(meta.window_start_ns),
        end_from_last_span: true,
    }
}

/// Frames split by the window: those whose end falls in [start, end] are measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Indices into `Frames::all` of the measured frames, ordered by end (then id).
    pub order: Vec<u32>,
    /// Per frame index: measured or not.
    pub in_window: Vec<bool>,
    /// Frames that ended before the window opened.
    pub warmup_frames: u64,
    /// Frames that ended after it closed.
    pub after_frames: u64,
}

impl Measured {
    /// The measured frames' totals, in end order.
    pub fn totals_ns(&self, frames: &Frames) -> Vec<i64> {
        self.order
            .iter()
            .map(|&i| frames.all[i as usize].total_ns())
            .collect()
    }

    /// The measured frames' ends, ascending.
    pub fn ends_ns(&self, frames: &Frames) -> Vec<i64> {
        self.order
            .iter()
            .map(|&i| frames.all[i as usize].end_ns)
            .collect()
    }
}

pub fn measure(frames: &Frames, window: &ResolvedWindow) -> Measured {
    let mut in_window = vec![false; frames.all.len()];
    let mut keyed: Vec<(i64, u64, u32)> = Vec::with_capacity(frames.all.len());
    let (mut warmup_frames, mut after_frames) = (0u64, 0u64);
    for (i, f) in frames.all.iter().enumerate() {
        if f.end_ns < window.start_ns {
            warmup_frames += 1;
        } else if f.end_ns > window.end_ns {
            after_frames += 1;
        } else {
            in_window[i] = true;
            keyed.push((f.end_ns, f.id, i as u32));
        }
    }
    // Frames usually arrive nearly in end order, which this sort handles in close to linear time.
    keyed.sort_unstable();
    Measured {
        order: keyed.into_iter().map(|(_, _, i)| i).collect(),
        in_window,
        warmup_frames,
        after_frames,
    }
}

/// end_i − end_{i−1} over ends in ascending order: N ends give N − 1 intervals.
pub fn intervals_ns(ends_ns: &[i64]) -> Vec<i64> {
    ends_ns
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(frame: u64, stage: u16, thread: u32, start_ns: i64, dur_ns: i64) -> Span {
        Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns,
        }
    }

    #[test]
    fn frame_spans_threads_and_processes() {
        // Frame 7: capture on thread 0 [100, 150], encode on thread 1 (another process)
        // [300, 420], send on thread 0 [430, 440]. start 100, end 440, total 340, which
        // includes the 150 ns it waited between capture and encode.
        let spans = [
            span(7, 0, 0, 100, 50),
            span(8, 0, 0, 200, 50),
            span(7, 1, 1, 300, 120),
            span(7, 2, 0, 430, 10),
        ];
        let f = Frames::from_spans(&spans);
        assert_eq!(f.all.len(), 2);
        let i = f.index_of(7).unwrap() as usize;
        assert_eq!(f.all[i].start_ns, 100);
        assert_eq!(f.all[i].end_ns, 440);
        assert_eq!(f.all[i].total_ns(), 340);
        assert_eq!(f.span_frame, vec![0, 1, 0, 0]);
        assert_eq!(f.last_end_ns, Some(440));
        assert_eq!(f.index_of(9), None);
        assert_eq!(f.index_of(0), None);
    }

    #[test]
    fn sparse_ids_group_the_same_way() {
        let big = u64::MAX - 5;
        let spans = [
            span(big, 0, 0, 10, 5),
            span(3, 0, 0, 20, 5),
            span(big, 1, 0, 40, 10),
        ];
        let f = Frames::from_spans(&spans);
        assert_eq!(f.all.len(), 2);
        let i = f.index_of(big).unwrap() as usize;
        assert_eq!((f.all[i].start_ns, f.all[i].end_ns), (10, 50));
        assert_eq!(f.span_frame[0], f.span_frame[2]);
        assert_eq!(f.index_of(4), None);
    }

    #[test]
    fn negative_durations_are_skipped_and_counted() {
        let spans = [
            span(1, 0, 0, 100, -5),
            span(1, 1, 0, 100, 20),
            span(2, 0, 0, 0, -1),
        ];
        let f = Frames::from_spans(&spans);
        assert_eq!(f.negative_spans, 2);
        assert_eq!(f.all.len(), 1);
        assert_eq!(f.all[0].total_ns(), 20);
        assert_eq!(f.span_frame, vec![NO_FRAME, 0, NO_FRAME]);
        assert_eq!(f.index_of(2), None);
    }

    #[test]
    fn no_spans_no_frames() {
        let f = Frames::from_spans(&[]);
        assert!(f.all.is_empty());
        assert_eq!(f.last_end_ns, None);
        assert_eq!(f.index_of(0), None);
    }

    fn meta(start: i64, end: i64) -> RunMeta {
        RunMeta {
            window_start_ns: start,
            window_end_ns: end,
            ..RunMeta::default()
        }
    }

    #[test]
    fn window_excludes_warmup_and_after_by_frame_end() {
        // Ends: 50 (warmup), 100 (boundary: counts), 150, 200 (boundary: counts), 201 (after).
        let spans = [
            span(0, 0, 0, 0, 50),
            span(1, 0, 0, 60, 40),
            span(2, 0, 0, 90, 60), // starts in warmup, ends inside: measured
            span(3, 0, 0, 160, 40),
            span(4, 0, 0, 170, 31),
        ];
        let f = Frames::from_spans(&spans);
        let w = resolve_window(&meta(100, 200), f.last_end_ns);
        assert!(!w.end_from_last_span);
        let m = measure(&f, &w);
        assert_eq!(m.warmup_frames, 1);
        assert_eq!(m.after_frames, 1);
        assert_eq!(m.ends_ns(&f), vec![100, 150, 200]);
        assert_eq!(m.totals_ns(&f), vec![40, 60, 40]);
        assert_eq!(m.in_window, vec![false, true, true, true, false]);
        assert_eq!(intervals_ns(&m.ends_ns(&f)), vec![50, 50]);
    }

    #[test]
    fn unfinished_run_ends_window_at_last_span() {
        let w = resolve_window(&meta(100, 0), Some(900));
        assert_eq!((w.start_ns, w.end_ns), (100, 900));
        assert!(w.end_from_last_span);
        assert_eq!(w.seconds(), Some(800e-9));
        // Nothing recorded after the window start: an empty window, not a negative one.
        let w = resolve_window(&meta(100, 100), Some(50));
        assert_eq!(w.length_ns(), 0);
        assert_eq!(w.seconds(), None);
        let w = resolve_window(&meta(100, 0), None);
        assert_eq!(w.length_ns(), 0);
    }

    #[test]
    fn measured_frames_are_ordered_by_end_not_id() {
        // Frame 1 ends after frame 2 (out of order completion).
        let spans = [
            span(1, 0, 0, 0, 300),
            span(2, 0, 0, 100, 100),
            span(3, 0, 0, 350, 10),
        ];
        let f = Frames::from_spans(&spans);
        let m = measure(&f, &resolve_window(&meta(0, 1000), f.last_end_ns));
        let ids: Vec<u64> = m.order.iter().map(|&i| f.all[i as usize].id).collect();
        assert_eq!(ids, vec![2, 1, 3]);
        assert_eq!(intervals_ns(&m.ends_ns(&f)), vec![100, 60]);
    }

    #[test]
    fn intervals_of_fewer_than_two_ends_are_empty() {
        assert!(intervals_ns(&[]).is_empty());
        assert!(intervals_ns(&[5]).is_empty());
        assert_eq!(intervals_ns(&[5, 5, 9]), vec![0, 4]);
    }
}
