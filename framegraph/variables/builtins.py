"""Python's builtins and operators, with CPython's semantics, over trackers.

Three tiers, tried in order by `BuiltinVariable.call_function`:
1. `HANDLERS`: builtins whose meaning depends on what the arguments are (len of a tensor,
   isinstance, iteration helpers such as zip and enumerate, getattr...). A handler returns
   None when the arguments are not its business.
2. `PURE_BUILTINS`: pure functions of constant arguments, folded at trace time.
3. `TENSOR_OPERATORS`: operators with a tensor meaning, recorded as graph nodes.

Iteration helpers work on the items of their arguments, which are all known while tracing,
so `zip`, `map`, `enumerate`... produce iterators over known items.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

from ..exc import Unsupported
from .base import KnownValueVariable, VariableTracker
from .constant import ConstantVariable, fold
from .containers import BaseSequenceVariable, DictVariable, ListVariable, SetVariable, TupleVariable
from .iterators import ListIteratorVariable
from .tensor import SymNodeVariable, TensorVariable


class BuiltinVariable(KnownValueVariable):
    """A builtin function such as `len` or `isinstance`, or a function of `operator`/`math`."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        handler = HANDLERS.get(self.value)
        if handler is not None:
            result = handler(tx, list(args), dict(kwargs))
            if result is not None:
                return result
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

        return user_operator(tx, fn, list(args))
    if any(isinstance(a, (TensorVariable, SymNodeVariable)) for a in args):
        if fn in _INPLACE_OF and not isinstance(args[0], TensorVariable):
            fn = _INPLACE_OF[fn]  # `n += t` for a number n is `n = n + t` (a graph can hold no `0 += t`)
        return tx.output.call_function(fn, list(args), {})
    if all(a.is_python_constant() for a in args):
        return fold(fn, *args)
    sequence = _sequence_operator(tx, fn, args)
    if sequence is not None:
        return sequence
    names = ", ".join(type(a).__name__ for a in args)
    raise Unsupported("Unsupported builtin call", f"operator {fn.__name__} on ({names})")


_INPLACE_OF = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
    operator.ipow: operator.pow, operator.imatmul: operator.matmul, operator.iand: operator.and_,
    operator.ior: operator.or_, operator.ixor: operator.xor, operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}


def _sequence_operator(tx, fn, args) -> VariableTracker | None:
    """Concatenation, repetition and equality of tuples and lists whose items are not all
    constants (all-constant ones fold)."""
    a, *rest = [_as_sequence(arg) for arg in args]
    if not isinstance(a, BaseSequenceVariable) or not rest:
        return None
    b = rest[0]
    if fn in (operator.add, operator.iadd) and type(b) is type(a):
        if fn is operator.iadd and isinstance(a, ListVariable):
            a.call_method(tx, "extend", [b], {})  # `xs += ys` extends the same list
            return a
        return type(a)(a.items + b.items)
    if fn is operator.mul and b.is_python_constant():
        return type(a)(a.items * b.as_python_constant())
    return None


def _as_sequence(value: VariableTracker) -> VariableTracker:
    """A constant tuple or list (`()` from LOAD_CONST) as a tracker of its items."""
    if type(value) is ConstantVariable and type(value.value) in (tuple, list):
        kind = TupleVariable if type(value.value) is tuple else ListVariable
        return kind([ConstantVariable(item) for item in value.value])
    return value


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
    if isinstance(value, (BaseSequenceVariable, DictVariable, SetVariable)):
        return ConstantVariable(len(value.items))
    if value.is_python_constant():
        return None  # folded
    return value.call_method(tx, "__len__", [], {})


