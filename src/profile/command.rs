//! `framelab profile RUN` and `framelab profile A B`: loading, filtering, rendering, writing.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use super::diff::{self, Side};
use super::render;
use super::summary::{self, Filters};
use super::Profile;
use crate::destination::{write_whole, Target};
use crate::model::Run;
use crate::render::format::PROFILE;
use crate::render::Format;

pub struct ProfileCommand {
    /// One file: its profile; two: the diff from the first to the second.
    pub runs: Vec<PathBuf>,
    pub run_id: Option<i64>,
    pub filters: Filters,
    pub format: Format,
    pub top: usize,
    /// Where to write (`-`: standard output).
    pub output: PathBuf,
}

/// The profiled runs of `path`: run `run_id`, or every run that has a profile.
fn load(path: &Path, run_id: Option<i64>) -> Result<Vec<(Run, Profile)>> {
    let ids: Vec<i64> = match run_id {
        Some(id) => vec![id],
        None => crate::store::list_runs(path)?
            .iter()
            .map(|m| m.id)
            .collect(),
    };
    let mut profiled = Vec::new();
    for id in &ids {
        if let Some(profile) = crate::store::load_profile(path, *id)? {
            profiled.push((crate::store::load_run(path, Some(*id))?, profile));
        }
    }
    if profiled.is_empty() {
        let which = match run_id {
            Some(id) => format!("run {id} of {}", path.display()),
            None => path.display().to_string(),
        };
        bail!(
            "{which} has no profile: record one with framelab run --profile -- CMD (or bench --profile)"
        );
    }
    Ok(profiled)
}

pub fn run(cmd: &ProfileCommand) -> Result<()> {
    PROFILE.check(cmd.format)?;
    let target = Target::resolve(&cmd.output)?;
    for input in &cmd.runs {
        target.refuse_overwriting(&cmd.output, input)?;
    }
    let bytes = match cmd.runs.as_slice() {
        [one] => match experiment_groups(cmd, one)? {
            Some(groups) => compare_groups(cmd, groups)?,
            None => one_run(cmd, one)?,
        },
        [a, b] => {
            let name = |p: &Path| {
                p.file_stem().map_or_else(
                    || p.display().to_string(),
                    |s| s.to_string_lossy().into_owned(),
                )
            };
            compare_groups(
                cmd,
                vec![
                    (name(a), load(a, cmd.run_id)?),
                    (name(b), load(b, cmd.run_id)?),
                ],
            )?
        }
        _ => bail!(
            "give one run file (its profile) or two (the change from the first to the second)"
        ),
    };
    write_whole(&target, &cmd.output, |out| Ok(out.write_all(&bytes)?))
}

fn one_run(cmd: &ProfileCommand, path: &Path) -> Result<Vec<u8>> {
    let mut profiled = load(path, cmd.run_id)?;
    if profiled.len() > 1 {
        let ids: Vec<String> = profiled
            .iter()
            .map(|(r, _)| r.meta.id.to_string())
            .collect();
        bail!(
            "{} holds {} profiled runs ({}): pick one with --run-id, or compare files with framelab profile A B",
            path.display(),
            profiled.len(),
            ids.join(", ")
        );
    }
    let (run, profile) = profiled.remove(0);
    let sel = summary::select(&run, &profile, &cmd.filters).map_err(|e| anyhow!(e))?;
    let stage_of = |i: usize| sel.stage(&run, i).to_owned();
    Ok(match cmd.format {
        Format::Text | Format::Markdown | Format::Json => {
            let s = summary::summarize(&run, &profile, &cmd.filters, &sel);
            render::summary(&s, cmd.top, cmd.format)?.into_bytes()
        }
        Format::Folded => render::folded(&profile, &sel.samples, &stage_of).into_bytes(),
        Format::Svg => render::svg(
            &render::folded(&profile, &sel.samples, &stage_of),
            &format!(
                "{} · {} at {} Hz",
                run.meta.name, profile.event, profile.frequency_hz
            ),
        )?,
        Format::Speedscope => {
            render::speedscope(&profile, &sel.samples, &stage_of, &run.meta.name).into_bytes()
        }
        other => return Err(PROFILE.refuse(other)),
    })
}

