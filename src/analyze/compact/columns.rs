//! A run's spans as the analysis needs them, about 10 to 18 bytes a span instead of the
//! 32 of a `Span`: the frame as an index into the [`FrameTable`], the stage, the duration
//! packed, and the start and thread only when asked for.

use super::packed::PackedNs;
use super::table::{FrameBuilder, FrameTable};
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
    pub thread: Option<Vec<u32>>,
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
    frames: FrameBuilder,
}

impl ColumnsBuilder {
    pub fn new(keep: Keep, capacity: usize) -> ColumnsBuilder {
        ColumnsBuilder {
            columns: SpanColumns {
                frame: Vec::with_capacity(capacity),
                stage: Vec::with_capacity(capacity),
                dur: PackedNs::with_capacity(capacity),
                start: keep.start.then(|| PackedNs::with_capacity(capacity)),
                thread: keep.thread.then(|| Vec::with_capacity(capacity)),
            },
            frames: FrameBuilder::expecting(capacity),
        }
    }

    pub fn push(&mut self, spans: &[Span]) {
        let c = &mut self.columns;
        for s in spans {
            let code = self.frames.add(s.frame, s.start_ns, s.dur_ns, &mut c.frame);
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

    pub fn finish(self) -> (SpanColumns, FrameTable) {
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
        let table = self.frames.finish(&mut columns.frame);
        (columns, table)
    }
}

/// The columns and frames of `spans`, all at once (tests, small runs).
pub fn columns_of(spans: &[Span], keep: Keep) -> (SpanColumns, FrameTable) {
    let mut builder = ColumnsBuilder::new(keep, spans.len());
    builder.push(spans);
    builder.finish()
}
