"""Tensors while tracing: an fx node plus a fake tensor with the real one's metadata."""

from __future__ import annotations

import torch

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable

# Methods whose result is metadata the tensor guard already pins down: they fold to constants.
_METADATA_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
    "element_size", "is_floating_point", "is_complex", "get_device", "is_inference",
})
_METADATA_ATTRS = frozenset({
    "shape", "ndim", "dtype", "device", "layout", "requires_grad", "is_cuda", "is_cpu",
    "is_sparse", "is_quantized", "is_meta", "is_leaf", "is_nested",
})
# Properties that give another tensor: recorded as a getattr node.
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
# Conversions to Python values need the data, which a graph capture does not have.
_TO_PYTHON = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__"})


class TensorVariable(VariableTracker):
    __slots__ = ("node", "example")

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source=None) -> None:
        super().__init__(source)
        self.node = node
        self.example = example

    def python_type(self) -> type:
        # The example is a FakeTensor; the real value is a plain tensor or a Parameter (the
        # builder refuses other subclasses).
        return torch.nn.Parameter if isinstance(self.example, torch.nn.Parameter) else torch.Tensor

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _METADATA_ATTRS:
            return ConstantVariable(getattr(self.example, name))
        if name in _TENSOR_ATTRS:
            return tx.output.call_function(getattr, [self, ConstantVariable(name)], {})
        if callable(getattr(torch.Tensor, name, None)):
            # Conversions such as .item() fail at the call, so a graph break lands there.
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"Tensor.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name in _TO_PYTHON:
            raise Unsupported("Tensor to Python scalar", f"Tensor.{name}()")
        if name in _METADATA_METHODS:
            values = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            return ConstantVariable(getattr(self.example, name)(*values, **kw))
        if not callable(getattr(torch.Tensor, name, None)):
            raise Unsupported("Unsupported method call", f"Tensor.{name}")
        return tx.output.call_method(name, [self, *args], kwargs)

    def bool_value(self, tx) -> bool:
        raise Unsupported("Data-dependent branching", "the truth value of a tensor")

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"

