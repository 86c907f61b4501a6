"""Collectives inside compiled code, on 2 gloo processes: the functional collectives and the
in-place torch.distributed.all_reduce are graph nodes, with the results, graph counts and
break counts of eager and of torch.compile."""

from __future__ import annotations

import copy

import torch

from . import harness
from .training import (Counting, STEPS, assert_same_run, batches, framegraph_breaks, reset_all, torch_breaks,
                       train)

pytestmark = harness.requires_gloo


def _chain(x):
    import torch.distributed._functional_collectives as funcol

    group = torch.distributed.group.WORLD
    y = funcol.all_reduce(x * 2, "sum", group)
    z = funcol.all_gather_tensor(y + 1, 0, group)
    r = funcol.reduce_scatter_tensor(z, "sum", 0, group)
    return funcol.wait_tensor(r) * 3


def _other_dims(x):
    import torch.distributed._functional_collectives as funcol

    y = funcol.all_gather_tensor(x, 1, [0, 1])  # the group as a list of ranks
    return funcol.reduce_scatter_tensor(y * 2, "max", 1, "0") + 1  # and as a group name


def _in_place(x):
    y = x * 2
    torch.distributed.all_reduce(y)
    return y + 1


def _in_place_ops(x):
    """Each ReduceOp the functional all_reduce takes, positional and by keyword, read off
    ReduceOp as programs write it: every one a graph node."""
    from torch.distributed import ReduceOp

    y, z = x * 2, x + 1
    torch.distributed.all_reduce(y, torch.distributed.ReduceOp.MAX)
    torch.distributed.all_reduce(z, op=ReduceOp.MIN)
    w = y * z
    torch.distributed.all_reduce(w, op=torch.distributed.ReduceOp.PRODUCT, group=torch.distributed.group.WORLD)
    torch.distributed.all_reduce(y, torch.distributed.ReduceOp.SUM, None)
    torch.distributed.all_reduce(z, op=torch.distributed.ReduceOp.AVG)
    bits = x.long()
    torch.distributed.all_reduce(bits, op=ReduceOp.BXOR)
    return y + z + w + bits


def _async(x):
    y = x * 2
    work = torch.distributed.all_reduce(y, async_op=True)
    work.wait()
    return y + 1


CASES = {_chain: (1, 0), _other_dims: (1, 0), _in_place: (1, 0), _in_place_ops: (1, 0), _async: (2, 2)}


def _parity(rank, world_size):
    import framegraph
    from framegraph.backends import lookup_backend

    for fn, (graphs, breaks) in CASES.items():
        x = (torch.arange(4.0) + 10 * rank).view(2, 2)
        expected = fn(x.clone())
        for backend in ("eager", "aot_eager"):
            reset_all()
            ours, theirs = Counting(lookup_backend(backend)), Counting()
            got = framegraph.compile(fn, backend=ours)(x.clone())
            ours_breaks = framegraph_breaks()
            reference = torch.compile(fn, backend=theirs)(x.clone())
            torch.testing.assert_close(got, expected, rtol=0, atol=0, msg=lambda m: f"{fn.__name__} {backend}: {m}")
            torch.testing.assert_close(reference, expected, rtol=0, atol=0)
            assert (ours.count, ours_breaks) == (theirs.count, torch_breaks()) == (graphs, breaks), \
                f"{fn.__name__}: framegraph {ours.count} graphs, {ours_breaks} breaks; " \
                f"torch.compile {theirs.count}, {torch_breaks()}"
            targets = [str(n.target) for gm in ours.graphs for n in gm.graph.nodes]
            assert fn is _async or any("_c10d_functional" in t for t in targets), targets
            if fn is _in_place_ops:  # the six, each with the op it names
                ops = [n.args[1] for gm in ours.graphs for n in gm.graph.nodes
                       if "_c10d_functional.all_reduce" in str(n.target)]
                assert ops == ["max", "min", "product", "sum", "avg", "bxor"], ops


def test_collectives_as_graph_nodes():
    harness.run(_parity)


class Normalised(torch.nn.Module):
    """A layer whose outputs are centred on the mean over every rank's batch: an all_reduce
    in the forward of the compiled module."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 64)

    def forward(self, x):
        import torch.distributed._functional_collectives as funcol

        h = self.linear(x)
        mean = funcol.all_reduce(h.detach().mean(0), "avg", torch.distributed.group.WORLD)
        return (h - mean).square().mean()


def _training(rank, world_size):
    import framegraph

    torch.manual_seed(0)
    eager = Normalised()
    model = copy.deepcopy(eager)
    from framegraph.backends import lookup_backend

    counting = Counting(lookup_backend("aot_eager"))
    reset_all()
    compiled = framegraph.compile(model, backend=counting)
    data = batches(rank, STEPS, (8, 64))
    expected = train(eager, eager, data)
    losses = train(compiled, compiled, data)
    assert_same_run(expected, eager, losses, model, "funcol model", tolerance=1e-6)
    assert counting.count == 1 and framegraph_breaks() == 0


def test_training_with_a_collective_in_the_graph():
    harness.run(_training)
