"""Stages with a decorator; the rest of the SDK is the native module as is."""

import functools
import inspect

from . import _native


class Stage(_native.Stage):
    """A named stage of a frame (`capture`, `encode`): create once, outside the frame loop.

    `with stage.span(frame):` times a block; `stage.span(frame)` … `.end()` does the same by
    hand; `stage.record_ns(frame, start_ns, end_ns)` records CLOCK_MONOTONIC ns you already
    have; `@stage.timed()` times every call of a function.
    """

    __slots__ = ()

    def timed(self, func=None, *, frame="frame"):
        """Decorator: each call of the function is a span of this stage.

        The frame is the function's argument named `frame` (give another name with
        `frame="idx"`), or what `frame(*args, **kwargs)` returns when `frame` is callable.
        An `async def` function's span covers its awaited body.
        """

        def decorate(fn):
            return _wrap(self, fn, frame)

        return decorate(func) if func is not None else decorate


def timed(name, *, frame="frame"):
    """`@framelab.timed("encode")`: a `Stage(name)` timing every call of the function."""
    return Stage(name).timed(frame=frame)


def _wrap(stage, fn, frame):
    frame_of = frame if callable(frame) else _argument_getter(fn, frame)
    span = stage.span

    if inspect.iscoroutinefunction(fn):
        # The span covers the awaited body, not just making the coroutine.
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            with span(frame_of(*args, **kwargs)):
                return await fn(*args, **kwargs)

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with span(frame_of(*args, **kwargs)):
            return fn(*args, **kwargs)

    return wrapper


def _argument_getter(fn, name):
    """A function returning argument `name` of a call of `fn`; TypeError now if it has none."""
    params = list(inspect.signature(fn).parameters.values())
    found = [p for p in params if p.name == name]
    if not found:
        raise TypeError(
            f"{fn.__qualname__}() has no argument {name!r} to take the frame from: "
            f"pass frame='ARG' or frame=callable"
        )
    param = found[0]
    index = params.index(param)
    positional = param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
    default = param.default

    def get(*args, **kwargs):
        if name in kwargs:
            return kwargs[name]
        if positional and index < len(args):
            return args[index]
        if default is not param.empty:
            return default
        raise TypeError(f"{fn.__qualname__}() called without its frame argument {name!r}")

    return get
