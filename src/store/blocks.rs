//! Spans in blocks (schema 9): a few hundred spans per `span_blocks` row, as fixed-width
//! little-endian records in one BLOB, so recording costs one SQLite row insert per block
//! instead of one per span, and reading decodes bytes instead of rows.
//!
//! Three layouts; a block takes the narrowest that holds every span in it exactly:
//!
//! | layout | bytes | start_ns | dur_ns | frame | stage_id | thread_id |
//! |---|---:|---|---|---|---|---|
//! | 1 narrow | 12 | u32 after `base_start_ns` @0 | u32 @4 | u16 after `base_frame` @8 | u8 @10 | u8 @11 |
//! | 2 medium | 16 | u32 after `base_start_ns` @0 | u32 @4 | u32 after `base_frame` @8 | u16 @12 | u16 @14 |
//! | 3 wide | 32 | i64 @0 | i64 @8 | i64 (u64 bits) @16 | u16 @24 (2 zero bytes) | u32 @28 |
//!
//! The bases are the block's smallest frame (as the i64 stored in SQL) and start, so
//! `base + offset` never overflows; a wide block's bases are 0. A block is closed when it
//! is full (`BLOCK_BYTES`, one 4 KiB page) or when the next span would need a wider
//! layout, so one out-of-range span (a negative or ≥ 4.3 s duration, a late start) costs a
//! wide block of its own, not the precision of its neighbours.

use crate::model::Span;

/// The most record bytes a block holds: with its other columns and SQLite's cell and page
/// headers the row fits one 4096-byte page (a table leaf holds up to 4061 payload bytes
/// without overflow pages), so the SQL view never follows overflow pages.
pub const BLOCK_BYTES: usize = 4032;

/// The most spans a stored block may hold (the `span_slots` table has this many rows):
/// more than any layout's `BLOCK_BYTES` allow, so the writer never reaches it.
pub const MAX_BLOCK_SPANS: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layout {
    Narrow = 1,
    Medium = 2,
    Wide = 3,
}

impl Layout {
    pub fn from_code(code: i64) -> Option<Layout> {
        Some(match code {
            1 => Layout::Narrow,
            2 => Layout::Medium,
            3 => Layout::Wide,
            _ => return None,
        })
    }

    pub fn record_bytes(self) -> usize {
        match self {
            Layout::Narrow => 12,
            Layout::Medium => 16,
            Layout::Wide => 32,
        }
    }

    /// Records a block holds: constants, so that checking a block for room divides nothing.
    fn capacity(self) -> usize {
        match self {
            Layout::Narrow => BLOCK_BYTES / 12,
            Layout::Medium => BLOCK_BYTES / 16,
            Layout::Wide => BLOCK_BYTES / 32,
        }
    }
}

/// One `span_blocks` row, but for its first id and run id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub layout: Layout,
    pub count: usize,
    pub base_frame: i64,
    pub base_start_ns: i64,
    pub records: Vec<u8>,
}

/// The extremes of a set of spans: what decides their layout.
#[derive(Clone, Copy)]
struct Ranges {
    frame: (i64, i64),
    start: (i64, i64),
    dur: (i64, i64),
    stage: u16,
    thread: u32,
}

impl Ranges {
    fn of(s: &Span) -> Ranges {
        let frame = s.frame as i64;
        Ranges {
            frame: (frame, frame),
            start: (s.start_ns, s.start_ns),
            dur: (s.dur_ns, s.dur_ns),
            stage: s.stage,
            thread: s.thread,
        }
    }

    /// These ranges widened to hold `s` too.
    fn with(mut self, s: &Span) -> Ranges {
        let frame = s.frame as i64;
        self.frame = (self.frame.0.min(frame), self.frame.1.max(frame));
        self.start = (self.start.0.min(s.start_ns), self.start.1.max(s.start_ns));
        self.dur = (self.dur.0.min(s.dur_ns), self.dur.1.max(s.dur_ns));
        self.stage = self.stage.max(s.stage);
        self.thread = self.thread.max(s.thread);
        self
    }

