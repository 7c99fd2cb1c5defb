//! The run file: one SQLite database holding one or many runs (schema in docs/run-file.md).
//!
//! - `schema`: tables, views, what marks a file as framelab's and its version;
//! - `migrate`: upgrading files of older schema versions;
//! - `file`: opening files for reading or writing, one-line errors for bad files;
//! - `codec`: Rust values ↔ columns;
//! - `blocks`, `block_rows`: spans as fixed-width records in blocks, and those blocks in
//!   the file with the `spans` view that decodes them in SQL (schema 9);
//! - `writer` / `reader`: recording a run as it goes, loading it back;
//! - `stream`: a run whose spans are read in chunks, for analyses that need not hold them;
//! - `outputs`: metrics from the command's output and the output kept (schema 5);
//! - `profile`: sampled profiles (schema 6);
//! - `tags`: a run's `--tag KEY=VALUE`s (schema 8);
//! - `experiment`: which runs belong to which variant of a `framelab bench`, fingerprints;

mod block_rows;
mod blocks;
mod codec;
mod experiment;
mod file;
mod live_copies;
mod migrate;
mod outputs;
mod profile;
mod reader;
mod reading;
mod sched;
mod schema;
mod spill_fold;
mod stream;
mod tags;
mod writer;

pub use codec::end_reason_name;
pub use experiment::{
    create_experiment, load_experiment, load_fingerprints, record_experiment_run,
};
pub use file::{is_sqlite, DiskFull};
#[doc(hidden)]
pub use migrate::undo_9;
pub use outputs::record_outputs;
pub use profile::{load_profile, record_profile};
pub use reader::{list_runs, load_run, spans_after};
pub use sched::record_sched;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use stream::{open_run, DecodedOnThreads, StoredRun};
pub use writer::{write_run, RunWriter};
