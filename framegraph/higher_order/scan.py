"""The operators that run a function over the slices of tensors along their first dimension,
as torch.compile emits them:

- `scan(combine_fn, init, xs, dim=0, reverse=False)`: `combine_fn(carry, x)` returns the next
  carry and one slice of the output; one `torch.ops.higher_order.scan` node;
- `map(f, xs, *args)`: `f(x, *args)` per slice, the results stacked; one
  `torch.ops.higher_order.map_impl` node.

The function is traced once into a graph of its own on one slice (a fresh tensor of the
slice's size); the graph takes the leaves flat, carry (scan) and slices first, then the extra
arguments and every outer tensor the function reads. `init`, `xs` and the extra arguments are
tensors or tuples and lists of them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._higher_order_ops.map import map as _map
from torch._higher_order_ops.scan import scan as _scan

from ..exc import Unsupported
from ..subgraph import SubGraph
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.containers import ListVariable, TupleVariable
from ..variables.tensor import TensorVariable
from . import speculate as spec
from .speculate import GB_TYPE


def call_scan(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    bound = dict(spec.bind(_scan, args, kwargs, "scan").arguments)
    dim, reverse = _constant(bound.get("dim", ConstantVariable(0)), "dim"), _constant(
        bound.get("reverse", ConstantVariable(False)), "reverse")
    init, xs = _leaves(bound["init"], "init"), _leaves(bound["xs"], "xs")
    if not init or not xs or not isinstance(dim, int) or not isinstance(reverse, bool):
        raise Unsupported(GB_TYPE, "scan with arguments eager refuses")
    ndim = xs[0].example.dim()
    if not -ndim <= dim < ndim:
        raise Unsupported(GB_TYPE, f"scan over dim {dim} of a {ndim}-d tensor (eager raises)")
    dim %= ndim
    moved = [_call(tx, torch.movedim, x, dim, 0) if dim else x for x in xs]
    moved = [_call(tx, torch.flip, x, (0,)) for x in moved] if reverse else moved
    body = _trace(tx, bound["combine_fn"], [(bound["init"], init, False), (bound["xs"], moved, True)],
                 "function scan combines with")
    result = body.result
    if not (type(result) in (TupleVariable, ListVariable) and len(result.items) == 2):
        raise Unsupported(GB_TYPE, "scan's function must return (next carry, output slice) (eager raises)")
    carry_leaves = spec.flatten(result.items[0], body.graph.name)
    if len(carry_leaves) != len(init):
        raise Unsupported(GB_TYPE, "scan's function returns a carry unlike init (eager raises)")
    _close(body)
    module = spec.graph_module(tx, body, "scan_combine_graph")
    extra = spec.lifted_values(body)
    node = tx.output.record_call(torch.ops.higher_order.scan,
                                 [module, ListVariable(init), ListVariable(moved), TupleVariable(extra)], {})
    flat = list(node.items)  # the final carry's leaves, then the outputs'
    carry, out = flat[:len(init)], flat[len(init):]
    if reverse:
        out = [_call(tx, torch.flip, y, (0,)) for y in out]
    if dim:
        out = [_call(tx, torch.movedim, y, 0, dim) if dim < y.example.dim() else y for y in out]
    return TupleVariable([spec.rebuild(result.items[0], carry), spec.rebuild(result.items[1], out)])


def call_map(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if kwargs or len(args) < 2:
        raise Unsupported(GB_TYPE, "map with arguments it does not take (eager raises)")
    fn, xs_arg, extra_args = args[0], args[1], args[2:]
    xs = _leaves(xs_arg, "xs")
    if not xs:
        raise Unsupported(GB_TYPE, "map over no tensors")
    inputs = [(xs_arg, xs, True)] + [(a, _leaves(a, "argument"), False) for a in extra_args]
    body = _trace(tx, fn, inputs, "function map applies")
    _close(body)
    module = spec.graph_module(tx, body, "map_body")
    positional = [leaf for _, leaves, _ in inputs[1:] for leaf in leaves]
    lifted = spec.lifted_values(body)
    node = tx.output.record_call(torch.ops.higher_order.map_impl,
                                 [module, ListVariable(xs), ListVariable(positional + lifted)], {})
    return spec.rebuild(body.result, list(node.items))


# ---- shared ----------------------------------------------------------------------------------

def _trace(tx, fn: VariableTracker, inputs: list[tuple[VariableTracker, list[TensorVariable], bool]],
           name: str) -> spec.Body:
    """`fn` traced on one placeholder per leaf (a slice for those marked sliced), each argument
    in its own structure."""
    graph = SubGraph(tx.output.graph, name, GB_TYPE)
    call_args = []
    for structure, leaves, sliced in inputs:
        inner = [_placeholder(tx, graph, leaf, sliced) for leaf in leaves]
        call_args.append(spec.rebuild(structure, inner) if type(structure) in (TupleVariable, ListVariable)
                         else inner[0])
    return spec.trace(tx, graph, fn, call_args, {})


def _placeholder(tx, graph: SubGraph, leaf: TensorVariable, sliced: bool) -> TensorVariable:
    example = leaf.example
    if sliced:
        if example.dim() == 0:
            raise Unsupported(GB_TYPE, f"the {graph.name} is given a 0-d tensor to slice (eager raises)")
        with tx.output.fake_mode:
            example = torch.empty(example.shape[1:], dtype=example.dtype,
                                  device=example.device).requires_grad_(example.requires_grad)
    return spec.placeholder(graph, leaf.node.name, example)


def _close(body: spec.Body) -> None:
    if not body.leaves or not all(isinstance(leaf, TensorVariable) for leaf in body.leaves):
        raise Unsupported(GB_TYPE, f"the {body.graph.name} returns something other than tensors")
    spec.close(body, [leaf.node for leaf in body.leaves])


def _leaves(value: VariableTracker, what: str) -> list[TensorVariable]:
    items = value.items if type(value) in (TupleVariable, ListVariable) else [value]
    if not all(isinstance(item, TensorVariable) for item in items):
        raise Unsupported(GB_TYPE, f"{what} {value} is not a tensor or a tuple or list of tensors")
    return list(items)


def _constant(value: VariableTracker, what: str) -> Any:
    if not value.is_python_constant():
        raise Unsupported(GB_TYPE, f"scan's {what} {value} is not a constant")
    return value.as_python_constant()


def _call(tx, fn, tensor: TensorVariable, *constants) -> VariableTracker:
    return tx.output.record_call(fn, [tensor, *(ConstantVariable(c) for c in constants)], {})


HANDLED = {_scan: call_scan, _map: call_map}
