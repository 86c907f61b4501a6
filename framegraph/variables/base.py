"""The abstract-value protocol every VariableTracker implements.

A VariableTracker (VT) stands for one Python value while a frame is being translated. The
protocol is small and closed:

    python_type()                  the type the real value would have
    as_python_constant()           the value itself, when it is known at trace time
    var_getattr(tx, name)          `value.name`
    call_function(tx, args, kw)    `value(*args, **kw)`
    call_method(tx, name, args, kw)`value.name(*args, **kw)`, without building the bound method
    reconstruct(codegen)           bytecode that rebuilds the value after the graph has run

Anything a VT cannot model raises `Unsupported` with a reason from `exc.CATALOG`. `source`
says where the real value lives (None for values made during tracing); guards and
reconstruction use it.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from ..bytecode import create_instruction
from ..exc import Unsupported
from ..source import Source

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..symbolic_convert.translator import InstructionTranslator


def is_method_of(kind: type, name: str) -> bool:
    """Whether `kind.name` is a method (a class, such as `__class__`, is callable too)."""
    attr = getattr(kind, name, None)
    return callable(attr) and not isinstance(attr, type)


class VariableTracker:
    __slots__ = ("source",)

    def __init__(self, source: Source | None = None) -> None:
        self.source = source

    def python_type(self) -> type:
        raise Unsupported("Unsupported attribute access", f"the type of {self}")

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self) -> Any:
        raise Unsupported("Unsupported builtin call", f"{self} is not a constant known at trace time")

    def var_getattr(self, tx: InstructionTranslator, name: str) -> VariableTracker:
        """What every object answers the same way: its `__class__`, and the AttributeError of
        an object without `__dict__` or attribute hooks for a name its type lacks."""
        kind = self.python_type()
        if name == "__class__":
            from .constant import ConstantVariable

            return ConstantVariable(kind)
        if not kind.__dictoffset__ and not hasattr(kind, name) and not hasattr(kind, "__getattr__") \
                and not isinstance(kind.__getattribute__, types.FunctionType):
            # no instance __dict__, no hook: only the type could have answered
            from .exceptions import raise_observed

            raise_observed(AttributeError, f"{kind.__name__!r} object has no attribute {name!r}")
        raise Unsupported("Unsupported attribute access", f"{self}.{name}")

    def call_function(self, tx: InstructionTranslator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise Unsupported("Attempted to call function marked as skipped", f"calling {self}")

    def call_method(self, tx: InstructionTranslator, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def store_attr(self, tx: InstructionTranslator, name: str, value: VariableTracker) -> None:
        raise Unsupported("Unsupported mutation", f"assignment to {self}.{name}")

    def next_item(self, tx: InstructionTranslator) -> VariableTracker | None:
        """FOR_ITER's step: the next item, or None when exhausted. An iterator framegraph
        cannot step (one handed to a resume function) breaks there."""
        raise Unsupported("Unsupported builtin call", f"iteration over {self}")

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.source is None:
            raise Unsupported("Unsupported attribute access",
                              f"{self} was made while tracing and cannot be rebuilt after the graph")
        self.source.reconstruct(codegen)

    def children(self) -> list[VariableTracker]:
        """The trackers this one is built from, for finding the tensors a result holds."""
        return []

    def bool_value(self, tx: InstructionTranslator) -> bool:
        """The truth value for a branch; data-dependent values raise."""
        if self.is_python_constant():
            return bool(self.as_python_constant())
        kind = self.python_type()
        if not hasattr(kind, "__bool__") and not hasattr(kind, "__len__"):
            return True  # an object's truth, unless its type says otherwise
        return bool(self.as_python_constant())

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ValueVariable(VariableTracker):
    """A tracker that holds the real Python object it stands for (a function, a module)."""

    __slots__ = ("value",)

    def __init__(self, value: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)


class KnownValueVariable(ValueVariable):
    """An object fixed for the program (a constant, a builtin, a torch function): it folds."""

    __slots__ = ()

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def reconstruct(self, codegen: PyCodegen) -> None:
        # Fixed for the program: the object itself, as a constant of the generated code.
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            codegen.load_const(self.value)


class MethodVariable(VariableTracker):
    """`obj.name` for a method, before it is called: the call goes to `obj.call_method`."""

    __slots__ = ("obj", "name")

    def __init__(self, obj: VariableTracker, name: str) -> None:
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx: InstructionTranslator, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.obj)
        codegen.load_attr(self.name)

    def __repr__(self) -> str:
        return f"MethodVariable({self.obj!r}.{self.name})"


class NullVariable(VariableTracker):
    """The NULL that call sequences push beside a callable; never a user-visible value."""

    __slots__ = ()

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.push_null()

    def __repr__(self) -> str:
        return "NULL"


NULL = NullVariable()


class UnboundVariable(NullVariable):
    """What LOAD_FAST_AND_CLEAR saves when the local it clears was never bound: a NULL on
    the real stack, so a graph break hands it on as one (ResumeSpec.stack_nulls)."""

    __slots__ = ()

    def reconstruct(self, codegen: PyCodegen) -> None:
        # A NULL the code may store back into a local (the verifier accepts a NULL there only
        # from LOAD_FAST_AND_CLEAR): made as the comprehension made it, from a local never bound.
        codegen.append(create_instruction("LOAD_FAST_AND_CLEAR", argval=NEVER_BOUND))

    def __repr__(self) -> str:
        return "UNBOUND"


# A local of generated code that is never assigned: clearing it pushes a NULL.
NEVER_BOUND = "___unbound"


UNBOUND = UnboundVariable()


class _Deleted(VariableTracker):
    """What the side-effect ledger holds for an attribute the trace deleted: reads find it
    missing, replay deletes it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DELETED"


DELETED = _Deleted()
