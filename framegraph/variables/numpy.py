"""numpy code traced into the graph through `torch._numpy`, as torch.compile traces it.

An `np.ndarray` the frame receives becomes a graph input: the generated code passes
`torch.as_tensor(array)` (which shares the array's memory, so a write in the graph is a write to
the array), and the trace holds a NumpyNdarrayVariable: an fx node whose value is a tensor,
standing for an ndarray. Every numpy function, method, attribute and operator applied to one
is a node calling a small wrapper that views its tensors as `torch._numpy.ndarray`s, runs the
`torch._numpy` implementation (numpy's semantics: dtypes, promotion, axis arguments) and hands
tensors back. ndarray results are turned back into ndarrays (`.numpy()`) where they leave the
graph, so the program gets what numpy would give it (0-d arrays where numpy gives a scalar, as
under torch.compile).

The guards of an ndarray input are the facts the graph was built on: its type, dtype, shape and
strides (the tensor view of it depends on all of them), and that it is writeable.
What `torch._numpy` does not implement, and `np.random` (numpy's generator state lives outside
torch), are graph breaks.
"""

from __future__ import annotations

import operator
import types
from typing import Any, Callable

import numpy as np
import torch
import torch._numpy as tnp
from torch.utils import _pytree as pytree

from ..exc import HINT_USER_CODE, Unsupported
from ..guards import GuardKind
from ..source import AsTensorSource, AttrSource, ItemSource, Source
from .base import KnownValueVariable, MethodVariable, VariableTracker, is_method_of
from .constant import ConstantVariable
from .containers import ListVariable, TupleVariable
from .tensor import TensorVariable

# Where numpy's functions live, and where torch._numpy has the same names.
_MODULES = {"numpy": tnp, "numpy.linalg": tnp.linalg, "numpy.fft": tnp.fft}
# ndarray facts that are constants of the graph (they follow from the guarded dtype and shape).
_CONSTANT_ATTRS = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides"})
# ndarray attributes that are other arrays: nodes.
_ARRAY_ATTRS = frozenset({"T", "real", "imag", "mT"})
_COPYING_METHODS = frozenset({"astype", "copy"})
_SIZE_READS = frozenset({torch.ops.aten.sym_size.int, torch.ops.aten.sym_stride.int,
                         torch.ops.aten.sym_numel.default})
_TRUE_DIVISIONS = frozenset({operator.truediv, tnp.true_divide, tnp.divide})
_INPLACE = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior,
                      operator.ixor, operator.setitem})
_BITWISE = frozenset({operator.and_, operator.or_, operator.xor, operator.invert, operator.lshift, operator.rshift,
                      operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift})
_OPERATORS = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.matmul, operator.neg, operator.pos, operator.invert, operator.abs,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
    operator.getitem, operator.setitem, operator.iadd, operator.isub, operator.imul,
    operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
    operator.iand, operator.ior, operator.ixor, abs, pow, round,
})
# numpy functions of dtypes and scalar types only: pure, folded at trace time.
_DTYPE_FACTS = {id(fn): fn for fn in (np.issubdtype, np.iinfo, np.finfo, np.dtype, np.result_type,
                                       np.promote_types, np.can_cast, np.min_scalar_type)}


def _dtype_fact(value: Any) -> bool:
    return _DTYPE_FACTS.get(id(value)) is value
# Dtypes torch can view an array as, without a copy.
_TENSOR_DTYPES = frozenset(np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64",
    "complex64", "complex128"))


# ---- what the graph calls ---------------------------------------------------------------------
def _as_numpy(value: Any) -> Any:
    return pytree.tree_map_only(torch.Tensor, tnp.ndarray, value)


def _as_tensors(value: Any) -> Any:
    return pytree.tree_map_only(tnp.ndarray, lambda array: array.tensor, value)


