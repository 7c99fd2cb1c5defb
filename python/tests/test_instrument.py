"""The SDK from Python without a session: every call a no-op, bad use refused clearly."""

import os
import threading
import time

import pytest

import framelab


@pytest.fixture(autouse=True)
def no_session(monkeypatch):
    assert "FRAMELAB_SESSION" not in os.environ, "run the tests outside framelab run"


def test_no_session_every_call_is_a_no_op():
    assert not framelab.enabled()
    stage = framelab.Stage("encode")
    assert stage.name == "encode" and stage.id >= 1
    with stage.span(1) as span:
        assert span.frame == 1 and not span.ended
    assert span.ended
    stage.record_ns(2, 10, 20)
    laps = framelab.Laps(3)
    laps.lap(stage)
    laps.skip()
    laps.next_frame(4)
    assert laps.frame == 4
    framelab.Counter("bytes").add(3, 1500)
    framelab.Event("commit").mark(7)
    assert framelab.names_refused() == 0


def test_the_same_name_is_the_same_id():
    assert framelab.Stage("same").id == framelab.Stage("same").id
    assert framelab.Stage("same").id != framelab.Stage("other").id


def test_now_ns_is_clock_monotonic():
    import time

    before = time.monotonic_ns()
    now = framelab.now_ns()
    assert before <= now <= time.monotonic_ns()


def test_span_ended_twice_raises():
    span = framelab.Stage("encode").span(1)
    span.end()
    with pytest.raises(framelab.SpanError,
                       match='span of stage "encode" for frame 1 was already ended: end a span once'):
        span.end()
    with pytest.raises(framelab.SpanError):
        with framelab.Stage("encode").span(2) as s:
            s.end()


def test_span_error_is_a_runtime_error():
    assert issubclass(framelab.SpanError, RuntimeError)


def test_a_name_too_long_is_refused_with_the_limit():
    limit = framelab.MAX_NAME_BYTES
    framelab.Stage("x" * limit)  # at the limit: fine
    for make in (framelab.Stage, framelab.Counter, framelab.Event):
        with pytest.raises(ValueError, match=f"more than the {limit} a name may have"):
            make("x" * (limit + 1))
    # UTF-8 bytes count, not characters.
    with pytest.raises(ValueError):
        framelab.Stage("é" * (limit // 2 + 1))


def test_frame_ids_are_u64():
    stage = framelab.Stage("encode")
    stage.span(2**64 - 1).end()
    with pytest.raises(OverflowError):
        stage.span(2**64)
    with pytest.raises(OverflowError):
        stage.span(-1)
    with pytest.raises(TypeError):
        stage.span("frame 1")


def test_decorator_takes_the_frame_argument():
    stage = framelab.Stage("work")
    seen = []

    @stage.timed()
    def work(data, frame, scale=2):
        seen.append(frame)
        return data * scale

    assert work(3, 10) == 6
    assert work(3, frame=11, scale=3) == 9
    assert seen == [10, 11]
    assert work.__name__ == "work"

    @framelab.timed("by_name", frame="idx")
    def other(idx=5):
        return idx

    assert other() == 5 and other(6) == 6

    @stage.timed(frame=lambda item: item["id"])
    def by_callable(item):
        return item["id"]

    assert by_callable({"id": 9}) == 9


def test_decorator_without_the_frame_argument_is_refused_at_once():
    with pytest.raises(TypeError, match="has no argument 'frame'"):

        @framelab.Stage("work").timed()
        def work(data):
            return data

    @framelab.Stage("work").timed()
    def needs(frame):
        return frame

    with pytest.raises(TypeError, match="without its frame argument"):
        needs()


def test_decorated_function_exceptions_pass_through():
    @framelab.Stage("work").timed()
    def boom(frame):
        raise KeyError(frame)

    with pytest.raises(KeyError):
        boom(1)


def test_pacer_paces_and_refuses_bad_settings():
    pacer = framelab.Pacer(1000, late="skip", method="sleep", record=False)
    assert pacer.period_ns == pytest.approx(1e6)
    first = pacer.wait(0)
    second = pacer.wait(1)
    assert second.deadline_ns == first.deadline_ns + 1_000_000
    assert second.woke_ns >= second.deadline_ns
    # On time, the pacer's own lateness is all of the frame's lateness against its slot
    # (a frame that came late passes straight through: the pacer adds about nothing).
    if not second.was_late:
        assert second.overshoot_ns == second.woke_ns - second.deadline_ns == second.late_ns
    with pytest.raises(ValueError, match="cannot pace at 0 fps"):
        framelab.Pacer(0)
    with pytest.raises(ValueError, match="not a late policy"):
        framelab.Pacer(60, late="sometimes")
    with pytest.raises(ValueError, match="not a wait method"):
        framelab.Pacer(60, method="busy")


def test_a_pacer_waited_on_from_two_threads_says_so():
    pacer = framelab.Pacer(1, method="sleep", record=False)
    pacer.wait(0)
    refusals = []

    def wait_or_note_refusal(frame):
        try:
            pacer.wait(frame)  # the next slot, about 1 s away
        except RuntimeError as e:
            refusals.append(str(e))

    inside = threading.Event()

    def waiter():
        inside.set()
        wait_or_note_refusal(1)

    thread = threading.Thread(target=waiter)
    thread.start()
    inside.wait()
    # Whichever thread holds the pacer first waits; the other's wait inside it is refused.
    while not refusals and thread.is_alive():
        wait_or_note_refusal(2)
        time.sleep(0.01)
    thread.join()
    assert refusals and "another thread is waiting on this pacer" in refusals[0]


def test_many_threads_at_once_without_a_session():
    stage = framelab.Stage("threaded")
    errors = []

    def worker(base):
        try:
            for f in range(2000):
                with stage.span(base + f):
                    pass
                framelab.Stage(f"t{base}")  # interning from many threads at once
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i * 10_000,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_one_span_ended_by_two_threads_records_once():
    span = framelab.Stage("shared").span(1)
    outcomes = []
    barrier = threading.Barrier(8)

    def end():
        barrier.wait()
        try:
            span.end()
            outcomes.append("ended")
        except framelab.SpanError:
            outcomes.append("refused")

    threads = [threading.Thread(target=end) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ended"] + ["refused"] * 7


def test_with_blocks_nest_keep_their_spans_and_let_exceptions_through():
    # A stage hands its span object out again once nobody holds it: nested, kept and
    # failed spans must each stay their own.
    stage = framelab.Stage("with_protocol")
    with stage.span(1) as outer:
        with stage.span(2) as inner:
            assert inner is not outer and (outer.frame, inner.frame) == (1, 2)
        assert inner.ended and not outer.ended
    assert outer.ended
    kept = stage.span(3)
    later = stage.span(4)
    assert later is not kept and kept.frame == 3 and not kept.ended
    kept.end()
    later.end()
    with pytest.raises(KeyError):
        with stage.span(5) as failed:
            raise KeyError("inside")
    assert failed.ended and failed.frame == 5
    with pytest.raises(framelab.SpanError, match="frame 6 was already ended"):
        with stage.span(6) as twice:
            twice.end()


def test_a_span_is_called_only_by_with():
    span = framelab.Stage("called").span(1)
    assert span.__enter__() is span
    with pytest.raises(TypeError, match="called by `with` only"):
        span(1)
    assert span.__exit__(None, None, None) is False and span.ended
