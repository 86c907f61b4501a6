"""`obj.__dict__` of a user object: a live view of its own attributes.

Reads find what the trace wrote first (the ledger for an existing object, the record of one
made while tracing), then the real `__dict__`, each absence guarded. Writes go to the
instance attributes themselves, bypassing the class's `__setattr__` and `__delattr__`, as a
write into the real dict does; a key the class serves by a data descriptor would be hidden
by it, so that store is not modelled.
"""

from __future__ import annotations

from ..exc import Unsupported
from .base import DELETED, VariableTracker, is_method_of
from .constant import ConstantVariable
from .user_objects import _MISSING, UserDefinedObjectVariable, _lookup_class, raise_observed


class InstanceDictVariable(VariableTracker):
    """`obj.__dict__`: a view of the object's own attributes (a change through it changes
    them, bypassing the class's `__setattr__`)."""

    __slots__ = ("obj",)

    def __init__(self, obj: UserDefinedObjectVariable) -> None:
        super().__init__()
        self.obj = obj

    def python_type(self) -> type:
        return dict

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def lookup(self, tx, key: VariableTracker) -> VariableTracker | None:
        if not key.is_python_constant() or not isinstance(key.as_python_constant(), str):
            raise Unsupported("Unsupported builtin call", "obj.__dict__ with a key that is not a constant str")
        name = key.as_python_constant()
        written = tx.output.side_effects.load_attr(self.obj, name)
        if written is DELETED:
            return None
        if written is not None:
            return written
        found = self.obj._instance_attribute(tx, name)
        if found is None:
            self.obj.guard_not_in_instance_dict(tx, name)
        return found

    def snapshot(self, tx) -> VariableTracker:
        from .containers import DictVariable

        return DictVariable({name: self.lookup(tx, ConstantVariable(name)) for name in self.obj.instance_dict_keys(tx)})

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .base import MethodVariable

        if is_method_of(dict, name):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"dict.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "get" and 1 <= len(args) <= 2 and not kwargs:
            found = self.lookup(tx, args[0])
            return found if found is not None else (args[1] if len(args) == 2 else ConstantVariable(None))
        if name == "__getitem__" and len(args) == 1:
            found = self.lookup(tx, args[0])
            if found is None:
                raise_observed(KeyError, args[0].as_python_constant())
            return found
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(self.lookup(tx, args[0]) is not None)
        if name == "__setitem__" and len(args) == 2:
            self.store(tx, args[0], args[1])
            return ConstantVariable(None)
        if name == "update" and len(args) <= 1:
            pairs = _pairs(tx, args[0]) if args else []
            for key, value in [*pairs, *((ConstantVariable(k), v) for k, v in kwargs.items())]:
                self.store(tx, key, value)
            return ConstantVariable(None)
        if name == "setdefault" and 1 <= len(args) <= 2 and not kwargs:
            found = self.lookup(tx, args[0])
            if found is None:
                found = args[1] if len(args) == 2 else ConstantVariable(None)
                self.store(tx, args[0], found)
            return found
        if name in ("pop", "__delitem__") and 1 <= len(args) <= (2 if name == "pop" else 1) and not kwargs:
            found = self.lookup(tx, args[0])
            if found is None:
                if len(args) == 2:
                    return args[1]
                raise_observed(KeyError, args[0].as_python_constant())
            self.obj.delete_instance_attr(tx, args[0].as_python_constant())
            return found if name == "pop" else ConstantVariable(None)
        if name in ("keys", "values", "items", "__len__", "__iter__", "copy") and not args and not kwargs:
            snapshot = self.snapshot(tx)
            if name == "__iter__":
                from .iterators import ListIteratorVariable

                return ListIteratorVariable(tx.unpack_iterable(snapshot))
            return snapshot if name == "copy" else snapshot.call_method(tx, name, [], {})
        raise Unsupported("Unsupported method call", f"obj.__dict__.{name}")

    def store(self, tx, key: VariableTracker, value: VariableTracker) -> None:
        name = key.as_python_constant() if key.is_python_constant() else None
        class_attr, _ = _lookup_class(self.obj.python_type(), name) if isinstance(name, str) else (None, None)
        if not isinstance(name, str) or (class_attr is not _MISSING and hasattr(type(class_attr), "__set__")):
            raise Unsupported("Unsupported mutation", f"obj.__dict__[{name!r}] = ...")
        self.obj.record_attr(tx, name, value, generic=True)

    def bool_value(self, tx) -> bool:
        return bool(self.obj.instance_dict_keys(tx))

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(object.__getattribute__)
        codegen.reconstruct(self.obj)
        codegen.load_const("__dict__")
        codegen.call(2)


def _pairs(tx, other: VariableTracker) -> list[tuple[VariableTracker, VariableTracker]]:
    """The (key, value) pairs `dict.update` takes from a mapping or an iterable of pairs."""
    from .containers import DictVariable

    if isinstance(other, DictVariable):
        return [(ConstantVariable(k), v) for k, v in other.items.items()]
    if isinstance(other, InstanceDictVariable):
        return [(ConstantVariable(k), other.lookup(tx, ConstantVariable(k))) for k in other.obj.instance_dict_keys(tx)]
    pairs = []
    for item in tx.unpack_iterable(other):
        parts = tx.unpack_iterable(item)
        if len(parts) != 2:
            raise_observed(ValueError, f"dictionary update sequence element #{len(pairs)} has length "
                                       f"{len(parts)}; 2 is required")
        pairs.append((parts[0], parts[1]))
    return pairs
