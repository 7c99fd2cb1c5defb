//! `framelab export`: a run's spans in another tool's format.

use std::path::PathBuf;

use clap::Args;

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
    let (run_id, spans) =
        framelab::export::export_file(&args.run, args.run_id, args.format.into(), &args.output)?;
    if args.output.as_os_str() != "-" {
        eprintln!(
            "framelab: wrote {spans} spans of run {run_id} to {}",
            args.output.display()
        );
    }
    Ok(Outcome::Done)
}
