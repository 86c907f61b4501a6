"""`torch.compiler.nested_compile_region` at torch.compile's parity: each call of a marked
function is an `invoke_subgraph` node, and calls whose bodies are the same graph on the same
kinds of inputs share one subgraph and identifier (a backend compiles it once); a call autograd
records is inlined (invoke_subgraph's backward fails outside a compiler's fake tensors, as
torch.compile's graph fails under the eager backend). Every case runs
eagerly, under framegraph and under torch.compile with counting backends: equal results and
raised exception types, no more graphs and breaks than torch.compile. (Ops are not compared:
torch.compile inlines a region's first call.) Cases with inputs that require grad also compare
gradients through the compiled result.
"""

import pytest
import torch

import framegraph
from framegraph.counters import counters

from .datadep_cases import parity_params
from .helpers import CountingBackend, assert_same, clone, gradients_like_eager
from .python_parity import check_operator_counts, t

LAYERS = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])
BIAS = torch.randn(4, generator=torch.Generator().manual_seed(7))
SEEN = []


def tg(*shape, seed=0):
    return t(*shape, seed=seed).requires_grad_()


@torch.compiler.nested_compile_region
def block(x, w, b):
    return torch.nn.functional.linear(x, w, b).relu() + x


@torch.compiler.nested_compile_region
def pair(x):
    return x.sin(), x.cos() * 2


@torch.compiler.nested_compile_region
def reads_a_global(x):
    return x * BIAS


@torch.compiler.nested_compile_region
def scaled(x, k):
    return x * k


@torch.compiler.nested_compile_region
def outer_region(x):
    return reads_a_global(x) + 1


@torch.compiler.nested_compile_region
def loud(x):
    SEEN.append(1)
    return x * 2


@torch.compiler.nested_compile_region
def returns_its_input(x):
    return x


@torch.compiler.nested_compile_region
def with_keywords(x, *, scale, shift):
    return x * scale + shift


@torch.compiler.nested_compile_region
def as_list(x):
    return [x + 1, x - 1]


def three_layers(x):
    for layer in LAYERS:
        x = block(x, layer.weight, layer.bias)
    return x


def region_pair(x):
    a, b = pair(x)
    c, d = pair(a + b)
    return c - d


def region_reads_a_global(x):
    return reads_a_global(x) + reads_a_global(x * 2)


def region_with_an_int(x):
    return scaled(x, 2) + scaled(x, 3)


def region_calls_a_region(x):
    return outer_region(x) * outer_region(x + 1)


def region_with_a_side_effect(x):
    return loud(x) + 1


def region_returning_its_input(x):
    return returns_its_input(x) + 1


def region_on_two_shapes(x, y):
    return pair(x)[0].sum() + pair(y)[0].sum()


def region_with_keywords(x, y):
    return with_keywords(x, scale=2.0, shift=y) + with_keywords(y, scale=2.0, shift=x)


def region_returns_a_list(x):
    a, b = as_list(x)
    return a * b


def region_in_a_loop_without_grad(x):
    with torch.no_grad():
        for layer in LAYERS:
            x = block(x, layer.weight, layer.bias)
    return x


CASES = [
    (region_with_keywords, lambda: (t(4), t(4, seed=1))),
    (region_returns_a_list, lambda: (t(4),)),
    (region_in_a_loop_without_grad, lambda: (t(2, 4),)),
    (three_layers, lambda: (t(2, 4),)),
    (region_pair, lambda: (t(3),)),
    (region_reads_a_global, lambda: (t(4),)),
    (region_with_an_int, lambda: (t(4),)),
    (region_calls_a_region, lambda: (t(4),)),
    (region_with_a_side_effect, lambda: (t(4),)),
    (region_returning_its_input, lambda: (t(4),)),
    (region_on_two_shapes, lambda: (t(3), t(5, seed=1))),
    (three_layers, lambda: (tg(2, 4),)),
    (region_pair, lambda: (tg(3),)),
]

# Where framegraph falls short of torch.compile, and why (strict xfails).
SHORT = {
    "region_with_a_side_effect": "a region is traced into a graph of its own, which cannot hold a change to a "
                                 "Python object: its call runs eagerly at a break",
}


def _subgraphs(backend: CountingBackend) -> set:
    return {n.args[1] for g in backend.graphs for n in g.graph.nodes
            if n.target is torch.ops.higher_order.invoke_subgraph}


@parity_params(CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check_operator_counts(fn, make_args)


def test_identical_calls_share_one_subgraph():
    with torch.no_grad():  # the layers' parameters require grad: with grad on, regions are inlined
        _check_shared(t(2, 4))


def _check_shared(x):
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    assert_same(three_layers(x), framegraph.compile(three_layers, backend=backend)(x))
    calls = [n for g in backend.graphs for n in g.graph.nodes if n.target is torch.ops.higher_order.invoke_subgraph]
    assert len(calls) == 3 and len(_subgraphs(backend)) == 1
    assert len({call.args[0].target for call in calls}) == 1


@pytest.mark.parametrize("fn, make_args", [pytest.param(fn, make, id=fn.__name__) for fn, make in CASES
                                           if any(getattr(a, "requires_grad", False) for a in make())])
def test_gradients_like_eager(fn, make_args):
    def grads(f, args):
        for p in LAYERS.parameters():
            p.grad = None
        out = f(*args)
        out.sum().backward()
        return out, [a.grad for a in args], [p.grad for p in LAYERS.parameters()]

    args = make_args()
    backend = gradients_like_eager(fn, lambda: (clone(args),), grads)
    assert backend.graph_count == 1 and not counters["graph_break"], dict(counters["graph_break"])
    assert not _subgraphs(backend), "a region autograd records is inlined"


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_backends_take_the_region(backend):
    x = t(2, 4)
    framegraph.reset()
    counters.clear()
    torch.testing.assert_close(framegraph.compile(three_layers, backend=backend)(x), three_layers(x))
    assert not counters["graph_break"], dict(counters["graph_break"])
