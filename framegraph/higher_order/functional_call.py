"""`torch.func.functional_call(module, tensors, args)`: the module called with the given
tensors in place of its parameters and buffers, as eager swaps them in for the call and back.

The call is traced inline, in the frame's graph: while it runs, a read of one of the module's
(or a submodule's) parameters or buffers named in the dicts gives the tensor given for it
(`OutputGraph.reparametrized`, read where the core reads a module's tables). With
`tie_weights` (the default), a tensor given for one name of a parameter the module shares
under several names stands for all of them, as eager unties them. What eager refuses (keys
twice, a tied parameter given two tensors, `strict` keys that do not match) runs eagerly at a
graph break, where eager raises. A name the module lacks is an attribute for the call's
duration, as eager sets it and deletes it after.
"""

from __future__ import annotations

import torch

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.containers import ListVariable, TupleVariable
from ..variables.dicts import DictVariable
from ..variables.nn_module import NNModuleVariable
from ..variables.tensor import TensorVariable
from . import speculate as spec
from .speculate import GB_TYPE


def _signature(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """torch.func.functional_call's."""


def call_functional_call(tx, args, kwargs) -> VariableTracker:
    bound = spec.bind(_signature, args, kwargs, "torch.func.functional_call")
    bound.apply_defaults()
    values = bound.arguments
    module = values["module"]
    if not isinstance(module, NNModuleVariable):
        raise Unsupported(GB_TYPE, f"torch.func.functional_call of {module}, not a module")
    options = {}
    for name in ("tie_weights", "strict"):
        option = values[name]
        if isinstance(option, VariableTracker):
            if not option.is_python_constant():
                raise Unsupported(GB_TYPE, f"torch.func.functional_call's {name} {option} is not a constant")
            option = option.as_python_constant()
        options[name] = bool(option)
    given = _merged(values["parameter_and_buffer_dicts"])
    swaps = _swaps(module.value, given, **options)
    call_args = values["args"]
    call_args = [] if _is_none(call_args) else list(call_args.items) if type(call_args) is TupleVariable \
        else [call_args]
    call_kwargs = values["kwargs"]
    if _is_none(call_kwargs):
        call_kwargs = {}
    elif isinstance(call_kwargs, DictVariable) and all(isinstance(k, str) for k in call_kwargs.items):
        call_kwargs = dict(call_kwargs.items)
    else:
        raise Unsupported(GB_TYPE, f"torch.func.functional_call with kwargs {call_kwargs}, not a dict of names")
    table = tx.output.reparametrized
    replaced = {key: table.get(key) for key in swaps}
    table.update(swaps)
    try:
        return module.call_function(tx, call_args, call_kwargs)
    finally:
        for key, previous in replaced.items():
            if previous is None:
                del table[key]
            else:
                table[key] = previous


def _is_none(value) -> bool:
    return value is None or (isinstance(value, ConstantVariable) and value.value is None)


def _merged(dicts: VariableTracker) -> dict[str, VariableTracker]:
    """The name -> tensor map: one dict, or a tuple or list of dicts with no name twice."""
    parts = [dicts] if isinstance(dicts, DictVariable) else \
        list(dicts.items) if type(dicts) in (TupleVariable, ListVariable) else None
    if parts is None or not all(isinstance(p, DictVariable) for p in parts):
        raise Unsupported(GB_TYPE, f"torch.func.functional_call with {dicts}, not a dict or dicts (eager raises)")
    merged: dict[str, VariableTracker] = {}
    for part in parts:
        for key, value in part.items.items():
            if not isinstance(key, str) or key in merged:
                raise Unsupported(GB_TYPE, f"torch.func.functional_call given the key {key!r} twice, or not a "
                                           "name (eager raises)")
            if not isinstance(value, TensorVariable):
                raise Unsupported(GB_TYPE, f"torch.func.functional_call given {value} for {key!r}, not a tensor")
            merged[key] = value
    return merged


def _swaps(module: torch.nn.Module, given: dict[str, VariableTracker], tie_weights: bool,
           strict: bool) -> dict[tuple[int, str, str], VariableTracker]:
    """(id(owner), table, name) -> the tensor standing for it, for every name the call swaps."""
    places: dict[str, tuple[torch.nn.Module, str, str]] = {}  # dotted name -> (owner, table, leaf)
    for store, named in (("_parameters", module.named_parameters), ("_buffers", module.named_buffers)):
        for name, _ in named(remove_duplicate=False):
            owner_name, _, leaf = name.rpartition(".")
            places[name] = (module.get_submodule(owner_name), store, leaf)
    if strict and set(given) != set(places):
        raise Unsupported(GB_TYPE, "torch.func.functional_call(strict=True) with keys unlike the module's "
                                   "(eager raises)")
    for name in given:
        if name not in places:
            # Eager sets it as an attribute for the call, and deletes it after.
            owner_name, _, leaf = name.rpartition(".")
            try:
                owner = module.get_submodule(owner_name)
            except AttributeError:
                owner = None
            if owner is None or hasattr(owner, leaf):
                raise Unsupported(GB_TYPE, f"torch.func.functional_call given {name!r}, which is not a parameter "
                                           "or buffer of the module")
            places[name] = (owner, "__dict__", leaf)
    chosen = dict(given)
    if tie_weights:
        groups: dict[int, list[str]] = {}
        for name, (owner, store, leaf) in places.items():
            tensor = owner.__dict__[store][leaf] if store != "__dict__" else None
            if tensor is not None:
                groups.setdefault(id(tensor), []).append(name)
        for names in groups.values():
            values = {id(given[n]): given[n] for n in names if n in given}
            if len(values) > 1:
                raise Unsupported(GB_TYPE, f"torch.func.functional_call given different tensors for the tied "
                                           f"{names} (eager raises)")
            for value in values.values():
                chosen.update({n: value for n in names})
    return {(id(places[name][0]), places[name][1], places[name][2]): value for name, value in chosen.items()}
