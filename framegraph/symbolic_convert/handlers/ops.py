"""Operators: binary, unary, comparison, identity, membership and subscripts."""

from __future__ import annotations

import operator

import torch

from ...exc import Unsupported
from ...variables.base import VariableTracker
from ...variables.builtins import apply_operator, same_object
from ...variables.constant import ConstantVariable, fold
from ...variables.exceptions import generator_error
from ...variables.containers import (BaseSequenceVariable, DictVariable, ListVariable, SetVariable, TupleVariable,
                                     values_equal)
from ...variables.iterators import IteratorVariable
from ...variables.deques import DequeVariable
from ...variables.slices import make_slice
from ...variables.keyed_dicts import TensorKeyedDictVariable
from ...variables.tensor import SymNodeVariable, TensorVariable
from ...variables.instance_dict import InstanceDictVariable
from ...variables.user_defined import as_index
from ...variables.user_objects import UserDefinedObjectVariable

BINARY_OPERATORS = {
    "+": operator.add, "&": operator.and_, "//": operator.floordiv, "<<": operator.lshift,
    "@": operator.matmul, "*": operator.mul, "%": operator.mod, "|": operator.or_,
    "**": operator.pow, ">>": operator.rshift, "-": operator.sub, "/": operator.truediv,
    "^": operator.xor,
    "+=": operator.iadd, "&=": operator.iand, "//=": operator.ifloordiv, "<<=": operator.ilshift,
    "@=": operator.imatmul, "*=": operator.imul, "%=": operator.imod, "|=": operator.ior,
    "**=": operator.ipow, ">>=": operator.irshift, "-=": operator.isub, "/=": operator.itruediv,
    "^=": operator.ixor,
}
COMPARE_OPERATORS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
                     ">": operator.gt, ">=": operator.ge}


def BINARY_OP(tx, inst) -> None:
    b, a = tx.pop(), tx.pop()
    tx.push(apply_operator(tx, BINARY_OPERATORS[inst.argval], a, b))


def COMPARE_OP(tx, inst) -> None:
    b, a = tx.pop(), tx.pop()
    tx.push(apply_operator(tx, COMPARE_OPERATORS[inst.argval], a, b))


def _unary(fn):
    def handler(tx, inst) -> None:
        tx.push(apply_operator(tx, fn, tx.pop()))
    return handler


UNARY_NEGATIVE = _unary(operator.neg)
UNARY_INVERT = _unary(operator.invert)
UNARY_POSITIVE = _unary(operator.pos)


def UNARY_NOT(tx, inst) -> None:
    tx.push(ConstantVariable(not tx.pop().bool_value(tx)))


def TO_BOOL(tx, inst) -> None:
    tx.push(ConstantVariable(tx.pop().bool_value(tx)))


def IS_OP(tx, inst) -> None:
    b, a = tx.pop(), tx.pop()
    tx.push(ConstantVariable(same_object(tx, a, b) != bool(inst.argval)))


def CONTAINS_OP(tx, inst) -> None:
    container, item = tx.pop(), tx.pop()
    tx.push(ConstantVariable(_contains(tx, container, item) != bool(inst.argval)))


def _contains(tx, container: VariableTracker, item: VariableTracker) -> bool:
    if isinstance(container, TensorVariable):
        raise Unsupported("Data-dependent branching", "`in` on a tensor")
    if isinstance(container, IteratorVariable):
        # An iterator is consumed up to the first equal item, as eagerly.
        while (candidate := container.next_item(tx)) is not None:
            if values_equal(tx, candidate, item):
                return True
        return False
    if isinstance(item, SymNodeVariable) and item.is_dynamic_float() and container.is_python_constant() \
            and type(container.as_python_constant()) in (tuple, list, set, frozenset, range):
        # `s in (0.5, 1.5)`: one guarded comparison per item, until one holds
        return any(values_equal(tx, ConstantVariable(c), item) for c in container.as_python_constant())
    if container.is_python_constant() and item.is_python_constant() and \
            not isinstance(container, (BaseSequenceVariable, DictVariable, SetVariable)):
        try:
            return item.as_python_constant() in container.as_python_constant()
        except TypeError as error:  # `1 in 3`, `1 in "ab"`: the program's own error
            from ...variables.exceptions import raise_observed

            raise_observed(TypeError, str(error))
    return container.call_method(tx, "__contains__", [item], {}).bool_value(tx)