def _named(fn: Callable, name: str) -> Callable:
    # Named after what they run, and owned by this module, so torch.fx keeps the wrapper
    # itself as a global of the graph's code (a torch-owned name would be imported instead).
    fn.__name__ = fn.__qualname__ = f"numpy_{name}"
    fn.__module__ = __name__
    fn.framegraph_numpy = True
    return fn


_WRAPPERS: dict[tuple, Callable] = {}


def _cached(key: tuple, make: Callable[[], Callable]) -> Callable:
    # One wrapper per target, so equal graphs call the same objects.
    wrapper = _WRAPPERS.get(key)
    if wrapper is None:
        wrapper = _WRAPPERS[key] = make()
    return wrapper


def _floats_for_integers(fn: Callable, args: tuple) -> tuple:
    """numpy divides integers into float64; torch._numpy gives torch's default float32."""
    if fn not in _TRUE_DIVISIONS:
        return args
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if tensors and all(not (t.is_floating_point() or t.is_complex()) for t in tensors):
        return tuple(a.to(torch.float64) if isinstance(a, torch.Tensor) else a for a in args)
    return args


def function_wrapper(fn: Callable) -> Callable:
    def make():
        def call(*args, **kwargs):
            args, kwargs = _as_numpy((_floats_for_integers(fn, args), kwargs))
            return _as_tensors(fn(*args, **kwargs))
        return _named(call, fn.__name__)
    return _cached(("function", fn), make)


def method_wrapper(name: str) -> Callable:
    def make():
        def call(self, *args, **kwargs):
            args, kwargs = _as_numpy((args, kwargs))
            result = _as_tensors(getattr(tnp.ndarray(self), name)(*args, **kwargs))
            if name in _COPYING_METHODS and result is self:
                # numpy's astype copies even to the same dtype; torch._numpy hands the array back
                result = result.clone()
            return result
        return _named(call, name)
    return _cached(("method", name), make)


def attr_wrapper(name: str) -> Callable:
    def make():
        def read(self):
            return _as_tensors(getattr(tnp.ndarray(self), name))
        return _named(read, f"attr_{name}")
    return _cached(("attr", name), make)


def operator_wrapper(op: Callable) -> Callable:
    def make():
        def call(*args):
            result = _as_tensors(op(*_as_numpy(_floats_for_integers(op, args))))
            if op not in _INPLACE and any(result is a for a in args):
                # `+a` is a new array in numpy; torch._numpy hands the array back
                result = result.clone()
            return result
        return _named(call, op.__name__)
    return _cached(("operator", op), make)


# ---- trackers ---------------------------------------------------------------------------------
class NumpyNdarrayVariable(TensorVariable):
    """An ndarray: a graph node whose value is the tensor `torch._numpy` keeps it in."""

    __slots__ = ()

    def python_type(self) -> type:
        return np.ndarray

    def _view(self) -> Any:
        return tnp.ndarray(self.example)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "shape":
            return TupleVariable(list(self.sizes(tx).items))
        if name == "size" and isinstance(self.example.numel(), torch.SymInt):
            return tx.output.record_call(torch.ops.aten.sym_numel.default, [self], {})
        if name in _CONSTANT_ATTRS:
            value = getattr(self._view(), name)
            if name == "dtype":
                return ConstantVariable(np.dtype(value.name))
            if any(isinstance(v, torch.SymInt) for v in (value if isinstance(value, tuple) else (value,))):
                raise Unsupported("Unsupported attribute access", f"ndarray.{name} of a dynamic shape")
            return ConstantVariable(value)
        if name in _ARRAY_ATTRS:
            return record(tx, attr_wrapper(name), [self], {})
        if is_method_of(tnp.ndarray, name):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"ndarray.{name}",
                          "torch._numpy, which framegraph traces numpy through, has no such attribute.")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name in ("item", "tolist", "tobytes", "tofile", "__array__"):
            raise Unsupported("Tensor to Python scalar", f"ndarray.{name}()",
                              "It needs the array's values, which a graph capture does not have.", ())
        if name == "__len__":
            return self.sizes(tx).items[0]
        if not callable(getattr(tnp.ndarray, name, None)):
            raise Unsupported("Unsupported method call", f"ndarray.{name}",
                              "torch._numpy, which framegraph traces numpy through, has no such method.")
        return record(tx, method_wrapper(name), [self, *args], kwargs)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if not hasattr(np.ndarray, name):  # an ndarray has no __dict__
            from .exceptions import raise_observed

            raise_observed(AttributeError, f"'numpy.ndarray' object has no attribute {name!r}")
        raise Unsupported("Unsupported mutation", f"assignment to ndarray.{name}")

    def __repr__(self) -> str:
        return f"NumpyNdarrayVariable({self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"


