"""torch.optim's helpers that choose other numerics when a compiler traces them.

torch.optim's own Python is traced like user code; two of its helpers are modelled instead,
because they switch on `torch.compiler.is_compiling()` to tensor arithmetic that eager
never runs:

- `_get_value(step)` gives eager the step count as a Python float (`step.item()`), from
  which Adam computes its bias corrections in double precision. Under a compiler it returns
  the float32 step tensor, and the corrections come out of float32 tensor ops: the
  parameters then differ from eager's in the last bits, from the first step on.
- `_stack_if_compiling(xs)` stacks those per-parameter tensors for a foreach kernel.

framegraph runs the eager branch of both: the step is read in the graph (an `item` node,
whose value is an unbacked symbolic float, so nothing is guarded on it and no recompile
follows when it changes) and the Python arithmetic on it is recorded as graph nodes, which
compute exactly what eager computes. The optimizer's parameters then equal eager's bit for
bit.

The optimizers' `_init_group` creates each parameter's state (zeros, a step count) on the
first step only. Traced as it stands, the first step's graph would hold those creations and
every later step, finding the state made, would need a graph of its own. So the first time
a trace meets `_init_group` on a real optimizer, it runs it for real first, as eager's first
step would (the values are the same: the state depends only on the parameters), and then
traces it: the state is then there to be read, and the first step's graph is every step's.
"""

from __future__ import annotations

import dataclasses
import inspect

import torch
from torch.optim import optimizer as _optimizer

from ..exc import Unsupported
from ..trace_rules import run_frames_as_is
from .base import ValueVariable, VariableTracker
from .tensor import TensorVariable
from .user_functions import UserFunctionVariable


def read_scalar(tx, tensor: TensorVariable) -> VariableTracker:
    """`tensor.item()` of a one-element float tensor, as a graph node with an unbacked
    symbolic value (it may change on every call)."""
    example = tensor.example
    if example.numel() != 1 or not example.dtype.is_floating_point:
        raise Unsupported("Tensor to Python scalar", "Tensor.item() of a tensor that is not one float")
    shape_env = tx.output.shape_env
    if not shape_env.allow_scalar_outputs:
        # The fake `item` (here, and when a backend such as AOTAutograd traces the graph
        # again) answers with a symbol where it refuses by default.
        shape_env.settings = dataclasses.replace(shape_env.settings, allow_scalar_outputs=True)
    return tx.output.call_method("item", [tensor], {})


def _get_value(tx, args, kwargs) -> VariableTracker:
    if kwargs or len(args) != 1:
        raise Unsupported("Unsupported builtin call", "torch.optim.optimizer._get_value with unexpected arguments")
    if isinstance(args[0], TensorVariable):
        return read_scalar(tx, args[0])
    return args[0]


def _stack_if_compiling(tx, args, kwargs) -> VariableTracker:
    if kwargs or len(args) != 1:
        raise Unsupported("Unsupported builtin call",
                          "torch.optim.optimizer._stack_if_compiling with unexpected arguments")
    return args[0]


class EagerBranchVariable(ValueVariable):
    """One of the helpers above: calling it runs its eager branch on the trackers."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return EAGER_BRANCHES[self.value](tx, args, kwargs)

    def __repr__(self) -> str:
        return f"EagerBranchVariable({self.value.__qualname__})"


EAGER_BRANCHES = {
    _optimizer._get_value: _get_value,
    _optimizer._stack_if_compiling: _stack_if_compiling,
}
for _helper in EAGER_BRANCHES:
    # Called from eager code (an optimizer loop a break left to run as is), a helper compiled
    # as a frame of its own would take its compiling branch: it runs as eager runs it.
    run_frames_as_is(_helper)


def _init_groups() -> dict:
    """torch.optim's `_init_group` functions -> how many state lists each one fills."""
    found = {}
    for cls in vars(torch.optim).values():
        if isinstance(cls, type) and issubclass(cls, _optimizer.Optimizer) and "_init_group" in cls.__dict__:
            fn = cls.__dict__["_init_group"]
            found[fn] = len(inspect.signature(fn).parameters) - 2  # after self and group
    return found


INIT_GROUPS = _init_groups()


def _state_missing(opt: _optimizer.Optimizer) -> bool:
    return any(p.grad is not None and not opt.state.get(p)
               for group in opt.param_groups for p in group["params"])


class StateFirstFunctionVariable(UserFunctionVariable):
    """An optimizer's `_init_group`: run for real on the optimizer the frame holds before it
    is traced, so that the state it creates is read by the graph, not made in it."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        opt = args[0] if args else None
        value = getattr(opt, "value", None)
        if opt is not None and opt.source is not None and isinstance(value, _optimizer.Optimizer) \
                and _state_missing(value):
            lists = INIT_GROUPS[self.fn]
            with torch.set_grad_enabled(bool(value.defaults.get("differentiable", False))):
                for group in value.param_groups:
                    self.fn(value, group, *([] for _ in range(lists)))
        return super().call_function(tx, args, kwargs)
