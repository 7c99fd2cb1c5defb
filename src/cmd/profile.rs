//! `framelab profile`: a run's sampled stacks by stage, thread, process or late frames.

use std::path::PathBuf;

use clap::Args;
use framelab::profile::command::{self, ProfileCommand};
use framelab::profile::summary::Filters;

use super::format::ProfileFormat;
use super::Outcome;
use crate::cli::limits;
use framelab::render::Format;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// The run file; with a second one, the change from the first to the second (each
    /// side's profiled runs pooled)
    #[arg(required = true, num_args = 1..=2, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Which run of a file holding several (with two files: run N of each)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// Only samples taken in this stage ("(no stage)": outside every stage span)
    #[arg(long)]
    pub stage: Option<String>,
    /// Only samples of this thread: a tid, or a thread name as recorded
    #[arg(long)]
    pub thread: Option<String>,
    /// Only samples of this process: a pid, or a process name
    #[arg(long)]
    pub process: Option<String>,
    /// Only samples in these frames: all, or late (total over the budget, in the measured window)
    #[arg(long, value_enum, default_value = "all", value_name = "SET")]
    pub frame_set: FrameSet,
    #[arg(long, value_enum, default_value = "text")]
    pub format: ProfileFormat,
    /// Functions shown per table (1 to 10000) [default: 15] (text and markdown; json,
    /// folded, svg and speedscope hold every function)
    #[arg(long, value_parser = limits::top, value_name = "N")]
    pub top: Option<usize>,
    /// Write here instead of standard output (an SVG or speedscope file, say)
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FrameSet {
    All,
    Late,
}

impl TryFrom<ProfileArgs> for ProfileCommand {
    type Error = anyhow::Error;

    fn try_from(args: ProfileArgs) -> anyhow::Result<ProfileCommand> {
        let top = match args.top {
            None => 15,
            Some(n) if matches!(args.format, ProfileFormat::Text | ProfileFormat::Markdown) => n,
            Some(n) => anyhow::bail!(
                "--top {n} sets the rows of the text and markdown tables, and --format {} holds \
                 every function: drop --top, or use --format text or markdown",
                Format::from(args.format)
            ),
        };
        Ok(ProfileCommand {
            runs: args.runs,
            run_id: args.run_id,
            filters: Filters {
                stage: args.stage,
                thread: args.thread,
                process: args.process,
                late_only: args.frame_set == FrameSet::Late,
            },
            format: args.format.into(),
            top,
            output: args.output,
        })
    }
}

pub(super) fn run(args: ProfileArgs) -> anyhow::Result<Outcome> {
    let command = ProfileCommand::try_from(args)?;
    command::run(&command)?;
    if command.output != std::path::Path::new("-") {
        // As report and compare do: an SVG written in silence looked like nothing happened.
        super::output::written(&command.output, "the profile", false);
    }
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_is_refused_where_every_function_is_shown() {
        let convert = |words: &[&str]| {
            let super::super::Command::Profile(args) = super::super::parsed(words) else {
                panic!("not a profile: {words:?}");
            };
            ProfileCommand::try_from(args)
        };
        let error = convert(&[
            "framelab",
            "profile",
            "r.framelab",
            "--top",
            "3",
            "--format",
            "json",
        ])
        .err()
        .unwrap()
        .to_string();
        assert!(
            error.starts_with(
                "--top 3 sets the rows of the text and markdown tables, and --format json"
            ),
            "{error}"
        );
        let plan = convert(&["framelab", "profile", "r.framelab", "--top", "3"]).unwrap();
        assert_eq!(plan.top, 3);
        assert_eq!(
            convert(&["framelab", "profile", "r.framelab"]).unwrap().top,
            15
        );
    }
}
