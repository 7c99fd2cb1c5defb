//! `framelab compare`: runs and experiments compared, shown and exported.

use std::path::PathBuf;

use clap::Args;
use framelab::compare::files::Destinations;
use framelab::render::Format;
use framelab::{compare, report};

use super::format::CompareFormat;
use super::output::{emit, written};
use super::Outcome;
use crate::cli::limits;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// An experiment file (framelab bench -o), or run files, each FILE[:RUN,RUN] one variant
    #[arg(value_name = "EXPERIMENT|RUN")]
    pub files: Vec<String>,
    /// Name a variant: NAME=FILE[:RUN,RUN] (runs of a file that holds several commands)
    #[arg(long = "variant", value_name = "NAME=FILE")]
    pub variants: Vec<String>,
    #[command(flatten)]
    pub settings: CompareSettings,
    /// Write the comparison to FILE instead of standard output (replaced if it exists)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the written file in the desktop's browser (with -o)
    #[arg(long, requires = "output")]
    pub open: bool,
    /// The name --show had before `bench --metric` came to define metrics; still read here
    #[arg(long = "metric", value_name = "METRIC", hide = true)]
    pub metric_alias: Vec<String>,
    /// One variant per value of the runs' tag KEY (framelab run --tag KEY=VALUE), over
    /// every run of the files given
    #[arg(long = "by", value_name = "KEY")]
    pub by: Option<String>,
    /// Exit 1 when any metric regressed (for CI)
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Runs of imported histograms: the share of values below VALUE (1ms, 4KiB), read from
    /// the buckets (repeatable)
    #[arg(long, value_parser = framelab::hist::bounds::parse_threshold, value_name = "VALUE")]
    pub below: Vec<framelab::hist::bounds::Threshold>,
    /// Runs of imported histograms: the share at or above VALUE (repeatable)
    #[arg(long, value_parser = framelab::hist::bounds::parse_threshold, value_name = "VALUE")]
    pub above: Vec<framelab::hist::bounds::Threshold>,
    /// The unit of imported histograms whose map name does not say it (ns, us, ms, s, bytes)
    #[arg(long, value_parser = framelab::hist::bounds::parse_unit, value_name = "UNIT")]
    pub unit: Option<String>,
}

/// How the comparison is judged and printed (compare, and bench at its end).
#[derive(Args, Debug)]
pub struct CompareSettings {
    /// The variant the others are compared with (default: the first)
    #[arg(long)]
    pub baseline: Option<String>,
    /// In a sweep of one variant, the parameter value the others are compared with
    /// (default: the first): V, or KEY=V (repeat for several parameters)
    #[arg(long = "baseline-value", value_name = "[KEY=]V")]
    pub baseline_values: Vec<String>,
    /// Metrics to judge and show, in this order (repeat or comma-separate): a --metric's
    /// NAME, fps, total.p99, encode.p50, cpu_per_frame...; an unknown name lists those
    /// that exist. Steps follow the first metric from output, else fps, else the first;
    /// a sweep shows each named
    #[arg(long = "show", value_name = "METRIC")]
    pub show: Vec<String>,
    /// Changes within ± this are noise (e.g. 2%, 0.5%)
    #[arg(long, value_parser = limits::noise_band, default_value = "2%")]
    pub noise: f64,
    /// Bootstrap resamples for the intervals (100 to 1000000)
    #[arg(long, value_parser = limits::resamples, default_value = "10000")]
    pub resamples: usize,
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormat,
    /// Also write the comparison as JSON to FILE (every number; replaced if it exists)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the comparison as CSV to FILE (one row per values × variant × metric)
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the comparison as Markdown to FILE (for a pull request)
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

impl CompareSettings {
    /// `--noise` and `--resamples` when not given (their `default_value`s above).
    pub(super) fn defaults() -> (f64, usize) {
        (0.02, 10_000)
    }
}

/// A comparison as asked, checked: the sources named, the options it is judged with, and
/// where it goes.
pub(super) struct ComparePlan {
    sources: Vec<compare::Source>,
    /// `--by KEY` (one variant per value of the runs' tag), and how many runs had no tag
    /// KEY (left out of `sources`).
    by: Option<(String, usize)>,
    options: compare::CompareOptions,
    output: Option<PathBuf>,
    open: bool,
    settings: CompareSettings,
    fail_on_regression: bool,
}

impl TryFrom<CompareArgs> for ComparePlan {
    type Error = anyhow::Error;

