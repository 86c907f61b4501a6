"""Objects as dict keys and set elements, and the questions about an object's identity
(`id()`, `hash()` of an object hashed by identity).

A dict or set made or read while tracing keys its items by the real key for constants. An
object whose type hashes and compares by identity (a tensor, a function, a module, an
instance of a class that defines neither `__eq__` nor `__hash__`) is keyed by an `ObjectKey`:
it hashes as the object does where the real object is known (so a set of them iterates in
eager's order), and equals another key only for the same object (the tracker's
`identity_key`). A tuple of such keys is a tuple of ObjectKeys, which hashes and compares as
the real tuple would.

An object the trace made has no address yet: it is a key all the same (a dict keeps
insertion order), but `id()` and `hash()` of it, and the order of a set of several of them,
are not known, and asking is unsupported.
"""

from __future__ import annotations

import enum
import types
from typing import Any

import torch

from ..exc import Unsupported
from .base import ValueVariable, VariableTracker
from .constant import ConstantVariable

_SMALL_INTS = range(-5, 257)  # CPython's cached ints: one object per value


def hashes_by_identity(kind: type) -> bool:
    """Whether objects of `kind` hash and compare by identity (a tensor hashes by `id` and,
    as a dict key, is never compared by `==` with another tensor of another id)."""
    if issubclass(kind, torch.Tensor):
        return True
    return getattr(kind, "__hash__", None) is object.__hash__ and kind.__eq__ is object.__eq__


def real_object(tx, value: VariableTracker) -> tuple[bool, Any]:
    """(True, the object) when `value` stands for one real object on every call its guards
    pass (pinned by a guard where it came from the caller); (False, None) otherwise."""
    from ..guards import GuardKind
    from .tensor import TensorVariable
    from .user_functions import UserFunctionVariable
    from .user_objects import UserDefinedObjectVariable

    real: Any = None
    if isinstance(value, ConstantVariable):
        constant = value.as_python_constant()
        if constant is None or isinstance(constant, (bool, enum.Enum)) \
                or (type(constant) is int and constant in _SMALL_INTS) \
                or isinstance(constant, (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)):
            return True, constant  # one object for its value (a class compares by identity)
        if value.source is None:
            return False, None  # an equal value may be another object
        real = constant  # the caller's very object, pinned below
    elif isinstance(value, UserFunctionVariable):
        real = value.fn
    elif isinstance(value, TensorVariable) and value.source is not None:
        real = tx.output.real_tensor(value)
    elif isinstance(value, (ValueVariable, UserDefinedObjectVariable)):
        if value.source is None and isinstance(value, UserDefinedObjectVariable):
            return False, None  # made while tracing: its object is a stand-in
        real = value.value
    else:
        return False, None
    if value.source is not None and tx is not None:
        tx.output.guards.add(GuardKind.ID_MATCH, value.source, real, tx.output.user_line)
    return True, real


class ObjectKey:
    """A dict key or set element that is an object hashed by identity (see the module)."""

    __slots__ = ("tracker", "token", "real_hash")

    def __init__(self, tracker: VariableTracker, token: tuple, real_hash: int | None) -> None:
        self.tracker, self.token, self.real_hash = tracker, token, real_hash

    def __hash__(self) -> int:
        return hash(self.token) if self.real_hash is None else self.real_hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectKey) and other.token == self.token

    def __repr__(self) -> str:
        return f"ObjectKey({self.tracker!r})"


