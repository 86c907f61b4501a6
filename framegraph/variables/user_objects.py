"""Objects of user classes: attribute access, special methods and mutation, as Python runs them.

An attribute read is what `type(obj).__getattribute__` does and then, for a missing name,
the class's `__getattr__`; a class that defines either has it inlined. The generic lookup
(`object.__getattribute__`, which `super().__getattribute__(name)` reaches too) follows
CPython's order: a data descriptor on the class (a property is inlined), then the instance
`__dict__`, then the class attribute (functions become bound methods, classmethods bind the
class, staticmethods stay plain, C methods of object, dict and list bind as slot methods).
Each value read is wrapped with its source, so it is guarded exactly when it is used, and
each absence the trace relies on is guarded too. A missing name raises AttributeError in the
traced program, which it may catch.

A store is `type(obj).__setattr__` (inlined when the class defines one) down to the generic
store, which records the attribute: on an object made while tracing, in its own record
(`NewObjectVariable`); on an existing object, in the side-effect ledger, replayed after the
graph with STORE_ATTR, or with `object.__setattr__` when the class defines `__setattr__`:
the trace already ran the override, so replaying through it would repeat its other effects.

Special methods (`len(obj)`, `obj[k]`, `k in obj`, `if obj:`, iteration, calls) are looked up
on the type, as Python does. Objects of dict and list subclasses keep their items in a
storage tracker (dict_subclass.py); user_defined.py makes objects while tracing and models
the C methods of `object`. nn.Modules (`NNModuleVariable`, in nn_module.py) build on this
with what `Module.__getattr__` and `Module.__call__` add.
"""

from __future__ import annotations

import collections
import collections.abc
import types
from typing import Any

import torch

from ..exc import ObservedException, Unsupported
from ..guards import GuardKind
from ..source import AttrSource, InstanceDictSource, ItemSource, Source, TypeSource
from ..trace_rules import is_inlineable
from . import descriptors, logging_calls
from .base import DELETED, VariableTracker
from .constant import ConstantVariable
from .descriptors import _raise_as_eager
from .exceptions import raise_observed
from .user_functions import UserFunctionVariable, UserMethodVariable

_MISSING = object()
# How a `__get__` written in C shows on its type: then calling it runs no Python.
_C_SLOT_TYPES = (types.WrapperDescriptorType, types.MethodWrapperType, types.BuiltinFunctionType)
# The builtin classes whose instances framegraph models as records: an object's attributes
# (a SimpleNamespace is one whose __init__ sets them), and the items of a dict (OrderedDict)
# or list subclass. Their attribute hooks are the
# generic ones (dict and list define `__getattribute__` as object's).
SOLID_BASES = (object, dict, collections.OrderedDict, list, types.SimpleNamespace)


