"""Jumps, loops and returns."""

from __future__ import annotations

from ...bytecode import versions
from ...variables.base import VariableTracker
from ...variables.constant import ConstantVariable
from ...variables.generators import check_no_pending_cleanup
from ...variables.iterators import get_iterator


def JUMP(tx, inst) -> None:
    tx.jump(inst.target)


JUMP_NO_INTERRUPT = JUMP


def _is_none(tx, value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _pop_jump_if(test):
    def handler(tx, inst) -> None:
        if test(tx, tx.pop()):
            tx.jump(inst.target)
    return handler


POP_JUMP_IF_TRUE = _pop_jump_if(lambda tx, v: v.bool_value(tx))
POP_JUMP_IF_FALSE = _pop_jump_if(lambda tx, v: not v.bool_value(tx))
POP_JUMP_IF_NONE = _pop_jump_if(_is_none)
POP_JUMP_IF_NOT_NONE = _pop_jump_if(lambda tx, v: not _is_none(tx, v))


def _jump_if_or_pop(when: bool):  # 3.11: keep the value when jumping, drop it otherwise
    def handler(tx, inst) -> None:
        if tx.peek().bool_value(tx) is when:
            tx.jump(inst.target)
        else:
            tx.pop()
    return handler


JUMP_IF_TRUE_OR_POP = _jump_if_or_pop(True)
JUMP_IF_FALSE_OR_POP = _jump_if_or_pop(False)


def GET_ITER(tx, inst) -> None:
    tx.push(get_iterator(tx, tx.pop()))


def FOR_ITER(tx, inst) -> None:
    item = tx.peek().next_item(tx)
    if item is not None:
        tx.push(item)
        return
    # Exhausted: the interpreter pops the iterator and skips the loop's END_FOR [POP_TOP].
    tx.pop()
    tx.ip = tx.index_of[inst.target] + len(versions.FOR_ITER_EXIT)


def RETURN_VALUE(tx, inst) -> None:
    if tx.is_root:
        check_no_pending_cleanup(tx.output)
    tx.return_value = tx.pop()


def RETURN_CONST(tx, inst) -> None:
    if tx.is_root:
        check_no_pending_cleanup(tx.output)
    tx.return_value = ConstantVariable(inst.argval)