class NumpyFunctionVariable(KnownValueVariable):
    """A numpy function, ufunc or scalar type that torch._numpy implements: calling it is a
    node. As an argument (`dtype=np.float32`) it is the constant it is."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if _dtype_fact(self.value) and all(a.is_python_constant() for a in (*args, *kwargs.values())):
            from .constant import fold

            # A question about dtypes and scalar types, answered by numpy itself: torch._numpy
            # takes only concrete dtypes (np.integer is an abstract one).
            return fold(lambda *a: self.value(*a, **{k: v.as_python_constant() for k, v in kwargs.items()}),
                        *args)
        return record(tx, function_wrapper(equivalent(self.value)), list(args), dict(kwargs))

    def __repr__(self) -> str:
        return f"NumpyFunctionVariable({getattr(self.value, '__name__', self.value)})"


def equivalent(value: Any) -> Callable | None:
    """torch._numpy's implementation of a numpy callable, if it has one."""
    if isinstance(value, np.ufunc):
        return getattr(tnp, value.__name__, None)
    module = getattr(value, "__module__", None)
    name = getattr(value, "__name__", None)
    target = _MODULES.get(module) if isinstance(module, str) else None
    if target is None or not isinstance(name, str):
        return None
    found = getattr(target, name, None)
    return found if callable(found) else None


def wrap_numpy_callable(value: Any, source: Source | None) -> VariableTracker | None:
    """The tracker of a numpy function, ufunc or scalar type reached from a module or a
    global, or None for anything else (classes such as np.ndarray that programs test against,
    objects such as np.errstate(...)). np.random is refused: its state lives outside torch."""
    if _dtype_fact(value):
        return NumpyFunctionVariable(value, source)
    if isinstance(value, type):
        if not issubclass(value, np.generic):
            return None
    elif not isinstance(value, np.ufunc) and not (callable(value) and isinstance(getattr(value, "__name__", None), str)):
        return None
    module = getattr(value, "__module__", None)
    if not isinstance(value, np.ufunc) and not (isinstance(module, str)
                                                 and (module == "numpy" or module.startswith("numpy."))):
        return None
    if isinstance(module, str) and module.startswith("numpy.random"):
        return NumpySkippedVariable(value, source)
    if equivalent(value) is None:
        return NumpySkippedVariable(value, source)
    return NumpyFunctionVariable(value, source)


