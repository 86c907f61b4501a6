"""Collectives in the graph: the functional collectives (`torch.distributed._functional_collectives`)
and the in-place `torch.distributed.all_reduce`, recorded as torch.compile records them: one
`torch.ops._c10d_functional` node per collective followed by its `wait_tensor`, the group given
by name. Every backend takes these nodes (they have fake kernels and AOTAutograd knows them).

The in-place `all_reduce(t, op)` becomes the functional one and a `t.copy_(result)`: the graph
then sees the mutation it makes. Its op (`dist.ReduceOp.SUM`, `MAX`, ... `BXOR`, positional or
by keyword) is a constant while tracing, passed to the op by name. `async_op=True` is a graph
break, as in torch.compile: the work object it returns has no graph form.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed import distributed_c10d as c10d

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.tensor import TensorVariable

GB_TYPE = "Unsupported distributed collective"
_ops = torch.ops._c10d_functional


def _bind(fn: Callable, args: list, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by name, each a tracker (defaults included)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as error:
        raise Unsupported(GB_TYPE, f"{fn.__name__}(): {error} (eager raises)") from error
    bound.apply_defaults()
    return {name: value if isinstance(value, VariableTracker) else ConstantVariable(value)
            for name, value in bound.arguments.items()}


def _constant(fn: Callable, name: str, value: VariableTracker) -> Any:
    if not value.is_python_constant():
        raise Unsupported(GB_TYPE, f"{fn.__name__}() with {name}={value}, not known while tracing")
    return value.as_python_constant()


def _tensor(fn: Callable, value: VariableTracker) -> TensorVariable:
    if not isinstance(value, TensorVariable):
        raise Unsupported(GB_TYPE, f"{fn.__name__}() of {value}, not a tensor")
    return value


def _group_name(fn: Callable, group: VariableTracker, tag: VariableTracker) -> tuple[str, int]:
    """The group's registered name, which the ops take, and its size: the group itself
    (a ProcessGroup, a list of ranks, a name) is resolved while tracing."""
    try:
        name = funcol._resolve_group_name(_constant(fn, "group", group), _constant(fn, "tag", tag))
        return name, c10d._get_group_size_by_name(name)
    except (ValueError, TypeError, RuntimeError) as error:
        raise Unsupported(GB_TYPE, f"{fn.__name__}(): the group does not resolve: {error}") from error


def _record(tx, op, args: list) -> TensorVariable:
    return tx.output.record_call(op, [a if isinstance(a, VariableTracker) else ConstantVariable(a) for a in args], {})


def _waited(tx, op, args: list) -> TensorVariable:
    return _record(tx, _ops.wait_tensor.default, [_record(tx, op, args)])


def call_all_reduce(tx, args, kwargs):
    a = _bind(funcol.all_reduce, args, kwargs)
    name, _ = _group_name(funcol.all_reduce, a["group"], a["tag"])
    reduce_op = _constant(funcol.all_reduce, "reduceOp", a["reduceOp"])
    return _waited(tx, _ops.all_reduce.default, [_tensor(funcol.all_reduce, a["self"]), reduce_op.lower(), name])


def _call_all_gather(fn):
    def call(tx, args, kwargs):
        a = _bind(fn, args, kwargs)
        name, size = _group_name(fn, a["group"], a["tag"])
        dim = _constant(fn, "gather_dim", a["gather_dim"])
        result = _waited(tx, _ops.all_gather_into_tensor.default, [_tensor(fn, a["self"]), size, name])
        if dim != 0:  # gathered along dim 0, as the op does; then the ranks' pieces side by side
            chunks = tx.output.record_call(torch.chunk, [result, ConstantVariable(size)], {})
            result = tx.output.record_call(torch.cat, [chunks, ConstantVariable(dim)], {})
        return result
    return call


def _call_reduce_scatter(fn):
    def call(tx, args, kwargs):
        a = _bind(fn, args, kwargs)
        name, size = _group_name(fn, a["group"], a["tag"])
        dim = _constant(fn, "scatter_dim", a["scatter_dim"])
        tensor = _tensor(fn, a["self"])
        if dim != 0:  # the op scatters along dim 0: the pieces of `dim` stacked along it first
            chunks = tx.output.record_call(torch.chunk, [tensor, ConstantVariable(size), ConstantVariable(dim)], {})
            tensor = tx.output.record_call(torch.cat, [chunks], {})
        reduce_op = _constant(fn, "reduceOp", a["reduceOp"])
        return _waited(tx, _ops.reduce_scatter_tensor.default, [tensor, reduce_op.lower(), size, name])
    return call


def call_wait_tensor(tx, args, kwargs):
    a = _bind(funcol.wait_tensor, args, kwargs)
    return _record(tx, _ops.wait_tensor.default, [_tensor(funcol.wait_tensor, a["tensor"])])


def call_inplace_all_reduce(tx, args, kwargs):
    fn = dist.all_reduce
    a = _bind(fn, args, kwargs)
    if _constant(fn, "async_op", a["async_op"]):
        raise Unsupported(GB_TYPE, "torch.distributed.all_reduce(async_op=True): the work object it returns has "
                          "no graph form (torch.compile breaks here too)")
    group = _constant(fn, "group", a["group"])
    name, _ = _group_name(fn, ConstantVariable(group if group is not None else c10d._get_default_group()),
                          ConstantVariable(""))
    op = _constant(fn, "op", a["op"])
    # The ops the functional all_reduce takes, by the name it takes them under, as torch.compile
    # maps them (a ReduceOp object, such as a PREMUL_SUM with its factor, is not one of them).
    op_name = funcol.REDUCE_OP_TO_STR.get(op) if isinstance(op, dist.ReduceOp.RedOpType) else None
    if op_name is None:
        raise Unsupported(GB_TYPE, f"torch.distributed.all_reduce(op={op}), an op the functional all_reduce lacks")
    tensor = _tensor(fn, a["tensor"])
    result = _waited(tx, _ops.all_reduce.default, [tensor, op_name, name])
    tensor.call_method(tx, "copy_", [result], {})
    return ConstantVariable(None)


HANDLERS = {
    funcol.all_reduce: call_all_reduce,
    funcol.all_gather_tensor: _call_all_gather(funcol.all_gather_tensor),
    funcol.all_gather_single: _call_all_gather(funcol.all_gather_single),
    funcol.reduce_scatter_tensor: _call_reduce_scatter(funcol.reduce_scatter_tensor),
    funcol.reduce_scatter_single: _call_reduce_scatter(funcol.reduce_scatter_single),
    funcol.wait_tensor: call_wait_tensor,
    dist.all_reduce: call_inplace_all_reduce,
}