class UserDefinedObjectVariable(VariableTracker):
    """An object of a user class. `value` is the object itself (or, for one made while
    tracing, an uninitialised instance that only answers class lookups); `storage` holds the
    items of a dict or list subclass (a DictVariable or ListVariable, None otherwise)."""

    __slots__ = ("value", "storage", "assigned_class")

    def __init__(self, value: Any, source: Source | None, storage: VariableTracker | None = None) -> None:
        super().__init__(source)
        self.value = value
        self.storage = storage
        # (class, its source) once the trace runs `obj.__class__ = cls` on the caller's object
        self.assigned_class: tuple[type, Source | None] | None = None

    def python_type(self) -> type:
        return self.assigned_class[0] if self.assigned_class is not None else type(self.value)

    def children(self) -> list[VariableTracker]:
        return [self.storage] if self.storage is not None else []

    # ---- reads ------------------------------------------------------------------------------

    def var_getattr(self, tx, name: str) -> VariableTracker:
        cls = self.python_type()
        try:
            if _generic_hook(cls, "__getattribute__"):
                return self.generic_getattr(tx, name)
            return self.call_special(tx, "__getattribute__", [ConstantVariable(name)], {})
        except ObservedException as raised:
            if not is_raised(raised, AttributeError) or _lookup_class(cls, "__getattr__")[0] is _MISSING:
                raise
        return self.call_special(tx, "__getattr__", [ConstantVariable(name)], {})

    def generic_getattr(self, tx, name: str) -> VariableTracker:
        """`object.__getattribute__(obj, name)`."""
        cls = self.python_type()
        written = tx.output.side_effects.load_attr(self, name)
        if written is not None and written is not DELETED:
            return written
        if name == "__class__":
            return ConstantVariable(cls, self._type_source())
        class_attr, _ = _lookup_class(cls, name)
        if name == "__dict__" and type(class_attr) is types.GetSetDescriptorType:
            from .instance_dict import InstanceDictVariable

            return InstanceDictVariable(self)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            return self._descriptor(tx, name, class_attr)
        found = self._instance_attribute(tx, name) if written is None else None
        if found is not None:
            return found
        if written is None:  # absent from the real instance __dict__ (not deleted by the trace)
            self.guard_not_in_instance_dict(tx, name)
        if class_attr is not _MISSING:
            return self._class_attribute(tx, name, class_attr)
        self._guard_class_lacks(tx, name)
        raise_observed(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")

    def has_attribute(self, tx, name: str) -> bool:
        """`hasattr(obj, name)` as the program would see it, guarded."""
        written = tx.output.side_effects.load_attr(self, name)
        if written is not None and written is not DELETED:
            return True
        if written is not None:
            return self.getattr_or(tx, name, None) is not None
        if self.assigned_class is not None:
            raise Unsupported("Unsupported builtin call", "hasattr on an object given a new class")
        if self.source is not None and not self.customises_lookup():
            present = hasattr(self.value, name)
            tx.output.guards.add(GuardKind.HASATTR, self.source, (name, present), tx.output.user_line, key=name)
            return present
        return self.getattr_or(tx, name, None) is not None

    def getattr_or(self, tx, name: str, default: VariableTracker) -> VariableTracker:
        """`getattr(obj, name, default)`."""
        try:
            return self.var_getattr(tx, name)
        except ObservedException as raised:
            if is_raised(raised, AttributeError):
                return default
            raise

    def customises_lookup(self) -> bool:
        cls = self.python_type()
        return not _generic_hook(cls, "__getattribute__") or _lookup_class(cls, "__getattr__")[0] is not _MISSING

    def instance_dict_keys(self, tx) -> list[str]:
        """The names in the instance `__dict__` now, in order (the keys are guarded)."""
        instance_dict = _instance_dict(self.value)
        if instance_dict is None:
            raise_observed(AttributeError, f"{self.python_type().__name__!r} object has no attribute '__dict__'")
        self._guard_instance_keys(tx)
        deleted = {name for name in instance_dict if tx.output.side_effects.load_attr(self, name) is DELETED}
        names = [name for name in instance_dict if name not in deleted]
        names += [name for name in tx.output.side_effects.attr_names(self) if name not in instance_dict]
        return names

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        instance_dict = _instance_dict(self.value)
        if instance_dict is None or name not in instance_dict:
            return None
        return builder.wrap(tx, instance_dict[name], self._attr_source(name))

    def guard_not_in_instance_dict(self, tx, name: str) -> None:
        """The trace relies on `name` being absent from the instance `__dict__`."""
        if self.source is None or _instance_dict(self.value) is None:
            return
        if self._lookup_hook_is_plain():
            tx.output.class_reads.setdefault(self.source, set()).add(name)
        else:
            self._guard_instance_keys(tx)  # reading `x.__dict__` by name would run the class's hook

    def _guard_instance_keys(self, tx) -> None:
        if self.source is None:
            return
        keys = tuple(_instance_dict(self.value))
        tx.output.guards.add(GuardKind.DICT_KEYS, InstanceDictSource(self.source), (dict, keys), tx.output.user_line)

    def _guard_class_lacks(self, tx, name: str) -> None:
        cls, type_source = self.python_type(), self._type_source()
        if type_source is not None and (cls, name) not in tx.output.guarded_class_attrs:
            tx.output.guards.add(GuardKind.HASATTR, type_source, (name, False), tx.output.user_line, key=name)
            tx.output.guarded_class_attrs.add((cls, name))

    def _lookup_hook_is_plain(self) -> bool:
        return _generic_hook(self.python_type(), "__getattribute__")

    def _attr_source(self, name: str) -> Source:
        if self.source is None:
            raise Unsupported("Unsupported attribute access",
                              f"{self.python_type().__qualname__}.{name} of an object made while tracing")
        if self._lookup_hook_is_plain():
            return AttrSource(self.source, name)
        return ItemSource(InstanceDictSource(self.source), name)

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
        from .builder import wrap

        if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
            getter = _user_function(tx, attr.fget, AttrSource(self._class_source(name), "fget"))
            return getter.call_function(tx, [self], {})
        if type(attr) is types.MemberDescriptorType and self.source is not None and self._lookup_hook_is_plain():
            present = hasattr(self.value, name)  # a __slots__ entry, which may be unset
            if not present:
                tx.output.guards.add(GuardKind.HASATTR, self.source, (name, False), tx.output.user_line, key=name)
                raise_observed(AttributeError, name)
            return wrap(tx, getattr(self.value, name), AttrSource(self.source, name))
        if isinstance(attr, property) and attr.fget is None:
            _raise_as_eager(attr.__get__, self)
        found = descriptors.call_get(tx, self, name, attr)
        if found is not None:
            return found
        raise Unsupported("Unsupported attribute access",
                          f"descriptor {type(attr).__qualname__} for {self.python_type().__qualname__}.{name}")

    def _class_attribute(self, tx, name: str, attr: Any) -> VariableTracker:
        cls = self.python_type()
        deferred = logging_calls.logger_method(tx, self, cls, name, attr, self._class_source_or_none(name))
        if deferred is not None:
            return deferred
        if isinstance(attr, types.FunctionType):
            # One guard per class: every instance's type is pinned by its TYPE_MATCH guard.
            fn = _user_function(tx, attr, self._class_source_or_none(name), (cls, name))
            return UserMethodVariable(fn, self)  # a new bound method at every read
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return _user_function(tx, attr.__func__, self._class_source_or_none(name))
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            source = self._class_source_or_none(name)
            fn = _user_function(tx, attr.__func__, AttrSource(source, "__func__") if source is not None else None)
            return UserMethodVariable(fn, ConstantVariable(cls, self._type_source()))
        from .user_defined import SlotMethodVariable, slot_owner

        owner = slot_owner(attr)
        if owner is not None:
            return SlotMethodVariable(self, owner, name)
        if hasattr(type(attr), "__get__") and not isinstance(attr, type):
            found = descriptors.call_get(tx, self, name, attr)
            return found if found is not None else self._bound_descriptor(tx, name, attr)
        return builder.wrap(tx, attr, self._class_source(name))

    def _class_source_or_none(self, name: str) -> Source | None:
        type_source = self._type_source()
        return AttrSource(type_source, name) if type_source is not None else None

    def _bound_descriptor(self, tx, name: str, attr: Any) -> VariableTracker:
        """A class attribute that binds like a function (an `lru_cache` wrapper used as a
        method, as transformers' `logger.warning_once` is): the call gets the object first.
        Any other descriptor's `__get__` is code we do not model."""
        from .builder import wrap

        cls = self.python_type()
        if not isinstance(type(attr).__get__, _C_SLOT_TYPES) or self.source is None:
            raise Unsupported("Unsupported attribute access",
                              f"descriptor {type(attr).__qualname__} for {cls.__qualname__}.{name}")
        bound = attr.__get__(self.value, cls)  # a C slot: no user code runs
        if not (isinstance(bound, types.MethodType) and bound.__func__ is attr and bound.__self__ is self.value):
            raise Unsupported("Unsupported attribute access",
                              f"{cls.__qualname__}.{name}: {type(attr).__qualname__}.__get__ "
                              "does not bind like a function")
        return UserMethodVariable(wrap(tx, attr, self._class_source(name)), self)

    # ---- writes -----------------------------------------------------------------------------

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        cls = self.python_type()
        if _generic_hook(cls, "__setattr__") or _lookup_class(cls, "__setattr__")[0] is torch.nn.Module.__setattr__:
            self.generic_setattr(tx, name, value, bypass=False)
        elif issubclass(cls, torch.nn.Module):
            raise Unsupported("Unsupported mutation", f"{cls.__qualname__} defines __setattr__")
        else:
            self.call_special(tx, "__setattr__", [ConstantVariable(name), value], {})

    def generic_setattr(self, tx, name: str, value: VariableTracker, bypass: bool = True) -> None:
        """`object.__setattr__(obj, name, value)`; `bypass` False when it is what STORE_ATTR
        does for a class without a `__setattr__` of its own (Module's counts as none)."""
        cls = self.python_type()
        if name == "__class__":
            self.assign_class(tx, value, bypass)
            return
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr) \
                and descriptors.call_set(tx, self, name, class_attr, value):
            return
        if isinstance(class_attr, property) and isinstance(class_attr.fset, types.FunctionType):
            source = self._class_source_or_none(name)
            setter = _user_function(tx, class_attr.fset, AttrSource(source, "fset") if source is not None else None)
            setter.call_function(tx, [self, value], {})
            return
        if class_attr is not _MISSING and _is_data_descriptor(class_attr) \
                and type(class_attr) is not types.MemberDescriptorType:
            raise Unsupported("Unsupported mutation", f"assignment through descriptor {cls.__qualname__}.{name}")
        if type(class_attr) is not types.MemberDescriptorType and _instance_dict(self.value) is None \
                and builtin_base_of(cls) is object:
            raise_observed(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")  # only __slots__
        self.record_attr(tx, name, value, generic=bypass)

    def record_attr(self, tx, name: str, value: VariableTracker, generic: bool) -> None:
        """The store into the instance `__dict__` itself: on an existing object, a ledger
        entry, replayed with STORE_ATTR (so Module.__setattr__ still files parameters, buffers
        and submodules where they belong) or, when `generic`, with `object.__setattr__`."""
        if self.source is None:
            raise Unsupported("Unsupported mutation", f"attribute {name!r} of an object made while tracing")
        tx.output.side_effects.store_attr(self, name, value, generic=generic)

    def assign_class(self, tx, value: VariableTracker, bypass: bool) -> None:
        """`obj.__class__ = new`: checked as CPython checks it (on a stand-in instance); from
        then on the trace sees the new class, and the caller's object gets it by replay."""
        new = _checked_class(self, value)
        if self.source is None:
            raise Unsupported("Unsupported mutation", "__class__ of an object made while tracing")
        self.assigned_class = (new, value.source)
        tx.output.side_effects.store_attr(self, "__class__", value, generic=bypass)

    def delete_attr(self, tx, name: str) -> None:
        if _generic_hook(self.python_type(), "__delattr__"):
            self.generic_delattr(tx, name)
        else:
            self.call_special(tx, "__delattr__", [ConstantVariable(name)], {})

    def generic_delattr(self, tx, name: str) -> None:
        """`object.__delattr__(obj, name)`: a data descriptor's deleter, else the instance
        attribute."""
        class_attr, _ = _lookup_class(self.python_type(), name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr) \
                and type(class_attr) is not types.MemberDescriptorType:
            if not descriptors.call_delete(tx, self, name, class_attr):
                raise Unsupported("Unsupported mutation",
                                  f"deletion through descriptor {self.python_type().__qualname__}.{name}")
            return
        self.delete_instance_attr(tx, name)

    def delete_instance_attr(self, tx, name: str) -> None:
        """Deletes the instance attribute `name` of the caller's object (a ledger entry), or
        raises the AttributeError eager raises when there is none."""
        cls = self.python_type()
        if self.source is None or issubclass(cls, torch.nn.Module) or self.assigned_class is not None \
                or type(_lookup_class(cls, name)[0]) is types.MemberDescriptorType:
            raise Unsupported("Unsupported mutation", f"deletion of attribute {name!r} of a {cls.__qualname__}")
        written = tx.output.side_effects.load_attr(self, name)
        if written is None:
            instance_dict = _instance_dict(self.value)
            present = instance_dict is not None and name in instance_dict
            self._guard_instance_keys(tx)
        else:
            present = written is not DELETED
        if not present:
            raise_observed(AttributeError, name)
        tx.output.side_effects.delete_attr(self, name, generic=not _generic_hook(cls, "__delattr__"))

    # ---- special methods, looked up on the type ---------------------------------------------

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__contains__" and not self.has_special(name) and len(args) == 1:
            from .builtins import contains

            # Python's fallback for `in`: iterate, comparing each item
            return ConstantVariable(contains(tx, self.iterate(tx), args[0]))
        if name.startswith("__") and name.endswith("__"):
            return self.call_special(tx, name, args, kwargs)
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.call_special(tx, "__call__", args, kwargs)

    def has_special(self, name: str) -> bool:
        return _lookup_class(self.python_type(), name)[0] is not _MISSING

    def call_special(self, tx, name: str, args, kwargs) -> VariableTracker:
        """`type(obj).name(obj, *args, **kwargs)`."""
        from .user_defined import SlotMethodVariable, slot_owner

        cls = self.python_type()
        attr, _ = _lookup_class(cls, name)
        if isinstance(attr, types.FunctionType):
            fn = _user_function(tx, attr, self._class_source_or_none(name), (cls, name))
            return fn.call_function(tx, [self, *args], kwargs)
        owner = slot_owner(attr)
        if owner is not None:
            return SlotMethodVariable(self, owner, name).call_function(tx, args, kwargs)
        if attr is _MISSING:
            raise Unsupported("Unsupported method call", f"{cls.__qualname__} has no {name}")
        return self._class_attribute(tx, name, attr).call_function(tx, args, kwargs)

    def length(self, tx) -> VariableTracker:
        """`len(obj)`: its `__len__`, whose result CPython checks."""
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
        if self.has_special("__bool__"):
            result = self.call_special(tx, "__bool__", [], {})
            if result.python_type() is not bool:
                raise_observed(TypeError, f"__bool__ should return bool, returned {result.python_type().__name__}")
            return result.bool_value(tx)
        if self.has_special("__len__"):
            return self.length(tx).bool_value(tx)
        return True

    def get_iterator(self, tx) -> VariableTracker:
        """`iter(obj)`: what its `__iter__` returns, or Python's old sequence protocol."""
        from .iterators import IteratorVariable
        from .user_defined import IndexIteratorVariable

        method, _ = _lookup_class(self.python_type(), "__iter__")
        if method is _MISSING and self.has_special("__getitem__"):
            return IndexIteratorVariable(self, generator=False)
        if method is collections.abc.Sequence.__iter__:
            # obj[0], obj[1]... as the old protocol, in a generator whose try block the
            # generator machinery would refuse to suspend in
            return IndexIteratorVariable(self, generator=True)
        if method is _MISSING:
            raise_observed(TypeError, f"{self.python_type().__name__!r} object is not iterable")
        iterator = self.call_special(tx, "__iter__", [], {})
        if not isinstance(iterator, IteratorVariable):
            raise Unsupported("Unsupported builtin call",
                              f"{self.python_type().__qualname__}.__iter__ returned {iterator}")
        return iterator

    def iterate(self, tx) -> list[VariableTracker]:
        from .iterators import unpack

        return unpack(tx, self.get_iterator(tx))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.python_type().__qualname__})"


