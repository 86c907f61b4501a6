"""`inspect` on the forward path: `inspect.signature(fn).parameters` and the type predicates.

Libraries ask a function which arguments it takes (`"labels" in
inspect.signature(self.forward).parameters`). The answer is computed now, by inspect itself
on the real function, and folded; the guards pin what it was computed from:

- a traced function's parameter names and kinds come from its code, already pinned by the
  guard on `__code__` that every traced function carries; inspect would follow a
  `__wrapped__` attribute (each link is then pinned the same way) and honour
  `__signature__` / `_partialmethod` (their absence is guarded, their presence refused);
- a default value is read, and guarded, only when the program reads `.default` (so two
  closures of one `def` share the entry until one's defaults matter);
- a library function (torch's, a builtin) or a Signature object the program holds is fixed.

The mapping `parameters` is a read-only dict of ParameterVariables, so `in`, iteration,
`keys()`, `items()` and `len()` work as on any dict. A signature that must outlive the graph
is computed again there, by the same `inspect.signature` call.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, ItemSource, Source
from .base import VariableTracker
from .constant import ConstantVariable, is_constant_type
from .containers import DictVariable

# What inspect reads from a function's __dict__ besides the code: any of these changes the answer.
_OVERRIDES = ("__signature__", "_partialmethod", "__partialmethod__", "__wrapped__")
_BOUND = object()  # what a method's signature is bound to: inspect never looks at it

TYPE_PREDICATES: dict[str, type] = {
    "ismodule": types.ModuleType, "isclass": type, "ismethod": types.MethodType,
    "isfunction": types.FunctionType, "isgenerator": types.GeneratorType,
    "iscoroutine": types.CoroutineType, "isasyncgen": types.AsyncGeneratorType,
    "istraceback": types.TracebackType, "isframe": types.FrameType, "iscode": types.CodeType,
    "isbuiltin": types.BuiltinFunctionType, "ismethodwrapper": types.MethodWrapperType,
}


def type_predicate(kind: type) -> Callable:
    """`inspect.isX(obj)`, which is `isinstance(obj, kind)`, folded as isinstance is."""
    def handler(tx, args, kwargs) -> VariableTracker:
        from .builtins import BuiltinVariable

        if len(args) + len(kwargs) != 1 or (kwargs and "object" not in kwargs):
            raise Unsupported("Unsupported exception handling", f"inspect predicate for {kind.__name__} called wrongly")
        obj = args[0] if args else kwargs["object"]
        return BuiltinVariable(isinstance).call_function(tx, [obj, ConstantVariable(kind)], {})
    return handler


def signature(tx, args, kwargs) -> VariableTracker:
    """`inspect.signature(obj)` for a traced function or method, or a library callable."""
    if len(args) != 1 or kwargs:
        raise Unsupported("Attempted to call function marked as skipped", "inspect.signature with options")
    obj = args[0]
    real, defaults = _real_callable(tx, obj)
    try:
        value = inspect.signature(real)
    except (TypeError, ValueError) as error:
        raise Unsupported("Unsupported exception handling", f"inspect.signature raised {type(error).__name__}: {error}") from None
    return SignatureVariable(value, defaults, rebuild=obj)


def _real_callable(tx, obj: VariableTracker) -> tuple[Any, Callable | None]:
    """The object inspect.signature is asked about, with its pins recorded, and how to read
    a parameter's default (None: the default in the signature is fixed)."""
    from ..trace_rules import is_inlineable, is_user_class
    from .user_functions import NestedFunctionVariable, UserFunctionVariable, UserMethodVariable

    if isinstance(obj, UserMethodVariable) and isinstance(obj.fn, (UserFunctionVariable, NestedFunctionVariable)):
        function, defaults = _real_callable(tx, obj.fn)
        return types.MethodType(function, _BOUND), defaults
    if isinstance(obj, UserFunctionVariable):
        final = _pin_wrapped_chain(tx, obj)
        if not isinstance(final, UserFunctionVariable):
            return obj.fn, None  # the chain ends in a library function, which is fixed
        return obj.fn, lambda tx, param: _user_default(tx, final, param)
    if isinstance(obj, NestedFunctionVariable):
        return _function_from(obj), lambda tx, param: _nested_default(obj, param)
    if obj.is_python_constant() and callable(obj.as_python_constant()):
        value = obj.as_python_constant()
        if not ((isinstance(value, type) and is_user_class(value))
                or (isinstance(value, types.FunctionType) and is_inlineable(value))):
            return value, None
    raise Unsupported("Attempted to call function marked as skipped", f"inspect.signature of {obj}")


