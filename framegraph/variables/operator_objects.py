"""`operator.itemgetter`, `attrgetter` and `methodcaller`: the callables sort keys and
`Counter.most_common` are made of.

Each holds constants (the items, the dotted attribute names, the method name and its
constant arguments) and calls as CPython's C code does: one item gives `obj[item]`, several
give a tuple; `attrgetter("a.b")` reads `obj.a.b`; `methodcaller(name, *args)` calls
`obj.name(*args)`. One made while tracing is rebuilt from its constants; one the caller
passed is guarded by what `__reduce__` says it holds.
"""

from __future__ import annotations

import operator
from typing import Any

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .exceptions import raise_observed

KINDS = (operator.itemgetter, operator.attrgetter, operator.methodcaller)


class OperatorObjectVariable(VariableTracker):
    """One of KINDS with its constant arguments (`kwargs` only for methodcaller)."""

    __slots__ = ("kind", "args", "kwargs")

    def __init__(self, kind: type, args: tuple, kwargs: dict[str, Any], source=None) -> None:
        super().__init__(source)
        self.kind, self.args, self.kwargs = kind, args, kwargs

    def python_type(self) -> type:
        return self.kind

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .builtins import BuiltinVariable
        from .containers import TupleVariable

        if len(args) != 1 or kwargs:
            raise_observed(TypeError, f"{self.kind.__name__} expected 1 argument, got {len(args)}")
        (obj,) = args
        if self.kind is operator.methodcaller:
            method = BuiltinVariable(getattr).call_function(tx, [obj, ConstantVariable(self.args[0])], {})
            return method.call_function(tx, [ConstantVariable(a) for a in self.args[1:]],
                                        {k: ConstantVariable(v) for k, v in self.kwargs.items()})
        results = [self._one(tx, obj, part) for part in self.args]
        return results[0] if len(results) == 1 else TupleVariable(results)

    def _one(self, tx, obj: VariableTracker, part: Any) -> VariableTracker:
        from ..symbolic_convert.handlers.ops import subscript
        from .builtins import BuiltinVariable

        if self.kind is operator.itemgetter:
            return subscript(tx, obj, ConstantVariable(part))
        for name in part.split("."):
            obj = BuiltinVariable(getattr).call_function(tx, [obj, ConstantVariable(name)], {})
        return obj

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(_make_real)
        codegen.load_const(self.kind)
        codegen.load_const(self.args)
        codegen.load_const(tuple(self.kwargs.items()))
        codegen.call(3)

    def __repr__(self) -> str:
        return f"OperatorObjectVariable({self.kind.__name__}{self.args})"


def _make_real(kind: type, args: tuple, keywords: tuple) -> Any:
    """Called by generated code: the object, made again from its constants."""
    return kind(*args, **dict(keywords))


def make(tx, kind: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`kind(*args, **kwargs)`, checked as the constructor checks its arguments."""
    if not all(a.is_python_constant() for a in (*args, *kwargs.values())):
        raise Unsupported("Unsupported builtin call", f"operator.{kind.__name__} of values that are not constants")
    values = tuple(a.as_python_constant() for a in args)
    keywords = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:
        kind(*values, **keywords)  # C code: its own argument checks, nothing else
    except TypeError as error:
        raise_observed(TypeError, str(error))
    return OperatorObjectVariable(kind, values, keywords)


def wrap_operator_object(tx, value: Any, source) -> VariableTracker | None:
    """An itemgetter (attrgetter, methodcaller) the frame received, when what it holds is
    constants: pinned by its `__reduce__()`."""
    from ..guards import GuardKind
    from ..source import MethodCallSource
    from .constant import is_constant_type

    kind = type(value)
    if kind not in KINDS:
        return None
    reduced = value.__reduce__()
    if kind is operator.methodcaller:
        # (partial(methodcaller, name, **kwargs), args) with keywords, else (methodcaller, (name, *args))
        if reduced[0] is not operator.methodcaller:
            return None
    if not all(is_constant_type(part) for part in reduced[1]):
        return None
    tx.output.guards.add(GuardKind.TYPE_MATCH, source, kind, tx.output.user_line)
    tx.output.guards.add(GuardKind.EQUALS_MATCH, MethodCallSource(source, "__reduce__"), reduced, tx.output.user_line)
    return OperatorObjectVariable(kind, tuple(reduced[1]), {}, source)
