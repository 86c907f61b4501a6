"""What dict views and dict classes do beyond reading: set algebra on `keys()` and `items()`
views, membership of a pair in `items()`, `reversed()` of a dict or a view, `fromkeys` of
dict, OrderedDict and defaultdict, and `|` and `copy()` of an OrderedDict.

A keys view is a set of the dict's (constant) keys; an items view a set of `(key, value)`
pairs, which can take part in set algebra only where the values are constants too (a pair
holding a tensor hashes by identity, which the trace cannot vouch for). Results are new sets,
as eagerly.
"""

from __future__ import annotations

import collections
import operator

from ..bytecode import emit
from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import values_equal
from .dicts import DictVariable, SetVariable, constant_key, set_of
from .exceptions import raise_observed
from .iterators import DictIteratorVariable, DictViewVariable, advanced

_OPERATORS = {operator.and_: "__and__", operator.or_: "__or__", operator.sub: "__sub__", operator.xor: "__xor__"}
_REFLECTED = {"__rand__": "__and__", "__ror__": "__or__", "__rsub__": "__sub__", "__rxor__": "__xor__"}


def _elements(tx, view: DictViewVariable) -> set:
    """The view as a set of constants (keys, or (key, value) pairs of constants)."""
    if view.kind == "keys":
        return set(view.dict_var.items)
    if view.kind == "items":
        if not all(value.is_python_constant() for value in view.dict_var.items.values()):
            raise Unsupported("Unsupported builtin call", "set algebra on the items of a dict whose values are not "
                                                          "constants")
        return {(key, constant_key(value)) for key, value in view.dict_var.items.items()}
    raise_observed(TypeError, "unsupported operand type(s) for a dict_values view")


def _constants(tx, value: VariableTracker) -> set:
    if isinstance(value, DictViewVariable):
        return _elements(tx, value)
    if isinstance(value, SetVariable):
        return set(value.values)
    return {constant_key(item) for item in tx.unpack_iterable(value)}


def view_operator(tx, fn, a: VariableTracker, b: VariableTracker) -> VariableTracker | None:
    """`a op b` where a view takes part: the set the view's own operator (or the reflected
    one of the view on the right) gives."""
    name = _OPERATORS.get(fn)
    if name is None:
        return None
    if isinstance(a, DictViewVariable) and a.kind != "values":
        return set_of(getattr(_elements(tx, a), name)(_constants(tx, b)))
    if isinstance(b, DictViewVariable) and b.kind != "values" and not isinstance(a, SetVariable):
        left = _constants(tx, a)  # a view is the right operand of a list or tuple: its reflected operator
        return set_of(getattr(left, name)(_elements(tx, b)))
    if isinstance(b, DictViewVariable) and b.kind != "values":
        return set_of(getattr(set(a.values), name)(_elements(tx, b)))
    return None


def view_method(tx, view: DictViewVariable, name: str, args, kwargs) -> VariableTracker:
    if kwargs:
        raise Unsupported("Unsupported method call", f"dict_{view.kind}.{name} with keyword arguments")
    if name == "__contains__" and view.kind == "items" and len(args) == 1:
        pair = tx.unpack_iterable(args[0]) if issubclass(args[0].python_type(), tuple) else None
        if pair is None or len(pair) != 2:
            return ConstantVariable(False)
        key = constant_key(pair[0])
        return ConstantVariable(key in view.dict_var.items and values_equal(tx, view.dict_var.items[key], pair[1]))
    if name == "__contains__" and view.kind == "values" and len(args) == 1:
        from .builtins import contains

        return ConstantVariable(contains(tx, list(view.dict_var.items.values()), args[0]))
    if name == "isdisjoint" and view.kind != "values" and len(args) == 1:
        return ConstantVariable(_elements(tx, view).isdisjoint(_constants(tx, args[0])))
    if name in _OPERATORS.values() and len(args) == 1 and view.kind != "values":
        return set_of(getattr(_elements(tx, view), name)(_constants(tx, args[0])))
    if name in _REFLECTED and len(args) == 1 and view.kind != "values":
        return set_of(getattr(_constants(tx, args[0]), _REFLECTED[name])(_elements(tx, view)))
    if name in ("__eq__", "__ne__") and len(args) == 1 and view.kind != "values":
        other = args[0]
        if isinstance(other, (DictViewVariable, SetVariable)) or (
                other.is_python_constant() and isinstance(other.as_python_constant(), (set, frozenset))):
            equal = _elements(tx, view) == _constants(tx, other)
        else:
            equal = False
        return ConstantVariable(equal == (name == "__eq__"))
    if name == "__reversed__" and not args:
        return ReversedDictIteratorVariable(view.dict_var, view.kind, view)
    raise Unsupported("Unsupported method call", f"dict_{view.kind}.{name}")


