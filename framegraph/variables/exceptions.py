"""Exceptions raised and caught inside the traced code."""

from __future__ import annotations

from ..exc import ObservedException, Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import TupleVariable


class ExceptionVariable(VariableTracker):
    """An exception instance made while tracing: its class and its arguments."""

    __slots__ = ("cls", "args", "cause")

    def __init__(self, cls: type, args: list[VariableTracker]) -> None:
        super().__init__()
        self.cls = cls
        self.args = args
        self.cause: VariableTracker | None = None

    def python_type(self) -> type:
        return self.cls

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "__cause__":
            return self.cause or ConstantVariable(None)
        raise Unsupported("Unsupported attribute access", f"{self.cls.__qualname__}.{name}")

    def children(self) -> list[VariableTracker]:
        return list(self.args)

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(self.cls)
        for arg in self.args:
            codegen.reconstruct(arg)
        codegen.call(len(self.args))

    def __repr__(self) -> str:
        return f"ExceptionVariable({self.cls.__qualname__})"


def raise_observed(cls: type, *args) -> None:
    """Raises `cls(*args)` (constant arguments) in the traced program, as a builtin or a
    method of a builtin type raises it eagerly: the program's handlers can catch it, and one
    that escapes the compiled frame is re-raised by the eager run of the instruction."""
    raise ObservedException(ExceptionVariable(cls, [ConstantVariable(arg) for arg in args]))


def generator_error(exception: VariableTracker) -> VariableTracker:
    """What leaves a generator body that raised `exception`: a StopIteration becomes
    RuntimeError (PEP 479), caused by it."""
    if isinstance(exception, ExceptionVariable) and issubclass(exception.cls, StopIteration):
        error = ExceptionVariable(RuntimeError, [ConstantVariable("generator raised StopIteration")])
        error.cause = exception
        return error
    return exception


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


def as_exception(value: VariableTracker) -> ExceptionVariable:
    """What `raise value` raises: an instance, or a class called with no arguments."""
    if isinstance(value, ExceptionVariable):
        return value
    if value.is_python_constant():
        cls = value.as_python_constant()
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return make_exception(cls, [], {})
    raise Unsupported("Unsupported exception handling", f"raise of {value}")
