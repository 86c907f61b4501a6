"""Automatic dynamic floats: a Python float argument is a constant of the first graph; once a
recompile sees it change, it is a graph input (a 0-d float64 tensor the graph reads with
`.item()`), so one graph serves every later value, as in torch.compile
(`torch._dynamo.config.specialize_float=False`).

Every case runs eagerly, under framegraph and under torch.compile with counting backends, over
a sequence of float values: each result (or raised exception) equals eager's, and the graph,
op and break counts and the number of cache entries of the function equal torch.compile's.
A case is `(fn, args)`: `args` makes the arguments of a sequence of calls, one float value
each (`args.calls()`); called with no arguments it gives the next call's, round and round,
so the break-everywhere fuzzer (which calls a case three times) varies the float too.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import framegraph
from framegraph.backends import lookup_backend
from framegraph.counters import counters
from framegraph.eval_frame import get_cache_entries

from .helpers import CountingBackend, assert_same, clone


def t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


VALUES = (0.5, 1.5, 2.5, 3.25, 1.75)


class Args:
    """The arguments of a case's calls: `make(value)` for each of `values`."""

    def __init__(self, make, values=VALUES):
        self.make, self.values, self.made = make, tuple(values), 0

    def calls(self) -> list[tuple]:
        return [self.make(value) for value in self.values]

    def __call__(self) -> tuple:
        value = self.values[self.made % len(self.values)]
        self.made += 1
        return self.make(value)

    def __copy__(self) -> "Args":
        return self  # one factory per case: copies of the case lists (the fuzzer's) share it


def floats(*shape, values=VALUES):
    """A tensor of `shape` and the float."""
    return Args(lambda s: (t(*shape), s), values)


def seeded(*shape, seeds=(0, 1, 2, 3)):
    """A tensor of `shape`, other data at each call (for the floats read from it)."""
    return Args(lambda seed: (t(*shape, seed=seed),), seeds)


# ---- arithmetic with tensors ------------------------------------------------------------------
def repro(x, s):
    return x * s + s * 2
def divides(x, s):
    return x / s - 1 / s
def powers(x, s):
    return (x + s) ** 2 * (s - 1) + s ** 0.5
def reduction_then_float(x, s):
    return s * x.sum() + x.mean() / s
def two_floats(x, a, b):
    return x * a + b * (a - b)
def float_times_size(x, s):
    return x * (s * x.shape[0]) - s
def negated_and_abs(x, s):
    return x * -s + abs(s - 2.0)
def float_returned(x, s):
    return x * s, s * 3
def float_in_list(x, s):
    return [x * s, s + 1]
def float_in_where(x, s):
    return torch.where(x > 0, x, s)
def float_reversed(x, s):
    return s - x, s / (x.abs() + 1), s ** x.clamp(-1, 1)


ARITHMETIC_CASES = [
    (repro, floats(3)),
    (divides, floats(4)),
    (powers, floats(4)),
    (reduction_then_float, floats(2, 3)),
    (two_floats, Args(lambda ab: (t(3), *ab), [(0.5, 0.25), (1.5, 0.75), (2.5, 1.25), (4.0, -1.5)])),
    (float_times_size, floats(5)),
    (negated_and_abs, floats(3)),
    (float_returned, floats(3)),
    (float_in_list, floats(3)),
    (float_in_where, floats(6)),
    (float_reversed, floats(4)),
]


# ---- the float as a Python number: math, builtins ------------------------------------------
def square_root(x, s):
    return x * math.sqrt(s)
def trigonometry(x, s):
    return x * math.cos(s) + math.sin(s) * math.tanh(s)
def floor_and_ceil(x, s):
    return x * math.floor(s) + math.ceil(s)
def int_and_round(x, s):
    return x * int(s) + round(s)
def min_and_max(x, s):
    return x * min(s, 2.0) + max(s, 1.0, 0.5)
def float_of_float(x, s):
    return x * float(s) + math.pi * s
def truncated(x, s):
    return x * math.trunc(s * 2)


MATH_CASES = [
    (square_root, floats(3)),
    (trigonometry, floats(3)),
    (floor_and_ceil, floats(3)),
    (int_and_round, floats(3)),
    (min_and_max, floats(3)),
    (float_of_float, floats(3)),
    (truncated, floats(3)),
]


