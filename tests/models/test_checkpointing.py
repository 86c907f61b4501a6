"""Training with activation checkpointing, compiled as the user compiles it: zoo decoders with
transformers' `gradient_checkpointing_enable()` and timm / transformers vision models with
theirs, one forward and backward compiled as one function. The loss and every gradient equal
eager's (eager backend); each checkpointed block is a `tag_activation_checkpoint` node in the
graph (not a break), and the graph and break counts are at most torch.compile's.

transformers warns once, from each checkpointed layer's call, that checkpointing turns the
cache off (`logger.warning_once`): a break under torch.compile, made after the graph here
(variables/logging_calls.py), so the whole step is one graph with its one break at
`loss.backward()`.
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
    assert ours[0] <= theirs[0] and ours[1] <= theirs[1], \
        f"framegraph {ours} (graphs, breaks), torch.compile {theirs}: {dict(counters['graph_break'])}"
