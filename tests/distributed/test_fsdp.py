"""FSDP2 (`fully_shard` over a CPU device mesh) on 2 gloo processes: compiled per block and
as a whole model, trained 20 steps with the losses and parameters of eager FSDP2, with no
more graphs or breaks than torch.compile.

FSDP2's forward hooks run eagerly under both (framegraph.distributed.fsdp): compiled whole,
the root's hooks run around the frame picked up, a forward looping over the managed blocks
runs eagerly and each block's forward compiles on its own (no break); called one by one, the
forward is split at each block."""

from __future__ import annotations

import pytest
import torch

from . import harness
from .models import Blocks, UnrolledBlocks
from .training import Counting, STEPS, assert_same_run, batches, framegraph_breaks, reset_all, torch_breaks, train

pytestmark = harness.requires_gloo


def _sharded(mesh, compiler, mode):
    """Blocks sharded one by one, then the root; "per_block" compiles each block's forward
    (FSDP2's hooks around it run eagerly), otherwise the whole sharded model is compiled."""
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = UnrolledBlocks() if mode == "unrolled" else Blocks()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
        if mode == "per_block" and compiler is not None:
            block.forward = compiler(block.forward)
    fully_shard(model, mesh=mesh)
    run = compiler(model) if compiler is not None and mode != "per_block" else model
    return model, run


def _train_and_count(rank, world_size, mode):
    from torch.distributed.device_mesh import init_device_mesh

    import framegraph

    mesh = init_device_mesh("cpu", (world_size,))
    data = batches(rank, STEPS, (8, 64))
    eager, eager_run = _sharded(mesh, None, mode)
    expected = train(eager, lambda x: eager_run(x).square().mean(), data)
    counts = {}
    for name, compile_fn in (("framegraph", framegraph.compile), ("torch.compile", torch.compile)):
        reset_all()
        counting = Counting()
        model, run = _sharded(mesh, lambda fn: compile_fn(fn, backend=counting), mode)
        losses = train(model, lambda x: run(x).square().mean(), data)
        assert_same_run(expected, eager, losses, model, f"FSDP2 {name}", tolerance=1e-6)
        counts[name] = (counting.count, framegraph_breaks() if name == "framegraph" else torch_breaks())
    (graphs, breaks), (their_graphs, their_breaks) = counts["framegraph"], counts["torch.compile"]
    assert graphs <= their_graphs and breaks <= their_breaks, counts
    if mode == "whole":  # the loop over blocks runs eagerly: no break, one graph serves the blocks
        assert breaks == 0, counts


@pytest.mark.parametrize("mode", ["per_block", "whole", "unrolled"])
def test_fsdp2_trains_as_eager(mode):
    """Per block, whole model (a loop over the blocks) and whole model calling the blocks one
    by one: the run of eager FSDP2, no more graphs or breaks than torch.compile."""
    harness.run(_train_and_count, mode)
