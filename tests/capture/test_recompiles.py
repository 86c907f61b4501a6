"""The life cycle of compiled entries: recompiles with their reasons, the limits, reset(),
global state, and the switches and polyfills that decide what is traced."""

import functools
import itertools
import logging
import operator
import warnings

import pytest
import torch

import framegraph
from framegraph.counters import counters
from framegraph.eval_frame import get_cache_entries

from .helpers import CountingBackend, assert_same, check


def scale(x, n):
    return x * n


def loop_n(x, n):
    for _ in range(n):
        x = x + 1
    return x


def compiled_with(fn, dynamic=None):
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    return framegraph.compile(fn, backend=backend, dynamic=dynamic), backend


def test_recompile_log_names_each_failing_guard_with_its_line(caplog):
    compiled, _ = compiled_with(scale, dynamic=False)
    framegraph.set_logs("recompiles")
    try:
        with caplog.at_level(logging.INFO, logger="framegraph"):
            for n in (2, 3, 4):
                compiled(torch.ones(2), n)
    finally:
        framegraph.set_logs()
    messages = [m for m in caplog.messages if "Recompiling function scale" in m]
    assert len(messages) == 2
    last = messages[-1].splitlines()
    assert last[0].endswith(f"Recompiling function scale in {__file__}:{scale.__code__.co_firstlineno}")
    assert "triggered by the following guard failure(s):" in last[1]
    # each with the value it reads now
    assert last[2].endswith(f"- L['n'] == 3 (now: 4)  # {__file__}:{scale.__code__.co_firstlineno + 1} in scale")
    assert last[3].endswith("- L['n'] == 2 (now: 4)  " + f"# {__file__}:{scale.__code__.co_firstlineno + 1} in scale")


def test_the_limit_warns_once_at_the_ninth_value_then_runs_eagerly():
    compiled, backend = compiled_with(scale, dynamic=False)
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 12):
            assert_same(scale(x, n), compiled(x, n))
    limit = [str(w.message) for w in caught if "recompile_limit" in str(w.message)]
    assert len(limit) == 1
    assert limit[0].startswith("framegraph hit config.recompile_limit (8)\nfunction: 'scale' (")
    assert "last reason: L['n'] == 8" in limit[0] and "FRAMEGRAPH_LOGS=recompiles" in limit[0]
    assert backend.graph_count == 8
    assert len(get_cache_entries(scale.__code__)) == 8
    assert_same(scale(x, 3), compiled(x, 3)), "existing entries are still used"
    framegraph.reset()
    assert get_cache_entries(scale.__code__) == []
    compiled(x, 10)
    assert backend.graph_count == 9, "after reset() the function compiles again"


def test_range_over_a_varying_int_recompiles_each_time_until_the_limit():
    compiled, backend = compiled_with(loop_n)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for n in range(1, 12):
            assert_same(loop_n(torch.zeros(2), n), compiled(torch.zeros(2), n))
    assert backend.graph_count == 8


def test_recompile_limit_is_configurable_and_validated():
    with pytest.raises(ValueError, match="at least 1"):
        framegraph.config.recompile_limit = 0
    with framegraph.config.patch(recompile_limit=2):
        compiled, backend = compiled_with(scale, dynamic=False)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            for n in range(5):
                assert_same(scale(torch.ones(2), n), compiled(torch.ones(2), n))
        assert backend.graph_count == 2
    assert framegraph.config.recompile_limit == 8


def test_accumulated_limit_caps_all_frames():
    def a(x):
        return x + 1

    def b(x):
        return x + 2

    with framegraph.config.patch(accumulated_recompile_limit=1):
        framegraph.reset()
        backend = CountingBackend()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert_same(a(torch.ones(2)), framegraph.compile(a, backend=backend)(torch.ones(2)))
            assert_same(b(torch.ones(2)), framegraph.compile(b, backend=backend)(torch.ones(2)))
        assert backend.graph_count == 1
        assert any("accumulated_recompile_limit (1)" in str(w.message) for w in caught)
    framegraph.reset()


@pytest.mark.parametrize("flip", ["grad", "inference", "default_dtype", "deterministic", "autocast",
                                  "autocast_dtype"])