def object_key(tx, value: VariableTracker) -> Any:
    """The key of a tracker that is not a constant, or raises Unsupported."""
    from .builtins import identity_key
    from .containers import TupleVariable

    if type(value) is TupleVariable:
        return tuple(_key(tx, item) for item in value.items)
    if isinstance(value, IdVariable) and value.fn in (id, hash):  # `memo[id(obj)]`: one key per object
        return ObjectKey(value, (value.fn.__name__, identity_key(tx, value.obj)), None)
    method = bound_method_parts(tx, value)
    if method is not None:  # equal for the same object and function: hashed from both
        (self_token, self_real), (fn_token, fn_real) = method
        real_hash = hash(types.MethodType(fn_real, self_real)) if self_real is not _UNKNOWN \
            and fn_real is not _UNKNOWN else None
        return ObjectKey(value, ("method", self_token, fn_token), real_hash)
    kind = value.python_type()
    token = identity_key(tx, value) if hashes_by_identity(kind) else None
    if token is None:
        raise Unsupported("Unsupported builtin call", f"a dict key or set element that is not a constant: {value}")
    known, real = real_object(tx, value)
    return ObjectKey(value, token, hash(real) if known else None)


_UNKNOWN = object()


def bound_method_parts(tx, value: VariableTracker) -> tuple | None:
    """For a user function bound to an object: ((identity of the object, the object or
    _UNKNOWN), (identity of the function, the function or _UNKNOWN)), what a bound method's
    `==` and hash are made of; None for anything else."""
    from .builtins import identity_key
    from .user_functions import UserMethodVariable

    if not isinstance(value, UserMethodVariable):
        return None
    parts = []
    for part in (value.obj, value.fn):
        token = identity_key(tx, part)
        if token is None:
            return None
        known, real = real_object(tx, part)
        parts.append((token, real if known else _UNKNOWN))
    return tuple(parts)


def _key(tx, value: VariableTracker) -> Any:
    from .dicts import constant_key

    return constant_key(value, tx)


def holds_object_keys(key: Any) -> bool:
    return isinstance(key, ObjectKey) or (type(key) is tuple and any(holds_object_keys(k) for k in key))


def key_tracker(key: Any) -> VariableTracker:
    """The tracker of a dict key or set element."""
    if isinstance(key, ObjectKey):
        return key.tracker
    if type(key) is tuple and holds_object_keys(key):
        from .containers import TupleVariable

        return TupleVariable([key_tracker(k) for k in key])
    if not isinstance(key, (str, int, float, bool, type(None), tuple)) and callable(key):
        from .builder import wrap_library_value

        # a function key (torch.relu) is called as a function, not a constant
        return wrap_library_value(key, None, strict=False) or ConstantVariable(key)
    return ConstantVariable(key)


def unordered(keys) -> bool:
    """Whether a set of these keys iterates in an order eager's cannot be known: it holds
    objects made while tracing, whose hashes (their addresses) do not exist yet."""
    return len(keys) > 1 and any(_unknown_hash(k) for k in keys)


def _unknown_hash(key: Any) -> bool:
    if isinstance(key, ObjectKey):
        return key.real_hash is None
    return type(key) is tuple and any(_unknown_hash(k) for k in key)


def reconstruct_key(codegen, key: Any) -> None:
    if holds_object_keys(key):
        codegen.reconstruct(key_tracker(key))
    else:
        codegen.load_const(key)


def id_of(tx, value: VariableTracker, fn=id) -> VariableTracker:
    """`id(value)` (or `fn(value)` for another function of its address: `hash` of an object
    hashed by identity, the text of one whose repr is its address): the answer, where the
    object is known; else an IdVariable, which compares by the object's identity and is
    computed from the object after the graph."""
    from .builtins import identity_key
    from .containers import TupleVariable
    from .tensor import SizeVariable

    known, real = real_object(tx, value)
    if known:
        return ConstantVariable(fn(real))
    # A tuple the trace made is rebuilt once (codegen keeps it), so it has one object too.
    if identity_key(tx, value) is None and value.source is None and not isinstance(value, (TupleVariable, SizeVariable)):
        raise Unsupported("Unsupported builtin call", f"{fn.__name__}({value}): a value rebuilt by the trace has no "
                                                      "identity we can vouch for")
    return IdVariable(value, fn)


