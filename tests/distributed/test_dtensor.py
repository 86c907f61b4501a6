"""DTensor under framegraph, on 2 gloo processes: DTensor inputs and the ops on them, the DTensor
API (placements, device_mesh, to_local, from_local, redistribute, full_tensor) as graph nodes,
guards that recompile when the placements change, and a tensor-parallel MLP (ColwiseParallel,
then RowwiseParallel) trained 20 steps with the losses and parameters of the uncompiled run.
Graph and break counts are compared with torch.compile's in the same run."""

from __future__ import annotations

import torch

from . import harness
from .training import Counting, STEPS, batches, framegraph_breaks, reset_all, torch_breaks, train

pytestmark = harness.requires_gloo


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(64, 128)
        self.down = torch.nn.Linear(128, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def _tensor_parallel(mesh, compiler):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    model = parallelize_module(MLP(), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    return model, (compiler(model) if compiler is not None else model)


def _whole(t):
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _train_tensor_parallel(rank, world_size):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor

    import framegraph

    mesh = init_device_mesh("cpu", (world_size,))
    data = batches(0, STEPS, (8, 64))  # every rank the same batch, as tensor parallelism takes it
    for backend in ("eager", "aot_eager"):
        eager, run = _tensor_parallel(mesh, None)
        expected = train(eager, lambda x: run(x).square().mean(), data)
        counts = {}
        for name, compile_fn in (("framegraph", framegraph.compile), ("torch.compile", torch.compile)):
            reset_all()
            counting = Counting(None if backend == "eager" else _aot_eager(name))
            model, run = _tensor_parallel(mesh, lambda m: compile_fn(m, backend=counting))
            losses = train(model, lambda x: run(x).square().mean(), data)
            torch.testing.assert_close(torch.stack(losses), torch.stack(expected), rtol=1e-6, atol=1e-6,
                                       msg=lambda m: f"{name} {backend}: losses differ\n{m}")
            for (pname, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
                assert isinstance(p, DTensor) and p.placements == q.placements, pname
                torch.testing.assert_close(p.full_tensor(), q.full_tensor(), rtol=1e-6, atol=1e-6)
            counts[name] = (counting.count, framegraph_breaks() if name == "framegraph" else torch_breaks())
        assert counts["framegraph"] == (1, 0), (backend, counts)
        assert counts["framegraph"] <= counts["torch.compile"], (backend, counts)


def _aot_eager(frontend: str):
    if frontend == "framegraph":
        from framegraph.backends import lookup_backend

        return lookup_backend("aot_eager")
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend("aot_eager")


def test_tensor_parallel_mlp_trains_as_eager():
    """Colwise then rowwise sharded Linear layers: the styles' hooks (from_local, an async
    redistribute, to_local) and the DTensor parameters in one graph, under eager and
    aot_eager, with the uncompiled run's losses and parameters."""
    harness.run(_train_tensor_parallel)


def _dtensor_program(x, w):
    from torch.distributed.tensor import DTensor, Replicate, Shard

    y = torch.relu(x @ w) + 1
    scale = 2.0 if y.placements[0].is_shard() else 3.0
    local = y.to_local() * scale
    again = DTensor.from_local(local, y.device_mesh, [Shard(0)])
    return y.sum(), local, again.redistribute(y.device_mesh, [Replicate()]), y.full_tensor()


def _across_a_break(x):
    """A DTensor and its placements live across a graph break: graph outputs, then inputs of
    the resumed frame, the placements rebuilt as constants."""
    from torch.distributed.tensor import Replicate

    y = x * 2
    placements = y.placements
    torch._dynamo.graph_break()
    return (y + 1).redistribute(placements=[Replicate()]), placements


def _ops_and_guards(rank, world_size):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import framegraph

    mesh = init_device_mesh("cpu", (world_size,))
    torch.manual_seed(0)
    calls = [(distribute_tensor(torch.randn(8, 4), mesh, [Shard(0)]), distribute_tensor(torch.randn(4, 4), mesh, [Replicate()])),
             (distribute_tensor(torch.randn(8, 4), mesh, [Shard(0)]), distribute_tensor(torch.randn(4, 4), mesh, [Replicate()])),
             (distribute_tensor(torch.randn(8, 4), mesh, [Replicate()]), distribute_tensor(torch.randn(4, 4), mesh, [Replicate()]))]
    expected = [_dtensor_program(*args) for args in calls]
    counts = {}
    for name, compile_fn in (("framegraph", framegraph.compile), ("torch.compile", torch.compile)):
        reset_all()
        counting = Counting()
        compiled = compile_fn(_dtensor_program, backend=counting)
        graphs_after = []
        for args, want in zip(calls, expected):
            got = compiled(*args)
            for e, a in zip(want, got):
                assert type(e) is type(a) and getattr(e, "placements", None) == getattr(a, "placements", None)
                torch.testing.assert_close(_whole(a), _whole(e), rtol=0, atol=0)
            graphs_after.append(counting.count)
        counts[name] = (graphs_after, framegraph_breaks() if name == "framegraph" else torch_breaks())
    # The second call hits the cache; new placements recompile (the program reads them).
    assert counts["framegraph"] == ([1, 1, 2], 0), counts
    assert counts["framegraph"][0][-1] <= counts["torch.compile"][0][-1], counts

    x = calls[0][0]
    want = _across_a_break(x)
    counts = {}
    for name, compile_fn in (("framegraph", framegraph.compile), ("torch.compile", torch.compile)):
        reset_all()
        counting = Counting()
        got = compile_fn(_across_a_break, backend=counting)(x)
        assert got[1] == want[1] and got[0].placements == want[0].placements
        torch.testing.assert_close(got[0].full_tensor(), want[0].full_tensor(), rtol=0, atol=0)
        counts[name] = (counting.count, framegraph_breaks() if name == "framegraph" else torch_breaks())
    assert counts["framegraph"] == (2, 1) and counts["framegraph"] <= counts["torch.compile"], counts


def test_dtensor_operations_are_graph_nodes():
    """The DTensor API in one graph; a cache hit, then a recompile for new placements; and
    DTensors kept across a graph break."""
    harness.run(_ops_and_guards)