    /// Widens these ranges over the first spans of `spans` that a block of `layout` holds
    /// with them (`push`'s test: no wider layout needed, and a wide block left at the first
    /// span that fits a narrower one alone); returns how many. One loop per layout, the
    /// ranges in registers: the writer asks this of every span.
    fn widen_while_fitting(&mut self, layout: Layout, spans: &[Span]) -> usize {
        let mut ranges = *self;
        let mut joined = spans.len();
        for (k, s) in spans.iter().enumerate() {
            let merged = ranges.with(s);
            let fits = match layout {
                Layout::Narrow => merged.fits_narrow(),
                Layout::Medium => merged.fits_medium(),
                Layout::Wide => Ranges::of(s).layout() == Layout::Wide,
            };
            if !fits {
                joined = k;
                break;
            }
            ranges = merged;
        }
        *self = ranges;
        joined
    }

    /// Start and duration fit u32 offsets (what layouts 1 and 2 share). lo ≤ hi in every
    /// range, so a difference is exact as a u64.
    #[inline(always)]
    fn fits_common(&self) -> bool {
        let width = |(lo, hi): (i64, i64)| hi.abs_diff(lo);
        (width(self.start) <= u64::from(u32::MAX))
            & (self.dur.0 >= 0)
            & (self.dur.1 <= i64::from(u32::MAX))
    }

    #[inline(always)]
    fn fits_narrow(&self) -> bool {
        self.fits_common()
            & (self.frame.1.abs_diff(self.frame.0) <= u64::from(u16::MAX))
            & (self.stage <= 0xFF)
            & (self.thread <= 0xFF)
    }

    #[inline(always)]
    fn fits_medium(&self) -> bool {
        self.fits_common()
            & (self.frame.1.abs_diff(self.frame.0) <= u64::from(u32::MAX))
            & (self.thread <= u32::from(u16::MAX))
    }

    fn layout(&self) -> Layout {
        if self.fits_narrow() {
            Layout::Narrow
        } else if self.fits_medium() {
            Layout::Medium
        } else {
            Layout::Wide
        }
    }
}

/// Gathers spans in order and hands out closed blocks.
#[derive(Default)]
pub struct BlockEncoder {
    pending: Vec<Span>,
    ranges: Option<(Ranges, Layout)>,
}

impl BlockEncoder {
    /// Adds `span`; returns the block it closed, if it closed one.
    pub fn push(&mut self, span: &Span) -> Option<Block> {
        let Some((ranges, layout)) = self.ranges.as_mut() else {
            self.start(span);
            return None;
        };
        let merged = ranges.with(span);
        let needed = merged.layout();
        let full = self.pending.len() >= needed.capacity();
        // A wide block ends at the first span that fits a narrower one on its own.
        let leaving_wide = *layout == Layout::Wide && Ranges::of(span).layout() < Layout::Wide;
        if needed > *layout || full || leaving_wide {
            let closed = self.finish();
            self.start(span);
            return closed;
        }
        *ranges = merged;
        self.pending.push(*span);
        None
    }

    /// Adds `spans` in order, handing each block they close to `closed`, as `push` one by one
    /// would. A block that opens and closes within `spans` is encoded straight from it; only
    /// the spans of the block still open at the end (and of one an earlier call began) are
    /// copied and kept: the writer's batches of thousands of spans are not copied once more.
    pub fn push_all(
        &mut self,
        spans: &[Span],
        mut closed: impl FnMut(Block) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        // While a block is open it is `pending` followed by `spans[from..i]`.
        let (mut from, mut i) = (0, 0);
        while i < spans.len() {
            let Some((ranges, layout)) = self.ranges.as_mut() else {
                let ranges = Ranges::of(&spans[i]);
                self.ranges = Some((ranges, ranges.layout()));
                from = i;
                i += 1;
                continue;
            };
            // The spans that join the open block: as many as fit its layout and its room.
            let room = layout.capacity() - (self.pending.len() + (i - from));
            let end = spans.len().min(i + room);
            i += ranges.widen_while_fitting(*layout, &spans[i..end]);
            if i == spans.len() {
                break;
            }
            // `spans[i]` needs a wider layout, leaves a wide block, or finds it full.
            let (ranges, layout) = (*ranges, *layout);
            let block = if self.pending.is_empty() {
                encode(&spans[from..i], &ranges, layout)
            } else {
                self.pending.extend_from_slice(&spans[from..i]);
                let block = encode(&self.pending, &ranges, layout);
                self.pending.clear();
                block
            };
            let next = Ranges::of(&spans[i]);
            self.ranges = Some((next, next.layout()));
            from = i;
            i += 1;
            closed(block)?;
        }
        if self.ranges.is_some() {
            self.pending.extend_from_slice(&spans[from..]);
        }
        Ok(())
    }

