"""Graph breaks that resume: results and side effects equal eager, exact graph and break
counts, each eager side effect runs exactly as often as in eager, and steady state never
re-traces."""

import pytest
import torch
from torch import nn

import framegraph
from framegraph.bytecode import versions
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, clone

EVENTS: list = []
BREAK_COUNTER = 0
# 3.11 runs a comprehension as a frame of its own, so a break inside it breaks its caller
# at the call too; 3.12+ inline it (PEP 709) and the break resumes inside the comprehension.
COMPREHENSION_FRAME = 0 if versions.INLINED_COMPREHENSIONS else 1


class Box:
    value = None


@framegraph.disable
def note(*values):
    """A side effect framegraph does not trace: every call is a graph break."""
    EVENTS.append(len(values))


@framegraph.disable
def opaque(x):
    EVENTS.append("opaque")
    return x * 1.0 + 0.5


def t(*shape, requires_grad=False):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape, requires_grad=requires_grad)


def run_breaks(fn, args, graphs, breaks, backend=None, calls=3):
    framegraph.reset()
    counters.clear()
    EVENTS.clear()
    expected_args = clone(args)
    expected = fn(*expected_args)
    per_call = list(EVENTS)
    counting = CountingBackend()
    compiled = framegraph.compile(fn, backend=backend or counting)
    for call in range(calls):
        EVENTS.clear()
        actual_args = clone(args)
        actual = compiled(*actual_args)
        assert_same(expected, actual)
        assert_same(expected_args, actual_args, "mutated inputs")
        assert EVENTS == per_call, f"call {call}: eager side effects {EVENTS} != {per_call}"
        if call == 0 and backend is None:
            assert counting.graph_count == graphs, f"{counting.graph_count} graphs, expected {graphs}"
            assert sum(counters["graph_break"].values()) == breaks, dict(counters["graph_break"])
    if backend is None:
        assert counting.graph_count == graphs, "steady state re-traced"
    assert not counters["fallback"], dict(counters["fallback"])
    return compiled


# ---- at top level -----------------------------------------------------------------------------
def one_break(x):
    x = x * 2
    note(x)
    return x + 1
def break_first(x):
    note()
    return x.sin() * 2
def break_last(x):
    y = x.cos() + 1
    note(y)
    return y
def break_result_used(x):
    y = opaque(x * 2)
    return y.sin()
def two_breaks(x):
    x = x + 1
    note()
    x = x * 2
    note(x)
    return x - 1
def three_breaks(x):
    a = x.sin()
    note()
    b = a * 2
    note()
    c = b + a
    note()
    return c.relu()
def break_with_constants_alive(x, n):
    k = n * 2
    note()
    return x * k + n
def break_with_list_alive(x):
    acc = [x]
    note()
    acc.append(x * 2)
    return acc[0] + acc[1]
def break_with_dict_alive(x):
    d = {"a": x + 1}
    note()
    return d["a"] * 2
def break_keeps_input_identity(x):
    note()
    return x
def break_with_unused_tensor(x):
    y = x * 5
    note()
    return x + 1
def break_returning_tuple(x):
    a = x * 2
    note()
    return a, x + 1, "tag"
def break_mid_expression(a, b):
    return a * 2 + opaque(b)
def break_mid_call_args(a, b):
    return torch.add(a * 3, opaque(b), alpha=2)
def break_in_nested_expression(a):
    return (a + 1) * (opaque(a) - (a * 2))
def break_print(x):
    x = x * 2
    print("mid")
    return x + 1


