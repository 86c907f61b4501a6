"""What operator schemas say about a call target, read once per target.

A graph node's target is an OpOverload, an OpOverloadPacket, a `torch.*` function (C or
Python) or a Tensor method name. Their ATen overloads tell whether a call may write one of its
arguments (`Tensor(a!)`), draw random numbers (`nondeterministic_seeded`), or make a tensor;
Python wrappers of torch.nn.functional tell it with an `inplace` parameter instead.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import torch


@dataclasses.dataclass(frozen=True)
class Effects:
    writes_positional: bool = False             # some overload writes an argument always passed
    written_keywords: frozenset = frozenset()    # keyword-only arguments some overload writes (`out`)
    random: bool = False                        # some overload draws from the generator
    returns_tensor: bool = False                # some overload returns a tensor
    has_inplace_parameter: bool = False         # a Python wrapper with an `inplace` flag
    schemaless: bool = True                     # no ATen overload was found for it


_cache: dict[Any, Effects] = {}


def effects_of(target: Any) -> Effects:
    try:
        return _cache[target]
    except KeyError:
        pass
    except TypeError:  # unhashable: analysed every time
        return _analyse(target)
    effects = _cache[target] = _analyse(target)
    return effects


def _analyse(target: Any) -> Effects:
    overloads = aten_overloads(target)
    positional, keywords, random, returns_tensor = False, set(), False, False
    for overload in overloads:
        schema = overload._schema
        for argument in schema.arguments:
            if argument.alias_info is not None and argument.alias_info.is_write:
                if argument.kwarg_only:
                    keywords.add(argument.name)
                else:
                    positional = True
        random = random or torch.Tag.nondeterministic_seeded in overload.tags
        returns_tensor = returns_tensor or any(isinstance(r.type, torch.TensorType) for r in schema.returns)
    inplace = False
    if callable(target) and not isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        try:
            inplace = "inplace" in inspect.signature(target).parameters
        except (TypeError, ValueError):  # C functions without a text signature
            pass
    return Effects(positional, frozenset(keywords), random, returns_tensor, inplace, not overloads)


def aten_overloads(target: Any) -> list:
    """The operator overloads a call of `target` may resolve to: itself for an OpOverload,
    all of a packet's, and for a function or method name those of the ATen operator of
    that name (`torch.relu_`, `Tensor.add_`, `F.relu` -> aten::relu)."""
    if isinstance(target, torch._ops.OpOverload):
        return [target]
    if isinstance(target, torch._ops.OpOverloadPacket):
        packet = target
    else:
        name = target if isinstance(target, str) else getattr(target, "__name__", None)
        if not isinstance(name, str) or not name.isidentifier():
            return []
        try:
            packet = getattr(torch.ops.aten, name)
        except (AttributeError, RuntimeError):
            return []
        if not isinstance(packet, torch._ops.OpOverloadPacket):  # the namespace's own attributes
            return []
    return [getattr(packet, overload) for overload in packet.overloads()]


def inplace_requested(target: Any, args: tuple, kwargs: dict) -> bool:
    """Whether a call passes a true `inplace` to a wrapper such as F.relu."""
    try:
        bound = inspect.signature(target).bind(*args, **kwargs)
    except TypeError:
        return True  # cannot tell: assume it does
    bound.apply_defaults()
    return bool(bound.arguments.get("inplace"))