def subscript(tx, container: VariableTracker, index: VariableTracker) -> VariableTracker:
    if tx.output.getitem_as_index and isinstance(container, TensorVariable):
        indexed = _index_op(tx, container, index)
        if indexed is not None:
            return indexed
    if isinstance(container, (TensorVariable, BaseSequenceVariable, ConstantVariable)):
        index = as_index(tx, index)  # an object with __index__ indexes as its int
    if isinstance(container, TensorVariable):
        if isinstance(index, SymNodeVariable) and index.python_type() is int:
            # Indexing takes no symbolic int (fake tensors refuse it); select is the same op.
            return tx.output.call_function(torch.select, [container, ConstantVariable(0), index], {})
        return tx.output.call_function(operator.getitem, [container, index], {})
    if isinstance(container, (BaseSequenceVariable, DictVariable)):
        return container.getitem(tx, index)
    if container.is_python_constant() and index.is_python_constant():
        return fold(operator.getitem, container, index)
    return container.call_method(tx, "__getitem__", [index], {})


def _index_op(tx, table: TensorVariable, index: VariableTracker) -> VariableTracker | None:
    """`table[index]` under torch's TransformGetItemToIndex mode (ctx_managers.IndexingModeVariable):
    with only tensors and ints as indices, `aten.index` with the ints as 0-d int64 tensors."""
    indices = list(index.items) if type(index) is TupleVariable else [index]
    if not all(isinstance(i, TensorVariable) or (i.is_python_constant() and type(i.as_python_constant()) is int)
               for i in indices):
        return None
    device = ConstantVariable(table.example.device)
    tensors = [i if isinstance(i, TensorVariable) else tx.output.call_function(
        torch.tensor, [i], {"dtype": ConstantVariable(torch.int64), "device": device}) for i in indices]
    return tx.output.call_function(torch.ops.aten.index, [table, ListVariable(tensors)], {})


def BINARY_SUBSCR(tx, inst) -> None:
    index, container = tx.pop(), tx.pop()
    tx.push(subscript(tx, container, index))


def BINARY_SLICE(tx, inst) -> None:
    stop, start, container = tx.pop(), tx.pop(), tx.pop()
    tx.push(subscript(tx, container, _slice(as_index(tx, start), as_index(tx, stop))))


def _slice(*bounds: VariableTracker) -> VariableTracker:
    if not all(b.is_python_constant() or isinstance(b, SymNodeVariable) for b in bounds):
        raise Unsupported("Unsupported builtin call", "a slice with non-constant bounds")
    return make_slice(*bounds)  # symbolic where a bound is a symbolic size


def BUILD_SLICE(tx, inst) -> None:
    tx.push(_slice(*(as_index(tx, bound) for bound in tx.popn(inst.argval))))


def STORE_SUBSCR(tx, inst) -> None:
    index, container, value = tx.pop(), tx.pop(), tx.pop()
    _store(tx, container, index, value)


def STORE_SLICE(tx, inst) -> None:
    stop, start, container, value = tx.pop(), tx.pop(), tx.pop(), tx.pop()
    _store(tx, container, _slice(as_index(tx, start), as_index(tx, stop)), value)


def _store(tx, container, index, value) -> None:
    if isinstance(container, TensorVariable):
        tx.output.call_function(operator.setitem, [container, index, value], {})
    elif isinstance(container, (ListVariable, DictVariable, TensorKeyedDictVariable, UserDefinedObjectVariable,
                                InstanceDictVariable, DequeVariable)):
        container.call_method(tx, "__setitem__", [index, value], {})
    else:
        raise Unsupported("Unsupported mutation", f"item assignment on {container}")


def DELETE_SUBSCR(tx, inst) -> None:
    index, container = tx.pop(), tx.pop()
    if isinstance(container, TensorVariable):
        raise Unsupported("Unsupported mutation", "del tensor[index]")
    container.call_method(tx, "__delitem__", [index], {})


def CALL_INTRINSIC_1(tx, inst) -> None:
    intrinsic = INTRINSICS_1.get(inst.argval)
    if intrinsic is None:
        raise Unsupported("Missing bytecode handler", f"CALL_INTRINSIC_1 {inst.argval}")
    intrinsic(tx)


def _list_to_tuple(tx) -> None:
    tx.push(TupleVariable(tx.unpack_iterable(tx.pop())))


INTRINSICS_1 = {
    3: lambda tx: tx.push(generator_error(tx.pop())),                   # INTRINSIC_STOPITERATION_ERROR
    5: lambda tx: tx.push(apply_operator(tx, operator.pos, tx.pop())),  # INTRINSIC_UNARY_POSITIVE
    6: _list_to_tuple,                                                  # INTRINSIC_LIST_TO_TUPLE
}


def LIST_TO_TUPLE(tx, inst) -> None:  # 3.11's spelling of intrinsic 6
    _list_to_tuple(tx)