def _pin_wrapped_chain(tx, fn) -> VariableTracker:
    """Guards what inspect reads from each function of a `__wrapped__` chain; the last one."""
    from .builder import wrap
    from .user_functions import UserFunctionVariable

    while isinstance(fn, UserFunctionVariable):
        if fn.source is None:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"inspect.signature of {fn.fn.__qualname__}, which the guards cannot reach")
        present = [name for name in _OVERRIDES if name in fn.fn.__dict__]
        if present and present != ["__wrapped__"]:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"inspect.signature of {fn.fn.__qualname__}, which sets {present[0]}")
        absent = tuple(name for name in _OVERRIDES if name not in present)
        tx.output.guards.add(GuardKind.NOT_IN_DICT, fn.source, absent, tx.output.user_line)
        if not present:
            return fn
        fn = wrap(tx, fn.fn.__wrapped__, AttrSource(fn.source, "__wrapped__"))
    if not fn.is_python_constant():
        raise Unsupported("Attempted to call function marked as skipped", f"inspect.signature through {fn}")
    return fn


def _function_from(nested) -> types.FunctionType:
    """A real function with a nested function's code and as many defaults (placeholders:
    inspect only counts them, the values are read from the trackers)."""
    code = nested.get_code()
    closure = tuple(types.CellType() for _ in code.co_freevars)
    kwdefaults = {name: _BOUND for name in nested.keyword_defaults} or None
    function = types.FunctionType(code, {}, code.co_name, (_BOUND,) * len(nested.positional_defaults), closure)
    function.__kwdefaults__ = kwdefaults
    return function


def _user_default(tx, fn, param: inspect.Parameter) -> VariableTracker:
    """The default of `param`, read from the function and guarded (whether there is one
    depends on how many defaults the function object holds)."""
    from .builder import wrap

    code, line = fn.fn.__code__, tx.output.user_line
    if param.kind is param.KEYWORD_ONLY:
        attr, defaults = "__kwdefaults__", fn.fn.__kwdefaults__
        source = AttrSource(fn.source, attr)
        if defaults is None:
            tx.output.guards.add(GuardKind.EQUALS_MATCH, source, None, line)
            return ConstantVariable(param.empty)
        tx.output.guards.add(GuardKind.DICT_KEYS, source, (dict, tuple(defaults)), line)
        if param.name not in defaults:
            return ConstantVariable(param.empty)
        return wrap(tx, defaults[param.name], ItemSource(source, param.name))
    source = AttrSource(fn.source, "__defaults__")
    defaults = fn.fn.__defaults__
    if defaults is None:
        tx.output.guards.add(GuardKind.EQUALS_MATCH, source, None, line)
        return ConstantVariable(param.empty)
    tx.output.guards.add(GuardKind.LENGTH, source, (tuple, len(defaults)), line)
    index = code.co_varnames.index(param.name) - (code.co_argcount - len(defaults))
    if index < 0:
        return ConstantVariable(param.empty)
    return wrap(tx, defaults[index], ItemSource(source, index))


def _nested_default(nested, param: inspect.Parameter) -> VariableTracker:
    if param.kind is param.KEYWORD_ONLY:
        return nested.keyword_defaults.get(param.name, ConstantVariable(param.empty))
    code = nested.get_code()
    index = code.co_varnames.index(param.name) - (code.co_argcount - len(nested.positional_defaults))
    return nested.positional_defaults[index] if index >= 0 else ConstantVariable(param.empty)


