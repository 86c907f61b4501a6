"""The items of dict, OrderedDict and list subclasses: what the builtin methods do to them.

An object of such a class is a record (user_objects.py) whose `storage` holds its items: a
DictVariable (keys in order; an OrderedDict's order is its insertion order, moved by
`move_to_end`) or a ListVariable. The C methods of the builtin base act on the storage, as
CPython's do; where CPython's own code goes back through the object's special methods (an
OrderedDict subclass's `setdefault`, `update`, `|=` and `__init__` call its `__contains__`,
`__getitem__` and `__setitem__`, on 3.11 to 3.13; dict's `__getitem__` calls `__missing__`),
so does the model, so a class's overrides run where they would.

An existing object's items are read through `StorageItemSource` (`dict.__getitem__(obj, k)`,
bypassing the class's `__getitem__`) with its keys (or length) guarded; a change to them is a
`ReplaceStorage` ledger entry, replayed by clearing and refilling the storage with the
builtin base's own methods, as an object made while tracing is filled when it is rebuilt.
"""

from __future__ import annotations

import collections
import operator
import collections.abc
from typing import Any

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import Source, StorageItemSource
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import DictVariable, ListVariable, TupleVariable
from .iterators import DictViewVariable, ListIteratorVariable, advanced
from .object_keys import key_tracker
from .user_objects import UserDefinedObjectVariable, _lookup_class, raise_observed

OrderedDict = collections.OrderedDict
_DICT_READS = frozenset({"__len__", "__contains__", "get", "keys", "values", "items", "__iter__", "__reversed__"})
_DICT_WRITES = frozenset({"__setitem__", "__delitem__", "clear", "move_to_end", "pop", "popitem", "setdefault",
                          "update", "__init__", "__ior__"})
_LIST_WRITES = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "__setitem__",
                          "__delitem__", "__iadd__", "__init__"})


def new_storage(base: type) -> VariableTracker | None:
    if base is list:
        return ListVariable([])
    if base is dict or base is OrderedDict:
        return DictVariable({})
    return None


def wrap_existing(tx, value: Any, source: Source, base: type) -> UserDefinedObjectVariable:
    """An object of a dict or list subclass the frame can reach: its keys (length) are
    guarded, its items read bypassing the class's `__getitem__`."""
    from .builder import wrap

    cls, line = type(value), tx.output.user_line
    if base is list:
        if _lookup_class(cls, "__len__")[1] is not list:
            raise Unsupported("Unsupported value type",
                              f"{cls.__qualname__} (a list subclass defining __len__) at {source}")
        tx.output.guards.add(GuardKind.LENGTH, source, (cls, len(value)), line)
        items = [wrap(tx, list.__getitem__(value, i), StorageItemSource(source, i, list)) for i in range(len(value))]
        return UserDefinedObjectVariable(value, source, ListVariable(items))
    if _lookup_class(cls, "__iter__")[1] not in (dict, OrderedDict):
        raise Unsupported("Unsupported value type",
                          f"{cls.__qualname__} (a dict subclass defining __iter__) at {source}")
    keys = list(value)
    if not all(isinstance(k, (str, int)) for k in keys):
        raise Unsupported("Unsupported value type", f"{cls.__qualname__} with non-str/int keys at {source}")
    tx.output.guards.add(GuardKind.DICT_KEYS, source, (cls, tuple(keys)), line)
    items = {k: wrap(tx, dict.__getitem__(value, k), StorageItemSource(source, k, dict)) for k in keys}
    return UserDefinedObjectVariable(value, source, DictVariable(items))


_LIST_OPERATORS = {"__add__": operator.add, "__mul__": operator.mul, "__rmul__": operator.mul,
                   "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
                   "__gt__": operator.gt, "__ge__": operator.ge}


def _list_operator(tx, obj: UserDefinedObjectVariable, name: str, other: VariableTracker) -> VariableTracker:
    """list's binary methods on a list subclass object: over its items (a plain list for +
    and *); NotImplemented where `other` is not a list."""
    from .builtins import apply_operator

    if isinstance(other, UserDefinedObjectVariable) and isinstance(other.storage, ListVariable):
        other = other.storage
    is_list = isinstance(other, ListVariable)
    if name in ("__mul__", "__rmul__"):
        if not (other.is_python_constant() and isinstance(other.as_python_constant(), int)):
            return ConstantVariable(NotImplemented)
    elif not is_list:
        return ConstantVariable(NotImplemented)
    return apply_operator(tx, _LIST_OPERATORS[name], ListVariable(list(obj.storage.items)), other)