def is_raised(raised: ObservedException, cls: type) -> bool:
    kind = getattr(raised.exception, "cls", None)
    return isinstance(kind, type) and issubclass(kind, cls)


def _instance_dict(value: Any) -> dict | None:
    try:
        found = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return None
    return found if isinstance(found, dict) else None


def _generic_hook(cls: type, name: str) -> bool:
    """Whether the attribute hook `name` of `cls` is the generic one, not the class's own."""
    hook = _lookup_class(cls, name)[0]
    return isinstance(hook, types.WrapperDescriptorType) and hook.__objclass__ in SOLID_BASES


def _lookup_class(cls: type, name: str) -> tuple[Any, type | None]:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name], klass
    return _MISSING, None


def _checked_class(obj: UserDefinedObjectVariable, value: VariableTracker) -> type:
    """The class `obj.__class__ = value` gives, checked as CPython checks it (on a stand-in
    instance)."""
    old = obj.python_type()
    new = value.as_python_constant() if value.is_python_constant() else None
    if issubclass(old, torch.nn.Module) or old.__new__ is not object.__new__ or type(old) is not type \
            or obj.storage is not None:
        raise Unsupported("Unsupported mutation", f"assignment to __class__ of a {old.__qualname__}")
    if not isinstance(new, type):
        raise_observed(TypeError, f"__class__ must be set to a class, not '{value.python_type().__name__}' object")
    stand_in = object.__new__(old)
    try:
        stand_in.__class__ = new
    except TypeError as error:
        raise_observed(TypeError, str(error))
    return new