    fn start(&mut self, span: &Span) {
        let ranges = Ranges::of(span);
        self.ranges = Some((ranges, ranges.layout()));
        self.pending.push(*span);
    }

    /// Whether spans are waiting for `finish`.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Closes the open block, if any.
    pub fn finish(&mut self) -> Option<Block> {
        let (ranges, layout) = self.ranges.take()?;
        let block = encode(&self.pending, &ranges, layout);
        self.pending.clear();
        Some(block)
    }
}

fn encode(spans: &[Span], ranges: &Ranges, layout: Layout) -> Block {
    let (base_frame, base_start_ns) = match layout {
        Layout::Wide => (0, 0),
        _ => (ranges.frame.0, ranges.start.0),
    };
    // Offsets are within the ranges `layout` was chosen for: the casts are exact. One loop
    // per layout, each filling a whole record at a time: the layout is not asked per span.
    let start = |s: &Span| s.start_ns.wrapping_sub(base_start_ns) as u32;
    let frame = |s: &Span| (s.frame as i64).wrapping_sub(base_frame);
    let mut records = vec![0u8; spans.len() * layout.record_bytes()];
    match layout {
        Layout::Narrow => {
            for (s, r) in spans.iter().zip(records.chunks_exact_mut(12)) {
                r[0..4].copy_from_slice(&start(s).to_le_bytes());
                r[4..8].copy_from_slice(&(s.dur_ns as u32).to_le_bytes());
                r[8..10].copy_from_slice(&(frame(s) as u16).to_le_bytes());
                r[10] = s.stage as u8;
                r[11] = s.thread as u8;
            }
        }
        Layout::Medium => {
            for (s, r) in spans.iter().zip(records.chunks_exact_mut(16)) {
                r[0..4].copy_from_slice(&start(s).to_le_bytes());
                r[4..8].copy_from_slice(&(s.dur_ns as u32).to_le_bytes());
                r[8..12].copy_from_slice(&(frame(s) as u32).to_le_bytes());
                r[12..14].copy_from_slice(&s.stage.to_le_bytes());
                r[14..16].copy_from_slice(&(s.thread as u16).to_le_bytes());
            }
        }
        Layout::Wide => {
            for (s, r) in spans.iter().zip(records.chunks_exact_mut(32)) {
                r[0..8].copy_from_slice(&s.start_ns.to_le_bytes());
                r[8..16].copy_from_slice(&s.dur_ns.to_le_bytes());
                r[16..24].copy_from_slice(&s.frame.to_le_bytes());
                r[24..26].copy_from_slice(&s.stage.to_le_bytes());
                // 26..28 stay zero.
                r[28..32].copy_from_slice(&s.thread.to_le_bytes());
            }
        }
    }
    Block {
        layout,
        count: spans.len(),
        base_frame,
        base_start_ns,
        records,
    }
}

/// Every span of `spans`, in order, as blocks.
#[cfg(test)]
pub fn encode_all(spans: &[Span]) -> Vec<Block> {
    let mut encoder = BlockEncoder::default();
    let mut blocks: Vec<Block> = spans.iter().filter_map(|s| encoder.push(s)).collect();
    blocks.extend(encoder.finish());
    blocks
}

/// A stored block's columns as read back, before they are trusted.
pub struct StoredBlock<'a> {
    pub layout: i64,
    pub count: i64,
    pub base_frame: i64,
    pub base_start_ns: i64,
    pub records: &'a [u8],
}

