"""Python side of the PEP 523 frame hook: install a callback around a call.

``framegraph._C`` holds the machinery (see ``framegraph/_C/eval_frame.c``). While a
callback is installed on a thread with :func:`set_eval_frame`, every fresh Python
function frame of that thread, callees included, is offered to the C hook before its
first instruction. Module, class and ``exec`` bodies, generator / coroutine /
async-generator code, generator resumes, frames started inside a trace or profile
function, and code marked with :func:`skip_code` always run as is; code marked with
:func:`run_eagerly_inside` (a compiled graph's) runs as is, and what it calls with the hook
off.

Per code object the hook keeps a chain of ``CacheEntry(check_fn, code)``, most
recently used first, except that entries running the original code as is always come
after the others. The first entry whose ``check_fn(f_locals)`` is true runs
without calling the callback, and moves to the front (of its kind). On a miss the callback is
called, with the hook disabled for this thread while it runs (as it is for guards).

Callback signature
------------------
``callback(frame) -> None | RUN_ONLY | (check_fn, code)`` where ``frame`` is a
``framegraph._C.FrameInfo`` (a read-only struct sequence) with the fields:

``f_code``
    the code object about to run.
``f_globals`` / ``f_builtins``
    the frame's globals and builtins dicts.
``f_locals``
    a fresh dict: argument names (positional, keyword-only, ``*args``,
    ``**kwargs``) -> bound values, plus free-variable names -> the values in the
    function's closure cells (empty cells left out). Guards get the same shape.
``closure``
    the function's ``__closure__`` (tuple of cells) or None.
``f_func``
    the function object being called.

``sys._getframe()`` inside the callback is the *caller's* frame: the intercepted
frame is not linked yet and no frame object is ever made for it.

Return protocol:

``None``
    never intercept this code again (it is marked as with :func:`skip_code`, which
    drops its cache entries); this call runs as is.
``RUN_ONLY`` (``False``)
    run this call as is, cache nothing.
``(check_fn, code)``
    add a cache entry and run ``code`` in place of the frame's code, with the
    frame's globals, closure and bound arguments. ``code`` must take the same
    arguments: same ``co_argcount``, ``co_posonlyargcount``, ``co_kwonlyargcount``,
    ``CO_VARARGS``/``CO_VARKEYWORDS`` flags and keyword-only names (plus the
    positional-or-keyword names when there is ``**kwargs``), and the same free
    variables, one per closure cell; otherwise the call raises ``TypeError``.
    ``code`` is marked skipped (our call of it must not be intercepted again).
    If ``code`` is the frame's own code, the entry means "run as is while
    ``check_fn`` holds" (its ``.code`` reads None); such an entry goes behind every
    entry with a replacement, so it never shadows one that fits the same call.

Anything else raises ``TypeError`` in the caller of the intercepted function. An
exception raised by the callback propagates to that caller too.

Guards: ``check_fn(f_locals)`` is called with the hook disabled for this thread.
framegraph's own guards never raise an ``Exception`` (a read that fails is a miss); for
any other check function, if it raises, the guard error hook (:func:`set_guard_error_hook`) is called as
``hook(check_fn, code, f_locals, index, is_last)`` and the guard's exception
propagates to the caller of the intercepted function (an exception raised by the
hook replaces it, chained).

Entries, their guards and their code are held by the original code object through a
slot the garbage collector cannot see: a guard must not keep a strong reference to
the function or code it guards, or neither is ever freed (use weak references).

Callback values for :func:`set_eval_frame` and the contexts below: ``None`` (hook off
for this thread), ``RUN_ONLY`` (use existing cache entries, never call back), or a
callable as above. The callback is per thread.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

from framegraph import _C

__all__ = [
    "RUN_ONLY",
    "EvalFrameContext",
    "wrap",
    "disable",
    "run",
    "set_eval_frame",
    "skip_code",
    "run_eagerly_inside",
    "reset_code",
    "unsupported",
    "set_guard_error_hook",
    "get_cache_entries",
]

F = TypeVar("F", bound=Callable[..., Any])

RUN_ONLY = False
"""Callback value / callback result: look up cached entries, never compile."""

set_eval_frame = _C.set_eval_frame
skip_code = _C.skip_code
run_eagerly_inside = _C.run_eagerly_inside
reset_code = _C.reset_code
unsupported = _C.unsupported
set_guard_error_hook = _C.set_guard_error_hook
get_cache_entries = _C._debug_get_cache_entry_list
CacheEntry = _C.CacheEntry


def _check_callback(callback: object) -> None:
    if callback is not None and callback is not RUN_ONLY and not callable(callback):
        raise TypeError(
            f"expected None, RUN_ONLY (False) or a callable callback, got {type(callback).__name__}"
        )


class EvalFrameContext:
    """Install ``callback`` on entry, restore the previous callback on exit.

    Usable as a context manager (re-entrant and nestable; each thread keeps its own
    stack of previous callbacks) and as a decorator: ``EvalFrameContext(cb)(fn)`` is
    ``wrap(fn, cb)``.
    """

    def __init__(self, callback: Callable[..., Any] | bool | None) -> None:
        _check_callback(callback)
        self.callback = callback
        self._local = threading.local()

    def __enter__(self) -> EvalFrameContext:
        stack = self._local.__dict__.setdefault("prev", [])
        stack.append(set_eval_frame(self.callback))
        return self

    def __exit__(self, *exc_info: object) -> None:
        set_eval_frame(self._local.prev.pop())

    def __call__(self, fn: F) -> F:
        return wrap(fn, self.callback)

    def __repr__(self) -> str:
        return f"EvalFrameContext({self.callback!r})"


def wrap(fn: F, callback: Callable[..., Any] | bool | None) -> F:
    """Return a wrapper of ``fn`` whose every call runs with ``callback`` installed.

    The previous callback is restored in ``finally``, so nesting and exceptions are
    safe. The wrapper's own frame is never intercepted; it carries ``fn``'s
    ``functools.wraps`` metadata and ``__wrapped__``.
    """
    _check_callback(callback)
    if not callable(fn):
        raise TypeError(f"wrap() expects a callable, got {type(fn).__name__}")

    @functools.wraps(fn)
    def _framegraph_wrapper(*args: Any, **kwargs: Any) -> Any:
        prev = set_eval_frame(callback)
        try:
            return fn(*args, **kwargs)
        finally:
            set_eval_frame(prev)

    return _framegraph_wrapper  # type: ignore[return-value]


def disable(fn: F | None = None) -> Any:
    """Run ``fn`` and everything it calls eagerly, even when called from compiled code.

    ``disable(fn)`` returns a wrapper (marked ``_framegraph_disabled = True`` for the
    translator); ``disable()`` returns a context manager.
    """
    if fn is None:
        return EvalFrameContext(None)
    wrapper = wrap(fn, None)
    wrapper._framegraph_disabled = True  # type: ignore[attr-defined]
    return wrapper


def graph_break() -> None:
    """Splits the graph here when compiled code calls it (what `torch._dynamo.graph_break()`
    is to torch.compile): the graph so far runs, then this call, eagerly, then the rest of
    the function is compiled on its own. Run eagerly it does nothing."""


def run(fn: F | None = None) -> Any:
    """Run ``fn`` (and its callees) with the code already compiled, compiling nothing new.

    ``run(fn)`` returns a wrapper (marked ``_framegraph_run_only = True``); ``run()``
    returns a context manager.
    """
    if fn is None:
        return EvalFrameContext(RUN_ONLY)
    wrapper = wrap(fn, RUN_ONLY)
    wrapper._framegraph_run_only = True  # type: ignore[attr-defined]
    return wrapper


# Our own frames are never offered to a callback: the wrapper body (one code object
# shared by every wrapper) and the context's enter/exit.
for _code in (
    wrap(len, None).__code__,
    EvalFrameContext.__enter__.__code__,
    EvalFrameContext.__exit__.__code__,
):
    skip_code(_code)
del _code
