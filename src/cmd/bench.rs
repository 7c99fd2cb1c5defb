//! `framelab bench`: the experiment the command line describes, run and compared.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use framelab::bench::{BenchExit, ExperimentSpec, Finished, Shown};
use framelab::compare;
use framelab::history::commands::HistoryTarget;
use framelab::render::Format;
use framelab::store;

use super::bench_progress::BenchProgress;
use super::compare::CompareSettings;
use super::compare::{
    check_export_paths, check_outputs, compare_options, destinations, output_files, show_comparison,
};
use super::format::CompareFormat;
use super::options::{
    command_pin, profile_options, refuse_history_without_file, refuse_keep_output_without_file,
    refuse_profile_without_file, variant_service_specs,
};
use super::output::{emit, UNKEPT};

use super::{default_signals, Outcome};
use crate::cli::{limits, OutputArgs, ProfileFlag, RunControlArgs, ServiceArgs};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Runs of each variant at each combination of parameter values (2 to 10000; 6+ for verdicts you can trust)
    #[arg(short = 'n', long = "runs", value_name = "RUNS", value_parser = limits::runs)]
    pub runs: Option<u32>,
    /// A variant: NAME=COMMAND, split into words like a shell would but not run by one
    /// ('echo hi | cat' prints "hi | cat"; use --shell); {KEY} takes a --param value
    #[arg(long = "variant", value_name = "NAME=CMD")]
    pub variants: Vec<String>,
    /// A parameter swept over its values: KEY=V1,V2,... (used as {KEY} in commands)
    #[arg(long = "param", value_name = "KEY=V1,V2")]
    pub params: Vec<String>,
    /// interleaved (A B A B ...) or shuffled (each round in a seeded random order)
    #[arg(long, value_enum, default_value = "interleaved")]
    pub order: crate::cli::choices::Order,
    #[command(flatten)]
    pub services: ServiceArgs,
    /// Shell command run before each run once its services are ready, unmeasured (e.g.
    /// dropping caches, a load generator's warmup); {KEY} expanded; a failure fails that
    /// run (its stderr's last lines said) and the bench goes on
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Whole runs of each variant (at each parameter value) done and discarded before the
    /// measured ones, in rounds like them; a --resume does them again
    #[arg(long, value_parser = limits::warmup_runs, value_name = "N")]
    pub warmup_runs: Option<u64>,
    /// Shell command run once per variant (per value of each {KEY} it names) before the
    /// bench's first run, e.g. building it; a failure stops the bench
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Shell command run once per variant (as --setup) after the bench's last run, also
    /// when it stops early
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// A piece of every run's configuration, KEY=VALUE (repeatable): kept in the file, shown
    /// in each run's report, carried into history; each run is tagged with its --param
    /// values too
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Passed to every run as FRAMELAB_SEED, and seeds --order shuffled
    #[arg(long, value_parser = limits::seed)]
    pub seed: Option<u64>,
    /// The experiment file (default bench-TIMESTAMP.framelab here)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Continue the experiment in -o FILE where it stopped
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub control: RunControlArgs,
    #[command(flatten)]
    pub from_output: OutputArgs,
    #[command(flatten)]
    pub compare: CompareSettings,
    #[command(flatten)]
    pub profile: ProfileFlag,
    #[command(flatten)]
    pub probes: super::probes::ProbeArgs,
    /// One command (a single variant, for a parameter sweep)
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// A bench as asked, checked: every refusal that can come before the first run has come.
pub(super) struct BenchPlan {
    bench: framelab::bench::BenchOptions,
    history: Option<HistoryTarget>,
    /// How the experiment is compared (or its runs listed) at the end.
    compare: CompareSettings,
}

impl TryFrom<Box<BenchArgs>> for BenchPlan {
    type Error = anyhow::Error;

