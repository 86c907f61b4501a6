"""Dicts keyed by tensors: an optimizer's `state`, caches keyed by a parameter.

A tensor hashes by identity, so such a dict cannot be guarded by spelling its keys as
constants (the DICT_KEYS guard of dicts.py). Instead each existing key is pinned by
identity: the dict's length and, for every position, the very key object found there
(`list(d.keys())[i] is <that object>`, one read of the key list per check). A value is
read, and wrapped with its guards, only when the trace looks it up, through
`list(d.values())[i]`: with the keys pinned, position i always holds that key's value.

A tensor used to look a key up is pinned too, so the answer "this parameter is (not) in the
dict" holds on every call the entry serves. A `defaultdict` makes the missing value with its
factory, as `__missing__` does; keys added or overwritten while tracing are stored into the
real dict after the graph, in the order the trace stored them.
"""

from __future__ import annotations

import collections
from typing import Any

import torch

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, DictEntriesSource, ItemSource, Source
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable
from .tensor import TensorVariable

_KINDS = (dict, collections.defaultdict)


def is_tensor_keyed(value: Any) -> bool:
    """A dict or defaultdict this tracker serves: every key a tensor, or a defaultdict with
    no keys yet (an optimizer's state before the first step)."""
    kind = type(value)
    if kind not in _KINDS:
        return False
    if not value:
        return kind is collections.defaultdict
    return all(type(key) in (torch.Tensor, torch.nn.Parameter) for key in value)


class _Entry:
    """One key: the tracker of the key (a tensor, or a constant), its value's tracker (None
    until read, for a key the dict had before the call) and, for such a key, the real key
    object and its position."""

    __slots__ = ("key", "value", "real", "position")

    def __init__(self, key: VariableTracker | None, value: VariableTracker | None,
                 real: Any = None, position: int | None = None) -> None:
        self.key, self.value, self.real, self.position = key, value, real, position


