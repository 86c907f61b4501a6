"""Callables and modules: torch functions that become graph nodes, builtins, Python modules."""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any, Callable

import torch

from ..exc import Unsupported
from ..trace_rules import SKIPPED_TORCH_FUNCTIONS
from ..source import AttrSource
from .base import KnownValueVariable, ValueVariable, VariableTracker
from .constant import ConstantVariable, fold
from .tensor import TensorVariable


class PythonModuleVariable(ValueVariable):
    """A module object such as `torch` or `torch.nn.functional`."""

    __slots__ = ()

    def python_type(self) -> type:
        return types.ModuleType

    def var_getattr(self, tx, name: str) -> VariableTracker:
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            raise Unsupported("Unsupported attribute access",
                              f"module {self.value.__name__!r} has no attribute {name!r}") from None
        source = AttrSource(self.source, name) if self.source is not None else None
        from .builder import wrap, wrap_library_value

        if is_library_module(self.value):
            # A library's attributes are part of the library, not program state: no guard.
            return wrap_library_value(attr, source)
        return wrap(tx, attr, source)

    def __repr__(self) -> str:
        return f"PythonModuleVariable({self.value.__name__})"


def is_library_module(module: types.ModuleType) -> bool:
    name = module.__name__
    return name == "torch" or name.startswith("torch.") or name in ("math", "operator")


class TorchFunctionVariable(KnownValueVariable):
    """A torch callable that goes into the graph as one call_function node."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        folded = FOLDED_TORCH_FUNCTIONS.get(self.value)
        if folded is not None:
            return folded(tx, args, kwargs)
        if self.value in SKIPPED_TORCH_FUNCTIONS:  # see trace_rules
            raise Unsupported("Attempted to call function marked as skipped",
                              f"{_qualname(self.value)} changes global state")
        return tx.output.call_function(self.value, list(args), dict(kwargs))

    def __repr__(self) -> str:
        return f"TorchFunctionVariable({_qualname(self.value)})"


def _qualname(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or "torch"
    return f"{module}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _fold_constant_call(fn: Callable) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker:
        if kwargs or not all(a.is_python_constant() for a in args):
            raise Unsupported("Unsupported builtin call", f"{_qualname(fn)} with non-constant arguments")
        return fold(fn, *args)
    return handler


def _is_tensor(tx, args, kwargs) -> VariableTracker:
    return ConstantVariable(isinstance(args[0], TensorVariable))


# Functions whose result is known while tracing. The global state they read is guarded.
FOLDED_TORCH_FUNCTIONS: dict[Callable, Callable] = {
    torch.is_tensor: _is_tensor,
    torch.is_grad_enabled: _fold_constant_call(torch.is_grad_enabled),
    torch.is_inference_mode_enabled: _fold_constant_call(torch.is_inference_mode_enabled),
    torch.get_default_dtype: _fold_constant_call(torch.get_default_dtype),
    torch.is_floating_point: lambda tx, args, kw: ConstantVariable(args[0].example.is_floating_point()),
    torch.is_complex: lambda tx, args, kw: ConstantVariable(args[0].example.is_complex()),
    torch.compiler.is_compiling: lambda tx, args, kw: ConstantVariable(True),
    torch.compiler.is_dynamo_compiling: lambda tx, args, kw: ConstantVariable(True),
    torch.jit.is_scripting: lambda tx, args, kw: ConstantVariable(False),
    torch.jit.is_tracing: lambda tx, args, kw: ConstantVariable(False),
}


class SkippedFunctionVariable(ValueVariable):
    """A callable framegraph does not trace: calling it is a graph break at the call."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.value in _FRAME_GETTERS:
            raise Unsupported("Frame introspection", f"`{self.value.__module__}.{self.value.__name__}` was called")
        name = getattr(self.value, "__qualname__", None) or repr(self.value)
        what = f"the builtin `{name}`" if type(self.value) is types.BuiltinFunctionType else f"`{name}`"
        raise Unsupported("Attempted to call function marked as skipped", f"{what} was called")

    def __repr__(self) -> str:
        return f"SkippedFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


# Callables that return a running frame: the one compiled, or one its callees reach it from.
_FRAME_GETTERS = (sys._getframe, inspect.currentframe)


def is_torch_function(value: Any) -> bool:
    """Callables defined by torch that are not classes: ops, functional API, C bindings."""
    if isinstance(value, type) or not callable(value):
        return False
    module = getattr(value, "__module__", None) or ""
    if module == "torch" or module.startswith("torch.") or module.startswith("torch._C"):
        return True
    # C functions like torch.sin report no module but live on torch._C._VariableFunctions.
    return getattr(value, "__self__", None) is torch._C._VariableFunctions



