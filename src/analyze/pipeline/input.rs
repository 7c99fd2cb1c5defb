//! What the pipeline summary reads: the spans by index, however they are held (a loaded
//! run's `Vec<Span>`, the columns of `compact`), and the facts it needs besides them.

use super::Names;

/// A span as the summary reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpanRow {
    /// The index of its frame when that frame is measured.
    pub measured_frame: Option<u32>,
    pub thread: u32,
    pub stage: u16,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// What the summary needs besides the spans.
pub(crate) struct PipelineInput<'a> {
    pub names: Names<'a>,
    /// The measured window: busy time is counted inside it.
    pub window: (i64, i64),
    /// Frame indices are below this.
    pub frame_slots: usize,
    pub measured_frames: u64,
    /// Some measured frame has two spans or more (else there are no waits to look for).
    pub multi_span: bool,
    /// Frame indices of the worst frames, whose breakdown goes into their rows.
    pub worst: &'a [u32],
}

/// The spans as the summary reads them, by index.
pub(crate) trait SpanRows: Sync {
    fn len(&self) -> usize;
    /// The index of span `i`'s frame, measured or not (`NO_FRAME` for none): cheaper
    /// than its row.
    fn frame(&self, i: usize) -> u32;
    /// The index of span `i`'s thread: cheaper than its row.
    fn thread(&self, i: usize) -> u32;
    fn row(&self, i: usize) -> SpanRow;
}