    fn try_from(args: Box<BenchArgs>) -> anyhow::Result<BenchPlan> {
        let spec_given =
            !args.variants.is_empty() || !args.command.is_empty() || !args.params.is_empty();
        let spec = if spec_given || !args.resume {
            Some(bench_spec(&args)?)
        } else {
            resumed_with_options(&args)?
        };
        // Refused before the first run, not after the last.
        if let Some(spec) = &spec {
            spec.validate()?;
        }
        check_export_paths(&args.compare)?;
        // The exports never replace the experiment file (bench's -o).
        let experiment: Vec<&Path> = args.output.as_deref().into_iter().collect();
        check_outputs(&output_files(&args.compare, None), &experiment)?;
        // The experiment as it will run: given here, or the one --resume continues.
        let planned = match &spec {
            Some(spec) => Some(spec.clone()),
            None => match &args.output {
                Some(file) if file.is_file() => stored_spec(file),
                _ => None,
            },
        };
        let single = planned
            .as_ref()
            .is_some_and(|spec| spec.variants.len() == 1 && spec.params.is_empty());
        if let (true, Some(option)) = (single, comparison_option(&args.compare)) {
            framelab::bail_usage!(
                "{option} is for comparing variants, and this bench has one variant and no --param \
                 (its runs are listed, not compared): add a --variant NAME=CMD or a --param \
                 KEY=V1,V2, or drop {option}"
            );
        }
        if let Some(planned) = &planned {
            check_comparison_choices(planned, &args.compare)?;
        }
        refuse_history_without_file(&args.control.history, args.output.as_deref())?;
        refuse_profile_without_file(&args.profile, args.output.as_deref())?;
        refuse_keep_output_without_file(args.from_output.keep_output, args.output.as_deref())?;
        let history = HistoryTarget::check(args.control.history.history.as_deref())?;
        let args = *args;
        Ok(BenchPlan {
            bench: framelab::bench::BenchOptions {
                spec,
                output: args.output,
                resume: args.resume,
            },
            history,
            compare: args.compare,
        })
    }
}

pub(super) fn run(args: Box<BenchArgs>) -> anyhow::Result<Outcome> {
    let plan = BenchPlan::try_from(args)?;
    let mut progress = BenchProgress::new(std::io::stderr().is_terminal());
    let finished = framelab::bench::run_to_end(
        &plan.bench,
        plan.history.as_ref(),
        &mut progress,
        default_signals,
    )?;
    show(&finished, &plan.compare)
}

/// What a finished bench prints: what its history store said, its comparison (or its
/// runs' list), then what happened to its runs; and how it ended.
fn show(finished: &Finished, settings: &CompareSettings) -> anyhow::Result<Outcome> {
    let outcome = &finished.outcome;
    let path = outcome.path.display();
    for line in &finished.history_said {
        eprintln!("{line}");
    }
    for failure in &outcome.cleanup_failures {
        eprintln!("error: {failure}");
    }
    let all_failed = match finished.shown() {
        Shown::Comparison => framelab::bench::every_run_failed(&outcome.path)?,
        _ => Vec::new(),
    };
    match finished.shown() {
        Shown::Stopped { kept: false } => eprintln!(
            "framelab: stopped after {} of {} runs; -o /dev/null kept no experiment file to resume",
            outcome.finished_runs, outcome.total_runs
        ),
        Shown::Stopped { kept: true } => eprintln!(
            "framelab: stopped after {} of {} runs; every finished run is in {path}: continue with framelab bench --resume -o {path}",
            outcome.finished_runs, outcome.total_runs
        ),
        Shown::Runs => {
            list_runs(outcome, settings)?;
            eprintln!(
                "framelab: one variant and no --param: nothing to compare; add a --variant \
                 NAME=CMD or a --param to compare"
            );
        }
        Shown::Comparison if !all_failed.is_empty() => {
            // A variant with no measured run cannot be compared: the runs are listed.
            list_runs(outcome, settings)?;
            for line in &all_failed {
                eprintln!("framelab: {line}");
            }
        }
        Shown::Comparison => {
            let sources = [compare::parse_source(&outcome.path.to_string_lossy())?];
            let options = compare_options(settings, &settings.show);
            // Not kept: its temporary path is named nowhere (it is removed at the end).
            let unkept = (!outcome.file.kept()).then(|| outcome.path.clone());
            show_comparison(
                &sources,
                &options,
                &destinations(settings, None, unkept),
                false,
            )?;
        }
    }
    if !matches!(finished.shown(), Shown::Stopped { .. }) {
        // A variant with no measured run leaves nothing compare could show.
        notes(finished, all_failed.is_empty());
    }
    Ok(match finished.exit() {
        BenchExit::Done => Outcome::Done,
        BenchExit::CleanupFailed => Outcome::Failed,
        BenchExit::RunsFailed => Outcome::CommandFailed,
        BenchExit::Interrupted => Outcome::Interrupted,
    })
}

