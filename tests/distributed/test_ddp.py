"""DistributedDataParallel under framegraph, on 2 gloo processes: DDP's forward runs eagerly,
the module it wraps is compiled, and each graph is split at DDP's gradient buckets as
torch.compile's DDP optimizer splits it (same number of pieces, same training)."""

from __future__ import annotations

import copy

import pytest
import torch

from . import harness
from .models import Layers
from .training import Counting, STEPS, assert_same_run, batches, reset_all, train

pytestmark = harness.requires_gloo


def _ddp(model, bucket_cap_mb):
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)


def _split_counts(rank, world_size):
    import framegraph

    data = batches(rank, 2)
    for cap, expected in ((1, 4), (2, 3), (3, 2), (25, 2)):
        torch.manual_seed(0)
        reference = Layers()
        models = [copy.deepcopy(reference) for _ in range(3)]
        eager = _ddp(models[0], cap)
        ours, theirs = Counting(), Counting()
        reset_all()
        compiled = framegraph.compile(_ddp(models[1], cap), backend=ours)
        by_torch = torch.compile(_ddp(models[2], cap), backend=theirs)
        expected_losses = train(eager, lambda x: eager(x).sum(), data)
        losses = train(compiled, lambda x: compiled(x).sum(), data)
        train(by_torch, lambda x: by_torch(x).sum(), data)
        assert_same_run(expected_losses, models[0], losses, models[1], f"bucket_cap_mb={cap}")
        assert (ours.count, theirs.count) == (expected, expected), \
            f"bucket_cap_mb={cap}: framegraph made {ours.count} graphs, torch.compile {theirs.count}"


def test_split_at_buckets_as_torch_compile():
    harness.run(_split_counts)


def _training(rank, world_size, backend, around):
    import framegraph

    torch.manual_seed(0)
    eager_model = Layers()
    model = copy.deepcopy(eager_model)
    eager = _ddp(eager_model, 1)
    counting = Counting(_backend(backend))
    reset_all()
    if around:  # DDP around a compiled module
        compiled = _ddp(framegraph.compile(model, backend=counting), 1)
    else:
        compiled = framegraph.compile(_ddp(model, 1), backend=counting)
    data = batches(rank, STEPS)
    expected = train(eager, lambda x: eager(x).square().mean(), data)
    losses = train(compiled, lambda x: compiled(x).square().mean(), data)
    assert_same_run(expected, eager_model, losses, model, f"DDP {backend}", tolerance=1e-6)
    assert counting.count == 4, f"{counting.count} graphs, expected one per bucket"


def _backend(name):
    from framegraph.backends import lookup_backend

    return lookup_backend(name)


@pytest.mark.parametrize("around", [False, True], ids=["compile(DDP)", "DDP(compile)"])
def test_training_aot_eager(around):
    """20 steps; with AOTAutograd each piece is an autograd function of its own, so DDP's
    hooks see each bucket's gradients when that piece's backward ends."""
    harness.run(_training, "aot_eager", around)


def _unsplit_and_explained(rank, world_size):
    import framegraph

    torch.manual_seed(0)
    model = Layers()
    counting = Counting()
    reset_all()
    with framegraph.config.patch(optimize_ddp=False):
        compiled = framegraph.compile(_ddp(model, 1), backend=counting)
        compiled(torch.randn(8, 512)).sum().backward()
    assert counting.count == 1
    reset_all()
    explained = framegraph.explain(_ddp(model, 1))(torch.randn(8, 512))
    assert explained.graph_count == 1 and len(explained.split_reasons) == 1, str(explained)
    assert "4 subgraphs" in explained.split_reasons[0] and "optimize_ddp" in explained.split_reasons[0]
    assert "Split Reason 1: DDP optimizer" in str(explained)


def test_optimize_ddp_off_and_explain():
    harness.run(_unsplit_and_explained)


