"""Callables and modules: torch functions that become graph nodes, builtins, Python modules."""

from __future__ import annotations

import inspect
import os
import sys
import types
from typing import Any, Callable

import torch

from ..exc import Unsupported
from ..schemas import effects_of
from ..trace_rules import SKIPPED_TORCH_FUNCTIONS, is_allowed_in_graph
from ..source import AttrSource
from .base import KnownValueVariable, ValueVariable, VariableTracker
from .constant import PURE_METHOD_TYPES, ConstantVariable, fold
from .containers import ListVariable, TupleVariable
from . import ctx_managers, logging_calls, numpy as numpy_variables, scalars
from .foreach_utils import group_tensors_by_device_and_dtype
from .tensor import SymNodeVariable, TensorVariable, refuse_new_leaf


class PythonModuleVariable(ValueVariable):
    """A module object such as `torch` or `torch.nn.functional`."""

    __slots__ = ()

    def python_type(self) -> type:
        return types.ModuleType

    def var_getattr(self, tx, name: str) -> VariableTracker:
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            if self.source is None and not is_library_module(self.value):
                raise Unsupported("Unsupported attribute access",
                                  f"module {self.value.__name__!r} has no attribute {name!r}") from None
            if self.source is not None:  # an attribute set later would be found
                from ..guards import GuardKind

                tx.output.guards.add(GuardKind.HASATTR, self.source, (name, False), tx.output.user_line, key=name)
            from .exceptions import raise_observed

            raise_observed(AttributeError, f"module {self.value.__name__!r} has no attribute {name!r}")
        source = AttrSource(self.source, name) if self.source is not None else None
        from .builder import wrap, wrap_library_value

        if is_library_module(self.value):
            if type(attr) in (bool, int):
                # A switch such as torch.backends.cudnn.enabled or the profiler's flag:
                # process state the program may change, so the value read is guarded.
                from ..guards import GuardKind

                if source is None:
                    raise Unsupported("Unsupported attribute access",
                                      f"{self.value.__name__}.{name}, a switch that cannot be guarded here")
                guards, line = tx.output.guards, tx.output.user_line
                return ConstantVariable(attr, source, pending_guard=lambda: guards.add(
                    GuardKind.EQUALS_MATCH, source, attr, line))
            # A library's other attributes are part of the library, not program state: no guard.
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
        fn = self.value
        folded = FOLDED_TORCH_FUNCTIONS.get(fn)
        if folded is not None:
            return folded(tx, args, kwargs)
        skipped = SKIPPED_TORCH_FUNCTIONS.get(fn)  # see trace_rules
        if is_disable_marker(fn):
            return MarkedDisabledVariable(fn, list(args), dict(kwargs))
        if _is_user_graph_break(fn):
            raise Unsupported("Call to graph_break()", f"{_qualname(fn)}() was called")
        if skipped is not None:
            raise Unsupported("Attempted to call function marked as skipped", f"{_qualname(fn)} {skipped}")
        refuse_new_leaf(_qualname(fn), kwargs)
        if fn in (torch.tensor, torch.as_tensor) and len(args) == 1 and isinstance(args[0], SymNodeVariable):
            return scalars.tensor_of_number(tx, args[0], dict(kwargs))
        if fn is torch.tensor and args and _holds_dynamic_float(args[0]):
            # torch.tensor reads each number's value (pinning a dynamic float); its Python
            # reference builds the tensor from the symbols.
            return tx.output.call_function(torch._refs.tensor, list(args), dict(kwargs))
        if fn in (torch.from_numpy, torch.as_tensor) and len(args) == 1 and not kwargs \
                and isinstance(args[0], numpy_variables.NumpyNdarrayVariable):
            return numpy_variables.to_tensor(tx, args[0])
        if is_allowed_in_graph(fn):
            return tx.output.call_function(fn, list(args), dict(kwargs))
        from_graph = reads_graph_values([*args, *kwargs.values()])
        if (not from_graph and type(fn) is types.BuiltinFunctionType and not effects_of(fn).returns_tensor
                and fn is not torch.asarray):  # the one C factory with no ATen operator of its name
            # A C function that takes no tensor and makes none reads process state no guard
            # covers (profiler, anomaly mode, thread count, ...) or changes it: it is not even
            # run on fakes. Only the readers in FOLDED_TORCH_FUNCTIONS are folded and guarded.
            raise Unsupported("Attempted to call function marked as skipped",
                              f"{_qualname(fn)} takes no tensor and returns no tensor", _GLOBAL_STATE_READ)
        result = tx.output.call_function(fn, list(args), dict(kwargs))
        if not from_graph and isinstance(result, ConstantVariable) and type(result.value) in _FLAG_TYPES:
            # A Python function of torch that answered a flag from no tensor (the C readers
            # it calls were run on fakes, unguarded): the same refusal.
            raise Unsupported("Attempted to call function marked as skipped",
                              f"{_qualname(fn)} returned {type(result.value).__name__}, not a tensor",
                              _GLOBAL_STATE_READ)
        return result

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if isinstance(self.value, torch._ops.OpOverloadPacket) and name in self.value.overloads():
            # `torch.ops.aten.add_.Tensor`: one overload of the operator, a graph node too.
            source = AttrSource(self.source, name) if self.source is not None else None
            return TorchFunctionVariable(getattr(self.value, name), source)
        return super().var_getattr(tx, name)

    def __repr__(self) -> str:
        return f"TorchFunctionVariable({_qualname(self.value)})"


