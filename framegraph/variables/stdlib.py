"""Standard-library functions and objects that library code uses on its forward path, modelled
by what they compute (their modules are skipped by the trace rules, so a call of them would
otherwise be a graph break):

- `os.environ` reads and `os.getenv`: the value read is folded and guarded, so changing the
  variable recompiles;
- `inspect.signature(fn).parameters` and the `inspect.is*` type predicates, folded for
  functions whose signature the guards pin (variables/signatures.py);
- `copy.copy` / `copy.deepcopy` (variables/copying.py);
- `functools.lru_cache` wrappers (`LruCacheVariable`);
- torch's compile-state queries that framegraph cannot import (`torch._dynamo.is_compiling`
  lives in torch._dynamo, which framegraph never imports), and torch's once-per-process usage
  logger (`torch._C._log_api_usage_once`, torchvision calls it in forward code).

`modelled_callable` and `wrap_known_object` are what variables/builder.py asks first.
"""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import os
import sys
import types
import typing
import warnings
from typing import Any, Callable

import torch

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, GlobalSource, MethodCallSource, Source
from . import enums, signatures
from .base import KnownValueVariable, MethodVariable, ValueVariable, VariableTracker
from .constant import ConstantVariable, is_constant_type, is_pybind_enum_member


class LibraryFunctionVariable(KnownValueVariable):
    """A library function whose call is modelled by `handler(tx, args, kwargs)`."""

    __slots__ = ("handler",)

    def __init__(self, value: Any, handler: Callable, source: Source | None = None) -> None:
        super().__init__(value, source)
        self.handler = handler

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.handler(tx, list(args), dict(kwargs))

    def __repr__(self) -> str:
        return f"LibraryFunctionVariable({getattr(self.value, '__qualname__', self.value)})"


# ---- os.environ ---------------------------------------------------------------------------

class EnvironVariable(ValueVariable):
    """`os.environ`: each variable read is folded and guarded by reading it again
    (`environ.get('X')`, `'X' in environ`), so a changed environment recompiles. What reads
    the whole environment (iteration, `copy()`) and writes are not modelled."""

    __slots__ = ()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("get", "__getitem__", "__contains__"):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"os.environ.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "get" and 1 <= len(args) <= 2 and not kwargs:
            value = self.read(tx, _env_key(args[0]))
            if value is None:
                return args[1] if len(args) == 2 else ConstantVariable(None)
            return ConstantVariable(value)
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            key = _env_key(args[0])
            value = self.read(tx, key)
            if value is None:
                raise Unsupported("Unsupported exception handling", f"os.environ[{key!r}] raised KeyError")
            return ConstantVariable(value)
        if name == "__contains__" and len(args) == 1 and not kwargs:
            key = _env_key(args[0])
            present = key in self.value
            self._guard(tx, "__contains__", key, present)
            return ConstantVariable(present)
        if name in ("__setitem__", "__delitem__", "pop", "setdefault", "update", "clear", "popitem"):
            raise Unsupported("Unsupported mutation", f"os.environ.{name}")
        raise Unsupported("Unsupported method call", f"os.environ.{name} reads the whole environment")

    def read(self, tx, key: str) -> str | None:
        value = self.value.get(key)
        self._guard(tx, "get", key, value)
        return value

    def _guard(self, tx, method: str, key: str, value: Any) -> None:
        if self.source is None:
            raise Unsupported("Unsupported attribute access", "os.environ reached without a source")
        tx.output.guards.add(GuardKind.EQUALS_MATCH, MethodCallSource(self.source, method, (key,)), value,
                             tx.output.user_line)

    def __repr__(self) -> str:
        return "EnvironVariable()"


def _env_key(key: VariableTracker) -> str:
    value = key.as_python_constant() if key.is_python_constant() else None
    if type(value) is not str:
        raise Unsupported("Unsupported method call", f"os.environ read with key {key}")
    return value


def environ_variable(tx) -> EnvironVariable:
    """The `os.environ` that `os.getenv` reads (os's global `environ`)."""
    from ..symbolic_convert.handlers.imports import sys_modules_source

    source = AttrSource(sys_modules_source(tx, "os"), "environ")
    tx.output.guards.add(GuardKind.ID_MATCH, source, os.environ, tx.output.user_line)
    return EnvironVariable(os.environ, source)


def _getenv(tx, args, kwargs) -> VariableTracker:
    bound = bind_library_call(os.getenv, args, kwargs)
    return environ_variable(tx).call_method(tx, "get", [bound["key"], bound["default"]], {})


