"""The arguments of a recorded call, from the trackers the trace holds: the fx node arguments
(nodes for graph values, constants otherwise) and the example values to run the op on (fake
tensors, symbolic ints), over nested tuples, lists, dicts, slices and sizes.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import numpy as np
import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher

from .variables.base import VariableTracker
from .variables.containers import DictVariable, ListVariable, TupleVariable
from .variables.slices import SliceVariable
from .variables.tensor import SizeVariable, SymNodeVariable, TensorVariable


class OpaqueVariable(VariableTracker):
    """The handle a mode-entering node returns, passed on to the node that leaves the mode."""

    __slots__ = ("node", "value")

    def __init__(self, node: torch.fx.Node, value: Any) -> None:
        super().__init__()
        self.node, self.value = node, value



def tensor_examples(values: list[VariableTracker]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for value in values:
        _unwrap(value, lambda v: found.append(v.example) if isinstance(v, TensorVariable) else None)
    return found


def symbolic_dispatch(tensors: list[torch.Tensor], args: list):
    """The Python dispatcher, for ops on symbolic sizes: some composite kernels
    (constant_pad_nd, under F.pad) take them only through their Python decompositions, as
    torch.compile runs them."""
    symbols: list = []
    for arg in args:
        _unwrap(arg, lambda v: symbols.append(v) if isinstance(v, SymNodeVariable) else None)
    if symbols or any(_symbolic_shape(t) for t in tensors):
        return enable_python_dispatcher()
    return contextlib.nullcontext()


def _symbolic_shape(tensor: torch.Tensor) -> bool:
    return any(isinstance(size, torch.SymInt) for size in tensor.shape)


def versions(tensors: list[torch.Tensor]) -> list[int | None]:
    # Inference tensors keep no version counter; the schema check covers them.
    return [None if t.is_inference() else t._version for t in tensors]


def _unwrap(v: Any, leaf: Callable[[Any], Any]) -> Any:
    """The nested Python structure of a variable's value, with `leaf` applied to what is not a
    container."""
    if isinstance(v, SizeVariable):
        return tuple(_unwrap(i, leaf) for i in v.items)
    if isinstance(v, SliceVariable):
        return slice(*(_unwrap(part, leaf) for part in v.parts))
    if isinstance(v, (TupleVariable, ListVariable)):
        return v.kind(_unwrap(i, leaf) for i in v.items)
    if isinstance(v, DictVariable):
        return {k: _unwrap(i, leaf) for k, i in v.items.items()}
    return leaf(v)


# A Python type where torch takes a dtype (`t.to(float)`) names the dtype torch gives it; the
# graph's code must spell the dtype (it would print `<class 'float'>`).
_PYTHON_TYPE_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


def _node_leaf(v: Any) -> Any:
    if isinstance(v, (TensorVariable, OpaqueVariable, SymNodeVariable)):
        return v.node
    value = v.as_python_constant() if isinstance(v, VariableTracker) else v
    if isinstance(value, np.generic):
        # torch takes a numpy scalar as the Python number it holds; the graph's code must
        # spell a number (numpy's repr, `np.float64(1.0)`, names a module it does not import)
        return value.item()
    return _PYTHON_TYPE_DTYPES.get(value, value) if isinstance(value, type) else value


def _fake_leaf(v: Any) -> Any:
    if isinstance(v, TensorVariable):
        return v.example
    if isinstance(v, (OpaqueVariable, SymNodeVariable)):
        return v.value
    return v.as_python_constant()


def node_arg(v: Any) -> Any:
    """The argument an fx node takes for `v`: nodes for graph values, constants otherwise."""
    return _unwrap(v, _node_leaf)


def fake(v: Any) -> Any:
    """The example value of `v`, with fake tensors and symbolic ints, to run an op on."""
    return _unwrap(v, _fake_leaf)


def fakes(args: list[VariableTracker]) -> list[Any]:
    return [fake(a) for a in args]
