//! `framelab history add|show|check|export`: the arguments, checked into the history's
//! options (`framelab::history::commands`), and `--history STORE` of run and bench.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use framelab::history::commands::{
    AddOptions, CheckRequest, ExportOptions, HistoryCommand as Command, ShowOptions,
};
use framelab::history::store::Filter;

use super::format::{HistoryCheckFormat, HistoryExportFormat, HistoryShowFormat};
use super::Outcome;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Add the measured runs of run files or experiments to the history store, keyed by
    /// commit and machine (runs already there are skipped)
    Add(AddArgs),
    /// Each metric over commits, one table (or plot, --html) per machine
    Show(ShowArgs),
    /// The commits where each metric moved (E-divisive means change points, per metric ×
    /// machine × branch): by how much, how sure, regression or improvement
    Check(CheckArgs),
    /// Every value in long format (run, commit, branch, machine, time, metric, value, tags)
    /// for DuckDB, pandas or Spark
    Export(ExportArgs),
}

/// `--history` of every history command: the name run and bench give the same store.
/// `--store`, its first name, is kept as a hidden alias so scripts written with it still work.
#[derive(Args, Debug, Clone)]
pub struct StoreArg {
    /// A SQLite file, or a PostgreSQL database as postgres://USER@HOST:PORT/DB (default:
    /// $FRAMELAB_HISTORY, else .framelab/history.sqlite)
    #[arg(long = "history", alias = "store", value_name = "STORE", value_parser = store_location)]
    pub store: Option<String>,
}

/// A store given as "" would be SQLite's private temporary database: every run added to
/// it gone when framelab exits, the add reported as done.
fn store_location(text: &str) -> std::result::Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "is empty: give a SQLite file (e.g. .framelab/history.sqlite) or a postgres:// URL"
                .into(),
        );
    }
    Ok(text.to_owned())
}

/// `--metric`, `--branch`, `--machine` of show and export.
#[derive(Args, Debug, Clone)]
pub struct FilterArgs {
    /// Only this metric (a key as compare prints it: fps, total.p99, encode.p50, ...)
    #[arg(long, value_name = "M")]
    pub metric: Option<String>,
    /// Only runs of this branch
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// Only this machine: its id (history show lists them) or its host name
    #[arg(long, value_name = "FP")]
    pub machine: Option<String>,
}

impl From<FilterArgs> for Filter {
    fn from(args: FilterArgs) -> Filter {
        Filter {
            metric: args.metric,
            branch: args.branch,
            machine: args.machine,
        }
    }
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// Run files or experiment files
    #[arg(required = true, value_name = "RUN|EXPERIMENT")]
    pub files: Vec<PathBuf>,
    /// The commit measured (default: git rev-parse HEAD in the current directory)
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// The branch (default: the current git branch)
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// A label kept with each run (repeatable): --tag ci=nightly --tag compiler=gcc14
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: HistoryShowFormat,
    /// Also write a self-contained page with one trend plot per metric (a line per machine)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: HistoryCheckFormat,
    /// Exit with status 1 when a metric regressed (for CI)
    #[arg(long)]
    pub fail_on_regression: bool,
    /// With --fail-on-regression: only a regression at one of a series' newest N results
    /// fails (one accepted long ago then does not fail every later check)
    #[arg(long, value_name = "N", requires = "fail_on_regression",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub newest: Option<u64>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(long, value_enum)]
    pub format: HistoryExportFormat,
    /// File to write (`-` for standard output; parquet needs a file)
    #[arg(short, long, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `--history STORE` of run and bench.
#[derive(Args, Debug, Clone, Default)]
pub struct HistoryFlag {
    /// When the run (or every run of the bench) is done, add it to this history store (a
    /// SQLite file or a postgres:// URL), at the commit and branch git says
    #[arg(long, value_name = "STORE", value_parser = store_location)]
    pub history: Option<String>,
}

impl TryFrom<HistoryArgs> for Command {
    type Error = anyhow::Error;