/// The profiled runs of an experiment (`framelab bench --profile`) by variant (and
/// parameter values), in the order they first ran; `None` for a file of one group, or
/// when a run was picked with `--run-id`.
fn experiment_groups(cmd: &ProfileCommand, path: &Path) -> Result<Option<Vec<Group>>> {
    if cmd.run_id.is_some() {
        return Ok(None);
    }
    let Some(experiment) = crate::store::load_experiment(path)? else {
        return Ok(None);
    };
    let mut groups: Vec<Group> = Vec::new();
    for run in &experiment.runs {
        if run.status != crate::experiment::RunStatus::Ok {
            continue;
        }
        let Some(profile) = crate::store::load_profile(path, run.run_id)? else {
            continue;
        };
        let mut label = run.variant.clone();
        for (k, v) in &run.params {
            label.push_str(&format!(" {k}={v}"));
        }
        let loaded = (crate::store::load_run(path, Some(run.run_id))?, profile);
        match groups.iter_mut().find(|(name, _)| *name == label) {
            Some((_, runs)) => runs.push(loaded),
            None => groups.push((label, vec![loaded])),
        }
    }
    Ok((groups.len() >= 2).then_some(groups))
}

/// A name and its profiled runs.
type Group = (String, Vec<(Run, Profile)>);

/// One side of a diff: its runs' samples pooled, by function and as folded stacks.
fn side(cmd: &ProfileCommand, (name, runs): &Group) -> Result<(Side, String)> {
    let mut side = Side::new(name);
    let mut folded = String::new();
    for (run, profile) in runs {
        let sel =
            summary::select(run, profile, &cmd.filters).map_err(|e| anyhow!("{name}: {e}"))?;
        side.add(&summary::table(
            profile,
            name,
            &sel.samples,
            sel.samples.len() as u64,
        ));
        let stage_of = |i: usize| sel.stage(run, i).to_owned();
        folded.push_str(&render::folded(profile, &sel.samples, &stage_of));
    }
    Ok((side, folded))
}

/// The first group against each other one, one diff after another.
fn compare_groups(cmd: &ProfileCommand, groups: Vec<Group>) -> Result<Vec<u8>> {
    let (base, folded_base) = side(cmd, &groups[0])?;
    let mut out = Vec::new();
    let mut diffs = Vec::new();
    for group in &groups[1..] {
        let (other, folded_other) = side(cmd, group)?;
        let d = diff::diff(&base, &other);
        match cmd.format {
            Format::Text => out.extend(diff::render(&d, cmd.top, false).into_bytes()),
            Format::Markdown => out.extend(diff::render(&d, cmd.top, true).into_bytes()),
            Format::Json => diffs.push(d),
            Format::Svg if groups.len() == 2 => {
                out = diff::flame_graph(
                    &folded_base,
                    &folded_other,
                    &format!("{} → {} (red: grew, blue: shrank)", base.name, other.name),
                )?
            }
            Format::Svg => bail!(
                "a differential flame graph shows two sides, and there are {}: give two run files",
                groups.len()
            ),
            // With two files --run-id picks a run of each: still two sides.
            Format::Folded | Format::Speedscope if cmd.runs.len() == 2 => bail!(
                "--format folded and speedscope show one profile, and two files are a diff: give \
                 one run file (with --run-id N if it holds several), or --format svg for a \
                 differential flame graph"
            ),
            Format::Folded | Format::Speedscope => bail!(
                "--format folded and speedscope show one profile: pick a run with --run-id, or \
                 --format svg for a differential flame graph of two variants"
            ),
            other => return Err(PROFILE.refuse(other)),
        }
        if cmd.format != Format::Json {
            out.push(b'\n');
        }
    }
    if cmd.format == Format::Json {
        let value = match diffs.len() {
            1 => serde_json::to_value(&diffs[0])?,
            _ => serde_json::to_value(&diffs)?,
        };
        out = (serde_json::to_string_pretty(&value)? + "\n").into_bytes();
    }
    Ok(out)
}
