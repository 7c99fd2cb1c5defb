"""The GPU helper: imports without PyTorch, says what it needs when used without it, maps
CUDA events to the host clock (checked with a stand-in for torch), and its example runs."""

import importlib.util
import os
import pathlib
import sys

import pytest

import framelab

# A stand-in for torch, as a module file: an event's GPU time is the host's CLOCK_MONOTONIC
# when it is recorded, plus the work queued before it (`stream.queue(ns)`), plus a skew (the
# GPU's own clock), so mapped spans have durations known in advance. Tensors return a
# tensor from every operation: enough for python/examples/gpu_probe.py.
FAKE_TORCH = '''
import time, types

__version__ = "stand-in"
uint8 = float16 = bfloat16 = "dtype"

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
        self.t = time.monotonic_ns() + stream.queued_ns + 10**12
    def synchronize(self):
        pass
    def elapsed_time(self, other):
        return (other.t - self.t) / 1e6  # ms, as CUDA gives it

class Tensor:
    def __getattr__(self, name):
        return lambda *a, **k: self
    def __getitem__(self, key):
        return self
    def __matmul__(self, other):
        return self

def _tensor(*a, **k):
    return Tensor()

randint = empty_like = randn = _tensor
device = lambda name: name
stream = Stream()
cuda = types.SimpleNamespace(is_available=lambda: True, current_stream=lambda: stream,
                             Event=Event, get_device_name=lambda: "stand-in GPU")
'''


@pytest.fixture
def fake_torch_env(tmp_path):
    """The environment of a program that imports the stand-in as `torch`."""
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "torch.py").write_text(FAKE_TORCH)
    paths = [str(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def test_gpu_module_imports_without_torch():
    import framelab.gpu

    assert framelab.gpu.GpuStages and framelab.gpu.CudaClock


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_without_torch_it_says_what_to_install():
    import framelab.gpu

    with pytest.raises(ImportError, match="needs PyTorch with CUDA: pip install torch"):
        framelab.gpu.GpuStages()


def test_gpu_stages_map_events_to_the_host_clock(run_python, fake_torch_env):
    result, run = run_python(
        """
        import time
        import framelab
        from framelab.gpu import GpuStages
        from torch import stream

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
            # The start's host time is within the anchor's uncertainty of when it was made.
            slack = gpu.clock.worst_uncertainty_ns + 1
            assert before - slack <= start_ns <= after + slack, (before, start_ns, after)
            # Its duration is the queued work plus at most the host time the block took.
            assert 5_000_000 <= end_ns - start_ns <= 5_000_000 + (after - before) + 2 * slack
        assert gpu.recorded == 50 and gpu.clock.anchors == 51
        print("ok")
        """,
        env=fake_torch_env,
    )
    assert "ok" in result.stdout
    spans = run.spans
    assert len(spans) == 50 and set(spans.stage) == {"infer"}
    assert (spans.dur_ns >= 5_000_000).all()


def test_the_gpu_example_runs_and_prints_its_figures(tmp_path, framelab_bin, fake_torch_env):
    example = pathlib.Path(__file__).parents[1] / "examples" / "gpu_probe.py"
    # Stopped by framelab (SIGINT) long before its own --seconds: it prints its figures anyway.
    result = framelab.run(
        [sys.executable, str(example), "--seconds", "600", "--fps", "100", "--renew-s", "0"],
        fps=100, duration="2s", output=tmp_path / "gpu.framelab", env=fake_torch_env,
    )
    assert "gpu_probe: stand-in GPU" in result.stderr, result.stderr
    for figure in ("anchors", "drift at renewal", "with gpu.span CPU", "stage sum − elapsed"):
        assert figure in result.stderr, result.stderr
    assert result.report["end_reason"] == "duration"
    assert {"submit", "upload", "convert", "infer"} <= set(result.load().spans.stage)


def test_gpu_stages_on_a_named_queue_make_it_a_resource(run_python, fake_torch_env):
    result, run = run_python(
        """
        import framelab
        from framelab.gpu import GpuStages
        from torch import stream

        gpu = GpuStages(queue="gpu0.compute")
        infer = framelab.Stage("infer")
        for frame in range(40):
            with gpu.span(infer, frame):
                stream.queue(2_000_000)
            gpu.flush()
        """,
        env=fake_torch_env,
    )
    spans = run.spans
    assert len(spans) == 40 and set(spans.thread) == {"gpu0.compute"}
    queue = next(r for r in result.report["pipeline"]["resources"] if r["name"] == "gpu0.compute")
    assert queue["queue"] is True and queue["stages"][0]["stage"] == "infer"