/// Each run's figures, as `framelab report` lists an experiment's.
fn list_runs(
    outcome: &framelab::bench::BenchOutcome,
    settings: &CompareSettings,
) -> anyhow::Result<()> {
    emit(&framelab::report::stored::list_runs(
        &outcome.path,
        outcome.file.kept(),
        listing_format(settings.format),
        super::output::use_color(),
    )?)
}

/// What a bench that ran to its end says after what it showed: where its file is (and how
/// to see it again: `comparable`, whether compare can), and what happened to its runs.
fn notes(finished: &Finished, comparable: bool) {
    let outcome = &finished.outcome;
    let path = outcome.path.display();
    if outcome.file.kept() {
        let see = match !finished.single_variant && comparable {
            false => format!("framelab report {path}"),
            true => format!("framelab compare {path} --format markdown"),
        };
        eprintln!("framelab: experiment file {path} ({see})");
    } else {
        eprintln!("{UNKEPT}");
    }
    if outcome.warmup_runs > 0 {
        eprintln!(
            "framelab: {} warmup run{} done first (kept in the file as warmup, never compared)",
            outcome.warmup_runs,
            if outcome.warmup_runs == 1 { "" } else { "s" }
        );
    }
    if outcome.unread_metrics > 0 {
        eprintln!(
            "framelab: a --metric could not be read in {} run{} (kept; excluded from that metric; the comparison lists why)",
            outcome.unread_metrics,
            if outcome.unread_metrics == 1 { "" } else { "s" }
        );
    }
    if outcome.failed_runs > 0 {
        eprintln!(
            "framelab: {} run{} failed (kept in the file, excluded from the statistics)",
            outcome.failed_runs,
            if outcome.failed_runs == 1 { "" } else { "s" }
        );
    }
}

/// The experiment the command line describes.
fn bench_spec(args: &BenchArgs) -> anyhow::Result<framelab::bench::ExperimentSpec> {
    bench_spec_on(args, None)
}

