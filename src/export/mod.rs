//! Exporters: a run written as a trace other tools open (the Perfetto UI, chrome://tracing)
//! or as plain CSV. Importing an export gives back the same spans to the nanosecond.

pub mod chrome;
pub mod csv;
pub mod meta;
pub mod perfetto;

use std::io::Write;

use crate::model::Run;

/// The formats `framelab export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Perfetto protobuf trace: a track per thread, stages as slices linked by flows per frame
    Perfetto,
    /// Chrome trace event JSON (object form)
    Chrome,
    /// One row per span: frame, stage, pid, tid, thread, start_ns, dur_ns
    Csv,
}

/// The instant marking the run's launch (its time origin) in exported traces: the
/// importers take it as the origin, so times come back unchanged.
pub const LAUNCH_MARKER: &str = "framelab:launch";

/// Writes `run` as `format` to `out`.
pub fn export(run: &Run, format: ExportFormat, out: &mut dyn Write) -> anyhow::Result<()> {
    match format {
        ExportFormat::Perfetto => perfetto::write(run, out),
        ExportFormat::Chrome => chrome::write(run, out),
        ExportFormat::Csv => csv::write(run, out),
    }
}

/// Writes `run` as `format` to `path` (`-`: standard output). A file is written beside
/// its final name and renamed into place, so a failed export leaves no partial file.
pub fn export_to_path(
    run: &Run,
    format: ExportFormat,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        export(run, format, &mut out)?;
        return Ok(out.flush()?);
    }
    let shown = path.display();
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let file = std::fs::File::create(&partial)
        .map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let written = export(run, format, &mut out)
        .and_then(|()| out.flush().map_err(Into::into))
        .and_then(|()| std::fs::rename(&partial, path).map_err(Into::into));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        anyhow::bail!("cannot write {shown}: {e}");
    }
    Ok(())
}
