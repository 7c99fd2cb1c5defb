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
# tensor from every operation: enough for python/examples/gpu_probe.py and
# examples/gpu/torch_stages.py.
FAKE_TORCH = '''
import time, types

__version__ = "stand-in"
uint8 = float16 = bfloat16 = "dtype"

class Stream:
    device_index = 0  # as torch.cuda.Stream: the default stream of device 0
    stream_id = 0

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
    def __truediv__(self, other):
        return self
    def numel(self):
        return 1

def _tensor(*a, **k):
    return Tensor()

randint = empty = empty_like = randn = _tensor
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
    spans = result.load().spans
    assert {"submit", "upload", "convert", "infer"} <= set(spans.stage)
    # The GPU stages are on the stream's queue; the thread keeps its own CPU work only.
    gpu = spans[spans.stage.isin(["upload", "convert", "infer"])]
    assert set(gpu.thread) == {"gpu0.stream0"}
    assert "gpu0.stream0" not in set(spans[spans.stage == "submit"].thread)


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


def _resources(report):
    return {r["name"]: r for r in report["pipeline"]["resources"]}


def test_gpu_spans_go_to_the_streams_queue_by_default(run_python, fake_torch_env):
    # Issue 26 point 4: 5 ms of GPU work per frame against a little CPU work. Recorded on the
    # calling thread, the GPU's time would be the thread's busy time; on the queue named
    # after the device and stream, the thread's busy time is its own CPU work only.
    result, run = run_python(
        """
        import framelab
        from framelab.gpu import GpuStages
        from torch import stream

        gpu = GpuStages()
        assert gpu.queue.name == "gpu0.stream0"
        submit, infer = framelab.Stage("submit"), framelab.Stage("infer")
        for frame in range(40):
            with submit.span(frame):
                sum(range(2000))  # the CPU's work: queueing the frame
                with gpu.span(infer, frame):
                    stream.queue(5_000_000)
            gpu.flush()
        """,
        env=fake_torch_env,
    )
    spans = run.spans
    assert set(spans[spans.stage == "infer"].thread) == {"gpu0.stream0"}
    cpu_threads = set(spans[spans.stage == "submit"].thread)
    assert len(cpu_threads) == 1 and "gpu0.stream0" not in cpu_threads
    resources = _resources(result.report)
    queue = resources["gpu0.stream0"]
    assert queue["queue"] is True and [s["stage"] for s in queue["stages"]] == ["infer"]
    (thread,) = cpu_threads
    row = resources[thread]
    assert row["queue"] is False and [s["stage"] for s in row["stages"]] == ["submit"]
    # Its busy time is its submit spans (one at a time, so their sum), not the GPU's 5 ms a
    # frame: the share the thread table shows is its CPU work.
    assert 0 < row["busy_ns"] <= spans[spans.stage == "submit"].dur_ns.sum()
    assert queue["busy_ns"] > row["busy_ns"]


def test_gpu_spans_on_the_calling_thread_only_when_asked(run_python, fake_torch_env):
    result, run = run_python(
        """
        import framelab
        from framelab.gpu import GpuStages
        from torch import stream

        gpu = GpuStages(queue=False)
        assert gpu.queue is None
        infer = framelab.Stage("infer")
        for frame in range(20):
            with gpu.span(infer, frame):
                stream.queue(1_000_000)
            gpu.flush()
        """,
        env=fake_torch_env,
    )
    (row,) = result.report["pipeline"]["resources"]
    assert row["queue"] is False and row["stages"][0]["stage"] == "infer"


def test_a_gpu_queue_is_named_as_from_rust_and_c():
    assert framelab.Queue.gpu(0, 0).name == "gpu0.stream0"
    assert framelab.Queue.gpu(2, 35).name == "gpu2.stream35"


def test_the_torch_stages_example_records_the_gpu_stages_on_the_streams_queue(
    tmp_path, framelab_bin, fake_torch_env
):
    # The example the lead checks on a GPU host (issue 26 point 4), here with the stand-in.
    example = pathlib.Path(__file__).parents[2] / "examples" / "gpu" / "torch_stages.py"
    result = framelab.run(
        [sys.executable, str(example), "--fps", "100", "--frames", "60"],
        fps=100, output=tmp_path / "torch_stages.framelab", env=fake_torch_env,
    )
    assert result.exit_code == 0, result.stderr
    spans = result.load().spans
    gpu = spans[spans.stage.isin(["upload", "convert", "infer", "download"])]
    assert len(gpu) == 4 * 60 and set(gpu.thread) == {"gpu0.stream0"}
    resources = _resources(result.report)
    assert resources["gpu0.stream0"]["queue"] is True
    threads = [r for r in resources.values() if not r["queue"]]
    assert [[s["stage"] for s in r["stages"]] for r in threads] == [["submit"]]