# ---- the float in Python control flow (guards on its range, or its value) -------------------
def branch_on_float(x, s):
    if s > 1.0:
        return x * s
    return x - s
def truth_of_float(x, s):
    if s:
        return x * s
    return x + 1
def comparison_chain(x, s):
    if 0.0 < s < 2.0:
        return x * 2
    return x * 3
def float_in_tuple(x, s):
    if s in (0.5, 1.5):
        return x + s
    return x - s
def loop_over_int_of_float(x, s):
    for _ in range(int(s)):
        x = x + s
    return x * 2
def conditional_expression(x, s):
    return x * (s if s > 1.0 else 1.0)
def float_type_checks(x, s):
    if isinstance(s, float) and type(s) is float and s is not None:
        return x * s
    return x


CONTROL_FLOW_CASES = [
    (branch_on_float, floats(3, values=(0.5, 1.5, 2.5, 0.75, 3.0, 0.25))),
    (truth_of_float, floats(3, values=(0.5, 1.5, 2.5, 0.75))),
    (comparison_chain, floats(3, values=(0.5, 1.5, 2.5, 0.25, 3.5))),
    (float_in_tuple, floats(3, values=(0.5, 1.5, 2.5, 0.5, 3.5))),
    (loop_over_int_of_float, floats(3, values=(0.5, 1.5, 2.5, 1.75))),
    (conditional_expression, floats(3, values=(0.5, 1.5, 2.5, 0.75, 3.0))),
    (float_type_checks, floats(3)),
]


# ---- the float passed to torch functions --------------------------------------------------
def full_of_float(x, s):
    return torch.full((3,), s) + x
def clamp_between(x, s):
    return torch.clamp(x, min=-s, max=s + 1)
def clamp_methods(x, s):
    return x.clamp_min(s) + x.clamp(max=s)
def activations(x, s):
    return F.leaky_relu(x, s) + F.elu(x, alpha=s) + F.softplus(x, beta=s)
def lerp_and_alpha(x, s):
    return torch.lerp(x, x * 2, s) + x.add(x, alpha=s)
def tensor_of_float(x, s):
    return torch.tensor(s) + x, torch.tensor([s, 1.0]) * 2
def arange_to_float(x, s):
    return torch.arange(0, s, 0.5) * 2
def masked_fill_with_float(x, s):
    return x.masked_fill(x > 0, s)
def in_place_with_float(x, s):
    y = x.clone()
    y.mul_(s).add_(x, alpha=-s)
    y[0] = s
    return y
def dropout_probability(x, s):
    return F.dropout(x, p=s / 10, training=False) * 2
def layer_norm_eps(x, s):
    return F.layer_norm(x, (3,), eps=s * 1e-5)


TORCH_FUNCTION_CASES = [
    (full_of_float, floats(3)),
    (clamp_between, floats(6)),
    (clamp_methods, floats(6)),
    (activations, floats(6)),
    (lerp_and_alpha, floats(4)),
    (tensor_of_float, floats(2)),
    (arange_to_float, floats(2)),
    (masked_fill_with_float, floats(6)),
    (in_place_with_float, floats(4)),
    # Both frontends pin these floats (the ops read their values), so each value recompiles.
    (dropout_probability, floats(4, values=VALUES[:4])),
    (layer_norm_eps, floats(2, 3, values=VALUES[:4])),
]


# ---- floats in resume functions: read at a graph break, used after it -----------------------
def item_then_arithmetic(x):
    v = x.sum().item()
    return x * v + v * 2
def item_then_math(x):
    v = x.abs().sum().item()
    return x / math.sqrt(v)
def item_then_branch(x):
    v = x.max().item()
    y = x * 2
    if v > 1.0:
        return y * v
    return y - v
def float_across_an_explicit_break(x, s):
    y = x * s
    torch._dynamo.graph_break()
    return y + s * 2


RESUME_CASES = [
    (item_then_arithmetic, seeded(3)),
    (item_then_math, seeded(3)),
    (item_then_branch, seeded(3, seeds=(0, 1, 2, 3, 4))),
    (float_across_an_explicit_break, floats(3)),
]

ALL_CASES = ARITHMETIC_CASES + MATH_CASES + CONTROL_FLOW_CASES + TORCH_FUNCTION_CASES + RESUME_CASES


