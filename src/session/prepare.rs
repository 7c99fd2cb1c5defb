//! `bench --prepare`: a shell command run after the run's services are ready and before
//! its command starts, unmeasured (it ends before the run's clock starts). A failure
//! fails that run, with the last lines the command wrote on stderr.

use std::io::Write;
use std::process::{Command, Stdio};

/// What to run before the command, `{KEY}` already expanded.
#[derive(Clone, Debug, Default)]
pub struct Prepare {
    pub command: String,
    /// Added to its environment (`FRAMELAB_VARIANT`, `FRAMELAB_EXPERIMENT`).
    pub env: Vec<(String, String)>,
}

/// Lines of a failing `--prepare`'s stderr kept in the failure.
const TAIL_LINES: usize = 3;

/// Runs it with `sh -c`; its stderr is passed on and its last lines kept. `Err` says how
/// it failed, in one line.
pub fn run(prepare: &Prepare) -> Result<(), String> {
    let output = Command::new("sh")
        .args(["-c", &prepare.command])
        .envs(prepare.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("--prepare could not start sh ({e}): {}", prepare.command))?;
    // What it said still reaches the terminal, as it did before it was captured.
    let _ = std::io::stderr().write_all(&output.stderr);
    if output.status.success() {
        return Ok(());
    }
    let mut failure = format!("--prepare failed ({})", output.status);
    let tail = stderr_tail(&output.stderr);
    if !tail.is_empty() {
        failure.push_str(&format!(": {tail}"));
    }
    Err(failure)
}

/// The last non-empty lines of `stderr`, joined by " / ".
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_says_its_status_and_last_stderr_lines() {
        let prepare = |command: &str| Prepare {
            command: command.into(),
            env: vec![("WHO".into(), "v2".into())],
        };
        assert!(run(&prepare("exit 0")).is_ok());
        let why = run(&prepare(
            "echo a >&2; echo b >&2; echo c >&2; echo $WHO >&2; exit 3",
        ))
        .unwrap_err();
        assert_eq!(why, "--prepare failed (exit status: 3): b / c / v2");
        assert_eq!(
            run(&prepare("exit 1")).unwrap_err(),
            "--prepare failed (exit status: 1)"
        );
    }
}
