//! An import written into its run file: the trace read into a run, what the command line
//! gives winning over what the trace says, and the run added to the file (with `-o
//! /dev/null`, kept in memory alone). The command prints the report and says what happened.

use std::path::PathBuf;

use super::{import_files, Format, ImportOptions, InputLimits};
use crate::destination::RunFile;
use crate::model::{Run, RunMeta};

/// An import as asked, checked: what to read and how, what the run is, where it goes.
pub struct ImportRequest {
    pub files: Vec<PathBuf>,
    /// `None`: told from the first file's content.
    pub format: Option<Format>,
    pub options: ImportOptions,
    /// The run's description from the command line (name, tags, target).
    pub meta: RunMeta,
    pub limits: InputLimits,
    /// `--name`, which wins over a name the trace gives.
    pub name: Option<String>,
    pub run_file: RunFile,
}

/// What an import left: the run as written, and where.
pub struct Imported {
    /// The run, its id the one the file gave it.
    pub run: Run,
    pub run_file: RunFile,
    /// The runs the file held before this one (an import appends).
    pub runs_before: usize,
}

impl Imported {
    /// What the run holds, for the line that says what was imported: `120 spans, 4 events`.
    pub fn contents(&self) -> String {
        let run = &self.run;
        let mut what = vec![format!("{} spans", run.spans.len())];
        for (n, label) in [
            (run.events.len(), "events"),
            (run.telemetry.samples.len(), "samples"),
            (run.histograms.len(), "histograms"),
        ] {
            if n > 0 {
                what.push(format!("{n} {label}"));
            }
        }
        what.join(", ")
    }
}

/// Reads the files into a run and writes it to the request's run file.
/// `before_writing` is called once the files are read, before the file is written: where
/// the caller makes Ctrl-C wait for the write (seconds at most), so the file never holds
/// half an import.
pub fn import_into_file(
    request: ImportRequest,
    before_writing: impl FnOnce(),
) -> anyhow::Result<Imported> {
    let (target_fps, budget_ns) = (request.meta.target_fps, request.meta.budget_ns);
    let mut run = import_files(
        &request.files,
        request.format,
        request.options,
        request.meta,
        request.limits,
    )?;
    // A log with nothing after its header (or an empty trace) is bad input, not a run.
    if run.spans.is_empty()
        && run.events.is_empty()
        && run.counters.is_empty()
        && run.telemetry.samples.is_empty()
        && run.histograms.is_empty()
    {
        let files: Vec<String> = (request.files.iter())
            .map(|f| f.display().to_string())
            .collect();
        anyhow::bail!(
            "{}: nothing to import (no span, event, counter, sample or histogram in it): check \
             it is the log you meant, and that its rows come after the header",
            files.join(", ")
        );
    }
    // A framelab export gives back its run's name and target; those given here still win.
    if let Some(name) = request.name {
        run.meta.name = name;
    }
    if target_fps.is_some() || budget_ns.is_some() {
        (run.meta.target_fps, run.meta.budget_ns) = (target_fps, budget_ns);
    }
    before_writing();
    let run_file = request.run_file;
    // `-o /dev/null` keeps nothing: the run stays in memory, so nothing is written.
    // An import into a file that already holds runs adds one: counted, so the command can
    // say a second import of the same trace is no replacement.
    let runs_before = match run_file.kept() && run_file.path().exists() {
        true => crate::store::list_runs(run_file.path()).map_or(0, |runs| runs.len()),
        false => 0,
    };
    run.meta.id = match run_file.kept() {
        true => crate::store::write_run(run_file.path(), &run)?,
        false => 1,
    };
    Ok(Imported {
        run,
        run_file,
        runs_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dir: &std::path::Path, output: &str, name: Option<&str>) -> ImportRequest {
        let trace = dir.join("trace.csv");
        std::fs::write(
            &trace,
            "start,dur,name,frame\n0,1000,decode,1\n2000,500,decode,2\n",
        )
        .unwrap();
        ImportRequest {
            files: vec![trace],
            format: Some(Format::Csv),
            options: ImportOptions::default(),
            meta: RunMeta {
                name: "trace.csv".into(),
                target_fps: Some(60.0),
                budget_ns: Some(16_666_667),
                ..RunMeta::default()
            },
            limits: InputLimits::default(),
            name: name.map(str::to_owned),
            run_file: RunFile::resolve(&dir.join(output)).unwrap(),
        }
    }

    /// A CSV of a header only, or an empty Chrome trace: one line, and no file written.
    #[test]
    fn a_log_with_nothing_in_it_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text, format) in [
            ("hdr.csv", "start,dur,name,frame\n", Format::Csv),
            ("empty.json", "[]", Format::Chrome),
        ] {
            let input = dir.path().join(name);
            std::fs::write(&input, text).unwrap();
            let mut req = request(dir.path(), "out.framelab", None);
            req.files = vec![input];
            req.format = Some(format);
            let error = import_into_file(req, || {})
                .err()
                .expect("refused")
                .to_string();
            assert!(error.contains("nothing to import"), "{error}");
            assert!(!error.contains('\n'), "{error}");
            assert!(!dir.path().join("out.framelab").exists());
        }
    }

    #[test]
    fn an_import_is_appended_to_its_file_and_says_what_the_file_held() {
        let dir = tempfile::tempdir().unwrap();
        let mut held = 0;
        let first =
            import_into_file(request(dir.path(), "t.framelab", None), || held += 1).unwrap();
        assert_eq!(held, 1, "called once, before the write");
        assert_eq!((first.run.meta.id, first.runs_before), (1, 0));
        assert_eq!(first.contents(), "2 spans");
        let second =
            import_into_file(request(dir.path(), "t.framelab", Some("again")), || {}).unwrap();
        assert_eq!((second.run.meta.id, second.runs_before), (2, 1));
        let stored = crate::store::load_run(second.run_file.path(), Some(2)).unwrap();
        assert_eq!(stored.meta.name, "again", "--name wins");
        assert_eq!(stored.meta.target_fps, Some(60.0));
        assert_eq!(stored.spans.len(), 2);
    }

    #[test]
    fn an_import_to_the_null_device_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut request = request(dir.path(), "unused", None);
        request.run_file = RunFile::resolve(std::path::Path::new("/dev/null")).unwrap();
        let imported = import_into_file(request, || {}).unwrap();
        assert!(!imported.run_file.kept());
        assert_eq!((imported.run.meta.id, imported.runs_before), (1, 0));
        assert!(!dir.path().join("unused").exists());
    }
}
