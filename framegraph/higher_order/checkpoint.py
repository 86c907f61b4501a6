"""`torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=..., **kwargs)`: activation
checkpointing, as torch.compile emits it. The function is traced into a graph of its own and
called through `torch.ops.higher_order.tag_activation_checkpoint`, which eagerly runs
checkpoint itself (the backward recomputes the function) and which AOTAutograd turns into
recomputation tags, so every backend keeps the memory saving.

The checkpoint's own options (use_reentrant, preserve_rng_state, determinism_check, debug,
early_stop) go on the node as they are; the remaining keyword arguments are the function's.
A `context_fn` other than the default (selective checkpointing policies) runs eagerly.
"""

from __future__ import annotations

import inspect

import torch
import torch.utils.checkpoint

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.tensor import TensorVariable
from . import speculate as spec
from .speculate import GB_TYPE

_OWN_OPTIONS = frozenset(name for name in inspect.signature(torch.utils.checkpoint.checkpoint).parameters
                         if name not in ("function", "args", "kwargs")) | {"preserve_rng_state"}


def call_checkpoint(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if not args:
        raise Unsupported(GB_TYPE, "checkpoint() without a function (eager raises)")
    fn, fn_args = args[0], args[1:]
    options = {k: v for k, v in kwargs.items() if k in _OWN_OPTIONS}
    fn_kwargs = {k: v for k, v in kwargs.items() if k not in _OWN_OPTIONS}
    context_fn = options.pop("context_fn", None)
    if context_fn is not None and not (context_fn.is_python_constant()
                                       and context_fn.as_python_constant() is torch.utils.checkpoint.noop_context_fn):
        raise Unsupported(GB_TYPE, "checkpoint() with a context_fn (a selective checkpointing policy)")
    for key, value in options.items():
        if not value.is_python_constant():
            raise Unsupported(GB_TYPE, f"checkpoint() with {key}={value}, not a constant")
    body = spec.speculate(tx, fn, list(fn_args), fn_kwargs, "function checkpoint() recomputes")
    tensors = [leaf for leaf in body.leaves if isinstance(leaf, TensorVariable)]
    if not tensors:
        raise Unsupported(GB_TYPE, "the function checkpoint() recomputes returns no tensor")
    spec.close(body, [t.node for t in tensors])
    module = spec.graph_module(tx, body, "wrap_body")
    inputs = spec.outer_values(body, [*fn_args, *fn_kwargs.values()])
    result = tx.output.record_call(torch.ops.higher_order.tag_activation_checkpoint, [module, *inputs], options)
    outputs = list(result.items)  # the operator returns a tuple, whatever the function returned
    leaves = [outputs.pop(0) if isinstance(leaf, TensorVariable) else leaf for leaf in body.leaves]
    return spec.rebuild(body.result, leaves)