/// The experiment the command line describes; on `base` (the experiment a `--resume`
/// continues), its variants, parameters and, without `-n`, its runs.
fn bench_spec_on(
    args: &BenchArgs,
    base: Option<&ExperimentSpec>,
) -> anyhow::Result<framelab::bench::ExperimentSpec> {
    use framelab::bench::{
        parse_param, parse_shell_variant, parse_variant, shell_argv, ExperimentSpec, RunSettings,
        ServiceSettings, VariantSpec,
    };
    let shell = args.from_output.shell;
    // A --resume that names variants takes -n from the file: what else differs is named.
    let resumed_runs = || {
        let file = args.output.as_deref().filter(|_| args.resume)?;
        stored_spec(file).map(|stored| stored.runs)
    };
    let Some(runs) = args.runs.or(base.map(|b| b.runs)).or_else(resumed_runs) else {
        framelab::bail_usage!("-n RUNS is required: how many runs of each variant (6 or more for verdicts you can trust)");
    };
    let mut variants = Vec::new();
    for v in &args.variants {
        variants.push(if shell {
            parse_shell_variant(v)?
        } else {
            parse_variant(v)?
        });
    }
    let mut params = Vec::new();
    for p in &args.params {
        params.push(parse_param(p)?);
    }
    if !args.command.is_empty() {
        if !variants.is_empty() {
            framelab::bail_usage!("give each variant its full command with --variant NAME=CMD, or one command after --, not both");
        }
        let name = std::path::Path::new(&args.command[0])
            .file_name()
            .map_or_else(
                || args.command[0].clone(),
                |n| n.to_string_lossy().into_owned(),
            );
        // With --shell the variant is named after the first program of the script.
        let name = match shell {
            true => shlex::split(&args.command.join(" "))
                .and_then(|words| words.into_iter().next())
                .and_then(|w| {
                    std::path::Path::new(&w)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "sh".to_owned()),
            false => name,
        };
        // A sweep of one command is told apart by its parameters, not by its program.
        let name = match params.is_empty() {
            true => name,
            false => (params.iter().map(|p| p.key.as_str()))
                .collect::<Vec<_>>()
                .join("+"),
        };
        variants.push(VariantSpec {
            name,
            command: if shell {
                shell_argv(&args.command.join(" "))
            } else {
                args.command.clone()
            },
        });
    }
    if let Some(base) = base {
        variants = base.variants.clone();
        params = base.params.clone();
    }
    // A parameter no command names would run the same thing at every value: the sweep's
    // "changes" would be noise.
    for p in params
        .iter()
        .filter(|_| !variants.is_empty() && base.is_none())
    {
        let mark = format!("{{{}}}", p.key);
        let named = |text: &str| framelab::model::template::placeholders(text).contains(&p.key);
        let used = variants.iter().any(|v| v.command.iter().any(|w| named(w)))
            || [&args.prepare, &args.setup, &args.cleanup]
                .into_iter()
                .flatten()
                .any(|c| named(c))
            || args.services.services.iter().any(|s| s.contains(&mark))
            || args.from_output.metrics.iter().any(|m| m.contains(&mark));
        if !used {
            framelab::bail_usage!(
                "--param {}: no command names {mark}, so every value would run the same thing: \
                 put {mark} where the value goes (in a --variant, the command after --, \
                 --prepare, --setup, a --service or a --metric's JSON file)",
                p.key
            );
        }
    }
    // Checked before the first run: a mistyped service fails now, not at run 1.
    for variant in &variants {
        variant_service_specs(&args.services, &variant.name, shell)?;
    }
    let ns = |d: std::time::Duration| d.as_nanos() as i64;
    let watch = args.control.watch_list()?;
    Ok(ExperimentSpec {
        variants,
        params,
        runs,
        order: args.order.into(),
        seed: args.seed,
        pin: command_pin(&args.services.pins)?,
        prepare: args.prepare.clone(),
        warmup_runs: match args.warmup_runs {
            None => 0,
            Some(n) => u32::try_from(n).map_err(|_| {
                anyhow::anyhow!("--warmup-runs {n} is too many; one or a few are enough")
            })?,
        },
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        run: RunSettings {
            fps: args.control.target.fps,
            budget_ns: args.control.target.budget.map(ns),
            warmup_ns: ns(args.control.warmup),
            warmup_from: args.control.warmup_from()?,
            warmup_frames: args.control.warmup_mode.warmup_frames,
            duration_ns: args.control.duration.map(ns),
            frames: args.control.frames,
            watch_pids: watch.pids,
            watch_names: watch.names,
            watch_roles: watch.roles,
            grace_ns: ns(args.control.grace),
            ring_records: args.control.ring_records,
            metrics: framelab::output::parse_metrics(&args.from_output.metrics)?,
            keep_output: args.from_output.keep_output,
            services: ServiceSettings {
                services: args.services.services.clone(),
                ready: args.services.ready.clone(),
                ready_timeout_ns: ns(args.services.ready_timeout()),
                pins: args.services.pins.clone(),
                shell,
            },
            profile: profile_options(&args.profile),
            tags: framelab::tags::parse_tags(&args.tags)?,
            probes: checked_probes(&args.probes)?,
        },
    })
}

/// `--resume -o FILE` with options but no variants: the stored experiment with the options
/// given in place of its own, for the resume to refuse where they differ (they were
/// silently ignored); `None` when only `--resume -o FILE` was given.
fn resumed_with_options(args: &BenchArgs) -> anyhow::Result<Option<ExperimentSpec>> {
    use clap::Parser;
    let Some(file) = args.output.as_ref().filter(|f| f.is_file()) else {
        return Ok(None);
    };
    let Some(stored) = stored_spec(file) else {
        return Ok(None);
    };
    let words = ["framelab", "bench", "--resume", "-o"];
    let plain = super::Cli::try_parse_from(
        words
            .iter()
            .map(std::ffi::OsStr::new)
            .chain([file.as_os_str()]),
    )?;
    let super::Command::Bench(plain) = plain.command else {
        return Ok(None);
    };
    let given = serde_json::to_value(bench_spec_on(args, Some(&stored))?)?;
    let unchanged = serde_json::to_value(bench_spec_on(&plain, Some(&stored))?)?;
    let mut merged = serde_json::to_value(&stored)?;
    override_given(&mut merged, &unchanged, &given);
    let merged: ExperimentSpec = serde_json::from_value(merged)?;
    Ok((merged != stored).then_some(merged))
}

/// Puts into `stored` each value of `given` that differs from `unchanged` (what the
/// command line gives without options), field by field.
fn override_given(
    stored: &mut serde_json::Value,
    unchanged: &serde_json::Value,
    given: &serde_json::Value,
) {
    use serde_json::Value;
    let (Value::Object(stored), Value::Object(unchanged), Value::Object(given)) =
        (stored, unchanged, given)
    else {
        return;
    };
    for (key, value) in given {
        let before = unchanged.get(key);
        if before == Some(value) {
            continue;
        }
        match (stored.get_mut(key), before) {
            (Some(inner), Some(before)) if inner.is_object() && value.is_object() => {
                override_given(inner, before, value)
            }
            _ => {
                stored.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The experiment an existing file holds (what `--resume` continues).
fn stored_spec(path: &Path) -> Option<ExperimentSpec> {
    let experiment = store::load_experiment(path).ok()??;
    serde_json::from_str(&experiment.spec_json).ok()
}

/// `--show`, `--baseline` and `--baseline-value` checked against the experiment before it
/// runs (they were refused by the comparison, after the last run).
fn check_comparison_choices(
    spec: &ExperimentSpec,
    settings: &CompareSettings,
) -> anyhow::Result<()> {
    // A --show name without a dot is a built-in metric or a --metric's: any other is known
    // to be missing before the runs (one with a dot may name a stage or a role they record).
    for name in settings
        .show
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty() && !n.contains('.'))
    {
        let defined = spec.run.metrics.iter().any(|m| m.name == name);
        if !defined && !framelab::output::spec::RESERVED_NAMES.contains(&name) {
            let mut known: Vec<&str> = ["fps", "late", "cpu_per_frame", "load", "cores"]
                .into_iter()
                .chain(["peak_rss", "wall", "cpu"])
                .collect();
            known.extend(spec.run.metrics.iter().map(|m| m.name.as_str()));
            framelab::bail_usage!(
                "--show {name}: no such metric; a bench has {}, STAGE.p50/p95/p99, total.p50 \
                 ... and cpu.ROLE (docs/bench.md)",
                known.join(", ")
            );
        }
    }
    let names: Vec<&str> = spec.variants.iter().map(|v| v.name.as_str()).collect();
    if let Some(baseline) = &settings.baseline {
        if !names.contains(&baseline.as_str()) {
            framelab::bail_usage!(
                "--baseline {baseline}: no such variant; the variants are {}",
                names.join(", ")
            );
        }
    }
    let Some(first) = settings.baseline_values.first() else {
        return Ok(());
    };
    if spec.variants.len() > 1 {
        framelab::bail_usage!(
            "--baseline-value {first}: it picks the parameter values a sweep of one variant is \
             compared with; this bench has {} variants, compared with each other at every value \
             (choose the reference one with --baseline NAME)",
            spec.variants.len()
        );
    }
    let keys: Vec<&str> = spec.params.iter().map(|p| p.key.as_str()).collect();
    for given in &settings.baseline_values {
        let (key, value) = match given.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None if keys.len() == 1 => (keys[0], given.trim()),
            None => framelab::bail_usage!(
                "--baseline-value {given}: there are {} parameters ({}): say which, e.g. \
                 --baseline-value {}={given}",
                keys.len(),
                keys.join(", "),
                keys.first().unwrap_or(&"KEY")
            ),
        };
        let Some(param) = spec.params.iter().find(|p| p.key == key) else {
            framelab::bail_usage!(
                "--baseline-value {given}: no parameter '{key}'; the parameters are {}",
                keys.join(", ")
            );
        };
        if !param.values.iter().any(|v| v == value) {
            framelab::bail_usage!(
                "--baseline-value {given}: {key} takes the values {}",
                param.values.join(", ")
            );
        }
    }
    Ok(())
}

/// The first option given that only a comparison uses (a bench of one variant and no
/// `--param` lists its runs instead), as the user wrote it.
fn comparison_option(settings: &CompareSettings) -> Option<String> {
    let defaults = CompareSettings::defaults();
    let given = [
        (settings.baseline.is_some(), "--baseline".to_owned()),
        (
            !settings.baseline_values.is_empty(),
            "--baseline-value".to_owned(),
        ),
        (!settings.show.is_empty(), "--show".to_owned()),
        (settings.noise != defaults.0, "--noise".to_owned()),
        (settings.resamples != defaults.1, "--resamples".to_owned()),
        (
            matches!(settings.format, CompareFormat::Csv | CompareFormat::Html),
            format!(
                "--format {}",
                match settings.format {
                    CompareFormat::Csv => "csv",
                    _ => "html",
                }
            ),
        ),
        (settings.export_json.is_some(), "--export-json".to_owned()),
        (settings.export_csv.is_some(), "--export-csv".to_owned()),
        (
            settings.export_markdown.is_some(),
            "--export-markdown".to_owned(),
        ),
    ];
    given
        .into_iter()
        .find(|(given, _)| *given)
        .map(|(_, option)| option)
}

/// The run listing's format for a bench's `--format` (CSV and HTML are comparisons' only).
fn listing_format(format: CompareFormat) -> Format {
    match format {
        CompareFormat::Markdown => Format::Markdown,
        CompareFormat::Json => Format::Json,
        _ => Format::Text,
    }
}

/// The probe options as given, once checked: a bad one, or a point that cannot be placed,
/// is refused before the first run, as `run` refuses it before launching.
fn checked_probes(args: &super::probes::ProbeArgs) -> anyhow::Result<framelab::probes::ProbeText> {
    let options = args.options()?;
    if !options.is_empty() {
        framelab::probes::recorder::Recorder::check(&options).map_err(anyhow::Error::msg)?;
    }
    Ok(args.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(words: &[&str]) -> anyhow::Result<BenchPlan> {
        let super::super::Command::Bench(args) = super::super::parsed(words) else {
            panic!("not a bench: {words:?}");
        };
        BenchPlan::try_from(args)
    }

    /// What the comparison will refuse is refused by the conversion, before any run.
    #[test]
    fn comparison_choices_are_refused_before_the_runs() {
        let bench = ["framelab", "bench", "-n", "3", "-o", "/dev/null"];
        let variants = ["--variant", "a=true", "--variant", "b=true"];
        let with = |more: &[&'static str]| {
            let words: Vec<&str> = bench.iter().chain(&variants).chain(more).copied().collect();
            planned(&words).err().map(|e| e.to_string())
        };
        let error = with(&["--baseline", "zz"]).unwrap();
        assert!(
            error.starts_with("--baseline zz: no such variant"),
            "{error}"
        );
        let error = with(&["--show", "nope"]).unwrap();
        assert!(error.starts_with("--show nope: no such metric"), "{error}");
        assert_eq!(with(&["--baseline", "b"]), None);
        let one = [
            "framelab", "bench", "-n", "3", "--noise", "5%", "--", "true",
        ];
        let error = planned(&one).err().unwrap().to_string();
        assert!(
            error.starts_with("--noise is for comparing variants"),
            "{error}"
        );
    }

    #[test]
    fn a_planned_bench_keeps_its_experiment() {
        let plan = planned(&[
            "framelab", "bench", "-n", "4", "--order", "shuffled", "--seed", "7", "--", "true",
        ])
        .unwrap();
        let spec = plan.bench.spec.unwrap();
        assert_eq!((spec.runs, spec.variants.len()), (4, 1));
        assert_eq!(spec.order, framelab::bench::Order::Shuffled);
        assert!(plan.history.is_none());
    }
}
