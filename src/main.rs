mod cli;
mod cmd;

use std::process::ExitCode;

use clap::error::ErrorKind;
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
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

/// Help and the version are printed as clap prints them; a usage error on one line, with
/// clap's tip and the usage it shows (its lines joined), and exit 2.
fn usage_error(error: clap::Error) -> ExitCode {
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit();
    }
    eprintln!("{}", clap_error_line(&error.render().to_string()));
    ExitCode::from(EXIT_USAGE)
}

/// Clap's error text on one line: its paragraphs joined with "; ", the lines of a list
/// (the arguments missing) with spaces, its pointer to --help left out.
fn clap_error_line(text: &str) -> String {
    let mut line = String::new();
    let mut paragraph_start = true;
    for row in text.lines() {
        let row_text = row.trim();
        if row_text.is_empty() {
            paragraph_start = true;
            continue;
        }
        if row_text.starts_with("For more information") {
            continue;
        }
        if !line.is_empty() {
            line.push_str(if paragraph_start { "; " } else { " " });
        }
        line.push_str(&row_text.replacen("Usage:", "usage:", 1));
        paragraph_start = false;
    }
    framelab::display::text(&line).into_owned()
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
    use super::{clap_error_line, is_broken_pipe};
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

    #[test]
    fn a_clap_error_is_one_line() {
        let unknown = "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a value, use '-- --foo'\n\nUsage: framelab run [OPTIONS] -- <CMD>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_error_line(unknown),
            "error: unexpected argument '--foo' found; tip: to pass '--foo' as a value, use '-- --foo'; usage: framelab run [OPTIONS] -- <CMD>..."
        );
        let missing = "error: the following required arguments were not provided:\n  <RUN>\n\nUsage: framelab report <RUN>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_error_line(missing),
            "error: the following required arguments were not provided: <RUN>; usage: framelab report <RUN>"
        );
    }
}