class IdVariable(VariableTracker):
    """`id(obj)` (or `hash(obj)`, `str(obj)`...: a function of its address) of an object
    whose address does not exist while tracing (made by the trace) or is not read (a
    container the caller passed). id and hash compare equal for the same object only; the
    value is computed from the object after the graph."""

    __slots__ = ("obj", "fn")

    def __init__(self, obj: VariableTracker, fn=id) -> None:
        super().__init__()
        self.obj, self.fn = obj, fn

    def python_type(self) -> type:
        return str if self.fn in (str, repr) else int

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def equals(self, tx, other: VariableTracker) -> bool:
        from .builtins import same_object

        if isinstance(other, IdVariable) and other.fn is self.fn and self.fn in (id, hash):
            return same_object(tx, self.obj, other.obj)
        if other.is_python_constant() and not isinstance(other.as_python_constant(), self.python_type()):
            return False
        raise Unsupported("Unsupported builtin call", f"comparing {self.fn.__name__}({self.obj}) with a value "
                                                      "known while tracing")

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(self.fn)
        codegen.reconstruct(self.obj)
        codegen.call(1)

    def __repr__(self) -> str:
        return f"IdVariable({self.fn.__name__}, {self.obj!r})"


# ---- dicts and sets the frame receives -------------------------------------------------------------
def plain_key(key: Any) -> bool:
    """A key a guard can spell (and compare with `==` without running program code)."""
    from .constant import is_constant_type

    if type(key) in (tuple, frozenset):
        return all(plain_key(k) for k in key)
    return is_constant_type(key)


def _identity_object_key(key: Any) -> bool:
    return not isinstance(key, torch.Tensor) and hashes_by_identity(type(key)) or isinstance(key, type) \
        or _module_builtin(key)


def _module_builtin(value: Any) -> bool:
    """A builtin function of a module or a class (torch.relu): one object per function, so
    its `==` (same self, same C function) is identity."""
    return isinstance(value, types.BuiltinFunctionType) \
        and (value.__self__ is None or isinstance(value.__self__, (types.ModuleType, type)))


def wrap_object_keyed_dict(tx, value: dict, source) -> VariableTracker:
    """A dict whose keys are constants or objects hashed by identity (types, functions,
    modules, plain objects): its keys, in order, are guarded (an object key by identity: the
    guard's `==` is `is` for them), and values are read by position."""
    from ..guards import GuardKind
    from ..source import DictEntriesSource, ItemSource
    from .builder import wrap
    from .dicts import DictVariable, constant_key

    if not all(plain_key(k) or _identity_object_key(k) for k in value):
        raise Unsupported("Unsupported value type", f"dict with keys hashed by their contents at {source}",
                          "A key whose class defines __eq__ or __hash__ (or a tensor, in a dict with other "
                          "keys) cannot be guarded without running the program's own code.")
    tx.output.guards.add(GuardKind.DICT_KEYS, source, (dict, tuple(value)), tx.output.user_line)
    keys, values = DictEntriesSource(source, "keys"), DictEntriesSource(source, "values")
    items = {}
    for i, (key, item) in enumerate(value.items()):
        if not plain_key(key):
            key = constant_key(wrap(tx, key, ItemSource(keys, i)), tx)
        items[key] = wrap(tx, item, ItemSource(values, i))
    return DictVariable(items, source)


def wrap_set(tx, value: set | frozenset, source) -> VariableTracker:
    """A set or frozenset of constants: its contents are guarded by equality (a frozenset is
    a constant; a set, mutable, a SetVariable whose changes are replayed)."""
    from ..guards import GuardKind
    from .dicts import set_of

    if not all(plain_key(k) for k in value):
        raise Unsupported("Unsupported value type", f"{type(value).__name__} of objects at {source}")
    line = tx.output.user_line
    if type(value) is frozenset:
        return ConstantVariable(value, source,
                                pending_guard=lambda: tx.output.guards.add(GuardKind.EQUALS_MATCH, source, value, line))
    tx.output.guards.add(GuardKind.EQUALS_MATCH, source, set(value), line)
    made = set_of(set(value))
    made.source = source
    return made
