"""Dicts and sets whose keys are constants, or objects hashed by identity (object_keys.py),
with CPython's semantics (see containers.py).

A dict keeps insertion order, which its tracker keeps too. A set iterates (and pops) in the
order of its hash table; the tracker keeps a real set of the same constants, built by the
same insertions and removals, so its order is eager's.
"""

from __future__ import annotations

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker, is_method_of
from .constant import ConstantVariable
from .containers import TupleVariable, raise_observed
from .object_keys import holds_object_keys, key_tracker, object_key, reconstruct_key, unordered


def constant_key(value: VariableTracker, tx=None) -> object:
    """The key a dict or set holds for `value`: the constant itself, or an ObjectKey for an
    object hashed by identity (object_keys.py)."""
    from .tensor import SymNodeVariable

    if isinstance(value, SymNodeVariable):
        value = ConstantVariable(value.as_python_constant())  # a key needs the value: guarded to it
    if not value.is_python_constant():
        if getattr(value.python_type(), "__hash__", None) is None:
            raise_observed(TypeError, f"unhashable type: '{value.python_type().__name__}'")
        return object_key(tx, value)
    key = value.as_python_constant()
    try:
        hash(key)
    except TypeError as error:
        raise_observed(TypeError, str(error))
    return key


def _for_each(tx, iterable: VariableTracker, action) -> None:
    """Calls `action(item)` for each item as the iterable produces it."""
    from .iterators import get_iterator

    iterator = get_iterator(tx, iterable)
    while (item := iterator.next_item(tx)) is not None:
        action(item)


# ---- dicts ------------------------------------------------------------------------------------

def _dict_setitem(d: "DictVariable", tx, key, value) -> None:
    d.items[constant_key(key, tx)] = value


def _dict_delitem(d: "DictVariable", tx, key) -> None:
    k = constant_key(key, tx)
    if k not in d.items:
        raise_observed(KeyError, k)
    del d.items[k]


def _dict_pop(d: "DictVariable", tx, key, *default) -> VariableTracker:
    k = constant_key(key, tx)
    if k in d.items:
        return d.items.pop(k)
    if default:
        return default[0]
    raise_observed(KeyError, k)


def _dict_popitem(d: "DictVariable", tx) -> VariableTracker:
    if not d.items:
        raise_observed(KeyError, "popitem(): dictionary is empty")
    key, value = d.items.popitem()  # last in, first out
    return TupleVariable([key_tracker(key), value])


def _dict_setdefault(d: "DictVariable", tx, key, default=None) -> VariableTracker:
    k = constant_key(key, tx)
    if k not in d.items:
        d.items[k] = default if default is not None else ConstantVariable(None)
    return d.items[k]


def _dict_update(d: "DictVariable", tx, *others, **kwargs) -> None:
    if len(others) > 1:
        raise_observed(TypeError, f"update expected at most 1 argument, got {len(others)}")
    from .user_objects import UserDefinedObjectVariable

    for other in others:
        if isinstance(other, DictVariable):
            d.items.update(other.items)
        elif isinstance(other, UserDefinedObjectVariable):
            # a mapping (a dict subclass, a Counter, a ChainMap): read as CPython reads it
            from .dict_subclass import _pairs

            d.items.update(_pairs(tx, [other], {}, ordered=False))
        else:
            _update_from_pairs(d, tx, other)
    d.items.update(kwargs)


def _update_from_pairs(d: "DictVariable", tx, pairs: VariableTracker) -> None:
    from .iterators import unpack

    count = [0]

    def add(pair: VariableTracker) -> None:
        items = unpack(tx, pair)
        if len(items) != 2:
            raise_observed(ValueError, f"dictionary update sequence element #{count[0]} has length "
                                       f"{len(items)}; 2 is required")
        d.items[constant_key(items[0], tx)] = items[1]
        count[0] += 1

    _for_each(tx, pairs, add)


def _dict_clear(d: "DictVariable", tx) -> None:
    d.items.clear()


