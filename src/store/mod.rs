//! The run file: one SQLite database holding one or many runs (schema in docs/run-file.md).

mod reader;
mod schema;
mod writer;

pub use reader::{list_runs, load_run};
pub use schema::SCHEMA_VERSION;
pub use writer::RunWriter;
