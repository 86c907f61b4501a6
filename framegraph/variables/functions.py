"""Callables and modules: torch functions that become graph nodes, builtins, Python modules."""

from __future__ import annotations

import math
import operator
import types
from typing import Any, Callable

import torch

from ..exc import Unsupported
from ..source import AttrSource
from .base import VariableTracker
from .constant import ConstantVariable, fold
from .containers import BaseSequenceVariable, DictVariable, ListVariable, TupleVariable
from .tensor import TensorVariable


class PythonModuleVariable(VariableTracker):
    """A module object such as `torch` or `torch.nn.functional`."""

    __slots__ = ("value",)

    def __init__(self, value: types.ModuleType, source=None) -> None:
        super().__init__(source)
        self.value = value

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


class TorchFunctionVariable(VariableTracker):
    """A torch callable that goes into the graph as one call_function node."""

    __slots__ = ("value",)

    def __init__(self, value: Callable, source=None) -> None:
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        folded = FOLDED_TORCH_FUNCTIONS.get(self.value)
        if folded is not None:
            return folded(tx, args, kwargs)
        if self.value in SKIPPED_TORCH_FUNCTIONS:
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
# Torch functions with effects outside the graph: they must run eagerly, in order.
SKIPPED_TORCH_FUNCTIONS = frozenset({
    torch.manual_seed, torch.set_grad_enabled, torch.set_default_dtype, torch.set_printoptions,
    torch.use_deterministic_algorithms, torch.set_num_threads, torch.save, torch.load,
})


class SkippedFunctionVariable(VariableTracker):
    """A callable framegraph does not trace: calling it is a graph break at the call."""

    __slots__ = ("value",)

    def __init__(self, value: Callable, source=None) -> None:
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        name = getattr(self.value, "__qualname__", None) or repr(self.value)
        what = f"the builtin `{name}`" if type(self.value) is types.BuiltinFunctionType else f"`{name}`"
        raise Unsupported("Attempted to call function marked as skipped", f"{what} was called")

    def __repr__(self) -> str:
        return f"SkippedFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


class BuiltinVariable(VariableTracker):
    """A builtin function such as `len` or `isinstance`, or a function of `operator`/`math`."""

    __slots__ = ("value",)

    def __init__(self, value: Callable, source=None) -> None:
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        handler = BUILTIN_HANDLERS.get(self.value)
        if handler is not None:
            result = handler(tx, list(args), dict(kwargs))
            if result is not None:
                return result
        if self.value in PURE_BUILTINS and not kwargs and all(a.is_python_constant() for a in args):
            return fold(self.value, *args)
        if self.value in TENSOR_OPERATORS and any(isinstance(a, TensorVariable) for a in args):
            return tx.output.call_function(self.value, list(args), dict(kwargs))
        raise Unsupported("Unsupported builtin call",
                          f"{getattr(self.value, '__name__', self.value)}({', '.join(type(a).__name__ for a in args)})")

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.value, '__name__', self.value)})"


def _len(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1 or kwargs:
        return None
    (value,) = args
    if isinstance(value, TensorVariable):
        if value.example.dim() == 0:
            raise Unsupported("Unsupported builtin call", "len() of a 0-d tensor")
        return ConstantVariable(value.example.shape[0])
    if isinstance(value, (BaseSequenceVariable, DictVariable)):
        return ConstantVariable(len(value.items))
    return value.call_method(tx, "__len__", [], {})


def _isinstance(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 2 or kwargs or not args[1].is_python_constant():
        return None
    classes = args[1].as_python_constant()
    try:
        return ConstantVariable(issubclass(args[0].python_type(), classes))
    except TypeError:
        return None


def _sequence(kind: type) -> Callable:
    def build(tx, args, kwargs) -> VariableTracker | None:
        if kwargs or len(args) > 1:
            return None
        items = tx.unpack_iterable(args[0]) if args else []
        return (TupleVariable if kind is tuple else ListVariable)(items)
    return build


BUILTIN_HANDLERS: dict[Callable, Callable] = {
    len: _len,
    isinstance: _isinstance,
    tuple: _sequence(tuple),
    list: _sequence(list),
}
# Builtins that are pure functions of constant arguments; folding them is exact.
PURE_BUILTINS = frozenset({
    abs, min, max, divmod, pow, round, int, float, bool, str, repr, hash, ord, chr, sorted, sum, any,
    all, len, isinstance, issubclass, callable, type, range, slice, hex, oct, bin, format,
    *(getattr(math, n) for n in dir(math) if callable(getattr(math, n)) and not n.startswith("_")),
    *(getattr(operator, n) for n in dir(operator) if callable(getattr(operator, n))
      and not n.startswith("_") and n not in ("attrgetter", "itemgetter", "methodcaller", "call")),
})
# Operators with a tensor meaning: recorded as call_function nodes, as torch.compile does.
TENSOR_OPERATORS = frozenset({
    abs, pow, operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.matmul, operator.neg, operator.pos, operator.invert,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift, operator.not_,
    operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge, operator.getitem,
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.setitem,
})


def is_torch_function(value: Any) -> bool:
    """Callables defined by torch that are not classes: ops, functional API, C bindings."""
    if isinstance(value, type) or not callable(value):
        return False
    module = getattr(value, "__module__", None) or ""
    if module == "torch" or module.startswith("torch.") or module.startswith("torch._C"):
        return True
    # C functions like torch.sin report no module but live on torch._C._VariableFunctions.
    return getattr(value, "__self__", None) is torch._C._VariableFunctions


def is_pure_or_tensor_builtin(value: Any) -> bool:
    try:
        return value in PURE_BUILTINS or value in TENSOR_OPERATORS or value in BUILTIN_HANDLERS
    except TypeError:  # unhashable
        return False

