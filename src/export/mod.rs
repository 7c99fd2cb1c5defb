//! Exporters: a run written as a trace other tools open (the Perfetto UI, chrome://tracing)
//! or as plain CSV. Importing an export gives back the same spans to the nanosecond.

pub mod chrome;
pub mod csv;
pub mod perfetto;
mod start_order;

use std::io::Write;

use crate::model::Run;
use crate::render::format::EXPORT;
use crate::render::Format;

/// Writes `run` as `format` (perfetto, chrome or csv) to `out`.
pub fn export(run: &Run, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    match format {
        Format::Perfetto => perfetto::write(run, out),
        Format::Chrome => chrome::write(run, out),
        Format::Csv => csv::write(run, out),
        other => Err(EXPORT.refuse(other)),
    }
}

/// Writes `run` as `format` to `path` (`-`: standard output) as `crate::output` writes
/// every whole file: a device or FIFO as a stream, a regular file under a temporary name
/// renamed into place, so a failed export leaves no partial file and never replaces
/// anything but a regular file. `input`, the run file read, is never written over.
pub fn export_to_path(
    run: &Run,
    format: Format,
    path: &std::path::Path,
    input: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let target = crate::destination::Target::resolve(path)?;
    if let Some(input) = input {
        target.refuse_overwriting(path, input)?;
    }
    crate::destination::write_whole(&target, path, |out| export(run, format, out))
}

/// `head` (a run with its events and counter values, not its spans) as `format` with its
/// spans streamed from `source`, written to `path` as [`export_to_path`] writes: no
/// format needs the whole run in memory. Returns the spans written.
pub fn export_streamed(
    head: &Run,
    source: &(dyn crate::model::SpanSource + Sync),
    format: Format,
    path: &std::path::Path,
    input: Option<&std::path::Path>,
) -> anyhow::Result<u64> {
    let target = crate::destination::Target::resolve(path)?;
    if let Some(input) = input {
        target.refuse_overwriting(path, input)?;
    }
    let mut spans = 0;
    crate::destination::write_whole(&target, path, |out| {
        spans = match format {
            Format::Perfetto => perfetto::write_from(head, source, out)?,
            Format::Chrome => chrome::write_from(head, source, out)?,
            Format::Csv => csv::write_from(head, source, out)?,
            other => return Err(EXPORT.refuse(other)),
        };
        Ok(())
    })?;
    Ok(spans)
}

/// `framelab export` of a run file's run: its events and counter values loaded, its spans
/// streamed ([`export_streamed`]). Returns the spans written.
pub fn export_stored(
    stored: &mut crate::store::StoredRun,
    format: Format,
    path: &std::path::Path,
    input: Option<&std::path::Path>,
) -> anyhow::Result<u64> {
    stored.head.events = stored.events()?;
    stored.head.counters = stored.counters()?;
    export_streamed(&stored.head, stored, format, path, input)
}
