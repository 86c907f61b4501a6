"""Python's builtins and operators, with CPython's semantics, over trackers.

Three tiers, tried in order by `BuiltinVariable.call_function`:
1. `HANDLERS`: builtins whose meaning depends on what the arguments are (len of a tensor,
   isinstance, iteration helpers such as zip and enumerate, getattr...). A handler returns
   None when the arguments are not its business.
2. `PURE_BUILTINS`: pure functions of constant arguments, folded at trace time.
3. `TENSOR_OPERATORS`: operators with a tensor meaning, recorded as graph nodes.

The iteration helpers (zip, map, enumerate, sum, any...) are in iter_builtins.py; they make
and consume lazy iterators. Operators follow Python's protocol: `a op= b` changes `a` in
place only where its type defines `__iop__`; `is` compares objects, never copies of values.
"""

from __future__ import annotations

import math
import operator
import types
from typing import Any, Callable

import torch

from ..exc import Unsupported
from .base import KnownValueVariable, MethodVariable, ValueVariable, VariableTracker
from .constant import ConstantVariable, fold
from .containers import (BaseSequenceVariable, DictVariable, ListVariable, SetVariable, TupleVariable,
                         _compares_by_identity)
from .iter_builtins import ITERATION_HANDLERS
from .iterators import IteratorVariable
from .object_keys import IdVariable
from .tensor import SizeVariable, SymNodeVariable, TensorVariable
from .stdlib import guard_class_checks
from .object_text import text_handler
from .sym_builtins import symbolic_call


