//! `framelab history add|show|check|export`: the arguments and what each subcommand does.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, Subcommand, ValueEnum};

use super::check::CheckOptions;
use super::series::{series_from_rows, Series};
use super::store::{location, Filter, Store};
use crate::render::format::HISTORY_EXPORT;
use crate::render::Format;

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

impl FilterArgs {
    fn filter(&self) -> Filter {
        Filter {
            metric: self.metric.clone(),
            branch: self.branch.clone(),
            machine: self.machine.clone(),
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

/// `history show --format`: the formats of `render::format::HISTORY_SHOW`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    Text,
    Markdown,
    Json,
}

/// `history check --format`: the formats of `render::format::HISTORY_CHECK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Markdown,
    Json,
}

impl From<ShowFormat> for Format {
    fn from(format: ShowFormat) -> Format {
        match format {
            ShowFormat::Text => Format::Text,
            ShowFormat::Markdown => Format::Markdown,
            ShowFormat::Json => Format::Json,
        }
    }
}

impl From<CheckFormat> for Format {
    fn from(format: CheckFormat) -> Format {
        match format {
            CheckFormat::Text => Format::Text,
            CheckFormat::Markdown => Format::Markdown,
            CheckFormat::Json => Format::Json,
        }
    }
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: ShowFormat,
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
    pub format: CheckFormat,
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

/// `history export --format`: the formats of `render::format::HISTORY_EXPORT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Parquet,
}

impl From<ExportFormat> for Format {
    fn from(format: ExportFormat) -> Format {
        match format {
            ExportFormat::Csv => Format::Csv,
            ExportFormat::Parquet => Format::Parquet,
        }
    }
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// File to write (`-` for standard output; parquet needs a file)
    #[arg(short, long, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub store: StoreArg,
}

/// Runs a history subcommand; what it prints goes to standard output, notes to stderr.
/// True when `check --fail-on-regression` found a regression.
pub fn run(args: HistoryArgs) -> Result<bool> {
    match args.command {
        HistoryCommand::Add(args) => add(args).map(|()| false),
        HistoryCommand::Show(args) => show(args).map(|()| false),
        HistoryCommand::Check(args) => check(&args),
        HistoryCommand::Export(args) => export(args).map(|()| false),
    }
}

/// `history check`: each metric × machine × branch on its own (branches are never one
/// series: their commits are not one line).
fn check(args: &CheckArgs) -> Result<bool> {
    let mut store = Store::open(&location(args.store.store.as_deref()), false)?;
    let filter = args.filter.filter();
    let rows = store.values(&filter)?;
    if rows.is_empty() {
        return Err(super::show::no_values(&mut store, &filter));
    }
    // The direction each metric was recorded with (a metric from output says its own).
    let mut options = CheckOptions::default();
    for row in &rows {
        if let Ok(direction) =
            serde_json::from_value(serde_json::Value::String(row.direction.clone()))
        {
            options.directions.insert(row.metric.clone(), direction);
        }
    }
    let series: Vec<Series> = series_from_rows(rows, filter.branch.as_deref())
        .into_iter()
        .flat_map(Series::by_branch)
        .collect();
    let report = super::check::check(&series, &options);
    crate::destination::print(&super::check::render(&report, args.format.into())?)?;
    Ok(args.fail_on_regression
        && match args.newest {
            Some(n) => report.has_regression_in_newest(n as usize),
            None => report.has_regression(),
        })
}

/// `history add`.
fn add(args: AddArgs) -> Result<()> {
    let tags = parse_tags(&args.tags)?;
    let revision = super::add::revision(args.commit.as_deref(), args.branch.as_deref())?;
    add_files(
        &args.files,
        &revision,
        &tags,
        args.store.store.as_deref(),
        true,
    )
}

/// `history show`: tables, and a trend page with `--html`.
fn show(args: ShowArgs) -> Result<()> {
    let location = location(args.store.store.as_deref());
    if let Some(page) = &args.html {
        refuse_writing_over_store(page, &location, "--html")?;
    }
    let mut store = Store::open(&location, false)?;
    let shown = super::show::load(&mut store, &args.filter.filter())?;
    crate::destination::print(&super::show::render(&shown, args.format.into())?)?;
    if let Some(page) = &args.html {
        write_file(page, |out| {
            let html = crate::report::html::render("framelab history", &super::show::page(&shown))?;
            Ok(out.write_all(html.as_bytes())?)
        })?;
        eprintln!("framelab: trend page {}", page.display());
    }
    Ok(())
}

/// `history export`: every value in long format.
fn export(args: ExportArgs) -> Result<()> {
    let format = HISTORY_EXPORT.check(args.format.into())?;
    let stdout = args.output.as_os_str() == "-";
    if stdout && format == Format::Parquet {
        bail!("parquet is written to a file: give -o FILE (e.g. -o history.parquet)");
    }
    let location = location(args.store.store.as_deref());
    if !stdout {
        refuse_writing_over_store(&args.output, &location, "-o")?;
    }
    let mut store = Store::open(&location, false)?;
    let rows = super::export::rows(&mut store, &args.filter.filter())?;
    if rows.is_empty() {
        return Err(super::show::no_values(&mut store, &args.filter.filter()));
    }
    match format {
        Format::Parquet => {
            let bytes = super::export::parquet(&rows)?;
            write_file(&args.output, |out| Ok(out.write_all(&bytes)?))?
        }
        Format::Csv => write_file(&args.output, |out| super::export::csv(&rows, out))?,
        other => return Err(HISTORY_EXPORT.refuse(other)),
    }
    if !stdout {
        eprintln!(
            "framelab: {} values to {}",
            rows.len(),
            args.output.display()
        );
    }
    Ok(())
}

/// `--history STORE` of run and bench.
#[derive(Args, Debug, Clone, Default)]
pub struct HistoryFlag {
    /// When the run (or every run of the bench) is done, add it to this history store (a
    /// SQLite file or a postgres:// URL), at the commit and branch git says
    #[arg(long, value_name = "STORE", value_parser = store_location)]
    pub history: Option<String>,
}

/// Where `run`/`bench --history` add their runs, checked before the first run: the
/// commit is known and the store opens.
pub struct HistoryTarget {
    store: String,
    revision: super::add::Revision,
}

impl HistoryTarget {
    pub fn check(flag: &HistoryFlag) -> Result<Option<HistoryTarget>> {
        let Some(store) = &flag.history else {
            return Ok(None);
        };
        // run and bench have no --commit: the commit is git's, or the run is added later.
        let revision = super::add::revision(None, None).map_err(|_| {
            anyhow::anyhow!(
                "--history: not inside a git repository with a commit, and run and bench take the \
                 commit from git: run framelab in the repository of the code measured, or keep \
                 the run file (-o FILE) and add it with framelab history add FILE --commit SHA"
            )
        })?;
        Store::open(store, true)?;
        Ok(Some(HistoryTarget {
            store: store.clone(),
            revision,
        }))
    }

