"""GPU work as stages: CUDA event pairs (PyTorch) recorded as spans on the host clock.

CUDA events measure only the time between events, on the GPU's own clock. The method
(docs/gpu.md, docs/python.md):

1. **Anchor.** With the stream idle, read CLOCK_MONOTONIC, record an event, wait for it,
   read the clock again. The event's GPU time lies between the two reads: its host time is
   their midpoint, give or take half the gap (`uncertainty_ns`).
2. **Map.** A later event's host time is the anchor's plus `anchor.elapsed_time(event)`
   (ms, converted to ns).
3. **Renew.** The GPU's and the host's clocks drift apart (tens of ppm): the anchor is taken
   again every `renew_s` seconds, between frames, when the stream is idle.

`GpuStages` wraps it: `with gpu.span(stage, frame):` records a start and an end event around
the GPU work queued in the block (it does not wait for the GPU); `gpu.flush()` waits for the
oldest pending pairs and records them on the stream's queue (`stream_queue`: a resource of
its own, so GPU time never counts as the calling thread's). PyTorch is imported only when a
`CudaClock` is made: importing this module never needs it.
"""

import time
from collections import deque

from ._instrument import Stage
from ._native import Queue


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError(
            "framelab.gpu needs PyTorch with CUDA: pip install torch (the rest of framelab "
            "works without it)"
        ) from None
    if not torch.cuda.is_available():
        raise RuntimeError("framelab.gpu: torch.cuda.is_available() is False: no CUDA device")
    return torch


def stream_queue(stream):
    """The queue of a CUDA `stream` (a `torch.cuda.Stream`), named after its device and
    stream: `gpu0.stream0` for device 0's default stream (`framelab.Queue.gpu`, the name the
    Rust and C helpers give it too). Where `GpuStages` records unless told otherwise."""
    device = getattr(stream, "device_index", None)
    if device is None:
        device = stream.device.index
    # A stream id is a signed 64-bit number in PyTorch: keep its bits.
    return Queue.gpu(int(device), int(stream.stream_id) % 2**64)


class CudaClock:
    """Maps completed CUDA events of `stream` to CLOCK_MONOTONIC nanoseconds."""

    def __init__(self, stream=None, renew_s=1.0):
        self._torch = _torch()
        self.stream = stream if stream is not None else self._torch.cuda.current_stream()
        self.renew_ns = int(renew_s * 1e9)
        self.anchors = 0
        self.worst_uncertainty_ns = 0
        self.anchor()

    def anchor(self):
        """Takes a new anchor; synchronises the stream (call between frames)."""
        torch = self._torch
        self.stream.synchronize()
        event = torch.cuda.Event(enable_timing=True)
        before = time.monotonic_ns()
        event.record(self.stream)
        event.synchronize()
        after = time.monotonic_ns()
        self.event = event
        self.host_ns = (before + after) // 2
        self.uncertainty_ns = (after - before) // 2
        self.worst_uncertainty_ns = max(self.worst_uncertainty_ns, self.uncertainty_ns)
        self.anchored_at_ns = after
        self.anchors += 1

    def maybe_renew(self):
        """Renews the anchor when it is older than `renew_s`; returns whether it did."""
        if time.monotonic_ns() - self.anchored_at_ns >= self.renew_ns:
            self.anchor()
            return True
        return False

    def to_host_ns(self, event):
        """CLOCK_MONOTONIC ns of a completed event recorded after the current anchor."""
        return self.host_ns + round(self.event.elapsed_time(event) * 1e6)


class GpuStages:
    """Records GPU work as stage spans: `with gpu.span(stage, frame): <queue GPU work>`.

    Pairs wait in a queue until `flush()` (or `span` when more than `max_pending` wait),
    which waits for their end events and records them. The anchor is renewed in `flush()`
    when the stream is idle and the anchor is old: call `flush()` between frames.

    The spans are recorded on a queue, a resource of its own in the report (utilisation,
    bottleneck), never on the CPU thread that calls `flush()`: by default the stream's own,
    named after its device and stream (`stream_queue`: `gpu0.stream0`); `queue` names
    another (a name such as "gpu0.compute", or a `framelab.Queue`). `queue=False` records
    them on the calling thread instead, where their time counts as that thread's busy time.
    """

    def __init__(self, stream=None, renew_s=1.0, max_pending=256, queue=None):
        self.clock = CudaClock(stream, renew_s)
        self._torch = self.clock._torch
        self.stream = self.clock.stream
        self.max_pending = max_pending
        if queue is None:
            queue = stream_queue(self.stream)
        elif isinstance(queue, str):
            queue = Queue(queue)
        #: The queue the spans are recorded on; None: the thread that calls `flush()`.
        self.queue = None if queue is False else queue
        self._pending = deque()
        self.recorded = 0
        #: What the last `flush()` recorded: (stage, frame, start_ns, end_ns) on the host clock.
        self.last_flushed = []

    def span(self, stage, frame):
        """A context manager recording `stage` of `frame` around the GPU work queued in it."""
        if isinstance(stage, str):
            stage = Stage(stage)
        return _GpuSpan(self, stage, frame)

    def _event(self):
        event = self._torch.cuda.Event(enable_timing=True)
        event.record(self.stream)
        return event

    def _push(self, stage, frame, start, end):
        self._pending.append((stage, frame, start, end))
        if len(self._pending) > self.max_pending:
            self.flush(renew=False)

    def flush(self, renew=True):
        """Waits for every pending pair, records them; returns how many were recorded."""
        flushed = []
        while self._pending:
            stage, frame, start, end = self._pending.popleft()
            end.synchronize()
            start_ns, end_ns = self.clock.to_host_ns(start), self.clock.to_host_ns(end)
            if self.queue is None:
                stage.record_ns(frame, start_ns, end_ns)
            else:
                stage.record_ns_on(self.queue, frame, start_ns, end_ns)
            flushed.append((stage, frame, start_ns, end_ns))
        self.last_flushed = flushed
        self.recorded += len(flushed)
        if renew:
            self.clock.maybe_renew()
        return len(flushed)


class _GpuSpan:
    __slots__ = ("_gpu", "_stage", "_frame", "_start")

    def __init__(self, gpu, stage, frame):
        self._gpu, self._stage, self._frame = gpu, stage, frame

    def __enter__(self):
        self._start = self._gpu._event()
        return self

    def __exit__(self, *exc):
        self._gpu._push(self._stage, self._frame, self._start, self._gpu._event())
        return False
