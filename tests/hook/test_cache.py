"""The per-code cache, the callback protocol and error paths."""

from __future__ import annotations

import pytest

from hookutil import ALWAYS, Replacer, hooked, twin
from framegraph import _C


def target(x):
    return ("orig", x)


def other(x):
    return ("orig", x)


@pytest.fixture(autouse=True)
def _reset_targets():
    yield
    for fn in (target, other):
        _C.reset_code(fn.__code__)


def entries(fn):
    return _C._debug_get_cache_entry_list(fn.__code__)


# ---- inventory -------------------------------------------------------------------------


def test_inventory():
    names = sorted(n for n in dir(_C) if not n.startswith("__"))
    assert names == [
        "CacheEntry",
        "GUARD_OPS",
        "GuardProgram",
        "_debug_get_cache_entry_list",
        "reset_code",
        "run_eagerly_inside",
        "set_eval_frame",
        "set_guard_error_hook",
        "set_tensor_api",
        "set_tensor_shim",
        "skip_code",
        "tensor_shim_numbers",
        "unsupported",
    ]


def test_second_module_init_is_refused():
    import importlib.util

    spec = importlib.util.find_spec("framegraph._C")
    with pytest.raises(ImportError, match="twice"):
        importlib.util.module_from_spec(
            importlib.util.spec_from_file_location("framegraph_again._C", spec.origin)
        )


# ---- skip / reset / entries ------------------------------------------------------------


def test_none_result_marks_code_skipped():
    r = Replacer(default=None)
    with hooked(r):
        target(1)
        target(2)
    assert r.names() == ["target"]
    assert entries(target) == []


def test_skip_code_and_reset_code():
    r = Replacer()
    _C.skip_code(target.__code__)
    with hooked(r):
        target(1)
    assert r.names() == []
    _C.reset_code(target.__code__)
    with hooked(r):
        target(1)
    assert r.names() == ["target"]


def calls_target(x, fail=False, inner=None):
    if inner is not None:  # a callback installed and removed inside, as a nested compile does
        prev = _C.set_eval_frame(inner)
        target(x)
        _C.set_eval_frame(prev)
    if fail:
        raise ValueError("inside")
    return target(x)


@pytest.mark.parametrize("how", ["returns", "raises", "nests a callback"])
def test_code_marked_run_eagerly_inside_runs_what_it_calls_without_the_callback(how):
    """A compiled graph's code: its frame is not offered to the callback, nor any frame it
    calls; the callback is back when it returns or raises."""
    r, inner = Replacer(), Replacer()
    ours = lambda replacer: [n for n in replacer.names() if n in ("calls_target", "target")]  # noqa: E731
    _C.run_eagerly_inside(calls_target.__code__)
    try:
        with hooked(r):
            if how == "raises":
                with pytest.raises(ValueError, match="inside"):
                    calls_target(1, fail=True)
            else:
                assert calls_target(1, inner=inner if how == "nests a callback" else None) == ("orig", 1)
            seen_inside = ours(r)
            target(2)
            seen_after = ours(r)
        assert seen_inside == [] and seen_after == ["target"]
        assert ours(inner) == (["target"] if how == "nests a callback" else [])
        assert _C.set_eval_frame(None) is None  # nothing left installed
    finally:
        _C.reset_code(calls_target.__code__)
    r = Replacer()
    with hooked(r):
        calls_target(3)
    assert ours(r) == ["calls_target", "target"]  # reset_code drops the mark


def test_entries_newest_first_and_hit_moves_to_front():
    on = lambda v: (lambda f_locals: f_locals["x"] == v)  # noqa: E731
    news = {v: twin(target, f"v{v}") for v in (1, 2, 3)}

    def cb(frame):
        if frame.f_code is target.__code__:
            v = frame.f_locals["x"]
            return (on(v), news[v])
        return False

    with hooked(cb):
        assert [target(v)[0] for v in (1, 2, 3)] == ["v1", "v2", "v3"]
        chain = entries(target)
        assert [e.code for e in chain] == [news[3], news[2], news[1]]
        assert chain[0].next is chain[1] and chain[2].next is None
        assert target(1) == ("v1", 1)  # a hit on the oldest entry
        assert [e.code for e in entries(target)] == [news[1], news[3], news[2]]
        assert target(2) == ("v2", 2)
        assert [e.code for e in entries(target)] == [news[2], news[1], news[3]]
    assert callable(chain[0].check_fn)
    with pytest.raises(AttributeError):
        chain[0].code = None
    with pytest.raises(TypeError):
        _C.CacheEntry()


