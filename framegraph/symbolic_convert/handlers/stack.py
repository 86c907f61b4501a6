"""Stack manipulation and the instructions that do nothing to the symbolic state."""

from __future__ import annotations

from ...variables.base import NULL


def _noop(tx, inst) -> None:
    pass


# The prefix (free variables, RESUME) is replayed verbatim in the generated code; the
# translator sets up free-variable cells itself (MAKE_CELL has a handler of its own).
NOP = RESUME = COPY_FREE_VARS = EXTENDED_ARG = CACHE = _noop


def POP_TOP(tx, inst) -> None:
    tx.pop()


def PUSH_NULL(tx, inst) -> None:
    tx.push(NULL)


def COPY(tx, inst) -> None:
    tx.push(tx.peek(inst.argval))


def SWAP(tx, inst) -> None:
    i = inst.argval
    tx.stack[-1], tx.stack[-i] = tx.stack[-i], tx.stack[-1]

