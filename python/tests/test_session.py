"""Programs instrumented with the package, run under a real `framelab run`, then loaded."""

import pytest

import framelab

PIPELINE = """
    import framelab

    decode, encode = framelab.Stage("decode"), framelab.Stage("encode")
    scale, send = framelab.Stage("scale"), framelab.Stage("send")
    gpu = framelab.Stage("gpu")
    nbytes, commit = framelab.Counter("bytes"), framelab.Event("commit")
    assert framelab.enabled()

    @send.timed()
    def transmit(packet, frame):
        return len(packet)

    for frame in range(200):
        with decode.span(frame):
            sum(range(300))
        laps = framelab.Laps(frame)
        sum(range(100))
        laps.lap(scale)
        sum(range(200))
        laps.lap(encode)
        transmit(b"x" * 100, frame)
        nbytes.add(frame, 100)
        nbytes.add(frame, 20)
        commit.mark(frame * 2)
        t0 = framelab.now_ns()
        gpu.record_ns(frame, t0, t0 + 12_345)
    pacer = framelab.Pacer(2000)
    for frame in range(200, 210):
        pacer.wait(frame)
        with decode.span(frame):
            pass
"""


def test_a_real_run_of_an_instrumented_program(run_python):
    result, run = run_python(PIPELINE)
    assert result.exit_code == 0
    spans = run.spans
    counts = spans.groupby("stage").size().to_dict()
    # The pacer's wait is no stage: its lateness is a counter of its own (below).
    assert counts == {"decode": 210, "scale": 200, "encode": 200, "send": 200, "gpu": 200}
    assert set(spans.columns) >= {"frame", "stage", "thread", "pid", "tid", "start_ns",
                                  "dur_ns", "end_ns"}
    assert (spans.end_ns - spans.start_ns == spans.dur_ns).all()
    # record_ns keeps the duration given, exactly.
    assert (spans[spans.stage == "gpu"].dur_ns == 12_345).all()
    # Laps: encode starts where scale ended, same frame.
    scale = spans[spans.stage == "scale"].set_index("frame")
    encode = spans[spans.stage == "encode"].set_index("frame")
    assert (encode.start_ns == scale.end_ns).all()
    # The decorator's spans carry the frame argument.
    assert sorted(spans[spans.stage == "send"].frame) == list(range(200))
    counters = run.counters
    paced = counters[counters.counter == "pacer_late_ns"]
    assert sorted(paced.frame) == list(range(200, 210)) and (paced.value >= 0).all()
    counters = counters[counters.counter != "pacer_late_ns"]
    assert counters.groupby("frame").value.sum().eq(120).all()
    assert len(counters) == 400
    events = run.events
    assert list(events.key) == [f * 2 for f in range(200)]
    assert run.threads.dropped.sum() == 0
    # The report agrees with what the DataFrames say.
    rep = result.report
    assert rep["schema"] == "framelab.report/3"
    assert rep["frames"] == run.frames.measured.sum() == 210
    assert rep["dropped_events"] == 0
    # The pacer's lateness: its own summary, not a counter of the frames.
    assert rep["pacer"]["late"]["count"] == 10 and rep["pacer"]["unmatched"] == 0
    assert rep["pacer"]["late"]["max_ns"] == paced.value.max()
    assert "pacer_late_ns" not in [c["name"] for c in rep["counters"]]
    # The report's stage table: every stage, then `total` and `interval`.
    report_stages = rep["stages"][:-2]
    assert list(run.stages.stage) == [s["name"] for s in report_stages]
    for row, s in zip(run.stages.itertuples(), report_stages):
        assert row.spans == s["dist"]["count"]
        assert abs(row.p99_us - s["dist"]["p99_ns"] / 1e3) < 1e-6
        assert abs(row.mean_us - s["dist"]["mean_ns"] / 1e3) < 1e-6


def test_many_threads_at_once(run_python):
    _, run = run_python(
        """
        import threading, framelab
        stage = framelab.Stage("work")
        barrier = threading.Barrier(16)
        def worker(t):
            barrier.wait()
            for f in range(500):
                with stage.span(t * 1000 + f):
                    pass
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(16)]
        for t in threads: t.start()
        for t in threads: t.join()
        """
    )
    spans = run.spans
    assert len(spans) == 16 * 500
    assert spans.tid.nunique() == 16
    assert sorted(spans.frame) == sorted(t * 1000 + f for t in range(16) for f in range(500))
    assert run.threads.dropped.sum() == 0


def test_a_span_ended_twice_is_recorded_once(run_python):
    _, run = run_python(
        """
        import framelab
        span = framelab.Stage("once").span(7)
        span.end()
        try:
            span.end()
        except framelab.SpanError as e:
            print("refused:", e)
        else:
            raise SystemExit("a second end was accepted")
        """
    )
    assert list(run.spans.frame) == [7]


