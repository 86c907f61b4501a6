"""The builtins that iterate: iter, next, enumerate, zip, map, filter, reversed make lazy
iterators (see iterators.py); sum, any, all, min, max, sorted and the container
constructors consume them, taking exactly the items eager Python takes (any() stops at the
first true item). Each handler returns None when the arguments are not its business."""

from __future__ import annotations

import operator
from typing import Callable

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import BaseSequenceVariable, ListVariable, TupleVariable, raise_observed
from .dicts import DictVariable, SetVariable
from .iterators import (EnumerateVariable, FilterVariable, IteratorVariable, MapVariable, ReversedVariable,
                        ZipVariable, get_iterator, unpack)
from .tensor import SizeVariable


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _iter(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 1:
        return None  # iter(callable, sentinel) is not modelled
    return get_iterator(tx, args[0])


def _next(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or not 1 <= len(args) <= 2:
        return None
    if not isinstance(args[0], IteratorVariable):
        raise_observed(TypeError, f"{args[0].python_type().__name__!r} object is not an iterator")
    item = args[0].next_item(tx)
    if item is None:
        if len(args) == 2:
            return args[1]
        raise_observed(StopIteration)
    return item


def _enumerate(tx, args, kwargs) -> VariableTracker | None:
    start = kwargs.pop("start", args[1] if len(args) > 1 else ConstantVariable(0))
    if kwargs or not 1 <= len(args) <= 2 or not start.is_python_constant():
        return None
    return EnumerateVariable(get_iterator(tx, args[0]), start.as_python_constant())


def _zip(tx, args, kwargs) -> VariableTracker | None:
    strict = kwargs.pop("strict", ConstantVariable(False))
    if kwargs or not strict.is_python_constant():
        return None
    return ZipVariable([get_iterator(tx, a) for a in args], bool(strict.as_python_constant()))


def _map(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) < 2:
        return None
    return MapVariable(args[0], [get_iterator(tx, a) for a in args[1:]])


def _filter(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 2:
        return None
    return FilterVariable(args[0], get_iterator(tx, args[1]))


def _reversed(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or len(args) != 1:
        return None
    value = args[0]
    if isinstance(value, (BaseSequenceVariable, SizeVariable)):
        return ReversedVariable(value)
    if value.is_python_constant() and isinstance(value.as_python_constant(), (range, tuple, str, bytes)):
        return ReversedVariable(value)
    return None


def _sorted(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1:
        return None
    key = kwargs.pop("key", ConstantVariable(None))
    reverse = kwargs.pop("reverse", ConstantVariable(False))
    if kwargs or not reverse.is_python_constant():
        return None
    result = ListVariable(unpack(tx, args[0]))
    result.call_method(tx, "sort", [], {"key": key, "reverse": reverse})
    return result


def _sum(tx, args, kwargs) -> VariableTracker | None:
    from .builtins import apply_operator

    start = kwargs.pop("start", args[1] if len(args) > 1 else ConstantVariable(0))
    if kwargs or not 1 <= len(args) <= 2:
        return None
    iterator = get_iterator(tx, args[0])
    total = start
    while (item := iterator.next_item(tx)) is not None:  # each item added as it is made
        total = apply_operator(tx, operator.add, total, item)
    return total


def _min_max(pick: Callable) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        default = kwargs.pop("default", None)
        if kwargs or not args:
            return None
        items = unpack(tx, args[0]) if len(args) == 1 else args
        if not items and default is not None:
            return default
        if not items:
            raise_observed(ValueError, f"{pick.__name__}() iterable argument is empty")
        if len(items) > 1 and _symbolic_numbers(items):
            # A dynamic float or a number read from a tensor: compared in the graph, pairwise
            # (torch.sym_min / sym_max), never by its value.
            from .builtins import symbolic_call

            constants = [item for item in items if item.is_python_constant()]
            if len(constants) > 1:  # folded first, where the first of them stood
                folded = ConstantVariable(pick(c.as_python_constant() for c in constants))
                later = {id(c) for c in constants[1:]}
                items = [folded if item is constants[0] else item for item in items if id(item) not in later]
            result = items[0]
            for item in items[1:]:
                result = symbolic_call(tx, pick, [result, item], {}) or \
                    ConstantVariable(pick(result.as_python_constant(), item.as_python_constant()))
            return result
        if not all(item.is_python_constant() for item in items):
            raise Unsupported("Unsupported builtin call",
                              f"{pick.__name__}() of values that are not constants (comparing tensors needs data)")
        values = [item.as_python_constant() for item in items]
        return items[values.index(pick(values))]
    return handler


def _symbolic_numbers(items: list[VariableTracker]) -> bool:
    from .tensor import SymNodeVariable

    symbols = [item for item in items if isinstance(item, SymNodeVariable)]
    return len(symbols) + sum(item.is_python_constant() for item in items) == len(items) \
        and any(s.is_unbacked() or s.python_type() is float for s in symbols)


def _any_all(stop_at: bool) -> Callable:
    def handler(tx, args, kwargs) -> VariableTracker | None:
        if kwargs or len(args) != 1:
            return None
        iterator = get_iterator(tx, args[0])
        while (item := iterator.next_item(tx)) is not None:
            if item.bool_value(tx) is stop_at:
                return ConstantVariable(stop_at)  # the rest is never produced
        return ConstantVariable(not stop_at)
    return handler


def _container(kind: type) -> Callable:
    def build(tx, args, kwargs) -> VariableTracker | None:
        if kind is dict:
            return _dict(tx, args, kwargs)
        if kwargs or len(args) > 1:
            return None
        items = unpack(tx, args[0]) if args else []
        if kind is tuple:
            return TupleVariable(items)
        if kind is list:
            return ListVariable(items)
        return SetVariable(items)
    return build


def _dict(tx, args, kwargs) -> VariableTracker | None:
    if len(args) > 1:
        return None
    result = DictVariable({})
    result.call_method(tx, "update", list(args), kwargs)
    return result


ITERATION_HANDLERS: dict[Callable, Callable] = {
    iter: _iter, next: _next, enumerate: _enumerate, zip: _zip, map: _map, filter: _filter,
    reversed: _reversed, sorted: _sorted, sum: _sum, min: _min_max(min), max: _min_max(max),
    any: _any_all(True), all: _any_all(False),
    tuple: _container(tuple), list: _container(list), set: _container(set), dict: _container(dict),
}