# ---- running both frontends -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Counts:
    graphs: int
    ops: int
    breaks: int
    entries: int  # cache entries of the function's own code: 1 + its recompiles


@dataclasses.dataclass
class Counting(CountingBackend):
    """Records every graph, then compiles it with a named backend of the frontend."""

    frontend: str = "framegraph"
    inner: str = "eager"

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        if self.inner == "eager":
            return gm.forward
        if self.frontend == "framegraph":
            return lookup_backend(self.inner)(gm, example_inputs)
        import torch._dynamo

        return torch._dynamo.lookup_backend(self.inner)(gm, example_inputs)


def _call(fn, args):
    try:
        return fn(*args), None
    except Exception as error:
        return None, error


def _compile(frontend: str, fn, backend, **options):
    import torch._dynamo

    # Also between frontends: AOTAutograd records in torch._dynamo which float symbols it
    # could not keep (by name), and reset() forgets them.
    torch._dynamo.reset()
    if frontend == "framegraph":
        framegraph.reset()
        counters.clear()
        return framegraph.compile(fn, backend=backend, **options)
    torch._dynamo.utils.counters.clear()
    return torch.compile(fn, backend=backend, **options)


def _counts(frontend: str, fn, backend: Counting) -> Counts:
    if frontend == "framegraph":
        breaks, entries = sum(counters["graph_break"].values()), len(get_cache_entries(fn.__code__))
    else:
        import torch._dynamo

        breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
        entries = len(torch._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__))
    return Counts(backend.graph_count, backend.op_count, breaks, entries)


def run_both(fn, calls, backend: str = "eager", same=assert_same, frontends=("torch", "framegraph"),
             **options) -> dict[str, Counts]:
    """Each call's result (or exception type) under each frontend equals eager's; returns the
    counts of each frontend after all calls."""
    expected = [_call(fn, clone(args)) for args in calls]
    counts = {}
    for frontend in frontends:
        counting = Counting(frontend=frontend, inner=backend)
        compiled = _compile(frontend, fn, counting, **options)
        for i, args in enumerate(calls):
            result, error = _call(compiled, clone(args))
            want, want_error = expected[i]
            where = f"{frontend} call {i} {args[1:]}"
            if want_error is not None or error is not None:
                assert type(error) is type(want_error), f"{where}: raised {error!r}, eager raised {want_error!r}"
            else:
                same(want, result, where)
        counts[frontend] = _counts(frontend, fn, counting)
        if frontend == "framegraph":
            assert not counters["fallback"], dict(counters["fallback"])
    return counts


def _name(case) -> str:
    return case[0].__name__


@pytest.mark.parametrize("case", ALL_CASES, ids=_name)
def test_like_torch_compile(case):
    fn, args = case
    counts = run_both(fn, args.calls())
    assert counts["framegraph"] == counts["torch"], counts


def test_the_repro_compiles_two_graphs_not_eight():
    """The issue's program: framegraph compiled 8 graphs and hit the recompile limit."""
    calls = [(torch.ones(3), 0.5 + i) for i in range(12)]
    counts = run_both(repro, calls)
    assert counts["framegraph"] == counts["torch"] == Counts(graphs=2, ops=2 + 4, breaks=0, entries=2), counts


# ---- settings ---------------------------------------------------------------------------------
def test_specialize_float_restores_one_graph_per_value():
    import torch._dynamo

    calls = [(torch.ones(3), 0.5 + i) for i in range(6)]
    with framegraph.config.patch(specialize_float=True), torch._dynamo.config.patch(specialize_float=True):
        counts = run_both(repro, calls)
    assert counts["framegraph"] == counts["torch"], counts
    assert counts["framegraph"].graphs == 6


def test_dynamic_true_makes_floats_dynamic_from_the_first_call():
    calls = [(torch.ones(3), 0.5 + i) for i in range(4)]
    counts = run_both(repro, calls, dynamic=True)
    assert counts["framegraph"] == counts["torch"], counts
    assert counts["framegraph"].graphs == 1


def test_dynamic_false_never_makes_floats_dynamic():
    calls = [(torch.ones(3), 0.5 + i) for i in range(4)]
    counts = run_both(repro, calls, dynamic=False)
    assert counts["framegraph"] == counts["torch"], counts
    assert counts["framegraph"].graphs == 4


