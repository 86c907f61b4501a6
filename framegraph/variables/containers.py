"""Tuples, lists and dicts whose items are VariableTrackers.

Containers made while tracing are plain data here: `append` edits the tracker. A container
that existed before the call (it has a source) is the caller's object; changing it is a side
effect the ledger must replay, so until the ledger exists such a change is Unsupported rather
than silently lost.
"""

from __future__ import annotations

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable


class BaseSequenceVariable(VariableTracker):
    __slots__ = ("items",)
    kind: type = tuple

    def __init__(self, items: list[VariableTracker], source=None) -> None:
        super().__init__(source)
        self.items = list(items)

    def python_type(self) -> type:
        return self.kind

    def children(self) -> list[VariableTracker]:
        return self.items

    def is_python_constant(self) -> bool:
        return all(item.is_python_constant() for item in self.items)

    def as_python_constant(self):
        return self.kind(item.as_python_constant() for item in self.items)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(self.kind, name, None)):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"{self.kind.__name__}.{name}")

    def getitem(self, tx, index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant()
        if isinstance(key, slice):
            return type(self)(self.items[key])
        try:
            return self.items[key]
        except (IndexError, TypeError) as error:
            raise Unsupported("Unsupported exception handling",
                              f"{self.kind.__name__}[{key!r}] raised {type(error).__name__}") from None

    def bool_value(self, tx) -> bool:
        return bool(self.items)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name in ("index", "count") and len(args) == 1 and args[0].is_python_constant() \
                and self.is_python_constant():
            return ConstantVariable(getattr(self.as_python_constant(), name)(args[0].as_python_constant()))
        raise Unsupported("Unsupported method call", f"{self.kind.__name__}.{name}")

    def reconstruct(self, codegen) -> None:
        # A container with a source is the caller's unmodified object: hand back that object.
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(self.kind, len(self.items))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(BaseSequenceVariable):
    __slots__ = ()
    kind = tuple


def _dict_setitem(d: "DictVariable", tx, args, kwargs) -> VariableTracker:
    d.items[args[0].as_python_constant()] = args[1]
    return ConstantVariable(None)


def _dict_pop(d: "DictVariable", tx, args, kwargs) -> VariableTracker:
    key = args[0].as_python_constant()
    if key in d.items:
        return d.items.pop(key)
    if len(args) == 2:
        return args[1]
    raise Unsupported("Unsupported exception handling", f"dict.pop({key!r}) raised KeyError")


def _dict_update(d: "DictVariable", tx, args, kwargs) -> VariableTracker:
    for other in args:
        if not isinstance(other, DictVariable):
            raise Unsupported("Unsupported method call", f"dict.update from {other}")
        d.items.update(other.items)
    d.items.update(kwargs)
    return ConstantVariable(None)


def _dict_setdefault(d: "DictVariable", tx, args, kwargs) -> VariableTracker:
    key = args[0].as_python_constant()
    if key not in d.items:
        d.items[key] = args[1] if len(args) > 1 else ConstantVariable(None)
    return d.items[key]


def _dict_clear(d: "DictVariable", tx, args, kwargs) -> VariableTracker:
    d.items.clear()
    return ConstantVariable(None)


def _dict_delitem(d: "DictVariable", tx, args, kwargs) -> VariableTracker:
    key = args[0].as_python_constant()
    if key not in d.items:
        raise Unsupported("Unsupported exception handling", f"del dict[{key!r}] raised KeyError")
    del d.items[key]
    return ConstantVariable(None)


_DICT_MUTATORS = {"__setitem__": _dict_setitem, "pop": _dict_pop, "update": _dict_update,
                  "setdefault": _dict_setdefault, "clear": _dict_clear, "__delitem__": _dict_delitem}


class NamedTupleVariable(TupleVariable):
    """A namedtuple or a struct sequence (`torch.return_types.max`): a tuple with field names."""

    __slots__ = ("tuple_type",)

    def __init__(self, items: list[VariableTracker], tuple_type: type, source=None) -> None:
        super().__init__(items, source)
        self.tuple_type = tuple_type

    def python_type(self) -> type:
        return self.tuple_type

    def as_python_constant(self):
        values = [item.as_python_constant() for item in self.items]
        return self.tuple_type(*values) if self._is_namedtuple() else self.tuple_type(values)

    def _is_namedtuple(self) -> bool:
        return hasattr(self.tuple_type, "_fields")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        fields = getattr(self.tuple_type, "__match_args__", ())
        if name in fields:
            return self.items[fields.index(name)]
        raise Unsupported("Unsupported attribute access", f"{self.tuple_type.__name__}.{name}")

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        # A namedtuple's own __new__ is `tuple.__new__(cls, (fields...))` written in Python;
        # calling tuple.__new__ directly builds the same object without a Python frame. A
        # struct sequence is built from one tuple by its type.
        if self._is_namedtuple():
            codegen.load_callable_const(tuple.__new__)
            codegen.load_const(self.tuple_type)
        else:
            codegen.load_callable_const(self.tuple_type)
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(tuple, len(self.items))
        codegen.call(2 if self._is_namedtuple() else 1)


class ListVariable(BaseSequenceVariable):
    __slots__ = ()
    kind = list

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name in ("append", "extend", "insert", "pop", "clear", "reverse", "__setitem__", "__delitem__",
                    "remove", "sort"):
            if self.source is not None:
                tx.output.side_effects.mutated_list(self)
            return self._mutate(tx, name, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def _mutate(self, tx, name: str, args, kwargs) -> VariableTracker:
        if kwargs and name != "sort":
            raise Unsupported("Unsupported method call", f"list.{name} with keyword arguments")
        if name == "append":
            self.items.append(args[0])
        elif name == "extend":
            self.items.extend(tx.unpack_iterable(args[0]))
        elif name == "insert":
            self.items.insert(args[0].as_python_constant(), args[1])
        elif name == "pop":
            return self.items.pop(*(a.as_python_constant() for a in args))
        elif name == "clear":
            self.items.clear()
        elif name == "reverse":
            self.items.reverse()
        elif name == "__setitem__":
            key = args[0].as_python_constant()
            self.items[key] = tx.unpack_iterable(args[1]) if isinstance(key, slice) else args[1]
        elif name == "__delitem__":
            del self.items[args[0].as_python_constant()]
        elif name == "remove":
            target = args[0].as_python_constant()
            index = next((i for i, item in enumerate(self.items)
                          if item.is_python_constant() and item.as_python_constant() == target), None)
            if index is None:
                raise Unsupported("Unsupported exception handling", "list.remove(x): x not in list")
            del self.items[index]
        elif name == "sort":
            if args or not all(item.is_python_constant() for item in self.items):
                raise Unsupported("Unsupported method call", "list.sort of non-constant items")
            keyed = {k: v.as_python_constant() for k, v in kwargs.items()}
            order = sorted(range(len(self.items)), key=lambda i: self.items[i].as_python_constant(),
                           reverse=bool(keyed.pop("reverse", False)))
            if keyed:
                raise Unsupported("Unsupported method call", "list.sort with key=")
            self.items = [self.items[i] for i in order]
        return ConstantVariable(None)


class DictVariable(VariableTracker):
    """A dict with constant keys, in insertion order like the real one."""

    __slots__ = ("items",)

    def __init__(self, items: dict, source=None) -> None:
        super().__init__(source)
        self.items = dict(items)

    def python_type(self) -> type:
        return dict

    def children(self) -> list[VariableTracker]:
        return list(self.items.values())

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(dict, name, None)):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"dict.{name}")

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        k = key.as_python_constant()
        try:
            return self.items[k]
        except (KeyError, TypeError) as error:  # a missing or unhashable key: eager raises it
            raise Unsupported("Unsupported exception handling",
                              f"dict[{k!r}] raised {type(error).__name__}") from None

    def bool_value(self, tx) -> bool:
        return bool(self.items)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "get" and 1 <= len(args) <= 2:
            default = args[1] if len(args) == 2 else ConstantVariable(None)
            return self.items.get(args[0].as_python_constant(), default)
        if name in ("keys", "values", "items") and not args:
            from .iterators import DictViewVariable

            return DictViewVariable(self, name)
        if name in _DICT_MUTATORS:
            if self.source is not None:
                tx.output.side_effects.mutated_dict(self)
            return _DICT_MUTATORS[name](self, tx, args, kwargs)
        raise Unsupported("Unsupported method call", f"dict.{name}")

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        for key, value in self.items.items():
            codegen.load_const(key)
            codegen.reconstruct(value)
        codegen.build(dict, len(self.items))

    def __repr__(self) -> str:
        return f"DictVariable({self.items!r})"


