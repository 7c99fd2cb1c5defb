//! The measured window over a [`FrameTable`]: which frames count, those cut short by the
//! stop, and the measured frames in end order. The same definitions as
//! `frames::measure_run` and `frames::open_at_stop`, one bit a frame.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::columns::SpanColumns;
use super::nearly_sorted::sort_nearly_sorted;
use super::table::FrameTable;
use crate::analyze::frames::{
    open_from_stages, resolve_window, stopped_mid_frame, OpenFrames, ResolvedWindow,
    MAX_OPEN_FRAMES, NO_FRAME, REFERENCE_FRAMES,
};
use crate::model::RunMeta;

/// One bit per index.
#[derive(Clone, Debug, Default)]
pub struct Bits(Vec<u64>);

impl Bits {
    pub fn new(len: usize) -> Bits {
        Bits(vec![0; len.div_ceil(64)])
    }

    pub fn get(&self, i: u32) -> bool {
        (self.0.get(i as usize / 64)).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    pub fn set(&mut self, i: u32) {
        self.0[i as usize / 64] |= 1 << (i % 64);
    }

    /// Clears bit `i`; whether it was set.
    pub fn take(&mut self, i: u32) -> bool {
        let was = self.get(i);
        self.0[i as usize / 64] &= !(1 << (i % 64));
        was
    }

    /// The set bits, ascending.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    w as u32 * 64 + bit
                })
            })
        })
    }
}

/// How many bits of a [`Bits`] are set below each index, from a count per word (4 bytes
/// per 64 bits): the place of a set bit among the set ones, without a table by index.
pub struct Ranks<'a> {
    bits: &'a Bits,
    before: Vec<u32>,
}

impl Bits {
    pub fn ranks(&self) -> Ranks<'_> {
        let mut before = Vec::with_capacity(self.0.len());
        let mut count = 0u32;
        for &word in &self.0 {
            before.push(count);
            count += word.count_ones();
        }
        Ranks { bits: self, before }
    }
}

impl Ranks<'_> {
    /// Set bits below `i`.
    pub fn rank(&self, i: u32) -> u32 {
        let w = i as usize / 64;
        let below = self.bits.0[w] & ((1u64 << (i % 64)) - 1);
        self.before[w] + below.count_ones()
    }
}

/// Frames split by the window, as `frames::Measured` has them.
#[derive(Clone, Debug, Default)]
pub struct MeasuredFrames {
    /// Per frame index: measured or not.
    pub in_window: Bits,
    /// How many are.
    pub count: u64,
    pub warmup_frames: u64,
    pub after_frames: u64,
    pub open_frames: u64,
    pub open_missing_stages: Vec<u16>,
}

/// Each span's frame index (NO_FRAME for none) and stage, in the run's order, handed to
/// the visitor: from columns in memory, or from another read of the spans.
pub type SpanFrames<'a> = dyn FnMut(&mut dyn FnMut(u32, u16)) -> anyhow::Result<()> + 'a;

/// The columns' frames and stages as [`SpanFrames`].
fn frames_of(
    columns: &SpanColumns,
) -> impl FnMut(&mut dyn FnMut(u32, u16)) -> anyhow::Result<()> + '_ {
    move |visit| {
        for (&frame, &stage) in columns.frame.iter().zip(&columns.stage) {
            visit(frame, stage);
        }
        Ok(())
    }
}

/// `frames::measure_run` over columns.
pub fn measure(
    table: &FrameTable,
    columns: &SpanColumns,
    meta: &RunMeta,
) -> (ResolvedWindow, MeasuredFrames) {
    measure_with(table, meta, &mut frames_of(columns))
        .expect("columns in memory are read without error")
}

/// [`measure`] with the spans' frames and stages from `spans` (read only when the run
/// stopped mid-frame, for its last frames).
pub fn measure_with(
    table: &FrameTable,
    meta: &RunMeta,
    spans: &mut SpanFrames,
) -> anyhow::Result<(ResolvedWindow, MeasuredFrames)> {
    let window = resolve_window(meta, table.last_end_ns);
    let mut m = MeasuredFrames {
        in_window: Bits::new(table.slots()),
        ..MeasuredFrames::default()
    };
    for i in table.frames() {
        let end = table.end_ns(i);
        if end < window.start_ns {
            m.warmup_frames += 1;
        } else if end > window.end_ns {
            m.after_frames += 1;
        } else {
            m.in_window.set(i);
            m.count += 1;
        }
    }
    let open = open_at_stop_with(table, meta, spans)?;
    for &i in &open.indices {
        if m.in_window.take(i) {
            m.open_frames += 1;
            m.count -= 1;
        }
    }
    if m.open_frames > 0 {
        m.open_missing_stages = open.missing_stages;
    }
    Ok((window, m))
}