class NumpySkippedVariable(KnownValueVariable):
    """A numpy callable that runs eagerly at a break: np.random's, and what torch._numpy lacks."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        name = getattr(self.value, "__name__", repr(self.value))
        if (getattr(self.value, "__module__", None) or "").startswith("numpy.random"):
            raise Unsupported("Attempted to call function marked as skipped", f"np.random.{name}",
                              "numpy's random generator keeps its state outside torch, so a graph cannot "
                              "draw from it; the call runs eagerly (torch.compile instead draws from "
                              "torch's generator, whose numbers differ from numpy's).",
                              ("Use torch's random functions (torch.rand, torch.randn) in compiled code.",))
        raise Unsupported("Attempted to call function marked as skipped", f"np.{name}",
                          "torch._numpy, which framegraph traces numpy through, does not implement it; "
                          "the call runs eagerly.", (HINT_USER_CODE,))


# ---- recording --------------------------------------------------------------------------------
def _argument(output, value: VariableTracker) -> VariableTracker:
    """What a wrapper takes for an argument: numpy dtypes by name (torch._numpy's own dtype
    objects differ from numpy's), a numpy scalar as the 0-d array of its dtype (numpy's
    promotion tells `np.float32(2)` from `2.0`), everything else as it is."""
    if isinstance(value, (TupleVariable, ListVariable)):
        return type(value)([_argument(output, item) for item in value.items])
    if not isinstance(value, TensorVariable) and value.is_python_constant():
        constant = value.as_python_constant()
        if isinstance(constant, np.dtype) or (isinstance(constant, type) and issubclass(constant, np.generic)):
            return ConstantVariable(np.dtype(constant).name)
        if isinstance(constant, np.generic) and hasattr(tnp, constant.dtype.name):
            maker = function_wrapper(getattr(tnp, constant.dtype.name))
            return as_ndarrays(output.record_call(maker, [ConstantVariable(constant.item())], {}))
    return value


def record(tx, wrapper: Callable, args, kwargs) -> VariableTracker:
    """A node calling `wrapper`; tensors it returns are ndarrays."""
    for value in (*args, *kwargs.values()):
        if type(value) is TensorVariable:
            raise Unsupported("Unsupported tensor operation", "a numpy call given a torch tensor",
                              "numpy converts a tensor by reading its values; the call runs eagerly.",
                              ("Convert explicitly with tensor.numpy() or torch.from_numpy(array).",))
    output = tx.output
    result = output.record_call(wrapper, [_argument(output, a) for a in args],
                                {k: _argument(output, v) for k, v in kwargs.items()})
    return as_ndarrays(result)


def as_ndarrays(value: VariableTracker) -> VariableTracker:
    if type(value) is TensorVariable:
        return NumpyNdarrayVariable(value.node, value.example)
    if isinstance(value, (TupleVariable, ListVariable)):
        return type(value)([as_ndarrays(item) for item in value.items])
    return value


def call_operator(output, target: Callable, args, kwargs) -> VariableTracker:
    """An operator applied to an ndarray (`a + b`, `a[i]`, `a[m] = v`, `abs(a)`)."""
    if getattr(target, "framegraph_numpy", False):
        return as_ndarrays(output.record_call(target, args, kwargs))
    if target in _SIZE_READS:
        return output.record_call(target, args, kwargs)  # a symbolic size of the array's tensor
    if target not in _OPERATORS or kwargs:
        raise Unsupported("Unsupported tensor operation", f"{getattr(target, '__name__', target)} of an ndarray",
                          "Only numpy's own functions, methods and operators are traced on ndarrays.", ())
    arrays = [value for value in args if isinstance(value, NumpyNdarrayVariable)]
    if any(type(value) is TensorVariable for value in args) and all(a.example.dim() == 0 for a in arrays):
        # `t + np.float32(2)`: the tensor's operator takes a numpy scalar as a number
        return output.record_call(target, args, kwargs)
    for value in args:
        if type(value) is TensorVariable:
            raise Unsupported("Unsupported tensor operation", "an operator between an ndarray and a tensor",
                              "Which of the two converts the other depends on the operator; it runs eagerly.",
                              ("Convert explicitly with tensor.numpy() or torch.from_numpy(array).",))
    if target in _BITWISE and any(a.example.is_floating_point() or a.example.is_complex() for a in arrays):
        from .exceptions import raise_observed

        # numpy refuses these for inexact dtypes; torch's kernel would fail only when the graph runs
        raise_observed(TypeError, f"ufunc '{target.__name__.strip('_')}' not supported for the input types")
    return as_ndarrays(output.record_call(operator_wrapper(target), [_argument(output, a) for a in args], {}))


def is_ndarray_call(args, kwargs) -> bool:
    return any(isinstance(v, NumpyNdarrayVariable) for v in (*args, *kwargs.values()))


# ---- crossing between numpy and torch ---------------------------------------------------------
def to_tensor(tx, array: VariableTracker) -> VariableTracker:
    """`torch.from_numpy(a)` / `torch.as_tensor(a)`: the tensor the array already is."""
    if not isinstance(array, NumpyNdarrayVariable):
        raise Unsupported("Unsupported builtin call", f"torch.from_numpy({array})")
    return TensorVariable(array.node, array.example)


def from_tensor(tx, tensor: TensorVariable) -> VariableTracker:
    """`t.numpy()`: the same memory, seen as an ndarray."""
    if tensor.example.requires_grad or tensor.example.device.type != "cpu":
        raise Unsupported("Tensor to Python scalar", "Tensor.numpy() of a tensor that requires grad or is not on the CPU",
                          "Eagerly this raises; the call runs eagerly.", ())
    return NumpyNdarrayVariable(tensor.node, tensor.example)


def wrap_ndarray(tx, value: np.ndarray, source: Source) -> VariableTracker:
    """An ndarray the frame can see: a graph input, passed as the tensor that views it."""
    if type(value) is not np.ndarray or value.dtype not in _TENSOR_DTYPES or any(s < 0 for s in value.strides) \
            or not value.flags.writeable or value.dtype.byteorder not in ("=", "|"):
        raise Unsupported("Unsupported value type",
                          f"ndarray at {source} ({value.dtype}, strides {value.strides}, "
                          f"writeable={value.flags.writeable})",
                          "Only writeable arrays of a dtype torch has, with non-negative strides, are "
                          "viewed as tensors without a copy.", ())
    guards, line = tx.output.guards, tx.output.user_line
    guards.add(GuardKind.TYPE_MATCH, source, np.ndarray, line)
    guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "dtype"), value.dtype, line)
    guards.add(GuardKind.EQUALS_MATCH, AttrSource(AttrSource(source, "flags"), "writeable"), True, line)
    # Shape and strides are guarded at harvest (array_guards), once the trace has settled
    # which sizes stay symbolic (automatic dynamic treats an array as it treats a tensor).
    tensor = tx.output.add_tensor_input(torch.as_tensor(value), AsTensorSource(source), identity=value,
                                        guarded=False)
    return NumpyNdarrayVariable(tensor.node, tensor.example, source)


def array_guards(guards, source: Source, example: torch.Tensor, static, line: str) -> bool:
    """The shape and strides (in bytes) of an ndarray input, as far as they are constants of
    the graph (`static(size)`); True when some are symbolic, which the ShapeEnv's guards cover
    (through `as_tensor(array)`, the tensor the graph is given)."""
    itemsize = example.element_size()
    sizes = [int(s) if static(s) else None for s in example.shape]
    strides = [int(s) * itemsize if static(s) else None for s in example.stride()]
    shape_source, strides_source = AttrSource(source, "shape"), AttrSource(source, "strides")
    if None not in sizes and None not in strides:
        guards.add(GuardKind.EQUALS_MATCH, shape_source, tuple(sizes), line)
        guards.add(GuardKind.EQUALS_MATCH, strides_source, tuple(strides), line)
        return False
    guards.add(GuardKind.LENGTH, shape_source, (tuple, len(sizes)), line)
    for values, where in ((sizes, shape_source), (strides, strides_source)):
        for i, value in enumerate(values):
            if value is not None:
                guards.add(GuardKind.EQUALS_MATCH, ItemSource(where, i), value, line)
    return True


def is_ndarray(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def is_numpy_scalar(value: Any) -> bool:
    """A numpy number (`np.int64(3)`): a constant of the graph, guarded by type and value."""
    return isinstance(value, np.generic) and value.dtype in _TENSOR_DTYPES


def is_numpy_module(value: Any) -> bool:
    return isinstance(value, types.ModuleType) and (value.__name__ == "numpy" or value.__name__.startswith("numpy."))
