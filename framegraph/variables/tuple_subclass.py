"""Objects of tuple subclasses written in Python (not namedtuples): `class Pair(tuple)`.

Such an object is a tuple with the class's methods and, without `__slots__`, an instance
`__dict__`; it is modelled as NamedTupleVariable is (items, a class, attributes). Only
classes that leave tuple's own behaviour alone qualify: none of the special methods the
model answers for the tuple (indexing, iteration, length, comparison, hashing, arithmetic,
attribute hooks) is redefined. `cls(...)` runs the class's Python `__new__` (whose
`super().__new__(cls, iterable)` is tuple's) or tuple's own, then a Python `__init__`, as
`type.__call__` does.
"""

from __future__ import annotations

import types

from ..exc import Unsupported
from .base import VariableTracker
from .containers import HEAPTYPE, redefined_tuple_behaviour


def plain_tuple_subclass(cls: type) -> bool:
    from .user_defined import ordinary_metaclass

    if not (isinstance(cls, type) and issubclass(cls, tuple) and cls is not tuple and cls.__flags__ & HEAPTYPE):
        return False
    if hasattr(cls, "_fields") or not ordinary_metaclass(cls):
        return False
    return not redefined_tuple_behaviour(cls)


def new_tuple(tx, cls_var: VariableTracker, args: list[VariableTracker]) -> VariableTracker:
    """`tuple.__new__(cls, iterable=())`."""
    from .containers import NamedTupleVariable
    from .exceptions import raise_observed

    cls = cls_var.as_python_constant()
    if len(args) > 1:
        raise_observed(TypeError, f"tuple expected at most 1 argument, got {len(args)}")
    if not plain_tuple_subclass(cls):
        raise Unsupported("Unsupported builtin call", f"tuple.__new__({cls.__qualname__})")
    items = tx.unpack_iterable(args[0]) if args else []
    return NamedTupleVariable(items, cls, class_source=cls_var.source)


def construct(tx, cls_var: VariableTracker, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker]) -> VariableTracker:
    from ..source import AttrSource
    from .containers import NamedTupleVariable
    from .user_objects import _lookup_class, _user_function

    cls = cls_var.as_python_constant()
    new, _ = _lookup_class(cls, "__new__")
    if isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        source = AttrSource(cls_var.source, "__new__") if cls_var.source is not None else None
        obj = _user_function(tx, new.__func__, source).call_function(tx, [cls_var, *args], kwargs)
        if not (isinstance(obj, NamedTupleVariable) and issubclass(obj.python_type(), cls)):
            return obj  # type.__call__ runs __init__ only on an instance of the class
    elif new is tuple.__new__:
        if kwargs:
            raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}() takes no keyword arguments")
        obj = new_tuple(tx, cls_var, args)
    else:
        raise Unsupported("Unsupported builtin call", f"creating a {cls.__qualname__}: its __new__ is {new!r}")
    init, _ = _lookup_class(cls, "__init__")
    if isinstance(init, types.FunctionType):
        source = AttrSource(cls_var.source, "__init__") if cls_var.source is not None else None
        result = _user_function(tx, init, source).call_function(tx, [obj, *args], kwargs)
        if not (result.is_python_constant() and result.as_python_constant() is None):
            raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}.__init__() returned a value")
    elif init is not object.__init__:
        raise Unsupported("Unsupported builtin call", f"creating a {cls.__qualname__}: its __init__ is {init!r}")
    return obj


class TupleNewVariable(VariableTracker):
    """`tuple.__new__` reached from a Python `__new__` (`super().__new__(cls, items)`)."""

    __slots__ = ()

    def python_type(self) -> type:
        return types.BuiltinFunctionType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if not args or kwargs or not args[0].is_python_constant():
            raise Unsupported("Unsupported builtin call", "tuple.__new__ without a class")
        return new_tuple(tx, args[0], list(args[1:]))

    def reconstruct(self, codegen) -> None:
        codegen.load_const(tuple.__new__)
