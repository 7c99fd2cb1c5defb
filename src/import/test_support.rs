//! What every importer's unit tests share: an input imported as one format, and the
//! real captures under `tests/fixtures/import/`.

use std::path::Path;

use super::{parse_bytes, read_input, Format, ImportError, ImportOptions};
use crate::model::Run;

/// Imports test inputs as one format: `const IMPORT: Importer = Importer(Format::Csv);`.
pub(crate) struct Importer(pub Format);

impl Importer {
    /// The import's result with the default options.
    pub fn result(&self, input: impl AsRef<[u8]>) -> Result<Run, ImportError> {
        self.result_with(input, ImportOptions::default())
    }

    pub fn result_with(
        &self,
        input: impl AsRef<[u8]>,
        opts: ImportOptions,
    ) -> Result<Run, ImportError> {
        parse_bytes(self.0, input.as_ref(), opts)
    }

    /// The run, with the default options; a failed import fails the test with its message.
    pub fn run(&self, input: impl AsRef<[u8]>) -> Run {
        self.run_with(input, ImportOptions::default())
    }

    pub fn run_with(&self, input: impl AsRef<[u8]>, opts: ImportOptions) -> Run {
        self.result_with(input, opts)
            .unwrap_or_else(|e| panic!("{} import failed: {e}", self.0.name()))
    }

    /// The run, bad records skipped and counted (`--skip-bad`).
    pub fn run_skipping_bad(&self, input: impl AsRef<[u8]>) -> Run {
        let opts = ImportOptions {
            skip_bad: true,
            ..ImportOptions::default()
        };
        self.run_with(input, opts)
    }

    /// The error message of an import that must fail, with the default options.
    pub fn error(&self, input: impl AsRef<[u8]>) -> String {
        match self.result(input) {
            Ok(_) => panic!("{} import of bad input succeeded", self.0.name()),
            Err(e) => e.to_string(),
        }
    }
}

/// A file of `tests/fixtures/import/`, gunzipped when it is compressed.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");
    read_input(Path::new(&format!("{dir}/{name}"))).unwrap()
}

/// The longest interval between frame ends of an imported run (ns): what one bad time
/// turns into seconds.
pub(crate) fn longest_interval_ns(run: &Run) -> i64 {
    use crate::analyze::frames::{intervals_ns, measure_run, Frames};
    let frames = Frames::from_spans(&run.spans);
    let (_, measured) = measure_run(run, &frames);
    let intervals = intervals_ns(&measured.ends_ns(&frames));
    intervals.into_iter().max().unwrap_or(0)
}