class ReversedDictIteratorVariable(DictIteratorVariable):
    """`reversed(d)` or `reversed(d.items())`: the keys last to first, values read when
    reached, RuntimeError if the dict changes size meanwhile."""

    __slots__ = ("view",)

    def __init__(self, dict_var: DictVariable, kind: str, view: VariableTracker | None = None) -> None:
        super().__init__(dict_var, kind)
        self.keys.reverse()
        self.view = view

    def python_type(self) -> type:
        return type(reversed(getattr({}, self.kind)()))

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(advanced)
        codegen.load_callable_const(reversed)
        codegen.reconstruct(self.dict_var)
        if self.view is not None:
            codegen.append(*emit.create_load_method(self.kind), *emit.create_call(0))
        codegen.call(1)
        codegen.load_const(len(self.keys) if self.exhausted else self.index)
        codegen.call(2)


class FromKeysVariable(VariableTracker):
    """`cls.fromkeys(iterable, value=None)` for dict, OrderedDict and defaultdict: every key
    gets the one value (the same object)."""

    __slots__ = ("cls",)

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if kwargs or not 1 <= len(args) <= 2:
            raise_observed(TypeError, f"fromkeys expected 1 or 2 arguments, got {len(args)}")
        value = args[1] if len(args) == 2 else ConstantVariable(None)
        items = {constant_key(key): value for key in tx.unpack_iterable(args[0])}
        if self.cls is dict:
            return DictVariable(items)
        if self.cls is collections.defaultdict:
            from .default_dicts import DefaultDictVariable

            return DefaultDictVariable(items, ConstantVariable(None))
        return new_ordered_dict(tx, items)

    def reconstruct(self, codegen) -> None:
        codegen.load_const(self.cls)
        codegen.load_attr("fromkeys")


def fromkeys_of(cls: type) -> VariableTracker | None:
    return FromKeysVariable(cls) if cls in (dict, collections.OrderedDict, collections.defaultdict) else None


def new_ordered_dict(tx, items: dict) -> VariableTracker:
    """A new, exact OrderedDict holding `items` (a record with dict storage)."""
    from .user_defined import make_instance

    obj = make_instance(tx, collections.OrderedDict, None)
    obj.storage.items.update(items)
    return obj


def ordered_dict_method(tx, obj, name: str, args) -> VariableTracker | None:
    """`copy()` and `|` of an exact OrderedDict (a subclass's copy runs its own __init__)."""
    from .dict_subclass import _pairs

    if obj.python_type() is not collections.OrderedDict:
        return None
    if name in ("copy", "__copy__") and not args:
        return new_ordered_dict(tx, obj.storage.items)
    if name == "__or__" and len(args) == 1:
        if not isinstance(args[0], DictVariable) and not issubclass(args[0].python_type(), dict):
            return ConstantVariable(NotImplemented)
        result = new_ordered_dict(tx, obj.storage.items)
        result.storage.items.update(_pairs(tx, args, {}, ordered=True))
        return result
    if name == "__ror__" and len(args) == 1 and isinstance(args[0], DictVariable):
        result = new_ordered_dict(tx, args[0].items)
        result.storage.items.update(obj.storage.items)
        return result
    return None