def test_global_state_changes_recompile_and_the_reason_names_them(flip, caplog):
    compiled, backend = compiled_with(lambda x: x * 2 + 1)
    if flip == "autocast_dtype":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            compiled(torch.ones(2))
    else:
        compiled(torch.ones(2))
    framegraph.set_logs("recompiles")
    try:
        with caplog.at_level(logging.INFO, logger="framegraph"):
            if flip == "grad":
                with torch.no_grad():
                    compiled(torch.ones(2))
            elif flip == "inference":
                with torch.inference_mode():
                    compiled(torch.ones(2))
            elif flip == "autocast_dtype":
                with torch.autocast("cpu", dtype=torch.float16):
                    compiled(torch.ones(2))
            elif flip == "default_dtype":
                old = torch.get_default_dtype()
                torch.set_default_dtype(torch.float64)
                try:
                    compiled(torch.ones(2))
                finally:
                    torch.set_default_dtype(old)
            elif flip == "deterministic":
                torch.use_deterministic_algorithms(True)
                try:
                    compiled(torch.ones(2))
                finally:
                    torch.use_deterministic_algorithms(False)
            else:
                with torch.autocast("cpu"):
                    compiled(torch.ones(2))
    finally:
        framegraph.set_logs()
    assert backend.graph_count == 2
    names = {"grad": "grad_mode", "inference": "inference_mode", "default_dtype": "default_dtype",
             "deterministic": "deterministic_algorithms", "autocast": "autocast",
             "autocast_dtype": "autocast"}
    assert any("___check_global_state()" in m and names[flip] in m for m in caplog.messages)


# ---- switches ---------------------------------------------------------------------------
@framegraph.allow_in_graph
def fused_op(x, y):
    # Python a tracer would follow; allow_in_graph keeps it one opaque node instead.
    z = x * y
    for _ in range(3):
        z = z + 1
    return z


CALLS = []


@framegraph.disable
def logged_eagerly(x):
    CALLS.append(x.shape)
    return x * 2


def uses_fused(x, y):
    return fused_op(x, y).sin()


def uses_disabled(x):
    return logged_eagerly(x + 1) - 1


def test_allow_in_graph_is_one_call_node():
    backend = check(uses_fused, torch.randn(3), torch.randn(3), graphs=1, ops=2)
    targets = [n.target for n in backend.graphs[0].graph.nodes if n.op == "call_function"]
    assert fused_op in targets


def test_disable_runs_eagerly_with_a_break_at_the_call():
    CALLS.clear()
    compiled, backend = compiled_with(uses_disabled)
    x = torch.randn(3)
    for _ in range(3):
        assert_same(uses_disabled(x), compiled(x))
    assert len(CALLS) == 6
    assert backend.graph_count == 2
    assert sum(counters["graph_break"].values()) == 1


def test_config_patch_restores_even_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with framegraph.config.patch(recompile_limit=3, strict=True):
            raise RuntimeError("inside")
    assert framegraph.config.recompile_limit == 8 and framegraph.config.strict is False
    with pytest.raises(AttributeError, match="did you mean recompile_limit"):
        framegraph.config.patch(recompile_limits=3)


# ---- polyfills --------------------------------------------------------------------------
def sum_genexpr(xs): return sum(x * 2 for x in xs)
def chain_tensors(xs, ys): return torch.stack(list(itertools.chain(xs, ys)))
def reduce_tensors(xs): return functools.reduce(operator.add, xs)
def reduce_with_initial(xs): return functools.reduce(lambda a, b: a * b, xs, 2.0)
def product_pairs(xs): return [a * b for a, b in itertools.product(xs, xs)]
def islice_tensors(xs): return list(itertools.islice(xs, 1, None, 2))
def repeat_tensor(x): return torch.cat(list(itertools.repeat(x, 3)))
def accumulate_tensors(xs): return list(itertools.accumulate(xs))
def zip_longest_tensors(xs, ys): return [a if b is None else a + b for a, b in itertools.zip_longest(xs, ys)]
def partial_call(x):
    add2 = functools.partial(torch.add, alpha=2)
    return add2(x, x)
def partial_argument(fn, x): return fn(x)


POLYFILLED = [
    (sum_genexpr, lambda: ([torch.ones(2), torch.ones(2)],), 4),
    (chain_tensors, lambda: ([torch.ones(2)], [torch.zeros(2)]), 1),
    (reduce_tensors, lambda: ([torch.ones(2), torch.ones(2), torch.ones(2)],), 2),
    (reduce_with_initial, lambda: ([torch.ones(2) * 3, torch.ones(2)],), 2),
    (product_pairs, lambda: ([torch.ones(2), torch.ones(2) * 2],), 4),
    (islice_tensors, lambda: ([torch.ones(2) * i for i in range(5)],), 0),
    (repeat_tensor, lambda: (torch.ones(2),), 1),
    (accumulate_tensors, lambda: ([torch.ones(2), torch.ones(2), torch.ones(2)],), 2),
    (zip_longest_tensors, lambda: ([torch.ones(2), torch.ones(2)], [torch.ones(2)]), 1),
    (partial_call, lambda: (torch.ones(2),), 1),
    (partial_argument, lambda: (functools.partial(torch.mul, other=3.0), torch.ones(2)), 1),
]


@pytest.mark.parametrize("fn,make_args,ops", POLYFILLED, ids=[c[0].__name__ for c in POLYFILLED])
def test_polyfills_stay_in_one_graph_without_breaks(fn, make_args, ops):
    check(fn, *make_args(), graphs=1 if ops else 0, ops=ops, fullgraph=True)
    assert not counters["graph_break"]
