"""`collections.defaultdict` with constant keys: a dict whose `d[key]` of a missing key calls
`default_factory()`, stores the result and returns it (`__missing__`), as CPython's does.
Only subscription does that: `get`, `in`, `pop`, `setdefault` are dict's own.

One made while tracing is rebuilt as `defaultdict(factory, {items})`; one the caller passed
has its keys guarded, its factory read (and guarded) when used, and its changes replayed as
any dict's (cleared, then updated). A defaultdict without keys, or keyed by tensors, is
keyed_dicts.py's.
"""

from __future__ import annotations

import collections

from ..exc import Unsupported
from ..source import AttrSource
from .base import VariableTracker
from .constant import ConstantVariable
from .dicts import DictVariable, constant_key
from .exceptions import raise_observed

defaultdict = collections.defaultdict


class DefaultDictVariable(DictVariable):
    __slots__ = ("factory",)

    def __init__(self, items: dict, factory: VariableTracker, source=None) -> None:
        super().__init__(items, source)
        self.factory = factory

    def python_type(self) -> type:
        return defaultdict

    def is_python_constant(self) -> bool:
        return False  # its factory is behaviour, not data

    def is_python_constant_items(self) -> bool:
        return DictVariable.is_python_constant(self)

    def children(self) -> list[VariableTracker]:
        return [*super().children(), self.factory]

    def getitem(self, tx, key: VariableTracker) -> VariableTracker:
        k = constant_key(key)
        if k in self.items:
            return self.items[k]
        if self.factory.is_python_constant() and self.factory.as_python_constant() is None:
            raise_observed(KeyError, k)
        value = self.factory.call_function(tx, [], {})
        self.call_method(tx, "__setitem__", [key, value], {})  # recorded like any store
        return value

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "default_factory":
            return self.factory
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            return self.getitem(tx, args[0])
        if name == "__missing__" and len(args) == 1 and not kwargs:
            if self.factory.is_python_constant() and self.factory.as_python_constant() is None:
                raise_observed(KeyError, constant_key(args[0]))
            value = self.factory.call_function(tx, [], {})
            self.call_method(tx, "__setitem__", [args[0], value], {})
            return value
        if name in ("copy", "__copy__") and not args and not kwargs:
            return DefaultDictVariable(self.items, self.factory)
        if name == "__or__" and len(args) == 1 and isinstance(args[0], DictVariable):
            return DefaultDictVariable({**self.items, **args[0].items}, self.factory)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(defaultdict)
        codegen.reconstruct(self.factory)
        for key, value in self.items.items():
            codegen.load_const(key)
            codegen.reconstruct(value)
        codegen.build(dict, len(self.items))
        codegen.call(2)

    def __repr__(self) -> str:
        return f"DefaultDictVariable({self.items!r})"


def make_defaultdict(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> DefaultDictVariable:
    """`defaultdict(default_factory=None, *args, **kwargs)`: the rest as dict() takes it."""
    factory = args[0] if args else ConstantVariable(None)
    if not (factory.is_python_constant() and factory.as_python_constant() is None):
        from .builtins import BuiltinVariable

        callable_ = BuiltinVariable(callable).call_function(tx, [factory], {})
        if callable_.is_python_constant() and not callable_.as_python_constant():
            raise_observed(TypeError, "first argument must be callable or None")
    result = DefaultDictVariable({}, factory)
    if len(args) > 2:
        raise_observed(TypeError, f"defaultdict expected at most 2 arguments, got {len(args)}")
    if len(args) > 1 or kwargs:
        DictVariable.call_method(result, tx, "update", list(args[1:]), kwargs)
    return result


def wrap_defaultdict(tx, value: defaultdict, source) -> DefaultDictVariable:
    """A defaultdict the caller passed, with str or int keys: its keys guarded, its items
    read by key, its factory read through the dict."""
    from ..guards import GuardKind
    from ..source import ItemSource
    from .builder import wrap

    if not all(isinstance(k, (str, int)) for k in value):
        raise Unsupported("Unsupported value type", f"defaultdict with non-str/int keys at {source}")
    tx.output.guards.add(GuardKind.DICT_KEYS, source, (defaultdict, tuple(value)), tx.output.user_line)
    items = {k: wrap(tx, v, ItemSource(source, k)) for k, v in value.items()}
    factory = wrap(tx, value.default_factory, AttrSource(source, "default_factory"))
    return DefaultDictVariable(items, factory, source)
