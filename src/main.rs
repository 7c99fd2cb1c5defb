mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser;
use cmd::{Cli, Outcome};

/// framelab failed (bad input, unreadable file), or a comparison found the regression
/// `--fail-on-regression` asked about: 1. Usage errors: 2 (clap). The measured command
/// crashed, failed, broke the SDK's limits, or did not print a `--metric` asked for, or the
/// recording is incomplete (its session was removed, the program damaged a ring): 3.
/// Interrupted by Ctrl-C: 130.
const EXIT_COMMAND_FAILED: u8 = 3;
const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    cmd::said::install();
    let cli = Cli::parse();
    match cmd::dispatch(cli.command) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::FAILURE,
        Ok(Outcome::CommandFailed) => ExitCode::from(EXIT_COMMAND_FAILED),
        Ok(Outcome::Interrupted) => ExitCode::from(EXIT_INTERRUPTED),
        // The reader of the output went away (`| head`): what it wanted it has.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            if framelab::usage::is_usage(&error) {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Standard output's reader went away; a broken pipe elsewhere is an error.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    (error.chain()).any(|cause| cause.is::<framelab::destination::StdoutClosed>())
}

/// The whole cause chain on one line: names and text from a file or a program in it
/// have their control characters escaped and a long message is cut (`display`).
fn one_line(error: &anyhow::Error) -> String {
    let text = format!("{error:#}").replace('\n', " ");
    framelab::display::text(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::is_broken_pipe;
    use framelab::destination::StdoutClosed;

    /// Only standard output's closed pipe ends framelab quietly; a dropped database
    /// connection's broken pipe is an error with its message.
    #[test]
    fn only_a_closed_stdout_is_quiet() {
        let closed = anyhow::Error::new(StdoutClosed).context("printing the report");
        assert!(is_broken_pipe(&closed));
        let elsewhere = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("adding to postgres://db:5432");
        assert!(!is_broken_pipe(&elsewhere));
    }
}