def storage_method(tx, obj: UserDefinedObjectVariable, owner: type, name: str, args: list,
                   kwargs: dict) -> VariableTracker:
    """`owner.name(obj, *args, **kwargs)` for a C method of dict, OrderedDict or list."""
    if obj.storage is None:
        raise Unsupported("Unsupported method call", f"{owner.__name__}.{name} on {obj}")
    if owner is list:
        if name in _LIST_WRITES:
            _mutating(tx, obj)
        if name == "__init__":
            obj.storage.items[:] = tx.unpack_iterable(args[0]) if args else []
            return ConstantVariable(None)
        if name == "__iadd__":
            obj.storage.call_method(tx, "extend", args, kwargs)
            return obj
        if name == "__iter__":
            return ListIteratorVariable(list(obj.storage.items))
        if name == "__contains__":
            from .builtins import contains

            return ConstantVariable(contains(tx, obj.storage.items, args[0]))
        if name in _LIST_OPERATORS and len(args) == 1 and not kwargs:
            return _list_operator(tx, obj, name, args[0])
        return obj.storage.call_method(tx, name, args, kwargs)
    items: dict = obj.storage.items
    if name in ("move_to_end", "popitem") and owner is OrderedDict and set(kwargs) <= {"last"}:
        args = [*args, *kwargs.values()]
    elif kwargs and name not in ("update", "__init__"):
        raise Unsupported("Unsupported exception handling", f"{owner.__name__}.{name}() takes no keyword arguments")
    if name == "__getitem__":
        key = _key(args[0])
        if key in items:
            return items[key]
        if obj.has_special("__missing__"):
            return obj.call_special(tx, "__missing__", args, {})
        raise_observed(KeyError, key)
    if name in _DICT_READS:
        return _read(tx, obj, owner, name, args)
    if name in ("__eq__", "__ne__"):
        equal = _equal(tx, obj, owner, args[0])
        if equal is NotImplemented:
            return ConstantVariable(NotImplemented)
        return ConstantVariable(equal == (name == "__eq__"))
    if name == "copy" and owner is dict:
        return DictVariable(dict(items))
    if owner is OrderedDict and name in ("copy", "__copy__", "__or__", "__ror__"):
        from .dict_views import ordered_dict_method

        result = ordered_dict_method(tx, obj, name, args)
        if result is not None:
            return result
    if name not in _DICT_WRITES:
        raise Unsupported("Unsupported method call", f"{owner.__name__}.{name} on {obj}")
    if owner is OrderedDict and name in ("setdefault", "update", "__init__", "__ior__"):
        return _ordered_through_protocol(tx, obj, name, args, kwargs)
    _mutating(tx, obj)
    if name == "__setitem__":
        items[_key(args[0])] = args[1]
    elif name == "__delitem__":
        key = _key(args[0])
        if key not in items:
            raise_observed(KeyError, key)
        del items[key]
    elif name == "clear":
        items.clear()
    elif name == "move_to_end":
        _move_to_end(items, args)
    elif name == "pop":
        key = _key(args[0])
        if key in items:
            return items.pop(key)
        if len(args) == 2:
            return args[1]
        raise_observed(KeyError, key)
    elif name == "popitem":
        if not items:
            raise_observed(KeyError, "dictionary is empty" if owner is OrderedDict
                           else "popitem(): dictionary is empty")
        last = args[0].as_python_constant() if args else True  # OrderedDict's; dict's takes none
        key = next(reversed(items)) if last else next(iter(items))
        return TupleVariable([key_tracker(key), items.pop(key)])
    elif name == "setdefault":
        key = _key(args[0])
        if key not in items:
            items[key] = args[1] if len(args) > 1 else ConstantVariable(None)
        return items[key]
    else:  # update, __init__, __ior__ of dict: straight into the storage
        for key, value in _pairs(tx, args, kwargs, ordered=False):
            items[key] = value
        if name == "__ior__":
            return obj
    return ConstantVariable(None)


def _mutating(tx, obj: UserDefinedObjectVariable) -> None:
    if obj.source is not None:
        tx.output.side_effects.mutated_storage(obj)


def _key(value: VariableTracker) -> Any:
    if not value.is_python_constant():
        raise Unsupported("Unsupported builtin call", f"a dict key that is not a constant: {value}")
    key = value.as_python_constant()
    try:
        hash(key)
    except TypeError:
        raise Unsupported("Unsupported exception handling", f"unhashable dict key {key!r}") from None
    return key


