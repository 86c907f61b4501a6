"""framegraph.eval_frame: the context, wrappers, disable(), run(); threads; tracing."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from hookutil import ALWAYS, Replacer, twin
from framegraph import _C
from framegraph import eval_frame as ef


def target(x):
    return ("orig", x)


def calls_target(x):
    return target(x)


@pytest.fixture(autouse=True)
def _reset_targets():
    yield
    for fn in (target, calls_target):
        _C.reset_code(fn.__code__)


def replacing_target():
    r = Replacer()
    r.add(target, twin(target))
    return r


def test_eval_frame_module_imports_neither_torch_nor_eagerly_C():
    code = (
        "import sys, framegraph\n"
        "assert 'framegraph._C' not in sys.modules\n"
        "import framegraph.eval_frame\n"
        "assert 'torch' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_context_installs_and_restores():
    r = replacing_target()
    with ef.EvalFrameContext(r):
        assert target(1) == ("repl", 1)
    assert _C.set_eval_frame(None) is None
    assert target(2) == ("orig", 2)


def test_context_nesting_and_reentry():
    r1, r2 = replacing_target(), Replacer()
    outer, inner = ef.EvalFrameContext(r1), ef.EvalFrameContext(r2)
    with outer:
        with inner:
            with outer:  # re-entering the same context object
                assert _C.set_eval_frame(r1) is r1
            assert _C.set_eval_frame(r2) is r2
        assert _C.set_eval_frame(r1) is r1
    assert _C.set_eval_frame(None) is None


def test_context_restores_on_exception():
    with pytest.raises(ZeroDivisionError):
        with ef.EvalFrameContext(Replacer()):
            1 / 0
    assert _C.set_eval_frame(None) is None


def test_wrap_installs_callback_per_call_and_keeps_metadata():
    r = replacing_target()

    def documented(x):
        """doc"""
        return calls_target(x)

    w = ef.wrap(documented, r)
    assert w.__name__ == "documented" and w.__doc__ == "doc" and w.__wrapped__ is documented
    assert w(3) == ("repl", 3)
    assert _C.set_eval_frame(None) is None
    assert documented(3) == ("orig", 3)
    assert "documented" in r.names() and "_framegraph_wrapper" not in r.names()
    assert ef.EvalFrameContext(r)(documented)(4) == ("repl", 4)


def test_wrapper_frames_are_never_offered():
    r = Replacer()
    w = ef.wrap(target, r)
    outer = ef.wrap(lambda: w(1), r)
    outer()
    assert "_framegraph_wrapper" not in r.names()
    assert "__enter__" not in r.names() and "__exit__" not in r.names()


def test_wrapper_restores_after_exception():
    def bad():
        raise KeyError("k")

    with pytest.raises(KeyError):
        ef.wrap(bad, Replacer())()
    assert _C.set_eval_frame(None) is None


def test_disable_runs_function_and_callees_eagerly():
    r = replacing_target()

    @ef.disable
    def eager(x):
        return calls_target(x)

    assert eager._framegraph_disabled is True and eager.__name__ == "eager"
    compiled = ef.wrap(lambda x: (target(x), eager(x), target(x)), r)
    assert compiled(1) == (("repl", 1), ("orig", 1), ("repl", 1))
    assert "eager" not in r.names() and "calls_target" not in r.names()
    with ef.EvalFrameContext(r):
        with ef.disable():
            assert target(2) == ("orig", 2)
        assert target(2) == ("repl", 2)


def test_run_only_wrapper_uses_existing_entries_only():
    r = replacing_target()
    ef.wrap(target, r)(0)  # compile
    r.seen.clear()
    runner = ef.run(calls_target)
    assert runner._framegraph_run_only is True
    assert runner(5) == ("repl", 5)
    assert r.seen == []
    with ef.run():
        assert target(6) == ("repl", 6)
    assert _C._debug_get_cache_entry_list(calls_target.__code__) == []


def test_bad_callback_values():
    with pytest.raises(TypeError):
        ef.EvalFrameContext(3)
    with pytest.raises(TypeError):
        ef.wrap(target, "x")
    with pytest.raises(TypeError):
        ef.wrap(3, None)


# ---- threads -----------------------------------------------------------------------------


def test_other_threads_never_see_this_threads_callback():
    r = replacing_target()
    results, prevs = [], []
    start, stop = threading.Event(), threading.Event()

    def worker():
        prevs.append(_C.set_eval_frame(None))
        start.set()
        while not stop.is_set():
            results.append(target(0)[0])

    t = threading.Thread(target=worker)
    t.start()
    start.wait()
    with ef.EvalFrameContext(r):
        for _ in range(2000):
            assert target(1)[0] == "repl"
    stop.set()
    t.join()
    assert prevs == [None] and results and set(results) == {"orig"}


def test_threads_with_their_own_callbacks():
    errors = []

    def worker(tag):
        fn_code = twin(target, tag)
        r = Replacer()
        r.add(target, fn_code, check_fn=lambda f_locals, tag=tag: f_locals["x"] == tag)
        try:
            with ef.EvalFrameContext(r):
                for _ in range(300):
                    got = target(tag)
                    if got != (tag, tag):
                        errors.append(got)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(_C._debug_get_cache_entry_list(target.__code__)) == 4


# ---- tracing and profiling -----------------------------------------------------------------


def test_settrace_coexists():
    r = replacing_target()
    events = []

    def tracer(frame, event, arg):
        events.append((event, frame.f_code.co_name))
        return tracer

    sys.settrace(tracer)
    try:
        with ef.EvalFrameContext(r):
            assert calls_target(1) == ("repl", 1)
            assert calls_target(2) == ("repl", 2)
    finally:
        sys.settrace(None)
    assert ("call", "target") in events and ("return", "target") in events
    assert "tracer" not in r.names()  # the trace function's frames run default


def test_guards_are_invisible_to_tracers_and_profilers():
    def named_guard(f_locals):
        return True

    r = Replacer()
    r.add(target, twin(target), check_fn=named_guard)
    events = []

    def tracer(frame, event, arg):
        events.append((event, frame.f_code.co_name))
        return tracer

    with ef.EvalFrameContext(r):
        target(0)  # miss: the callback (the compiler) runs, traced or not
        sys.settrace(tracer)
        sys.setprofile(tracer)
        try:
            assert calls_target(1) == ("repl", 1)  # hit: guard runs
        finally:
            sys.setprofile(None)
            sys.settrace(None)
    assert ("call", "target") in events
    assert all(name != "named_guard" for _, name in events)


def test_setprofile_coexists():
    r = replacing_target()
    events = []

    def profiler(frame, event, arg):
        helper = lambda: event  # noqa: E731  a Python call inside the profiler
        events.append((helper(), frame.f_code.co_name))

    sys.setprofile(profiler)
    try:
        with ef.EvalFrameContext(r):
            assert calls_target(1) == ("repl", 1)
    finally:
        sys.setprofile(None)
    assert ("call", "target") in events
    assert "profiler" not in r.names() and "<lambda>" not in r.names()
