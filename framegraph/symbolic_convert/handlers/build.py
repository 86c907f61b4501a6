"""Building containers and strings, and unpacking sequences."""

from __future__ import annotations

from ...exc import Unsupported
from ...variables.constant import ConstantVariable
from ...variables.containers import BaseSequenceVariable, ListVariable, TupleVariable, raise_observed
from ...variables.dicts import DictVariable, SetVariable, constant_key
from ...variables.iterators import get_iterator
from ...variables.object_text import text_handler, text_of
from ...variables.sym_builtins import formats_as_constant
from ...variables.user_objects import UserDefinedObjectVariable
from ...variables.tensor import SizeVariable


def BUILD_TUPLE(tx, inst) -> None:
    tx.push(TupleVariable(tx.popn(inst.argval)))


def BUILD_LIST(tx, inst) -> None:
    tx.push(ListVariable(tx.popn(inst.argval)))


def BUILD_SET(tx, inst) -> None:
    made = SetVariable([])
    for item in tx.popn(inst.argval):
        made.add(item, tx)
    tx.push(made)


def SET_ADD(tx, inst) -> None:
    value = tx.pop()
    # Through the method: a set handed over at a graph break is the caller's, changed after the graph.
    tx.peek(inst.argval).call_method(tx, "add", [value], {})


def SET_UPDATE(tx, inst) -> None:
    values = tx.unpack_iterable(tx.pop())
    target = tx.peek(inst.argval)
    for value in values:
        target.call_method(tx, "add", [value], {})


def BUILD_MAP(tx, inst) -> None:
    flat = tx.popn(2 * inst.argval)
    tx.push(DictVariable({constant_key(k, tx): v for k, v in zip(flat[::2], flat[1::2])}))


def BUILD_CONST_KEY_MAP(tx, inst) -> None:
    keys = tx.pop().as_python_constant()
    tx.push(DictVariable(dict(zip(keys, tx.popn(inst.argval)))))


# The container these extend is usually one the comprehension or display just built, but
# after a graph break it can be a resume function's argument: a caller's object. Going
# through call_method records that change in the side-effect ledger.
def LIST_APPEND(tx, inst) -> None:
    value = tx.pop()
    tx.peek(inst.argval).call_method(tx, "append", [value], {})


def LIST_EXTEND(tx, inst) -> None:
    values = tx.pop()
    tx.peek(inst.argval).call_method(tx, "extend", [values], {})


def MAP_ADD(tx, inst) -> None:
    value, key = tx.pop(), tx.pop()
    tx.peek(inst.argval).call_method(tx, "__setitem__", [key, value], {})


def DICT_UPDATE(tx, inst) -> None:
    other = tx.pop()
    if not isinstance(other, DictVariable):
        raise Unsupported("Unsupported builtin call", f"dict update from {other}")
    tx.peek(inst.argval).call_method(tx, "update", [other], {})


def as_mapping(tx, other):
    """What `**other` unpacks: a dict tracker, or a mapping object's items read as CPython
    reads them (a dict subclass's storage, else its `keys()` and `__getitem__`)."""
    if isinstance(other, UserDefinedObjectVariable) and other.has_attribute(tx, "keys"):
        from ...variables.dict_subclass import _pairs

        return DictVariable(dict(_pairs(tx, [other], {}, ordered=False)))
    if not isinstance(other, DictVariable):
        if other.is_python_constant() and not hasattr(other.python_type(), "keys"):
            raise_observed(TypeError, f"argument after ** must be a mapping, not {other.python_type().__name__}")
        raise Unsupported("Unsupported builtin call", f"** unpacking of {other}")
    return other


def DICT_MERGE(tx, inst) -> None:
    other = as_mapping(tx, tx.pop())
    target = tx.peek(inst.argval)
    repeated = target.items.keys() & other.items.keys()
    if repeated:
        # Python raises TypeError here: let the eager run raise it from the user's line.
        raise Unsupported("Unsupported exception handling",
                          f"got multiple values for keyword argument {sorted(repeated)[0]!r}")
    target.call_method(tx, "update", [other], {})