def _is_data_descriptor(attr: Any) -> bool:
    kind = type(attr)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


def _user_function(tx, fn: types.FunctionType, source: Source | None,
                   guard_once_for: tuple | None = None) -> VariableTracker:
    # torch's nn.Module machinery (__call__, __getattr__, containers) is modelled, not traced
    # (its module is skipped by the trace rules, the model stands in for it).
    modelled = fn in nn_module.MODELLED
    kind = nn_module.ModelledFunctionVariable if modelled else optimizer.StateFirstFunctionVariable \
        if fn in optimizer.INIT_GROUPS else UserFunctionVariable
    if source is None:
        if not modelled and not is_inlineable(fn):
            raise Unsupported("Attempted to call function marked as skipped", f"`{fn.__qualname__}`")
        return kind(fn, None)
    if not modelled and not is_inlineable(fn):
        return builder.wrap(tx, fn, source)
    # The class might be patched between calls: guard the function object itself.
    if guard_once_for is None or guard_once_for not in tx.output.guarded_class_attrs:
        tx.output.guards.add(GuardKind.ID_MATCH, source, fn, tx.output.user_line)
        if guard_once_for is not None:
            tx.output.guarded_class_attrs.add(guard_once_for)
    return kind(fn, source)


class NewObjectVariable(UserDefinedObjectVariable):
    """An object of a user class made while tracing (user_defined.py makes it).

    `value` is a real, uninitialised instance (made by the class's builtin `__new__`) used
    only to find class attributes; the instance's own attributes live in `attrs`, in the
    order they were first set, its `__slots__` entries in `slots`, and the items of a dict
    or list subclass in `storage`. If the object outlives the graph it is rebuilt: the
    builtin `__new__`, then its items, its `__dict__` and its slots, set in ways that bypass
    the class's own `__setitem__` and `__setattr__`.
    """

    __slots__ = ("attrs", "slots", "class_source")

    def __init__(self, value: Any, class_source: Source | None, storage: VariableTracker | None = None) -> None:
        super().__init__(value, None, storage)
        self.attrs: dict[str, VariableTracker] = {}
        self.slots: dict[str, VariableTracker] = {}
        self.class_source = class_source

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        return self.attrs.get(name)

    def instance_dict_keys(self, tx) -> list[str]:
        if _instance_dict(self.value) is None:
            raise_observed(AttributeError, f"{self.python_type().__name__!r} object has no attribute '__dict__'")
        return list(self.attrs)

    def children(self) -> list[VariableTracker]:
        return [*self.attrs.values(), *self.slots.values(), *super().children()]

    def has_attribute(self, tx, name: str) -> bool:
        if not self.customises_lookup():
            class_attr = _lookup_class(self.python_type(), name)[0]
            if type(class_attr) is types.MemberDescriptorType:
                return name in self.slots
            return name in self.attrs or class_attr is not _MISSING
        return super().has_attribute(tx, name)

    def _type_source(self) -> Source | None:
        return self.class_source

    def _descriptor(self, tx, name: str, attr: Any) -> VariableTracker:
        if type(attr) is types.MemberDescriptorType:
            if name not in self.slots:
                raise_observed(AttributeError, name)
            return self.slots[name]
        return super()._descriptor(tx, name, attr)

    def record_attr(self, tx, name: str, value: VariableTracker, generic: bool) -> None:
        if type(_lookup_class(self.python_type(), name)[0]) is types.MemberDescriptorType:
            self.slots[name] = value
            return
        if not generic and _lookup_class(self.python_type(), "__setattr__")[0] is torch.nn.Module.__setattr__:
            self._check_plain_module_store(tx, name, value)
        self.attrs[name] = value

    def _check_plain_module_store(self, tx, name: str, value: VariableTracker) -> None:
        """Module.__setattr__ stores into the instance __dict__ only what is no parameter,
        buffer or submodule (nor replaces one); the rest it files elsewhere, not modelled."""
        from .tensor import TensorVariable

        filed = isinstance(value, TensorVariable) or (
            isinstance(value, UserDefinedObjectVariable) and issubclass(value.python_type(), torch.nn.Module))
        for table in ("_parameters", "_buffers", "_modules"):
            held = self.attrs.get(table)
            if held is not None and (not hasattr(held, "items") or not isinstance(held.items, dict)
                                     or name in held.items):
                filed = True
        if filed:
            raise Unsupported("Unsupported mutation",
                              f"{self.python_type().__qualname__}.{name} = {value} on a module made while tracing")

    def assign_class(self, tx, value: VariableTracker, bypass: bool) -> None:
        self.value.__class__ = _checked_class(self, value)  # the stand-in instance is ours to change
        self.class_source = value.source

    def delete_instance_attr(self, tx, name: str) -> None:
        held = self.slots if type(_lookup_class(self.python_type(), name)[0]) is types.MemberDescriptorType \
            else self.attrs
        if name not in held:
            raise_observed(AttributeError, name)
        del held[name]

    def reconstruct(self, codegen) -> None:
        from .user_defined import rebuild

        rebuild(codegen, self)


