"""`torch.cond(pred, true_fn, false_fn, operands)`: both branches traced into graphs of their
own, and one `torch.ops.higher_order.cond` node choosing between them, as torch.compile
emits it.

A pred known while tracing (a Python bool, a size comparison the shapes settle) just calls its
branch. Both branches take the operands and then every outer tensor either of them reads, in
one order; each returns a tensor or a tuple or list of tensors, the same on both sides (the
operator checks their metadata when it runs on fake tensors).
"""

from __future__ import annotations

import torch

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.containers import ListVariable, TupleVariable
from ..variables.tensor import SymNodeVariable, TensorVariable
from . import speculate as spec
from .speculate import GB_TYPE


def call_cond(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    pred, true_fn, false_fn, operands = _bind(args, kwargs)
    if pred.is_python_constant():
        chosen = true_fn if pred.as_python_constant() else false_fn
        return chosen.call_function(tx, list(operands.items), {})
    if not isinstance(pred, (TensorVariable, SymNodeVariable)):
        raise Unsupported(GB_TYPE, f"torch.cond with the predicate {pred}")
    if isinstance(pred, TensorVariable) and pred.example.numel() != 1:
        raise Unsupported(GB_TYPE, "torch.cond with a predicate of more than one element (eager raises)")
    if not all(isinstance(o, (TensorVariable, SymNodeVariable)) for o in operands.items):
        raise Unsupported(GB_TYPE, "torch.cond with operands that are not tensors or sizes")
    bodies = [spec.speculate(tx, fn, list(operands.items), {}, f"{side} branch of torch.cond")
              for fn, side in ((true_fn, "true"), (false_fn, "false"))]
    for body in bodies:
        if not all(isinstance(leaf, TensorVariable) for leaf in body.leaves):
            raise Unsupported(GB_TYPE, f"the {body.graph.name} returns something other than tensors")
        spec.close(body, [leaf.node for leaf in body.leaves])
    if len(bodies[0].leaves) != len(bodies[1].leaves):
        raise Unsupported(GB_TYPE, "the branches of torch.cond return different numbers of tensors (eager raises)")
    spec.share_inputs(bodies)
    modules = [spec.graph_module(tx, body, prefix) for body, prefix in zip(bodies, ("cond_true", "cond_false"))]
    inputs = spec.outer_values(bodies[0], list(operands.items))
    result = tx.output.record_call(torch.ops.higher_order.cond, [pred, *modules, TupleVariable(inputs)], {})
    return spec.rebuild(bodies[0].result, list(result.items))


def _bind(args, kwargs):
    names = ("pred", "true_fn", "false_fn", "operands")
    if len(args) > 4 or any(k not in names for k in kwargs):
        raise Unsupported(GB_TYPE, "torch.cond called with arguments it does not take (eager raises)")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in bound:
            raise Unsupported(GB_TYPE, f"torch.cond given {key} twice (eager raises)")
        bound[key] = value
    if len(bound) < 3:
        raise Unsupported(GB_TYPE, "torch.cond called without its branches (eager raises)")
    operands = bound.get("operands", TupleVariable([]))
    if type(operands) not in (TupleVariable, ListVariable):
        raise Unsupported(GB_TYPE, "torch.cond with operands that are not a tuple or list")
    return bound["pred"], bound["true_fn"], bound["false_fn"], operands