_DICT_MUTATORS = {"__setitem__": _dict_setitem, "__delitem__": _dict_delitem, "pop": _dict_pop,
                  "popitem": _dict_popitem, "setdefault": _dict_setdefault, "update": _dict_update,
                  "clear": _dict_clear, "__ior__": _dict_update}


class DictVariable(VariableTracker):
    """A dict with constant (or identity-hashed object) keys, in insertion order like the real one."""

    __slots__ = ("items",)

    def __init__(self, items: dict, source=None) -> None:
        super().__init__(source)
        self.items = dict(items)

    def python_type(self) -> type:
        return dict

    def is_python_constant(self) -> bool:
        return all(value.is_python_constant() for value in self.items.values()) \
            and not any(holds_object_keys(key) for key in self.items)  # as a list of constants is

    def as_python_constant(self):
        return {key: value.as_python_constant() for key, value in self.items.items()}

    def children(self) -> list[VariableTracker]:
        return [*(key_tracker(k) for k in self.items if holds_object_keys(k)), *self.items.values()]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if is_method_of(dict, name):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        k = constant_key(key, tx)
        if k not in self.items:
            raise_observed(KeyError, k)
        return self.items[k]

    def bool_value(self, tx) -> bool:
        return bool(self.items)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        mutator = _DICT_MUTATORS.get(name)
        if mutator is not None:
            if kwargs and name != "update":
                raise Unsupported("Unsupported method call", f"dict.{name} with keyword arguments")
            if self.source is not None:
                tx.output.side_effects.mutated_dict(self)
            try:
                result = mutator(self, tx, *args, **kwargs)
            except TypeError as error:  # wrong number of arguments: our call of the helper
                raise Unsupported("Unsupported method call", f"dict.{name}: {error}") from None
            if name == "__ior__":
                return self
            return result if result is not None else ConstantVariable(None)
        if kwargs:
            raise Unsupported("Unsupported method call", f"dict.{name} with keyword arguments")
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(constant_key(args[0], tx) in self.items)
        if name == "get" and 1 <= len(args) <= 2:
            default = args[1] if len(args) == 2 else ConstantVariable(None)
            return self.items.get(constant_key(args[0], tx), default)
        if name == "copy" and not args:
            return DictVariable(self.items)
        if name == "__or__" and len(args) == 1 and isinstance(args[0], DictVariable):
            return DictVariable({**self.items, **args[0].items})
        if name in ("keys", "values", "items") and not args:
            from .iterators import DictViewVariable

            return DictViewVariable(self, name)
        raise Unsupported("Unsupported method call", f"dict.{name}")

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        for key, value in self.items.items():
            reconstruct_key(codegen, key)
            codegen.reconstruct(value)
        codegen.build(dict, len(self.items))

    def __repr__(self) -> str:
        return f"DictVariable({self.items!r})"


# ---- sets -------------------------------------------------------------------------------------

# Methods of a set that leave it unchanged and return a new value; applied to the real set.
_SET_QUERIES = frozenset({"union", "intersection", "difference", "symmetric_difference", "issubset",
                          "issuperset", "isdisjoint", "__or__", "__and__", "__sub__", "__xor__",
                          "__le__", "__lt__", "__ge__", "__gt__", "__eq__", "__ne__"})
_SET_UPDATES = {"update": "update", "intersection_update": "intersection_update",
                "difference_update": "difference_update",
                "symmetric_difference_update": "symmetric_difference_update"}


_SET_MUTATORS = frozenset({"add", "discard", "remove", "pop", "clear", "update", "intersection_update",
                           "difference_update", "symmetric_difference_update", "__ior__", "__iand__",
                           "__isub__", "__ixor__"})