class BuiltinVariable(KnownValueVariable):
    """A builtin function such as `len` or `isinstance`, or a function of `operator`/`math`."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        handler = HANDLERS.get(self.value)
        if handler is not None:
            result = handler(tx, list(args), dict(kwargs))
            if result is not None:
                return result
        from .user_objects import UserDefinedObjectVariable

        if any(isinstance(a, UserDefinedObjectVariable) for a in args):
            from .user_defined import user_builtin

            result = user_builtin(tx, self.value, list(args), dict(kwargs))  # the objects' special methods
            if result is not None:
                return result
        symbolic = symbolic_call(tx, self.value, list(args), dict(kwargs))
        if symbolic is not None:
            return symbolic  # a node on the symbol: one graph serves every size
        if self.value in PURE_BUILTINS and any(isinstance(a, SymNodeVariable) for a in args) \
                and not any(isinstance(a, TensorVariable) for a in args):
            # range(n), int(n)... need the value: it becomes a guarded constant.
            args = [ConstantVariable(a.as_python_constant()) if isinstance(a, SymNodeVariable) else a
                    for a in args]
        if self.value in PURE_BUILTINS and all(a.is_python_constant() for a in (*args, *kwargs.values())):
            return fold(lambda *a: self.value(*a, **{k: v.as_python_constant() for k, v in kwargs.items()}),
                        *args)
        if self.value in TENSOR_OPERATORS and any(isinstance(a, TensorVariable) for a in args):
            return tx.output.call_function(self.value, list(args), dict(kwargs))
        raise Unsupported("Unsupported builtin call",
                          f"{getattr(self.value, '__name__', self.value)}({', '.join(type(a).__name__ for a in args)})")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if self.value is dict and name == "fromkeys":
            from .dict_views import fromkeys_of

            return fromkeys_of(dict)
        if isinstance(self.value, type):
            from .user_defined import builtin_class_attribute

            method = builtin_class_attribute(self.value, name, None)  # dict.__getitem__, list.append...
            if method is not None:
                return method
        return super().var_getattr(tx, name)

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.value, '__name__', self.value)})"


def apply_operator(tx, fn: Callable, *args: VariableTracker) -> VariableTracker:
    """`fn(*args)` for an operator: a graph node when a tensor or a symbolic size is
    involved, else folded."""
    from .user_objects import UserDefinedObjectVariable

    if any(isinstance(a, UserDefinedObjectVariable) for a in args):
        from .user_defined import user_operator

        return user_operator(tx, fn, list(args))  # the operands' special methods
    plain = INPLACE_TO_PLAIN.get(fn)
    if plain is not None and len(args) == 2:
        return _inplace_operator(tx, fn, plain, *args)
    if fn in (operator.eq, operator.ne) and len(args) == 2 and any(isinstance(a, IdVariable) for a in args):
        first, other = args if isinstance(args[0], IdVariable) else args[::-1]
        return ConstantVariable(first.equals(tx, other) == (fn is operator.eq))
    if any(isinstance(a, (TensorVariable, SymNodeVariable)) for a in args):
        _check_divisor(fn, args)
        return tx.output.call_function(fn, list(args), {})
    if all(a.is_python_constant() for a in args):
        return fold(fn, *args)
    sequence = _sequence_operator(tx, fn, args)
    if sequence is not None:
        return sequence
    from .deques import DequeVariable
    from .iterators import DictViewVariable

    if fn in (operator.eq, operator.ne) and len(args) == 2 and isinstance(args[0], (DequeVariable, DictViewVariable)):
        return args[0].call_method(tx, "__eq__" if fn is operator.eq else "__ne__", [args[1]], {})
    if fn in (operator.eq, operator.ne) and len(args) == 2 and isinstance(args[1], (DequeVariable, DictViewVariable)):
        return args[1].call_method(tx, "__eq__" if fn is operator.eq else "__ne__", [args[0]], {})
    if len(args) == 2 and any(isinstance(a, DictViewVariable) for a in args):
        from .dict_views import view_operator

        result = view_operator(tx, fn, *args)
        if result is not None:
            return result
    if fn in (operator.eq, operator.ne) and len(args) == 2 and any(_compares_by_identity(a) for a in args) \
            and all(_knows_no_other(a) for a in args):
        # Both __eq__ are object's (functions, classes...): each returns NotImplemented for
        # another object, and Python falls back to identity.
        return ConstantVariable(same_object(tx, *args) == (fn is operator.eq))
    if fn in _MAPPING_OPERATORS and len(args) == 2 and type(args[0]) is type(args[1]) \
            and isinstance(args[0], (DictVariable, SetVariable)) and (isinstance(args[0], SetVariable) or fn is operator.or_):
        return args[0].call_method(tx, _MAPPING_OPERATORS[fn], [args[1]], {})
    if fn in _ORDERINGS and len(args) == 2:
        ordered = _sequence_order(tx, fn, *args)
        if ordered is not None:
            return ordered
    if fn in (operator.eq, operator.ne) and len(args) == 2:
        equal = _method_equality(tx, *args)
        if equal is None:
            equal = _container_equality(tx, *args)
        if equal is not None:
            return ConstantVariable(equal == (fn is operator.eq))
    names = ", ".join(type(a).__name__ for a in args)
    raise Unsupported("Unsupported builtin call", f"operator {fn.__name__} on ({names})")


_ORDERINGS = frozenset({operator.lt, operator.le, operator.gt, operator.ge})


def _sequence_order(tx, fn, a: VariableTracker, b: VariableTracker) -> VariableTracker | None:
    """`a < b` of two lists, tuples or deques, as CPython orders them: the first items that
    differ (`is`, then `==`) decide, else the lengths."""
    from .containers import _family, values_equal

    a, b = (_as_sequence(v) or v for v in (a, b))
    if not (isinstance(a, BaseSequenceVariable) and isinstance(b, BaseSequenceVariable)):
        return None
    if _family(a.kind) is not _family(b.kind):
        from .containers import raise_observed

        raise_observed(TypeError, f"'{_SYMBOLS[fn]}' not supported between instances of "
                                  f"'{a.python_type().__name__}' and '{b.python_type().__name__}'")
    for x, y in zip(a.items, b.items):
        if not values_equal(tx, x, y):
            return apply_operator(tx, fn, x, y)
    return ConstantVariable(fn(len(a.items), len(b.items)))


_SYMBOLS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


def _method_equality(tx, a: VariableTracker, b: VariableTracker) -> bool | None:
    """`a == b` with a bound method among them: the same object (`is`) and the same function;
    False against any other value (NotImplemented both ways). None: neither is a method."""
    from .object_keys import bound_method_parts

    parts = [bound_method_parts(tx, v) for v in (a, b)]
    if parts[0] is None and parts[1] is None:
        return None
    if parts[0] is not None and parts[1] is not None:
        return parts[0][0][0] == parts[1][0][0] and parts[0][1][0] == parts[1][1][0]
    return False if _knows_no_other(b if parts[0] is not None else a) else None


def _container_equality(tx, a: VariableTracker, b: VariableTracker) -> bool | None:
    """`a == b` with a list, tuple or dict among them: item by item (each item `is`, then
    `==`, as CPython compares), and False against a value of an unrelated type (both sides
    return NotImplemented). None when neither is such a container."""
    from .containers import values_equal

    containers = (BaseSequenceVariable, DictVariable)
    a, b = (_as_sequence(v) or v for v in (a, b))
    if isinstance(a, containers) and isinstance(b, containers):
        return values_equal(tx, a, b)
    if not isinstance(a, containers) and not isinstance(b, containers):
        return None
    return False if _knows_no_other(b if isinstance(a, containers) else a) else None


_DIVISIONS = frozenset({operator.truediv, operator.floordiv, operator.mod, divmod})


def _check_divisor(fn: Callable, args: tuple) -> None:
    """Python numbers divided by a symbolic one: whether it is zero is guarded, and a zero
    raises ZeroDivisionError for the program's handlers (a graph cannot raise it later).
    A number read from tensor data has no value to guard; its division stays a node."""
    if fn not in _DIVISIONS or len(args) != 2 or not isinstance(args[1], SymNodeVariable) \
            or isinstance(args[0], TensorVariable) or args[1].is_unbacked():
        return
    if bool(args[1].value == 0):
        first = args[0].python_type() if args[0].python_type() in (int, float) else int
        try:
            fn(first(1), args[1].python_type()(0))
        except ZeroDivisionError as error:
            from .exceptions import raise_observed

            raise_observed(ZeroDivisionError, *error.args)


def same_object(tx, a: VariableTracker, b: VariableTracker) -> bool:
    """`a is b`. One tracker is one object; a mutable object has one tracker however it is
    reached (the builder keeps one per real object), so distinct trackers of mutable objects
    are distinct objects (for two the caller passed, a guard keeps them distinct). Objects
    that hold a real value compare it. Immutable values rebuilt by the trace (tuples, sizes,
    ints computed from symbols) have no identity we could vouch for: unless their types
    differ, asking is unsupported."""
    if a is b:
        return True
    key_a, key_b = identity_key(tx, a), identity_key(tx, b)
    if key_a is not None and key_b is not None:
        if key_a != key_b:
            keep_distinct(tx, a, b)
        return key_a == key_b
    type_a, type_b = a.python_type(), b.python_type()
    if type_a is not type_b:
        return False
    raise Unsupported("Unsupported builtin call", f"`is` between two {type_a.__name__} values made while tracing")


def keep_distinct(tx, a: VariableTracker, b: VariableTracker) -> None:
    """Two objects the caller passed, found to be different ones: later calls must pass two
    as well (a call passing one object twice gets one tracker, so it must not match)."""
    from ..guards import GuardKind

    if a.source is not None and b.source is not None and not isinstance(a, ConstantVariable) \
            and not isinstance(b, ConstantVariable):
        pair = (a.source, b.source)
        tx.output.guards.add(GuardKind.DISTINCT, None, pair, tx.output.user_line, key=pair)


def has_identity(value: VariableTracker) -> bool:
    """Whether rebuilding `value` twice would make two objects where eager has one."""
    return not isinstance(value, (ConstantVariable, ValueVariable)) and identity_key(None, value) is not None


def identity_key(tx, value: VariableTracker) -> tuple | None:
    """What tells `value`'s object apart: the tracker itself, or the real object it holds
    (pinned by a guard when it came from the caller); None where identity is unknowable."""
    from ..guards import GuardKind
    from .exceptions import ExceptionVariable
    from .user_functions import NestedFunctionVariable, PartialVariable, UserFunctionVariable, UserMethodVariable
    from .keyed_dicts import TensorKeyedDictVariable
    from .nn_module import ModuleSliceVariable
    from .user_objects import UserDefinedObjectVariable

    from .deques import DequeVariable

    if isinstance(value, (ListVariable, DictVariable, SetVariable, TensorVariable, NestedFunctionVariable,
                          IteratorVariable, ExceptionVariable, ModuleSliceVariable, TensorKeyedDictVariable,
                          DequeVariable, PartialVariable)):
        return ("tracker", id(value))
    if isinstance(value, ConstantVariable):
        return ("object", id(value.as_python_constant()))  # realises the value's guard
    if isinstance(value, (ValueVariable, UserDefinedObjectVariable)):
        return ("object", id(value.value))  # builtins, modules (pinned by the builder), user objects
    if isinstance(value, UserFunctionVariable):
        if value.source is not None and tx is not None:
            # The builder pins a function's code, not the function: two closures of one def.
            tx.output.guards.add(GuardKind.ID_MATCH, value.source, value.fn, tx.output.user_line)
        return ("object", id(value.fn))
    if isinstance(value, MethodVariable) and value.obj.is_python_constant() \
            and isinstance(value.obj.as_python_constant(), type):
        return ("object", id(getattr(value.obj.as_python_constant(), value.name)))  # a class's function
    if isinstance(value, (MethodVariable, UserMethodVariable)) and value.source is None:
        return ("tracker", id(value))  # every attribute read makes a new bound method
    return None


def _is(tx, args, kwargs) -> VariableTracker | None:
    return ConstantVariable(same_object(tx, *args)) if len(args) == 2 and not kwargs else None


def _is_not(tx, args, kwargs) -> VariableTracker | None:
    return ConstantVariable(not same_object(tx, *args)) if len(args) == 2 and not kwargs else None


# `a op= b` is `a.__iop__(b)` where the type of `a` defines it, else `a = a op b`.
INPLACE_TO_PLAIN: dict[Callable, Callable] = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
    operator.ipow: operator.pow, operator.imatmul: operator.matmul, operator.iand: operator.and_,
    operator.ior: operator.or_, operator.ixor: operator.xor, operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}
_SET_INPLACE = {operator.ior: "update", operator.iand: "intersection_update",
                operator.isub: "difference_update", operator.ixor: "symmetric_difference_update"}


def _inplace_operator(tx, fn: Callable, plain: Callable, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """An augmented assignment. Only tensors and the mutable builtins change in place; an
    int, float, tuple or symbolic size has no `__iop__`, so Python computes `a op b` (a graph
    node of the plain operator when `b` is a tensor, as torch.compile records it)."""
    if isinstance(a, TensorVariable):
        return tx.output.call_function(fn, [a, b], {})
    from .deques import DequeVariable

    if isinstance(a, DequeVariable) and fn in (operator.iadd, operator.imul):
        return a.call_method(tx, "__iadd__" if fn is operator.iadd else "__imul__", [b], {})
    if isinstance(a, ListVariable) and fn is operator.iadd:
        a.call_method(tx, "extend", [b], {})  # any iterable, unlike `list + list`
        return a
    if isinstance(a, ListVariable) and fn is operator.imul and b.is_python_constant():
        a.call_method(tx, "__imul__", [b], {})
        return a
    if isinstance(a, SetVariable) and fn in _SET_INPLACE and isinstance(b, SetVariable):
        a.call_method(tx, _SET_INPLACE[fn], [b], {})
        return a
    if isinstance(a, DictVariable) and fn is operator.ior:
        a.call_method(tx, "update", [b], {})
        return a
    if hasattr(a.python_type(), f"__{fn.__name__}__"):
        raise Unsupported("Unsupported builtin call",
                          f"in-place operator {fn.__name__} on ({type(a).__name__}, {type(b).__name__})")
    return apply_operator(tx, plain, a, b)


# `|` of two dicts, and `|`, `&`, `-`, `^` of two sets: their methods compute them.
_MAPPING_OPERATORS = {operator.or_: "__or__", operator.and_: "__and__", operator.sub: "__sub__",
                      operator.xor: "__xor__"}


def _knows_no_other(value: VariableTracker) -> bool:
    """Whether `value == other` is NotImplemented for another kind of value: a constant of a
    builtin type, or an object compared by identity."""
    return _compares_by_identity(value) or (value.is_python_constant()
                                            and type(value.as_python_constant()).__module__ == "builtins")


def _sequence_operator(tx, fn, args) -> VariableTracker | None:
    """Concatenation, repetition and equality of tuples and lists whose items are not all
    constants (all-constant ones fold)."""
    if len(args) != 2:
        return None
    if any(isinstance(v, SizeVariable) for v in args):
        return _size_operator(fn, args)
    a, b = (_as_sequence(v) for v in args)
    if fn is operator.add and a is not None and b is not None:
        if a.kind is not b.kind:
            from .containers import raise_observed

            raise_observed(TypeError, f'can only concatenate {a.kind.__name__} (not "{b.kind.__name__}") '
                                      f'to {a.kind.__name__}')
        return a.plain(a.items + b.items)  # a namedtuple plus a tuple is a plain tuple
    if fn is operator.mul and (a is None) != (b is None):
        sequence, count = (a, args[1]) if a is not None else (b, args[0])
        if count.is_python_constant() and isinstance(count.as_python_constant(), int):
            return sequence.plain(sequence.items * count.as_python_constant())
    return None


def _size_operator(fn, args) -> VariableTracker | None:
    """torch.Size with a tuple or a Size, either side, and Size times an int: a torch.Size
    (torch.Size defines `__radd__`, so `(n,) + size` is one too)."""
    if fn is operator.add:
        items = []
        for value in args:
            if isinstance(value, ConstantVariable) and isinstance(value.value, torch.Size):
                value = SizeVariable([ConstantVariable(v) for v in value.value])
            sequence = value if isinstance(value, SizeVariable) else _as_sequence(value)
            if sequence is None or not isinstance(sequence, SizeVariable) and type(sequence) is not TupleVariable:
                return None  # a list is a TypeError; a namedtuple on the left makes a plain tuple
            items += sequence.items
        return SizeVariable(items)
    if fn is operator.mul:
        size, count = args if isinstance(args[0], SizeVariable) else args[::-1]
        if count.is_python_constant() and isinstance(count.as_python_constant(), int):
            return SizeVariable(size.items * count.as_python_constant())
    return None


def _as_sequence(value: VariableTracker) -> BaseSequenceVariable | None:
    if isinstance(value, BaseSequenceVariable):
        return value
    if isinstance(value, ConstantVariable) and type(value.value) is tuple:
        return TupleVariable([ConstantVariable(v) for v in value.as_python_constant()])
    return None


# ---- handlers -----------------------------------------------------------------------------

def _constants(args: list[VariableTracker]) -> bool:
    return all(a.is_python_constant() for a in args)


def _len(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1 or kwargs:
        return None
    (value,) = args
    if isinstance(value, TensorVariable):
        if value.example.dim() == 0:
            raise Unsupported("Unsupported builtin call", "len() of a 0-d tensor")
        return value.sizes(tx).items[0]
    if isinstance(value, SetVariable):
        return ConstantVariable(len(value.values))
    if isinstance(value, (BaseSequenceVariable, DictVariable)):
        return ConstantVariable(len(value.items))
    if value.is_python_constant():
        return None  # folded
    from .user_objects import UserDefinedObjectVariable

    if isinstance(value, UserDefinedObjectVariable):
        return value.length(tx)
    return value.call_method(tx, "__len__", [], {})


def _isinstance(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 2 or kwargs or not args[1].is_python_constant():
        return None
    classes = args[1].as_python_constant()
    try:
        answer = issubclass(args[0].python_type(), classes)
    except TypeError:
        return None
    guard_class_checks(tx, args[0].python_type(), classes, answer)
    return ConstantVariable(answer)


def _issubclass(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 2 or kwargs or not _constants(args):
        return None
    try:
        answer = issubclass(args[0].as_python_constant(), args[1].as_python_constant())
    except TypeError:
        return None  # folded, so the user's program raises there
    guard_class_checks(tx, args[0].as_python_constant(), args[1].as_python_constant(), answer)
    return ConstantVariable(answer)


def _type(tx, args, kwargs) -> VariableTracker | None:
    from .user_objects import UserDefinedObjectVariable

    if len(args) != 1 or kwargs:
        return None
    (value,) = args
    # An object's class can be read again (and its attributes guarded) through type(obj).
    source = value._type_source() if isinstance(value, UserDefinedObjectVariable) else None
    return ConstantVariable(value.python_type(), source)


def _callable(tx, args, kwargs) -> VariableTracker | None:
    from .functions import SkippedFunctionVariable, TorchFunctionVariable
    from .user_functions import BaseUserFunctionVariable, UserMethodVariable

    value = args[0]
    if isinstance(value, (BaseUserFunctionVariable, UserMethodVariable, TorchFunctionVariable,
                          SkippedFunctionVariable, BuiltinVariable)):
        return ConstantVariable(True)
    if isinstance(value, (TensorVariable, BaseSequenceVariable, DictVariable)):
        return ConstantVariable(False)
    return None


def _getattr(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or not 2 <= len(args) <= 3 or not args[1].is_python_constant():
        return None
    obj, name = args[0], args[1].as_python_constant()
    from .user_objects import UserDefinedObjectVariable

    if len(args) == 3 and isinstance(obj, UserDefinedObjectVariable) and obj.customises_lookup():
        return obj.getattr_or(tx, name, args[2])  # the lookup runs once, as getattr runs it
    if len(args) == 3:
        present = _has_attribute(tx, obj, name)
        if not present:
            return args[2]
    return obj.var_getattr(tx, name)


def _hasattr(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 2 or not args[1].is_python_constant():
        return None
    return ConstantVariable(_has_attribute(tx, args[0], args[1].as_python_constant()))


def _has_attribute(tx, obj: VariableTracker, name: str) -> bool:
    from .user_objects import UserDefinedObjectVariable

    if obj.is_python_constant():
        return hasattr(obj.as_python_constant(), name)
    if isinstance(obj, TensorVariable):
        return obj.has_attribute(tx, name)
    if isinstance(obj, UserDefinedObjectVariable):
        return obj.has_attribute(tx, name)
    from .autograd_ctx import AutogradCtxVariable

    if isinstance(obj, AutogradCtxVariable):
        return obj.has_attribute(tx, name)
    from .containers import NamedTupleVariable

    if isinstance(obj, NamedTupleVariable) and (name in obj.attrs or hasattr(obj.python_type(), name)):
        return True  # a field, a method, or an attribute the trace set
    if isinstance(obj, (BaseSequenceVariable, DictVariable, SetVariable)) and obj.source is None \
            and not isinstance(obj, NamedTupleVariable):
        return hasattr(obj.python_type(), name)  # made while tracing: only its class's attributes
    if isinstance(obj, NamedTupleVariable) and obj.source is None and obj.python_type().__dictoffset__ == 0:
        return False
    return _getattr_succeeds(tx, obj, name)


def _getattr_succeeds(tx, obj: VariableTracker, name: str) -> bool:
    """hasattr as Python defines it: getattr, with AttributeError meaning False."""
    from ..exc import ObservedException
    from .exceptions import ExceptionVariable

    try:
        obj.var_getattr(tx, name)
    except ObservedException as raised:
        if isinstance(raised.exception, ExceptionVariable) and issubclass(raised.exception.cls, AttributeError):
            return False
        raise
    return True


def _setattr(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 3 or not args[1].is_python_constant():
        return None
    args[0].store_attr(tx, args[1].as_python_constant(), args[2])
    return ConstantVariable(None)


def _delattr(tx, args, kwargs) -> VariableTracker | None:
    from .user_objects import UserDefinedObjectVariable

    if kwargs or len(args) != 2 or not args[1].is_python_constant() or \
            not isinstance(args[0], UserDefinedObjectVariable):
        return None
    args[0].delete_attr(tx, args[1].as_python_constant())
    return ConstantVariable(None)


def _vars(tx, args, kwargs) -> VariableTracker | None:
    from .user_objects import UserDefinedObjectVariable

    if kwargs or len(args) != 1 or not isinstance(args[0], UserDefinedObjectVariable):
        return None
    return args[0].var_getattr(tx, "__dict__")


def _bool(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 1 or args[0].is_python_constant():
        return None
    return ConstantVariable(args[0].bool_value(tx))


def _to_python_scalar(name: str) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        if len(args) == 1 and not kwargs and isinstance(args[0], TensorVariable):
            from . import scalars

            return scalars.to_number(tx, args[0], {"int": int, "float": float}[name])
        if args and isinstance(args[0], TensorVariable):
            raise Unsupported("Tensor to Python scalar", f"{name}() of a tensor")
        return None
    return handler


def _id(tx, args, kwargs) -> VariableTracker | None:
    # Known only for objects that are one real object on every call the guards pass.
    from .object_keys import id_of

    if len(args) != 1 or kwargs:
        return None
    return id_of(tx, args[0])


def _hash(tx, args, kwargs) -> VariableTracker | None:
    """`hash()` of an object hashed by identity (its address); other hashes fold or run the
    class's `__hash__` (user_defined.py)."""
    from .object_keys import _UNKNOWN, bound_method_parts, hashes_by_identity, id_of, real_object

    if len(args) != 1 or kwargs or args[0].is_python_constant():
        return None
    if type(args[0]) is TupleVariable:  # the hash of its items' hashes, where they are known
        known = [(True, item.as_python_constant()) if item.is_python_constant() else real_object(tx, item)
                 for item in args[0].items]
        return ConstantVariable(hash(tuple(real for _, real in known))) if all(k for k, _ in known) else None
    method = bound_method_parts(tx, args[0])
    if method is not None and all(real is not _UNKNOWN for _, real in method):
        return ConstantVariable(hash(types.MethodType(method[1][1], method[0][1])))
    if not hashes_by_identity(args[0].python_type()):
        return None
    return id_of(tx, args[0], hash)