    fn try_from(args: CompareArgs) -> anyhow::Result<ComparePlan> {
        let mut sources = Vec::new();
        for file in &args.files {
            sources.push(compare::parse_source(file)?);
        }
        for named in &args.variants {
            sources.push(compare::parse_named_source(named)?);
        }
        let mut show = args.settings.show.clone();
        show.extend(args.metric_alias.iter().cloned());
        if let Some(definition) = args.metric_alias.iter().find(|m| m.contains('=')) {
            framelab::bail_usage!(
                "--metric {definition}: compare reads the metrics the runs recorded; define one when \
                 running (framelab run/bench --metric NAME:higher=REGEX), and pick what to show with --show NAME"
            );
        }
        check_export_paths(&args.settings)?;
        let inputs: Vec<&std::path::Path> = sources.iter().map(|s| s.path.as_path()).collect();
        check_outputs(
            &output_files(&args.settings, args.output.as_deref()),
            &inputs,
        )?;
        let options = compare::CompareOptions {
            below: args.below,
            above: args.above,
            unit: args.unit,
            ..compare_options(&args.settings, &show)
        };
        // `--by KEY`: the runs of the files given, one variant per value of their tag.
        let (sources, by) = match args.by {
            Some(key) => {
                let grouped = compare::group_by_tag(&sources, &key)?;
                (grouped.sources, Some((key, grouped.untagged)))
            }
            None => (sources, None),
        };
        Ok(ComparePlan {
            sources,
            by,
            options,
            output: args.output,
            open: args.open,
            settings: args.settings,
            fail_on_regression: args.fail_on_regression,
        })
    }
}

pub(super) fn run(args: CompareArgs) -> anyhow::Result<Outcome> {
    let plan = ComparePlan::try_from(args)?;
    if let Some((key, untagged)) = plan.by.as_ref().filter(|(_, untagged)| *untagged > 0) {
        eprintln!(
            "framelab: --by {key}: {untagged} run{} without a tag {key} left out",
            if *untagged == 1 { "" } else { "s" }
        );
    }
    let to = destinations(&plan.settings, plan.output.clone(), None);
    let comparison = show_comparison(&plan.sources, &plan.options, &to, plan.open)?;
    Ok(
        if plan.fail_on_regression && compare::any_regression(&comparison) {
            Outcome::Failed
        } else {
            Outcome::Done
        },
    )
}

pub(super) fn compare_options(
    settings: &CompareSettings,
    show: &[String],
) -> compare::CompareOptions {
    compare::CompareOptions {
        baseline: settings.baseline.clone(),
        baseline_values: settings.baseline_values.clone(),
        metrics: show.to_vec(),
        noise: settings.noise,
        resamples: settings.resamples,
        ..compare::CompareOptions::default()
    }
}

/// Where the comparison goes: `--format` to `-o` (or standard output), and the
/// `--export-*` files; `unkept`, a file compared that is not kept (its path is not shown).
pub(super) fn destinations(
    settings: &CompareSettings,
    output: Option<PathBuf>,
    unkept: Option<PathBuf>,
) -> Destinations {
    let exports = [
        (&settings.export_json, Format::Json),
        (&settings.export_csv, Format::Csv),
        (&settings.export_markdown, Format::Markdown),
    ];
    Destinations {
        format: settings.format.into(),
        output,
        exports: (exports.into_iter())
            .filter_map(|(file, format)| Some((file.clone()?, format)))
            .collect(),
        unkept,
    }
}

/// Compares, writes the files asked (`compare::files`), prints what goes to standard
/// output and says what was written.
pub(super) fn show_comparison(
    sources: &[compare::Source],
    options: &compare::CompareOptions,
    to: &Destinations,
    open: bool,
) -> anyhow::Result<compare::Comparison> {
    let delivered = compare::files::compare_into(sources, options, to)?;
    match &delivered.printed {
        // A page through `destination`: a closed pipe is an error line, not a panic.
        Some(page) if to.format == Format::Html => {
            report::html::write(std::path::Path::new("-"), page, None)?
        }
        Some(text) => emit(text)?,
        None => {}
    }
    let mut files = delivered.written.iter();
    if to.output.is_some() {
        // `-o`'s file, the first written.
        if let Some(file) = files.next() {
            written(file, "the comparison", open);
        }
    }
    for file in files {
        eprintln!("framelab: wrote the comparison to {}", file.display());
    }
    match delivered.failed {
        Some(e) => Err(e),
        None => Ok(delivered.comparison),
    }
}

/// The files a comparison is written to (`-o`, `--export-*`) must be none of the files it
/// reads (it was written over the experiment being compared), nor one another. Standard
/// output and devices are not files here.
pub(super) fn check_outputs(
    outputs: &[(&str, Option<&std::path::Path>)],
    inputs: &[&std::path::Path],
) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;
    let same = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        (Err(_), Err(_)) => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
        _ => false,
    };
    let files: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|(option, path)| Some((*option, (*path)?)))
        .filter(|(_, path)| {
            *path != Path::new("-") && std::fs::metadata(path).map_or(true, |m| m.is_file())
        })
        .collect();
    for (option, file) in &files {
        if let Some(input) = inputs.iter().find(|input| same(file, input)) {
            anyhow::bail!(
                "{option} {} is {}, a file being compared: writing the comparison there would \
                 destroy it; give another path",
                file.display(),
                input.display()
            );
        }
    }
    // Another run file, experiment or history store named by mistake: never replaced.
    for (_, file) in &files {
        framelab::destination::refuse_database(file, file)?;
    }
    for (i, (a, file)) in files.iter().enumerate() {
        if let Some((b, _)) = files[i + 1..].iter().find(|(_, other)| same(file, other)) {
            anyhow::bail!(
                "{a} and {b} both name {}: give each its own file",
                file.display()
            );
        }
    }
    Ok(())
}

