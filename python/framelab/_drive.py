"""Driving the `framelab` binary: run, bench, report, compare, with parsed results.

The binary is not shipped in the package (it links SQLite, an H.264 encoder and the
samplers: a build of its own). It is `$FRAMELAB_BIN` when set, else `framelab` on PATH
(`cargo install --locked --path .` in a framelab checkout puts it in ~/.cargo/bin).
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from ._errors import BinaryNotFound, RunFailed

BIN_ENV = "FRAMELAB_BIN"


def find_binary():
    """The path of the framelab program: $FRAMELAB_BIN, else `framelab` on PATH."""
    given = os.environ.get(BIN_ENV)
    if given:
        path = given if os.sep in given else shutil.which(given)
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise BinaryNotFound(
            f"{BIN_ENV}={given} is not an executable file: point it at the framelab binary "
            f"(target/release/framelab of a checkout) or unset it to use PATH"
        )
    path = shutil.which("framelab")
    if path is None:
        raise BinaryNotFound(
            "the framelab program is not on PATH: install it with `cargo install --locked "
            f"--path .` in a framelab checkout, or set {BIN_ENV} to its path"
        )
    return path


def _error_line(stderr):
    """framelab's one-line message: its `error: ...` line, else the last line it printed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line[len("error:"):].strip()
    return lines[-1] if lines else "framelab printed no message"


def _framelab(args, timeout=None, env=None):
    """Runs framelab with `args`; returns the CompletedProcess (text, both streams captured)."""
    return subprocess.run(
        [find_binary(), *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        env=env,
    )


def _json_or_fail(done, what):
    if done.returncode != 0:
        raise RunFailed(_error_line(done.stderr), done.returncode, done.stderr)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise RunFailed(f"{what} printed no JSON ({e})", done.returncode, done.stderr) from None


def report(path, run_id=None):
    """`framelab report --format json` of run `run_id` (default: the latest) as a dict: the
    same schema (`framelab.report/3`, docs/reading-the-report.md)."""
    if run_id is None:
        from ._read import latest_run_id

        run_id = latest_run_id(path)
    args = ["report", os.fspath(path), "--format", "json", "--run-id", str(run_id)]
    return _json_or_fail(_framelab(args), "framelab report")


@dataclass
class RunResult:
    """A finished `framelab run`: the run file, its report (a dict), the exit status and
    what framelab and the command printed."""

    path: str
    report: dict
    exit_code: int
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)

    def load(self, backend=None):
        """The run file as a `framelab.Run` (DataFrames)."""
        from ._read import load

        return load(self.path, run_id=self.report.get("run_id"), backend=backend)


def _duration(value, flag):
    """'10s' as is; a number is seconds."""
    if value is None:
        return []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = f"{value}s"
    return [flag, str(value)]


def run(
    command,
    *,
    fps=None,
    duration=None,
    warmup=None,
    budget=None,
    name=None,
    output=None,
    shell=False,
    args=(),
    check=True,
    timeout=None,
    env=None,
):
    """`framelab run` of `command` (a list of strings, or one string with `shell=True`).

    Durations are framelab's text (`"10s"`, `"250ms"`) or seconds as a number. `output` is
    the run file (default: `NAME-TIMESTAMP.framelab` here, as the CLI names it; a Python
    script run by an interpreter, `[sys.executable, "pipeline.py"]`, names the run and the
    file after the script: `pipeline`, `pipeline-….framelab`); `args` are
    more `framelab run` options (`["--metric", "..."]`). Returns a `RunResult` with the
    report as a dict. Raises `RunFailed` with framelab's one-line message when framelab
    could not run it (exit 1 or 2) and, with `check=True`, when the command failed (exit 3;
    the exception carries the report and the path).
    """
    if isinstance(command, str):
        command = [command]
    command = [os.fspath(c) for c in command]
    if not command:
        raise ValueError("framelab.run needs a command: a list of its words")
    if name is None:
        name = _script_name(command)
    if output is None:
        stem = name or os.path.basename(command[0]) or "run"
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
        output = f"{stem}-{stamp}.framelab"
    output = os.fspath(output)
    # The text report: with `--format json` framelab sends the command's stdout to its
    # stderr, and `stdout` is to hold what the command printed (the report is read from
    # the file below).
    argv = ["run", "-o", output]
    if fps is not None:
        argv += ["--fps", str(fps)]
    argv += _duration(duration, "--duration") + _duration(warmup, "--warmup")
    argv += _duration(budget, "--budget")
    if name is not None:
        argv += ["--name", name]
    if shell:
        argv.append("--shell")
    argv += [*map(str, args), "--", *command]
    done = _framelab(argv, timeout=timeout, env=env)
    if done.returncode not in (0, 3) or not os.path.exists(output):
        raise RunFailed(_error_line(done.stderr), done.returncode, done.stderr)
    result = RunResult(output, report(output), done.returncode, done.stdout, done.stderr)
    if done.returncode == 3 and check:
        raise RunFailed(
            f"the measured command failed or the recording is incomplete: "
            f"{_exit_words(result.report)} (the run is in {output}; check=False returns it)",
            3,
            done.stderr,
            report=result.report,
            path=output,
        )
    return result


