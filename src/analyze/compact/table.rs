//! Frames as columns: start and end by frame index, built while spans stream past.
//!
//! Ids recorded by the SDK count up, so a frame's index is normally its id's offset from the
//! smallest id (`Ids::Offset`): no id is stored and no table maps them. Ids too spread out
//! for that (hashes, timestamps) are listed with an open-addressing table over the list
//! (`Ids::Listed`). Either way a frame is what `Frames` calls one (docs/metrics.md, "Frames");
//! only the order of indices differs, and nothing computed depends on it.

use super::growing::GrowingNs;
use super::packed::PackedNs;
use crate::analyze::frames::{out_of_range, BadSpan, NO_FRAME};

/// Offsets kept in a span's u32 frame code while building: `offset + BIAS`, leaving
/// `u32::MAX` for NO_FRAME.
const BIAS: i128 = 1 << 31;
const MIN_OFFSET: i128 = -BIAS;
const MAX_OFFSET: i128 = BIAS - 2;
/// Holes (ids with no frame) allowed on top of one per frame before ids count as sparse:
/// a hole costs 16 bytes, a listed frame 12 more than an offset one.
const HOLE_SLACK: usize = 1 << 16;

/// Start and end by index; an index with no frame (a hole) has start > end. Packed as
/// they are filled ([`GrowingNs`]): about 8 bytes a frame, where two `Vec<i64>` took 16
/// (24 while they grew by half) at the peak of the first read.
#[derive(Clone, Debug)]
struct Bounds {
    start: GrowingNs,
    end: GrowingNs,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            start: GrowingNs::new(i64::MAX),
            end: GrowingNs::new(i64::MIN),
        }
    }
}

impl Bounds {
    fn len(&self) -> usize {
        self.start.len()
    }

    fn grow_to(&mut self, len: usize) {
        self.start.grow_to(len);
        self.end.grow_to(len);
    }

    fn is_frame(&self, i: usize) -> bool {
        self.start.get(i) <= self.end.get(i)
    }

    /// Widens frame `i` to hold `[start, end]`; true when it was a hole.
    fn widen(&mut self, i: usize, start: i64, end: i64) -> bool {
        let (was_start, was_end) = (self.start.get(i), self.end.get(i));
        if start < was_start {
            self.start.set(i, start);
        }
        if end > was_end {
            self.end.set(i, end);
        }
        was_start > was_end
    }

    fn push(&mut self, start: i64, end: i64) {
        self.start.push(start);
        self.end.push(end);
    }
}

