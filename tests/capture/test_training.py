"""Whole training steps: forward, loss, backward(), clip_grad_norm_, optimizer.step() and
zero_grad(), compiled as one function, against eager and torch.compile.

The step splits where torch.compile splits it: `loss.backward()` runs eagerly at a break,
the rest of the function resumes in a graph (clip_grad_norm_'s foreach norms and in-place
scaling), `optimizer.step()` breaks where torch.optim asks for a break
(`torch._dynamo.graph_break()` in its no-grad wrapper) and its own frame compiles into a
graph of the optimizer's arithmetic (foreach ops, or one op per parameter), and
`zero_grad()`, which torch marks with `torch._disable_dynamo`, runs eagerly.

With the eager backend the parameters, the optimizer state and every loss equal eager's bit
for bit after 20 steps. torch.compile's Adam does not: while compiling, torch.optim computes
the bias corrections from the float32 step tensor instead of the Python number eager reads
with `.item()`; framegraph runs the eager branch (variables/optimizer.py).
"""

from __future__ import annotations

import contextlib
import os
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import framegraph
from framegraph import breaks
from framegraph.backends import lookup_backend
from framegraph.counters import counters

from .helpers import CountingBackend

STEPS = 20
THIS_FILE = os.path.abspath(__file__)

OPTIMIZERS = {
    "sgd": lambda params, **kw: torch.optim.SGD(params, lr=0.1, **kw),
    "sgd_momentum": lambda params, **kw: torch.optim.SGD(params, lr=0.1, momentum=0.9, **kw),
    "sgd_nesterov_decay": lambda params, **kw: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True,
                                                               weight_decay=0.01, **kw),
    "adam": lambda params, **kw: torch.optim.Adam(params, lr=0.01, **kw),
    "adam_amsgrad_decay": lambda params, **kw: torch.optim.Adam(params, lr=0.01, amsgrad=True,
                                                                weight_decay=0.01, **kw),
    "adamw": lambda params, **kw: torch.optim.AdamW(params, lr=0.01, **kw),
}
# Optimizers whose first step needs a graph of its own. The state `_init_group` makes on the
# first step is made for real before the step is traced (under framegraph and torch.compile
# alike), so one graph serves every step, except for SGD's momentum buffer, which the step
# itself makes after its update: the branch switches (None, then a tensor).
FIRST_STEP_GRAPH = {"sgd": 0, "sgd_momentum": 1, "sgd_nesterov_decay": 1, "adam": 0, "adam_amsgrad_decay": 0,
                    "adamw": 0}


def make_mlp(optimizer: str, **options):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    return model, OPTIMIZERS[optimizer](model.parameters(), **options)


def batch():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(5, 8, generator=generator), torch.randn(5, 4, generator=generator)