def test_automatic_dynamic_shapes_off_keeps_floats_specialised():
    import torch._dynamo

    calls = [(torch.ones(3), 0.5 + i) for i in range(4)]
    with framegraph.config.patch(automatic_dynamic_shapes=False), \
            torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        counts = run_both(repro, calls)
    assert counts["framegraph"] == counts["torch"], counts
    assert counts["framegraph"].graphs == 4


# ---- guards and what is not a float -----------------------------------------------------------
def _guard_text(fn) -> list[str]:
    return [entry.check_fn.check.describe() for entry in get_cache_entries(fn.__code__)]


def test_the_dynamic_float_is_guarded_by_its_type_only():
    compiled = _compile("framegraph", repro, CountingBackend())
    for value in (0.5, 1.5):
        compiled(torch.ones(3), value)
    newest, first = _guard_text(repro)
    assert "L['s'] == 0.5" in first
    assert "type(L['s']) is float" in newest
    assert "L['s'] ==" not in newest and "L['s'] is" not in newest
    # The ShapeEnv's own guard: NaN fails every comparison, so it is compiled by itself.
    assert "not math.isnan(L['s'])" in newest


def test_the_float_input_reaches_the_graph_as_a_float64_tensor():
    backend = CountingBackend()
    compiled = _compile("framegraph", repro, backend)
    for value in (0.5, 1.5, -2.0):
        compiled(torch.ones(3), value)
    graph = backend.graphs[-1].graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    value = placeholders[-1].meta["example_value"]
    assert (value.dtype, value.dim()) == (torch.float64, 0)
    assert [n.target for n in placeholders[-1].users] == ["item"]


def float_or_bool(x, s):
    return x * s


@pytest.mark.parametrize("values", [(True, False, True), (np.float64(0.5), np.float64(1.5), np.float64(2.5))],
                         ids=["bool", "numpy_float64"])
def test_bools_and_numpy_floats_are_not_dynamic_floats(values):
    """A bool is no float, and an np.float64 (a float subclass) keeps its own handling: the
    type guard of a dynamic float (`type(x) is float`) never admits them."""
    backend = CountingBackend()
    compiled = _compile("framegraph", float_or_bool, backend)
    for value in (*values, 0.5, 1.5, 2.5):
        assert_same(float_or_bool(torch.ones(2), value), compiled(torch.ones(2), value))
    for gm in backend.graphs:
        for node in gm.graph.nodes:
            if node.op == "placeholder" and isinstance(node.meta.get("example_value"), torch.Tensor) \
                    and node.meta["example_value"].dtype == torch.float64:
                assert node.target == "L_s"  # only the Python floats, after their value changed
    assert backend.graph_count == len(set(values)) + 2


