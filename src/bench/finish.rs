//! A bench from its first run to what it leaves for the command line to show: the
//! experiment run (`super::run`), its runs added to the history store, and whether it has
//! variants to compare or only runs to list.

use std::path::Path;

use anyhow::Result;

use super::{BenchOptions, BenchOutcome, ExperimentSpec};
use crate::history::commands::HistoryTarget;
use crate::store;

/// A bench that ran: how it ended, and what there is to show.
#[derive(Debug)]
pub struct Finished {
    pub outcome: BenchOutcome,
    /// One variant at one set of parameter values: its runs are listed, not compared.
    /// False when the bench was stopped (nothing is shown then).
    pub single_variant: bool,
    /// What adding the runs to the history store said (first of what is shown).
    pub history_said: Vec<String>,
}

/// Runs the experiment; `runs_done` is called as soon as the runs are over (the command
/// line restores its signals there, so what follows stays interruptible). Unless the
/// bench was stopped, the kept file's runs are then added to `history`: before the
/// comparison, which may refuse while the runs are good.
pub fn run_to_end(
    options: &BenchOptions,
    history: Option<&HistoryTarget>,
    runs_done: impl FnOnce(),
) -> Result<Finished> {
    let outcome = super::run(options)?;
    runs_done();
    if outcome.stopped {
        return Ok(Finished {
            outcome,
            single_variant: false,
            history_said: Vec::new(),
        });
    }
    let history_said = match (history, outcome.file.kept()) {
        (Some(history), true) => history.add(&outcome.path)?,
        _ => Vec::new(),
    };
    let single_variant = single_variant(&outcome.path)?;
    Ok(Finished {
        outcome,
        single_variant,
        history_said,
    })
}

/// Whether the experiment is one variant at one set of parameter values.
fn single_variant(path: &Path) -> Result<bool> {
    let Some(experiment) = store::load_experiment(path)? else {
        return Ok(false);
    };
    let spec: ExperimentSpec = serde_json::from_str(&experiment.spec_json)?;
    Ok(spec.variants.len() == 1 && spec.params.is_empty())
}