def _is_user_graph_break(fn: Any) -> bool:
    # Recognised by name: framegraph never imports torch._dynamo itself.
    return (getattr(fn, "__module__", None) == "torch._dynamo.decorators"
            and getattr(fn, "__name__", None) == "graph_break")


def is_disable_marker(fn: Any) -> bool:
    """torch.compiler.disable, torch._dynamo.disable or framegraph.disable, found by identity
    (torch._dynamo's only if a program imported it: framegraph never does)."""
    from ..eval_frame import disable

    if fn is torch.compiler.disable or fn is disable:
        return True
    dynamo = sys.modules.get("torch._dynamo")
    return dynamo is not None and fn is getattr(dynamo, "disable", None)


class MarkedDisabledVariable(VariableTracker):
    """`disable(fn, ...)` called while tracing: a function no compiler may trace, so calling
    it is a graph break, where it runs eagerly. Called without the function, the decorator
    that marks one. Rebuilt after the graph by calling the marker again."""

    __slots__ = ("marker", "args", "kwargs")

    def __init__(self, marker: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> None:
        super().__init__()
        self.marker, self.args, self.kwargs = marker, args, kwargs

    def _target(self) -> VariableTracker | None:
        target = self.args[0] if self.args else self.kwargs.get("fn")
        return None if target is None or (target.is_python_constant() and target.as_python_constant() is None) \
            else target

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        target = self._target()
        if target is None and len(args) == 1 and not kwargs and self.marker is not _framegraph_disable():
            return MarkedDisabledVariable(self.marker, args, dict(self.kwargs))
        what = f"{_qualname(self.marker)}" + ("" if target is None else f"({target})")
        raise Unsupported("Attempted to call function marked as skipped",
                          f"a function marked with {what} was called",
                          "The program marked this function so that no compiler traces it; it runs eagerly, "
                          "as under torch.compile.")

    def children(self) -> list[VariableTracker]:
        return [*self.args, *self.kwargs.values()]

    def reconstruct(self, codegen) -> None:
        from ..bytecode import emit

        codegen.load_callable_const(self.marker)
        for value in (*self.args, *self.kwargs.values()):
            codegen.reconstruct(value)
        codegen.append(*emit.create_call(len(self.args) + len(self.kwargs), tuple(self.kwargs)))


def _framegraph_disable() -> Any:
    from ..eval_frame import disable

    return disable


def _holds_dynamic_float(value: VariableTracker) -> bool:
    if isinstance(value, SymNodeVariable):
        return value.is_dynamic_float()
    return isinstance(value, (ListVariable, TupleVariable)) and any(_holds_dynamic_float(v) for v in value.items)


def _qualname(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or "torch"
    return f"{module}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


_FLAG_TYPES = (bool, int, float, str)
_GLOBAL_STATE_READ = ("A torch function that takes no tensor and returns no tensor reads or changes state "
                      "of the process that no guard of the graph covers, so it runs eagerly "
                      "(torch.compile breaks on these too).")


def graph_values(values: list[VariableTracker]):
    """The tensors and symbolic sizes among `values` and what they contain, each tracker once
    (a container may hold itself)."""
    stack, seen = list(values), set()
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, (TensorVariable, SymNodeVariable)):
            yield value
        stack.extend(value.children())


def reads_graph_values(values: list[VariableTracker]) -> bool:
    """Whether any of `values` (or what they contain) is a tensor or symbolic size of the graph."""
    return next(graph_values(values), None) is not None


def _fold_constant_call(fn: Callable) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker:
        if kwargs or not all(a.is_python_constant() for a in args):
            raise Unsupported("Unsupported builtin call", f"{_qualname(fn)} with non-constant arguments")
        return fold(fn, *args)
    return handler


def _fold_pure_call(fn: Callable) -> Callable:
    """A pure function: folded on constants, a graph node on graph values (sym_max(s0, 2))."""
    fold_constants = _fold_constant_call(fn)

    def handler(tx, args, kwargs) -> VariableTracker:
        if reads_graph_values([*args, *kwargs.values()]):
            return tx.output.call_function(fn, list(args), dict(kwargs))
        return fold_constants(tx, args, kwargs)
    return handler


def _fold_autocast(fn: Callable, reads_dtype: bool) -> Callable:
    """is_autocast_enabled / get_autocast_dtype: the global-state guard holds whether any
    autocast is on and, when one is, the CPU settings; nothing else is folded."""
    def handler(tx, args, kwargs) -> VariableTracker:
        given = args[0] if args else kwargs.get("device_type")
        device = given.as_python_constant() if given is not None else "cuda"
        if torch._C._is_any_autocast_enabled():
            if device == "cpu":
                return fold(fn, ConstantVariable(device))
        elif not reads_dtype:
            return ConstantVariable(False)
        raise Unsupported("Attempted to call function marked as skipped",
                          f"{_qualname(fn)}({device!r}) reads autocast state no guard covers", _GLOBAL_STATE_READ)
    return handler


def _fold_guarded_reader(fn: Callable) -> Callable:
    """A reader of process state outside the global-state guard, folded to the value it
    returns now and guarded where a trace reads it (frames that never read it pay nothing)."""
    def handler(tx, args, kwargs) -> VariableTracker:
        from ..guards import GuardKind

        if args or kwargs:
            raise Unsupported("Unsupported builtin call", f"{_qualname(fn)} with arguments")
        value = fn()
        tx.output.guards.add(GuardKind.STATE_READ, None, (fn, value), tx.output.user_line, key=fn)
        return ConstantVariable(value)
    return handler


def _is_tensor(tx, args, kwargs) -> VariableTracker:
    return ConstantVariable(isinstance(args[0], TensorVariable))


# Functions whose result is known while tracing. The process state they read is part of the
# global-state guard (guards.global_state): grad and inference mode, default dtype,
# deterministic algorithms, autocast, torch-function dispatch, and jit tracing and dispatch
# modes, under which frames are never compiled. Other readers of process state
# (torch.autograd._profiler_enabled, torch.is_anomaly_enabled, torch.get_num_threads, ...)
# are graph breaks (TorchFunctionVariable.call_function).
FOLDED_TORCH_FUNCTIONS: dict[Callable, Callable] = {
    torch.is_tensor: _is_tensor,
    torch.fx.traceback.annotate: ctx_managers.annotate,
    torch.is_grad_enabled: _fold_constant_call(torch.is_grad_enabled),
    torch.is_inference_mode_enabled: _fold_constant_call(torch.is_inference_mode_enabled),
    torch.get_default_dtype: _fold_constant_call(torch.get_default_dtype),
    torch.are_deterministic_algorithms_enabled: _fold_constant_call(torch.are_deterministic_algorithms_enabled),
    torch.is_deterministic_algorithms_warn_only_enabled:
        _fold_constant_call(torch.is_deterministic_algorithms_warn_only_enabled),
    torch._C._is_torch_function_enabled: _fold_constant_call(torch._C._is_torch_function_enabled),
    torch._C._is_any_autocast_enabled: _fold_constant_call(torch._C._is_any_autocast_enabled),
    # Whether vmap/grad/jvp is running (torch.autograd.Function.apply asks): a bool the C
    # guard reads with one call, only in entries whose trace read it.
    torch._C._are_functorch_transforms_active: _fold_guarded_reader(torch._C._are_functorch_transforms_active),
    torch.is_autocast_enabled: _fold_autocast(torch.is_autocast_enabled, reads_dtype=False),
    torch.get_autocast_dtype: _fold_autocast(torch.get_autocast_dtype, reads_dtype=True),
    torch.is_floating_point: lambda tx, args, kw: ConstantVariable(args[0].example.is_floating_point()),
    torch.is_complex: lambda tx, args, kw: ConstantVariable(args[0].example.is_complex()),
    torch.compiler.is_compiling: lambda tx, args, kw: ConstantVariable(True),
    torch.compiler.is_dynamo_compiling: lambda tx, args, kw: ConstantVariable(True),
    torch.jit.is_scripting: lambda tx, args, kw: ConstantVariable(False),
    torch.jit.is_tracing: lambda tx, args, kw: ConstantVariable(False),
    torch._C._is_tracing: lambda tx, args, kw: ConstantVariable(False),
    torch._utils.is_compiling: lambda tx, args, kw: ConstantVariable(True),
    torch.compiler.is_exporting: lambda tx, args, kw: ConstantVariable(False),
    torch.fx._symbolic_trace.is_fx_tracing: lambda tx, args, kw: ConstantVariable(False),
    torch.onnx.is_in_onnx_export: lambda tx, args, kw: ConstantVariable(False),
    torch._C._get_tracing_state: lambda tx, args, kw: ConstantVariable(None),
    # Frames are compiled only with no dispatch mode pushed, which the global-state guard
    # keeps true (nn.MultiheadAttention asks whether make_fx is tracing).
    torch.utils._python_dispatch._get_current_dispatch_mode_stack: lambda tx, args, kw: ListVariable([]),
    torch.utils._python_dispatch._get_current_dispatch_mode: lambda tx, args, kw: ConstantVariable(None),
    # The name of the out-of-tree device type; fixed once a backend registers (optimizers
    # read it to decide between foreach and per-tensor kernels).
    torch._C._get_privateuse1_backend_name: _fold_constant_call(torch._C._get_privateuse1_backend_name),
    torch._C._group_tensors_by_device_and_dtype: group_tensors_by_device_and_dtype,
    torch._check: lambda tx, args, kwargs: scalars.check(tx, list(args), dict(kwargs)),
    torch._check_tensor_all: lambda tx, args, kwargs: scalars.check_tensor_all(tx, list(args), dict(kwargs)),
    # Pure functions of their arguments, and facts fixed for the process.
    **{fn: _fold_pure_call(fn) for fn in (
        torch._assert, torch.promote_types, torch.can_cast, torch.sym_int, torch.sym_float, torch.sym_max,
        torch.sym_min, torch.sym_not, torch.sym_ite, torch.nn.functional._Reduction.get_enum,
        torch.nn.functional._Reduction.legacy_get_string, torch.nn.functional._Reduction.legacy_get_enum,
        torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available,
        torch.backends.mkldnn.is_available, torch.distributed.is_available)},
}


class SkippedFunctionVariable(ValueVariable):
    """A callable framegraph does not trace: calling it is a graph break at the call."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.value in _FRAME_GETTERS:
            raise Unsupported("Frame introspection", f"`{self.value.__module__}.{self.value.__name__}` was called")
        if self.value is _own_graph_break():
            raise Unsupported("Call to graph_break()", "framegraph.graph_break() was called")
        if is_disable_marker(self.value) and (args or kwargs):
            return MarkedDisabledVariable(self.value, list(args), dict(kwargs))
        deferred = logging_calls.module_function(self.value)
        if deferred is not None:
            return deferred.call_function(tx, args, kwargs)
        from .stdlib import is_immutable_constant

        bound_to = getattr(self.value, "__self__", None)
        if isinstance(self.value, types.BuiltinMethodType) and type(bound_to) in PURE_METHOD_TYPES \
                and is_immutable_constant(bound_to) and all(a.is_python_constant() for a in (*args, *kwargs.values())):
            # A method of an immutable value (`keyword.iskeyword` is a frozenset's __contains__)
            return fold(lambda *a: self.value(*a, **{k: v.as_python_constant() for k, v in kwargs.items()}), *args)
        name = getattr(self.value, "__qualname__", None) or repr(self.value)
        what = f"the builtin `{name}`" if type(self.value) is types.BuiltinFunctionType else f"`{name}`"
        raise Unsupported("Attempted to call function marked as skipped", f"{what} was called")

    def __repr__(self) -> str:
        return f"SkippedFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


class DisabledFunctionVariable(SkippedFunctionVariable):
    """A function marked with `torch._dynamo.disable` or `torch._disable_dynamo`."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        name = getattr(self.value, "__qualname__", None) or repr(self.value)
        raise Unsupported("Attempted to call function marked as skipped",
                          f"`{name}` is marked with torch._dynamo.disable (or torch._disable_dynamo)",
                          "torch and programs mark code no compiler may trace this way; it runs eagerly, "
                          "as under torch.compile.")


def _own_graph_break() -> Any:
    from ..eval_frame import graph_break

    return graph_break


# Callables that return a running frame: the one compiled, or one its callees reach it from.
_FRAME_GETTERS = (sys._getframe, inspect.currentframe)


def is_torch_function(value: Any) -> bool:
    """Callables defined by torch that are not classes: ops, functional API, C bindings."""
    if isinstance(value, type) or not callable(value):
        return False
    module = getattr(value, "__module__", None) or ""
    if module == "torch" or module.startswith("torch.") or module.startswith("torch._C"):
        # A Python function made at run time (what torch.vmap or torch.func.grad returns) is
        # not a torch function: a graph could not name it, and it runs user code. Nor is
        # functorch's Python: its transforms push interpreter levels a graph node cannot hold
        # (those framegraph traces are handled by framegraph.higher_order).
        if isinstance(value, types.FunctionType) and _FUNCTORCH_DIR in value.__code__.co_filename:
            return False
        return not isinstance(value, types.FunctionType) or _found_at_its_name(value, module)
    # C functions like torch.sin report no module but live on torch._C._VariableFunctions.
    return getattr(value, "__self__", None) is torch._C._VariableFunctions


_FUNCTORCH_DIR = os.path.join("torch", "_functorch", "")  # (torch.func's are renamed torch.func)


def _found_at_its_name(fn: types.FunctionType, module: str) -> bool:
    # torch.fx names a function's target by its module and __name__ (torch.unique is made by a
    # factory, but is found there).
    found = getattr(sys.modules.get(module), fn.__name__, None)
    return found is fn or getattr(found, "__wrapped__", None) is fn