def contains(tx, items: list[VariableTracker], item: VariableTracker) -> bool:
    """`item in items` over trackers: each item compared with `is`, then `==`."""
    from .containers import values_equal

    return any(values_equal(tx, candidate, item) for candidate in items)


def _inplace_call(fn: Callable) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        return apply_operator(tx, fn, *args) if len(args) == 2 and not kwargs else None
    return handler


HANDLERS: dict[Callable, Callable] = {
    **{fn: _inplace_call(fn) for fn in INPLACE_TO_PLAIN}, operator.is_: _is, operator.is_not: _is_not,
    len: _len, isinstance: _isinstance, issubclass: _issubclass, type: _type, callable: _callable, id: _id, hash: _hash,
    getattr: _getattr, hasattr: _hasattr, setattr: _setattr, delattr: _delattr, vars: _vars, **ITERATION_HANDLERS,
    bool: _bool, int: _to_python_scalar("int"), float: _to_python_scalar("float"),
    str: text_handler("str"), repr: text_handler("repr"), format: text_handler("format"),
}
from .dataclass_fns import DATACLASS_HANDLERS  # noqa: E402  (it needs the classes above)

HANDLERS.update(DATACLASS_HANDLERS)
# Builtins that are pure functions of constant arguments; folding them is exact.
PURE_BUILTINS = frozenset({
    abs, min, max, divmod, pow, round, int, float, bool, complex, str, repr, ascii, hash, ord, chr,
    sorted, sum, any, all, len, isinstance, issubclass, callable, type, range, slice, hex, oct, bin,
    format, tuple, list, set, frozenset, dict,
    *(getattr(math, n) for n in dir(math) if callable(getattr(math, n)) and not n.startswith("_")),
    *(getattr(operator, n) for n in dir(operator) if callable(getattr(operator, n))
      and not n.startswith("_") and n not in ("attrgetter", "itemgetter", "methodcaller", "call")),
})
# Operators with a tensor meaning: recorded as call_function nodes, as torch.compile does.
TENSOR_OPERATORS = frozenset({
    abs, pow, round, operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.matmul, operator.neg, operator.pos, operator.invert,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge, operator.getitem,
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.setitem, operator.abs,
})


def is_pure_or_tensor_builtin(value: Any) -> bool:
    if isinstance(type(value).__hash__, types.FunctionType):
        return False  # a user class's __hash__ is its code, not ours to run
    try:
        return value in PURE_BUILTINS or value in TENSOR_OPERATORS or value in HANDLERS
    except TypeError:  # unhashable
        return False
