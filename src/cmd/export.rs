//! `framelab export`: a run's spans in another tool's format.

use std::path::PathBuf;

use clap::Args;
use framelab::model::SpanSource;
use framelab::store;

use super::format::ExportFormat;
use super::Outcome;
use crate::cli::limits;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the latest)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// File to write (`-` for standard output)
    #[arg(short, long)]
    pub output: PathBuf,
}

/// An export as asked, checked: its file is one it may write.
pub(super) struct ExportPlan {
    run: PathBuf,
    run_id: Option<i64>,
    format: ExportFormat,
    output: PathBuf,
}

impl TryFrom<ExportArgs> for ExportPlan {
    type Error = anyhow::Error;

    fn try_from(args: ExportArgs) -> anyhow::Result<ExportPlan> {
        // Before the run is read: never over the run file itself, nor over another database.
        let target = framelab::destination::Target::resolve(&args.output)?;
        target.refuse_overwriting(&args.output, &args.run)?;
        if let framelab::destination::Target::File { path, .. } = &target {
            framelab::destination::refuse_database(&args.output, path)?;
        }
        Ok(ExportPlan {
            run: args.run,
            run_id: args.run_id,
            format: args.format,
            output: args.output,
        })
    }
}

pub(super) fn run(args: ExportArgs) -> anyhow::Result<Outcome> {
    let args = ExportPlan::try_from(args)?;
    // Every format streams the spans from the file: none holds the whole run (issue 31).
    let mut stored = store::open_run(&args.run, args.run_id)?;
    if stored.span_count_hint() == 0 && args.format == ExportFormat::Csv {
        // A CSV of spans holds nothing else: a header alone is no export.
        let histograms = stored.head.histograms.len();
        anyhow::bail!(
            "run {} of {} has no spans{}: a CSV of its spans would be empty (--format perfetto \
             or chrome keep the run's description; framelab hist shows its histograms)",
            stored.head.meta.id,
            args.run.display(),
            if histograms == 0 {
                String::new()
            } else {
                format!(", only {histograms} imported histograms")
            }
        );
    }
    let spans = framelab::export::export_stored(
        &mut stored,
        args.format.into(),
        &args.output,
        Some(&args.run),
    )?;
    if args.output.as_os_str() != "-" {
        eprintln!(
            "framelab: wrote {spans} spans of run {} to {}",
            stored.head.meta.id,
            args.output.display()
        );
    }
    Ok(Outcome::Done)
}
