//! `framelab report`: a run's report, or one line per run of a file that holds several.

use std::path::PathBuf;

use clap::Args;
use framelab::render::Format;
use framelab::report;
use framelab::{analyze, store};

use super::format::ReportFormat;
use super::output::{emit, use_color, written};
use super::Outcome;
use crate::cli::limits;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: a list of them all, one line per run)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// html: one self-contained page with plots (best with -o FILE)
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
    /// Write the report to FILE instead of standard output (replaced if it exists)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the written file in the desktop's browser (with -o)
    #[arg(long, requires = "output")]
    pub open: bool,
    /// Name every FPS low in the text and Markdown reports (p10, p5, p0.1 and the `_int`
    /// lows too; JSON always has them)
    #[arg(short, long)]
    pub verbose: bool,
}

/// A report as asked, checked against the file: the HTML page is of one run.
pub(super) struct ReportPlan {
    run: PathBuf,
    run_id: Option<i64>,
    /// `None`: the HTML page.
    format: Option<Format>,
    /// No `--run-id` and the file holds several runs: one line per run.
    several: bool,
    output: Option<PathBuf>,
    open: bool,
    verbose: bool,
}

impl TryFrom<ReportArgs> for ReportPlan {
    type Error = anyhow::Error;

    fn try_from(args: ReportArgs) -> anyhow::Result<ReportPlan> {
        // The HTML page is a report of its own; every other format is the run report's.
        let format = match Format::from(args.format) {
            Format::Html => None,
            format => Some(format),
        };
        let runs = match args.run_id {
            None => store::list_runs(&args.run)?.len(),
            Some(_) => 1,
        };
        if format.is_none() && runs > 1 {
            anyhow::bail!(
                "{} holds {runs} runs: give --run-id N for the HTML report of one (framelab report {} lists them)",
                args.run.display(),
                args.run.display()
            );
        }
        Ok(ReportPlan {
            run: args.run,
            run_id: args.run_id,
            format,
            several: runs > 1,
            output: args.output,
            open: args.open,
            verbose: args.verbose,
        })
    }
}

/// `framelab report`: the run's report in a format, printed or written to `-o`.
pub(super) fn run(args: ReportArgs) -> anyhow::Result<Outcome> {
    let args = ReportPlan::try_from(args)?;
    let (format, several) = (args.format, args.several);
    let text = match format {
        Some(format) if several => report_runs(&args.run, true, format)?,
        Some(format) => {
            let color = use_color() && args.output.is_none();
            let analysis = analyze_stored(&args.run, args.run_id)?.0;
            match args.verbose {
                true => report::render_verbose(&analysis, format, color)?,
                false => report::render(&analysis, format, color)?,
            }
        }
        None => {
            let stored = store::open_run(&args.run, args.run_id)?;
            report::html::run_html(&stored.head, &store::DecodedOnThreads(&stored))?.0
        }
    };
    match &args.output {
        Some(file) => {
            report::html::write(file, &text, Some(&args.run))?;
            let what = if format.is_none() {
                "the HTML report"
            } else {
                "the report"
            };
            written(file, what, args.open);
        }
        // A page through `destination`: a closed pipe is an error line, not a panic.
        None if format.is_none() => report::html::write(std::path::Path::new("-"), &text, None)?,
        None => emit(&text)?,
    }
    Ok(Outcome::Done)
}

/// One line per run of a file that holds several: which runs there are and how to see one.
pub(super) fn report_runs(
    path: &std::path::Path,
    kept: bool,
    format: Format,
) -> anyhow::Result<String> {
    let experiment = store::load_experiment(path)?;
    let lines = store::list_runs(path)?
        .iter()
        .map(|meta| {
            let (analysis, _) = analyze_stored(path, Some(meta.id))?;
            Ok(report::runs::RunLine::new(&analysis, experiment.as_ref()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let shown = kept.then_some(path);
    report::runs::render(shown, &lines, format, use_color())
}

/// The analysis of a run of a file, its spans streamed into columns rather than loaded
/// (a third of the memory), and the run without its spans.
pub(super) fn analyze_stored(
    path: &std::path::Path,
    run_id: Option<i64>,
) -> anyhow::Result<(analyze::Analysis, framelab::model::Run)> {
    let run = store::open_run(path, run_id)?;
    let analysis = analyze::compact::analyze_from(&run.head, &store::DecodedOnThreads(&run))?;
    Ok((analysis, run.head))
}