def train_step(model, optimizer, x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
    return loss


# Where train_step breaks: the backward call, the step call, the zero_grad call.
USER_BREAK_LINES = [train_step.__code__.co_firstlineno + offset for offset in (2, 4, 5)]


class BreakLog:
    """The breaks met while compiling, with the frame the user stack ends in."""

    def __init__(self) -> None:
        self.breaks: list[tuple[str, int, str]] = []

    def __call__(self, reason, code, whole_frame) -> None:
        filename, line, _ = reason.user_stack[-1] if reason.user_stack else (code.co_filename, 0, "")
        self.breaks.append((os.path.abspath(filename), line, reason.gb_type))

    def in_file(self, filename: str) -> list[tuple[int, str]]:
        return [(line, kind) for name, line, kind in self.breaks if name == filename]

    def __enter__(self):
        breaks.break_observers.append(self)
        return self

    def __exit__(self, *exc) -> None:
        breaks.break_observers.remove(self)


def run_eager(make, step, steps=STEPS):
    model, optimizer = make()
    data = batch()
    losses = [step(model, optimizer, *data) for _ in range(steps)]
    return model, optimizer, losses


@contextlib.contextmanager
def optimizers_as_torch_defines_them():
    """torch.compile, once used in a process, wraps every optimizer class's `_init_group` and
    every fused kernel function of torch.optim in `torch._dynamo.disable` (it models them
    itself), which framegraph honours: they run eagerly at a break. The tests trace torch.optim
    as torch defines it (`test_optimizers_patched_by_torch_compile` covers the other case)."""
    patched = []
    owners = [module for name, module in list(sys.modules.items()) if name.startswith("torch.optim.")]
    owners += [cls for cls in vars(torch.optim).values() if isinstance(cls, type)]
    for owner in owners:
        for name, value in list(vars(owner).items()):
            if getattr(value, "_torchdynamo_disable", False) and hasattr(value, "_torchdynamo_orig_callable"):
                patched.append((owner, name, value))
                setattr(owner, name, value._torchdynamo_orig_callable)
    try:
        yield
    finally:
        for owner, name, value in patched:
            setattr(owner, name, value)


def run_framegraph(make, step, steps=STEPS, patched=False):
    framegraph.reset()
    counters.clear()
    model, optimizer = make()
    data = batch()
    counting = CountingBackend()
    compiled = framegraph.compile(step, backend=counting)
    losses, graphs = [], []
    with BreakLog() as log, contextlib.nullcontext() if patched else optimizers_as_torch_defines_them():
        for _ in range(steps):
            losses.append(compiled(model, optimizer, *data))
            graphs.append(counting.graph_count)
    assert not counters["fallback"], dict(counters["fallback"])
    return model, optimizer, losses, graphs, log


def run_torch_compile(make, step, steps=STEPS):
    import torch._dynamo

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    model, optimizer = make()
    data = batch()
    counting = CountingBackend()
    compiled = torch.compile(step, backend=counting)
    graphs = []
    for _ in range(steps):
        compiled(model, optimizer, *data)
        graphs.append(counting.graph_count)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    torch._dynamo.reset()
    return graphs, breaks


def assert_same_training(expected, actual) -> None:
    """Losses, parameters, gradients and optimizer state equal bit for bit."""
    (model_e, opt_e, losses_e), (model_a, opt_a, losses_a) = expected, actual
    for step, (e, a) in enumerate(zip(losses_e, losses_a)):
        assert torch.equal(e, a), f"loss of step {step}: {a.item()!r} != {e.item()!r}"
    for (name, e), a in zip(model_e.state_dict().items(), model_a.state_dict().values()):
        assert torch.equal(e, a), f"{name} differs by {(e - a).abs().max().item()}"
    for (name, e), a in zip(model_e.named_parameters(), model_a.parameters()):
        assert (e.grad is None) == (a.grad is None), f"{name}.grad"
    state_e, state_a = opt_e.state_dict(), opt_a.state_dict()
    assert state_e["param_groups"] == state_a["param_groups"]
    assert list(state_e["state"]) == list(state_a["state"])
    for index, entries in state_e["state"].items():
        assert list(entries) == list(state_a["state"][index])
        for key, value in entries.items():
            other = state_a["state"][index][key]
            assert torch.equal(value, other) if isinstance(value, torch.Tensor) else value == other, \
                f"state of parameter {index}: {key}"


# ---- the three optimizers, against eager and torch.compile -------------------------------------
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_training_steps_equal_eager_and_recompile_like_torch_compile(name):
    make = lambda: make_mlp(name)
    expected = run_eager(make, train_step)
    model, optimizer, losses, graphs, log = run_framegraph(make, train_step)
    assert_same_training(expected, (model, optimizer, losses))
    # forward+loss, clip_grad_norm_, the optimizer (and its first step when that makes the state)
    assert graphs[0] == 3 and graphs[-1] == 3 + FIRST_STEP_GRAPH[name], graphs
    assert graphs[1] == graphs[-1], f"steps after the second recompiled: {graphs}"
    # The user's function breaks at backward(), at step() and at zero_grad(), nowhere else;
    # the other breaks are in torch.optim's frames (its graph_break() wrapper).
    assert [line for line, _ in log.in_file(THIS_FILE)] == USER_BREAK_LINES, log.breaks
    assert all("torch/optim" in name for name, _, _ in log.breaks if name != THIS_FILE), log.breaks
    torch_graphs, torch_breaks = run_torch_compile(make, train_step)
    # torch.compile: the same graphs; four breaks (backward, two graph_break() calls, zero_grad).
    assert torch_graphs == graphs
    assert torch_breaks == 4


@pytest.mark.parametrize("kernels", [{"foreach": False}, {"foreach": True}, {"fused": True}],
                         ids=["per_parameter", "foreach", "fused"])
@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adamw"])
def test_foreach_fused_and_per_parameter_steps_equal_eager(name, kernels):
    make = lambda: make_mlp(name, **kernels)
    expected = run_eager(make, train_step)
    model, optimizer, losses, graphs, _ = run_framegraph(make, train_step)
    assert_same_training(expected, (model, optimizer, losses))
    assert graphs[1] == graphs[-1] == 3 + FIRST_STEP_GRAPH[name], graphs


def test_the_optimizer_step_is_one_graph_of_foreach_ops():
    """The step's own frame compiles into a graph of foreach kernels that updates the
    parameters and the state in place, with the bias corrections computed from the step
    count in Python numbers, as eager computes them."""
    make = lambda: make_mlp("adam", foreach=True)
    framegraph.reset()
    model, optimizer = make()
    counting = CountingBackend()
    compiled = framegraph.compile(train_step, backend=counting)
    for _ in range(2):
        compiled(model, optimizer, *batch())
    step_graph = counting.graphs[-1].graph
    targets = [node.target for node in step_graph.nodes if node.op == "call_function"]
    for op in (torch._foreach_add_, torch._foreach_lerp_, torch._foreach_mul_, torch._foreach_addcmul_,
               torch._foreach_sqrt, torch._foreach_div_, torch._foreach_addcdiv_):
        assert op in targets, f"{op.__name__} is not in the step's graph"
    reads = [node for node in step_graph.nodes if node.op == "call_method" and node.target == "item"]
    assert len(reads) == 2 * len(list(model.parameters()))  # each step count, for each correction
    assert not any(node.target is torch.stack for node in step_graph.nodes)


# ---- a CNN with BatchNorm in train mode --------------------------------------------------------
def make_cnn():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8, momentum=0.3), nn.ReLU(),
                          nn.Flatten(), nn.Linear(8 * 6 * 6, 5)).train()
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def cnn_batch():
    generator = torch.Generator().manual_seed(2)
    return torch.randn(4, 3, 8, 8, generator=generator), torch.randint(0, 5, (4,), generator=generator)