    /// Adds the finished file's runs; on failure, says how to add them later.
    pub fn add(&self, file: &Path) -> Result<()> {
        add_files(&[file.to_owned()], &self.revision, &[], Some(&self.store), false).map_err(|e| {
            anyhow::anyhow!(
                "{e:#}; the runs are kept in {}: add them later with framelab history add {} --history STORE",
                file.display(),
                file.display()
            )
        })
    }
}

/// `history add`, and `run`/`bench --history` as they finish: one transaction for all the
/// files' runs, then one line on what was added and what was skipped.
pub fn add_files(
    files: &[PathBuf],
    revision: &super::add::Revision,
    tags: &[(String, String)],
    store: Option<&str>,
    refuse_nothing: bool,
) -> Result<()> {
    let mut records = Vec::new();
    let mut not_measured = 0;
    for file in files {
        let found = super::add::records(file, revision, tags)?;
        not_measured += found.not_measured;
        records.extend(found.records);
    }
    // `history add` of files with nothing to add: said before the store is opened (or
    // created). run/bench --history only tell, their run's own status says what went wrong.
    if refuse_nothing && records.is_empty() {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        bail!(
            "{} {} no measured run to add ({}): nothing was added",
            names.join(", "),
            if files.len() == 1 { "holds" } else { "hold" },
            if not_measured == 0 {
                "no runs".to_string()
            } else {
                format!(
                    "{} failed, unfinished, warmup or with an empty measured window",
                    runs(not_measured)
                )
            }
        );
    }
    let location = location(store);
    let mut store = Store::open(&location, true)?;
    let outcome = store.add(&records)?;
    let short: String = revision.commit.chars().take(12).collect();
    let short = crate::display::name(&short);
    let dirty = if revision.dirty {
        " (with changes not committed)"
    } else {
        ""
    };
    eprintln!(
        "framelab: {} added to {} at commit {short}{dirty}",
        runs(outcome.added),
        store.location
    );
    if outcome.skipped > 0 {
        eprintln!(
            "framelab: already in history: {} skipped",
            runs(outcome.skipped)
        );
    }
    if not_measured > 0 {
        eprintln!(
            "framelab: {} not added (failed, unfinished or warmup runs, or an empty measured window)",
            runs(not_measured)
        );
    }
    Ok(())
}

fn runs(n: usize) -> String {
    crate::units::plural(n as u64, "run", "runs")
}

/// `KEY=VALUE` each, keys unique.
pub fn parse_tags(given: &[String]) -> Result<Vec<(String, String)>> {
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

/// A page or export named like the store it is read from would replace the store.
fn refuse_writing_over_store(given: &Path, location: &str, option: &str) -> Result<()> {
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        return Ok(());
    }
    let target = crate::destination::Target::resolve(given)?;
    target
        .refuse_overwriting(given, Path::new(location))
        .map_err(|_| {
            anyhow::anyhow!(
                "refusing to write {} over the history store {location}: give another {option}",
                given.display()
            )
        })?;
    // Another store or a run file: refused before the store is read, not after.
    match target.path() {
        Some(path) if matches!(target, crate::destination::Target::File { .. }) => {
            crate::destination::refuse_database(given, path)
        }
        _ => Ok(()),
    }
}

/// Writes a whole file through `crate::destination` (a temporary name, then a rename).
fn write_file(
    given: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>,
) -> Result<()> {
    let target = crate::destination::Target::resolve(given)?;
    crate::destination::write_whole(&target, given, write)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Each `--format` offers exactly the formats its subcommand writes, named as
    /// `Format::name` names them.
    #[test]
    fn each_format_argument_offers_what_its_subcommand_writes() {
        use crate::render::format::{Formats, HISTORY_CHECK, HISTORY_EXPORT, HISTORY_SHOW};
        fn assert_offers<T: ValueEnum + Into<Format> + Copy>(list: Formats) {
            let offered: Vec<Format> = T::value_variants().iter().map(|&v| v.into()).collect();
            assert_eq!(offered, list.formats, "framelab {}", list.command);
            for variant in T::value_variants() {
                let name = variant.to_possible_value().unwrap();
                assert_eq!(name.get_name(), Into::<Format>::into(*variant).name());
            }
        }
        assert_offers::<ShowFormat>(HISTORY_SHOW);
        assert_offers::<CheckFormat>(HISTORY_CHECK);
        assert_offers::<ExportFormat>(HISTORY_EXPORT);
    }
}
