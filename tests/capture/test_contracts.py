"""What framegraph promises at its edges: a guard read that fails is a miss, never an
exception; fullgraph=True never falls back silently; a backend's outputs are checked; bad
arguments are refused with a clear error; a variant that cannot compile is translated once."""

import traceback

import pytest
import torch
from torch import nn

import framegraph
from framegraph import config
from framegraph.counters import counters

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
