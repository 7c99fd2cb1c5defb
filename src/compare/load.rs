//! Which runs to compare and which variant each belongs to: experiments carry their
//! variants; files of plain runs are one variant each (named after the file, or by
//! `--variant NAME=FILE[:RUN,...]`). Then every measured run is read and reduced, one at
//! a time: memory holds one run's analysis and the reductions, whatever the number of runs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::extract::{extract_stored, Keep, RunData};
use crate::experiment::{Fingerprint, RunStatus};
use crate::model::{EndReason, RunMeta};
use crate::store;

/// A file to compare, optionally named and narrowed to some runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub path: PathBuf,
    /// `--variant NAME=FILE`: every (chosen) run of the file is this variant.
    pub variant: Option<String>,
    /// `FILE:3,4,5`: only these runs.
    pub run_ids: Option<Vec<i64>>,
}

/// `NAME=FILE[:RUN,...]`.
pub fn parse_named_source(text: &str) -> Result<Source> {
    let Some((name, rest)) = text.split_once('=') else {
        bail!("--variant {text}: give it as NAME=FILE or NAME=FILE:RUN,RUN (runs of one file)");
    };
    let mut source = parse_source(rest)?;
    if name.trim().is_empty() {
        bail!("--variant {text}: the name before '=' is empty");
    }
    source.variant = Some(name.trim().to_owned());
    Ok(source)
}

/// `FILE` or `FILE:RUN,...` (when FILE itself does not exist under the whole text).
pub fn parse_source(text: &str) -> Result<Source> {
    if !Path::new(text).exists() {
        if let Some((file, ids)) = text.rsplit_once(':') {
            if !ids.is_empty() && ids.split(',').all(|i| i.trim().parse::<i64>().is_ok()) {
                return Ok(Source {
                    path: file.into(),
                    variant: None,
                    run_ids: Some(
                        ids.split(',')
                            .map(|i| i.trim().parse().unwrap_or(0))
                            .collect(),
                    ),
                });
            }
        }
    }
    Ok(Source {
        path: text.into(),
        variant: None,
        run_ids: None,
    })
}

/// One run to compare, with its place.
#[derive(Clone, Debug)]
pub struct LoadedRun {
    pub path: PathBuf,
    pub run_id: i64,
    pub variant: String,
    pub params: BTreeMap<String, String>,
    pub status: RunStatus,
    pub failure: Option<String>,
    pub command: Vec<String>,
    pub fingerprint: Fingerprint,
    /// Loaded and reduced for measured runs only.
    pub data: Option<RunData>,
}

/// Runs, the variants in order, the parameter keys in order, and notes.
pub struct Loaded {
    pub runs: Vec<LoadedRun>,
    pub variants: Vec<String>,
    pub param_keys: Vec<String>,
    /// Parameter value orders per key, as the experiments listed them.
    pub param_values: BTreeMap<String, Vec<String>>,
    /// Each experiment variant's command as given, `{KEY}` placeholders included.
    pub templates: BTreeMap<String, Vec<String>>,
    pub notes: Vec<String>,
}

/// The runs of `sources`, each reduced to p50, p95 and p99 of its values.
pub fn load(sources: &[Source]) -> Result<Loaded> {
    load_keeping(sources, &Keep::for_metrics(&[]))
}

/// A run named on two sides: the sides' samples would not be independent (the tests
/// assume they are), and identical data would read as "equivalent".
fn refuse_shared_runs(sources: &[Source]) -> Result<()> {
    let file_of = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let side = |s: &Source| match &s.variant {
        Some(name) => format!("--variant {name}"),
        None => s.path.display().to_string(),
    };
    for (i, a) in sources.iter().enumerate() {
        for b in sources[i + 1..]
            .iter()
            .filter(|b| file_of(&b.path) == file_of(&a.path))
        {
            let shared = match (&a.run_ids, &b.run_ids) {
                (Some(x), Some(y)) => x
                    .iter()
                    .find(|id| y.contains(id))
                    .map(|id| format!("run {id}")),
                (Some(x), None) | (None, Some(x)) => x.first().map(|id| format!("run {id}")),
                (None, None) => Some("every run".to_owned()),
            };
            if let Some(run) = shared {
                crate::bail_usage!(
                    "{run} of {} is on two sides ({} and {}): a run is compared on one side \
                     only; give each side its own runs (FILE:RUN,RUN)",
                    a.path.display(),
                    side(a),
                    side(b)
                );
            }
        }
    }
    Ok(())
}

