"""Calls. The layout below the arguments is `[NULL, callable]` (3.11, 3.12), `[callable, NULL]`
(3.13) or `[method, self]` (all three); `_pop_call` tells them apart without asking the version.
"""

from __future__ import annotations

from ...exc import Unsupported
from ...variables.base import NullVariable
from ...variables.containers import DictVariable
from .build import as_mapping


def _pop_call(tx, argc: int, kw_names: tuple[str, ...]) -> None:
    args = tx.popn(argc)
    second, first = tx.pop(), tx.pop()
    if isinstance(first, NullVariable):
        fn = second
    elif isinstance(second, NullVariable):
        fn = first
    else:
        fn, args = first, [second, *args]
    split = len(args) - len(kw_names)
    kwargs = dict(zip(kw_names, args[split:]))
    tx.push(tx.call(fn, args[:split], kwargs))


def KW_NAMES(tx, inst) -> None:  # 3.11, 3.12: names the keyword arguments of the next CALL
    tx.kw_names = inst.argval


def CALL(tx, inst) -> None:
    kw_names, tx.kw_names = tx.kw_names, ()
    _pop_call(tx, inst.argval, kw_names)


def CALL_KW(tx, inst) -> None:  # 3.13: the keyword names are a tuple on top of the stack
    kw_names = tx.pop().as_python_constant()
    _pop_call(tx, inst.argval, kw_names)


def CALL_FUNCTION_EX(tx, inst) -> None:
    kwargs = tx.pop() if inst.argval & 1 else DictVariable({})
    args = tx.unpack_iterable(tx.pop())
    second, first = tx.pop(), tx.pop()
    fn = second if isinstance(first, NullVariable) else first
    kwargs = as_mapping(tx, kwargs)
    tx.push(tx.call(fn, args, dict(kwargs.items)))


def BEFORE_WITH(tx, inst) -> None:
    manager = tx.pop()
    exit_method = manager.var_getattr(tx, "__exit__")
    result = manager.call_method(tx, "__enter__", [], {})
    tx.push(exit_method)
    tx.push(result)