def _pairs(tx, args: list, kwargs: dict, ordered: bool) -> list[tuple[Any, VariableTracker]]:
    """The (key, value) pairs `update(*args, **kwargs)` adds, in order, read as CPython reads
    them: straight from a dict's storage only where it would (dict.update: a dict whose
    iteration is dict's; OrderedDict's update: an exact dict), else by `keys()` and the
    argument's own `__getitem__`, else as pairs."""
    if len(args) > 1:
        raise Unsupported("Unsupported exception handling", f"update expected at most 1 argument, got {len(args)}")
    pairs = []
    if args:
        other = args[0]
        storage = other.storage if isinstance(other, UserDefinedObjectVariable) else None
        if isinstance(other, DictVariable):
            pairs += list(other.items.items())
        elif isinstance(storage, DictVariable) and not ordered \
                and _lookup_class(other.python_type(), "__iter__")[1] is dict:
            pairs += list(storage.items.items())
        elif isinstance(other, UserDefinedObjectVariable) and other.has_attribute(tx, "keys"):
            # Mapping.keys() is a KeysView, whose iteration is the mapping's own
            keys = other if _lookup_class(other.python_type(), "keys")[0] is collections.abc.Mapping.keys \
                else other.call_method(tx, "keys", [], {})
            for key in tx.unpack_iterable(keys):
                pairs.append((_key(key), other.call_method(tx, "__getitem__", [key], {})))
        else:
            for pair in tx.unpack_iterable(other):
                key, value = tx.unpack_iterable(pair)
                pairs.append((_key(key), value))
    pairs += list(kwargs.items())
    return pairs


def _read(tx, obj: UserDefinedObjectVariable, owner: type, name: str, args: list) -> VariableTracker:
    items = obj.storage.items
    if name == "__len__":
        return ConstantVariable(len(items))
    if name == "__contains__":
        return ConstantVariable(_key(args[0]) in items)
    if name == "get":
        if not 1 <= len(args) <= 2:
            raise Unsupported("Unsupported exception handling", f"get expected 1 or 2 arguments, got {len(args)}")
        return items.get(_key(args[0]), args[1] if len(args) == 2 else ConstantVariable(None))
    if name == "__iter__":
        return ListIteratorVariable([key_tracker(k) for k in items])
    if name == "__reversed__":
        return ListIteratorVariable([key_tracker(k) for k in reversed(items)])
    return StorageViewVariable(obj, owner, name)


class StorageViewVariable(DictViewVariable):
    """`obj.keys()` (values, items) of a dict subclass: a live view of the object itself."""

    __slots__ = ("obj", "owner")

    def __init__(self, obj: UserDefinedObjectVariable, owner: type, kind: str) -> None:
        super().__init__(obj.storage, kind)
        self.obj, self.owner = obj, owner

    def python_type(self) -> type:
        return type(getattr(self.owner(), self.kind)())  # odict_keys for an OrderedDict

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, codegen) -> None:
        codegen.load_const(self.owner)
        codegen.load_method(self.kind)
        codegen.reconstruct(self.obj)
        codegen.call(1)


def _equal(tx, obj: UserDefinedObjectVariable, owner: type, other: VariableTracker) -> Any:
    """dict.__eq__ (OrderedDict's also compares the order when both are ordered)."""
    from .builtins import contains

    if isinstance(other, DictVariable):
        theirs, ordered = other.items, False
    elif isinstance(other, UserDefinedObjectVariable) and isinstance(other.storage, DictVariable):
        theirs, ordered = other.storage.items, owner is OrderedDict and issubclass(other.python_type(), OrderedDict)
    else:
        return NotImplemented
    mine = obj.storage.items
    if set(mine) != set(theirs) or (ordered and list(mine) != list(theirs)):
        return False
    return all(contains(tx, [theirs[key]], value) for key, value in mine.items())


def _move_to_end(items: dict, args: list) -> None:
    key = _key(args[0])
    last = args[1].as_python_constant() if len(args) > 1 else True
    if key not in items:
        raise_observed(KeyError, key)
    value = items.pop(key)
    if last:
        items[key] = value
    else:
        rest = dict(items)
        items.clear()
        items[key] = value
        items.update(rest)


