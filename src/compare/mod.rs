//! `framelab compare`: are the variants of an experiment (or runs from separate files)
//! different, on which metrics, by how much, and how sure is that? Statistics in
//! `crate::stats`; definitions for users in docs/metrics.md ("Comparing runs").

mod by_tag;
mod comparison;
mod compute;
mod csv;
mod document;
mod effect;
mod energy;
mod explain;
mod extract;
pub mod files;
mod fingerprints;
mod histograms;
mod html;
mod identical;
mod load;
pub mod metrics;
mod pair;
mod roles;
mod side_by_side;

use anyhow::{bail, Result};

pub use by_tag::{group_by_tag, ByTag};
pub use comparison::{
    describe_params, CompareOptions, Comparison, Row, Sweep, SweepChange, SCHEMA,
};
pub use extract::{extract, extract_keeping, extract_stored, Keep, RunData};
pub use load::{load, load_keeping, parse_named_source, parse_source, Loaded, LoadedRun, Source};

use crate::experiment::RunStatus;
use crate::render::format::COMPARE;
use crate::render::Format;

/// Loads the sources, checks there is something to compare, and compares.
pub fn compare(sources: &[Source], options: &CompareOptions) -> Result<Comparison> {
    let keep = Keep::for_metrics(&options.metrics);
    Ok(compare_loaded(sources, options, &keep)?.0)
}

/// The comparison as a self-contained HTML page: its document (what text and Markdown
/// show) with its plots (every metric, the sweeps, the stage distributions), with the
/// comparison itself.
pub fn compare_html(sources: &[Source], options: &CompareOptions) -> Result<(Comparison, String)> {
    // The page pools the runs' values into its curves: every value is kept.
    let (comparison, loaded) = compare_loaded(sources, options, &Keep::All)?;
    if !comparison.histograms.is_empty() {
        crate::bail_usage!(
            "--format html: runs of imported histograms are compared as tables only; give \
             --format text, markdown, json or csv"
        );
    }
    let mut page = document::document(&comparison);
    let plots = html::plots(&comparison, &loaded);
    (page.blocks).extend(plots.into_iter().map(crate::render::document::Block::Plot));
    let text = crate::report::html::render_document(&page, html::SCHEMA, "compare")?;
    Ok((comparison, text))
}

/// [`compare`], and the runs it loaded, their values kept as `keep` says.
fn compare_loaded(
    sources: &[Source],
    options: &CompareOptions,
    keep: &Keep,
) -> Result<(Comparison, load::Loaded)> {
    if !(options.noise >= 0.0 && options.noise < 1.0) {
        crate::bail_usage!("--noise must be between 0% and 100%, e.g. --noise 2%");
    }
    let loaded = load::load_keeping(sources, keep)?;
    if loaded.variants.is_empty() {
        bail!("nothing to compare: the files hold no runs");
    }
    if loaded.variants.len() < 2 && loaded.param_keys.is_empty() {
        bail!(
            "only one variant ({}): compare needs two or more — an experiment of several \
             variants, or one run file per variant",
            loaded.variants[0]
        );
    }
    let baseline = match &options.baseline {
        Some(name) if loaded.variants.contains(name) => name.clone(),
        Some(name) => crate::bail_usage!(
            "--baseline {name}: no such variant; the variants are {}",
            loaded.variants.join(", ")
        ),
        None => loaded.variants[0].clone(),
    };
    check_enough_runs(&loaded)?;
    if let Some(comparison) = compare_histograms(&loaded, &baseline, options, sources)? {
        return Ok((comparison, loaded));
    }
    let measured: Vec<&RunData> = loaded
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Ok)
        .filter_map(|r| r.data.as_ref())
        .collect();
    let catalogue = metrics::catalogue(&measured);
    let chosen = if options.metrics.is_empty() {
        metrics::defaults(&catalogue)
    } else {
        let names = options.metrics.iter().flat_map(|n| n.split(','));
        if let Some(why) = names
            .filter_map(|n| energy::refusal(n.trim(), &measured))
            .next()
        {
            crate::bail_usage!("{why}");
        }
        metrics::select(&catalogue, &options.metrics)?
    };
    let (chosen, energy_notes) = energy::left_out(&loaded, chosen, !options.metrics.is_empty());
    if chosen.is_empty() {
        bail!("these runs have no metric in common to compare");
    }
    let baseline_combo = baseline_combo(&loaded, options)?;
    let mut notes = loaded.notes.clone();
    notes.extend(fingerprints::differences(&loaded.runs));
    notes.extend(metrics::disagreements(&measured, &chosen));
    notes.extend(energy_notes);
    notes.extend(roles::missing_runs(&loaded, &chosen));
    if measured.iter().any(|r| r.frames_undefined) {
        notes.push(
            "no total, interval, fps or late rows: a run compared is an import with no frame \
             definition (each slice counted alone), whose report shows no frame figures; \
             define frames with framelab import --frame-arg ARG or --frame-regex REGEX"
                .into(),
        );
    }
    notes.extend(metrics::rate_notes(&chosen, &measured));
    if chosen.iter().any(|m| m.key == "fps") && measured.iter().any(|r| r.fps_from_frames) {
        notes.push(format!(
            "{}: it is N ÷ each run's whole wall time; a rate the command prints itself \
             (--metric) leaves them out",
            crate::report::facts::FPS_FROM_FRAMES
        ));
    }
    // Each file once: `--by` makes one source per tag value of the same file.
    let mut files: Vec<String> = Vec::new();
    for s in sources {
        let file = s.path.display().to_string();
        if !files.contains(&file) {
            files.push(file);
        }
    }
    let pipeline = explain::explain(&loaded, &baseline);
    let mut comparison = compute::compute(
        &loaded,
        chosen,
        baseline,
        baseline_combo,
        options,
        notes,
        files,
    );
    comparison.pipeline = pipeline;
    Ok((comparison, loaded))
}

