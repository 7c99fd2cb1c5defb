//! `framelab run` (and `demo`) from the launch to what the command line shows: the command
//! recorded in a session, its HTML page written, its report rendered, the run added to the
//! history store, and how the run ended as the exit to give. A room of its own above
//! `session`: it uses the report and the history, which the session never does.

use std::path::PathBuf;

use anyhow::Result;

use crate::analyze::notes::describe_signal;
use crate::history::commands::HistoryTarget;
use crate::model::{EndReason, ExitInfo, Run};
use crate::render::Format;
use crate::session::{self, RunOptions};
use crate::{report, store};

/// A run as asked, checked: every refusal that can come before the launch has come.
pub struct RunRequest {
    pub options: RunOptions,
    /// The report's format (text, Markdown, JSON).
    pub format: Format,
    /// Colour in the text report.
    pub color: bool,
    /// `--html FILE`: the run's page is written there.
    pub page: Option<PathBuf>,
    /// `--history STORE`: the kept run is added there.
    pub history: Option<HistoryTarget>,
}

/// A run recorded and reported: what the command line shows, and the exit to give.
pub struct Reported {
    /// The report, rendered in the format asked.
    pub report: String,
    pub path: PathBuf,
    /// False for `-o /dev/null`: the file was temporary and is gone.
    pub kept: bool,
    /// What adding the run to `--history` said, or why it failed: shown after the report.
    pub history: Result<Vec<String>>,
    /// Names the SDK refused (past its limit of names per process).
    pub names_refused: u64,
    /// `--metric`s that could not be read.
    pub unread_metrics: usize,
    pub exit: RunExit,
    /// How the command ended or the recording broke, on one line, when that failed the
    /// run (exit 3): the report's notes say it too, but stdout may be a file or JSON.
    pub failure: Option<String>,
}

/// How a recorded run ends the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunExit {
    Done,
    /// The command crashed or failed, broke the SDK's limits, did not print a `--metric`
    /// asked for, or the recording is incomplete.
    CommandFailed,
    /// Ctrl-C (or SIGTERM/SIGHUP): what was recorded is kept.
    Interrupted,
}

/// Records the command, writes its page, renders its report and adds it to the history.
/// `runs_done` is called as soon as the run file is final (the command line restores its
/// signals there, so what follows stays interruptible).
pub fn run_and_report(request: &RunRequest, runs_done: impl FnOnce()) -> Result<Reported> {
    let outcome = session::run(&request.options)?;
    runs_done();
    let (analysis, run) = match &request.page {
        Some(file) => {
            let stored = store::open_run(&outcome.path, Some(outcome.run_id))?;
            let (page, analysis) = report::html::run_html(&stored.head, &stored)?;
            report::html::write(file, &page, Some(&outcome.path))?;
            (analysis, stored.head)
        }
        None => report::stored::analyze_stored(&outcome.path, Some(outcome.run_id))?,
    };
    let report = report::render(&analysis, request.format, request.color)?;
    let kept = outcome.file.kept();
    let history = match (&request.history, kept) {
        (Some(history), true) => history.add(&outcome.path),
        _ => Ok(Vec::new()),
    };
    let unread_metrics = outcome.metrics.iter().filter(|m| m.value.is_none()).count();
    let exit = run_exit(
        &run,
        outcome.end_reason,
        outcome.exit.as_ref(),
        unread_metrics,
    );
    Ok(Reported {
        report,
        path: outcome.path.clone(),
        kept,
        history,
        names_refused: run.meta.names_refused,
        unread_metrics,
        exit,
        failure: (exit == RunExit::CommandFailed)
            .then(|| failure(&run, outcome.exit.as_ref()))
            .flatten(),
    })
}

/// The command's crash or non-zero exit, or else an incomplete recording, as one line.
/// Refused names and unread metrics have lines of their own.
fn failure(run: &Run, exit: Option<&ExitInfo>) -> Option<String> {
    if let Some(exit) = exit {
        if exit.crashed {
            let how = exit
                .signal
                .map(|s| format!(": killed by {}", describe_signal(s)))
                .unwrap_or_default();
            return Some(format!(
                "the command crashed{how}; the report covers what was recorded before the crash"
            ));
        }
        if let Some(code) = exit.code.filter(|&c| c != 0) {
            return Some(format!(
                "the command exited with code {code}; the report covers what it recorded"
            ));
        }
    }
    incomplete(run).then(|| "the recording is incomplete: the report's notes say how".into())
}