def cnn_step(model, optimizer, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    return loss


def test_batchnorm_running_statistics_in_train_mode_equal_eager():
    """Running mean, variance and num_batches_tracked are updated in the forward graph
    exactly as eagerly; zero_grad keeps zeroed gradients (set_to_none=False)."""
    model_e, opt_e = make_cnn()
    data = cnn_batch()
    losses_e = [cnn_step(model_e, opt_e, *data) for _ in range(STEPS)]
    framegraph.reset()
    counters.clear()
    model, optimizer = make_cnn()
    counting = CountingBackend()
    compiled = framegraph.compile(cnn_step, backend=counting)
    with optimizers_as_torch_defines_them():
        losses = [compiled(model, optimizer, *data) for _ in range(STEPS)]
    assert not counters["fallback"], dict(counters["fallback"])
    assert_same_training((model_e, opt_e, losses_e), (model, optimizer, losses))
    assert int(model[1].num_batches_tracked) == STEPS
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in model.parameters())
    assert counting.graph_count == 3  # forward+loss, the first step (momentum made), the others
    forward = counting.graphs[0].graph
    updated = [node.args[0].target for node in forward.nodes if node.op == "call_method" and node.target == "add_"]
    assert sorted(updated) == sorted(name for name in (n.target for n in forward.nodes if n.op == "placeholder")
                                     if name.endswith("num_batches_tracked"))
    assert len(updated) == 2


