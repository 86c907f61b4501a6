"""Objects of user classes and nn.Modules: attribute reads the way Python resolves them.

An attribute read follows CPython's order: a data descriptor on the class (a property is
inlined), then the instance `__dict__`, then the class attribute (functions become bound
methods, classmethods bind the class, staticmethods stay plain). Each value read is wrapped
with its source, so it is guarded exactly when it is used. Classes that customise attribute
access (`__getattribute__`, or `__getattr__` for a missing name) are not modelled.

nn.Modules (`NNModuleVariable`, in nn_module.py) build on this with what `Module.__getattr__`
and `Module.__call__` add.
"""

from __future__ import annotations

import abc
import types
from typing import Any

import torch

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, ItemSource, Source, TypeSource
from .base import VariableTracker
from .constant import ConstantVariable
from .user_functions import UserFunctionVariable, UserMethodVariable

_MISSING = object()
# Metaclasses whose classes make, read and write instances as `type` does (ABCMeta adds only
# isinstance/issubclass hooks and abstract-method checks).
PLAIN_METACLASSES = (type, abc.ABCMeta)
# How a `__get__` written in C shows on its type: then calling it runs no Python.
_C_SLOT_TYPES = (types.WrapperDescriptorType, types.MethodWrapperType, types.BuiltinFunctionType)


