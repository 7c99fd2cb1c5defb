//! `framelab history add|show|check|export`: what each subcommand does, from options
//! cmd/history.rs checked.

use std::path::{Path, PathBuf};

use super::check::CheckOptions;
use super::series::{series_from_rows, Series};
use super::store::{location, Filter, Store};
use crate::render::format::HISTORY_EXPORT;
use crate::render::Format;
use anyhow::{bail, Result};

/// A history subcommand, checked.
#[derive(Debug)]
pub enum HistoryCommand {
    Add(AddOptions),
    Show(ShowOptions),
    Check(CheckRequest),
    Export(ExportOptions),
}

/// `history add`: the tags already checked (`KEY=VALUE`, keys unique, sorted).
#[derive(Debug)]
pub struct AddOptions {
    pub files: Vec<PathBuf>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub tags: Vec<(String, String)>,
    /// `--history STORE`; `None`: $FRAMELAB_HISTORY, else the default file.
    pub store: Option<String>,
}

/// `history show`.
#[derive(Debug)]
pub struct ShowOptions {
    pub filter: Filter,
    pub format: Format,
    /// A trend page written as well.
    pub html: Option<PathBuf>,
    pub store: Option<String>,
}

/// `history check`.
#[derive(Debug)]
pub struct CheckRequest {
    pub filter: Filter,
    pub format: Format,
    pub fail_on_regression: bool,
    /// Only a regression at one of a series' newest N results fails.
    pub newest: Option<u64>,
    pub store: Option<String>,
}

/// `history export`: parquet goes to a file (`-` is standard output).
#[derive(Debug)]
pub struct ExportOptions {
    pub format: Format,
    pub output: PathBuf,
    pub filter: Filter,
    pub store: Option<String>,
}

/// What a history subcommand hands the command line to show.
#[derive(Debug, Default)]
pub struct Done {
    /// For standard output, first: `show`'s and `check`'s tables.
    pub tables: String,
    /// The lines to say last: what was added, the page or file written.
    pub said: Vec<String>,
    /// `check --fail-on-regression` found a regression.
    pub regressed: bool,
    /// `show --html`'s page could not be written: the error, once the tables are shown
    /// (as `compare`'s exports: what was made is not lost to what failed after it).
    pub failed: Option<anyhow::Error>,
}

/// Runs a history subcommand: its tables and the lines it has to say are handed back.
pub fn run(command: HistoryCommand) -> Result<Done> {
    let said = |said| Done {
        said,
        ..Done::default()
    };
    match command {
        HistoryCommand::Add(args) => add(args).map(said),
        HistoryCommand::Show(args) => show(args),
        HistoryCommand::Check(args) => check(&args),
        HistoryCommand::Export(args) => export(args).map(said),
    }
}

/// `history check`: each metric × machine × branch on its own (branches are never one
/// series: their commits are not one line).
fn check(args: &CheckRequest) -> Result<Done> {
    let mut store = Store::open(&location(args.store.as_deref()), false)?;
    let filter = args.filter.clone();
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
    let regressed = args.fail_on_regression
        && match args.newest {
            Some(n) => report.has_regression_in_newest(n as usize),
            None => report.has_regression(),
        };
    Ok(Done {
        tables: super::check::render(&report, args.format)?,
        regressed,
        ..Done::default()
    })
}

/// `history add`: what was added and skipped, to say.
fn add(args: AddOptions) -> Result<Vec<String>> {
    let revision = super::add::revision(args.commit.as_deref(), args.branch.as_deref())?;
    add_files(
        &args.files,
        &revision,
        &args.tags,
        args.store.as_deref(),
        true,
    )
}

/// `history show`: tables, and a trend page with `--html` (said).
fn show(args: ShowOptions) -> Result<Done> {
    let location = location(args.store.as_deref());
    if let Some(page) = &args.html {
        refuse_writing_over_store(page, &location, "--html")?;
    }
    let mut store = Store::open(&location, false)?;
    let shown = super::show::load(&mut store, &args.filter)?;
    let mut done = Done {
        tables: super::show::render(&shown, args.format)?,
        ..Done::default()
    };
    if let Some(page) = &args.html {
        let written = write_file(page, |out| {
            let html = crate::report::html::render_document(
                &super::show::page(&shown),
                super::show::PAGE_SCHEMA,
                "history",
            )?;
            Ok(out.write_all(html.as_bytes())?)
        });
        match written {
            Ok(()) => (done.said).push(format!("framelab: trend page {}", page.display())),
            Err(e) => done.failed = Some(e),
        }
    }
    Ok(done)
}

/// `history export`: every value in long format; how many, said when written to a file.
fn export(args: ExportOptions) -> Result<Vec<String>> {
    let stdout = args.output.as_os_str() == "-";
    let location = location(args.store.as_deref());
    if !stdout {
        refuse_writing_over_store(&args.output, &location, "-o")?;
    }
    let mut store = Store::open(&location, false)?;
    let rows = super::export::rows(&mut store, &args.filter)?;
    if rows.is_empty() {
        return Err(super::show::no_values(&mut store, &args.filter));
    }
    match args.format {
        Format::Csv => write_file(&args.output, |out| super::export::csv(&rows, out))?,
        Format::Parquet => {
            let bytes = super::export::parquet(&rows)?;
            write_file(&args.output, |out| Ok(out.write_all(&bytes)?))?
        }
        other => return Err(HISTORY_EXPORT.refuse(other)),
    }
    if stdout {
        return Ok(Vec::new());
    }
    Ok(vec![format!(
        "framelab: {} values to {}",
        rows.len(),
        args.output.display()
    )])
}

/// Where `run`/`bench --history` add their runs, checked before the first run: the
/// commit is known and the store opens.
pub struct HistoryTarget {
    store: String,
    revision: super::add::Revision,
}

impl HistoryTarget {
    /// `store`: run's or bench's `--history STORE`.
    pub fn check(store: Option<&str>) -> Result<Option<HistoryTarget>> {
        let Some(store) = store else {
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
            store: store.to_owned(),
            revision,
        }))
    }

    /// Adds the finished file's runs, and gives the lines that say what was added; on
    /// failure, says how to add them later.
    pub fn add(&self, file: &Path) -> Result<Vec<String>> {
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
/// files' runs; the lines to say on what was added and what was skipped.
pub fn add_files(
    files: &[PathBuf],
    revision: &super::add::Revision,
    tags: &[(String, String)],
    store: Option<&str>,
    refuse_nothing: bool,
) -> Result<Vec<String>> {
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
    let mut said = vec![format!(
        "framelab: {} added to {} at commit {short}{dirty}",
        runs(outcome.added),
        store.location
    )];
    if outcome.skipped > 0 {
        said.push(format!(
            "framelab: already in history: {} skipped",
            runs(outcome.skipped)
        ));
    }
    if not_measured > 0 {
        said.push(format!(
            "framelab: {} not added (failed, unfinished or warmup runs, or an empty measured window)",
            runs(not_measured)
        ));
    }
    Ok(said)
}

fn runs(n: usize) -> String {
    crate::units::plural(n as u64, "run", "runs")
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