def _isinstance(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 2 or kwargs or not args[1].is_python_constant():
        return None
    classes = args[1].as_python_constant()
    try:
        return ConstantVariable(issubclass(args[0].python_type(), classes))
    except TypeError:
        return None


def _type(tx, args, kwargs) -> VariableTracker | None:
    from ..source import TypeSource
    from .user_objects import UserDefinedObjectVariable

    if len(args) != 1 or kwargs:
        return None
    (value,) = args
    # An object's class can be read again (and its attributes guarded) through type(obj).
    source = TypeSource(value.source) if isinstance(value, UserDefinedObjectVariable) and value.source else None
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
        return hasattr(obj.example, name)
    if isinstance(obj, UserDefinedObjectVariable):
        return obj.has_attribute(tx, name)
    raise Unsupported("Unsupported builtin call", f"hasattr on {obj}")


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


def _iter(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 1:
        return None
    if isinstance(args[0], ListIteratorVariable):
        return args[0]
    return ListIteratorVariable(tx.unpack_iterable(args[0]))


def _next(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or not 1 <= len(args) <= 2 or not isinstance(args[0], ListIteratorVariable):
        return None
    item = args[0].next_item()
    if item is None:
        if len(args) == 2:
            return args[1]
        raise Unsupported("Unsupported exception handling", "next() raised StopIteration")
    return item


def _enumerate(tx, args, kwargs) -> VariableTracker | None:
    start = kwargs.pop("start", args[1] if len(args) > 1 else ConstantVariable(0))
    if kwargs or not start.is_python_constant():
        return None
    first = start.as_python_constant()
    return ListIteratorVariable([TupleVariable([ConstantVariable(first + i), item])
                                 for i, item in enumerate(tx.unpack_iterable(args[0]))])


def _zip(tx, args, kwargs) -> VariableTracker | None:
    strict = kwargs.pop("strict", ConstantVariable(False))
    if kwargs:
        return None
    columns = [tx.unpack_iterable(a) for a in args]
    if strict.as_python_constant() and len({len(c) for c in columns}) > 1:
        raise Unsupported("Unsupported exception handling", "zip(strict=True): arguments have different lengths")
    return ListIteratorVariable([TupleVariable(list(row)) for row in zip(*columns)])


def _map(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) < 2:
        return None
    fn, columns = args[0], [tx.unpack_iterable(a) for a in args[1:]]
    return ListIteratorVariable([fn.call_function(tx, list(row), {}) for row in zip(*columns)])


def _filter(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 2:
        return None
    fn, items = args[0], tx.unpack_iterable(args[1])
    keep = (lambda item: item.bool_value(tx)) if _is_none(fn) else \
        (lambda item: fn.call_function(tx, [item], {}).bool_value(tx))
    return ListIteratorVariable([item for item in items if keep(item)])


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _reversed(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 1:
        return None
    value = args[0]
    if isinstance(value, BaseSequenceVariable):
        return ListIteratorVariable(list(reversed(value.items)))
    if value.is_python_constant() and isinstance(value.as_python_constant(), (range, tuple, list, str)):
        return ListIteratorVariable([ConstantVariable(v) for v in reversed(value.as_python_constant())])
    return None


def _sorted(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1:
        return None
    items = tx.unpack_iterable(args[0])
    key = kwargs.pop("key", ConstantVariable(None))
    reverse = kwargs.pop("reverse", ConstantVariable(False))
    if kwargs or not reverse.is_python_constant():
        return None
    keys = items if _is_none(key) else [key.call_function(tx, [item], {}) for item in items]
    order = sorted(range(len(items)), key=lambda i: _Ordered(keys[i]), reverse=bool(reverse.as_python_constant()))
    return ListVariable([items[i] for i in order])


class _Ordered:
    """Orders trackers as Python orders their values, comparing tuples item by item, so
    `sorted(d.items())` works while only the (constant) keys are ever compared."""

    __slots__ = ("value",)

    def __init__(self, value: VariableTracker) -> None:
        self.value = value

    def __lt__(self, other: "_Ordered") -> bool:
        a, b = self.value, other.value
        if a.is_python_constant() and b.is_python_constant():
            return a.as_python_constant() < b.as_python_constant()
        if isinstance(a, TupleVariable) and isinstance(b, TupleVariable):
            for x, y in zip(a.items, b.items):
                if _Ordered(x) < _Ordered(y):
                    return True
                if _Ordered(y) < _Ordered(x):
                    return False
            return len(a.items) < len(b.items)
        raise Unsupported("Unsupported builtin call", "sorting values that are not constants")


def _sum(tx, args, kwargs) -> VariableTracker | None:
    start = kwargs.pop("start", args[1] if len(args) > 1 else ConstantVariable(0))
    if kwargs or not args:
        return None
    total = start
    for item in tx.unpack_iterable(args[0]):
        total = apply_operator(tx, operator.add, total, item)
    return total


def _min_max(pick: Callable) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        default = kwargs.pop("default", None)
        if kwargs:
            return None
        items = tx.unpack_iterable(args[0]) if len(args) == 1 else args
        if not items and default is not None:
            return default
        if not items or not _constants(items):
            raise Unsupported("Unsupported builtin call",
                              f"{pick.__name__}() of values that are not constants (comparing tensors needs data)")
        values = [item.as_python_constant() for item in items]
        return items[values.index(pick(values))]
    return handler


def _any_all(combine: Callable) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        if kwargs or len(args) != 1:
            return None
        return ConstantVariable(combine(item.bool_value(tx) for item in tx.unpack_iterable(args[0])))
    return handler


def _container(kind: type) -> Callable:
    def build(tx, args, kwargs) -> VariableTracker | None:
        if kind is dict:
            return _dict(tx, args, kwargs)
        if kwargs or len(args) > 1:
            return None
        items = tx.unpack_iterable(args[0]) if args else []
        if kind is tuple:
            return TupleVariable(items)
        if kind is list:
            return ListVariable(items)
        return SetVariable(items)
    return build


def _dict(tx, args, kwargs) -> VariableTracker | None:
    if len(args) > 1:
        return None
    items: dict = {}
    if args:
        source = args[0]
        if isinstance(source, DictVariable):
            items.update(source.items)
        else:
            for pair in tx.unpack_iterable(source):
                key, value = tx.unpack_iterable(pair)
                items[key.as_python_constant()] = value
    items.update(kwargs)
    return DictVariable(items)


def _bool(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 1 or args[0].is_python_constant():
        return None
    return ConstantVariable(args[0].bool_value(tx))


def _to_python_scalar(name: str) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        if args and isinstance(args[0], TensorVariable):
            raise Unsupported("Tensor to Python scalar", f"{name}() of a tensor")
        return None
    return handler


def _id(tx, args, kwargs) -> VariableTracker | None:
    # Safe only for objects the guards pin by identity (they have a source and are not copied).
    from .user_objects import UserDefinedObjectVariable

    if len(args) == 1 and isinstance(args[0], UserDefinedObjectVariable) and args[0].source is not None:
        tx.output.guards.add(_id_guard(), args[0].source, args[0].value, tx.output.user_line)
        return ConstantVariable(id(args[0].value))
    return None


def _id_guard():
    from ..guards import GuardKind

    return GuardKind.ID_MATCH


def identical(tx, a: VariableTracker, b: VariableTracker) -> bool:
    """`a is b` for trackers that are not both constants, where identity is known: functions
    pinned by the guards or by their (library) class, and objects of user classes and
    modules, bound methods and functions made while tracing, which have one tracker each."""
    from ..guards import GuardKind
    from .user_functions import NestedFunctionVariable, UserMethodVariable
    from .user_objects import UserDefinedObjectVariable

    if a is b:
        return True
    left, right = _pinned(tx, a), _pinned(tx, b)
    if left is not _UNKNOWN and right is not _UNKNOWN:
        return left is right
    try:
        if a.python_type() is not b.python_type():
            return False
    except Unsupported:
        pass
    else:
        if isinstance(a, UserDefinedObjectVariable) and isinstance(b, UserDefinedObjectVariable):
            if a.source is not None and b.source is not None:  # and must stay two objects
                pair = (a.source, b.source)
                tx.output.guards.add(GuardKind.DISTINCT, None, pair, tx.output.user_line, key=pair)
            return False
        if isinstance(a, NestedFunctionVariable) or isinstance(b, NestedFunctionVariable):
            return False  # made by this call: no other function is it
        if isinstance(a, UserMethodVariable) and isinstance(b, UserMethodVariable) \
                and a.source is None and b.source is None:
            return False  # each attribute read makes a new bound method
    raise Unsupported("Unsupported builtin call", f"`is` between {a} and {b}")


_UNKNOWN = object()


def _pinned(tx, value: VariableTracker) -> Any:
    """The real object a tracker stands for, when later calls must see that same object."""
    from ..guards import GuardKind
    from .base import MethodVariable
    from .user_functions import UserFunctionVariable

    if isinstance(value, UserFunctionVariable) and value.source is not None:
        tx.output.guards.add(GuardKind.ID_MATCH, value.source, value.fn, tx.output.user_line)
        return value.fn
    if isinstance(value, MethodVariable) and value.obj.is_python_constant() \
            and isinstance(value.obj.as_python_constant(), type):
        return getattr(value.obj.as_python_constant(), value.name)  # a library class's attribute
    if value.is_python_constant():
        return value.as_python_constant()
    return _UNKNOWN


def contains(tx, items: list[VariableTracker], item: VariableTracker) -> bool:
    """`item in items` over trackers: each item compared with `is`, then `==`."""
    for candidate in items:
        if candidate.is_python_constant() and item.is_python_constant():
            left, right = candidate.as_python_constant(), item.as_python_constant()
            if left is right or left == right:
                return True
        elif identical(tx, candidate, item):
            return True
        elif not (_equal_means_identical(candidate) and _equal_means_identical(item)):
            raise Unsupported("Unsupported builtin call", f"`==` between {candidate} and {item}")
    return False


def _equal_means_identical(value: VariableTracker) -> bool:
    """`==` against an object of a user class without __eq__ falls back to identity."""
    from .user_objects import UserDefinedObjectVariable

    if isinstance(value, UserDefinedObjectVariable):
        return value.python_type().__eq__ is object.__eq__
    return value.is_python_constant() and type(value.as_python_constant()).__module__ == "builtins"


HANDLERS: dict[Callable, Callable] = {
    len: _len, isinstance: _isinstance, type: _type, callable: _callable, id: _id,
    getattr: _getattr, hasattr: _hasattr, setattr: _setattr, delattr: _delattr, vars: _vars,
    iter: _iter, next: _next, enumerate: _enumerate, zip: _zip, map: _map, filter: _filter,
    reversed: _reversed, sorted: _sorted, sum: _sum, min: _min_max(min), max: _min_max(max),
    any: _any_all(any), all: _any_all(all),
    tuple: _container(tuple), list: _container(list), set: _container(set), dict: _container(dict),
    bool: _bool, int: _to_python_scalar("int"), float: _to_python_scalar("float"),
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
    try:
        return value in PURE_BUILTINS or value in TENSOR_OPERATORS or value in HANDLERS
    except TypeError:  # unhashable
        return False
