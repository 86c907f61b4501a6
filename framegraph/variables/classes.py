"""Attribute lookup on classes, and `super()`.

`Cls.name` for a user class reads the class's own attribute as a class lookup does: functions
stay plain, classmethods bind the class, staticmethods stay plain, and every other value is
read through the class (so it is guarded). A name the class lacks is looked up on its
metaclass, which binds the class: a method of the metaclass, a property of it, then its
`__getattr__`. `super(cls, obj)` looks up after `cls` in the MRO of obj's class (or of obj,
in a classmethod or `__new__`).
"""

from __future__ import annotations

import types

from ..exc import Unsupported
from ..source import AttrSource, ItemSource, Source, TypeSource
from .base import VariableTracker
from .constant import ConstantVariable
from .user_functions import UserMethodVariable
from .user_objects import _MISSING, UserDefinedObjectVariable, _lookup_class, _user_function


class SuperVariable(VariableTracker):
    """`super(cls, obj)`: attribute lookup starting after `cls` in type(obj)'s MRO."""

    __slots__ = ("cls", "obj")

    def __init__(self, cls: type, obj: VariableTracker) -> None:
        super().__init__()
        self.cls, self.obj = cls, obj

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .user_defined import NewFunctionVariable, SlotMethodVariable, slot_owner

        # super(C, cls) in a classmethod or __new__ searches the class's own MRO.
        of_class = self.obj.is_python_constant() and isinstance(self.obj.as_python_constant(), type)
        mro = (self.obj.as_python_constant() if of_class else self.obj.python_type()).__mro__
        if self.cls not in mro:
            raise Unsupported("Unsupported exception handling", "super(type, obj): obj is not an instance of type")
        for index in range(mro.index(self.cls) + 1, len(mro)):
            if name in mro[index].__dict__:
                attr = mro[index].__dict__[name]
                break
        else:
            raise Unsupported("Unsupported exception handling", f"'super' object has no attribute {name!r}")
        # Where the function can be reloaded: type(obj).__mro__[index].name (cls.__mro__... for a class)
        if of_class:
            owner_source = self.obj.source
        elif isinstance(self.obj, UserDefinedObjectVariable):
            owner_source = self.obj._type_source()  # an object made while tracing knows its class's
        else:
            owner_source = TypeSource(self.obj.source) if self.obj.source is not None else None
        source = AttrSource(ItemSource(AttrSource(owner_source, "__mro__"), index), name) if owner_source else None
        if isinstance(attr, types.FunctionType):
            # In a classmethod, what a class attribute lookup gives: the plain function.
            function = _user_function(tx, attr, source)
            return function if of_class else UserMethodVariable(function, self.obj)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            cls_var = self.obj if of_class else ConstantVariable(self.obj.python_type(), owner_source)
            func_source = AttrSource(source, "__func__") if source is not None else None
            return UserMethodVariable(_user_function(tx, attr.__func__, func_source), cls_var)
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return _user_function(tx, attr.__func__, None)
        if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
            return _user_function(tx, attr.fget, None).call_function(tx, [self.obj], {})
        owner = slot_owner(attr)
        if owner is not None and isinstance(self.obj, UserDefinedObjectVariable):
            return SlotMethodVariable(self.obj, owner, name)
        if name == "__new__" and owner is None and getattr(attr, "__self__", None) in (object, dict, list):
            return NewFunctionVariable(attr.__self__)
        raise Unsupported("Unsupported attribute access", f"super().{name} ({type(attr).__qualname__})")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(super)
        codegen.load_const(self.cls)
        codegen.reconstruct(self.obj)
        codegen.call(2)


def make_super(tx, args: list[VariableTracker]) -> SuperVariable:
    """`super()` (the class from the `__class__` cell, the object from the first argument)
    or `super(cls, obj)`."""
    if len(args) == 2:
        return SuperVariable(args[0].as_python_constant(), args[1])
    if args:
        raise Unsupported("Unsupported builtin call", "super() with one argument")
    if "__class__" not in tx.cell_names or not tx.code.co_argcount:
        raise Unsupported("Unsupported exception handling", "super(): no arguments")
    first = tx.code.co_varnames[0]
    obj = tx.cell(first).get(tx) if first in tx.cell_names else tx.load_local(first)
    return SuperVariable(tx.cell("__class__").get(tx).as_python_constant(), obj)


def class_attribute_of(tx, obj: VariableTracker, cls: type, class_source: Source | None,
                       name: str) -> VariableTracker:
    """`obj.name` found on `cls` (for objects that are not UserDefinedObjectVariables, such
    as namedtuple instances): a property runs its getter, a function binds `obj`."""
    from .builder import wrap

    attr, _ = _lookup_class(cls, name)
    source = AttrSource(class_source, name) if class_source is not None else None
    if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
        getter_source = AttrSource(source, "fget") if source is not None else None
        return _user_function(tx, attr.fget, getter_source).call_function(tx, [obj], {})
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(_user_function(tx, attr, source), obj)
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return _user_function(tx, attr.__func__, source)
    if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
        func_source = AttrSource(source, "__func__") if source is not None else None
        return UserMethodVariable(_user_function(tx, attr.__func__, func_source), ConstantVariable(cls, class_source))
    if source is None:
        raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.{name} of a class without a source")
    return wrap(tx, getattr(cls, name), source)


def class_getattr(tx, cls_var: VariableTracker, name: str) -> VariableTracker:
    """`Cls.name` for a user class: functions stay plain, classmethods bind the class, and
    every other value is read through the class (so it is guarded)."""
    from .builder import wrap

    cls = cls_var.as_python_constant()
    attr, _ = _lookup_class(cls, name)
    source = AttrSource(cls_var.source, name) if cls_var.source is not None else None
    if attr is _MISSING and name in ("__name__", "__qualname__") and source is not None:
        return wrap(tx, getattr(cls, name), source)  # held by the type object, not a class __dict__
    if attr is _MISSING:
        raise Unsupported("Unsupported exception handling", f"type object {cls.__qualname__!r} has no attribute {name!r}")
    if name == "__new__" and getattr(attr, "__self__", None) in (object, dict, list):
        from .user_defined import NewFunctionVariable

        return NewFunctionVariable(attr.__self__)  # `Cls.__new__(Cls)`: the builtin one
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return _user_function(tx, attr.__func__, source)
    if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
        func_source = AttrSource(source, "__func__") if source is not None else None
        return UserMethodVariable(_user_function(tx, attr.__func__, func_source), cls_var)
    if isinstance(attr, types.FunctionType):
        return _user_function(tx, attr, source)
    if source is None:
        raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.{name} of a class without a source")
    return wrap(tx, getattr(cls, name), source)
