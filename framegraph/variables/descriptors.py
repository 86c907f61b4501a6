"""The descriptor protocol on objects of user classes: descriptors written in Python, and
what a property without a getter, setter or deleter raises.

A class attribute whose type defines `__get__` in Python (a validating field, a computed
value) is called as CPython calls it: `type(d).__get__(d, obj, type(obj))` for a read,
`__set__(d, obj, value)` for a store and `__delete__(d, obj)` for a `del`. The descriptor
object is read from the class's own `__dict__` (`type(obj).__mro__[i].__dict__[name]`), not
with `getattr` on the class, which would run its `__get__` with no instance. A data
descriptor (one whose type defines `__set__` or `__delete__`) comes before the instance
`__dict__`; another comes after it, as in `object.__getattribute__`.

A descriptor written in C or in a library we do not trace is left to user_objects.py.
"""

from __future__ import annotations

import types
from typing import Any

from ..source import AttrSource, ItemSource, Source
from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .exceptions import raise_observed

_PROTOCOL = ("__get__", "__set__", "__delete__")


def python_hook(attr: Any, hook: str) -> types.FunctionType | None:
    """The descriptor method `hook` of `attr`'s type, when it is a Python function we trace."""
    from ..polyfills import stand_in_for
    from ..trace_rules import is_inlineable
    from .user_objects import _lookup_class

    if isinstance(attr, (type, types.FunctionType, property, staticmethod, classmethod)):
        return None
    method, _ = _lookup_class(type(attr), hook)
    if isinstance(method, types.FunctionType) and (is_inlineable(method) or stand_in_for(method) is not None):
        return method  # a library's __get__ with a stand-in (functools.cached_property) is traced
    return None


def class_dict_source(obj, cls: type, name: str) -> Source | None:
    """`type(obj).__mro__[i].__dict__[name]`, where the class attribute `name` of `obj` is."""
    type_source = obj._type_source()
    if type_source is None:
        return None
    index = next(i for i, klass in enumerate(cls.__mro__) if name in klass.__dict__)
    return ItemSource(AttrSource(ItemSource(AttrSource(type_source, "__mro__"), index), "__dict__"), name)


def _descriptor_variable(tx, obj, name: str, attr: Any) -> VariableTracker | None:
    from .builder import wrap

    source = class_dict_source(obj, obj.python_type(), name)
    return wrap(tx, attr, source) if source is not None else None


def call_get(tx, obj, name: str, attr: Any) -> VariableTracker | None:
    """`obj.name` through a Python `__get__`, or None when `attr` has none we trace."""
    if python_hook(attr, "__get__") is None:
        return None
    descriptor = _descriptor_variable(tx, obj, name, attr)
    if descriptor is None:
        return None
    owner = ConstantVariable(obj.python_type(), obj._type_source())
    return descriptor.call_special(tx, "__get__", [obj, owner], {})


def call_set(tx, obj, name: str, attr: Any, value: VariableTracker) -> bool:
    """`obj.name = value` through a data descriptor: a Python `__set__`, a property's setter,
    or the AttributeError of a descriptor that cannot set. False when not modelled here."""
    if isinstance(attr, property):
        if attr.fset is None:
            _raise_as_eager(attr.__set__, obj, ConstantVariable(None))
        return False
    if python_hook(attr, "__set__") is not None:
        descriptor = _descriptor_variable(tx, obj, name, attr)
        if descriptor is not None:
            descriptor.call_special(tx, "__set__", [obj, value], {})
            return True
        return False
    if python_hook(attr, "__delete__") is not None and python_hook(attr, "__set__") is None \
            and not hasattr(type(attr), "__set__"):
        raise_observed(AttributeError, "__set__")  # a data descriptor that only deletes
    return False


def call_delete(tx, obj, name: str, attr: Any) -> bool:
    """`del obj.name` through a data descriptor: a property's deleter, a Python `__delete__`,
    or the AttributeError of one that cannot delete. False when not modelled here."""
    from .user_objects import _user_function

    if isinstance(attr, property):
        if attr.fdel is None:
            _raise_as_eager(attr.__delete__, obj)
        if not isinstance(attr.fdel, types.FunctionType):
            return False
        source = class_dict_source(obj, obj.python_type(), name)
        deleter = _user_function(tx, attr.fdel, AttrSource(source, "fdel") if source is not None else None)
        deleter.call_function(tx, [obj], {})
        return True
    if python_hook(attr, "__delete__") is not None:
        descriptor = _descriptor_variable(tx, obj, name, attr)
        if descriptor is not None:
            descriptor.call_special(tx, "__delete__", [obj], {})
            return True
        return False
    if python_hook(attr, "__set__") is not None and not hasattr(type(attr), "__delete__"):
        raise_observed(AttributeError, "__delete__")
    return False


def _raise_as_eager(slot, obj, *args: VariableTracker) -> None:
    """Raises what a property without the needed function raises (CPython checks for the
    function before it touches the object, so the check runs on the object's stand-in)."""
    try:
        slot(obj.value, *(a.as_python_constant() for a in args))
    except AttributeError as error:
        raise_observed(AttributeError, str(error))


class PropertyVariable(VariableTracker):
    """A `property` object as a value: one read from a class (`Base.v.fset(self, value)`)
    or made while tracing (`property(fget)`). Its functions are read as attributes; calling
    `__get__`/`__set__`/`__delete__` calls them as the property would."""

    __slots__ = ("functions",)

    def __init__(self, functions: dict[str, VariableTracker], source=None) -> None:
        super().__init__(source)
        self.functions = functions  # fget, fset, fdel (ConstantVariable(None) where missing)

    def python_type(self) -> type:
        return property

    def children(self) -> list[VariableTracker]:
        return list(self.functions.values())

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .base import MethodVariable

        if name in self.functions:
            return self.functions[name]
        if name in ("__get__", "__set__", "__delete__"):
            return MethodVariable(self, name)
        raise_observed(AttributeError, f"'property' object has no attribute {name!r}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        hook = {"__get__": "fget", "__set__": "fset", "__delete__": "fdel"}.get(name)
        if hook is None or kwargs:
            raise Unsupported("Unsupported method call", f"property.{name}")
        function = self.functions[hook]
        if name == "__get__" and len(args) >= 1 and args[0].is_python_constant() and args[0].as_python_constant() is None:
            return self  # read through the class
        if function.is_python_constant() and function.as_python_constant() is None:
            raise_observed(AttributeError, f"property has no {hook[1:]}ter")
        wanted = {"__get__": 1, "__set__": 2, "__delete__": 1}[name]
        return function.call_function(tx, list(args[:wanted]), {})

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(property)
        for hook in ("fget", "fset", "fdel"):
            codegen.reconstruct(self.functions[hook])
        codegen.call(3)


def wrap_property(tx, value: property, source) -> PropertyVariable:
    from ..guards import GuardKind
    from .builder import wrap

    tx.output.guards.add(GuardKind.TYPE_MATCH, source, property, tx.output.user_line)
    return PropertyVariable({hook: wrap(tx, getattr(value, hook), AttrSource(source, hook))
                             for hook in ("fget", "fset", "fdel")}, source)


def make_property(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> PropertyVariable:
    names = ("fget", "fset", "fdel", "doc")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in bound:
            raise_observed(TypeError, f"property() got an unexpected or repeated argument {key!r}")
        bound[key] = value
    if "doc" in bound:
        raise Unsupported("Unsupported builtin call", "property() with a doc argument")
    return PropertyVariable({hook: bound.get(hook, ConstantVariable(None)) for hook in names[:3]})