class SetVariable(VariableTracker):
    """A set of constants (or identity-hashed objects), made while tracing or the caller's (whose
    changes are replayed after the graph)."""

    __slots__ = ("values",)

    def __init__(self, items: list[VariableTracker], source=None) -> None:
        super().__init__(source)
        self.values: set = set()
        for item in items:
            self.add(item)

    @property
    def items(self) -> list[VariableTracker]:
        """The elements in the order iterating the real set gives them."""
        if unordered(self.values):
            raise Unsupported("Unsupported builtin call", "iterating a set of objects made while tracing (its "
                                                          "order follows their addresses, which do not exist yet)")
        return [key_tracker(value) for value in self.values]

    def add(self, item: VariableTracker, tx=None) -> None:
        self.values.add(constant_key(item, tx))

    def python_type(self) -> type:
        return set

    def is_python_constant(self) -> bool:
        return not any(holds_object_keys(value) for value in self.values)

    def as_python_constant(self):
        return set(self.values)

    def bool_value(self, tx) -> bool:
        return bool(self.values)

    def children(self) -> list[VariableTracker]:
        return [key_tracker(value) for value in self.values if holds_object_keys(value)]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if is_method_of(set, name):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def _constants_of(self, tx, iterable: VariableTracker) -> list:
        from .iterators import unpack

        return [constant_key(item, tx) for item in unpack(tx, iterable)]

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if kwargs:
            raise Unsupported("Unsupported method call", f"set.{name} with keyword arguments")
        if self.source is not None and name in _SET_MUTATORS:
            tx.output.side_effects.replayed_by(self)  # the caller's set: changed after the graph
        if name == "add" and len(args) == 1:
            self.add(args[0], tx)
        elif name == "discard" and len(args) == 1:
            self.values.discard(constant_key(args[0], tx))
        elif name == "remove" and len(args) == 1:
            key = constant_key(args[0], tx)
            if key not in self.values:
                raise_observed(KeyError, key)
            self.values.remove(key)
        elif name == "pop" and not args:
            if not self.values:
                raise_observed(KeyError, "pop from an empty set")
            if unordered(self.values):
                raise Unsupported("Unsupported builtin call", "pop() of a set of objects made while tracing")
            return key_tracker(self.values.pop())  # the element eager pops: same table
        elif name == "clear" and not args:
            self.values.clear()
        elif name in _SET_UPDATES:
            # Each argument is read whole before the set changes, as CPython reads it.
            getattr(self.values, _SET_UPDATES[name])(*(self._constants_of(tx, a) for a in args))
        elif name in ("__ior__", "__iand__", "__isub__", "__ixor__") and len(args) == 1:
            getattr(self.values, name)(set(self._constants_of(tx, args[0])))
            return self
        elif name == "copy" and not args:
            return set_of(set(self.values))
        elif name == "__len__" and not args:
            return ConstantVariable(len(self.values))
        elif name == "__contains__" and len(args) == 1:
            return ConstantVariable(constant_key(args[0], tx) in self.values)
        elif name in _SET_QUERIES:
            operands = [set(self._constants_of(tx, a)) if name.startswith("__") else self._constants_of(tx, a)
                        for a in args]
            result = getattr(self.values, name)(*operands)
            return set_of(result) if isinstance(result, set) else ConstantVariable(result)
        else:
            raise Unsupported("Unsupported method call", f"set.{name}")
        return ConstantVariable(None)

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        self._build(codegen)

    def _build(self, codegen) -> None:
        for value in self.values:
            reconstruct_key(codegen, value)
        codegen.build(set, len(self.values))

    def replay_changes(self, codegen) -> None:
        """The caller's set gets the trace's contents: `s.clear(); s.update({...})`."""
        from ..bytecode import emit

        codegen.reconstruct_source(self)
        codegen.append(*emit.create_load_method("clear"), *emit.create_call(0))
        codegen.pop_top()
        codegen.reconstruct_source(self)
        codegen.append(*emit.create_load_method("update"))
        self._build(codegen)
        codegen.append(*emit.create_call(1))
        codegen.pop_top()

    def __repr__(self) -> str:
        return f"SetVariable({self.values!r})"


def set_of(values: set) -> SetVariable:
    """A tracker for a set computed at trace time (kept as it is: its order is eager's)."""
    result = SetVariable([])
    result.values = values
    return result
