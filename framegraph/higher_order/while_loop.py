"""`while_loop(cond_fn, body_fn, carried_inputs)` (torch._higher_order_ops): the condition and
the body traced into graphs of their own and one `torch.ops.higher_order.while_loop` node, as
torch.compile emits it. The loop runs inside the graph however many times the data says.

Both functions take the carried tensors, then every outer tensor either reads (the operator's
`additional_inputs`), in one order. The condition returns one boolean tensor; the body returns
as many tensors as it is given, each like the one it replaces (the operator checks them when
it runs on fake tensors).
"""

from __future__ import annotations

import torch

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.containers import ListVariable, TupleVariable
from ..variables.tensor import TensorVariable
from . import speculate as spec
from .speculate import GB_TYPE


def call_while_loop(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if kwargs or len(args) != 3:
        raise Unsupported(GB_TYPE, "while_loop(cond_fn, body_fn, carried_inputs) called otherwise")
    cond_fn, body_fn, carried = args
    if type(carried) not in (TupleVariable, ListVariable) or not carried.items \
            or not all(isinstance(c, TensorVariable) for c in carried.items):
        raise Unsupported(GB_TYPE, "while_loop with carried inputs that are not a tuple or list of tensors")
    condition = spec.speculate(tx, cond_fn, list(carried.items), {}, "condition of while_loop")
    if len(condition.leaves) != 1 or not isinstance(condition.leaves[0], TensorVariable) \
            or condition.leaves[0].example.dtype is not torch.bool or condition.leaves[0].example.numel() != 1:
        raise Unsupported(GB_TYPE, "the condition of while_loop does not return one boolean tensor (eager raises)")
    body = spec.speculate(tx, body_fn, list(carried.items), {}, "body of while_loop")
    if len(body.leaves) != len(carried.items) or not all(isinstance(leaf, TensorVariable) for leaf in body.leaves):
        raise Unsupported(GB_TYPE, "the body of while_loop does not return one tensor per carried input (eager raises)")
    spec.close(condition, [condition.leaves[0].node], single=True)
    spec.close(body, [leaf.node for leaf in body.leaves])
    lifted = spec.share_inputs([condition, body])
    modules = [spec.graph_module(tx, graph, prefix) for graph, prefix in ((condition, "cond_fn"), (body, "body_fn"))]
    additional = [spec.value_of(node) for node in lifted]
    result = tx.output.record_call(torch.ops.higher_order.while_loop,
                                   [*modules, TupleVariable(list(carried.items)), TupleVariable(additional)], {})
    return TupleVariable(list(result.items))