/// Appends the spans of `block` to `out`, or says why the block cannot be one framelab
/// wrote (a damaged or hand-edited file).
pub fn decode(block: &StoredBlock<'_>, out: &mut Vec<Span>) -> anyhow::Result<()> {
    let layout = Layout::from_code(block.layout)
        .ok_or_else(|| anyhow::anyhow!("span_blocks.layout is {}, not 1, 2 or 3", block.layout))?;
    let size = layout.record_bytes();
    let count = usize::try_from(block.count)
        .ok()
        .filter(|&n| n <= MAX_BLOCK_SPANS && n * size == block.records.len())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "a span block says it holds {} spans in {} bytes of layout {}",
                block.count,
                block.records.len(),
                block.layout
            )
        })?;
    out.reserve(count);
    let (frame0, start0) = (block.base_frame, block.base_start_ns);
    let u16_at = |r: &[u8], i: usize| u16::from_le_bytes([r[i], r[i + 1]]);
    let u32_at = |r: &[u8], i: usize| u32::from_le_bytes(r[i..i + 4].try_into().unwrap());
    let i64_at = |r: &[u8], i: usize| i64::from_le_bytes(r[i..i + 8].try_into().unwrap());
    let records = block.records.chunks_exact(size);
    match layout {
        Layout::Narrow => out.extend(records.map(|r| Span {
            start_ns: start0.wrapping_add(i64::from(u32_at(r, 0))),
            dur_ns: i64::from(u32_at(r, 4)),
            frame: frame0.wrapping_add(i64::from(u16_at(r, 8))) as u64,
            stage: u16::from(r[10]),
            thread: u32::from(r[11]),
        })),
        Layout::Medium => out.extend(records.map(|r| Span {
            start_ns: start0.wrapping_add(i64::from(u32_at(r, 0))),
            dur_ns: i64::from(u32_at(r, 4)),
            frame: frame0.wrapping_add(i64::from(u32_at(r, 8))) as u64,
            stage: u16_at(r, 12),
            thread: u32::from(u16_at(r, 14)),
        })),
        Layout::Wide => out.extend(records.map(|r| Span {
            start_ns: i64_at(r, 0),
            dur_ns: i64_at(r, 8),
            frame: i64_at(r, 16) as u64,
            stage: u16_at(r, 24),
            thread: u32_at(r, 28),
        })),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::span;

    fn round_trip(spans: &[Span]) -> Vec<Block> {
        let blocks = encode_all(spans);
        let mut back = Vec::new();
        for b in &blocks {
            assert!(b.records.len() <= BLOCK_BYTES && b.count <= MAX_BLOCK_SPANS);
            let stored = StoredBlock {
                layout: b.layout as i64,
                count: b.count as i64,
                base_frame: b.base_frame,
                base_start_ns: b.base_start_ns,
                records: &b.records,
            };
            decode(&stored, &mut back).unwrap();
        }
        assert_eq!(back, spans);
        blocks
    }

    #[test]
    fn extreme_values_come_back_exactly() {
        let spans = [
            span(0, 0, 0, i64::MIN, 0),
            span(u64::MAX, u16::MAX, u32::MAX, i64::MAX, i64::MAX),
            span(1, 2, 3, 1_000, -5),
            span(1, 2, 3, 1_000, i64::MIN),
            span(2, 1, 0, 0, u32::MAX as i64),
            span(2, 1, 0, 0, u32::MAX as i64 + 1),
            span(i64::MAX as u64, 0, 0, -1, 1),
            span(i64::MAX as u64 + 1, 0, 0, -1, 1),
            span(3, 255, 255, u32::MAX as i64, 7),
            span(3, 256, 256, 0, 7),
            span(3, 0, 65_535, 0, 7),
            span(3, 0, 65_536, 0, 7),
            span(70_000, 0, 0, 0, 7),
            span(70_000 + u32::MAX as u64, 0, 0, 0, 7),
        ];
        round_trip(&spans);
        for s in &spans {
            round_trip(std::slice::from_ref(s));
        }
    }

    #[test]
    fn ordinary_spans_take_12_bytes_and_fill_blocks() {
        // 4 threads, 6 stages, a frame every 16.7 ms; blocks end mid-frame.
        let spans: Vec<Span> = (0..10_000u64)
            .map(|i| {
                let frame = i / 25;
                let start = frame as i64 * 16_666_667 + (i % 25) as i64 * 500_000;
                span(
                    frame + 1_000_000,
                    (i % 6) as u16,
                    (i % 4) as u32,
                    start,
                    400_000,
                )
            })
            .collect();
        let blocks = round_trip(&spans);
        assert!(blocks.iter().all(|b| b.layout == Layout::Narrow));
        assert_eq!(blocks[0].count, BLOCK_BYTES / 12);
        assert_ne!(blocks[0].count % 25, 0, "a block boundary inside a frame");
        assert_eq!(blocks.len(), 10_000usize.div_ceil(BLOCK_BYTES / 12));
    }

    #[test]
    fn many_threads_and_stages_widen_the_layout_only_as_far_as_needed() {
        let medium: Vec<Span> = (0..1_000u64)
            .map(|i| {
                span(
                    i,
                    300 + (i % 700) as u16,
                    (i % 3_000) as u32,
                    i as i64 * 10,
                    5,
                )
            })
            .collect();
        let blocks = round_trip(&medium);
        assert!(blocks.iter().all(|b| b.layout == Layout::Medium));
        let wide: Vec<Span> = (0..300u64)
            .map(|i| span(i, 1, 70_000 + i as u32, i as i64, 5))
            .collect();
        let blocks = round_trip(&wide);
        assert!(blocks.iter().all(|b| b.layout == Layout::Wide));
        assert_eq!(blocks[0].count, BLOCK_BYTES / 32);
    }

    #[test]
    fn one_out_of_range_span_gets_a_wide_block_of_its_own() {
        let mut spans: Vec<Span> = (0..100u64).map(|i| span(i, 0, 0, i as i64, 3)).collect();
        spans[50].dur_ns = 10_000_000_000; // 10 s: more than u32 nanoseconds
        let blocks = round_trip(&spans);
        let layouts: Vec<(Layout, usize)> = blocks.iter().map(|b| (b.layout, b.count)).collect();
        assert_eq!(
            layouts,
            [
                (Layout::Narrow, 50),
                (Layout::Wide, 1),
                (Layout::Narrow, 49)
            ]
        );
    }

    #[test]
    fn damaged_blocks_are_refused_not_misread() {
        let blocks = encode_all(&[span(1, 0, 0, 5, 5), span(2, 0, 0, 6, 5)]);
        let b = &blocks[0];
        let stored = |layout, count, records| StoredBlock {
            layout,
            count,
            base_frame: b.base_frame,
            base_start_ns: b.base_start_ns,
            records,
        };
        let mut out = Vec::new();
        let err = decode(&stored(4, 2, &b.records), &mut out).unwrap_err();
        assert!(err.to_string().contains("layout is 4"), "{err}");
        let err = decode(&stored(1, 3, &b.records), &mut out).unwrap_err();
        assert!(err.to_string().contains("3 spans in 24 bytes"), "{err}");
        assert!(decode(&stored(1, -1, &b.records), &mut out).is_err());
        assert!(decode(&stored(1, 1, &b.records[..11]), &mut out).is_err());
        assert!(out.is_empty());
    }

    /// The encoder's bytes, not only what they decode to: a digest of the blocks a fixed mix
    /// of spans gives (every layout, blocks cut by width and by size), taken with the encoder
    /// of 6f4a69e, before it lost its division per span. A faster encoder must write the
    /// same files.
    #[test]
    fn the_encoder_writes_the_bytes_it_wrote_before() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let spans: Vec<Span> = (0..50_000u64)
            .map(|i| {
                let r = next();
                let jump = if r % 997 == 0 { r % 1_000_000 } else { 0 };
                let far = if r % 1_499 == 0 { 1_000_000_000 } else { 1 };
                let long = if r % 2_003 == 0 {
                    10_000_000_000
                } else {
                    50_000
                };
                span(
                    i / 3 + jump,
                    (r % 5) as u16 + if r % 3_001 == 0 { 300 } else { 0 },
                    (r >> 8) as u32 % 4 + if r % 4_001 == 0 { 70_000 } else { 0 },
                    i as i64 * 1_000 + (r >> 16) as i64 % 5_000 * far,
                    (r >> 24) as i64 % long,
                )
            })
            .collect();
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        let mut fold = |bytes: &[u8]| {
            for &b in bytes {
                digest = (digest ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        };
        let blocks = encode_all(&spans);
        // In the writer's batches (any size, a block cut across two) the same blocks.
        for batch in [1, 7, 336, 2_000, 16_384, spans.len()] {
            let mut encoder = BlockEncoder::default();
            let mut batched = Vec::new();
            for chunk in spans.chunks(batch) {
                encoder
                    .push_all(chunk, |b| {
                        batched.push(b);
                        Ok(())
                    })
                    .unwrap();
            }
            batched.extend(encoder.finish());
            assert!(batched == blocks, "batches of {batch}");
        }
        for b in &blocks {
            fold(&(b.layout as i64).to_le_bytes());
            fold(&(b.count as u64).to_le_bytes());
            fold(&b.base_frame.to_le_bytes());
            fold(&b.base_start_ns.to_le_bytes());
            fold(&b.records);
        }
        let mut layouts: Vec<i64> = blocks.iter().map(|b| b.layout as i64).collect();
        layouts.sort();
        layouts.dedup();
        assert_eq!(layouts, [1, 2, 3], "the mix crosses every layout");
        // 334 blocks, digest 0x78a7fedc36fa9e4d: what 6f4a69e's encoder wrote.
        assert_eq!((blocks.len(), digest), (334, 0x78a7_fedc_36fa_9e4d));
    }
}