def test_optimizers_patched_by_torch_compile():
    """Once torch.compile has run in the process, each optimizer's `_init_group` is a
    torch._dynamo.disable wrapper: framegraph runs it eagerly (it makes the state on real
    tensors) and traces the rest of the step; the results stay eager's."""
    run_torch_compile(lambda: make_mlp("sgd"), train_step, steps=1)  # torch.compile patches on first use
    assert getattr(torch.optim.Adam.__dict__["_init_group"], "_torchdynamo_disable", False)
    make = lambda: make_mlp("adam")
    expected = run_eager(make, train_step)
    model, optimizer, losses, graphs, log = run_framegraph(make, train_step, patched=True)
    assert_same_training(expected, (model, optimizer, losses))
    assert graphs[1] == graphs[-1], graphs
    assert any(line and kind == "Attempted to call function marked as skipped" and "adam" in name
               for name, line, kind in log.breaks), log.breaks


def test_step_hooks_and_the_profiler_see_every_step():
    """The step's wrapper (hooks, the profiler's record_function) runs eagerly at a break:
    pre- and post-hooks are called on every step with the optimizer, and a profile of the
    compiled step names the optimizer's step as eager's does."""
    def profiled_steps(step):
        model, optimizer = make_mlp("adam")
        calls = []
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: calls.append(("pre", opt is optimizer)))
        optimizer.register_step_post_hook(lambda opt, args, kwargs: calls.append(("post", opt is optimizer)))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            losses = [step(model, optimizer, *batch()) for _ in range(3)]
        names = [event.name for event in profile.events() if event.name.startswith("Optimizer.")]
        return (model, optimizer, losses), calls, names

    expected, expected_calls, expected_names = profiled_steps(train_step)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(train_step, backend=counting)
    with optimizers_as_torch_defines_them():
        actual, calls, names = profiled_steps(compiled)
    assert not counters["fallback"], dict(counters["fallback"])
    assert counting.graph_count == 3 + FIRST_STEP_GRAPH["adam"]  # the step is in graphs, around the wrapper
    assert_same_training(expected, actual)
    assert calls == expected_calls == [("pre", True), ("post", True)] * 3
    assert names == expected_names and "Optimizer.step#Adam.step" in names


def test_training_steps_compile_with_aot_autograd():
    """The step count read with item() is an unbacked symbol that AOTAutograd can trace again."""
    make = lambda: make_mlp("adam", foreach=True)
    model_e, opt_e, losses_e = run_eager(make, train_step, steps=3)
    framegraph.reset()
    counters.clear()
    model, optimizer = make()
    aot_eager = lookup_backend("aot_eager")
    reads = []

    def backend(gm, example_inputs):
        reads.append(sum(node.target == "item" for node in gm.graph.nodes))
        return aot_eager(gm, example_inputs)

    compiled = framegraph.compile(train_step, backend=backend)
    with optimizers_as_torch_defines_them():
        losses = [compiled(model, optimizer, *batch()) for _ in range(3)]
    assert not counters["fallback"], dict(counters["fallback"])
    # The steady-state step reads each step count twice (the first step's count is known: 1)
    assert reads[-1] == 2 * len(list(model.parameters())), reads
    for e, a in zip([*losses_e, *model_e.parameters()], [*losses, *model.parameters()]):
        torch.testing.assert_close(a, e)


def test_optimizer_helpers_called_from_eager_code_keep_eager_numerics():
    """RAdam branches on a number computed from its step count (`if rho_t > 5.0`), so its
    per-parameter loop runs eagerly at a break. The helpers it calls there (`_get_value`)
    are not compiled as frames of their own: compiled, they would take their compiling
    branch and return the step tensor instead of its value."""
    def make():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        return model, torch.optim.RAdam(model.parameters(), lr=0.01)

    expected = run_eager(make, train_step, steps=8)  # rho_t passes 5 at the sixth step
    model, optimizer, losses, graphs, log = run_framegraph(make, train_step, steps=8)
    assert_same_training(expected, (model, optimizer, losses))
    assert any(kind == "Data-dependent branching" for _, _, kind in log.breaks), log.breaks