class UserDefinedObjectVariable(VariableTracker):
    __slots__ = ("value", "assigned_class")

    def __init__(self, value: Any, source: Source | None) -> None:
        super().__init__(source)
        self.value = value
        # (class, its source) once the trace runs `obj.__class__ = cls` on the caller's object
        self.assigned_class: tuple[type, Source | None] | None = None

    def python_type(self) -> type:
        return self.assigned_class[0] if self.assigned_class is not None else type(self.value)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import wrap

        cls = self.python_type()
        if cls.__getattribute__ is not object.__getattribute__ and not issubclass(cls, torch.nn.Module):
            raise Unsupported("Unsupported attribute access", f"{cls.__qualname__} defines __getattribute__")
        written = tx.output.side_effects.load_attr(self, name)
        if written is not None:
            return written
        if name == "__class__":
            return ConstantVariable(cls, self._type_source())
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            return self._descriptor(tx, name, class_attr)
        found = self._instance_attribute(tx, name)
        if found is not None:
            return found
        if class_attr is not _MISSING:
            if self.source is not None and hasattr(self.value, "__dict__"):
                # Found on the class: an instance attribute of that name would hide it later.
                tx.output.class_reads.setdefault(self.source, set()).add(name)
            return self._class_attribute(tx, name, class_attr)
        if hasattr(cls, "__getattr__") and not issubclass(cls, torch.nn.Module):
            raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.__getattr__ for {name!r}")
        raise Unsupported("Unsupported exception handling",
                          f"{cls.__qualname__!r} object has no attribute {name!r}")

    def has_attribute(self, tx, name: str) -> bool:
        """`hasattr(obj, name)` as the program would see it, guarded."""
        if tx.output.side_effects.load_attr(self, name) is not None:
            return True
        if self.source is None or self.assigned_class is not None:
            raise Unsupported("Unsupported builtin call", "hasattr on an object made while tracing or given a new class")
        present = hasattr(self.value, name)
        tx.output.guards.add(GuardKind.HASATTR, self.source, (name, present), tx.output.user_line, key=name)
        return present

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        from .builder import wrap

        instance_dict = getattr(self.value, "__dict__", None)
        if instance_dict is None or name not in instance_dict:
            return None
        return wrap(tx, instance_dict[name], self._attr_source(name))

    def _attr_source(self, name: str) -> Source:
        if self.source is None:
            raise Unsupported("Unsupported attribute access",
                              f"{type(self.value).__qualname__}.{name} of an object made while tracing")
        return AttrSource(self.source, name)

    def _type_source(self) -> Source | None:
        """Where the object's class can be loaded from."""
        if self.assigned_class is not None:
            return self.assigned_class[1]
        return TypeSource(self.source) if self.source is not None else None

    def _class_source(self, name: str) -> Source:
        type_source = self._type_source()
        if type_source is None:
            raise Unsupported("Unsupported attribute access", f"class attribute {name!r} without a source")
        return AttrSource(type_source, name)

    def _descriptor(self, tx, name: str, attr: Any) -> VariableTracker:
        if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
            getter = _user_function(tx, attr.fget, AttrSource(self._class_source(name), "fget"))
            return getter.call_function(tx, [self], {})
        raise Unsupported("Unsupported attribute access",
                          f"descriptor {type(attr).__qualname__} for {type(self.value).__qualname__}.{name}")

    def _class_attribute(self, tx, name: str, attr: Any) -> VariableTracker:
        from .builder import wrap

        cls = self.python_type()
        if isinstance(attr, types.FunctionType):
            # One guard per class: every instance's type is pinned by its TYPE_MATCH guard.
            fn = _user_function(tx, attr, self._class_source(name), (cls, name))
            return UserMethodVariable(fn, self)
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return _user_function(tx, attr.__func__, self._class_source(name))
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            fn = _user_function(tx, attr.__func__, AttrSource(self._class_source(name), "__func__"))
            return UserMethodVariable(fn, ConstantVariable(cls, self._type_source()))
        if hasattr(type(attr), "__get__") and not isinstance(attr, type):
            return self._bound_descriptor(tx, name, attr)
        return wrap(tx, getattr(cls, name), self._class_source(name))

    def _bound_descriptor(self, tx, name: str, attr: Any) -> VariableTracker:
        """A class attribute that binds like a function (an `lru_cache` wrapper used as a
        method, as transformers' `logger.warning_once` is): the call gets the object first.
        Any other descriptor's `__get__` is code we do not model."""
        from .builder import wrap

        if not isinstance(type(attr).__get__, _C_SLOT_TYPES):
            raise Unsupported("Unsupported attribute access",
                              f"descriptor {type(attr).__qualname__} for {type(self.value).__qualname__}.{name}")
        bound = attr.__get__(self.value, type(self.value))  # a C slot: no user code runs
        if not (isinstance(bound, types.MethodType) and bound.__func__ is attr and bound.__self__ is self.value):
            raise Unsupported("Unsupported attribute access",
                              f"{type(self.value).__qualname__}.{name}: {type(attr).__qualname__}.__get__ "
                              "does not bind like a function")
        return UserMethodVariable(wrap(tx, attr, self._class_source(name)), self)


    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        cls = self.python_type()
        if cls.__setattr__ is not object.__setattr__ and cls.__setattr__ is not torch.nn.Module.__setattr__:
            raise Unsupported("Unsupported mutation", f"{cls.__qualname__} defines __setattr__")
        if name == "__class__":
            self._assign_class(tx, value)
            if self.source is not None:
                tx.output.side_effects.store_attr(self, name, value)
            return
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            raise Unsupported("Unsupported mutation", f"assignment through descriptor {cls.__qualname__}.{name}")
        if self.source is None:
            raise Unsupported("Unsupported mutation", f"attribute {name!r} of an object made while tracing")
        # Replayed with a real STORE_ATTR after the graph, so Module.__setattr__ still files
        # parameters, buffers and submodules where they belong.
        tx.output.side_effects.store_attr(self, name, value)

    def _assign_class(self, tx, value: VariableTracker) -> None:
        """`obj.__class__ = new`: checked as CPython checks it (on a stand-in instance); from
        then on the trace sees the new class, and the caller's object gets it by replay."""
        from .containers import raise_observed

        old = self.python_type()
        new = value.as_python_constant() if value.is_python_constant() else None
        if issubclass(old, torch.nn.Module) or old.__new__ is not object.__new__ or type(old) is not type:
            raise Unsupported("Unsupported mutation", f"assignment to __class__ of a {old.__qualname__}")
        if not isinstance(new, type):
            raise_observed(TypeError, f"__class__ must be set to a class, not '{value.python_type().__name__}' object")
        stand_in = object.__new__(old)
        try:
            stand_in.__class__ = new
        except TypeError as error:
            raise_observed(TypeError, str(error))
        self.assigned_class = (new, value.source)

    def length(self, tx) -> VariableTracker:
        """`len(obj)`: its `__len__`, whose result CPython checks."""
        from .containers import raise_observed

        result = self.call_method(tx, "__len__", [], {})
        if result.is_python_constant():
            count = result.as_python_constant()
            if not hasattr(type(count), "__index__"):
                raise_observed(TypeError, f"'{type(count).__name__}' object cannot be interpreted as an integer")
            if count < 0:
                raise_observed(ValueError, "__len__() should return >= 0")
            return ConstantVariable(count.__index__())
        if result.python_type() is not int:
            raise Unsupported("Unsupported builtin call", f"len() of a {self.python_type().__qualname__} gave {result}")
        return result

    def bool_value(self, tx) -> bool:
        """Truth as CPython decides it: `__bool__` (which must give a bool), else
        `__len__` (non-zero), else true."""
        from .containers import raise_observed

        cls = self.python_type()
        if _lookup_class(cls, "__bool__")[0] is not _MISSING:
            result = self.call_method(tx, "__bool__", [], {})
            if result.python_type() is not bool:
                raise_observed(TypeError, f"__bool__ should return bool, returned {result.python_type().__name__}")
            return result.bool_value(tx)
        if _lookup_class(cls, "__len__")[0] is not _MISSING:
            return self.length(tx).bool_value(tx)
        return True

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.call_method(tx, "__call__", args, kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.value).__qualname__})"


