"""What framegraph promises at its edges: a guard read that fails is a miss, never an
exception; fullgraph=True never falls back silently; a backend's outputs are checked; bad
arguments are refused with a clear error; a variant that cannot compile is translated once."""

import functools
import json
import traceback
import warnings

import pytest
import torch
from torch import nn

import framegraph
from framegraph import _C, config, convert_frame
from framegraph.counters import counters
from framegraph.eval_frame import get_cache_entries
from framegraph.exc import BackendOutputError, RecompileLimitExceeded, Unsupported
from framegraph.shapes import marked_dynamic

from .helpers import CountingBackend, assert_same, clone

GUARD_BACKENDS = pytest.mark.parametrize("c_guards", [True, False], ids=["guard_program", "python_check"])


@framegraph.disable
def opaque(x):
    """Not traced: every call is a graph break."""
    return x + 0.25


def outcome(fn, *args):
    """(result, None) or (None, the exception), for a differential comparison."""
    try:
        return fn(*args), None
    except Exception as error:
        return None, error


def assert_like_eager(fn, compiled, *args):
    """Same result or same exception (type and text) as eager; a raised exception must come
    from the user's code (its traceback passes through `fn`), not from a guard."""
    expected, expected_error = outcome(fn, *clone(args))
    actual, actual_error = outcome(compiled, *clone(args))
    if expected_error is None and actual_error is None:
        assert_same(expected, actual)
        return
    assert type(actual_error) is type(expected_error), f"raised {actual_error!r}, eager raised {expected_error!r}"
    assert str(actual_error) == str(expected_error)
    frames = [frame.name for frame in traceback.extract_tb(actual_error.__traceback__)]
    assert fn.__name__ in frames, f"the error did not come from {fn.__name__}: {frames}"


def fresh(fn, backend=None, **kwargs):
    framegraph.reset()
    counters.clear()
    return framegraph.compile(fn, backend=backend or CountingBackend(), **kwargs)


# ---- guard reads that fail are misses ---------------------------------------------------

SCALE = 3.0


def times_global(x):
    return x * SCALE


@GUARD_BACKENDS
def test_a_deleted_global_raises_what_eager_raises_then_recompiles_when_it_is_back(c_guards):
    global SCALE
    with config.patch(c_guards=c_guards):
        compiled = fresh(times_global)
        x = torch.randn(3)
        assert_like_eager(times_global, compiled, x)
        del SCALE
        try:
            for _ in range(2):
                assert_like_eager(times_global, compiled, x)  # NameError, from the user's line
        finally:
            SCALE = 5.0
        assert_like_eager(times_global, compiled, x)


class Holder:
    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def times_attribute(x, holder):
    return x * holder.scale


@GUARD_BACKENDS
def test_a_deleted_attribute_raises_from_the_user_line_not_from_the_guard(c_guards):
    with config.patch(c_guards=c_guards):
        compiled = fresh(times_attribute)
        holder = Holder(scale=2.0)
        x = torch.randn(3)
        assert_like_eager(times_attribute, compiled, x, holder)
        del holder.scale
        assert_like_eager(times_attribute, compiled, x, holder)
        holder.scale = 4.0
        assert_like_eager(times_attribute, compiled, x, holder)


class Stage(nn.Module):
    """transformers' SwinStage: `self.downsample` is a submodule on some instances (in
    `_modules`) and a plain attribute holding None or a number on others."""

    def __init__(self, downsample):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.downsample = nn.Linear(4, 4) if downsample == "module" else downsample

    def forward(self, x):
        x = opaque(self.lin(x))  # the rest runs in a resume function all instances share
        if isinstance(self.downsample, nn.Module):
            x = self.downsample(x)
        elif self.downsample is not None:
            x = x * self.downsample
        return x


class Stages(nn.Module):
    def __init__(self, kinds):
        super().__init__()
        self.stages = nn.ModuleList([Stage(kind) for kind in kinds])

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


