"""The framelab SDK from Python through ctypes and the C ABI (libframelab_probe.so): the
path Python programs took before the `framelab` package, kept as the baseline of
bench_span.py. Use the package instead (docs/python.md).

    import ctypes_probe as fl
    encode = fl.stage("encode")            # once
    with fl.span(encode, frame):           # CPU work of one frame
        ...
    fl.span_ns(convert, frame, start_ns, end_ns)   # times the program already has
                                                   # (CLOCK_MONOTONIC ns: time.monotonic_ns())

The library is found through FRAMELAB_PROBE_LIB, next to this file, or in
target/release of the repository (`cargo build -p framelab-probe --release`). Without a
framelab session every call does nothing. A ctypes call costs about a microsecond: fine
for per-frame stages, not for per-pixel ones.
"""

import ctypes
import os
import time
from ctypes import POINTER, Structure, c_char_p, c_int, c_int64, c_uint32, c_uint64


class _Span(Structure):
    # Matches fl_span in framelab.h.
    _fields_ = [
        ("frame", c_uint64),
        ("start", c_uint64),
        ("stage", c_uint32),
        ("live", c_uint32),
    ]


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.environ.get("FRAMELAB_PROBE_LIB"),
        os.path.join(here, "libframelab_probe.so"),
        os.path.join(here, "..", "..", "target", "release", "libframelab_probe.so"),
        "libframelab_probe.so",
    ]
    errors = []
    for path in filter(None, candidates):
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise OSError(
        "libframelab_probe.so not found (build it with `cargo build -p framelab-probe "
        "--release` or set FRAMELAB_PROBE_LIB): " + "; ".join(errors)
    )


_lib = _load()
_lib.fl_stage.argtypes = [c_char_p]
_lib.fl_stage.restype = c_uint32
_lib.fl_counter.argtypes = [c_char_p]
_lib.fl_counter.restype = c_uint32
_lib.fl_begin.argtypes = [c_uint32, c_uint64]
_lib.fl_begin.restype = _Span
_lib.fl_end.argtypes = [POINTER(_Span)]
_lib.fl_end.restype = None
_lib.fl_span_ns.argtypes = [c_uint32, c_uint64, c_uint64, c_uint64]
_lib.fl_span_ns.restype = None
_lib.fl_count.argtypes = [c_uint32, c_uint64, c_int64]
_lib.fl_count.restype = None
_lib.fl_enabled.argtypes = []
_lib.fl_enabled.restype = c_int


def stage(name: str) -> int:
    """Interns a stage name; call once, keep the id."""
    return _lib.fl_stage(name.encode())


def counter(name: str) -> int:
    return _lib.fl_counter(name.encode())


def enabled() -> bool:
    """True under `framelab run`."""
    return _lib.fl_enabled() != 0


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns: the clock span_ns expects."""
    return time.monotonic_ns()


def span_ns(stage_id: int, frame: int, start_ns: int, end_ns: int) -> None:
    """Records a span from two CLOCK_MONOTONIC times the program already has."""
    _lib.fl_span_ns(stage_id, frame, start_ns, end_ns)


def count(counter_id: int, frame: int, value: int) -> None:
    _lib.fl_count(counter_id, frame, value)


class span:
    """`with span(stage_id, frame):` records the block as one stage of the frame."""

    __slots__ = ("_stage", "_frame", "_span")

    def __init__(self, stage_id: int, frame: int):
        self._stage = stage_id
        self._frame = frame

    def __enter__(self):
        self._span = _lib.fl_begin(self._stage, self._frame)
        return self

    def __exit__(self, *exc):
        _lib.fl_end(ctypes.byref(self._span))
        return False
