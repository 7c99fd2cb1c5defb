"""framelab from Python.

Instrument (a no-op without `framelab run` around the program)::

    import framelab
    encode = framelab.Stage("encode")
    with encode.span(frame):
        ...

Read a run file, drive the `framelab` binary::

    run = framelab.load("run.framelab")
    run.spans, run.frames, run.stages        # DataFrames, units in the column names
    framelab.report("run.framelab")          # `framelab report --format json` as a dict
    result = framelab.run(["./pipeline"], fps=60, duration="10s")

Everything is documented in docs/python.md of the framelab repository.
"""

from ._native import (
    MAX_NAME_BYTES,
    Counter,
    Event,
    Laps,
    Pacer,
    Queue,
    Span,
    SpanError,
    Wake,
    enabled,
    names_refused,
    now_ns,
)
from ._instrument import Stage, timed
from ._errors import BinaryNotFound, FileError, FramelabError, RunFailed
from ._experiment import experiment
from ._read import Run, load
from ._drive import bench, compare, find_binary, report, run

__version__ = "0.1.0"

# Tracebacks name the exceptions as users import them.
for _error in (SpanError, FramelabError, FileError, BinaryNotFound, RunFailed):
    _error.__module__ = "framelab"
del _error

__all__ = [
    "MAX_NAME_BYTES",
    "BinaryNotFound",
    "Counter",
    "Event",
    "FileError",
    "FramelabError",
    "Laps",
    "Pacer",
    "Run",
    "RunFailed",
    "Span",
    "SpanError",
    "Stage",
    "Wake",
    "bench",
    "compare",
    "enabled",
    "experiment",
    "find_binary",
    "load",
    "names_refused",
    "now_ns",
    "report",
    "run",
    "timed",
]