def _same_bits(expected, actual, path="result"):
    """assert_same, except that floats (and tensor elements) must also agree on the sign of
    zero, and NaN equals NaN."""
    if isinstance(expected, (tuple, list)):
        assert type(expected) is type(actual) and len(expected) == len(actual), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            _same_bits(e, a, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert type(actual) is float, path
        assert math.isnan(expected) == math.isnan(actual), f"{path}: {actual} != {expected}"
        if not math.isnan(expected):
            assert actual == expected and math.copysign(1.0, actual) == math.copysign(1.0, expected), \
                f"{path}: {actual!r} != {expected!r}"
    else:
        assert_same(expected, actual, path)
        if isinstance(expected, torch.Tensor):
            assert torch.equal(torch.signbit(expected), torch.signbit(actual)), f"{path}: signs differ"


def signs(x, s):
    return x * s, 1.0 / s if s else math.copysign(1.0, s), s * 2


def test_nan_infinity_and_signed_zeros_are_exact():
    """NaN, infinities and zeros are compiled as constants (the ShapeEnv cannot reason about
    the first two and has one zero); a graph made dynamic with another value serves them too
    when its guards hold, and the sign of a zero survives."""
    values = (0.5, 1.5, float("nan"), float("inf"), -0.0, 0.0, -0.0, float("-inf"), 2.5, -0.0, float("nan"))
    calls = [(torch.ones(3), v) for v in values]
    counts = run_both(signs, calls, same=_same_bits, frontends=("framegraph",))
    # 0.5, the dynamic graph (it serves 2.5 and both infinities: its guards are `s != 0` and
    # not NaN), nan, -0.0 and 0.0 (each pinned with its sign)
    assert counts["framegraph"].entries == 5, counts


def copysign_of_float(x, s):
    return x * math.copysign(1.0, s)


def test_a_float_pinned_while_dynamic_keeps_the_sign_of_zero():
    """copysign needs the value: a dynamic float is pinned with a ShapeEnv guard. A zero is
    never the value a dynamic graph is traced with, so `== 0.0` never stands for -0.0."""
    calls = [(torch.ones(2), v) for v in (0.5, 1.5, -0.0, 0.0, -0.0, 2.5, 0.0)]
    run_both(copysign_of_float, calls, same=_same_bits, frontends=("framegraph",))


# ---- the recompile limit ---------------------------------------------------------------------
def float_needed_by_python(x, s):
    return x * s.hex().count("0")


def test_a_float_python_needs_still_meets_the_recompile_limit():
    """`s.hex()` needs the value: every value is a graph until the limit, as before."""
    backend = CountingBackend()
    compiled = _compile("framegraph", float_needed_by_python, backend)
    with pytest.warns(RuntimeWarning, match="recompile_limit"):
        for i in range(12):
            value = 0.5 + i / 7
            assert_same(float_needed_by_python(torch.ones(2), value), compiled(torch.ones(2), value))
    assert backend.graph_count == 8


def test_recompile_log_names_the_float(caplog):
    compiled = _compile("framegraph", repro, CountingBackend())
    framegraph.set_logs("recompiles")
    try:
        with caplog.at_level(logging.INFO, logger="framegraph"):
            for value in (0.5, 1.5, 2.5):
                compiled(torch.ones(3), value)
    finally:
        framegraph.set_logs()
    text = "\n".join(caplog.messages)
    assert text.count("Recompiling function repro") == 1 and "L['s'] == 0.5" in text, text


# ---- real backends -----------------------------------------------------------------------------
AOT_CASES = [
    (repro, floats(3)),
    (branch_on_float, floats(3, values=(0.5, 1.5, 2.5, 0.75, 3.0))),
    (item_then_arithmetic, seeded(3)),
    # AOTAutograd pins a float the graph returns (`3.0*L['s'] == 4.5`): each value recompiles.
    (float_returned, floats(3)),
]
# AOTAutograd cannot rewrite these ops of a float into tensor ops: it pins the float and asks
# for the frame to be translated again with the float a constant (its first graph is counted
# twice), and the frame's later compiles keep it a constant. torch.compile keeps the float's
# arithmetic in those graphs as nodes on constants (`neg = -1.5`); framegraph folds it, so
# only the op counts differ.
AOT_PINNED_CASES = [
    (clamp_between, floats(6)),
    (int_and_round, floats(3, values=VALUES[:4])),
]


@pytest.mark.parametrize("case", AOT_CASES, ids=_name)
def test_aot_eager_like_torch_compile(case):
    fn, args = case
    counts = run_both(fn, args.calls(), backend="aot_eager")
    assert counts["framegraph"] == counts["torch"], counts


@pytest.mark.parametrize("case", AOT_PINNED_CASES, ids=_name)
def test_aot_eager_pins_like_torch_compile(case):
    fn, args = case
    counts = run_both(fn, args.calls(), backend="aot_eager")
    ours, theirs = counts["framegraph"], counts["torch"]
    assert dataclasses.replace(ours, ops=0) == dataclasses.replace(theirs, ops=0), counts
    assert 0 < ours.ops < theirs.ops, counts


def sqrt_and_returned(x, s):
    return torch.clamp(x, min=-s) * math.sqrt(s), s * 3


def test_inductor():
    """One inductor compile of a dynamic float graph (the first call is the eager backend's
    business: specialised) serves every value. A float the graph returns is pinned by
    AOTAutograd with a guard (`3.0*L['s'] == 4.5`): torch's compile caches do not check that
    guard, so framegraph compiles such graphs without them (torch.compile reuses the cached
    kernel for the next value, and returns the first value's float)."""
    calls = floats(6, values=(0.5, 1.5, 2.5, 0.75)).calls()
    counts = run_both(repro, calls, backend="inductor")
    assert counts["framegraph"] == counts["torch"], counts
    assert counts["framegraph"].graphs == 2
    counts = run_both(sqrt_and_returned, calls, backend="inductor", frontends=("framegraph",))
    assert counts["framegraph"].graphs == 4
