"""Exceptions raised and caught inside the traced code.

An exception made while tracing is its class, its arguments and the links CPython keeps
between exceptions: `__cause__` (`raise ... from`), `__context__` (what was being handled
when it was raised) and `__suppress_context__`. Tracebacks are not modelled: reading one is
a graph break; a handler may only clear it (`with_traceback(None)`, what contextlib does).
"""

from __future__ import annotations

from typing import Any

from ..exc import ObservedException, Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable
from .containers import TupleVariable

_NONE = ConstantVariable(None)


class ExceptionVariable(VariableTracker):
    """An exception instance made while tracing."""

    __slots__ = ("cls", "args", "cause", "context", "suppress_context", "traceback_cleared")

    def __init__(self, cls: type, args: list[VariableTracker]) -> None:
        super().__init__()
        self.cls = cls
        self.args = args
        self.cause: VariableTracker | None = None
        self.context: VariableTracker | None = None
        self.suppress_context = False
        self.traceback_cleared = False

    def python_type(self) -> type:
        return self.cls

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "__cause__":
            return self.cause or _NONE
        if name == "__context__":
            return self.context or _NONE
        if name == "__suppress_context__":
            return ConstantVariable(self.suppress_context)
        if name == "value" and issubclass(self.cls, StopIteration):
            return self.args[0] if self.args else _NONE
        if name == "__traceback__" and self.traceback_cleared:
            return _NONE
        if name in ("with_traceback", "__str__", "__repr__"):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"{self.cls.__qualname__}.{name}")

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if name == "__cause__":
            self.cause, self.suppress_context = _exception_or_none(value, name), True
        elif name == "__context__":
            self.context = _exception_or_none(value, name)
        elif name == "__suppress_context__" and value.is_python_constant():
            self.suppress_context = bool(value.as_python_constant())
        elif name == "__traceback__" and _is_none(value):
            self.traceback_cleared = True
        else:
            raise Unsupported("Unsupported mutation", f"assignment to {self.cls.__qualname__}.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "with_traceback" and len(args) == 1 and not kwargs and _is_none(args[0]):
            self.traceback_cleared = True
            return self
        if name in ("__str__", "__repr__") and not args and not kwargs:
            return ConstantVariable(self.text(name))
        raise Unsupported("Unsupported method call", f"{self.cls.__qualname__}.{name}")

    def text(self, kind: str = "__str__") -> str:
        """str() or repr() of the exception, when it is BaseException's of constant args."""
        owner = next(klass for klass in self.cls.__mro__ if kind in klass.__dict__)
        if owner.__module__ != "builtins" or not all(a.is_python_constant() for a in self.args):
            raise Unsupported("Unsupported builtin call", f"{kind[2:-2]}() of {self.cls.__qualname__}")
        return getattr(self.cls(*[a.as_python_constant() for a in self.args]), kind)()

    def children(self) -> list[VariableTracker]:
        return [*self.args, *(v for v in (self.cause, self.context) if v is not None)]

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(rebuild_exception)
        codegen.load_const(self.cls)
        for arg in self.args:
            codegen.reconstruct(arg)
        codegen.build(tuple, len(self.args))
        for link in (self.cause, self.context):
            codegen.reconstruct(link or _NONE)
        codegen.load_const(self.suppress_context)
        codegen.call(5)

    def __repr__(self) -> str:
        return f"ExceptionVariable({self.cls.__qualname__})"


def rebuild_exception(cls: type, args: tuple, cause: Any, context: Any, suppress_context: bool) -> BaseException:
    """An exception the trace made, made again after the graph with its links."""
    exception = cls(*args)
    exception.__cause__, exception.__context__ = cause, context
    exception.__suppress_context__ = suppress_context
    return exception


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _exception_or_none(value: VariableTracker, name: str) -> VariableTracker | None:
    if _is_none(value):
        return None
    if isinstance(value, ExceptionVariable):
        return value
    raise Unsupported("Unsupported mutation", f"{name} set to {value}")


def set_context(exception: VariableTracker, handling: list[VariableTracker]) -> None:
    """What raising `exception` while `handling[-1]` is being handled records: that one as
    its `__context__`, unless it would make a cycle (CPython cuts the chain there instead)."""
    if not handling or not isinstance(exception, ExceptionVariable):
        return
    current = handling[-1]
    if current is exception or not isinstance(current, ExceptionVariable):
        return
    link = current
    while isinstance(link, ExceptionVariable):
        if link.context is exception:
            link.context = None
            break
        link = link.context
    exception.context = current


def raise_observed(cls: type, *args) -> None:
    """Raises `cls(*args)` (constant arguments) in the traced program, as a builtin or a
    method of a builtin type raises it eagerly: the program's handlers can catch it, and one
    that escapes the compiled frame is re-raised by the eager run of the instruction."""
    raise ObservedException(ExceptionVariable(cls, [ConstantVariable(arg) for arg in args]))


# Exceptions a builtin computation on constants may raise, that the trace raises in its place
# (their arguments say all there is to them).
_REPLAYED_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError)


def observed_from(error: Exception) -> ObservedException | None:
    """The program's exception for an error that computing on constants raised at trace time,
    or None when it is not one the trace can stand in for."""
    from .constant import is_constant_type

    if type(error).__module__ != "builtins" or not isinstance(error, _REPLAYED_ERRORS) \
            or isinstance(error, UnicodeError) or not all(is_constant_type(arg) for arg in error.args):
        return None
    return ObservedException(ExceptionVariable(type(error), [ConstantVariable(arg) for arg in error.args]))


def generator_error(exception: VariableTracker) -> VariableTracker:
    """What leaves a generator body that raised `exception`: a StopIteration becomes
    RuntimeError (PEP 479), caused by it."""
    if isinstance(exception, ExceptionVariable) and issubclass(exception.cls, StopIteration):
        error = ExceptionVariable(RuntimeError, [ConstantVariable("generator raised StopIteration")])
        error.cause = error.context = exception
        error.suppress_context = True
        return error
    return exception


def generator_exit(raised: ObservedException) -> ObservedException:
    """What leaves a generator body that raised: see generator_error (its links are set)."""
    return ObservedException(generator_error(raised.exception), reraised=True)


def make_exception(cls: type, args: list[VariableTracker], kwargs: dict) -> ExceptionVariable:
    # Exceptions whose __init__ is BaseException's only store their arguments: that is all a
    # handler can observe. A custom __init__ could do anything.
    if kwargs or not (_builtin_slot(cls, "__init__") and _builtin_slot(cls, "__new__")):
        raise Unsupported("Unsupported exception handling",
                          f"creating {cls.__qualname__}, whose constructor is customised")
    return ExceptionVariable(cls, list(args))


def _builtin_slot(cls: type, name: str) -> bool:
    """Whether `cls` gets `name` from a builtin exception class rather than Python code."""
    owner = next(klass for klass in cls.__mro__ if name in klass.__dict__)
    return owner.__module__ == "builtins"


def as_cause(value: VariableTracker) -> VariableTracker:
    """What `raise ... from value` links: None, an instance, or a class called with no arguments."""
    return value if _is_none(value) else as_exception(value)


def as_exception(value: VariableTracker) -> ExceptionVariable:
    """What `raise value` raises: an instance, or a class called with no arguments."""
    if isinstance(value, ExceptionVariable):
        return value
    if value.is_python_constant():
        cls = value.as_python_constant()
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return make_exception(cls, [], {})
    raise Unsupported("Unsupported exception handling", f"raise of {value}")