/// Runs of imported histograms only, compared histogram by histogram, one run a side (the
/// side-by-side comparison, its metric rows replaced by the histograms' figures). `None`
/// when no run is histograms only; a mix of such runs and runs with spans is refused.
fn compare_histograms(
    loaded: &load::Loaded,
    baseline: &str,
    options: &CompareOptions,
    sources: &[Source],
) -> Result<Option<Comparison>> {
    let measured: Vec<&LoadedRun> = (loaded.runs.iter())
        .filter(|r| r.status == RunStatus::Ok && r.data.is_some())
        .collect();
    let (only, spans): (Vec<&LoadedRun>, Vec<&LoadedRun>) =
        measured.iter().partition(|r| histograms::histogram_only(r));
    let Some(h) = only.first() else {
        let asked = (options.below.first().or(options.above.first()))
            .map(|t| format!("--below/--above {}", t.text))
            .or(options.unit.as_ref().map(|u| format!("--unit {u}")));
        if let Some(asked) = asked {
            crate::bail_usage!(
                "{asked}: it reads imported histograms, and these runs are not histograms \
                 alone; for spans compare a percentile (--show STAGE.p99)"
            );
        }
        return Ok(None);
    };
    if let Some(s) = spans.first() {
        bail!(
            "{} (run {}) holds only imported histograms and {} (run {}) spans: compare \
             histogram imports with histogram imports (framelab hist shows one run's)",
            h.path.display(),
            h.run_id,
            s.path.display(),
            s.run_id
        );
    }
    if let Some(name) = options.metrics.first() {
        crate::bail_usage!(
            "--show {name}: runs of imported histograms have no metrics to pick; every \
             histogram both hold is compared (framelab hist RUN lists them)"
        );
    }
    let thresholds = histograms::thresholds_of(&options.below, &options.above);
    let (tables, hist_notes) =
        histograms::compare(loaded, baseline, &thresholds, options.unit.as_deref())?;
    let mut notes = loaded.notes.clone();
    notes.extend(hist_notes);
    let sources = sources
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let mut comparison = compute::compute(
        loaded,
        Vec::new(),
        baseline.to_owned(),
        None,
        options,
        notes,
        sources,
    );
    comparison.notes.push(histograms::HOW_TO_READ.into());
    comparison.histograms = tables;
    Ok(Some(comparison))
}

