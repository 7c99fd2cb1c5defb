//! Which spans of a run of one span a frame are measured frames, told span by span as a
//! read passes them, from the shape the report's analysis reads ([`Shape`]): nothing held
//! by frame (issue 29: `whatif` in memory independent of the run's length). The frames
//! are those of the frame table's window (`compact::tests` compares the two analyses).

use super::{Place, Scan, Shape};
use crate::analyze::frames::out_of_range;
use crate::model::{Run, Span, SpanSource};

/// The measured frames of a run whose usable spans' frame ids count up as they are read
/// (so each frame has one span).
pub struct MeasuredSpans {
    shape: Shape,
    /// Where the metadata told the shape without a read: the ids still to check, by the
    /// caller's first read ([`MeasuredSpans::check`]).
    scan: Option<Scan>,
}

impl MeasuredSpans {
    /// The shape of `head`'s run, from one read of `source` unless the metadata tells it;
    /// `None` when a usable span's frame id is not above the one before.
    pub fn read(head: &Run, source: &dyn SpanSource) -> anyhow::Result<Option<MeasuredSpans>> {
        if Shape::known_before_reading(head) {
            return Ok(Some(MeasuredSpans {
                shape: Shape::known(head),
                scan: Some(Scan::new(false)),
            }));
        }
        let shape = Shape::read(head, source)?;
        Ok(shape.map(|shape| MeasuredSpans { shape, scan: None }))
    }

    /// [`MeasuredSpans::read`], the ids checked by a read of their own where the metadata
    /// told the shape: ready for [`MeasuredSpans::is_measured`] on any read.
    pub fn read_checked(
        head: &Run,
        source: &dyn SpanSource,
    ) -> anyhow::Result<Option<MeasuredSpans>> {
        let Some(mut measured) = MeasuredSpans::read(head, source)? else {
            return Ok(None);
        };
        if measured.scan.is_some() {
            let mut fits = true;
            source.for_each_spans(&mut |chunk| {
                fits = fits && chunk.iter().all(|s| measured.check(s));
                Ok(())
            })?;
            if !fits {
                return Ok(None);
            }
            measured.checked();
        }
        Ok(Some(measured))
    }

    /// Takes each span of the caller's first read, in order, while the ids are not yet
    /// checked: false once a usable span's frame id is not above the one before.
    pub fn check(&mut self, s: &Span) -> bool {
        match &mut self.scan {
            Some(scan) => scan.span(s).is_ok(),
            None => true,
        }
    }

    /// Ends the first read: the spans it counted are the run's.
    pub fn checked(&mut self) {
        if let Some(scan) = self.scan.take() {
            self.shape.scanned(&scan);
        }
    }

    /// Spans of the run, usable or not (known once read or checked).
    pub fn spans(&self) -> u64 {
        self.shape.spans
    }

    /// Whether the frame of one span ending at `end_ns`, of id `id`, is measured (its span
    /// in range).
    pub fn is_measured_frame(&self, end_ns: i64, id: u64) -> bool {
        self.shape.measured_end(end_ns, id)
    }

    /// Whether `s` is the span of a measured frame.
    pub fn is_measured(&self, s: &Span) -> bool {
        !out_of_range(s.start_ns, s.dur_ns) && matches!(self.shape.place(s), Place::Measured(_))
    }
}