def _ordered_through_protocol(tx, obj: UserDefinedObjectVariable, name: str, args: list,
                              kwargs: dict) -> VariableTracker:
    """OrderedDict's `update`, `__init__`, `|=` and `setdefault` on a subclass go through the
    object's own special methods (its `pop` and `popitem` do not)."""
    if name in ("update", "__init__", "__ior__"):
        for key, value in _pairs(tx, args, kwargs, ordered=True):
            obj.call_special(tx, "__setitem__", [key_tracker(key), value], {})
        return obj if name == "__ior__" else ConstantVariable(None)
    key, default = args[0], args[1] if len(args) > 1 else ConstantVariable(None)  # setdefault
    if obj.call_special(tx, "__contains__", [key], {}).bool_value(tx):
        return obj.call_special(tx, "__getitem__", [key], {})
    obj.call_special(tx, "__setitem__", [key, default], {})
    return default


# ---- after the graph --------------------------------------------------------------------------

def _set_items(obj: Any, base: type, items: dict, replace: bool) -> None:
    """Called by generated code: the dict storage of `obj`, set with the base class's own
    methods so that the subclass's `__setitem__` does not run again."""
    if replace:
        base.clear(obj)
    for key, value in items.items():
        base.__setitem__(obj, key, value)


def _set_list(obj: Any, items: list) -> None:
    """Called by generated code: the list storage of `obj`."""
    list.__setitem__(obj, slice(None), items)


def _emit_fill(codegen, obj: UserDefinedObjectVariable, load_obj, load_items, replace: bool) -> None:
    if isinstance(obj.storage, ListVariable):
        codegen.load_callable_const(_set_list)
        load_obj()
        load_items()
        codegen.call(2)
    else:
        base = OrderedDict if isinstance(obj.value, OrderedDict) else dict
        codegen.load_callable_const(_set_items)
        load_obj()
        codegen.load_const(base)
        load_items()
        codegen.load_const(replace)
        codegen.call(4)
    codegen.pop_top()


def fill_storage(codegen, obj: UserDefinedObjectVariable) -> None:
    """The items of an object being rebuilt (it is held by the codegen)."""
    if obj.storage.items:
        _emit_fill(codegen, obj, lambda: codegen.reconstruct(obj), lambda: codegen.build_items(obj.storage),
                   replace=False)


def replay_storage(codegen, obj: UserDefinedObjectVariable, items: str) -> None:
    """The items of an existing object, as the trace left them (loaded into `items`)."""
    _emit_fill(codegen, obj, lambda: codegen.reconstruct_source(obj), lambda: codegen.load_local(items),
               replace=True)


# ---- dict key iterators the frame receives ------------------------------------------------------

# A dict's values can change while it is iterated, and its iterator does not say which dict
# it walks: only key iterators are traced (their keys are read ahead), and only while the
# trace has changed no dict (or instance __dict__, or globals) that could be the one walked.
DICT_ITERATORS = (type(iter({})), type(reversed({})))


def wrap_dict_iterator(tx, value: Any, source: Source) -> VariableTracker:
    """A dict key iterator the frame received (a comprehension's `.0` at a graph break):
    the keys left, read without advancing it (`__reduce__` lists the rest from a copy); what
    the trace takes is taken from the real one after the graph."""
    from ..source import IteratorStateSource
    from .builder import wrap

    tx.output.guards.add(GuardKind.TYPE_MATCH, source, type(value), tx.output.user_line)
    remaining = wrap(tx, value.__reduce__()[1][0], IteratorStateSource(source, "sequence"))
    iterator = DictIteratorInput(list(remaining.items), source, type(value), tx.output)
    tx.output.side_effects.advanced_iterator(iterator)
    return iterator


class DictIteratorInput(ListIteratorVariable):
    """A real dict key iterator: it has no `__setstate__`, so the ledger advances it by
    taking the keys the trace consumed."""

    __slots__ = ("kind", "output")

    def __init__(self, keys: list[VariableTracker], source: Source, kind: type, output) -> None:
        super().__init__(keys, source=source)
        self.kind, self.output = kind, output

    def python_type(self) -> type:
        return self.kind

    def next_item(self, *args) -> VariableTracker | None:
        from ..side_effects import ReplaceDict, ReplaceStorage, StoreAttr, StoreGlobal

        if any(isinstance(e, (ReplaceDict, ReplaceStorage, StoreAttr, StoreGlobal)) for e in self.output.side_effects):
            raise Unsupported("Unsupported value type",
                              "a dict key iterator, after the trace changed a dict it may walk")
        return super().next_item(*args)

    def reconstruct(self, codegen) -> None:
        self.source.reconstruct(codegen)  # the real one, which the ledger advances

    def replay_advance(self, codegen) -> None:
        if self.index:
            codegen.load_callable_const(advanced)  # takes from the real one what the trace took
            codegen.reconstruct_source(self)
            codegen.load_const(self.index)
            codegen.call(2)
            codegen.pop_top()
