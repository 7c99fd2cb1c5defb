"""The GPU helper imports without PyTorch and says what it needs when used without it."""

import importlib.util

import pytest


def test_gpu_module_imports_without_torch():
    import framelab.gpu

    assert framelab.gpu.GpuStages and framelab.gpu.CudaClock


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_without_torch_it_says_what_to_install():
    import framelab.gpu

    with pytest.raises(ImportError, match="needs PyTorch with CUDA: pip install torch"):
        framelab.gpu.GpuStages()


# A stand-in for torch.cuda: an event's GPU time is the host's CLOCK_MONOTONIC when it is
# recorded plus the work queued before it (`stream.queue(ns)`) plus a fixed skew, so the
# mapped spans have durations known in advance.
FAKE_TORCH = """
import sys, time, types

class Stream:
    def __init__(self):
        self.queued_ns = 0
    def queue(self, ns):
        self.queued_ns += ns
    def synchronize(self):
        pass

class Event:
    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None
    def record(self, stream):
        self.t = time.monotonic_ns() + stream.queued_ns + 10**12  # the GPU's own clock
    def synchronize(self):
        pass
    def elapsed_time(self, other):
        return (other.t - self.t) / 1e6  # ms, as CUDA gives it

stream = Stream()
cuda = types.SimpleNamespace(is_available=lambda: True, current_stream=lambda: stream,
                             Event=Event)
sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)
"""


def test_gpu_stages_map_events_to_the_host_clock(run_python):
    result, run = run_python(
        FAKE_TORCH
        + """
import framelab
from framelab.gpu import GpuStages

gpu = GpuStages(renew_s=0)  # renewed at every flush
infer = framelab.Stage("infer")
for frame in range(50):
    before = time.monotonic_ns()
    with gpu.span(infer, frame):
        stream.queue(5_000_000)  # 5 ms of GPU work
    after = time.monotonic_ns()
    assert gpu.flush() == 1
    (_, f, start_ns, end_ns), = gpu.last_flushed
    assert f == frame
    # The start event's host time is within the anchor's uncertainty of when it was made.
    slack = gpu.clock.worst_uncertainty_ns + 1
    assert before - slack <= start_ns <= after + slack, (before, start_ns, after)
    # Its duration is the queued work plus at most the host time the block took.
    assert 5_000_000 <= end_ns - start_ns <= 5_000_000 + (after - before) + 2 * slack
assert gpu.recorded == 50 and gpu.clock.anchors == 51
print("ok")
"""
    )
    assert "ok" in result.stdout
    spans = run.spans
    assert len(spans) == 50 and set(spans.stage) == {"infer"}
    assert (spans.dur_ns >= 5_000_000).all()  # 5 ms of queued work, and the block's time
