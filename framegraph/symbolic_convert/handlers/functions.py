"""Making functions: MAKE_FUNCTION and its 3.13 companion SET_FUNCTION_ATTRIBUTE."""

from __future__ import annotations

from ...exc import Unsupported
from ...variables.containers import DictVariable
from ...variables.user_functions import NestedFunctionVariable

_DEFAULTS, _KWDEFAULTS, _ANNOTATIONS, _CLOSURE = 1, 2, 4, 8


def MAKE_FUNCTION(tx, inst) -> None:
    # 3.11/3.12 pop the attributes named by the flag bits below the code; 3.13 has no flags
    # and sets each attribute afterwards with SET_FUNCTION_ATTRIBUTE.
    code = tx.pop().as_python_constant()
    flags = inst.argval or 0
    fn = NestedFunctionVariable(code, tx.f_globals, [], {}, ())
    for flag in (_CLOSURE, _ANNOTATIONS, _KWDEFAULTS, _DEFAULTS):
        if flags & flag:
            _set_attribute(tx, fn, flag, tx.pop())
    tx.push(fn)


def SET_FUNCTION_ATTRIBUTE(tx, inst) -> None:
    fn, value = tx.pop(), tx.pop()
    if not isinstance(fn, NestedFunctionVariable):  # made before a graph break, a real function
        raise Unsupported("Unsupported frame", "SET_FUNCTION_ATTRIBUTE on a function made outside the trace")
    _set_attribute(tx, fn, inst.argval, value)
    tx.push(fn)


def _set_attribute(tx, fn: NestedFunctionVariable, flag: int, value) -> None:
    if flag == _CLOSURE:
        fn.closure = tuple(value.items)
        for box in fn.closure:
            box.captured += 1
    elif flag == _DEFAULTS:
        fn.positional_defaults = tx.unpack_iterable(value)  # often one constant tuple
    elif flag == _KWDEFAULTS:
        if not isinstance(value, DictVariable):
            raise Unsupported("Unsupported builtin call", f"keyword defaults {value}")
        fn.keyword_defaults = dict(value.items)
    elif flag == _ANNOTATIONS:
        # (name, annotation, name, annotation...), as the function's __annotations__ dict
        items = tx.unpack_iterable(value)
        fn.attrs["__annotations__"] = DictVariable(
            {items[i].as_python_constant(): items[i + 1] for i in range(0, len(items), 2)})
    else:
        raise Unsupported("Missing bytecode handler", f"function attribute flag {flag}")

