"""Attribute lookup on classes, and `super()`.

`Cls.name` for a user class reads the class's own attribute as a class lookup does: functions
stay plain, classmethods bind the class, staticmethods stay plain, and every other value is
read through the class (so it is guarded). A name the class lacks is looked up on its
metaclass, which binds the class: a method of the metaclass, a property of it, then its
`__getattr__`. `super(cls, obj)` looks up after `cls` in the MRO of obj's class (or of obj,
in a classmethod or `__new__`).
"""

from __future__ import annotations

import collections
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
        from .containers import NamedTupleVariable, TupleSlotMethodVariable

        if isinstance(self.obj, NamedTupleVariable) and getattr(attr, "__objclass__", None) is tuple \
                and name != "__new__":
            return TupleSlotMethodVariable(self.obj, name)
        if name == "__new__" and attr is tuple.__new__:
            from .tuple_subclass import TupleNewVariable

            return TupleNewVariable()
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
    meta_attr, meta_owner = _lookup_class(type(cls), name)
    if isinstance(meta_attr, property) or (attr is _MISSING and meta_attr is not _MISSING):
        return _metaclass_attribute(tx, cls_var, name, meta_attr, meta_owner, source)
    if attr is _MISSING:
        getattr_hook, _ = _lookup_class(type(cls), "__getattr__")
        if isinstance(getattr_hook, types.FunctionType):
            hook = _user_function(tx, getattr_hook, _meta_source(cls_var, "__getattr__"))
            return hook.call_function(tx, [cls_var, ConstantVariable(name)], {})
        if source is None:
            raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.{name} of a class without a source")
        from ..guards import GuardKind
        from .exceptions import raise_observed

        tx.output.guards.add(GuardKind.HASATTR, cls_var.source, (name, False), tx.output.user_line, key=name)
        raise_observed(AttributeError, f"type object {cls.__name__!r} has no attribute {name!r}")
    if name == "__new__" and getattr(attr, "__self__", None) in (object, dict, list):
        from .user_defined import NewFunctionVariable

        return NewFunctionVariable(attr.__self__)  # `Cls.__new__(Cls)`: the builtin one
    if name == "__new__" and attr is tuple.__new__:
        from .tuple_subclass import TupleNewVariable

        return TupleNewVariable()
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return _user_function(tx, attr.__func__, source)
    if isinstance(attr, classmethod) and getattr(attr.__func__, "__code__", None) is _NAMEDTUPLE_MAKE:
        return NamedTupleMakeVariable(cls_var)
    if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
        func_source = AttrSource(source, "__func__") if source is not None else None
        return UserMethodVariable(_user_function(tx, attr.__func__, func_source), cls_var)
    if isinstance(attr, types.FunctionType):
        return _user_function(tx, attr, source)
    if source is None:
        raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.{name} of a class without a source")
    return wrap(tx, getattr(cls, name), source)


# Every namedtuple's `_make` is a new function of the factory's one code object.
_NAMEDTUPLE_MAKE = collections.namedtuple("_", ())._make.__func__.__code__


class NamedTupleMakeVariable(VariableTracker):
    """`Cls._make(iterable)` of a namedtuple class: `tuple.__new__(Cls, iterable)` with its
    length checked; neither `__new__` nor `__init__` of the class runs."""

    __slots__ = ("cls_var",)

    def __init__(self, cls_var: VariableTracker) -> None:
        super().__init__()
        self.cls_var = cls_var

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from .containers import NamedTupleVariable
        from .exceptions import raise_observed

        if len(args) != 1 or kwargs:
            raise Unsupported("Unsupported builtin call", "namedtuple._make with other arguments than an iterable")
        cls = self.cls_var.as_python_constant()
        items = tx.unpack_iterable(args[0])
        if len(items) != len(cls._fields):
            raise_observed(TypeError, f"Expected {len(cls._fields)} arguments, got {len(items)}")
        return NamedTupleVariable(items, cls, class_source=self.cls_var.source)

    def reconstruct(self, codegen) -> None:
        codegen.reconstruct(self.cls_var)
        codegen.load_attr("_make")


def _meta_source(cls_var: VariableTracker, name: str) -> Source | None:
    return AttrSource(TypeSource(cls_var.source), name) if cls_var.source is not None else None


def _metaclass_attribute(tx, cls_var: VariableTracker, name: str, attr, owner: type,
                         source: Source | None) -> VariableTracker:
    """`Cls.name` found on the metaclass: its methods and properties bind the class; the
    type's own data (`__mro__`, `__name__`, `__bases__`...) is read through the class."""
    from .builder import wrap

    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(_user_function(tx, attr, _meta_source(cls_var, name)), cls_var)
    if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
        meta_var = ConstantVariable(type(cls_var.as_python_constant()), TypeSource(cls_var.source)
                                    if cls_var.source is not None else None)
        return UserMethodVariable(_user_function(tx, attr.__func__, None), meta_var)
    if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
        getter_source = AttrSource(_meta_source(cls_var, name), "fget") if cls_var.source is not None else None
        return _user_function(tx, attr.fget, getter_source).call_function(tx, [cls_var], {})
    if owner is type and type(attr) in (types.GetSetDescriptorType, types.MemberDescriptorType) and source is not None \
            and name not in ("__dict__", "__annotations__"):
        return wrap(tx, getattr(cls_var.as_python_constant(), name), source)
    if owner is type and name == "__subclasses__" and cls_var.source is not None:
        return SubclassesVariable(cls_var)
    if owner is type and name in _CLASS_FACTS:
        return ConstantVariable(getattr(cls_var.as_python_constant(), name))  # of a class the trace holds fixed
    raise Unsupported("Unsupported attribute access",
                      f"{cls_var.as_python_constant().__qualname__}.{name} ({type(attr).__qualname__} of its metaclass)")


# What a class is called and derives from: read from a class known while tracing (type(x)).
_CLASS_FACTS = frozenset({"__name__", "__qualname__", "__module__", "__mro__", "__bases__", "__base__"})


class SubclassesVariable(VariableTracker):
    """`Cls.__subclasses__` of a class with a source: calling it reads the list the class has
    now, guarded item by item (a class defined later changes the answer, and recompiles)."""

    __slots__ = ("cls_var",)

    def __init__(self, cls_var: VariableTracker) -> None:
        super().__init__()
        self.cls_var = cls_var

    def python_type(self) -> type:
        return types.BuiltinMethodType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        from ..guards import GuardKind
        from ..source import MethodCallSource
        from .builder import wrap
        from .containers import ListVariable

        if args or kwargs:
            raise Unsupported("Unsupported builtin call", "__subclasses__ with arguments")
        subclasses = self.cls_var.as_python_constant().__subclasses__()
        source = MethodCallSource(self.cls_var.source, "__subclasses__")
        tx.output.guards.add(GuardKind.LENGTH, source, (list, len(subclasses)), tx.output.user_line)
        # A new list each call, as eagerly (not the caller's object: no tracker is kept for it).
        return ListVariable([wrap(tx, cls, ItemSource(source, i)) for i, cls in enumerate(subclasses)])

    def reconstruct(self, codegen) -> None:
        codegen.reconstruct(self.cls_var)
        codegen.load_attr("__subclasses__")
