//! presentmon importer: not written yet.

use super::{ImportError, Location, TraceBuilder};

pub fn parse(_input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    Err(b.error(
        Location::Whole,
        "the presentmon importer is not written yet",
    ))
}