def bind_library_call(fn: Callable, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> dict[str, VariableTracker]:
    """The parameters of a library function a call binds (defaults as constants), or the
    TypeError the eager call raises."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as error:
        raise Unsupported("Unsupported exception handling", f"{fn.__qualname__}(): {error}") from None
    bound.apply_defaults()
    return {name: value if isinstance(value, VariableTracker) else ConstantVariable(value)
            for name, value in bound.arguments.items()}


# ---- functools.lru_cache ------------------------------------------------------------------

class LruCacheVariable(ValueVariable):
    """A function wrapped by `functools.lru_cache` (or `functools.cache`).

    Eagerly, a call with arguments seen before returns the cached object without running the
    function, and a new one runs it (effects included) and remembers the result. torch.compile
    ignores the cache and traces the wrapped function, which replays the function's effects
    on every call and returns a new object where eager returns the cached one. Here a call
    folds only where that cannot differ:

    - the wrapped function is marked with torch's `assume_constant_result` (transformers marks
      its version probes so): it is called now, through the cache, as torch.compile does;
    - all arguments are constants (or objects the guards pin) and the wrapped function,
      traced, has no effect and makes no tensor: then the real wrapper is called now, which
      runs nothing the trace did not see, and its answer (the cached object, or a new one it
      now holds, as after the eager call) is used: folded, if it is immutable and equal to
      what the trace computed; an object (einops' recipes) is handed on itself, from a global
      installed for it, so the program gets the very object the cache holds. The guards on
      what the body read stay: when that state changes, the call is traced and compared again
      (a cached answer that no longer matches a new call breaks the graph, where the real
      wrapper returns it);
    - otherwise the call is a graph break, where the real wrapper runs with its cache.

    Only the cache's hit count differs from eager: the compiled code does not call it.
    """

    __slots__ = ()

    def python_type(self) -> type:
        return type(self.value)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import wrap

        if self.source is not None and name in vars(self.value):  # __wrapped__, __name__, ...
            return wrap(tx, vars(self.value)[name], AttrSource(self.source, name))
        raise Unsupported("Unsupported attribute access", f"lru_cache wrapper attribute {name!r}")

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .object_keys import real_object

        name = getattr(self.value, "__qualname__", repr(self.value))
        reals = {id(v): real_object(tx, v) if not v.is_python_constant() else (True, v.as_python_constant())
                 for v in (*args, *kwargs.values())}
        if not all(known for known, _ in reals.values()):
            raise Unsupported("Attempted to call function marked as skipped",
                              f"lru_cache function {name} with arguments that are not constants or objects "
                              "known while tracing: its cache decides whether it runs, so it runs eagerly")
        constants = [reals[id(a)][1] for a in args]
        keywords = {k: reals[id(v)][1] for k, v in kwargs.items()}
        if getattr(self.value, "_dynamo_marked_constant", False):
            try:
                result = self.value(*constants, **keywords)
            except Exception as error:
                raise Unsupported("Unsupported exception handling",
                                  f"{name} raised {type(error).__name__}: {error}") from None
            if not is_immutable_constant(result):
                raise Unsupported("Unsupported value type", f"{name} (assumed constant) returned {type(result).__name__}")
            return ConstantVariable(result)
        return self._call_pure(tx, name, args, kwargs, constants, keywords)

    def _call_pure(self, tx, name: str, args, kwargs, constants: list, keywords: dict) -> VariableTracker:
        """Traces the wrapped function to learn that it is pure; then the real wrapper is called
        (a cached answer, or a first call, which runs nothing the trace did not see and fills
        the cache as the eager call would), and its answer, the very object eager returns, is
        folded."""
        from .builder import wrap

        wrapped = vars(self.value).get("__wrapped__")
        if not isinstance(wrapped, types.FunctionType) or self.source is None:
            raise Unsupported("Attempted to call function marked as skipped", f"lru_cache function {name}")
        fn = wrap(tx, wrapped, AttrSource(self.source, "__wrapped__"))
        output = tx.output
        before = (len(output.graph.nodes), len(output.side_effects))
        traced = fn.call_function(tx, args, kwargs)
        if (len(output.graph.nodes), len(output.side_effects)) != before:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"lru_cache function {name} has effects or makes tensors, which its cache would "
                              "skip on a later call: it runs eagerly")
        try:
            result = self.value(*constants, **keywords)
        except Exception as error:  # unhashable arguments: the eager call raises
            raise Unsupported("Unsupported exception handling", f"{name} raised {type(error).__name__}: {error}") from None
        if not (traced.is_python_constant() and is_immutable_constant(traced.as_python_constant())):
            # An object (einops' recipes): the one the cache holds, which every later call
            # returns eagerly, is handed to the program, reached from a global of its own.
            global_name = f"___lru_result_{id(result)}"
            output.install_global(global_name, result)
            return wrap(tx, result, GlobalSource(global_name))
        expected = traced.as_python_constant()
        if type(result) is not type(expected) or result != expected:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"lru_cache function {name}: its cache holds {result!r}, a new call gives {expected!r}")
        return ConstantVariable(result)

    def __repr__(self) -> str:
        return f"LruCacheVariable({getattr(self.value, '__qualname__', self.value)})"


def is_immutable_constant(value: Any) -> bool:
    """A value whose every copy behaves the same: a constant, or a tuple/frozenset of them."""
    if type(value) in (tuple, frozenset):
        return all(is_immutable_constant(v) for v in value)
    return is_constant_type(value) or isinstance(value, enum.Enum)


# ---- abc ----------------------------------------------------------------------------------

def guard_class_checks(tx, subject: type, classes: Any, answer: bool) -> None:
    """`issubclass(subject, classes)` is `answer` for as long as the guard holds. An ABC's
    answer can change when any ABC registers a class (`Base.register(T)`, which bumps abc's
    cache token); most registrations concern other classes (a module imported lazily
    registering its own), so the guard asks again only when the token has moved."""
    import abc

    pending = [classes]
    while pending:
        cls = pending.pop()
        if isinstance(cls, tuple):
            pending.extend(cls)
        elif isinstance(cls, abc.ABCMeta):
            tx.output.guards.add(GuardKind.STATE_READ, None, (class_check(subject, classes), answer),
                                 tx.output.user_line)
            return


def class_check(subject: type, classes: Any) -> "ClassCheck":
    key = (subject, classes)
    check = _CLASS_CHECKS.get(key)
    if check is None:
        check = _CLASS_CHECKS[key] = ClassCheck(subject, classes)
    return check


class ClassCheck:
    """`issubclass(subject, classes)`, asked again only after abc's cache token moved."""

    __slots__ = ("subject", "classes", "token", "answer", "__qualname__")
    __module__ = "abc"
    # Named by what it checks, so the persistent cache can save a guard on it.
    __framegraph_portable__ = True

    def __reduce__(self) -> tuple:
        return class_check, (self.subject, self.classes)

    def __init__(self, subject: type, classes: Any) -> None:
        import abc

        self.subject, self.classes = subject, classes
        self.token, self.answer = abc.get_cache_token(), issubclass(subject, classes)
        self.__qualname__ = f"issubclass({subject.__qualname__}, {getattr(classes, '__qualname__', classes)}) @token"

    def __call__(self) -> bool:
        import abc

        token = abc.get_cache_token()
        if token != self.token:
            self.token, self.answer = token, issubclass(self.subject, self.classes)
        return self.answer


# (subject, classes) -> its ClassCheck: one per pair, so guards on it are one guard.
_CLASS_CHECKS: dict[tuple, ClassCheck] = {}


# ---- torch's queries and loggers found by name --------------------------------------------

def _compiling(tx, args, kwargs) -> VariableTracker:
    # True while tracing, as under torch.compile; the function itself returns False when the
    # frame runs eagerly (a fallback, a graph break's eager part).
    return ConstantVariable(True)


def _log_api_usage_once(tx, args, kwargs) -> VariableTracker:
    """torch's usage logger records each key once per process (a no-op unless a logger is
    subscribed): calling it now, once, is what every later eager call would amount to."""
    if kwargs or len(args) != 1 or not args[0].is_python_constant() or type(args[0].as_python_constant()) is not str:
        raise Unsupported("Attempted to call function marked as skipped", "torch._C._log_api_usage_once")
    torch._C._log_api_usage_once(args[0].as_python_constant())
    return ConstantVariable(None)


def _is_dynamo_is_compiling(value: Any) -> bool:
    return (type(value) is types.FunctionType and value.__module__ == "torch._dynamo.external_utils"
            and value.__name__ == "is_compiling")


# ---- dispatch -----------------------------------------------------------------------------

def _typing_query(fn: Callable) -> Callable:
    """typing.get_origin / get_args: pure functions of an annotation, folded for a constant one."""
    def handler(tx, args, kwargs) -> VariableTracker:
        if kwargs or len(args) != 1 or not args[0].is_python_constant():
            raise Unsupported("Attempted to call function marked as skipped", f"typing.{fn.__name__} of {args}")
        return ConstantVariable(fn(args[0].as_python_constant()))
    return handler


def _wraps(tx, args, kwargs) -> VariableTracker:
    """`functools.wraps(wrapped, ...)`: the partial of update_wrapper it returns, as it
    returns it (update_wrapper's stand-in is traced when the partial is called)."""
    from ..polyfills import stand_in_for
    from .user_functions import PartialVariable, UserFunctionVariable

    bound = inspect.signature(functools.wraps).bind(*args, **kwargs)
    bound.apply_defaults()
    keywords = {name: value if isinstance(value, VariableTracker) else ConstantVariable(value)
                for name, value in bound.arguments.items()}
    return PartialVariable(UserFunctionVariable(stand_in_for(functools.update_wrapper)), [], keywords)


def _modelled_functions() -> dict[int, tuple[Any, Callable]]:
    from . import copying  # it uses is_immutable_constant, defined here
    from .ctx_managers import filter_change

    table: dict[Callable, Callable] = {
        os.getenv: _getenv,
        torch._C._log_api_usage_once: _log_api_usage_once,
        copy.copy: copying.copy_copy,
        copy.deepcopy: copying.copy_deepcopy,
        inspect.signature: signatures.signature,
        typing.get_origin: _typing_query(typing.get_origin),
        typing.get_args: _typing_query(typing.get_args),
        functools.wraps: _wraps,
        **{fn: filter_change(fn) for fn in (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)},
        **{getattr(inspect, name): signatures.type_predicate(kind)
           for name, kind in signatures.TYPE_PREDICATES.items()},
    }
    return {id(fn): (fn, handler) for fn, handler in table.items()}


_MODELLED: dict[int, tuple[Any, Callable]] | None = None


def modelled_callable(value: Any, source: Source | None) -> VariableTracker | None:
    """The tracker of a library callable modelled here, or None."""
    global _MODELLED
    if _MODELLED is None:
        _MODELLED = _modelled_functions()
    entry = _MODELLED.get(id(value))
    if entry is not None and entry[0] is value:
        return LibraryFunctionVariable(value, entry[1], source)
    if type(value) is functools._lru_cache_wrapper:
        return LruCacheVariable(value, source)
    if _is_dynamo_is_compiling(value):
        return LibraryFunctionVariable(value, _compiling, source)
    if _is_strict_type_validator(value):
        return LibraryFunctionVariable(value, _type_validator, source)
    return None


# ---- huggingface_hub's strict dataclasses -------------------------------------------------------

def _is_strict_type_validator(value: Any) -> bool:
    module = sys.modules.get("huggingface_hub.dataclasses")
    return module is not None and value is getattr(module, "type_validator", None)


def _type_validator(tx, args, kwargs) -> VariableTracker:
    """`type_validator(name, value, expected_type)`, which the validators of transformers'
    configs call on every attribute store: for constant arguments only isinstance checks of
    the value against the annotation, so it is run now; its TypeError is the program's."""
    from .exceptions import raise_observed

    values = [*args, *kwargs.values()]
    if not all(v.is_python_constant() for v in values):
        raise Unsupported("Attempted to call function marked as skipped",
                          "huggingface_hub's type_validator of a value that is not a constant")
    try:
        sys.modules["huggingface_hub.dataclasses"].type_validator(
            *(a.as_python_constant() for a in args), **{k: v.as_python_constant() for k, v in kwargs.items()})
    except TypeError as error:
        raise_observed(TypeError, str(error))
    return ConstantVariable(None)


def known_object(value: Any, source: Source | None) -> tuple[VariableTracker, GuardKind] | None:
    """A tracker for a library object modelled here, with the kind of guard that pins what
    it folds (`wrap_known_object` adds it), or None."""
    kind = type(value)
    if kind is os._Environ:
        return EnvironVariable(value, source), GuardKind.ID_MATCH
    if isinstance(kind, enum.EnumMeta):
        if isinstance(value, enum.Enum):
            return enums.EnumMemberVariable(value, source), GuardKind.ID_MATCH
        return None
    if isinstance(value, enum.EnumMeta) and issubclass(value, enum.Enum):
        return enums.EnumClassVariable(value, source), GuardKind.ID_MATCH
    if kind in (torch.finfo, torch.iinfo):
        # Made anew by every call; what it holds is fixed by its dtype (guarded).
        return ConstantVariable(value, source), GuardKind.TYPE_MATCH
    if kind is types.CodeType:
        return ConstantVariable(value, source), GuardKind.ID_MATCH
    if is_pybind_enum_member(value):  # pinned by value: one member may come in several wrappers
        return ConstantVariable(value, source), GuardKind.EQUALS_MATCH
    if kind in (types.UnionType, types.GenericAlias) or (kind.__module__ == "typing" and kind not in _TYPE_PARAMETERS):
        # An annotation (`int | None`, `list[int]`, typing's forms): immutable, pinned by identity.
        return ConstantVariable(value, source), GuardKind.ID_MATCH
    return signatures.known_object(value, source)


# Type parameters: a generic function's scope makes new ones at every call (3.12+), so
# pinning one by identity would recompile each time.
_TYPE_PARAMETERS = (typing.TypeVar, typing.ParamSpec, typing.TypeVarTuple)


def wrap_known_object(tx, value: Any, source: Source) -> VariableTracker | None:
    found = known_object(value, source)
    if found is None:
        return None
    variable, guard = found
    guards, line = tx.output.guards, tx.output.user_line
    guards.add(guard, source, type(value) if guard is GuardKind.TYPE_MATCH else value, line)
    if type(value) in (torch.finfo, torch.iinfo):
        guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "dtype"), value.dtype, line)
    return variable