def _script_name(command):
    """`pipeline` for `[python3, "-u", "pipeline.py", ...]` (and `-m pkg.tool` gives `tool`):
    a Python program's run is named after the program, not after the interpreter that runs
    every one of them. `None` for any other command (framelab names it after its program)."""
    program = os.path.basename(command[0])
    if not (program.startswith("python") or os.path.realpath(command[0]) == os.path.realpath(sys.executable)):
        return None
    words = iter(command[1:])
    for word in words:
        if word == "-m":
            module = next(words, "")
            return module.rsplit(".", 1)[-1] or None
        if word in ("-c", "-"):
            return None
        if word.startswith("-"):
            continue
        stem = os.path.splitext(os.path.basename(word))[0]
        return stem or None
    return None


def _exit_words(rep):
    exit_ = rep.get("exit") or {}
    if exit_.get("signal") is not None:
        return f"killed by signal {exit_['signal']}"
    if exit_.get("code") not in (None, 0):
        return f"exit code {exit_['code']}"
    # The command exited 0: framelab's exit 3 then means a --metric went unread or the
    # recording is incomplete. Name the metric first; the first note may be only about
    # the window (a command that ended before --duration), not why the run failed.
    unread = [m["failure"] for m in rep.get("metrics") or [] if m.get("failure")]
    if unread:
        return f"metric {unread[0]}" + (f" (and {len(unread) - 1} more)" if len(unread) > 1 else "")
    notes = rep.get("notes") or []
    return notes[0] if notes and isinstance(notes[0], str) else "see the report's notes"


def bench(variants, *, runs, output, fps=None, duration=None, warmup=None, params=None,
          args=(), timeout=None, env=None):
    """`framelab bench`: `variants` is {name: command string}, `params` {key: [values]}.
    Writes the experiment to `output` and returns its comparison (`compare(output)`)."""
    argv = ["bench", "-n", str(runs), "-o", os.fspath(output)]
    if fps is not None:
        argv += ["--fps", str(fps)]
    argv += _duration(duration, "--duration") + _duration(warmup, "--warmup")
    for key, values in (params or {}).items():
        argv += ["--param", f"{key}={','.join(map(str, values))}"]
    for name, command in variants.items():
        argv += ["--variant", f"{name}={command}"]
    argv += list(map(str, args))
    done = _framelab(argv, timeout=timeout, env=env)
    if done.returncode != 0:
        raise RunFailed(_error_line(done.stderr), done.returncode, done.stderr)
    return compare(output)


def compare(*files, variants=None, show=None, args=()):
    """`framelab compare --format json` as a dict: an experiment file, or run files (one
    variant each), or `variants={name: file}`. `show` lists the metrics to judge."""
    argv = ["compare", *map(os.fspath, files), "--format", "json"]
    for name, path in (variants or {}).items():
        argv += ["--variant", f"{name}={os.fspath(path)}"]
    if show:
        argv += ["--show", ",".join(show)]
    argv += list(map(str, args))
    return _json_or_fail(_framelab(argv), "framelab compare")