@GUARD_BACKENDS
@pytest.mark.parametrize("kinds", [("module", None), (None, "module"), ("module", 2.0, None, "module")])
def test_instances_with_and_without_an_optional_submodule_share_one_resume_function(c_guards, kinds):
    torch.manual_seed(0)
    model = Stages(kinds)
    with config.patch(c_guards=c_guards):
        backend = CountingBackend()
        compiled = fresh(model, backend)
        x = torch.randn(2, 4)
        for _ in range(3):
            assert_same(model(x), compiled(x))
        graphs = backend.graph_count
        assert_same(model(x), compiled(x))
        assert backend.graph_count == graphs, "steady state re-traced"
    assert not counters["fallback"], dict(counters["fallback"])


@GUARD_BACKENDS
def test_any_exception_in_a_guard_read_fails_the_check_and_only_base_exceptions_escape(c_guards):
    from framegraph.guards import GuardKind, GuardSet, compile_guards
    from framegraph.source import AttrSource, LocalSource

    class Flaky:
        error: BaseException | None = None

        @property
        def value(self):
            if self.error is not None:
                raise self.error
            return 1

    guards = GuardSet()
    guards.add(GuardKind.TYPE_MATCH, LocalSource("p"), Flaky)
    guards.add(GuardKind.EQUALS_MATCH, AttrSource(LocalSource("p"), "value"), 1)
    with config.patch(c_guards=c_guards):
        check = compile_guards(guards, {})
    flaky = Flaky()
    assert check({"p": flaky}) is True
    for error in (ValueError("arbitrary"), IndexError(3), TypeError("missing item"), KeyError("k"),
                  AttributeError("gone"), ZeroDivisionError()):
        flaky.error = error
        assert check({"p": flaky}) is False, error
        assert check({"p": flaky}) is False, "a failed read must not be remembered as a pass"
    flaky.error = None
    assert check({"p": flaky}) is True
    flaky.error = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        check({"p": flaky})
    assert check({}) is False, "a missing local fails the check"


# ---- fullgraph --------------------------------------------------------------------------

@pytest.mark.parametrize("value", [1, 0, "yes", None, [True]])
def test_fullgraph_must_be_a_bool(value):
    for call in (lambda: framegraph.compile(times_global, fullgraph=value),
                 lambda: framegraph.compile(fullgraph=value)):  # decorator form: refused at once
        with pytest.raises(TypeError, match="fullgraph must be True or False"):
            call()