# ---- data-dependent control flow, conversions --------------------------------------------------
def if_on_tensor(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1
def if_else_merge(x):
    y = x.cos()
    if y.mean() > 0.5:
        y = y * 2
    else:
        y = y / 2
    return y + x
def while_on_tensor(x):
    x = x.abs()
    while x.sum() < 20:
        x = x * 2
    return x
def item_break(x):
    s = x.sum().item()
    return x * s
def tolist_break(x):
    values = x.tolist()
    return x * len(values)
def bool_of_tensor(x):
    flag = bool((x > 0).all())
    return x * 2 if flag else x * 3
def int_of_tensor(x):
    n = int(x.abs().sum())
    return x * n


# ---- loops -------------------------------------------------------------------------------------
def break_in_for_loop(x):
    for i in range(3):
        x = x + i
        note(i)
    return x
def break_in_loop_over_tensors(xs):
    total = 0
    for v in xs:
        note()
        total = total + v * 2
    return total
def break_in_enumerate_loop(xs):
    out = []
    for i, v in enumerate(xs):
        out.append(v * i)
        note(i, v)
    return out
def break_in_while_loop(x):
    i = 0
    while i < 3:
        x = x * 1.5
        note()
        i += 1
    return x


# ---- context managers and try ------------------------------------------------------------------
def break_in_no_grad(x):
    y = x * 2
    with torch.no_grad():
        z = y * 3
        note()
        w = z + 1
    return w + y
def break_in_enable_grad_inside_no_grad(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
            note()
            c = b + 1
    return a, c
def break_in_try_resumes_inside_it(x):
    try:
        y = x * 2
        note()
    except ValueError:
        y = x
    return y + 1
def break_after_with_block(x):
    with torch.no_grad():
        y = x * 2
    note()
    return y + x


# ---- breaks inside inlined calls (contagion) ----------------------------------------------------
def _level3(x):
    note()
    return x + 3
def _level2(x):
    return _level3(x * 2)
def _level1(x):
    return _level2(x - 1)
def break_one_call_deep(x):
    y = x * 2
    z = _level3(y)
    return z.sin()
def break_three_calls_deep(x):
    x = x * 2
    y = _level1(x)
    return y.sin()
def break_deep_in_loop(xs):
    return [_level3(v) * 2 for v in xs]
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        x = self.a(x).relu()
        note()
        return self.b(x)
class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Model()

    def forward(self, x):
        return self.inner(x) * 2


# ---- unsupported opcodes, builtins, mutations --------------------------------------------------
def import_inside(x):
    import math
    return x * math.pi
class Guarded:
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
def custom_setattr_mutation(x, obj):
    y = x * 2
    obj.value = y
    return y + 1
def unsupported_builtin(x):
    y = x * 2
    names = dir(y)
    return y + len(names) % 2


def break_with_kwargs_call(x):
    y = x * 2
    note(y, x)
    return torch.clamp(y, min=-1.0, max=1.0)
def break_result_in_kwargs(x):
    return torch.clamp(x, min=opaque(x).min(), max=2.0)
def break_with_method_pending(x):
    y = x.relu()
    return y.add(opaque(y))
def break_inside_comprehension(xs):
    return [opaque(v) + 1 for v in xs]
def break_with_none_and_bools(x, flag=None):
    note()
    return x if flag is None else x * 2
def break_keeps_global_write(x):
    global BREAK_COUNTER
    BREAK_COUNTER = BREAK_COUNTER + 1
    note()
    return x * BREAK_COUNTER
def break_with_list_mutation(x, xs):
    xs.append(x * 2)
    note()
    xs.append(x * 3)
    return len(xs)
def break_with_attribute_mutation(x, box):
    box.value = x * 2
    note()
    return box.value + 1
def break_twice_same_line(x):
    for _ in range(2):
        x = opaque(x) * 2
    return x
def break_then_data_dependent(x):
    note()
    if x.sum() > 0:
        return x * 2
    return x * 3
def break_in_both_branches(x, flag):
    if flag:
        note()
        return x + 1
    note(x)
    return x - 1
def break_with_tuple_unpack(x):
    a, b = opaque(x), opaque(x * 2)
    return a * b
def break_on_item_in_loop(xs):
    total = 0.0
    for v in xs:
        total += v.sum().item()
    return total
def break_returns_non_tensor(x):
    note()
    return 3
def break_chain_of_inlined(x):
    return _level3(_level3(x))
def break_with_requires_grad(x):
    y = x * 2
    note()
    return (y * y).sum()
def break_with_dtype_change(x):
    y = x.double()
    note()
    return y.float() + 1
def break_large_stack(a, b, c):
    return (a + 1) * (b + 2) * (c + 3) * opaque(a)


CASES = [
    # (fn, argument factory, graphs, breaks)
    (one_break, lambda: (t(4),), 2, 1),
    (break_first, lambda: (t(4),), 1, 1),
    (break_last, lambda: (t(4),), 1, 1),
    (break_result_used, lambda: (t(4),), 2, 1),
    (two_breaks, lambda: (t(4),), 3, 2),
    (three_breaks, lambda: (t(4),), 4, 3),
    (break_with_constants_alive, lambda: (t(4), 3), 1, 1),
    (break_with_list_alive, lambda: (t(4),), 1, 1),
    (break_with_dict_alive, lambda: (t(4),), 2, 1),
    (break_keeps_input_identity, lambda: (t(4),), 0, 1),
    (break_with_unused_tensor, lambda: (t(4),), 1, 1),
    (break_returning_tuple, lambda: (t(4),), 2, 1),
    (break_mid_expression, lambda: (t(4), t(4)), 2, 1),
    (break_mid_call_args, lambda: (t(4), t(4)), 2, 1),
    (break_in_nested_expression, lambda: (t(4),), 2, 1),
    (if_on_tensor, lambda: (t(4),), 2, 1),
    (if_on_tensor, lambda: (-t(4).abs(),), 2, 1),
    (if_else_merge, lambda: (t(4),), 2, 1),
    (while_on_tensor, lambda: (t(4),), 2, 2),
    (item_break, lambda: (t(4),), 2, 1),
    (tolist_break, lambda: (t(4),), 1, 1),
    (bool_of_tensor, lambda: (t(4),), 2, 1),
    (int_of_tensor, lambda: (t(4),), 2, 1),
    (break_in_for_loop, lambda: (t(4),), 3, 3),
    (break_in_loop_over_tensors, lambda: ([t(2), t(2), t(2)],), 3, 3),
    (break_in_enumerate_loop, lambda: ([t(2), t(2)],), 2, 2),
    # The counter becomes dynamic on its second value; its last `i += 1` is a plain add that
    # nothing reads, so the last resume has no graph.
    (break_in_while_loop, lambda: (t(4),), 3, 3),
    (break_in_no_grad, lambda: (t(4, requires_grad=True),), 2, 1),
    (break_in_enable_grad_inside_no_grad, lambda: (t(4, requires_grad=True),), 2, 1),
    (break_in_try_resumes_inside_it, lambda: (t(4),), 2, 1),  # torch.compile: 0 graphs
    (break_after_with_block, lambda: (t(4, requires_grad=True),), 2, 1),
    (break_one_call_deep, lambda: (t(4),), 3, 2),
    (break_three_calls_deep, lambda: (t(4),), 5, 4),
    (break_deep_in_loop, lambda: ([t(2), t(2)],), 3, 3 + COMPREHENSION_FRAME),
    (import_inside, lambda: (t(4),), 1, 0),  # a loaded module: no break (test_library_idioms.py)
    (custom_setattr_mutation, lambda: (t(4), Guarded()), 1, 0),  # the override is traced
    (unsupported_builtin, lambda: (t(4),), 2, 1),
    (break_with_kwargs_call, lambda: (t(4),), 2, 1),
    (break_result_in_kwargs, lambda: (t(4),), 1, 2),  # clamp with a tensor bound reads its value
    (break_with_method_pending, lambda: (t(4),), 2, 1),
    (break_inside_comprehension, lambda: ([t(2), t(2)],), 2, 2 + COMPREHENSION_FRAME),
    (break_with_none_and_bools, lambda: (t(4),), 0, 1),
    (break_with_list_mutation, lambda: (t(4), [1]), 2, 1),
    (break_with_attribute_mutation, lambda: (t(4), Box()), 2, 1),
    (break_twice_same_line, lambda: (t(4),), 2, 2),
    (break_then_data_dependent, lambda: (t(4),), 2, 2),
    (break_then_data_dependent, lambda: (-t(4).abs(),), 2, 2),
    (break_in_both_branches, lambda: (t(4), True), 1, 1),
    (break_in_both_branches, lambda: (t(4), False), 1, 1),
    (break_with_tuple_unpack, lambda: (t(4),), 2, 2),
    # The running total reaches the resume function as a float that changes between
    # iterations: its second compile takes it as a graph input and adds in the graph (a 4th
    # graph, automatic dynamic floats; torch.compile runs this frame eagerly).
    (break_on_item_in_loop, lambda: ([t(2), t(2), t(2)],), 4, 3),
    (break_returns_non_tensor, lambda: (t(4),), 0, 1),
    (break_chain_of_inlined, lambda: (t(4),), 1, 3),  # both calls reuse _level3's entries
    (break_with_requires_grad, lambda: (t(4, requires_grad=True),), 2, 1),
    (break_with_dtype_change, lambda: (t(4),), 2, 1),
    (break_large_stack, lambda: (t(4), t(4), t(4)), 2, 1),
]


@pytest.mark.parametrize("fn,make_args,graphs,breaks", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_breaks_resume_and_match_eager(fn, make_args, graphs, breaks):
    run_breaks(fn, make_args(), graphs, breaks)


@pytest.mark.parametrize("fn,make_args,graphs,breaks", CASES[:24], ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES[:24])])
def test_breaks_with_aot_eager(fn, make_args, graphs, breaks):
    run_breaks(fn, make_args(), graphs, breaks, backend="aot_eager")


# A break inside a compiled module counts once, in the module's frame it splits (framegraph's
# own frame that calls the module gives up quietly, as torch.compile starts at forward).
@pytest.mark.parametrize("module_cls,graphs,breaks", [(Model, 2, 1), (Wrapper, 3, 2)])
def test_breaks_in_module_methods(module_cls, graphs, breaks):
    torch.manual_seed(0)
    module = module_cls().eval()
    framegraph.reset()
    counters.clear()
    EVENTS.clear()
    x = torch.randn(2, 4)
    expected = module(x)
    per_call = list(EVENTS)
    counting = CountingBackend()
    compiled = framegraph.compile(module, backend=counting)
    for _ in range(3):
        EVENTS.clear()
        assert_same(expected, compiled(x))
        assert EVENTS == per_call
    assert counting.graph_count == graphs
    assert sum(counters["graph_break"].values()) == breaks


def test_seed_000_demo(capsys):
    run_breaks(break_print, (t(4),), graphs=2, breaks=1, calls=3)
    assert capsys.readouterr().out.count("mid") == 4  # once eagerly, once per compiled call


def test_steady_state_never_retraces():
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(three_breaks, backend=counting)
    x = t(4)
    for _ in range(100):
        assert_same(three_breaks(x), compiled(x))
    assert counting.graph_count == 4
    assert counters["stats"]["unique_graphs"] == 4


def test_fullgraph_raises_at_the_first_break_with_its_line():
    import inspect

    framegraph.reset()
    with pytest.raises(framegraph.exc.Unsupported) as info:
        framegraph.compile(break_three_calls_deep, backend="eager", fullgraph=True)(t(4))
    filename, lineno, name = info.value.user_stack[0]
    assert (filename, name) == (__file__, "_level3")
    assert lineno == inspect.getsourcelines(_level3)[1] + 1
    assert "note" in str(info.value)


def test_user_exception_from_the_eager_instruction_propagates_unchanged():
    @framegraph.disable
    def explode(x):
        raise KeyError("from the eager part")

    def fn(x):
        y = x * 2
        explode(y)
        return y

    framegraph.reset()
    with pytest.raises(KeyError, match="from the eager part"):
        framegraph.compile(fn, backend="eager")(t(3))


def test_explain_and_the_log_agree(caplog):
    import logging

    framegraph.reset()
    framegraph.set_logs("graph_breaks")
    try:
        with caplog.at_level(logging.INFO, logger="framegraph"):
            explanation = framegraph.explain(break_three_calls_deep)(t(4))
    finally:
        framegraph.set_logs()
    logged = [m for m in caplog.messages if "Graph break in user code" in m]
    assert explanation.graph_break_count == len(logged) == 4
    assert explanation.graph_count == 5
    assert all(r.user_stack[0][2] == "_level3" for r in explanation.break_reasons)
    assert all("_level3" in m and "Graph Break Reason" in m for m in logged)
    assert "Graph Count: 5" in str(explanation) and "Graph Break Count: 4" in str(explanation)
    assert explanation.ops_per_graph[0] == ["mul"]


def test_explain_leaves_no_cache_entries():
    from framegraph.eval_frame import get_cache_entries

    framegraph.reset()
    out = framegraph.explain(two_breaks)(t(4))
    assert out.graph_count == 3 and out.graph_break_count == 2
    assert out.out_guards and out.compile_times
    assert get_cache_entries(two_breaks.__code__) == []


def test_explain_works_on_modules():
    torch.manual_seed(0)
    out = framegraph.explain(Model().eval())(torch.randn(2, 4))
    assert out.graph_count == 2 and out.graph_break_count == 1


def test_a_value_that_only_passes_through_a_break_is_not_guarded():
    import time

    def fn(x):
        x = x * 2
        time.perf_counter()  # its result is handed to the resume function, then dropped
        return x + 1

    framegraph.reset()
    counting = CountingBackend()
    compiled = framegraph.compile(fn, backend=counting)
    for _ in range(10):
        assert_same(fn(t(3)), compiled(t(3)))
    assert counting.graph_count == 2


def _operator_bodies(x):
    a = torch.cond(x.sum() > 0, lambda y: y.sin(), lambda y: y.cos(), (x,))
    b = torch.vmap(lambda r: r.exp())(x)
    return torch.utils.checkpoint.checkpoint(_loud_body, a + b, use_reentrant=False)


_SEEN = []


def _loud_body(y):
    _SEEN.append(1)
    return y * 2


def test_explain_nests_operator_bodies_and_names_the_refused_line():
    out = framegraph.explain(_operator_bodies)(t(3, 4))
    assert out.ops_per_graph[0] == ["sum", "gt", "cond{cond_true_0: sin; cond_false_1: cos}", "getitem",
                                    "vmap{vmap_body_2: exp}", "getitem", "add"]
    (reason,) = out.break_reasons
    assert reason.user_stack[0][2] == "_loud_body"  # the line inside the body, then the call
    assert reason.user_stack[1][2] == "_operator_bodies"
    assert "cond{cond_true_0: sin" in str(out)


# ---- objects of C types framegraph does not model -----------------------------------------------
def writes_to_a_stream(x, stream):
    y = x.sin()
    stream.write(f"{y.shape[0]} values\n")  # a break at the call; the resume holds the stream
    stream.write("and more\n")
    return y.cos() + stream.tell()


def reads_a_stream_property(x, stream):
    y = x.sin()
    if not stream.closed:  # a field of the C object: read while tracing, and guarded
        y = y + 1
    return y.cos()


def iterates_a_stream(x, stream):
    for line in stream:  # an iterator framegraph cannot step: the loop runs eagerly
        x = x + len(line)
        note()
    return x * 2


@pytest.mark.parametrize("fn, graphs, breaks", [
    (writes_to_a_stream, 3, 3),
    (reads_a_stream_property, 1, 0),
])
def test_an_unmodelled_c_object_breaks_at_its_use_and_a_new_one_does_not_recompile(fn, graphs, breaks):
    import io

    import torch._dynamo

    x = t(4)
    expected = [(fn(x, stream), stream.getvalue()) for stream in (io.StringIO(), io.StringIO("ab\ncd\n"))]
    counts = {}
    for frontend in ("framegraph", "torch"):
        framegraph.reset()
        counters.clear()
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        counting = CountingBackend()
        compiled = (framegraph.compile if frontend == "framegraph" else torch.compile)(fn, backend=counting)
        actual = [(compiled(x, stream), stream.getvalue()) for stream in (io.StringIO(), io.StringIO("ab\ncd\n"))]
        assert_same(expected, actual)
        found = (counters if frontend == "framegraph" else torch._dynamo.utils.counters)["graph_break"]
        counts[frontend] = (counting.graph_count, sum(found.values()))
    assert not counters["fallback"]
    assert counts["framegraph"] == (graphs, breaks)
    assert counts["framegraph"][0] <= counts["torch"][0] and counts["framegraph"][1] <= counts["torch"][1], counts


def test_an_unmodelled_iterator_runs_its_loop_eagerly_without_an_internal_error():
    import io
    import warnings

    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(iterates_a_stream, backend=CountingBackend())
    x = t(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # framegraph warns when its own error made a frame run eagerly
        for text in ("", "ab\ncd\n"):
            EVENTS.clear()
            expected = iterates_a_stream(x, io.StringIO(text)), list(EVENTS)
            EVENTS.clear()
            assert_same(expected, (compiled(x, io.StringIO(text)), list(EVENTS)))
    assert not counters["fallback"]


def test_a_field_of_an_unmodelled_c_object_is_guarded():
    import io

    framegraph.reset()
    counting = CountingBackend()
    compiled = framegraph.compile(reads_a_stream_property, backend=counting)
    x, closed = t(4), io.StringIO()
    closed.close()
    for stream in (io.StringIO(), closed, io.StringIO(), closed):
        assert_same(reads_a_stream_property(x, stream), compiled(x, stream))
    assert counting.graph_count == 2  # one per value of `closed`
