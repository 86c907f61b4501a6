"""The builtins that iterate: iter, next, enumerate, zip, map, filter, reversed make lazy
iterators (see iterators.py); sum, any, all, min, max, sorted and the container
constructors consume them, taking exactly the items eager Python takes (any() stops at the
first true item). Each handler returns None when the arguments are not its business."""

from __future__ import annotations

import operator
from typing import Callable

import torch

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import BaseSequenceVariable, ListVariable, TupleVariable, raise_observed
from .dicts import DictVariable, SetVariable
from .iterators import (CallableIteratorVariable, EnumerateVariable, FilterVariable, IteratorVariable, MapVariable, ReversedVariable,
                        ZipVariable, get_iterator, unpack)
from .nn_module import ModuleSliceVariable, NNModuleVariable
from .tensor import SizeVariable, SymNodeVariable


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _iter(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or not 1 <= len(args) <= 2:
        return None
    if len(args) == 2:
        return CallableIteratorVariable(args[0], args[1])
    return get_iterator(tx, args[0])


def _next(tx, args, kwargs) -> VariableTracker | None:
    if kwargs or not 1 <= len(args) <= 2:
        return None
    if not isinstance(args[0], IteratorVariable):
        raise_observed(TypeError, f"{args[0].python_type().__name__!r} object is not an iterator")
    if len(args) == 1:
        return args[0].call_method(tx, "__next__", [], {})  # a generator's StopIteration carries its value
    item = args[0].next_item(tx)
    return args[1] if item is None else item


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
    if isinstance(value, DictVariable):
        from .dict_views import ReversedDictIteratorVariable

        return ReversedDictIteratorVariable(value, "keys")
    from .iterators import DictViewVariable
    from .user_objects import UserDefinedObjectVariable

    if isinstance(value, DictViewVariable) or (isinstance(value, UserDefinedObjectVariable)
                                               and value.has_special("__reversed__")):
        return value.call_method(tx, "__reversed__", [], {})
    if value.is_python_constant() and isinstance(value.as_python_constant(), (range, tuple, str, bytes)):
        return ReversedVariable(value)
    if isinstance(value, (NNModuleVariable, ModuleSliceVariable)) \
            and issubclass(value.python_type(), (torch.nn.ModuleList, torch.nn.Sequential)):
        # A ModuleList or Sequential: reversed() reads it through __len__ and __getitem__.
        return ReversedVariable(TupleVariable(value.iterate(tx)))
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
        key = kwargs.pop("key", None)
        if kwargs or not args:
            return None
        if default is not None and len(args) > 1:
            raise_observed(TypeError, f"Cannot specify a default for {pick.__name__}() with multiple positional "
                                      "arguments")
        if key is not None and key.is_python_constant() and key.as_python_constant() is None:
            key = None
        if key is None and default is None and len(args) == 2 and any(isinstance(a, SymNodeVariable) for a in args):
            return None  # two numbers, one a symbol: torch.sym_min / sym_max (sym_builtins.py)
        # Each item's key is computed as the item is reached, as CPython computes it.
        items, keys = [], []
        iterator = get_iterator(tx, args[0]) if len(args) == 1 else None
        for item in (iter(lambda: iterator.next_item(tx), None) if iterator is not None else args):
            items.append(item)
            keys.append(key.call_function(tx, [item], {}) if key is not None else item)
        if not items and default is not None:
            return default
        if not items:
            raise_observed(ValueError, f"{pick.__name__}() {'iterable argument' if len(args) == 1 else 'arg'} "
                                       "is empty")
        from .user_objects import UserDefinedObjectVariable

        if any(isinstance(k, UserDefinedObjectVariable) for k in keys):
            from .builtins import apply_operator

            better = operator.lt if pick is min else operator.gt  # the objects' own __lt__ / __gt__
            best = 0
            for i in range(1, len(keys)):
                if apply_operator(tx, better, keys[i], keys[best]).bool_value(tx):
                    best = i
            return items[best]
        if key is None and len(items) > 1 and _symbolic_numbers(items):
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
        if not all(k.is_python_constant() or isinstance(k, SymNodeVariable) for k in keys):
            raise Unsupported("Unsupported builtin call",
                              f"{pick.__name__}() of values that are not constants (comparing tensors needs data)")
        values = [k.as_python_constant() for k in keys]  # a symbolic size is guarded to its value
        best = 0
        try:
            for i in range(1, len(values)):
                if (values[i] < values[best]) if pick is min else (values[i] > values[best]):
                    best = i  # the first of equal items wins, as in CPython
        except TypeError as error:
            raise_observed(TypeError, str(error))
        return items[best]
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
