//! The report of a run file, as `framelab report` asks for it (and `run`, `bench` after
//! recording): its runs loaded from the file, analysed, and rendered in the format asked.
//! Here and not in `analyze`, which computes from a run in memory and reads no file.

use std::path::{Path, PathBuf};

use crate::analyze::{self, Analysis};
use crate::model::Run;
use crate::render::Format;
use crate::store;

/// A report as asked, checked against the file (the HTML page is of one run).
#[derive(Debug)]
pub struct ReportOptions {
    pub run: PathBuf,
    pub run_id: Option<i64>,
    /// `Format::Html`: the run's page.
    pub format: Format,
    /// No run asked for and the file holds several: one line per run.
    pub several: bool,
    /// Every FPS low in the text and Markdown reports.
    pub verbose: bool,
    /// Colour in the text report.
    pub color: bool,
}

/// The report `options` ask for, rendered: the run's report, its HTML page, or the list
/// of the file's runs.
pub fn report_file(options: &ReportOptions) -> anyhow::Result<String> {
    let path = options.run.as_path();
    match options.format {
        Format::Html => {
            let stored = store::open_run(path, options.run_id)?;
            Ok(super::html::run_html(&stored.head, &store::DecodedOnThreads(&stored))?.0)
        }
        format if options.several => list_runs(path, true, format, options.color),
        format => {
            let analysis = analyze_stored(path, options.run_id)?.0;
            match options.verbose {
                true => super::render_verbose(&analysis, format, options.color),
                false => super::render(&analysis, format, options.color),
            }
        }
    }
}

/// One line per run of a file that holds several: which runs there are and how to see
/// one; `kept` false for a file not kept (its name is not shown).
pub fn list_runs(path: &Path, kept: bool, format: Format, color: bool) -> anyhow::Result<String> {
    let experiment = store::load_experiment(path)?;
    let lines = store::list_runs(path)?
        .iter()
        .map(|meta| {
            let (analysis, _) = analyze_stored(path, Some(meta.id))?;
            Ok(super::runs::RunLine::new(&analysis, experiment.as_ref()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let shown = kept.then_some(path);
    super::runs::render(shown, &lines, format, color)
}

/// The analysis of a run of a file, its spans streamed into columns rather than loaded
/// (a third of the memory), and the run without its spans.
pub fn analyze_stored(path: &Path, run_id: Option<i64>) -> anyhow::Result<(Analysis, Run)> {
    let run = store::open_run(path, run_id)?;
    let analysis = analyze::compact::analyze_from(&run.head, &store::DecodedOnThreads(&run))?;
    Ok((analysis, run.head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::{crashed_run, reference_run};

    fn options(run: &Path, run_id: Option<i64>, format: Format, several: bool) -> ReportOptions {
        ReportOptions {
            run: run.to_owned(),
            run_id,
            format,
            several,
            verbose: false,
            color: false,
        }
    }

    /// The report of a stored run is the report of the run in memory.
    #[test]
    fn a_stored_run_reports_as_the_run_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one.framelab");
        let id = store::write_run(&path, &reference_run()).unwrap();
        let expected = crate::analyze::analyze(&store::load_run(&path, Some(id)).unwrap());
        for format in [Format::Text, Format::Json] {
            let text = report_file(&options(&path, None, format, false)).unwrap();
            assert_eq!(
                text,
                super::super::render(&expected, format, false).unwrap()
            );
        }
        let page = report_file(&options(&path, Some(id), Format::Html, false)).unwrap();
        assert!(page.contains("<html"), "the run's page");
    }

    /// A file of several runs, no run asked for: one line per run.
    #[test]
    fn a_file_of_several_runs_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.framelab");
        store::write_run(&path, &reference_run()).unwrap();
        store::write_run(&path, &crashed_run()).unwrap();
        let listed = report_file(&options(&path, None, Format::Text, true)).unwrap();
        assert_eq!(listed, list_runs(&path, true, Format::Text, false).unwrap());
        let json: serde_json::Value =
            serde_json::from_str(&report_file(&options(&path, None, Format::Json, true)).unwrap())
                .unwrap();
        assert_eq!(json["runs"].as_array().map(Vec::len), Some(2));
    }
}
