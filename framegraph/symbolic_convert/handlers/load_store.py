"""Loading and storing names: locals, cells, globals, constants and attributes."""

from __future__ import annotations

from ...exc import Unsupported
from ...variables.constant import ConstantVariable


def LOAD_FAST(tx, inst) -> None:
    tx.push(tx.load_local(inst.argval))


def STORE_FAST(tx, inst) -> None:
    tx.store_local(inst.argval, tx.pop())


def DELETE_FAST(tx, inst) -> None:
    tx.delete_local(inst.argval)


# The checked load differs only in how the interpreter reports an unbound name, which
# load_local already does. Cells of this frame and free variables are plain symbolic
# locals: the hook hands us their values, and nested functions that would share the
# cell are not traced (MAKE_FUNCTION is unsupported).
LOAD_FAST_CHECK = LOAD_DEREF = LOAD_FAST
STORE_DEREF = STORE_FAST
DELETE_DEREF = DELETE_FAST


def LOAD_CONST(tx, inst) -> None:
    tx.push(ConstantVariable(inst.argval))


def LOAD_GLOBAL(tx, inst) -> None:
    tx.push(tx.load_global(inst.argval))


def STORE_GLOBAL(tx, inst) -> None:
    raise Unsupported("Unsupported mutation", f"assignment to global {inst.argval!r}")


def LOAD_ATTR(tx, inst) -> None:
    obj = tx.pop()
    tx.push(obj.var_getattr(tx, inst.argval))


def LOAD_METHOD(tx, inst) -> None:
    # The real interpreter pushes [method, self] or a NULL pair; a bound-method tracker in
    # the NULL layout has the same depth and the same meaning to CALL.
    obj = tx.pop()
    tx.push_null_pair(obj.var_getattr(tx, inst.argval))


def STORE_ATTR(tx, inst) -> None:
    raise Unsupported("Unsupported mutation", f"assignment to attribute {inst.argval!r}")


def DELETE_ATTR(tx, inst) -> None:
    raise Unsupported("Unsupported mutation", f"deletion of attribute {inst.argval!r}")
