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

/// `framelab export` of run `run_id` of `run_file` (`None`: the latest) to `path`: refused
/// in one line when it would be a CSV of no spans, else [`export_stored`]. Returns the
/// run's id and the spans written.
pub fn export_file(
    run_file: &std::path::Path,
    run_id: Option<i64>,
    format: Format,
    path: &std::path::Path,
) -> anyhow::Result<(i64, u64)> {
    use crate::model::SpanSource;
    // Every format streams the spans from the file: none holds the whole run (issue 31).
    let mut stored = crate::store::open_run(run_file, run_id)?;
    if stored.span_count_hint() == 0 && format == Format::Csv {
        // A CSV of spans holds nothing else: a header alone is no export.
        let histograms = stored.head.histograms.len();
        anyhow::bail!(
            "run {} of {} has no spans{}: a CSV of its spans would be empty (--format perfetto \
             or chrome keep the run's description; framelab hist shows its histograms)",
            stored.head.meta.id,
            run_file.display(),
            if histograms == 0 {
                String::new()
            } else {
                format!(", only {histograms} imported histograms")
            }
        );
    }
    let spans = export_stored(&mut stored, format, path, Some(run_file))?;
    Ok((stored.head.meta.id, spans))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `framelab export` of a run file: the spans written, and a CSV of no spans refused
    /// in one line before any file is made.
    #[test]
    fn a_run_file_exports_its_spans_and_a_csv_of_none_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.framelab");
        let run = crate::analyze::fixtures::reference_run();
        crate::store::write_run(&file, &run).unwrap();
        let csv = dir.path().join("r.csv");
        let (run_id, spans) = export_file(&file, None, Format::Csv, &csv).unwrap();
        assert_eq!((run_id, spans), (1, run.spans.len() as u64));
        let lines = std::fs::read_to_string(&csv).unwrap().lines().count();
        assert_eq!(
            lines,
            run.spans.len() + 2,
            "a header, the launch's marker and a line per span"
        );

        let empty = Run {
            spans: Vec::new(),
            ..run
        };
        crate::store::write_run(&file, &empty).unwrap();
        let none = dir.path().join("none.csv");
        let error = export_file(&file, Some(2), Format::Csv, &none)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("run 2 of ") && error.contains("has no spans: a CSV of its spans"),
            "{error}"
        );
        assert!(!none.exists());
    }
}