/// A recording the program damaged, with rings framelab could not read, or whose session
/// was removed.
fn incomplete(run: &Run) -> bool {
    let facts = &run.meta.session;
    facts.session_lost_ns.is_some() || facts.corrupt_rings > 0 || facts.foreign_rings > 0
}

/// The exit a run gives: interrupted first, then anything that makes it a failure.
fn run_exit(
    run: &Run,
    end_reason: EndReason,
    exit: Option<&ExitInfo>,
    unread_metrics: usize,
) -> RunExit {
    let failed = run.meta.names_refused > 0
        || incomplete(run)
        || unread_metrics > 0
        || exit.is_some_and(|e| e.crashed || e.code.is_some_and(|c| c != 0));
    if end_reason == EndReason::Interrupted {
        RunExit::Interrupted
    } else if failed {
        RunExit::CommandFailed
    } else {
        RunExit::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::reference_run;

    fn exited(code: i32) -> ExitInfo {
        ExitInfo {
            code: Some(code),
            signal: None,
            crashed: false,
        }
    }

    #[test]
    fn a_clean_exit_is_done_and_a_failing_one_fails() {
        let run = reference_run();
        let exit = |code| run_exit(&run, EndReason::Exited, Some(&exited(code)), 0);
        assert_eq!(exit(0), RunExit::Done);
        assert_eq!(exit(3), RunExit::CommandFailed);
        let crashed = ExitInfo {
            code: None,
            signal: Some(libc::SIGSEGV),
            crashed: true,
        };
        assert_eq!(
            run_exit(&run, EndReason::Exited, Some(&crashed), 0),
            RunExit::CommandFailed
        );
        // A command framelab stopped at the window's end has no exit of its own.
        assert_eq!(run_exit(&run, EndReason::Duration, None, 0), RunExit::Done);
    }

    #[test]
    fn the_recording_itself_can_fail_a_run_that_exited_cleanly() {
        let clean = Some(exited(0));
        let mut run = reference_run();
        assert_eq!(
            run_exit(&run, EndReason::Exited, clean.as_ref(), 1),
            RunExit::CommandFailed,
            "an unread --metric"
        );
        run.meta.names_refused = 2;
        assert_eq!(
            run_exit(&run, EndReason::Exited, clean.as_ref(), 0),
            RunExit::CommandFailed
        );
        let mut run = reference_run();
        run.meta.session.corrupt_rings = 1;
        assert_eq!(
            run_exit(&run, EndReason::Exited, clean.as_ref(), 0),
            RunExit::CommandFailed
        );
        let mut run = reference_run();
        run.meta.session.foreign_rings = 1;
        assert_eq!(
            run_exit(&run, EndReason::Exited, clean.as_ref(), 0),
            RunExit::CommandFailed
        );
        let mut run = reference_run();
        run.meta.session.session_lost_ns = Some(5);
        assert_eq!(
            run_exit(&run, EndReason::Exited, clean.as_ref(), 0),
            RunExit::CommandFailed
        );
    }

    /// A crash, a non-zero exit and a broken recording each have their line for stderr
    /// (exit 3 said nothing there: with `--format json` or stdout in a file, no word of it).
    #[test]
    fn a_failed_run_says_why_in_one_line() {
        let run = reference_run();
        let crashed = ExitInfo {
            code: None,
            signal: Some(libc::SIGSEGV),
            crashed: true,
        };
        assert_eq!(
            failure(&run, Some(&crashed)).unwrap(),
            "the command crashed: killed by SIGSEGV (signal 11); the report covers what was recorded before the crash"
        );
        let line = failure(&run, Some(&exited(4))).unwrap();
        assert!(
            line.starts_with("the command exited with code 4;"),
            "{line}"
        );
        assert_eq!(failure(&run, Some(&exited(0))), None);
        assert_eq!(failure(&run, None), None);
        let mut broken = reference_run();
        broken.meta.session.corrupt_rings = 1;
        let line = failure(&broken, Some(&exited(0))).unwrap();
        assert!(line.contains("recording is incomplete"), "{line}");
    }

    /// Ctrl-C wins over every failure: what was recorded is kept, and said so.
    #[test]
    fn an_interrupted_run_is_interrupted_whatever_else_went_wrong() {
        let mut run = reference_run();
        run.meta.names_refused = 1;
        assert_eq!(
            run_exit(&run, EndReason::Interrupted, Some(&exited(1)), 1),
            RunExit::Interrupted
        );
    }
}