class TensorKeyedDictVariable(VariableTracker):
    __slots__ = ("kind", "real", "entries", "stored")

    def __init__(self, kind: type, real: dict, source: Source | None = None) -> None:
        super().__init__(source)
        self.kind = kind
        self.real = real  # the dict the frame holds, read while tracing only
        self.entries: list[_Entry] = []
        self.stored: list[_Entry] = []  # entries the trace stored, in the order of their first store

    @classmethod
    def wrap(cls, tx, value: dict, source: Source) -> "TensorKeyedDictVariable":
        guards, line = tx.output.guards, tx.output.user_line
        guards.add(GuardKind.LENGTH, source, (type(value), len(value)), line)
        keys = DictEntriesSource(source, "keys")
        variable = cls(type(value), value, source)
        for position, key in enumerate(value):
            guards.add(GuardKind.ID_MATCH, ItemSource(keys, position), key, line)
            variable.entries.append(_Entry(None, None, key, position))
        return variable

    def python_type(self) -> type:
        return self.kind

    # ---- lookup ---------------------------------------------------------------------------

    def _find(self, tx, key: VariableTracker) -> _Entry | None:
        if isinstance(key, TensorVariable):
            for entry in self.entries:
                if entry.key is key:
                    return entry
            if key.source is None:
                return None  # made in the graph: a new object, not a key the dict had
            real = tx.output.real_tensor(key)
            tx.output.guards.add(GuardKind.ID_MATCH, key.source, real, tx.output.user_line)
            for entry in self.entries:
                if entry.real is real:
                    entry.key = key
                    return entry
            return None
        if key.is_python_constant():
            constant = key.as_python_constant()
            try:
                hash(constant)
            except TypeError as error:
                from .containers import raise_observed

                raise_observed(TypeError, str(error))
            for entry in self.entries:
                if isinstance(entry.key, ConstantVariable) and entry.key.as_python_constant() == constant:
                    return entry
            return None
        raise Unsupported("Unsupported builtin call", f"a key of a tensor-keyed dict that is {key}")

    def _value(self, tx, entry: _Entry) -> VariableTracker:
        if entry.value is None:
            from .builder import wrap

            entry.value = wrap(tx, list(self.real.values())[entry.position],
                               ItemSource(DictEntriesSource(self.source, "values"), entry.position))
        return entry.value

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        entry = self._find(tx, key)
        if entry is not None:
            return self._value(tx, entry)
        if self.kind is not collections.defaultdict:
            raise Unsupported("Unsupported builtin call", "a missing key of a tensor-keyed dict (KeyError)")
        factory = self._factory(tx)
        if factory.is_python_constant() and factory.as_python_constant() is None:
            raise Unsupported("Unsupported builtin call", "a missing key of a defaultdict without a factory")
        value = factory.call_function(tx, [], {})
        self._store(tx, key, value)
        return value

    def _factory(self, tx) -> VariableTracker:
        from .builder import wrap

        return wrap(tx, self.real.default_factory, AttrSource(self.source, "default_factory"))

    def _store(self, tx, key: VariableTracker, value: VariableTracker) -> None:
        if not isinstance(key, TensorVariable) and not key.is_python_constant():
            raise Unsupported("Unsupported mutation", f"a key of a tensor-keyed dict that is {key}")
        entry = self._find(tx, key)
        if entry is None:
            entry = _Entry(key, value)
            self.entries.append(entry)
        entry.key, entry.value = key, value
        if entry not in self.stored:
            self.stored.append(entry)
        if self.source is not None:
            tx.output.side_effects.replayed_by(self)

    # ---- the dict protocol ----------------------------------------------------------------

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("get", "setdefault") or name.startswith("__") and callable(getattr(dict, name, None)):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"{self.kind.__name__}.{name} of a tensor-keyed dict")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if kwargs:
            raise Unsupported("Unsupported method call", f"{self.kind.__name__}.{name} with keyword arguments")
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__setitem__" and len(args) == 2:
            self._store(tx, args[0], args[1])
            return ConstantVariable(None)
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(self._find(tx, args[0]) is not None)
        if name == "__len__" and not args:
            return ConstantVariable(len(self.entries))
        if name == "get" and len(args) in (1, 2):
            entry = self._find(tx, args[0])
            if entry is not None:
                return self._value(tx, entry)
            return args[1] if len(args) == 2 else ConstantVariable(None)
        if name == "setdefault" and len(args) in (1, 2):
            entry = self._find(tx, args[0])
            if entry is not None:
                return self._value(tx, entry)
            value = args[1] if len(args) == 2 else ConstantVariable(None)
            self._store(tx, args[0], value)
            return value
        raise Unsupported("Unsupported method call", f"{self.kind.__name__}.{name} of a tensor-keyed dict")

    def bool_value(self, tx) -> bool:
        return bool(self.entries)

    def children(self) -> list[VariableTracker]:
        return [v for entry in self.entries for v in (entry.key, entry.value) if v is not None]

    # ---- after the graph ------------------------------------------------------------------

    def replay_changes(self, codegen) -> None:
        """`d[key] = value` for each key the trace stored, in order; every value is loaded
        first (one may be read from this very dict)."""
        temps = []
        for entry in self.stored:
            temps.append(f"___keyed_dict{id(self)}_{len(temps)}")
            codegen.reconstruct(entry.value)
            codegen.store_local(temps[-1])
        for entry, temp in zip(self.stored, temps):
            from ..bytecode import create_instruction

            codegen.load_local(temp)
            codegen.reconstruct_source(self)
            codegen.reconstruct(entry.key)
            codegen.append(create_instruction("STORE_SUBSCR"))
            codegen.append(create_instruction("DELETE_FAST", argval=temp))

    def __repr__(self) -> str:
        return f"TensorKeyedDictVariable({self.kind.__name__}, {len(self.entries)} keys)"

