//! `framelab profile RUN` and `framelab profile A B`: loading, filtering, rendering, writing.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use super::diff::{self, Side};
use super::render::{self, ProfileFormat};
use super::summary::{self, Filters};
use super::Profile;
use crate::destination::{write_whole, Target};
use crate::model::Run;

pub struct ProfileCommand {
    /// One file: its profile; two: the diff from the first to the second.
    pub runs: Vec<PathBuf>,
    pub run_id: Option<i64>,
    pub filters: Filters,
    pub format: ProfileFormat,
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
    let target = Target::resolve(&cmd.output)?;
    for input in &cmd.runs {
        target.refuse_overwriting(&cmd.output, input)?;
    }
    let bytes = match cmd.runs.as_slice() {
        [one] => one_run(cmd, one)?,
        [a, b] => two_sides(cmd, a, b)?,
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
        ProfileFormat::Text | ProfileFormat::Markdown | ProfileFormat::Json => {
            let s = summary::summarize(&run, &profile, &cmd.filters, &sel);
            match cmd.format {
                ProfileFormat::Json => render::summary_json(&s),
                md => render::summary_text(&s, cmd.top, md == ProfileFormat::Markdown),
            }
            .into_bytes()
        }
        ProfileFormat::Folded => render::folded(&profile, &sel.samples, &stage_of).into_bytes(),
        ProfileFormat::Svg => render::svg(
            &render::folded(&profile, &sel.samples, &stage_of),
            &format!(
                "{} · {} at {} Hz",
                run.meta.name, profile.event, profile.frequency_hz
            ),
        )?,
        ProfileFormat::Speedscope => {
            render::speedscope(&profile, &sel.samples, &stage_of, &run.meta.name).into_bytes()
        }
    })
}

/// One side of a diff: its runs' samples pooled, by function and as folded stacks.
fn side(cmd: &ProfileCommand, path: &Path) -> Result<(Side, String)> {
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut side = Side::new(&name);
    let mut folded = String::new();
    for (run, profile) in load(path, cmd.run_id)? {
        let sel = summary::select(&run, &profile, &cmd.filters)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        side.add(&summary::table(
            &profile,
            &name,
            &sel.samples,
            sel.samples.len() as u64,
        ));
        let stage_of = |i: usize| sel.stage(&run, i).to_owned();
        folded.push_str(&render::folded(&profile, &sel.samples, &stage_of));
    }
    Ok((side, folded))
}

fn two_sides(cmd: &ProfileCommand, a: &Path, b: &Path) -> Result<Vec<u8>> {
    let (side_a, folded_a) = side(cmd, a)?;
    let (side_b, folded_b) = side(cmd, b)?;
    let d = diff::diff(&side_a, &side_b);
    Ok(match cmd.format {
        ProfileFormat::Text => diff::render(&d, cmd.top, false).into_bytes(),
        ProfileFormat::Markdown => diff::render(&d, cmd.top, true).into_bytes(),
        ProfileFormat::Json => (serde_json::to_string_pretty(&d)? + "\n").into_bytes(),
        ProfileFormat::Svg => diff::flame_graph(
            &folded_a,
            &folded_b,
            &format!(
                "{} → {} (red: grew, blue: shrank)",
                side_a.name, side_b.name
            ),
        )?,
        ProfileFormat::Folded | ProfileFormat::Speedscope => bail!(
            "--format folded and speedscope show one profile: run framelab profile on each file"
        ),
    })
}
