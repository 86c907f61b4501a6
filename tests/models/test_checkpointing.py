"""Training with activation checkpointing, compiled as the user compiles it: zoo decoders with
transformers' `gradient_checkpointing_enable()` and timm / transformers vision models with
theirs, one forward and backward compiled as one function. The loss and every gradient equal
eager's (eager backend); each checkpointed block is a `tag_activation_checkpoint` node in the
graph (not a break), and the graph and break counts are at most torch.compile's, but for the
shortfalls `BEHIND` names.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import framegraph
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.models.test_zoo_grads import loss_of
from tests.models.zoo import available, build

MODELS = ["llama", "gpt2", "qwen2", "mistral", "timm_vit_tiny", "vit"]

# name -> why framegraph is behind torch.compile there.
BEHIND = {
    name: "transformers warns once (`logger.warning_once`) that checkpointing turns the cache off, a "
          "break under both frontends. torch.compile gives up the frames it breaks in: the training "
          "step's frame runs eagerly after the model call (the loss is in no graph, and its "
          "`loss.backward()` break is not counted), and transformers' input-checking wrapper too (a "
          "break in a loop), and it does not translate the logger's own `warning_once` frame, which "
          "holds no tensor. framegraph resumes both frames: the loss is a graph of its own (one more "
          "graph), and the backward, wrapper and `warning_once` breaks are counted (three more breaks)"
    for name in ("llama", "gpt2", "qwen2", "mistral")
}


def forward_backward(model, args, kwargs):
    loss = loss_of(model(*args, **kwargs))
    loss.backward()
    return loss


def _checkpointed(name: str):
    model, args, kwargs = build(name)
    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0  # the two runs must draw no random numbers
    if hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.set_grad_checkpointing(True)  # timm
    return model, args, kwargs


def _torch_counts(name: str) -> tuple[int, int]:
    import torch._dynamo
    from torch._dynamo.utils import counters as torch_counters

    torch._dynamo.reset()
    torch_counters.clear()
    model, args, kwargs = _checkpointed(name)
    counting = CountingBackend()
    torch.compile(forward_backward, backend=counting)(model, args, kwargs)
    torch._dynamo.reset()
    return counting.graph_count, sum(torch_counters["graph_break"].values())


@pytest.mark.parametrize("name", MODELS)
def test_checkpointed_training_step_equals_eager(name):
    if not available(name):
        pytest.skip("the model's library is not installed (the `models` extra)")
    warnings.simplefilter("ignore")
    model, args, kwargs = _checkpointed(name)
    expected = forward_backward(model, args, kwargs)
    expected_grads = [p.grad for p in model.parameters()]

    model, args, kwargs = _checkpointed(name)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    loss = framegraph.compile(forward_backward, backend=counting)(model, args, kwargs)
    assert torch.equal(loss, expected)
    for (param_name, param), grad in zip(model.named_parameters(), expected_grads):
        assert (param.grad is None) == (grad is None) and (grad is None or torch.equal(param.grad, grad)), param_name
    assert not counters["fallback"], dict(counters["fallback"])
    checkpoints = sum(1 for g in counting.graphs for n in g.graph.nodes
                      if n.target is torch.ops.higher_order.tag_activation_checkpoint)
    assert checkpoints >= 2, "the checkpointed blocks are not in the graphs"
    ours = (counting.graph_count, sum(counters["graph_break"].values()))
    theirs = _torch_counts(name)
    at_parity = ours[0] <= theirs[0] and ours[1] <= theirs[1]
    if name in BEHIND:
        assert not at_parity, f"{name} is at torch.compile's counts now ({ours}, {theirs}): take it out of BEHIND"
        pytest.xfail(BEHIND[name])
    assert at_parity, f"framegraph {ours} (graphs, breaks), torch.compile {theirs}: {dict(counters['graph_break'])}"