def test_guard_miss_calls_callback_again(replacer):
    replacer.add(target, twin(target), check_fn=lambda f_locals: f_locals["x"] > 0)
    with hooked(replacer):
        assert target(1)[0] == "repl"
        assert target(2)[0] == "repl"
        assert target(-1)[0] == "repl"  # miss: the callback adds a second entry
    assert replacer.names() == ["target", "target"]
    assert len(entries(target)) == 2


def test_returning_the_original_code_means_run_as_is():
    calls = []

    def cb(frame):
        if frame.f_code is not target.__code__:
            return False
        calls.append(frame.f_code)
        return (ALWAYS, frame.f_code)

    with hooked(cb):
        assert target(1) == ("orig", 1)
        assert target(2) == ("orig", 2)
    assert calls == [target.__code__]
    (entry,) = entries(target)
    assert entry.code is None  # no code -> extra -> code loop


def test_run_only_mode_uses_entries_and_never_calls_back(replacer):
    replacer.add(target, twin(target))
    with hooked(replacer):
        target(1)
    with hooked(False):
        assert target(2) == ("repl", 2)
        assert other(3) == ("orig", 3)  # a miss runs as is
    assert replacer.names() == ["target"]
    assert entries(other) == []


def test_run_only_result_runs_as_is_each_time():
    r = Replacer(default=False)
    with hooked(r):
        target(1)
        target(2)
    assert r.names() == ["target", "target"]


# ---- the callback protocol: malformed results --------------------------------------------


def with_default(a, b=1):
    return a + b


def closure_of(n):
    def inner(x):
        return x + n

    return inner


BAD = [
    ((ALWAYS,), "tuple"),
    ((ALWAYS, target.__code__, 1), "tuple"),
    ([ALWAYS, target.__code__], "tuple"),
    ((ALWAYS, "not code"), "code object"),
    ((1, target.__code__), "callable"),
    ("anything", "None, False"),
    ((ALWAYS, with_default.__code__), "same arguments"),
    ((ALWAYS, closure_of(1).__code__), "free variables"),
]


@pytest.mark.parametrize("result,message", BAD)
def test_malformed_callback_result_is_a_type_error(result, message):
    arg = object()
    with hooked(lambda frame: result if frame.f_code is target.__code__ else False):
        with pytest.raises(TypeError, match=message):
            target(arg)
    assert entries(target) == []


def test_signature_mismatch_message_names_the_expectation():
    def kw(a, *, k):
        return a

    def kw2(a, *, j):
        return a

    with hooked(lambda frame: (ALWAYS, kw2.__code__) if frame.f_code is kw.__code__ else False):
        with pytest.raises(TypeError) as info:
            kw(1, k=2)
    msg = str(info.value)
    assert "expected (argcount=1, posonlyargcount=0, kwonlyargcount=1" in msg
    assert "'k'" in msg and "'j'" in msg


def test_positional_names_may_differ_without_kwargs():
    with hooked(lambda fr: (ALWAYS, (lambda y: ("repl", y)).__code__) if fr.f_code is target.__code__ else False):
        assert target(1) == ("repl", 1)


def test_positional_names_matter_with_kwargs():
    def f(a, **kw):
        return a

    def g(b, **kw):
        return b

    with hooked(lambda frame: (ALWAYS, g.__code__) if frame.f_code is f.__code__ else False):
        with pytest.raises(TypeError, match="same arguments"):
            f(1, b=2)


def test_freevar_count_mismatch():
    def make2(n, m):
        def inner(x):
            return x + n + m

        return inner

    one = closure_of(1)
    with hooked(lambda fr: (ALWAYS, make2(1, 2).__code__) if fr.f_code is one.__code__ else False):
        with pytest.raises(TypeError, match="must have 1 free variables"):
            one(1)


def test_bad_arguments_to_module_functions():
    with pytest.raises(TypeError, match="callable"):
        _C.set_eval_frame(1)
    with pytest.raises(TypeError, match="callable"):
        _C.set_eval_frame(True)
    for f in (_C.skip_code, _C.run_eagerly_inside, _C.reset_code, _C._debug_get_cache_entry_list):
        with pytest.raises(TypeError, match="code object"):
            f(target)
    with pytest.raises(TypeError):
        _C.set_guard_error_hook(3)


