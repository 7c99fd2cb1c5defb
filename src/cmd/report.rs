//! `framelab report`: a run's report, or one line per run of a file that holds several.

use std::path::PathBuf;

use clap::Args;
use framelab::render::Format;
use framelab::report::{self, stored::ReportOptions};
use framelab::store;

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
    options: ReportOptions,
    output: Option<PathBuf>,
    open: bool,
}

impl TryFrom<ReportArgs> for ReportPlan {
    type Error = anyhow::Error;

    fn try_from(args: ReportArgs) -> anyhow::Result<ReportPlan> {
        let format = Format::from(args.format);
        let runs = match args.run_id {
            None => store::list_runs(&args.run)?.len(),
            Some(_) => 1,
        };
        // The HTML page is a report of its own, of one run.
        if format == Format::Html && runs > 1 {
            anyhow::bail!(
                "{} holds {runs} runs: give --run-id N for the HTML report of one (framelab report {} lists them)",
                args.run.display(),
                args.run.display()
            );
        }
        let several = runs > 1;
        Ok(ReportPlan {
            options: ReportOptions {
                run: args.run,
                run_id: args.run_id,
                format,
                several,
                verbose: args.verbose,
                // A list is coloured on a terminal even with -o, as it always was.
                color: use_color() && (several || args.output.is_none()),
            },
            output: args.output,
            open: args.open,
        })
    }
}

/// `framelab report`: the run's report in a format, printed or written to `-o`.
pub(super) fn run(args: ReportArgs) -> anyhow::Result<Outcome> {
    let plan = ReportPlan::try_from(args)?;
    let text = report::stored::report_file(&plan.options)?;
    let page = plan.options.format == Format::Html;
    match &plan.output {
        Some(file) => {
            report::html::write(file, &text, Some(&plan.options.run))?;
            let what = if page {
                "the HTML report"
            } else {
                "the report"
            };
            written(file, what, plan.open);
        }
        // A page through `destination`: a closed pipe is an error line, not a panic.
        None if page => report::html::write(std::path::Path::new("-"), &text, None)?,
        None => emit(&text)?,
    }
    Ok(Outcome::Done)
}