def _ignored_parameters(rank, world_size):
    """A parameter DDP does not all-reduce (`_ddp_ignored`) does not count towards a bucket.
    torch.compile's DDP optimizer means to skip them too, but reads the marker on the fake
    parameters of its graph, which do not carry it: it splits as if nothing were ignored."""
    from torch.nn.parallel import DistributedDataParallel

    import framegraph

    torch.manual_seed(0)
    model = Layers()
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        model, ["layers.3.weight", "layers.2.weight"])
    ours = Counting()
    reset_all()
    framegraph.compile(_ddp(model, 1), backend=ours)(torch.randn(8, 512)).sum().backward()
    # Backwards: 2 biases and layers.1.weight fill the first 1 MB bucket; layer 0 is the second.
    assert ours.count == 2, ours.count


def test_ignored_parameters_do_not_fill_buckets():
    harness.run(_ignored_parameters)


def _bucket_hooks(rank, world_size):
    """DDP's communication hook is called once per gradient bucket, during backward: recorded
    (bucket index and size, and where the input's gradient came) over 3 steps of eager DDP,
    framegraph and torch.compile, all with aot_eager so each piece of a split graph is one
    autograd function."""
    from torch._dynamo.backends.registry import lookup_backend as torch_backend
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    import framegraph

    torch.manual_seed(0)
    reference = Layers()
    data = batches(rank, 3)
    framegraph.config.optimize_ddp = True  # the default (this process is the test's own)
    runs, graphs, models = {}, {}, {}
    for name in ("eager", "framegraph", "torch.compile"):
        reset_all()
        events: list[str] = []

        def hook(state, bucket, events=events):
            events.append(f"bucket {bucket.index()} of {len(bucket.parameters())}")
            return allreduce_hook(None, bucket)

        models[name] = copy.deepcopy(reference)
        ddp = _ddp(models[name], 1)
        ddp.register_comm_hook(None, hook)
        counting = Counting(_backend("aot_eager") if name == "framegraph" else torch_backend("aot_eager"))
        run = {"eager": lambda m: m, "framegraph": lambda m: framegraph.compile(m, backend=counting),
               "torch.compile": lambda m: torch.compile(m, backend=counting)}[name](ddp)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        steps = []
        for x in data:
            events.clear()
            x = x.clone().requires_grad_()
            x.register_hook(lambda grad, events=events: events.append("input"))  # the end of backward
            optimizer.zero_grad(set_to_none=True)
            run(x).square().mean().backward()
            optimizer.step()
            steps.append(list(events))
        runs[name], graphs[name] = steps, counting.count
    for name in ("framegraph", "torch.compile"):
        for p, q in zip(models[name].parameters(), models["eager"].parameters()):
            torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6)
    # DDP puts every parameter in one bucket for the first step, then rebuilds its buckets in
    # the order the gradients became ready: 4 for eager (a layer's bias, then its weight, 1 MB).
    eager_buckets = [sum(e.startswith("bucket") for e in step) for step in runs["eager"]]
    assert eager_buckets == [1, 4, 4], runs["eager"]
    # The split is at those 4 buckets, as torch.compile's DDP optimizer splits.
    assert graphs["framegraph"] == graphs["torch.compile"] == eager_buckets[-1], graphs
    # The hook is called as under torch.compile, bucket by bucket. Inside a compiled piece the
    # weight's gradient is ready before its bias's, so DDP rebuilds 5 buckets under both.
    assert runs["framegraph"] == runs["torch.compile"], runs
    for step in runs["framegraph"][1:]:
        # The buckets filled by the last three layers are all-reduced before backward reaches
        # the first layer (whose piece makes the input's gradient): each piece's backward hands
        # its bucket over as soon as it ends. (Unsplit, every gradient comes out of one backward.)
        assert len(step) == 6 and all(event.startswith("bucket") for event in step[:3]), step


def test_comm_hook_called_per_bucket_during_backward():
    harness.run(_bucket_hooks)
