"""Shared fixtures: the framelab binary, and running a Python program under `framelab run`."""

import os
import sys
import textwrap

import pytest

import framelab


@pytest.fixture(scope="session")
def framelab_bin():
    """The framelab binary the tests drive: $FRAMELAB_BIN (tests/e2e/sdk/python.rs sets it to
    the one cargo built), else PATH."""
    try:
        return framelab.find_binary()
    except framelab.BinaryNotFound as e:
        if os.environ.get("FRAMELAB_REQUIRE_BIN"):
            raise
        pytest.skip(f"no framelab binary: {e}")


@pytest.fixture
def run_python(tmp_path, framelab_bin):
    """Runs Python source under `framelab run`; returns (RunResult, Run)."""

    def go(source, name="prog", **options):
        script = tmp_path / f"{name}.py"
        script.write_text(textwrap.dedent(source))
        result = framelab.run(
            [sys.executable, str(script)], output=tmp_path / f"{name}.framelab", **options
        )
        return result, result.load()

    return go