def _lookup_class(cls: type, name: str) -> tuple[Any, type | None]:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name], klass
    return _MISSING, None


def _is_data_descriptor(attr: Any) -> bool:
    kind = type(attr)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


class SuperVariable(VariableTracker):
    """`super(cls, obj)`: attribute lookup starting after `cls` in type(obj)'s MRO."""

    __slots__ = ("cls", "obj")

    def __init__(self, cls: type, obj: VariableTracker) -> None:
        super().__init__()
        self.cls, self.obj = cls, obj

    def var_getattr(self, tx, name: str) -> VariableTracker:
        # `super()` in a classmethod binds the class itself: the MRO searched is its own, and
        # what a class attribute lookup gives is returned (a plain function stays unbound).
        of_class = isinstance(self.obj, ConstantVariable) and isinstance(self.obj.value, type)
        owner = self.obj.as_python_constant() if of_class else self.obj.python_type()
        mro = owner.__mro__
        if self.cls not in mro:
            raise Unsupported("Unsupported exception handling",
                              f"super({self.cls.__qualname__}, obj): obj is not an instance or subtype of it")
        for index in range(mro.index(self.cls) + 1, len(mro)):
            if name in mro[index].__dict__:
                attr = mro[index].__dict__[name]
                break
        else:
            raise Unsupported("Unsupported exception handling", f"'super' object has no attribute {name!r}")
        # Where the function can be reloaded: type(obj).__mro__[index].name (cls.__mro__... for a class)
        owner_source = None
        if self.obj.source is not None:
            owner_source = self.obj.source if of_class else TypeSource(self.obj.source)
        source = AttrSource(ItemSource(AttrSource(owner_source, "__mro__"), index), name) if owner_source else None
        if isinstance(attr, types.FunctionType):
            function = _user_function(tx, attr, source)
            return function if of_class else UserMethodVariable(function, self.obj)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            cls_var = self.obj if of_class else ConstantVariable(owner, owner_source)
            func_source = AttrSource(source, "__func__") if source is not None else None
            return UserMethodVariable(_user_function(tx, attr.__func__, func_source), cls_var)
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return _user_function(tx, attr.__func__, None)
        raise Unsupported("Unsupported attribute access", f"super().{name} ({type(attr).__qualname__})")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)


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


def _user_function(tx, fn: types.FunctionType, source: Source | None,
                   guard_once_for: tuple | None = None) -> VariableTracker:
    from ..trace_rules import is_inlineable
    from .builder import wrap
    from .nn_module import MODELLED, ModelledFunctionVariable

    # torch's nn.Module machinery (__call__, __getattr__, containers) is modelled, not traced
    # (its module is skipped by the trace rules, the model stands in for it).
    modelled = fn in MODELLED
    kind = ModelledFunctionVariable if modelled else UserFunctionVariable
    if source is None:
        if not modelled and not is_inlineable(fn):
            raise Unsupported("Attempted to call function marked as skipped", f"`{fn.__qualname__}`")
        return kind(fn, None)
    if not modelled and not is_inlineable(fn):
        return wrap(tx, fn, source)
    # The class might be patched between calls: guard the function object itself.
    if guard_once_for is None or guard_once_for not in tx.output.guarded_class_attrs:
        tx.output.guards.add(GuardKind.ID_MATCH, source, fn, tx.output.user_line)
        if guard_once_for is not None:
            tx.output.guarded_class_attrs.add(guard_once_for)
    return kind(fn, source)