def UNPACK_SEQUENCE(tx, inst) -> None:
    count, value = inst.argval, tx.pop()
    if isinstance(value, (BaseSequenceVariable, SizeVariable)):  # a list or tuple: by its length
        items = list(value.items)
        if len(items) > count:
            raise_observed(ValueError, f"too many values to unpack (expected {count})")
    else:
        # Any other iterable is stepped: `count` items, then one more to check it has ended.
        iterator, items = get_iterator(tx, value), []
        while len(items) < count and (item := iterator.next_item(tx)) is not None:
            items.append(item)
        if len(items) == count and iterator.next_item(tx) is not None:
            raise_observed(ValueError, f"too many values to unpack (expected {count})")
    if len(items) < count:
        raise_observed(ValueError, f"not enough values to unpack (expected {count}, got {len(items)})")
    for item in reversed(items):
        tx.push(item)


def UNPACK_EX(tx, inst) -> None:
    before, after = inst.argval & 0xFF, inst.argval >> 8
    items = tx.unpack_iterable(tx.pop())
    if len(items) < before + after:
        raise_observed(ValueError, f"not enough values to unpack (expected at least {before + after}, "
                                   f"got {len(items)})")
    middle = ListVariable(items[before:len(items) - after])
    for item in reversed([*items[:before], middle, *items[len(items) - after:]]):
        tx.push(item)


def BUILD_STRING(tx, inst) -> None:
    parts = tx.popn(inst.argval)
    tx.push(ConstantVariable("".join(_constant_str(p) for p in parts)))


def _constant_str(value) -> str:
    if not value.is_python_constant() or not isinstance(value.as_python_constant(), str):
        raise Unsupported("Unsupported builtin call", f"string formatting of {value}")
    return value.as_python_constant()


_CONVERSIONS = {0: None, 1: str, 2: repr, 3: ascii}


def _format(value, conversion, spec: str, tx=None) -> ConstantVariable:
    value = formats_as_constant(value)  # a symbolic size prints its value, guarded
    if isinstance(value, UserDefinedObjectVariable):  # the class's own __str__, __repr__, __format__
        if conversion:
            value = text_of(tx, value, "str" if conversion == 1 else "repr")
            if conversion == 3:  # ascii(): repr() with what is not ASCII escaped
                value = ConstantVariable(value.as_python_constant().encode("ascii", "backslashreplace").decode())
            conversion = 0
        else:
            return text_of(tx, value, "format", ConstantVariable(spec))
    if not value.is_python_constant() and tx is not None:
        # another object whose text is known (a function, a module, a deque of constants...)
        kind = {0: "format", 1: "str", 2: "repr"}.get(conversion)
        args = [value, ConstantVariable(spec)] if kind == "format" else [value]
        text = text_handler(kind)(tx, args, {}) if kind is not None else None
        if text is not None and text.is_python_constant():
            value, conversion = text, 0
    if not value.is_python_constant():
        raise Unsupported("Unsupported builtin call", f"formatting {value} in an f-string")
    raw = value.as_python_constant()
    convert = _CONVERSIONS[conversion]
    return ConstantVariable(format(convert(raw) if convert else raw, spec))


def FORMAT_VALUE(tx, inst) -> None:  # 3.11, 3.12
    spec = _constant_str(tx.pop()) if inst.argval & 4 else ""
    tx.push(_format(tx.pop(), inst.argval & 3, spec, tx))


def CONVERT_VALUE(tx, inst) -> None:  # 3.13
    value = formats_as_constant(tx.pop())
    if isinstance(value, UserDefinedObjectVariable) and inst.argval in (1, 2):
        tx.push(text_of(tx, value, {1: "str", 2: "repr"}[inst.argval]))
        return
    if not value.is_python_constant() and inst.argval in (1, 2):
        text = text_handler({1: "str", 2: "repr"}[inst.argval])(tx, [value], {})
        if text is not None and text.is_python_constant():
            tx.push(text)
            return
    if not value.is_python_constant():
        raise Unsupported("Unsupported builtin call", f"formatting {value} in an f-string")
    tx.push(ConstantVariable(_CONVERSIONS[inst.argval](value.as_python_constant())))


def FORMAT_SIMPLE(tx, inst) -> None:  # 3.13
    tx.push(_format(tx.pop(), 0, "", tx))


def FORMAT_WITH_SPEC(tx, inst) -> None:  # 3.13
    spec = _constant_str(tx.pop())
    tx.push(_format(tx.pop(), 0, spec, tx))