/// The runs of `sources`, each reduced as `keep` says.
pub fn load_keeping(sources: &[Source], keep: &Keep) -> Result<Loaded> {
    if sources.is_empty() {
        return Err(crate::usage::UsageError(
            "nothing to compare: give an experiment file (framelab bench -o FILE) or run files"
                .into(),
        )
        .into());
    }
    refuse_shared_runs(sources)?;
    let mut runs: Vec<LoadedRun> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    let mut param_keys: Vec<String> = Vec::new();
    let mut param_values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut templates: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut notes = Vec::new();
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    for source in sources {
        let path = &source.path;
        let metas = store::list_runs(path)?;
        let by_id: HashMap<i64, &RunMeta> = metas.iter().map(|m| (m.id, m)).collect();
        let fingerprints = store::load_fingerprints(path)?;
        let experiment = store::load_experiment(path)?;
        let fingerprint_of = |meta: &RunMeta| {
            fingerprints
                .get(&meta.id)
                .cloned()
                .unwrap_or_else(|| Fingerprint::from_host(&meta.host))
        };
        if let (Some(experiment), None) = (&experiment, &source.variant) {
            // Variant names of a second file that clash get the file's name in front.
            let spec: Option<crate::bench::ExperimentSpec> =
                serde_json::from_str(&experiment.spec_json).ok();
            let order: Vec<String> = match &spec {
                Some(s) => s.variants.iter().map(|v| v.name.clone()).collect(),
                None => Vec::new(),
            };
            if let Some(s) = &spec {
                for p in &s.params {
                    if !param_keys.contains(&p.key) {
                        param_keys.push(p.key.clone());
                    }
                    let known = param_values.entry(p.key.clone()).or_default();
                    for v in &p.values {
                        if !known.contains(v) {
                            known.push(v.clone());
                        }
                    }
                }
            }
            let taken: Vec<String> = variants.clone();
            let rename = |name: &str| {
                if taken.iter().any(|t| t == name) {
                    format!("{}:{name}", stem(path))
                } else {
                    name.to_owned()
                }
            };
            let mut names_here: Vec<String> = order.iter().map(|n| rename(n)).collect();
            if let Some(s) = &spec {
                for v in &s.variants {
                    templates.insert(rename(&v.name), v.command.clone());
                }
            }
            let mut listed = std::collections::HashSet::new();
            let mut warmups = 0;
            for r in &experiment.runs {
                if let Some(ids) = &source.run_ids {
                    if !ids.contains(&r.run_id) {
                        continue;
                    }
                }
                let Some(meta) = by_id.get(&r.run_id) else {
                    continue;
                };
                listed.insert(r.run_id);
                // Warmup runs (`--warmup-runs`) are never compared, nor listed as excluded.
                if r.status == RunStatus::Warmup {
                    warmups += 1;
                    continue;
                }
                let variant = rename(&r.variant);
                if !names_here.contains(&variant) {
                    names_here.push(variant.clone());
                }
                for key in r.params.keys() {
                    if !param_keys.contains(key) {
                        param_keys.push(key.clone());
                    }
                }
                runs.push(LoadedRun {
                    path: path.clone(),
                    run_id: r.run_id,
                    variant,
                    params: r.params.clone(),
                    status: r.status,
                    failure: r.failure.clone(),
                    command: meta.command.clone(),
                    fingerprint: fingerprint_of(meta),
                    data: None,
                });
            }
            if warmups > 0 {
                notes.push(format!(
                    "{warmups} warmup run{} in {} (--warmup-runs) done before the measured ones, \
                     not compared",
                    if warmups == 1 { "" } else { "s" },
                    path.display()
                ));
            }
            let orphans = metas.iter().filter(|m| !listed.contains(&m.id)).count();
            if orphans > 0 && source.run_ids.is_none() {
                notes.push(format!(
                    "{orphans} run{} in {} belong{} to no finished slot of the experiment (a bench \
                     stopped mid-run): not compared",
                    if orphans == 1 { "" } else { "s" },
                    path.display(),
                    if orphans == 1 { "s" } else { "" }
                ));
            }
            // Runs picked by id: only the variants they are of (not the others, 0 runs each).
            if source.run_ids.is_some() {
                names_here
                    .retain(|name| runs.iter().any(|r| &r.path == path && &r.variant == name));
            }
            variants.extend(
                names_here
                    .into_iter()
                    .filter(|n| !variants.contains(n))
                    .collect::<Vec<_>>(),
            );
            continue;
        }
        // Plain runs: the file (or the name given) is the variant.
        let variant = source.variant.clone().unwrap_or_else(|| stem(path));
        let chosen: Vec<&RunMeta> = match &source.run_ids {
            None => metas.iter().collect(),
            Some(ids) => {
                for id in ids {
                    if !by_id.contains_key(id) {
                        let all: Vec<String> = metas.iter().map(|m| m.id.to_string()).collect();
                        bail!(
                            "{} has no run {id}; it holds runs {}",
                            path.display(),
                            all.join(", ")
                        );
                    }
                }
                metas.iter().filter(|m| ids.contains(&m.id)).collect()
            }
        };
        if chosen.is_empty() {
            bail!(
                "{} holds no runs; record some with framelab run -o {} -- COMMAND",
                path.display(),
                path.display()
            );
        }
        // An experiment named as one variant (`--variant NAME=FILE`): its warmup runs and
        // the runs of no finished slot are never compared, its failed runs stay failed, and
        // its variants or parameter values are pooled only when runs are picked by id.
        let slots: Option<HashMap<i64, &crate::experiment::ExperimentRun>> = experiment
            .as_ref()
            .map(|e| e.runs.iter().map(|r| (r.run_id, r)).collect());
        let chosen: Vec<&RunMeta> = match &slots {
            None => chosen,
            Some(slots) => {
                let (measured, left): (Vec<&RunMeta>, Vec<&RunMeta>) =
                    chosen.into_iter().partition(|m| {
                        slots
                            .get(&m.id)
                            .is_some_and(|r| r.status != RunStatus::Warmup)
                    });
                if !left.is_empty() {
                    notes.push(format!(
                        "{} in {} not compared: warmup runs (--warmup-runs) or of no finished \
                         slot of the experiment",
                        if left.len() == 1 {
                            "1 run".to_owned()
                        } else {
                            format!("{} runs", left.len())
                        },
                        path.display()
                    ));
                }
                if source.run_ids.is_none() {
                    let mut groups: Vec<String> = Vec::new();
                    for meta in &measured {
                        let r = slots[&meta.id];
                        let mut label = r.variant.clone();
                        for (k, v) in &r.params {
                            label.push_str(&format!(" {k}={v}"));
                        }
                        if !groups.contains(&label) {
                            groups.push(label);
                        }
                    }
                    if groups.len() > 1 {
                        bail!(
                            "--variant {variant}={}: the file is an experiment of {} variants or \
                             parameter values ({}), which \
                             one name would pool: compare it without a name (framelab compare {}), \
                             or name the runs of one, e.g. --variant {variant}={}:{}",
                            path.display(),
                            groups.len(),
                            groups.join(", "),
                            path.display(),
                            path.display(),
                            measured
                                .iter()
                                .filter(|m| {
                                    let r = slots[&m.id];
                                    r.variant == slots[&measured[0].id].variant
                                        && r.params == slots[&measured[0].id].params
                                })
                                .map(|m| m.id.to_string())
                                .collect::<Vec<_>>()
                                .join(",")
                        );
                    }
                }
                if measured.is_empty() {
                    bail!(
                        "--variant {variant}={}: none of the runs named is a measured run of the \
                         experiment (framelab report {} lists them)",
                        path.display(),
                        path.display()
                    );
                }
                measured
            }
        };
        if source.variant.is_none() {
            let first = &chosen[0].command;
            if let Some(other) = chosen.iter().find(|m| &m.command != first) {
                bail!(
                    "{} holds runs of different commands ('{}' and '{}'): say which runs form each \
                     variant, e.g. --variant a={}:{} --variant b={}:{}",
                    path.display(),
                    first.join(" "),
                    other.command.join(" "),
                    path.display(),
                    chosen[0].id,
                    path.display(),
                    other.id
                );
            }
        }
        if variants.contains(&variant) && source.variant.is_none() {
            bail!("two files are both called '{variant}': name them with --variant NAME=FILE");
        }
        if !variants.contains(&variant) {
            variants.push(variant.clone());
        }
        for meta in chosen {
            let (status, failure) = match slots.as_ref().and_then(|s| s.get(&meta.id)) {
                Some(slot) => (slot.status, slot.failure.clone()),
                None => plain_status(meta),
            };
            runs.push(LoadedRun {
                path: path.clone(),
                run_id: meta.id,
                variant: variant.clone(),
                params: BTreeMap::new(),
                status,
                failure,
                command: meta.command.clone(),
                fingerprint: fingerprint_of(meta),
                data: None,
            });
        }
    }
    reduce_one_at_a_time(&mut runs, keep)?;
    Ok(Loaded {
        runs,
        variants,
        param_keys,
        param_values,
        templates,
        notes,
    })
}

/// A plain run failed when it crashed, exited non-zero by itself, or was never finalised.
fn plain_status(meta: &RunMeta) -> (RunStatus, Option<String>) {
    if meta.end_reason == EndReason::Unfinished {
        return (
            RunStatus::Failed,
            Some("not finalised (framelab was killed while recording)".into()),
        );
    }
    let (status, failure) = crate::bench::judge_run(
        meta.end_reason,
        meta.exit.as_ref(),
        meta.session.interrupt_signal,
    );
    (status, failure)
}

/// Reads and reduces every measured run in turn. One at a time, not one per core: each
/// run's analysis holds about a report's memory while it lasts, and a comparison of many
/// runs must fit where one report does (issue 29); the analysis uses the cores itself.
fn reduce_one_at_a_time(runs: &mut [LoadedRun], keep: &Keep) -> Result<()> {
    for run in runs.iter_mut().filter(|r| r.status == RunStatus::Ok) {
        run.data = Some(extract_stored(&run.path, run.run_id, keep)?);
    }
    Ok(())
}