/// The comparison's files (`--export-*`, and `-o` where it is one), for `check_outputs`.
pub(super) fn output_files<'a>(
    settings: &'a CompareSettings,
    output: Option<&'a std::path::Path>,
) -> Vec<(&'static str, Option<&'a std::path::Path>)> {
    vec![
        ("-o", output),
        ("--export-json", settings.export_json.as_deref()),
        ("--export-csv", settings.export_csv.as_deref()),
        ("--export-markdown", settings.export_markdown.as_deref()),
    ]
}

/// Export files must be writable where they are asked: their folder exists.
pub(super) fn check_export_paths(settings: &CompareSettings) -> anyhow::Result<()> {
    for file in [
        &settings.export_json,
        &settings.export_csv,
        &settings.export_markdown,
    ]
    .into_iter()
    .flatten()
    {
        let parent = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => std::path::Path::new("."),
        };
        if !parent.is_dir() {
            anyhow::bail!(
                "cannot export to {}: {} is not a directory; create it or choose another path",
                file.display(),
                parent.display()
            );
        }
        if file.is_dir() {
            anyhow::bail!(
                "cannot export to {}: it is a directory; name a file inside it",
                file.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_definition_is_refused_by_the_conversion() {
        let super::super::Command::Compare(args) = super::super::parsed(&[
            "framelab",
            "compare",
            "a.framelab",
            "--metric",
            "x:higher=y",
        ]) else {
            panic!("not a compare");
        };
        let error = ComparePlan::try_from(args).err().unwrap().to_string();
        assert!(
            error.starts_with("--metric x:higher=y: compare reads the metrics the runs recorded"),
            "{error}"
        );
    }
}