    /// Every refusal of a history subcommand that needs no store.
    fn try_from(args: HistoryArgs) -> Result<Command> {
        Ok(match args.command {
            HistoryCommand::Add(args) => Command::Add(AddOptions {
                tags: parse_tags(&args.tags)?,
                files: args.files,
                commit: args.commit,
                branch: args.branch,
                store: args.store.store,
            }),
            HistoryCommand::Show(args) => Command::Show(ShowOptions {
                filter: args.filter.into(),
                format: args.format.into(),
                html: args.html,
                store: args.store.store,
            }),
            HistoryCommand::Check(args) => Command::Check(CheckRequest {
                filter: args.filter.into(),
                format: args.format.into(),
                fail_on_regression: args.fail_on_regression,
                newest: args.newest,
                store: args.store.store,
            }),
            HistoryCommand::Export(args) => {
                if args.output.as_os_str() == "-" && args.format == HistoryExportFormat::Parquet {
                    bail!("parquet is written to a file: give -o FILE (e.g. -o history.parquet)");
                }
                Command::Export(ExportOptions {
                    format: args.format.into(),
                    output: args.output,
                    filter: args.filter.into(),
                    store: args.store.store,
                })
            }
        })
    }
}

pub(super) fn run(args: HistoryArgs) -> Result<Outcome> {
    let done = framelab::history::commands::run(args.try_into()?)?;
    if !done.tables.is_empty() {
        framelab::destination::print(&done.tables)?;
    }
    if let Some(failed) = done.failed {
        return Err(failed);
    }
    for line in &done.said {
        eprintln!("{line}");
    }
    Ok(match done.regressed {
        true => Outcome::Failed,
        false => Outcome::Done,
    })
}

/// `KEY=VALUE` each, keys unique.
fn parse_tags(given: &[String]) -> Result<Vec<(String, String)>> {
    let mut tags: Vec<(String, String)> = Vec::new();
    for text in given {
        let Some((key, value)) = text.split_once('=') else {
            bail!("--tag {text}: give it as KEY=VALUE, e.g. --tag ci=nightly");
        };
        let key = key.trim();
        if key.is_empty() {
            bail!("--tag {text}: the key before '=' is empty");
        }
        if tags.iter().any(|(k, _)| k == key) {
            bail!("--tag {key} is given twice: give each key once");
        }
        tags.push((key.to_owned(), value.to_owned()));
    }
    tags.sort();
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(words: &[&str]) -> Result<Command> {
        let super::super::Command::History(args) = super::super::parsed(words) else {
            panic!("not a history command: {words:?}");
        };
        Command::try_from(args)
    }

    /// The refusals needing no store are the conversion's, before any store is opened.
    #[test]
    fn refusals_come_from_the_conversion() {
        let error = checked(&["framelab", "history", "export", "--format", "parquet"])
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("parquet is written to a file"), "{error}");
        let error = checked(&["framelab", "history", "add", "r.framelab", "--tag", "x"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("give it as KEY=VALUE"), "{error}");
        let Command::Add(add) = checked(&[
            "framelab",
            "history",
            "add",
            "r.framelab",
            "--tag",
            "b=2",
            "--tag",
            "a=1",
        ])
        .unwrap() else {
            panic!("not an add");
        };
        assert_eq!(
            add.tags,
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        assert!(checked(&["framelab", "history", "export", "--format", "csv"]).is_ok());
    }

    #[test]
    fn tags() {
        assert_eq!(
            parse_tags(&["b=2".into(), "a=x=y".into()]).unwrap(),
            vec![("a".into(), "x=y".into()), ("b".into(), "2".into())]
        );
        assert!(parse_tags(&["novalue".into()]).is_err());
        assert!(parse_tags(&["a=1".into(), "a=2".into()]).is_err());
        assert!(parse_tags(&["=1".into()]).is_err());
    }
}