/// In a sweep of one variant, the parameter values the others are compared with: the
/// first value of each parameter, or `--baseline-value` (`V` with one parameter, `KEY=V`
/// for any). `None` when variants are compared with each other instead.
fn baseline_combo(
    loaded: &load::Loaded,
    options: &CompareOptions,
) -> Result<Option<std::collections::BTreeMap<String, String>>> {
    let sweep_of_one = loaded.variants.len() == 1 && !loaded.param_keys.is_empty();
    if !sweep_of_one {
        if let Some(v) = options.baseline_values.first() {
            crate::bail_usage!(
                "--baseline-value {v}: it picks the parameter values a sweep of one variant is \
                 compared with; these runs have {} variants, compared with each other at every \
                 value (choose the reference one with --baseline NAME)",
                loaded.variants.len()
            );
        }
        return Ok(None);
    }
    let combos = compute::combinations(loaded);
    let Some(first) = combos.first() else {
        return Ok(None);
    };
    let mut wanted = first.clone();
    let values_of = |key: &str| {
        let mut values: Vec<&String> = combos.iter().filter_map(|c| c.get(key)).collect();
        values.dedup();
        values
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for given in &options.baseline_values {
        let (key, value) = match given.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.trim().to_owned()),
            None if loaded.param_keys.len() == 1 => {
                (loaded.param_keys[0].clone(), given.trim().to_owned())
            }
            None => crate::bail_usage!(
                "--baseline-value {given}: there are {} parameters ({}): say which, e.g. \
                 --baseline-value {}={given}",
                loaded.param_keys.len(),
                loaded.param_keys.join(", "),
                loaded.param_keys[0]
            ),
        };
        if !loaded.param_keys.contains(&key) {
            crate::bail_usage!(
                "--baseline-value {given}: no parameter '{key}'; the parameters are {}",
                loaded.param_keys.join(", ")
            );
        }
        if !combos.iter().any(|c| c.get(&key) == Some(&value)) {
            crate::bail_usage!(
                "--baseline-value {given}: {key} has no measured runs at {value}; its values are {}",
                values_of(&key)
            );
        }
        wanted.insert(key, value);
    }
    if !combos.contains(&wanted) {
        crate::bail_usage!(
            "--baseline-value: no measured runs at {}; give a combination that was run",
            comparison::describe_params(&wanted)
        );
    }
    Ok(Some(wanted))
}

/// Every variant needs a measured run in every group of parameter values it was run at.
fn check_enough_runs(loaded: &load::Loaded) -> Result<()> {
    let mut groups: Vec<&std::collections::BTreeMap<String, String>> = Vec::new();
    for r in &loaded.runs {
        if !groups.contains(&&r.params) {
            groups.push(&r.params);
        }
    }
    for params in groups {
        for variant in &loaded.variants {
            let of_this = || {
                loaded
                    .runs
                    .iter()
                    .filter(|r| &r.variant == variant && &r.params == params)
            };
            if of_this().count() == 0 {
                continue;
            }
            let measured = of_this().filter(|r| r.status == RunStatus::Ok).count();
            // One run a side is compared side by side, without an interval or verdict.
            if measured < 1 {
                let failed = of_this().count() - measured;
                let at = comparison::describe_params(params);
                bail!(
                    "variant '{variant}'{} has no measured run{}: at least 1 a side is needed \
                     to compare (2 for an interval, 4 for any verdict, improved or regressed on \
                     the primary metric included, and more for improved or regressed on the \
                     metrics tested after it, docs/metrics.md); record more runs",
                    if at.is_empty() {
                        String::new()
                    } else {
                        format!(" [{at}]")
                    },
                    if failed > 0 {
                        format!(" ({failed} failed, excluded)")
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    Ok(())
}

/// The comparison as a neutral document: built once, written in every format asked
/// ([`write`]).
pub fn document(comparison: &Comparison) -> crate::render::document::Document {
    document::document(comparison)
}

/// The comparison in `format`.
pub fn render(comparison: &Comparison, format: Format) -> Result<String> {
    write(&document(comparison), format)
}

/// A comparison's document in `format`.
pub fn write(document: &crate::render::document::Document, format: Format) -> Result<String> {
    // The page needs the runs themselves (`compare_html`); from the comparison alone, its
    // text form.
    let format = match format {
        Format::Html => Format::Text,
        other => other,
    };
    let written = crate::render::document::write(document, format, &COMPARE)?;
    Ok(match format {
        // Names cut and escaped where they are printed; any control character left (a
        // variant named after a file) is escaped here: only `\n` ends a line.
        Format::Json => written,
        _ => crate::display::lines(&written),
    })
}

/// Whether any metric of any comparison regressed (`--fail-on-regression`).
pub fn any_regression(comparison: &Comparison) -> bool {
    comparison
        .groups
        .iter()
        .flat_map(|g| &g.comparisons)
        .flat_map(|c| &c.rows)
        .any(|r| r.verdict == crate::stats::Verdict::Regressed)
}
