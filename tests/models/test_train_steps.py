"""Whole training steps compiled as one function: forward, loss, `loss.backward()`,
`optimizer.step()` and `optimizer.zero_grad()`, for AdamW and SGD with momentum, on four zoo
models (a decoder, an encoder, a CNN, a ViT) and on a peft LoRA decoder.

After three steps every parameter equals eager's, bit for bit (eager backend; torch.compile's
AdamW does not), and framegraph's graph and break counts are torch.compile's on the same step
but for the difference `BEYOND_TORCH` names, asserted exactly. The backward, the
optimizer's own `graph_break()` calls and `zero_grad` (which torch marks as not to be traced)
are breaks under both.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import framegraph
from framegraph import breaks
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.capture.test_training import optimizers_as_torch_defines_them
from tests.models.test_zoo_grads import loss_of
from tests.models.zoo import available, build

STEPS = 3
MODELS = ["llama", "bert", "tv_resnet18", "timm_vit_tiny"]

# Where framegraph's counts exceed torch.compile's on these steps, by how much, and why.
BEYOND_TORCH = {
    "breaks": "torch.optim's `_use_grad` wraps the step in try/finally with a graph_break() in each "
              "part: torch.compile does not split a frame inside a try block and runs that frame eagerly, "
              "uncounted; framegraph splits it at the breaks it asks for (counted apart below)",
}


def train_step(model, optimizer, args, kwargs):
    loss = loss_of(model(*args, **kwargs))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def _optimizer(name: str, model) -> torch.optim.Optimizer:
    if name == "AdamW":
        return torch.optim.AdamW(model.parameters(), lr=1e-3)
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _make(model_name: str, optimizer: str):
    if model_name == "peft_lora_llama":
        from tests.models.zoo2 import build as build2

        model, args = build2(model_name)
        return model, _optimizer(optimizer, model), args, {}
    model, args, kwargs = build(model_name)
    return model, _optimizer(optimizer, model), args, kwargs


def _torch_counts(model_name: str, optimizer: str) -> tuple[int, int]:
    import torch._dynamo
    from torch._dynamo.utils import counters as torch_counters

    torch._dynamo.reset()
    torch_counters.clear()
    model, opt, args, kwargs = _make(model_name, optimizer)
    counting = CountingBackend()
    compiled = torch.compile(train_step, backend=counting)
    for _ in range(STEPS):
        compiled(model, opt, args, kwargs)
    torch._dynamo.reset()
    return counting.graph_count, sum(torch_counters["graph_break"].values())


def _installed(model_name: str) -> bool:
    if model_name == "peft_lora_llama":
        from tests.models.zoo2 import available as available2

        return available2(model_name)
    return available(model_name)


@pytest.mark.parametrize("optimizer", ["AdamW", "SGD"])
@pytest.mark.parametrize("model_name", [*MODELS, "peft_lora_llama"])
def test_training_step_equals_eager_at_torch_compile_counts(model_name, optimizer):
    if not _installed(model_name):
        pytest.skip("the model's library is not installed (the `models` extra)")
    warnings.simplefilter("ignore")
    model_e, opt_e, args, kwargs = _make(model_name, optimizer)
    losses_e = [train_step(model_e, opt_e, args, kwargs) for _ in range(STEPS)]

    model, opt, args, kwargs = _make(model_name, optimizer)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(train_step, backend=counting)
    in_use_grad = []
    observe = lambda reason, code, whole_frame: in_use_grad.append(code) if "_use_grad" in code.co_name else None
    breaks.break_observers.append(observe)
    try:
        with optimizers_as_torch_defines_them():
            losses = [compiled(model, opt, args, kwargs) for _ in range(STEPS)]
    finally:
        breaks.break_observers.remove(observe)
    assert in_use_grad, "the optimizer's try/finally was not split"
    ours = (counting.graph_count, sum(counters["graph_break"].values()) - len(in_use_grad))
    assert not counters["fallback"], dict(counters["fallback"])
    for step, (e, a) in enumerate(zip(losses_e, losses)):
        assert torch.equal(e, a), f"loss of step {step}"
    for (name, e), a in zip(model_e.state_dict().items(), model.state_dict().values()):
        assert torch.equal(e, a), name
    for e, a in zip(opt_e.state.values(), opt.state.values()):
        assert list(e) == list(a) and all(torch.equal(e[k], a[k]) for k in e)
    # The update of every parameter the loss reaches (those the optimizer keeps state for) is
    # in a graph.
    update = "add_" if optimizer == "SGD" else "addcdiv_"
    updated = sum(1 for g in counting.graphs for n in g.graph.nodes if n.op == "call_method" and n.target == update)
    assert updated >= sum(1 for state in opt.state.values() if state) > 0
    theirs = _torch_counts(model_name, optimizer)
    assert ours[0] <= theirs[0] and ours[1] <= theirs[1], \
        f"framegraph {ours} (graphs, breaks), torch.compile {theirs}: {dict(counters['graph_break'])}"
