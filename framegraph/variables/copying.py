"""`copy.copy` and `copy.deepcopy`, over trackers, following what the copy module does:

- constants: the copy module's own answer for the value (the same object for immutable ones);
- tuples are themselves under copy, and under deepcopy unless an item copies to a new object;
  lists, dicts and sets are new containers (deepcopy copies the items, keeping the sharing
  between them: the memo is keyed by tracker, and one object has one tracker);
- an object of an ordinary class (no `__copy__`/`__deepcopy__`, no custom reduction, no
  `__slots__`) is `cls.__new__(cls)` with its `__dict__` copied, as copyreg's reduction
  rebuilds it: the keys of the original's `__dict__` are guarded;
- a tensor under deepcopy becomes a `clone` node where the two are indistinguishable: a
  tensor that needs no grad, is not a view, owns exactly its storage and is laid out densely
  from offset 0 (deepcopy copies the whole storage and keeps strides and offset), with no
  Python attributes, and whose storage no other tensor of the same copy shares.
  torch.compile breaks on every deepcopy of a tensor; everything else here it traces too.

Anything else (modules, tensors under copy.copy, a given memo) breaks the graph: the real
call runs eagerly.
"""

from __future__ import annotations

import copy
import copyreg

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, ItemSource, TypeSource
from .base import VariableTracker
from .constant import ConstantVariable
from .stdlib import is_immutable_constant
from .containers import DictVariable, ListVariable, NamedTupleVariable, SetVariable, TupleVariable
from .tensor import SizeVariable, TensorVariable


def copy_copy(tx, args, kwargs) -> VariableTracker:
    from .stdlib import bind_library_call

    x = bind_library_call(copy.copy, args, kwargs)["x"]
    return _Copier(tx, deep=False).copy(x)


def copy_deepcopy(tx, args, kwargs) -> VariableTracker:
    from .stdlib import bind_library_call

    bound = bind_library_call(copy.deepcopy, args, kwargs)
    if not (bound["memo"].is_python_constant() and bound["memo"].as_python_constant() is None):
        raise Unsupported("Attempted to call function marked as skipped", "copy.deepcopy with a memo")
    return _Copier(tx, deep=True).copy(bound["x"])


