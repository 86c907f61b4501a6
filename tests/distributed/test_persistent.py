"""The persistent cache (framegraph/persistent) under DDP and FSDP2, on 2 gloo processes: each
rank trains twice, the second time as a restarted job would (every compiled entry dropped),
from the translations the first saved. The second run loads them instead of tracing, with
the same graphs (DDP's bucket split applies to a loaded graph as to a traced one) and the
losses and parameters of eager training."""

from __future__ import annotations

import copy
import os

import torch

from . import harness
from .models import Layers
from .test_fsdp import _sharded
from .training import Counting, STEPS, assert_same_run, batches, framegraph_breaks, reset_all, train

pytestmark = harness.requires_gloo


def _ddp(model, kind):
    from torch.nn.parallel import DistributedDataParallel

    if kind == "ddp_ignoring":
        DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, ["layers.3.weight", "layers.2.weight"])
    return DistributedDataParallel(model, bucket_cap_mb=1)


def _twice(rank, world_size, cache, kind):
    import framegraph
    from framegraph.counters import counters

    # A directory per rank: with one, a rank's first run could already find the other's save.
    cache = os.path.join(cache, f"rank{rank}")
    if kind.startswith("ddp"):
        torch.manual_seed(0)
        reference = Layers()
        eager_model = copy.deepcopy(reference)
        eager = _ddp(eager_model, kind)
        data = batches(rank, STEPS)
    else:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (world_size,))
        eager, _ = _sharded(mesh, None, "per_block")
        eager_model = eager
        data = batches(rank, STEPS, (8, 64))
    expected = train(eager, lambda x: eager(x).square().mean(), data)
    runs = []
    for _ in range(2):
        reset_all()
        counting = Counting()
        with framegraph.config.patch(cache_dir=cache):
            if kind.startswith("ddp"):
                model = copy.deepcopy(reference)
                run = framegraph.compile(_ddp(model, kind), backend=counting)
            else:
                model, run = _sharded(mesh, lambda fn: framegraph.compile(fn, backend=counting), "per_block")
            losses = train(model, lambda x: run(x).square().mean(), data)
        assert_same_run(expected, eager_model, losses, model, f"{kind}, start {len(runs) + 1}", tolerance=1e-6)
        runs.append((dict(counters["persistent"]), counting.count, framegraph_breaks()))
    (cold, cold_graphs, cold_breaks), (warm, warm_graphs, warm_breaks) = runs
    assert cold.get("saved", 0) >= 1 and "hits" not in cold, runs
    # Every saved frame loaded, none traced (an entry for another block may be tried first).
    assert warm.get("hits") == cold["saved"] and not {"misses", "saved"} & set(warm), runs
    assert warm_graphs == cold_graphs and warm_breaks == 0, runs
    if kind.startswith("ddp"):  # one per bucket (2 when 2 weights are ignored: test_ddp)
        assert cold_graphs == (2 if kind == "ddp_ignoring" else 4), f"{cold_graphs} graphs"


def test_ddp_loads_its_translation_and_splits_it_at_the_buckets(tmp_path):
    harness.run(_twice, str(tmp_path), "ddp")


def test_ddp_split_of_a_loaded_graph_leaves_out_the_ignored_parameters(tmp_path):
    """The parameters DDP does not all-reduce fill no bucket, in a loaded graph as in a traced one."""
    harness.run(_twice, str(tmp_path), "ddp_ignoring")


def test_fsdp2_per_block_loads_its_translations(tmp_path):
    harness.run(_twice, str(tmp_path), "fsdp")
