"""DTensor in the graph: DTensor inputs and parameters (tensor parallelism's sharded weights),
the ops on them, and the DTensor API a tensor-parallel module's hooks use (`from_local`,
`redistribute`, `to_local`, `full_tensor`, `placements`, `device_mesh`).

A DTensor input is a graph input whose example is a DTensor around a fake local tensor
(variables/tensor_subclasses.py), so each op runs DTensor's sharding propagation while tracing
and the node gives a DTensor, as in torch.compile's graphs; every backend takes the graph as it
takes torch.compile's (AOTAutograd flattens the subclass). What the tensor guard does not pin
down is guarded here: the mesh by identity, the placements and shard order by value, and the
local tensor's own metadata (uneven shards differ by rank).

A mesh is an object the graph cannot spell. Calls that need one that is not the DTensor's own
(`from_local`, `redistribute` to another mesh) are recorded as a call of a small function that
holds it; `redistribute` to the DTensor's own mesh drops it (None means that mesh).
"""

from __future__ import annotations

import inspect
from typing import Any

from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.placement_types import Partial, Placement, Replicate, Shard

from ..exc import Unsupported
from ..guards import GuardKind, TensorSpec
from ..source import AttrSource
from ..variables.base import MethodVariable, VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.handled_callables import OpaqueObjectVariable
from ..variables.tensor import TensorVariable

GB_TYPE = "Unsupported DTensor operation"
# The DTensor methods recorded as graph nodes (their other arguments must be known while tracing).
_METHODS = ("to_local", "full_tensor", "redistribute")


def _bind(fn, args: list, kwargs: dict, method: bool = False) -> dict[str, Any]:
    """The call's arguments by name, defaults included: tensors as trackers, the rest (a mesh
    as itself) as the Python values they must be known as while tracing."""
    try:
        bound = inspect.signature(fn).bind(*([None] if method else []), *args, **kwargs)
    except TypeError as error:
        raise Unsupported(GB_TYPE, f"{fn.__qualname__}(): {error} (eager raises)") from error
    bound.apply_defaults()
    return {name: _known(fn, name, value) for name, value in bound.arguments.items()
            if not (method and name == "self")}


def _known(fn, name: str, value: Any) -> Any:
    if not isinstance(value, VariableTracker):
        return value  # a default
    if isinstance(value, TensorVariable):
        return value
    if isinstance(value, OpaqueObjectVariable) and isinstance(value.value, DeviceMesh):
        return value.value
    if value.is_python_constant():
        found = value.as_python_constant()
        return tuple(found) if isinstance(found, list) and name in ("placements", "grad_placements") else found
    raise Unsupported(GB_TYPE, f"{fn.__qualname__}() with {name}={value}, not known while tracing")


def _placements(fn, value: Any) -> tuple | None:
    if value is not None and not (isinstance(value, (tuple, list)) and all(isinstance(p, Placement) for p in value)):
        raise Unsupported(GB_TYPE, f"{fn.__qualname__}() with placements {value!r}")
    return None if value is None else tuple(value)


def _holding(name: str, call):
    """`call` as the target of a call_function node, named for the graph's code."""
    call.__name__ = call.__qualname__ = name
    return call


class DTensorRule:
    """The rule the core consults for a tensor whose example is a DTensor."""

    def guard(self, guards, value: DTensor, source, line: str) -> None:
        guards.add(GuardKind.ID_MATCH, AttrSource(source, "device_mesh"), value.device_mesh, line)
        guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "placements"), value.placements, line)
        guards.add(GuardKind.EQUALS_MATCH, AttrSource(AttrSource(source, "_spec"), "shard_order"),
                   value._spec.shard_order, line)
        guards.add(GuardKind.TENSOR_MATCH, AttrSource(source, "_local_tensor"), TensorSpec.of(value._local_tensor), line)

    def var_getattr(self, tx, variable: TensorVariable, name: str) -> VariableTracker | None:
        example = variable.example
        if name == "placements":
            return ConstantVariable(tuple(example.placements))
        if name == "device_mesh":
            return OpaqueObjectVariable(example.device_mesh, AttrSource(variable.source, name)
                                        if variable.source is not None else None)
        if name in _METHODS:
            return MethodVariable(variable, name)
        if name in ("_local_tensor", "_spec"):
            raise Unsupported(GB_TYPE, f"DTensor.{name}, DTensor's insides")
        return None

    def call_method(self, tx, variable: TensorVariable, name: str, args: list, kwargs: dict) -> VariableTracker | None:
        if name not in _METHODS:
            return None
        method = getattr(DTensor, name)
        a = _bind(method, args, kwargs, method=True)
        if name == "redistribute":
            return _redistribute(tx, variable, a)
        grad = _placements(method, a["grad_placements"])
        return tx.output.call_method(name, [variable], {} if grad is None else
                                     {"grad_placements": ConstantVariable(grad)})


def _redistribute(tx, variable: TensorVariable, a: dict) -> VariableTracker:
    placements = _placements(DTensor.redistribute, a.pop("placements"))
    mesh = a.pop("device_mesh")
    defaults = inspect.signature(DTensor.redistribute).parameters
    options = {k: ConstantVariable(v) for k, v in a.items() if v != defaults[k].default}
    if placements is not None:
        options["placements"] = ConstantVariable(placements)
    if mesh is None or mesh is variable.example.device_mesh:
        return tx.output.call_method("redistribute", [variable], options)
    values = {k: v.as_python_constant() for k, v in options.items()}
    target = _holding("redistribute_to_mesh", lambda x: x.redistribute(mesh, **values))
    return tx.output.record_call(target, [variable], {})


def call_from_local(tx, args: list, kwargs: dict) -> VariableTracker:
    fn = DTensor.from_local
    a = _bind(fn, args, kwargs)
    local = a.pop("local_tensor")
    if not isinstance(local, TensorVariable) or type(local.example) is DTensor:
        raise Unsupported(GB_TYPE, f"DTensor.from_local() of {local}, not a plain tensor")
    mesh = a.pop("device_mesh")
    if not isinstance(mesh, DeviceMesh):
        raise Unsupported(GB_TYPE, "DTensor.from_local() without a device mesh (the current mesh is global state)")
    if a["run_check"]:
        raise Unsupported(GB_TYPE, "DTensor.from_local(run_check=True) broadcasts the local tensor to check it")
    placements = _placements(fn, a.pop("placements"))
    options = {k: v for k, v in a.items() if v is not None and k != "run_check"}
    target = _holding("from_local", lambda t: DTensor.from_local(t, mesh, placements, **options))
    return tx.output.record_call(target, [local], {})


def call_placement(kind: type):
    """`Shard(0)`, `Replicate()`, `Partial()`: immutable, made while tracing."""
    def call(tx, args: list, kwargs: dict) -> VariableTracker:
        if not all(v.is_python_constant() for v in (*args, *kwargs.values())):
            raise Unsupported(GB_TYPE, f"{kind.__name__}() of values not known while tracing")
        try:
            return ConstantVariable(kind(*[a.as_python_constant() for a in args],
                                         **{k: v.as_python_constant() for k, v in kwargs.items()}))
        except (TypeError, ValueError) as error:
            raise Unsupported(GB_TYPE, f"{kind.__name__}(): {error} (eager raises)") from error
    return call


HANDLERS = {
    DTensor.from_local: call_from_local,
    **{kind: call_placement(kind) for kind in (Shard, Replicate, Partial)},
}