class SetVariable(VariableTracker):
    """A set made while tracing, of constants (what a set can hold without hashing data)."""

    __slots__ = ("items",)

    def __init__(self, items: list[VariableTracker], source=None) -> None:
        super().__init__(source)
        self.items: list[VariableTracker] = []
        for item in items:
            self.add(item)

    def add(self, item: VariableTracker) -> None:
        if not item.is_python_constant():
            raise Unsupported("Unsupported builtin call", f"a set element that is not a constant: {item}")
        value = item.as_python_constant()
        if all(existing.as_python_constant() != value for existing in self.items):
            self.items.append(item)

    def python_type(self) -> type:
        return set

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        return {item.as_python_constant() for item in self.items}

    def bool_value(self, tx) -> bool:
        return bool(self.items)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(set, name, None)):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"set.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "add" and len(args) == 1:
            self.add(args[0])
            return ConstantVariable(None)
        if name == "discard" and len(args) == 1:
            value = args[0].as_python_constant()
            self.items = [item for item in self.items if item.as_python_constant() != value]
            return ConstantVariable(None)
        if name in ("update", "__ior__") and len(args) == 1:
            for item in tx.unpack_iterable(args[0]):
                self.add(item)
            return ConstantVariable(None)
        if not kwargs and all(a.is_python_constant() for a in args):
            # Everything else of a set of constants is a pure function of its value.
            result = getattr(self.as_python_constant(), name)(*(a.as_python_constant() for a in args))
            if isinstance(result, set):
                return SetVariable([ConstantVariable(v) for v in result])
            return ConstantVariable(result)
        raise Unsupported("Unsupported method call", f"set.{name}")

    def reconstruct(self, codegen) -> None:
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(set, len(self.items))