class SignatureVariable(VariableTracker):
    """An `inspect.Signature`: its parameter names and kinds are constants; defaults are read
    through `defaults` (None: the ones in the object, which is fixed)."""

    __slots__ = ("value", "defaults", "rebuild")

    def __init__(self, value: inspect.Signature, defaults: Callable | None, rebuild: VariableTracker | None = None,
                 source: Source | None = None) -> None:
        super().__init__(source)
        self.value, self.defaults, self.rebuild = value, defaults, rebuild

    def python_type(self) -> type:
        return inspect.Signature

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "parameters":
            parameters = {key: ParameterVariable(param, self) for key, param in self.value.parameters.items()}
            return ParametersVariable(parameters, self)
        if name == "empty":
            return ConstantVariable(self.value.empty)
        if name == "return_annotation" and self.defaults is None:
            return _fixed(self.value.return_annotation, "return annotation")
        raise Unsupported("Unsupported attribute access", f"Signature.{name}")

    def default_of(self, tx, param: inspect.Parameter) -> VariableTracker:
        if self.defaults is not None:
            return self.defaults(tx, param)
        if self.source is not None:
            from .builder import wrap

            return wrap(tx, param.default, AttrSource(ItemSource(AttrSource(self.source, "parameters"), param.name),
                                                      "default"))
        return _fixed(param.default, "default")

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        if self.rebuild is None:
            raise Unsupported("Unsupported attribute access", "a signature made while tracing")
        # Asked again after the graph, of the same callable, as the program asked it.
        codegen.load_callable_const(inspect.signature)
        codegen.reconstruct(self.rebuild)
        codegen.call(1)

    def children(self) -> list[VariableTracker]:
        return [self.rebuild] if self.rebuild is not None else []

    def __repr__(self) -> str:
        return f"SignatureVariable{self.value}"


class ParametersVariable(DictVariable):
    """`Signature.parameters`: a read-only mapping from names to parameters."""

    __slots__ = ("signature",)

    def __init__(self, items: dict, signature: SignatureVariable) -> None:
        super().__init__(items)
        self.signature = signature

    def python_type(self) -> type:
        return types.MappingProxyType

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name in ("__setitem__", "__delitem__", "pop", "popitem", "setdefault", "update", "clear", "copy"):
            raise Unsupported("Unsupported exception handling", f"mappingproxy.{name}")
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen) -> None:
        codegen.reconstruct(self.signature)
        codegen.load_attr("parameters")

    def children(self) -> list[VariableTracker]:
        return [self.signature]


class ParameterVariable(VariableTracker):
    """One `inspect.Parameter` of a SignatureVariable."""

    __slots__ = ("value", "signature")

    def __init__(self, value: inspect.Parameter, signature: SignatureVariable | None, source: Source | None = None) -> None:
        super().__init__(source)
        self.value, self.signature = value, signature

    def python_type(self) -> type:
        return inspect.Parameter

    def var_getattr(self, tx, name: str) -> VariableTracker:
        param = self.value
        if name in ("name", "kind"):
            return ConstantVariable(getattr(param, name))
        if name in ("empty", "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY",
                    "VAR_KEYWORD"):
            return ConstantVariable(getattr(inspect.Parameter, name))
        if name == "default":
            if self.signature is not None:
                return self.signature.default_of(tx, param)
            if self.source is not None:
                from .builder import wrap

                return wrap(tx, param.default, AttrSource(self.source, "default"))
        if name == "annotation" and (self.signature is None or self.signature.defaults is None):
            return _fixed(param.annotation, "annotation")
        raise Unsupported("Unsupported attribute access", f"inspect.Parameter.{name}")

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.reconstruct(self.signature)
        codegen.load_attr("parameters")
        codegen.load_const(self.value.name)
        codegen.subscript()

    def children(self) -> list[VariableTracker]:
        return [self.signature] if self.signature is not None else []

    def __repr__(self) -> str:
        return f"ParameterVariable({self.value})"


def _fixed(value: Any, what: str) -> VariableTracker:
    if is_constant_type(value) or isinstance(value, type):
        return ConstantVariable(value)
    raise Unsupported("Unsupported attribute access", f"a parameter's {what} of type {type(value).__name__}")


def known_object(value: Any, source: Source | None) -> tuple[VariableTracker, GuardKind] | None:
    """A Signature or Parameter the program holds: immutable, so pinning the object pins
    everything it says."""
    if type(value) is inspect.Signature:
        return SignatureVariable(value, None, source=source), GuardKind.ID_MATCH
    if type(value) is inspect.Parameter:
        return ParameterVariable(value, None, source), GuardKind.ID_MATCH
    return None