class _Copier:
    def __init__(self, tx, deep: bool) -> None:
        self.tx, self.deep = tx, deep
        self.memo: dict[int, VariableTracker] = {}
        self.storages: set[int] = set()  # storages of the tensors cloned by this deepcopy

    def copy(self, x: VariableTracker) -> VariableTracker:
        known = self.memo.get(id(x))
        if known is not None:
            return known
        result = self._copy(x)
        if result is not x:
            self.memo[id(x)] = result
        return result

    def _copy(self, x: VariableTracker) -> VariableTracker:
        from .enums import EnumMemberVariable
        from .instance_dict import InstanceDictVariable
        from .user_objects import UserDefinedObjectVariable

        kind = _exact_type(x)
        if isinstance(x, EnumMemberVariable):
            return x  # Enum.__copy__ and __deepcopy__ return the member itself
        if kind is tuple and isinstance(x, TupleVariable):
            if not self.deep:
                return x
            items = [self.copy(item) for item in x.items]
            return x if all(a is b for a, b in zip(items, x.items)) else TupleVariable(items)
        if isinstance(x, NamedTupleVariable) and hasattr(kind, "_fields"):
            # Reduced through __newobj__ to a new tuple of the same class.
            return NamedTupleVariable([self.copy(i) if self.deep else i for i in x.items], kind)
        if kind is list and isinstance(x, ListVariable):
            result = ListVariable([])
            self.memo[id(x)] = result
            result.items.extend(self.copy(item) if self.deep else item for item in x.items)
            return result
        if kind is dict and isinstance(x, DictVariable):
            result = DictVariable({})
            self.memo[id(x)] = result
            result.items.update((key, self.copy(value) if self.deep else value) for key, value in x.items.items())
            return result
        if kind is set and isinstance(x, SetVariable):
            return SetVariable(list(x.items))  # of constants, which copy to themselves
        if isinstance(x, TensorVariable):
            return self._tensor(x)
        if isinstance(x, UserDefinedObjectVariable):
            return self._object(x)
        if isinstance(x, InstanceDictVariable):
            return self.copy(x.snapshot(self.tx))  # copying `obj.__dict__` copies a dict of its items
        if x.is_python_constant():
            return self._constant(x)
        table = copy._deepcopy_dispatch if self.deep else copy._copy_dispatch
        if table.get(kind) in (copy._deepcopy_atomic, copy._copy_immutable):
            return x  # a function, a builtin: the copy module hands the object back
        if isinstance(x, SizeVariable):  # reduced to torch.Size(tuple): a new size of the same ints
            return SizeVariable(list(x.items))
        raise Unsupported("Attempted to call function marked as skipped", f"{self._name()} of {x}")

    def _name(self) -> str:
        return "copy.deepcopy" if self.deep else "copy.copy"

    def _constant(self, x: VariableTracker) -> VariableTracker:
        value = x.as_python_constant()
        table = copy._deepcopy_dispatch if self.deep else copy._copy_dispatch
        atomic = copy._deepcopy_atomic if self.deep else copy._copy_immutable
        if table.get(type(value)) is atomic or isinstance(value, type):  # classes copy to themselves
            return x
        if type(value) is torch.Size:
            return ConstantVariable(torch.Size(value))  # reduced to a new size of the same ints
        if not is_immutable_constant(value):
            raise Unsupported("Attempted to call function marked as skipped", f"{self._name()} of a {type(value).__name__}")
        result = (copy.deepcopy if self.deep else copy.copy)(value)  # tuples of constants, dtypes, devices
        return x if result is value else ConstantVariable(result)

    def _tensor(self, x: TensorVariable) -> VariableTracker:
        why = _why_not_clone(x.example, x.python_type(), self.storages) if self.deep else "copy.copy aliases its storage"
        if why is None and x.source is not None:
            real = _real_value(self.tx, x.source)
            if vars(real):
                why = "it has Python attributes"
            else:
                self.tx.output.guards.add(GuardKind.DICT_KEYS, AttrSource(x.source, "__dict__"), (dict, ()),
                                          self.tx.output.user_line)
        if why is not None:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"{self._name()} of a tensor: {why} (torch.compile breaks on it too)")
        self.storages.add(x.example.untyped_storage()._cdata)
        return self.tx.output.call_function(torch.clone, [x], {})

    def _object(self, x) -> VariableTracker:
        from .instance_dict import InstanceDictVariable
        from .user_objects import NewObjectVariable

        cls = x.python_type()
        why = _why_not_plain(cls)
        if why is not None:
            raise Unsupported("Attempted to call function marked as skipped", f"{self._name()} of a {cls.__qualname__}: {why}")
        if x.customises_lookup():
            # The copy module reads these through the object's own __getattribute__
            # (object.__reduce_ex__ does, for __reduce__ and __getstate__): they must find
            # what the generic lookup finds, or the copy is not made as modelled here.
            if self.deep:
                _expect_missing(self.tx, x, "__deepcopy__")
            for name in ("__reduce_ex__", "__reduce__", "__getstate__"):
                _expect_object_method(self.tx, x, name)
        state = _instance_state(self.tx, x)
        class_source = TypeSource(x.source) if x.source is not None else getattr(x, "class_source", None)
        base = _storage_base(cls)
        if base is None:
            result = NewObjectVariable(object.__new__(cls), class_source)
            self.memo[id(x)] = result
        else:
            # copyreg's reduction of a list or dict subclass: `base.__new__(cls)`, then the
            # items (listitems/dictitems, copied under deepcopy), then the __dict__.
            from .dict_subclass import new_storage

            result = NewObjectVariable(base.__new__(cls), class_source, new_storage(base))
            self.memo[id(x)] = result
            if base is list:
                result.storage.items.extend(self.copy(item) if self.deep else item for item in x.storage.items)
            else:
                result.storage.items.update((key, self.copy(value) if self.deep else value)
                                            for key, value in x.storage.items.items())
        if not state:
            return result  # the reduction's state is None: nothing is set
        state = {name: self.copy(value) if self.deep else value for name, value in state.items()}
        if result.customises_lookup():
            # copy._reconstruct: `hasattr(y, '__setstate__')`, then `y.__dict__.update(state)`.
            _expect_missing(self.tx, result, "__setstate__")
            if not isinstance(result.var_getattr(self.tx, "__dict__"), InstanceDictVariable):
                raise Unsupported("Attempted to call function marked as skipped",
                                  f"{self._name()} of a {cls.__qualname__}: its __dict__ is not its own")
        for name, value in state.items():
            result.record_attr(self.tx, name, value, generic=True)  # as __dict__.update: no __setattr__
        return result


def _expect_missing(tx, obj, name: str) -> None:
    """`getattr(obj, name, None)` must be None, as for an object of an ordinary class."""
    from ..exc import ObservedException
    from .user_objects import is_raised

    try:
        found = obj.var_getattr(tx, name)
    except ObservedException as raised:
        if is_raised(raised, AttributeError):
            return
        raise
    raise Unsupported("Attempted to call function marked as skipped",
                      f"copying a {obj.python_type().__qualname__}, whose lookup of {name} finds {found}")