/// splitmix64's finaliser: ids that differ in any bits spread over the table.
fn mix(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Open addressing (linear probing) of indices into an id list: 4 bytes a slot, at most
/// three quarters full.
#[derive(Clone, Debug)]
struct IdTable {
    slots: Vec<u32>,
}

impl IdTable {
    fn for_ids(ids: &[u64]) -> IdTable {
        let mut table = IdTable {
            slots: vec![NO_FRAME; (ids.len() * 4 / 3 + 1).next_power_of_two().max(16)],
        };
        for (i, &id) in ids.iter().enumerate() {
            table.place(id, i as u32);
        }
        table
    }

    fn place(&mut self, id: u64, index: u32) {
        let mask = self.slots.len() - 1;
        let mut at = mix(id) as usize & mask;
        while self.slots[at] != NO_FRAME {
            at = (at + 1) & mask;
        }
        self.slots[at] = index;
    }

    fn find(&self, id: u64, ids: &[u64]) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut at = mix(id) as usize & mask;
        loop {
            match self.slots[at] {
                NO_FRAME => return None,
                i if ids[i as usize] == id => return Some(i),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// The index of `id`, appending it to `ids` when new (second: whether it was).
    fn find_or_add(&mut self, id: u64, ids: &mut Vec<u64>) -> (u32, bool) {
        if let Some(i) = self.find(id, ids) {
            return (i, false);
        }
        let index = ids.len() as u32;
        ids.push(id);
        if ids.len() * 4 > self.slots.len() * 3 {
            *self = IdTable::for_ids(ids);
        } else {
            self.place(id, index);
        }
        (index, true)
    }
}

/// How a frame index relates to its id.
#[derive(Clone, Debug)]
enum Ids {
    /// id = first + index.
    Offset { first: u64 },
    /// id = ids[index].
    Listed { ids: Vec<u64>, table: IdTable },
}

/// Every frame of a run: start and end by index, and the id of each index. Starts and
/// ends are packed once built (about 4 bytes each rather than 8: frames close together
/// in time are close together in index); a hole has start > end.
#[derive(Clone, Debug)]
pub struct FrameTable {
    start: PackedNs,
    end: PackedNs,
    ids: Ids,
    count: usize,
    /// Spans skipped because their duration is out of range (`frames::out_of_range`).
    pub negative_spans: u64,
    /// The first of them.
    pub first_bad_span: Option<BadSpan>,
    /// The latest end of any usable span.
    pub last_end_ns: Option<i64>,
}

impl FrameTable {
    /// Indices run over `0..slots()`; some may be holes (see [`FrameTable::is_frame`]).
    pub fn slots(&self) -> usize {
        self.start.len()
    }

    /// Frames (indices that are not holes).
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn is_frame(&self, i: u32) -> bool {
        self.start_ns(i) <= self.end_ns(i)
    }

    /// The indices that are frames, ascending.
    pub fn frames(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        (0..self.slots() as u32).filter(|&i| self.is_frame(i))
    }

    pub fn start_ns(&self, i: u32) -> i64 {
        self.start.get(i as usize)
    }

    pub fn end_ns(&self, i: u32) -> i64 {
        self.end.get(i as usize)
    }

    /// End-to-end latency, as `Frame::total_ns`.
    pub fn total_ns(&self, i: u32) -> i64 {
        self.end_ns(i).saturating_sub(self.start_ns(i))
    }

    pub fn id(&self, i: u32) -> u64 {
        match &self.ids {
            Ids::Offset { first } => first.wrapping_add(u64::from(i)),
            Ids::Listed { ids, .. } => ids[i as usize],
        }
    }

    /// Whether ascending indices are ascending ids.
    pub fn indices_follow_ids(&self) -> bool {
        matches!(self.ids, Ids::Offset { .. })
    }

    /// Index of the frame with this id, if it has a usable span.
    pub fn index_of(&self, id: u64) -> Option<u32> {
        let i = match &self.ids {
            Ids::Offset { first } => {
                let off = id.checked_sub(*first)?;
                u32::try_from(off)
                    .ok()
                    .filter(|&i| (i as usize) < self.slots())?
            }
            Ids::Listed { ids, table } => table.find(id, ids)?,
        };
        self.is_frame(i).then_some(i)
    }
}

/// Slots above and below the anchor once slot `k` on the side of `off` exists.
fn slots_after(up: usize, down: usize, off: i128, k: usize) -> usize {
    if off >= 0 {
        up.max(k + 1) + down
    } else {
        up + down.max(k + 1)
    }
}

/// Builds a [`FrameTable`] span by span; each span gets a frame code, which
/// [`FrameBuilder::finish`] turns into the frame's index.
#[derive(Debug)]
pub struct FrameBuilder {
    mode: Mode,
    negative_spans: u64,
    first_bad_span: Option<BadSpan>,
    last_end_ns: Option<i64>,
}

#[derive(Debug)]
enum Mode {
    /// A frame's slot is its id's offset from `anchor` (the first id seen): `up[k]` for
    /// offset k ≥ 0, `down[k]` for offset −1 − k. Codes are `offset + BIAS`.
    Offsets {
        anchor: u64,
        up: Bounds,
        down: Bounds,
        frames: usize,
    },
    /// Codes are indices into `ids`.
    Listed {
        bounds: Bounds,
        ids: Vec<u64>,
        table: IdTable,
        /// The last id looked up and its index: a frame's spans often come together.
        last: Option<(u64, u32)>,
    },
}

impl Default for FrameBuilder {
    fn default() -> FrameBuilder {
        FrameBuilder::expecting(0)
    }
}

impl FrameBuilder {
    /// A builder for about `spans` spans (a hint no longer needed: the columns grow a
    /// block at a time).
    pub fn expecting(_spans: usize) -> FrameBuilder {
        FrameBuilder {
            mode: Mode::Offsets {
                anchor: 0,
                up: Bounds::default(),
                down: Bounds::default(),
                frames: 0,
            },
            negative_spans: 0,
            first_bad_span: None,
            last_end_ns: None,
        }
    }
}

impl FrameBuilder {
    /// The code of a span of frame `id` (NO_FRAME for a duration out of range, which is
    /// counted and belongs to no frame). `codes` are the codes handed out so far: a switch
    /// to listed ids rewrites them.
    pub fn add(&mut self, id: u64, start_ns: i64, dur_ns: i64, codes: &mut [u32]) -> u32 {
        if out_of_range(start_ns, dur_ns) {
            self.negative_spans += 1;
            self.first_bad_span.get_or_insert(BadSpan {
                frame: id,
                start_ns,
                dur_ns,
            });
            return NO_FRAME;
        }
        // Saturating: a corrupt record must not overflow (and panic in debug builds).
        let end_ns = start_ns.saturating_add(dur_ns);
        self.last_end_ns = Some(self.last_end_ns.map_or(end_ns, |l| l.max(end_ns)));
        if let Some(code) = self.add_by_offset(id, start_ns, end_ns) {
            return code;
        }
        if matches!(self.mode, Mode::Offsets { .. }) {
            self.list_ids(codes);
        }
        let Mode::Listed {
            bounds,
            ids,
            table,
            last,
        } = &mut self.mode
        else {
            unreachable!("ids were just listed")
        };
        let index = match *last {
            Some((last_id, index)) if last_id == id => index,
            _ => {
                let (index, new) = table.find_or_add(id, ids);
                if new {
                    bounds.push(i64::MAX, i64::MIN);
                }
                *last = Some((id, index));
                index
            }
        };
        bounds.widen(index as usize, start_ns, end_ns);
        index
    }

    /// The span's code while ids stay dense around the first one; `None` when this id
    /// would make them too sparse (or the ids are listed already).
    fn add_by_offset(&mut self, id: u64, start_ns: i64, end_ns: i64) -> Option<u32> {
        let Mode::Offsets {
            anchor,
            up,
            down,
            frames,
        } = &mut self.mode
        else {
            return None;
        };
        if up.len() == 0 && down.len() == 0 {
            *anchor = id;
        }
        let off = id as i128 - *anchor as i128;
        if !(MIN_OFFSET..=MAX_OFFSET).contains(&off) {
            return None;
        }
        let k = if off >= 0 { off } else { -1 - off } as usize;
        let range = slots_after(up.len(), down.len(), off, k);
        if range > up.len() + down.len() && range > 2 * (*frames + 1) + HOLE_SLACK {
            // Growing would leave the slots mostly holes.
            return None;
        }
        let side = if off >= 0 { up } else { down };
        side.grow_to(k + 1);
        if side.widen(k, start_ns, end_ns) {
            *frames += 1;
        }
        Some((off + BIAS) as u32)
    }

    /// Switches to listed ids: the frames so far get indices in id order, and the codes
    /// handed out so far are rewritten to them.
    fn list_ids(&mut self, codes: &mut [u32]) {
        let Mode::Offsets {
            anchor,
            up,
            down,
            frames,
        } = std::mem::replace(
            &mut self.mode,
            Mode::Listed {
                bounds: Bounds::default(),
                ids: Vec::new(),
                table: IdTable::for_ids(&[]),
                last: None,
            },
        )
        else {
            return;
        };
        let below = down.len();
        let mut bounds = Bounds::default();
        let mut ids = Vec::with_capacity(frames);
        // Code − (BIAS − below) → new index, for every slot.
        let mut remap = vec![NO_FRAME; below + up.len()];
        let slots = (0..below)
            .rev()
            .map(|k| (&down, k, -1 - k as i128))
            .chain((0..up.len()).map(|k| (&up, k, k as i128)));
        for (side, k, off) in slots {
            if side.is_frame(k) {
                remap[(off + below as i128) as usize] = ids.len() as u32;
                ids.push((anchor as i128 + off) as u64);
                bounds.push(side.start.get(k), side.end.get(k));
            }
        }
        for code in codes.iter_mut().filter(|c| **c != NO_FRAME) {
            *code = remap[(*code as i128 - BIAS + below as i128) as usize];
        }
        let table = IdTable::for_ids(&ids);
        self.mode = Mode::Listed {
            bounds,
            ids,
            table,
            last: None,
        };
    }

    /// The table, and every code in `codes` turned into its frame's index.
    pub fn finish(self, codes: &mut [u32]) -> FrameTable {
        // Packed one column at a time, each block of the building columns freed as it is
        // read. The slots below the anchor go first, lowest id first.
        let (start, end, ids, count) = match self.mode {
            Mode::Offsets {
                anchor,
                up,
                down,
                frames,
            } => {
                let below = down.len();
                let slots = below + up.len();
                for code in codes.iter_mut().filter(|c| **c != NO_FRAME) {
                    *code = (*code as i128 - BIAS + below as i128) as u32;
                }
                let first = (anchor as i128 - below as i128) as u64;
                let start = packed(
                    down.start.into_values_rev().chain(up.start.into_values()),
                    slots,
                );
                let end = packed(
                    down.end.into_values_rev().chain(up.end.into_values()),
                    slots,
                );
                (start, end, Ids::Offset { first }, frames)
            }
            Mode::Listed {
                bounds,
                mut ids,
                table,
                ..
            } => {
                ids.shrink_to_fit();
                let count = ids.len();
                let slots = bounds.len();
                let start = packed(bounds.start.into_values(), slots);
                let end = packed(bounds.end.into_values(), slots);
                (start, end, Ids::Listed { ids, table }, count)
            }
        };
        FrameTable {
            start,
            end,
            ids,
            count,
            negative_spans: self.negative_spans,
            first_bad_span: self.first_bad_span,
            last_end_ns: self.last_end_ns,
        }
    }
}

/// The `len` values packed.
fn packed(values: impl Iterator<Item = i64>, len: usize) -> PackedNs {
    let mut column = PackedNs::with_capacity(len);
    for v in values {
        column.push(v);
    }
    column.seal();
    column
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds (id, start, dur) spans as the columns builder does; returns the table and the
    /// frame index of each span.
    fn build(spans: &[(u64, i64, i64)]) -> (FrameTable, Vec<u32>) {
        let mut builder = FrameBuilder::default();
        let mut codes = Vec::new();
        for &(id, start, dur) in spans {
            let code = builder.add(id, start, dur, &mut codes);
            codes.push(code);
        }
        let table = builder.finish(&mut codes);
        (table, codes)
    }

    fn frames_by_id(table: &FrameTable) -> Vec<(u64, i64, i64)> {
        let mut all: Vec<_> = (table.frames())
            .map(|i| (table.id(i), table.start_ns(i), table.end_ns(i)))
            .collect();
        all.sort_unstable();
        all
    }

    #[test]
    fn ids_around_the_first_are_offsets_with_holes_for_missing_ids() {
        // 7 first, then below and above it; 9 never comes (a hole); a negative duration.
        let (table, codes) = build(&[
            (7, 70, 5),
            (5, 50, 5),
            (8, 80, 5),
            (10, 100, 5),
            (7, 60, 2),
            (6, 0, -1),
        ]);
        assert!(table.indices_follow_ids());
        assert_eq!(
            frames_by_id(&table),
            vec![(5, 50, 55), (7, 60, 75), (8, 80, 85), (10, 100, 105)]
        );
        assert_eq!((table.count(), table.slots()), (4, 6));
        assert_eq!(codes[5], NO_FRAME);
        assert_eq!(table.negative_spans, 1);
        assert_eq!(table.last_end_ns, Some(105));
        for (row, &(id, ..)) in [(7u64, 0, 0), (5, 0, 0), (8, 0, 0), (10, 0, 0), (7, 0, 0)]
            .iter()
            .enumerate()
        {
            assert_eq!(table.id(codes[row]), id);
            assert_eq!(table.index_of(id), Some(codes[row]));
        }
        assert_eq!(table.index_of(9), None, "a hole is no frame");
        assert_eq!(table.index_of(6), None, "only a negative span");
        assert_eq!(table.index_of(4), None);
        assert_eq!(table.index_of(u64::MAX), None);
    }

    #[test]
    fn a_far_id_lists_the_ids_and_keeps_every_frame() {
        let mut spans: Vec<(u64, i64, i64)> = (0..1000).map(|i| (i, i as i64 * 10, 3)).collect();
        spans.push((1 << 60, 5, 1));
        spans.extend((0..1000).map(|i| (i, i as i64 * 10 + 4, 3)));
        spans.push((u64::MAX, 1, 1));
        let (table, codes) = build(&spans);
        assert!(!table.indices_follow_ids());
        assert_eq!(table.count(), 1002);
        for (&(id, ..), &code) in spans.iter().zip(&codes) {
            assert_eq!(table.id(code), id);
            assert_eq!(table.index_of(id), Some(code));
        }
        let frames = frames_by_id(&table);
        assert_eq!(frames[3], (3, 30, 37));
        assert_eq!(frames[1000], (1 << 60, 5, 6));
        assert_eq!(table.index_of(1000), None);
    }

    #[test]
    fn ids_spread_thinly_are_listed_rather_than_holes() {
        // Every 1000th id: a slot table would be 99.9% holes.
        let spans: Vec<(u64, i64, i64)> = (0..500).map(|i| (i * 1000, i as i64, 1)).collect();
        let (table, codes) = build(&spans);
        assert!(!table.indices_follow_ids());
        assert_eq!(table.slots(), 500);
        assert_eq!(table.id(codes[499]), 499_000);
    }
}