def construct(tx, cls_var: VariableTracker, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for a class value: namedtuples, exceptions, a few immutable
    torch types built from constants, and user classes (user_defined.py)."""
    from .containers import make_namedtuple

    cls = cls_var.as_python_constant()
    if cls in _CONSTANT_CONSTRUCTORS and all(a.is_python_constant() for a in (*args, *kwargs.values())):
        from .constant import fold

        return fold(lambda *a: cls(*a, **{k: v.as_python_constant() for k, v in kwargs.items()}), *args)
    namedtuple = make_namedtuple(tx, cls_var, args, kwargs)
    if namedtuple is not None:
        return namedtuple
    if issubclass(cls, tuple) and hasattr(cls, "n_fields") and len(args) == 1 and not kwargs:
        return _struct_sequence(tx, cls_var, args[0])
    from .tuple_subclass import construct as construct_tuple, plain_tuple_subclass

    from . import operator_objects

    if cls is torch.Size and len(args) == 1 and not kwargs and not args[0].is_python_constant():
        from .tensor import SizeVariable, SymNodeVariable

        items = tx.unpack_iterable(args[0])
        if all(isinstance(i, SymNodeVariable) and i.python_type() is int
               or i.is_python_constant() and type(i.as_python_constant()) is int for i in items):
            return SizeVariable(items)  # sizes that are symbols stay symbols

    if cls in operator_objects.KINDS:
        return operator_objects.make(tx, cls, args, kwargs)
    if cls is property:
        return descriptors.make_property(tx, args, kwargs)
    if cls is collections.deque:
        from .deques import make_deque

        return make_deque(tx, args, kwargs)
    if cls is collections.defaultdict:
        from .default_dicts import make_defaultdict

        return make_defaultdict(tx, args, kwargs)
    if plain_tuple_subclass(cls):
        return construct_tuple(tx, cls_var, args, kwargs)
    if issubclass(cls, BaseException):
        from .exceptions import make_exception

        return make_exception(cls, args, kwargs)
    from .user_defined import construct_object

    return construct_object(tx, cls_var, args, kwargs)


def _struct_sequence(tx, cls_var: VariableTracker, sequence: VariableTracker) -> VariableTracker:
    """`torch.return_types.max((values, indices))`: a struct sequence from one sequence, of
    as many items as it has visible fields."""
    from .containers import NamedTupleVariable

    cls = cls_var.as_python_constant()
    items = tx.unpack_iterable(sequence)
    if len(items) != cls.n_sequence_fields or cls.n_fields != cls.n_sequence_fields:
        raise Unsupported("Unsupported builtin call", f"{cls.__qualname__}() of {len(items)} items")
    return NamedTupleVariable(items, cls, class_source=cls_var.source)


_CONSTANT_CONSTRUCTORS = frozenset({torch.Size, torch.device, slice, range, torch.finfo, torch.iinfo})


def builtin_base_of(cls: type) -> type | None:
    from .user_defined import builtin_base

    return builtin_base(cls)


# Read on every attribute and method lookup: bound once here rather than imported per call
# (each of these modules imports this one, so they come last, as modules, not names).
from . import builder, nn_module, optimizer  # noqa: E402