def test_set_eval_frame_returns_previous():
    cb = lambda frame: False  # noqa: E731
    assert _C.set_eval_frame(cb) is None
    assert _C.set_eval_frame(False) is cb
    assert _C.set_eval_frame(None) is False


# ---- errors from the callback and guards ------------------------------------------------


class Boom(Exception):
    pass


def test_callback_raising_propagates():
    def cb(frame):
        if frame.f_code is target.__code__:
            raise Boom("from callback")
        return False

    with hooked(cb):
        with pytest.raises(Boom, match="from callback"):
            target(1)
        # the callback is back in place for the next frame
        assert _C.set_eval_frame(cb) is cb


def test_guard_raising_calls_hook_then_propagates(replacer):
    def bad_guard(f_locals):
        raise Boom("guard")

    new = replacer.add(target, twin(target), check_fn=bad_guard)
    reports = []
    _C.set_guard_error_hook(lambda *a: reports.append(a))
    with hooked(replacer):
        target(1)  # miss: the callback installs the raising guard
        with pytest.raises(Boom, match="guard"):
            target(2)
    assert len(reports) == 1
    check_fn, code, f_locals, index, is_last = reports[0]
    assert check_fn is bad_guard and code is target.__code__
    assert f_locals == {"x": 2} and index == 0 and is_last is True
    assert entries(target)[0].code is new


def test_guard_error_hook_raising_replaces_the_error_chained(replacer):
    def bad_guard(f_locals):
        raise Boom("guard")

    def hook(*args):
        raise RuntimeError("hook")

    replacer.add(target, twin(target), check_fn=bad_guard)
    _C.set_guard_error_hook(hook)
    with hooked(replacer):
        target(1)
        with pytest.raises(RuntimeError, match="hook") as info:
            target(2)
    assert isinstance(info.value.__context__, Boom)


def test_guard_returning_unusable_truth_value(replacer):
    class NoBool:
        def __bool__(self):
            raise Boom("bool")

    replacer.add(target, twin(target), check_fn=lambda f_locals: NoBool())
    with hooked(replacer):
        target(1)
        with pytest.raises(Boom):
            target(1)


# ---- re-entrancy -----------------------------------------------------------------------


def test_guard_resetting_its_own_code(replacer):
    def resetting_guard(f_locals):
        _C.reset_code(target.__code__)
        return True

    replacer.add(target, twin(target), check_fn=resetting_guard)
    with hooked(replacer):
        target(1)  # installs the entry
        assert target(2) == ("repl", 2)  # the hit runs though its chain is gone
        assert entries(target) == []
        assert target(3) == ("repl", 3)  # miss again -> callback -> new entry
    assert replacer.names().count("target") == 2


def test_guard_and_callback_reentering_the_hook(replacer):
    def guard(f_locals):
        return other(f_locals["x"])[0] == "orig"  # hook disabled inside guards

    def cb(frame):
        if frame.f_code is target.__code__:
            assert other(0) == ("orig", 0)
            assert target(0) == ("orig", 0)  # the frame being decided, recursively
            return (guard, twin(target))
        return False

    with hooked(cb):
        assert target(1) == ("repl", 1)
        assert target(2) == ("repl", 2)


def test_callback_skipping_or_resetting_the_code_it_is_deciding():
    def cb(frame):
        if frame.f_code is target.__code__:
            _C.skip_code(target.__code__)
            _C.reset_code(target.__code__)
            return (ALWAYS, twin(target))
        return False

    with hooked(cb):
        assert target(1) == ("repl", 1)
        assert target(2) == ("repl", 2)


def test_callback_changing_the_callback():
    seen = []

    def second(frame):
        seen.append(frame.f_code.co_name)
        return False

    def first(frame):
        _C.set_eval_frame(second)  # stays: the hook must not put `first` back
        return False

    prev = _C.set_eval_frame(first)
    try:
        target(1)
        other(1)
    finally:
        assert _C.set_eval_frame(prev) is second
    assert seen == ["other"]


def test_callback_using_nested_compiled_calls(replacer):
    inner = Replacer()
    inner.add(other, twin(other, "inner"))

    def cb(frame):
        if frame.f_code is target.__code__:
            with hooked(inner):
                assert other(5) == ("inner", 5)
            return (ALWAYS, twin(target))
        return False

    try:
        with hooked(cb):
            assert target(1) == ("repl", 1)
    finally:
        inner.reset()