class NewObjectVariable(UserDefinedObjectVariable):
    """An instance of a user class created while tracing.

    `value` is a real, uninitialised instance (made with `object.__new__`) used only to find
    class attributes; the instance's own attributes live in `attrs`. If the object outlives
    the frame it is rebuilt after the graph: `object.__new__(cls)`, then each attribute.
    """

    __slots__ = ("attrs", "class_source")

    def __init__(self, value: Any, class_source: Source | None) -> None:
        super().__init__(value, None)
        self.attrs: dict[str, VariableTracker] = {}
        self.class_source = class_source

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        return self.attrs.get(name)

    def children(self) -> list[VariableTracker]:
        return list(self.attrs.values())

    def has_attribute(self, tx, name: str) -> bool:
        return name in self.attrs or _lookup_class(type(self.value), name)[0] is not _MISSING

    def _type_source(self) -> Source | None:
        return self.class_source

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        cls = type(self.value)
        if cls.__setattr__ is not object.__setattr__:
            raise Unsupported("Unsupported mutation", f"{cls.__qualname__} defines __setattr__")
        if name == "__class__":
            self._assign_class(tx, value)
            self.value.__class__ = self.assigned_class[0]  # the stand-in instance is ours to change
            self.class_source, self.assigned_class = value.source, None
            return
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            raise Unsupported("Unsupported mutation", f"assignment through descriptor {cls.__qualname__}.{name}")
        self.attrs[name] = value

    def reconstruct(self, codegen) -> None:
        from ..bytecode import create_instruction

        codegen.load_callable_const(object.__new__)
        codegen.load_const(type(self.value))
        codegen.call(1)
        for name, value in self.attrs.items():
            codegen.append(create_instruction("COPY", arg=1))
            codegen.reconstruct(value)
            codegen.append(create_instruction("SWAP", arg=2), create_instruction("STORE_ATTR", argval=name))


def construct(tx, cls_var: VariableTracker, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for a class value: namedtuples, plain user classes and
    dataclasses, and a few immutable torch types built from constants."""
    from .containers import make_namedtuple

    cls = cls_var.as_python_constant()
    if cls in _CONSTANT_CONSTRUCTORS and all(a.is_python_constant() for a in (*args, *kwargs.values())):
        from .constant import fold

        return fold(lambda *a: cls(*a, **{k: v.as_python_constant() for k, v in kwargs.items()}), *args)
    namedtuple = make_namedtuple(tx, cls_var, args, kwargs)
    if namedtuple is not None:
        return namedtuple
    if issubclass(cls, BaseException):
        from .exceptions import make_exception

        return make_exception(cls, args, kwargs)
    from ..trace_rules import is_inlineable

    init = cls.__dict__.get("__init__") or next((k.__dict__["__init__"] for k in cls.__mro__
                                                  if "__init__" in k.__dict__), None)
    plain = (type(cls) in PLAIN_METACLASSES and cls.__new__ is object.__new__ and not issubclass(cls, torch.nn.Module)
             and not issubclass(cls, BaseException))
    if not plain or not (init is object.__init__ or (isinstance(init, types.FunctionType) and is_inlineable(init))):
        raise Unsupported("Unsupported builtin call", f"creating a {cls.__qualname__} while tracing")
    if getattr(cls, "__abstractmethods__", None):
        raise Unsupported("Unsupported exception handling", f"can't instantiate abstract class {cls.__qualname__}")
    obj = NewObjectVariable(object.__new__(cls), cls_var.source)
    if init is not object.__init__:
        source = AttrSource(cls_var.source, "__init__") if cls_var.source is not None else None
        UserFunctionVariable(init, source).call_function(tx, [obj, *args], kwargs)
    elif args or kwargs:
        raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}() takes no arguments")
    return obj


_CONSTANT_CONSTRUCTORS = frozenset({torch.Size, torch.device, slice, range, torch.finfo, torch.iinfo})
