"""A torch.Generator the program passes in is held by the graph and given to the ops that draw
from it (variables/rng.py): over several calls the draws, and the generator's state after
them, are eager's, under every backend, with no break where torch.compile breaks. A new
generator each call recompiles once, then draws at a break."""

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters as torch_counters

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same


def noise_added(x, generator):
    return x * 2 + torch.randn(x.shape, generator=generator)


def draws_in_a_helper(x, generator):
    def jitter(t):
        return t + 0.1 * torch.rand(t.shape, generator=generator)
    return jitter(x).sin(), torch.randint(0, 10, (3,), generator=generator)


def draws_around_a_break(x, generator):
    a = x + torch.randn(3, generator=generator)
    print("", end="")  # a graph break: the draws on both sides keep eager's order
    return a * torch.rand(3, generator=generator)


def reseeds_inside(x, generator):
    generator.manual_seed(3)  # a method of the generator: a break, run as is
    return x + torch.randn(3, generator=generator)


def dropout_like(x, generator):
    keep = torch.rand(x.shape, generator=generator) > 0.5
    return torch.where(keep, x * 2, torch.zeros_like(x))


FUNCTIONS = [noise_added, draws_in_a_helper, draws_around_a_break, reseeds_inside, dropout_like]
BREAKS = {draws_around_a_break: 1, reseeds_inside: 1}


def _run(fn, calls=3):
    """Each call's result with one generator, and the generator's state after the calls."""
    generator = torch.Generator().manual_seed(11)
    x = torch.randn(3, generator=torch.Generator().manual_seed(0))
    return [fn(x, generator) for _ in range(calls)], generator.get_state()


@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_one_generator_draws_as_eager(fn):
    expected = _run(fn)
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    assert_same(expected, _run(framegraph.compile(fn, backend=backend)))
    assert sum(counters["graph_break"].values()) == BREAKS.get(fn, 0), dict(counters["graph_break"])
    assert not counters["recompiles"], dict(counters["recompiles"])
    assert any(n.op == "get_attr" and isinstance(getattr(g, n.target), torch.Generator)
               for g in backend.graphs for n in g.graph.nodes), "the graph holds the generator"

    # torch.compile breaks at every op given a generator: framegraph has no more graphs or breaks.
    torch._dynamo.reset()
    torch_counters.clear()
    theirs = CountingBackend()
    assert_same(expected, _run(torch.compile(fn, backend=theirs)))
    assert backend.graph_count <= theirs.graph_count
    assert sum(counters["graph_break"].values()) < sum(torch_counters["graph_break"].values())


@pytest.mark.parametrize("backend", ["aot_eager", "aot_eager_decomp_partition", "inductor"])
@pytest.mark.parametrize("fn", [noise_added, dropout_like], ids=["noise_added", "dropout_like"])
def test_backends_draw_as_eager(fn, backend):
    """AOTAutograd keeps the generator in the graph; inductor would draw from a pickled copy of
    it, so there the draw is a break."""
    expected = _run(fn)
    framegraph.reset()
    counters.clear()
    assert_same(expected, _run(framegraph.compile(fn, backend=backend)))
    assert not counters["fallback"]
    assert sum(counters["graph_break"].values()) == (backend == "inductor"), dict(counters["graph_break"])


def test_a_new_generator_each_call_recompiles_once_then_breaks():
    def call(fn, seed):
        return fn(torch.ones(3), torch.Generator().manual_seed(seed))

    expected = [call(noise_added, seed) for seed in range(4)]
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    compiled = framegraph.compile(noise_added, backend=backend)
    assert_same(expected, [call(compiled, seed) for seed in range(4)])
    assert sum(counters["recompiles"].values()) == 1, dict(counters["recompiles"])
    assert [r for r in counters["graph_break"] if "Random generator" in r], dict(counters["graph_break"])
    assert backend.graph_count == 3  # the held generator's graph; then the graphs either side of the draw


def test_another_generator_fails_the_guard():
    """The graph holds the first generator: a call with another draws from that one."""
    framegraph.reset()
    compiled = framegraph.compile(noise_added, backend="eager")
    first, second = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    x = torch.zeros(3)
    compiled(x, first)
    assert torch.equal(compiled(x, second), noise_added(x, torch.Generator().manual_seed(2)))
    once = torch.Generator().manual_seed(1)
    noise_added(x, once)
    assert torch.equal(first.get_state(), once.get_state()), "the first generator drew once"