def test_fullgraph_raises_an_internal_error_that_would_otherwise_fall_back(monkeypatch):
    def broken(*args):
        raise RuntimeError("an internal bug")

    monkeypatch.setattr(convert_frame, "_guard", broken)
    x = torch.randn(3)
    with pytest.raises(RuntimeError, match="an internal bug"):
        fresh(times_global, fullgraph=True)(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_same(times_global(x), fresh(times_global)(x))
    assert counters["fallback"]["RuntimeError"] == 1
    assert any("runs it eagerly" in str(w.message) for w in caught)


def scale(x, n):
    return x * n


def test_fullgraph_raises_at_the_recompile_limit_naming_function_limit_and_reason():
    x = torch.randn(3)
    with config.patch(recompile_limit=2):
        compiled = fresh(scale, fullgraph=True, dynamic=False)
        for n in (1, 2):
            assert_same(scale(x, n), compiled(x, n))
        for _ in range(2):  # every call past the limit, not only the first
            with pytest.raises(RecompileLimitExceeded) as info:
                compiled(x, 3)
            message = str(info.value)
            assert f"scale ({__file__}:" in message and "hit config.recompile_limit (2)" in message
            assert "last reason: L['n'] == 2" in message
        assert_same(scale(x, 2), compiled(x, 2)), "the entries that exist still run"
        assert len(get_cache_entries(scale.__code__)) == 2


def test_fullgraph_raises_at_the_accumulated_limit():
    x = torch.randn(3)
    with config.patch(accumulated_recompile_limit=1):
        compiled = fresh(scale, fullgraph=True, dynamic=False)
        compiled(x, 1)
        with pytest.raises(RecompileLimitExceeded, match="accumulated_recompile_limit \\(1\\)"):
            compiled(x, 2)


def generator(x):
    yield x * 2


def test_fullgraph_on_code_framegraph_skips_raises_at_once_naming_the_rule():
    for fn, name, rule in ((json.dumps, "json.dumps", "trace_rules skip it: "),
                           (generator, f"{__name__}.generator", "trace_rules skip it: generator"),
                           (len, "builtins.len", "it has no Python bytecode")):
        with pytest.raises(Unsupported) as info:
            framegraph.compile(fn, fullgraph=True)
        message = str(info.value)
        assert f"framegraph.compile(fullgraph=True): {name} is not traced: {rule}" in message
    # without fullgraph such a function still runs, eagerly
    assert framegraph.compile(json.dumps, backend="eager")({"a": 1}) == json.dumps({"a": 1})


def breaks_once(x):
    return opaque(x * 2) + 1


class Callable:
    def __call__(self, x):
        return opaque(x * 2) + 1


@pytest.mark.parametrize("make", [lambda: Callable(), lambda: functools.partial(breaks_once),
                                  lambda: Callable().__call__], ids=["object", "partial", "method"])
def test_fullgraph_applies_to_callable_objects_partials_and_methods(make):
    x = torch.randn(3)
    with pytest.raises(Unsupported, match="Attempted to call function marked as skipped"):
        fresh(make(), fullgraph=True)(x)
    assert_same(breaks_once(x), fresh(make())(x))


# ---- the backend's outputs --------------------------------------------------------------

def two_outputs(x):
    y = x * 2
    return y, y.sum() + 1


def lying_backend(change):
    def backend(gm, example_inputs):
        return lambda *args: change(gm.forward(*args))
    backend.__name__ = "lying"
    return backend


@pytest.mark.parametrize("change, message", [
    (lambda out: (*out, torch.ones(1)), "returned 3 output\\(s\\), expected 2"),
    (lambda out: out[:1], "returned 1 output\\(s\\), expected 2"),
    (lambda out: (out[0], 1.0), "returned float as output 1, expected a tensor"),
    (lambda out: out[0], "returned Tensor, expected a tuple of 2 output"),
])
def test_a_backend_returning_the_wrong_outputs_is_named(change, message):
    compiled = fresh(two_outputs, lying_backend(change))
    for _ in range(2):
        with pytest.raises(BackendOutputError, match="backend 'lying'.*" + message):
            compiled(torch.randn(3))


def test_outputs_are_checked_on_the_first_call_only():
    compiled = fresh(two_outputs, "eager")
    x = torch.randn(3)
    assert_same(two_outputs(x), compiled(x))
    names = [name for name in two_outputs.__globals__ if name.startswith("__compiled_fn_")]
    assert len(names) == 1
    installed = two_outputs.__globals__[names[0]]
    assert getattr(installed, "__name__", "") != "first_call", "the check is still in the call path"
    assert_same(two_outputs(x), compiled(x))
    assert two_outputs.__globals__[names[0]] is installed


# ---- mark_dynamic / mark_static ---------------------------------------------------------

@pytest.mark.parametrize("mark", [framegraph.mark_dynamic, framegraph.mark_static])
def test_mark_validates_and_normalises_dims(mark):
    t = torch.randn(2, 3, 4)
    name = mark.__name__
    for bad in (True, 1.0, "0", None, [0, "1"], [0, False], {0: 1}):
        with pytest.raises(TypeError, match=f"framegraph.{name}: dim must be an int or a list of ints"):
            mark(t, bad)
    for bad in (3, -4, [0, 5]):
        with pytest.raises(IndexError, match=f"framegraph.{name}: dimension -?\\d is out of range"):
            mark(t, bad)
    with pytest.raises(IndexError, match="0-dimensional"):
        mark(torch.tensor(1.0), 0)
    with pytest.raises(TypeError, match="expected a tensor"):
        mark([1, 2], 0)
    mark(t, -1)
    mark(t, (0, -2))
    attribute = "_framegraph_dynamic_dims" if mark is framegraph.mark_dynamic else "_framegraph_static_dims"
    assert getattr(t, attribute) == {0, 1, 2}


def test_a_negative_marked_dim_is_the_dynamic_one():
    def f(x):
        return x.sum(-1) * 2

    backend = CountingBackend()
    compiled = fresh(f, backend)
    for n in (3, 5, 7):
        x = torch.randn(2, n)
        framegraph.mark_dynamic(x, -1)
        assert marked_dynamic(x) == {1}
        assert_same(f(x), compiled(x))
    assert backend.graph_count == 1


# ---- a variant that cannot compile is translated once -----------------------------------

def break_in_handler(x, flag):
    try:
        if flag:
            raise ValueError(flag)
        return x * 2 + 1
    except ValueError as error:
        if error.args[0] == 1:
            opaque(x)  # a break while an exception is handled: the whole frame runs eagerly
        else:
            x = opaque(x) * 3
        return x


class CallCounting(CountingBackend):
    """Counts calls of the compiled graphs too: which calls ran compiled code."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __call__(self, gm, example_inputs):
        super().__call__(gm, example_inputs)

        def run(*args):
            self.calls += 1
            return gm.forward(*args)
        return run


def test_a_failing_variant_is_translated_once_and_compiled_variants_keep_running_compiled():
    backend = CallCounting()
    compiled = fresh(break_in_handler, backend)
    x = torch.randn(4)
    sequence = [0, 1, 0, 2, 1, 2, 0, 1, 2, 0]
    for flag in sequence:
        before = backend.calls
        assert_same(break_in_handler(x, flag), compiled(x, flag))
        if flag == 0:
            assert backend.calls == before + 1, "the compiled variant ran eagerly"
    assert sum(counters["unsupported"].values()) == 2, f"one failed translation per failing variant: " \
                                                       f"{dict(counters['unsupported'])}"
    assert backend.graph_count == 1
    entries = get_cache_entries(break_in_handler.__code__)
    assert [entry.code is None for entry in entries] == [False, True, True]


def test_failed_variants_count_against_the_recompile_limit():
    x = torch.randn(4)
    with config.patch(recompile_limit=2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = fresh(break_in_handler)
        for flag in (0, 1, 2, 2, 0, 1):
            assert_same(break_in_handler(x, flag), compiled(x, flag))
    assert len(get_cache_entries(break_in_handler.__code__)) == 2
    assert sum(counters["unsupported"].values()) == 1
    assert sum("recompile_limit (2)" in str(w.message) for w in caught) == 1


def test_past_the_limit_guard_failures_are_diagnosed_once(monkeypatch):
    notes = []
    note = convert_frame._note_recompile
    monkeypatch.setattr(convert_frame, "_note_recompile", lambda *args: (notes.append(1), note(*args)))
    x = torch.randn(3)
    with config.patch(recompile_limit=2), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        compiled = fresh(scale, dynamic=False)
        for n in range(1, 4):
            assert_same(scale(x, n), compiled(x, n))
        diagnosed = len(notes)
        for n in range(4, 14):
            assert_same(scale(x, n), compiled(x, n))
    assert diagnosed == 2 and len(notes) == diagnosed


def test_run_as_is_entries_never_shadow_compiled_ones():
    """A hook-level check of the chain order: an entry running the original code goes behind
    every compiled entry, and a hit on it does not move it to the front."""
    def target(x):
        return ("orig", x)

    def replacement(x):
        return ("compiled", x)

    def callback(frame):
        if frame.f_code is not target.__code__:
            return False
        if frame.f_locals["x"] == 2:
            return (lambda L: L["x"] in (2, 3), replacement.__code__)
        return (lambda L: True, target.__code__)  # run as is, for every x

    _C.reset_code(target.__code__)
    prev = _C.set_eval_frame(callback)
    try:
        assert target(2) == ("compiled", 2)
        assert target(1) == ("orig", 1)
        assert target(1) == ("orig", 1)  # a hit on the run-as-is entry
        assert target(3) == ("compiled", 3)
    finally:
        _C.set_eval_frame(prev)
        _C.reset_code(target.__code__)
