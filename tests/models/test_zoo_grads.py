"""Gradients of zoo models: one compiled forward, loss and `backward()` gives every parameter
the gradient eager gives it, bit for bit (eager backend).

`backward()` is a graph break, as in torch.compile: the forward and the loss are captured,
autograd runs eagerly on the graph's outputs. Decoders, encoders, CNNs and ViTs from
transformers, torchvision and timm; the models are in eval mode (no dropout) so the two runs
draw no random numbers. Where framegraph already captures a model's forward whole (the
torchvision and timm models), its graph count is compared with torch.compile's in the same
test; the transformers models still break inside the library on this branch (configs,
attention registries, model-output classes), which the tests record but do not assert.
"""

from __future__ import annotations

import os
import warnings

import pytest
import torch

import framegraph
from framegraph import breaks
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.models.zoo import HAVE_TIMM, HAVE_TORCHVISION, HAVE_TRANSFORMERS, ZOO, build

THIS_FILE = os.path.abspath(__file__)


def loss_of(output) -> torch.Tensor:
    """A scalar from a model's first floating-point output (logits, hidden states, features)."""
    if hasattr(output, "to_tuple"):
        output = output.to_tuple()
    if isinstance(output, (tuple, list)):
        output = next(o for o in output if isinstance(o, torch.Tensor) and o.is_floating_point())
    return output.float().pow(2).mean()


def forward_backward(model, args, kwargs):
    loss = loss_of(model(*args, **kwargs))
    loss.backward()
    return loss


def grads(model) -> dict[str, torch.Tensor | None]:
    return {name: p.grad for name, p in model.named_parameters()}


class UserBreaks:
    """Breaks whose outermost user frame is in this file."""

    def __init__(self) -> None:
        self.lines: list[int] = []

    def __call__(self, reason, code, whole_frame) -> None:
        if reason.user_stack and os.path.abspath(reason.user_stack[-1][0]) == THIS_FILE:
            self.lines.append(reason.user_stack[-1][1])


BACKWARD_LINE = forward_backward.__code__.co_firstlineno + 2

MODELS = {
    "gpt2": HAVE_TRANSFORMERS, "llama": HAVE_TRANSFORMERS,            # decoders
    "bloom": HAVE_TRANSFORMERS,  # its GeLU is an autograd.Function with its own backward
    "bert": HAVE_TRANSFORMERS, "distilbert": HAVE_TRANSFORMERS,       # encoders
    "vit": HAVE_TRANSFORMERS, "timm_vit_tiny": HAVE_TIMM,             # ViTs
    "tv_resnet18": HAVE_TORCHVISION, "timm_resnet18": HAVE_TIMM,      # CNNs
}
# A CNN, a ViT and a decoder with an autograd.Function whose forward framegraph captures in the
# graphs torch.compile makes (the comparison costs a torch.compile of each, so it is made on these).
GRAPH_PARITY = ("timm_vit_tiny", "tv_resnet18", "bloom")


@pytest.mark.parametrize("name", list(MODELS))
def test_gradients_equal_eager(name):
    if not MODELS[name]:
        pytest.skip(f"{ZOO[name].library} is not installed")
    warnings.simplefilter("ignore")  # the libraries' deprecation notices
    model, args, kwargs = build(name)
    expected_loss = forward_backward(model, args, kwargs)
    expected = grads(model)
    assert any(g is not None for g in expected.values())

    model, args, kwargs = build(name)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    log = UserBreaks()
    breaks.break_observers.append(log)
    try:
        loss = framegraph.compile(forward_backward, backend=counting)(model, args, kwargs)
    finally:
        breaks.break_observers.remove(log)
    assert not counters["fallback"], dict(counters["fallback"])
    assert torch.equal(loss, expected_loss)
    actual = grads(model)
    assert list(actual) == list(expected)
    for key, grad in expected.items():
        assert (grad is None) == (actual[key] is None), key
        assert grad is None or torch.equal(grad, actual[key]), f"{key}: {(grad - actual[key]).abs().max()}"
    if name in GRAPH_PARITY:
        # The step function breaks once, at backward(), and the forward and the loss are
        # the graphs torch.compile makes of them.
        assert log.lines == [BACKWARD_LINE], log.lines
        assert counting.graph_count == torch_compile_graphs(name)


def torch_compile_graphs(name: str) -> int:
    import torch._dynamo

    torch._dynamo.reset()
    model, args, kwargs = build(name)
    counting = CountingBackend()
    torch.compile(forward_backward, backend=counting)(model, args, kwargs)
    torch._dynamo.reset()
    return counting.graph_count


def lm_train_step(model, optimizer, kwargs):
    loss = model(**kwargs, labels=kwargs["input_ids"]).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
    return loss


@pytest.mark.skipif(not HAVE_TRANSFORMERS, reason="transformers is not installed")
@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "AdamW"])
def test_gpt2_training_steps_equal_eager(optimizer):
    """20 steps of GPT-2 with its language-modelling loss: every loss and, at the end, every
    parameter and the optimizer's state equal eager's; steps after the second reuse what the
    first two compiled."""
    from tests.capture.test_training import optimizers_as_torch_defines_them

    warnings.simplefilter("ignore")

    def make():
        model, _, kwargs = build("gpt2")
        return model, getattr(torch.optim, optimizer)(model.parameters(), lr=0.01), kwargs

    model_e, opt_e, kwargs = make()
    losses_e = [lm_train_step(model_e, opt_e, kwargs) for _ in range(20)]
    model, opt, kwargs = make()
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(lm_train_step, backend=counting)
    graphs = []
    with optimizers_as_torch_defines_them():
        for step in range(20):
            assert torch.equal(compiled(model, opt, kwargs), losses_e[step]), f"loss of step {step}"
            graphs.append(counting.graph_count)
    assert not counters["fallback"], dict(counters["fallback"])
    for (key, e), a in zip(model_e.state_dict().items(), model.state_dict().values()):
        assert torch.equal(e, a), key
    for e, a in zip(opt_e.state.values(), opt.state.values()):
        assert list(e) == list(a) and all(torch.equal(e[k], a[k]) for k in e)
    assert graphs[1] == graphs[-1], f"steps after the second recompiled: {graphs}"
    # The optimizer's update of every parameter is in a graph (its step frame's).
    update = "add_" if optimizer == "SGD" else "addcdiv_"
    updated = {n.args[0].name for g in counting.graphs for n in g.graph.nodes
               if n.op == "call_method" and n.target == update and "param_groups" in n.args[0].name}
    assert len(updated) == len(list(model.parameters()))
