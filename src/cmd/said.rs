//! The one logger: what the library says as it goes (`log::warn!`, `log::info!`: a
//! supervisor's warning, a run's notes) is written here, to standard error, a line each,
//! in framelab's words, the moment it is said. Records of other crates are not framelab's
//! to say and are left out.

use std::io::Write;

use log::{Level, LevelFilter, Log, Metadata, Record};

/// Writes framelab's records to standard error.
struct StderrSaid;

static SAID: StderrSaid = StderrSaid;

/// Installs the logger once, before any command runs.
pub fn install() {
    if log::set_logger(&SAID).is_ok() {
        log::set_max_level(LevelFilter::Info);
    }
}

/// A record of framelab's own (its library or this binary), not of a crate it uses.
fn is_framelab(target: &str) -> bool {
    target == "framelab" || target.starts_with("framelab::")
}

/// The line as framelab words it: a warning says so, a note names framelab.
fn line(level: Level, said: &std::fmt::Arguments) -> String {
    match level {
        Level::Error => format!("error: {said}\n"),
        Level::Warn => format!("framelab: warning: {said}\n"),
        Level::Info | Level::Debug | Level::Trace => format!("framelab: {said}\n"),
    }
}

impl Log for StderrSaid {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= Level::Info && is_framelab(metadata.target())
    }

    fn log(&self, record: &Record) {
        if self.enabled(record.metadata()) {
            // One write a line, so lines said from several threads never interleave.
            let text = line(record.level(), record.args());
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_worded_by_level() {
        let note = line(Level::Info, &format_args!("profiling: {} threads", 3));
        assert_eq!(note, "framelab: profiling: 3 threads\n");
        let warning = line(Level::Warn, &format_args!("no process named 'db'"));
        assert_eq!(warning, "framelab: warning: no process named 'db'\n");
    }

    #[test]
    fn only_framelab_s_records_are_said() {
        assert!(is_framelab("framelab"));
        assert!(is_framelab("framelab::session::supervisor"));
        assert!(!is_framelab("tokio_postgres::connection"));
        assert!(!is_framelab("framelabx::a"));
    }
}