def _expect_object_method(tx, obj, name: str) -> None:
    from .user_defined import SlotMethodVariable

    found = obj.var_getattr(tx, name)
    if not (isinstance(found, SlotMethodVariable) and found.owner is object and found.name == name
            and found.obj is obj):
        raise Unsupported("Attempted to call function marked as skipped",
                          f"copying a {obj.python_type().__qualname__}, whose lookup of {name} finds {found}")


def _exact_type(x: VariableTracker) -> type | None:
    try:
        return x.python_type()
    except Unsupported:
        return None


def _why_not_clone(example, kind: type, storages: set[int]) -> str | None:
    if kind is not torch.Tensor:
        return f"deepcopy keeps the class {kind.__name__}"
    if example.requires_grad:
        return "it requires grad (deepcopy makes a new leaf, or raises for a non-leaf)"
    if example.layout is not torch.strided or example.is_quantized or example.is_conj() or example.is_neg():
        return "its layout is not plain"
    sizes = (*example.shape, *example.stride(), example.storage_offset())
    if not all(type(s) is int for s in sizes):
        return "its sizes are symbolic"
    storage = example.untyped_storage()
    if example._is_view() or example.storage_offset() != 0 or not is_non_overlapping_and_dense_or_false(example) \
            or storage.nbytes() != example.numel() * example.element_size():
        return "it does not own exactly its storage, densely from offset 0"
    if storage._cdata in storages:
        return "another tensor of the copy shares its storage"
    return None


def _why_not_plain(cls: type) -> str | None:
    """Why instances of `cls` do not copy as `cls.__new__(cls)` plus their __dict__."""
    from .user_defined import ordinary_metaclass

    if not ordinary_metaclass(cls) or cls.__new__ not in (object.__new__, *(b.__new__ for b in (list, dict)
                                                                          if _storage_base(cls) is b)):
        return "it has its own metaclass or __new__"
    if issubclass(cls, torch.nn.Module):
        return "modules are not copied in the trace"
    for name in ("__copy__", "__deepcopy__", "__setstate__", "__getnewargs_ex__", "__getnewargs__"):
        if hasattr(cls, name):
            return f"it defines {name}"
    if cls.__reduce_ex__ is not object.__reduce_ex__ or cls.__reduce__ is not object.__reduce__ \
            or getattr(cls, "__getstate__", None) is not getattr(object, "__getstate__", None):
        return "it customises its reduction"
    if cls in copyreg.dispatch_table or any("__slots__" in k.__dict__ for k in cls.__mro__):
        return "it has __slots__ or a copyreg reducer"
    return None


def _storage_base(cls: type) -> type | None:
    """list or dict, for a subclass of one of them (not OrderedDict, whose reduction is its own)."""
    from .user_objects import builtin_base_of

    base = builtin_base_of(cls)
    return base if base in (list, dict) else None


def _instance_state(tx, x) -> dict[str, VariableTracker]:
    """The object's __dict__ as it stands in the trace, in its order (keys guarded)."""
    from ..side_effects import StoreAttr
    from .builder import wrap
    from .user_objects import NewObjectVariable

    if isinstance(x, NewObjectVariable):
        return dict(x.attrs)
    if x.source is None:
        raise Unsupported("Attempted to call function marked as skipped", f"copying {x}, which has no source")
    instance_dict = vars(x.value)
    dict_source = AttrSource(x.source, "__dict__")
    if not all(type(key) is str for key in instance_dict):
        raise Unsupported("Unsupported value type", f"an instance __dict__ with keys that are not str at {x.source}")
    tx.output.guards.add(GuardKind.DICT_KEYS, dict_source, (dict, tuple(instance_dict)), tx.output.user_line)
    written = {entry.name: entry.value for entry in tx.output.side_effects
               if isinstance(entry, StoreAttr) and entry.obj is x}
    added = [name for name in written if name not in instance_dict]
    if len(added) > 1:
        # The ledger keeps the last write's order, not the order the dict gained the names.
        raise Unsupported("Attempted to call function marked as skipped",
                          f"copying {x} after the trace added several attributes to it")
    state = {}
    for name, value in instance_dict.items():
        state[name] = written[name] if name in written else wrap(tx, value, ItemSource(dict_source, name))
    for name in added:
        state[name] = written[name]
    return state


def _real_value(tx, source):
    """The object `source` reaches in the frame being compiled (read once more, as the
    guards read it)."""
    root = tx
    while getattr(root, "parent", None) is not None:
        root = root.parent
    return eval(compile(source.name, "<framegraph source>", "eval"), {"L": root.f_locals, "G": root.output.f_globals})
