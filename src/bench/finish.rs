//! A bench from its first run to what it leaves for the command line to show: the
//! experiment run (`super::run`), its runs added to the history store, and whether it has
//! variants to compare or only runs to list.

use std::path::Path;

use anyhow::Result;

use super::{BenchOptions, BenchOutcome, ExperimentSpec, Progress};
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

/// Runs the experiment, telling `progress` as it goes; `runs_done` is called as soon as
/// the runs are over (the command line restores its signals there, so what follows stays
/// interruptible). Unless the bench was stopped, the kept file's runs are then added to
/// `history`: before the comparison, which may refuse while the runs are good.
pub fn run_to_end(
    options: &BenchOptions,
    history: Option<&HistoryTarget>,
    progress: &mut dyn Progress,
    runs_done: impl FnOnce(),
) -> Result<Finished> {
    let outcome = super::run(options, progress)?;
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

/// One line for each variant (at one set of parameter values) every run of which failed:
/// how they failed and a run to look at. Such a variant has nothing to compare.
pub fn every_run_failed(path: &Path) -> Result<Vec<String>> {
    use crate::experiment::{ExperimentRun, RunStatus};
    let Some(experiment) = store::load_experiment(path)? else {
        return Ok(Vec::new());
    };
    let mut groups: Vec<Vec<&ExperimentRun>> = Vec::new();
    for run in experiment
        .runs
        .iter()
        .filter(|r| r.status != RunStatus::Warmup)
    {
        match (groups.iter_mut()).find(|g| g[0].variant == run.variant && g[0].params == run.params)
        {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    let mut lines = Vec::new();
    for group in groups {
        if group.iter().any(|r| r.status != RunStatus::Failed) {
            continue;
        }
        let mut how: Vec<&str> = Vec::new();
        for failure in group.iter().filter_map(|r| r.failure.as_deref()) {
            if !how.contains(&failure) {
                how.push(failure);
            }
        }
        let at = crate::compare::describe_params(&group[0].params);
        lines.push(format!(
            "every run of variant '{}'{} failed ({} run{}: {}): nothing to compare it with; \
             see one with framelab report {} --run-id {}",
            group[0].variant,
            if at.is_empty() {
                String::new()
            } else {
                format!(" [{at}]")
            },
            group.len(),
            if group.len() == 1 { "" } else { "s" },
            if how.is_empty() {
                "no reason kept".to_owned()
            } else {
                how.join("; ")
            },
            path.display(),
            group[0].run_id
        ));
    }
    Ok(lines)
}

/// What a finished bench shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// Ctrl-C stopped it: nothing is shown; `kept`: a file is left to resume.
    Stopped { kept: bool },
    /// One variant at one set of parameter values: its runs, listed.
    Runs,
    /// The variants (or parameter values) compared.
    Comparison,
}

/// How a finished bench ends the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchExit {
    Done,
    /// A `--cleanup` command failed (the runs are good).
    CleanupFailed,
    /// A run failed, or a `--metric` could not be read in one.
    RunsFailed,
    /// Ctrl-C stopped it before every run was done.
    Interrupted,
}

impl Finished {
    /// What there is to show: nothing after a stop, else the runs or their comparison.
    pub fn shown(&self) -> Shown {
        match (self.outcome.stopped, self.single_variant) {
            (true, _) => Shown::Stopped {
                kept: self.outcome.file.kept(),
            },
            (false, true) => Shown::Runs,
            (false, false) => Shown::Comparison,
        }
    }

    /// The exit: a stop first, then failed runs, then a failed cleanup.
    pub fn exit(&self) -> BenchExit {
        let outcome = &self.outcome;
        if outcome.stopped {
            BenchExit::Interrupted
        } else if outcome.failed_runs > 0 || outcome.unread_metrics > 0 {
            BenchExit::RunsFailed
        } else if !outcome.cleanup_failures.is_empty() {
            BenchExit::CleanupFailed
        } else {
            BenchExit::Done
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destination::RunFile;

    fn finished(single_variant: bool, change: impl FnOnce(&mut BenchOutcome)) -> Finished {
        let path = std::path::PathBuf::from("bench.framelab");
        let mut outcome = BenchOutcome {
            path: path.clone(),
            file: RunFile::Keep(path),
            total_runs: 6,
            finished_runs: 6,
            failed_runs: 0,
            warmup_runs: 0,
            unread_metrics: 0,
            cleanup_failures: Vec::new(),
            stopped: false,
        };
        change(&mut outcome);
        Finished {
            outcome,
            single_variant,
            history_said: Vec::new(),
        }
    }

    #[test]
    fn a_bench_of_one_variant_lists_its_runs_and_of_several_compares_them() {
        assert_eq!(finished(true, |_| {}).shown(), Shown::Runs);
        assert_eq!(finished(false, |_| {}).shown(), Shown::Comparison);
        assert_eq!(finished(false, |_| {}).exit(), BenchExit::Done);
    }

    /// A stopped bench shows nothing and says whether a file is left to resume.
    #[test]
    fn a_stopped_bench_shows_nothing_and_is_interrupted() {
        let stop = |o: &mut BenchOutcome| {
            o.stopped = true;
            o.finished_runs = 2;
            o.failed_runs = 1;
        };
        let kept = finished(false, stop);
        assert_eq!(kept.shown(), Shown::Stopped { kept: true });
        assert_eq!(kept.exit(), BenchExit::Interrupted);
        let mut unkept = finished(false, stop);
        unkept.outcome.file = RunFile::resolve(std::path::Path::new("/dev/null")).unwrap();
        assert_eq!(unkept.shown(), Shown::Stopped { kept: false });
    }

    /// Failed runs outrank a failed cleanup: the measurement is what is wrong.
    #[test]
    fn failed_runs_come_before_a_failed_cleanup() {
        let cleanup = |o: &mut BenchOutcome| o.cleanup_failures.push("rm: no".into());
        assert_eq!(finished(false, cleanup).exit(), BenchExit::CleanupFailed);
        let both = finished(false, |o| {
            cleanup(o);
            o.failed_runs = 1;
        });
        assert_eq!(both.exit(), BenchExit::RunsFailed);
        let unread = finished(true, |o| o.unread_metrics = 2);
        assert_eq!(unread.exit(), BenchExit::RunsFailed);
        assert_eq!(unread.shown(), Shown::Runs);
    }
}
