"""Enum classes and their members.

A member is one object for the life of its class (`EnumType` refuses to rebind or delete a
member, and a member's name and value are fixed when the class is made), so it folds like a
constant: `==`, `is`, `in`, hashing, `.name`, `.value`. An input or global that holds a member
is guarded by identity (an `IntEnum` member equal to a plain int is still another input).
What the enum class defines in Python (methods, properties, classmethods) is traced with the
member bound, read through the member's class so the guards pin it.

An enum class folds the same way: `Color.RED`, `Color(1)`, `len(Color)`, `x in Color` and
iteration over its members (in definition order) read the member table, which is fixed.
"""

from __future__ import annotations

import enum
import types
from typing import Any

from ..exc import Unsupported
from ..source import AttrSource, Source, TypeSource
from .base import VariableTracker
from .constant import ConstantVariable

_MISSING = object()


def _class_attribute(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


class EnumMemberVariable(ConstantVariable):
    """One member of an Enum class."""

    __slots__ = ()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .stdlib import is_immutable_constant

        member, cls = self.value, type(self.value)
        if name in ("name", "value", "_name_", "_value_"):
            value = getattr(member, name)
            if not is_immutable_constant(value):
                raise Unsupported("Unsupported attribute access",
                                  f"{cls.__qualname__}.{member._name_}.{name} is a {type(value).__name__}")
            return ConstantVariable(value)
        if name == "__class__":
            return EnumClassVariable(cls, self._class_source())
        attr = self._user_defined(name)
        if attr is not None:
            return self._user_attribute(tx, name, attr)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if self._user_defined(name) is not None:
            return self.var_getattr(tx, name).call_function(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)  # e.g. str methods of a StrEnum member

    def _user_defined(self, name: str) -> Any:
        """The class attribute `name` if it is Python the enum class defines (traced), else None."""
        from ..trace_rules import is_inlineable

        attr = _class_attribute(type(self.value), name)
        function = attr
        if isinstance(attr, (classmethod, staticmethod)):
            function = attr.__func__
        elif isinstance(attr, property):
            function = attr.fget
        if isinstance(function, types.FunctionType) and is_inlineable(function) and name not in vars(self.value):
            return attr
        return None

    def _user_attribute(self, tx, name: str, attr: Any) -> VariableTracker:
        """A method, property, classmethod or staticmethod the enum class defines in Python,
        read through the member's class (so a patched class recompiles)."""
        from .builder import wrap
        from .user_functions import UserMethodVariable

        class_source = self._class_source()
        if class_source is None:
            raise Unsupported("Unsupported attribute access",
                              f"{type(self.value).__qualname__}.{name} of a member the guards cannot reach")
        where = AttrSource(class_source, name)
        if isinstance(attr, property):
            return wrap(tx, attr.fget, AttrSource(where, "fget")).call_function(tx, [self], {})
        if isinstance(attr, staticmethod):
            return wrap(tx, attr.__func__, where)
        if isinstance(attr, classmethod):
            fn = wrap(tx, attr.__func__, AttrSource(where, "__func__"))
            return UserMethodVariable(fn, EnumClassVariable(type(self.value), class_source))
        return UserMethodVariable(wrap(tx, attr, where), self)

    def _class_source(self) -> Source | None:
        return TypeSource(self.source) if self.source is not None else None

    def __repr__(self) -> str:
        return f"EnumMemberVariable({self.value!r})"


class EnumClassVariable(ConstantVariable):
    """An Enum class: members, lookup by value, and iteration fold."""

    __slots__ = ()

    def member(self, member: enum.Enum) -> EnumMemberVariable:
        # Reached again as a class attribute of the class's own name for it.
        source = AttrSource(self.source, member._name_) if self.source is not None else None
        return EnumMemberVariable(member, source)

    def members(self) -> list[EnumMemberVariable]:
        """What iterating the class yields: the members in definition order, without aliases."""
        return [self.member(self.value._member_map_[name]) for name in self.value._member_names_]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        cls = self.value
        member = cls._member_map_.get(name)
        if member is not None and _class_attribute(cls, name) is member:
            return self.member(member)
        return super().var_getattr(tx, name)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        """`Color(value)`: the member with that value; anything else (no member, a `_missing_`
        hook, the functional API) runs eagerly."""
        cls = self.value
        if kwargs or len(args) != 1 or not args[0].is_python_constant() or type(cls).__call__ is not enum.EnumMeta.__call__:
            raise Unsupported("Unsupported builtin call", f"{cls.__qualname__}(...) beyond a lookup by value")
        value = args[0].as_python_constant()
        if type(value) is cls:
            return self.member(value)
        try:
            member = cls._value2member_map_.get(value)
        except TypeError:  # unhashable: eager searches the members one by one
            member = None
        if member is None:
            raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}({value!r}) is not a member")
        return self.member(member)

    def __repr__(self) -> str:
        return f"EnumClassVariable({self.value.__qualname__})"