def test_fork_and_multiprocessing_record_in_their_own_processes(run_python):
    result, run = run_python(
        """
        import multiprocessing, os, framelab
        stage = framelab.Stage("work")

        def job(frame):
            with stage.span(frame):
                pass
            return os.getpid()

        if __name__ == "__main__":
            open_across = stage.span(999)          # begun before the fork
            pid = os.fork()
            if pid == 0:
                open_across.end()                  # dropped in the child
                with stage.span(100):
                    pass
                os._exit(0)
            os.waitpid(pid, 0)
            open_across.end()                      # recorded by the parent
            for method in ("fork", "spawn"):
                ctx = multiprocessing.get_context(method)
                with ctx.Pool(2) as pool:
                    base = 200 if method == "fork" else 300
                    pids = set(pool.map(job, range(base, base + 20)))
                print(method, len(pids))
        """
    )
    spans = run.spans
    parent = result.report["processes"][0]["pid"]
    by_frame = spans.set_index("frame")
    assert by_frame.loc[999].pid == parent  # once, by the parent
    assert list(spans.frame).count(999) == 1
    assert by_frame.loc[100].pid != parent
    pooled = spans[spans.frame.between(200, 399)]
    assert sorted(pooled.frame) == list(range(200, 220)) + list(range(300, 320))
    assert pooled.pid.nunique() >= 2
    assert parent not in set(pooled.pid)


def test_a_name_too_long_under_a_session(run_python):
    _, run = run_python(
        """
        import framelab
        try:
            framelab.Stage("x" * (framelab.MAX_NAME_BYTES + 1))
        except ValueError as e:
            print(e)
        else:
            raise SystemExit("a name too long was accepted")
        with framelab.Stage("fine").span(1):
            pass
        """
    )
    assert list(run.stages.stage) == ["fine"]


def test_the_decorator_on_an_async_function_covers_its_body(run_python):
    _, run = run_python(
        """
        import asyncio, framelab
        infer = framelab.Stage("infer")

        @infer.timed()
        async def handle(frame):
            await asyncio.sleep(0.01)
            return frame

        async def main():
            return await asyncio.gather(*(handle(f) for f in range(5)))

        assert asyncio.run(main()) == list(range(5))
        """
    )
    spans = run.spans
    assert sorted(spans.frame) == list(range(5))
    assert (spans.dur_ns >= 10_000_000).all()  # the awaited sleep is inside each span


def test_with_blocks_nested_and_failing_are_all_recorded(run_python):
    _, run = run_python(
        """
        import framelab
        outer, inner = framelab.Stage("outer"), framelab.Stage("inner")
        for frame in range(300):
            with outer.span(frame):
                with inner.span(frame):
                    pass
                with outer.span(frame + 1000):
                    pass
        for frame in range(2000, 2010):
            try:
                with outer.span(frame):
                    raise ValueError(frame)
            except ValueError:
                pass
        """
    )
    spans = run.spans
    frames = spans.groupby("stage").frame.apply(sorted).to_dict()
    assert frames["inner"] == list(range(300))
    assert frames["outer"] == sorted(
        list(range(300)) + list(range(1000, 1300)) + list(range(2000, 2010)))
    # Each nested span lies inside its frame's outer span.
    by_frame = spans.set_index(["stage", "frame"])
    for frame in range(300):
        o, i = by_frame.loc[("outer", frame)], by_frame.loc[("inner", frame)]
        assert o.start_ns <= i.start_ns and i.end_ns <= o.end_ns


def test_spans_on_a_named_queue_make_it_a_resource_and_the_bottleneck(run_python):
    result, run = run_python(
        """
        import time
        import framelab
        gpu = framelab.Queue("gpu0.compute")
        prepare, render = framelab.Stage("prepare"), framelab.Stage("render")
        for frame in range(150):
            t = framelab.now_ns()
            prepare.record_ns(frame, t, t + 1_000_000)                   # 1 ms on this thread
            render.record_ns_on(gpu, frame, t + 1_000_000, t + 4_000_000)  # 3 ms on the GPU
            while framelab.now_ns() < t + 4_000_000:
                time.sleep(0.0005)
        """,
        warmup="0s",
    )
    threads = run.threads.set_index("name")
    assert threads.loc["gpu0.compute"].tid >= 1 << 30  # a queue's pseudo tid
    spans = run.spans
    assert set(spans[spans.thread == "gpu0.compute"].stage) == {"render"}
    pipeline = result.report["pipeline"]
    queue = next(r for r in pipeline["resources"] if r["name"] == "gpu0.compute")
    assert queue["queue"] is True and queue["stages"][0]["stage"] == "render"
    bound = pipeline["bottleneck"]
    assert (bound["resource"], bound["queue"], bound["stage"]) == ("gpu0.compute", True, "render")
    # 3 ms of the queue per frame: at most 333.3 fps (less only where the window cuts a span).
    assert 300 < bound["fps_bound"] <= 1e9 / 3e6 + 1e-6, bound


def test_a_queue_name_must_fit_a_thread_name():
    with pytest.raises(ValueError, match="1 to 31 bytes"):
        framelab.Queue("x" * 32)
    with pytest.raises(ValueError, match="1 to 31 bytes"):
        framelab.Queue("")
    assert framelab.Queue("gpu0.compute").name == "gpu0.compute"