/// `frames::open_at_stop` over columns. Frames there are ordered by start, then by which
/// came first in the run (its first usable span); here that order is recovered for the
/// few frames at the tail only.
pub fn open_at_stop(columns: &SpanColumns, table: &FrameTable, meta: &RunMeta) -> OpenFrames {
    open_at_stop_with(table, meta, &mut frames_of(columns))
        .expect("columns in memory are read without error")
}

/// [`open_at_stop`] with the spans' frames and stages from `spans` (two reads).
fn open_at_stop_with(
    table: &FrameTable,
    meta: &RunMeta,
    spans: &mut SpanFrames,
) -> anyhow::Result<OpenFrames> {
    let n = table.count();
    if !stopped_mid_frame(meta) || n < 2 {
        return Ok(OpenFrames::default());
    }
    let tail = MAX_OPEN_FRAMES.min(n / 2);
    let look = tail + REFERENCE_FRAMES.min(n - tail);
    // The `look`-th latest start: frames starting after it are looked at, and enough of
    // those starting at it.
    // From the last index down: with ids counting up, starts mostly fall, and a start no
    // later than the `look`-th latest so far is passed over without touching the heap.
    let mut latest: BinaryHeap<Reverse<i64>> = BinaryHeap::with_capacity(look + 1);
    for i in table.frames().rev() {
        let start = table.start_ns(i);
        if latest.len() == look && latest.peek().is_some_and(|r| start <= r.0) {
            continue;
        }
        latest.push(Reverse(start));
        if latest.len() > look {
            latest.pop();
        }
    }
    let threshold = latest.peek().map_or(i64::MIN, |r| r.0);
    let candidates: Vec<u32> = table
        .frames()
        .filter(|&i| table.start_ns(i) >= threshold)
        .collect();
    let ranks = first_rows(spans, table, &candidates)?;
    let mut keyed: Vec<(i64, usize, u32)> = (candidates.iter().zip(&ranks))
        .map(|(&i, &rank)| (table.start_ns(i), rank, i))
        .collect();
    keyed.sort_unstable();
    let looked_at: Vec<u32> = keyed[keyed.len() - look..].iter().map(|k| k.2).collect();

    // Stage sets of the frames looked at, from one pass over the spans.
    let mut position: Vec<(u32, usize)> = (looked_at.iter().enumerate())
        .map(|(k, &i)| (i, k))
        .collect();
    position.sort_unstable();
    let mut looked = Bits::new(table.slots());
    for &i in &looked_at {
        looked.set(i);
    }
    let mut stages: Vec<Vec<u16>> = vec![Vec::new(); looked_at.len()];
    spans(&mut |frame, stage| {
        if frame == NO_FRAME || !looked.get(frame) {
            return;
        }
        if let Ok(at) = position.binary_search_by_key(&frame, |p| p.0) {
            let k = position[at].1;
            if !stages[k].contains(&stage) {
                stages[k].push(stage);
            }
        }
    })?;
    Ok(open_from_stages(&stages, tail, |k| looked_at[k]))
}

/// For each of `frames` (ascending indices), the row of its first span.
fn first_rows(
    spans: &mut SpanFrames,
    table: &FrameTable,
    frames: &[u32],
) -> anyhow::Result<Vec<usize>> {
    let mut wanted = Bits::new(table.slots());
    for &i in frames {
        wanted.set(i);
    }
    let mut rows = vec![usize::MAX; frames.len()];
    let mut left = frames.len();
    let mut row = 0;
    spans(&mut |frame, _| {
        if left > 0 && frame != NO_FRAME && wanted.take(frame) {
            if let Ok(at) = frames.binary_search(&frame) {
                rows[at] = row;
                left -= 1;
            }
        }
        row += 1;
    })?;
    Ok(rows)
}

/// The measured frames ordered by end, then id (`frames::Measured::order`).
pub fn end_order(table: &FrameTable, measured: &MeasuredFrames) -> Vec<u32> {
    // Sized once: collected, the vector grew by doubling (64 MiB for 10M frames, issue 29).
    let mut order: Vec<u32> = Vec::with_capacity(measured.count as usize);
    order.extend(measured.in_window.ones());
    // Frames nearly always end in order, but for a few late ones.
    if table.indices_follow_ids() {
        sort_nearly_sorted(&mut order, |i| (table.end_ns(i), i));
    } else {
        sort_nearly_sorted(&mut order, |i| (table.end_ns(i), table.id(i)));
    }
    order
}
