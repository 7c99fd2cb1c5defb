//! A run's spans as the analysis needs them, about 10 to 15 bytes a span instead of the
//! 32 of a `Span`: the frame as an index into the [`FrameTable`], the stage, the duration
//! packed, and the start and thread (a byte while there are few) only when asked for.

use super::narrow::NarrowIds;
use super::packed::PackedNs;
use super::table::{FrameBuilder, FrameTable};
use crate::analyze::frames::{out_of_range, NO_FRAME};
use crate::model::Span;

/// Which optional columns to keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Span starts: the stage table orders stages by their first measured start.
    pub start: bool,
    /// Thread indices: `hist --by`.
    pub thread: bool,
}

/// Span `i` of the run is row `i` of every column.
#[derive(Clone, Debug, Default)]
pub struct SpanColumns {
    /// Index of the span's frame in the [`FrameTable`]; NO_FRAME for a negative duration.
    pub frame: Vec<u32>,
    pub stage: Vec<u16>,
    pub dur: PackedNs,
    pub start: Option<PackedNs>,
    pub thread: Option<NarrowIds>,
}

impl SpanColumns {
    pub fn len(&self) -> usize {
        self.frame.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }
}

/// Fills [`SpanColumns`] and a [`FrameTable`] from chunks of spans.
#[derive(Debug)]
pub struct ColumnsBuilder {
    columns: SpanColumns,
    frames: Framing,
}

/// Where a span's frame index comes from.
#[derive(Debug)]
enum Framing {
    /// The table is built as the spans come (one read of them).
    Building(FrameBuilder),
    /// The table was built by an earlier read of the same spans: its i64 starts and ends
    /// never live beside the columns. `unknown` counts spans of frames it does not have
    /// (the spans changed between the reads).
    Known { table: FrameTable, unknown: u64 },
}

impl ColumnsBuilder {
    /// Columns and their frame table built together from one read of the spans.
    pub fn new(keep: Keep, capacity: usize) -> ColumnsBuilder {
        ColumnsBuilder {
            columns: SpanColumns::with_capacity(keep, capacity),
            frames: Framing::Building(FrameBuilder::expecting(capacity)),
        }
    }

    /// Columns of spans whose frames `table` already holds (built by a [`FramesReader`] from an
    /// earlier read of the same spans).
    pub fn with_frames(keep: Keep, capacity: usize, table: FrameTable) -> ColumnsBuilder {
        ColumnsBuilder {
            columns: SpanColumns::with_capacity(keep, capacity),
            frames: Framing::Known { table, unknown: 0 },
        }
    }

    pub fn push(&mut self, spans: &[Span]) {
        let c = &mut self.columns;
        for s in spans {
            let code = match &mut self.frames {
                Framing::Building(frames) => {
                    frames.add(s.frame, s.start_ns, s.dur_ns, &mut c.frame)
                }
                Framing::Known { table, unknown } => {
                    if out_of_range(s.start_ns, s.dur_ns) {
                        NO_FRAME
                    } else {
                        table.index_of(s.frame).unwrap_or_else(|| {
                            *unknown += 1;
                            NO_FRAME
                        })
                    }
                }
            };
            c.frame.push(code);
            c.stage.push(s.stage);
            c.dur.push(s.dur_ns);
            if let Some(start) = &mut c.start {
                start.push(s.start_ns);
            }
            if let Some(thread) = &mut c.thread {
                thread.push(s.thread);
            }
        }
    }

    /// The columns and their frames; an error when a span's frame was not in the table
    /// read before (the run changed between the two reads).
    pub fn finish(self) -> anyhow::Result<(SpanColumns, FrameTable)> {
        let mut columns = self.columns;
        columns.frame.shrink_to_fit();
        columns.stage.shrink_to_fit();
        columns.dur.seal();
        if let Some(start) = &mut columns.start {
            start.seal();
        }
        if let Some(thread) = &mut columns.thread {
            thread.shrink_to_fit();
        }
        let table = match self.frames {
            Framing::Building(frames) => frames.finish(&mut columns.frame),
            Framing::Known { unknown: 0, table } => table,
            Framing::Known { unknown, .. } => return Err(changed_between_reads(unknown)),
        };
        Ok((columns, table))
    }
}

/// The error of a read that found `unknown` spans of frames an earlier read did not.
pub fn changed_between_reads(unknown: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{unknown} spans belong to frames that were not there when the run was first read: \
         the run changed while it was analysed (analyse it again once it is written)"
    )
}

impl SpanColumns {
    fn with_capacity(keep: Keep, capacity: usize) -> SpanColumns {
        SpanColumns {
            frame: Vec::with_capacity(capacity),
            stage: Vec::with_capacity(capacity),
            dur: PackedNs::with_capacity(capacity),
            start: keep.start.then(|| PackedNs::with_capacity(capacity)),
            thread: keep.thread.then(|| NarrowIds::with_capacity(capacity)),
        }
    }
}

/// Builds the frame table alone from chunks of spans: the first of two reads, so the
/// columns of the second never live beside the table's unpacked starts and ends.
#[derive(Debug, Default)]
pub struct FramesReader {
    frames: FrameBuilder,
}

impl FramesReader {
    pub fn expecting(spans: usize) -> FramesReader {
        FramesReader {
            frames: FrameBuilder::expecting(spans),
        }
    }

    pub fn push(&mut self, spans: &[Span]) {
        for s in spans {
            // No codes are kept: the second read looks each span's frame up.
            self.frames.add(s.frame, s.start_ns, s.dur_ns, &mut []);
        }
    }

    pub fn finish(self) -> FrameTable {
        self.frames.finish(&mut [])
    }
}

/// The columns and frames of `spans`, all at once (tests, small runs).
pub fn columns_of(spans: &[Span], keep: Keep) -> (SpanColumns, FrameTable) {
    let mut builder = ColumnsBuilder::new(keep, spans.len());
    builder.push(spans);
    builder
        .finish()
        .expect("a table built from the same spans has all their frames")
}
