"""Loading and storing names: locals, cells, globals, constants and attributes."""

from __future__ import annotations

from ...exc import Unsupported
from ...variables.base import UNBOUND, NullVariable
from ...variables.constant import ConstantVariable
from ...variables.user_functions import CellBox
from ...variables.classes import SuperVariable
from ...variables.user_objects import UserDefinedObjectVariable


def LOAD_FAST(tx, inst) -> None:
    name = inst.argval
    # 3.13 loads a cell object for a closure with LOAD_FAST on the cell's slot.
    tx.push(tx.cell(name) if name in tx.cell_names else tx.load_local(name))


def STORE_FAST(tx, inst) -> None:
    value = tx.pop()
    if isinstance(value, NullVariable):
        # Putting back what LOAD_FAST_AND_CLEAR saved from an unbound local: UNBOUND, or
        # in a resume function the NULL its prologue pushed in that slot.
        tx.symbolic_locals.pop(inst.argval, None)
        tx.deleted.add(inst.argval)
    elif isinstance(value, CellBox) and inst.argval in tx.cell_names:
        tx.cells[inst.argval] = value  # restoring a saved cell (see LOAD_FAST_AND_CLEAR)
    else:
        tx.store_local(inst.argval, value)


def LOAD_FAST_AND_CLEAR(tx, inst) -> None:
    # 3.12+ inlined comprehensions save the outer variable of the same name around the loop.
    name = inst.argval
    if name in tx.cell_names:
        # A comprehension variable that is also a cell: the cell itself is saved, and the
        # MAKE_CELL that follows gives the comprehension a fresh one.
        tx.push(tx.cells.get(name) or UNBOUND)
    elif name in tx.symbolic_locals or (name in tx.f_locals and name not in tx.deleted):
        tx.push(tx.load_local(name))
        tx.symbolic_locals.pop(name, None)
        tx.deleted.add(name)
    else:
        tx.push(UNBOUND)


def DELETE_FAST(tx, inst) -> None:
    tx.delete_local(inst.argval)


# The checked load differs only in how the interpreter reports an unbound name, which
# load_local already does.
LOAD_FAST_CHECK = LOAD_FAST


def LOAD_DEREF(tx, inst) -> None:
    tx.push(tx.cell(inst.argval).get(tx))


def STORE_DEREF(tx, inst) -> None:
    tx.cell(inst.argval).store(tx, tx.pop())


def DELETE_DEREF(tx, inst) -> None:
    box = tx.cell(inst.argval)
    box.get(tx)  # raises like Python if the cell is empty
    box.set(None)


def LOAD_CLOSURE(tx, inst) -> None:
    tx.push(tx.cell(inst.argval))


def MAKE_CELL(tx, inst) -> None:
    tx.make_cell(inst.argval)


def LOAD_CONST(tx, inst) -> None:
    tx.push(ConstantVariable(inst.argval))


def LOAD_GLOBAL(tx, inst) -> None:
    tx.push(tx.load_global(inst.argval))


def STORE_GLOBAL(tx, inst) -> None:
    tx.store_global(inst.argval, tx.pop())


def DELETE_GLOBAL(tx, inst) -> None:
    raise Unsupported("Unsupported mutation", f"deletion of global {inst.argval!r}")


def LOAD_ATTR(tx, inst) -> None:
    obj = tx.pop()
    tx.push(obj.var_getattr(tx, inst.argval))


def LOAD_METHOD(tx, inst) -> None:
    # The real interpreter pushes [method, self] or a NULL pair; a bound-method tracker in
    # the NULL layout has the same depth and the same meaning to CALL.
    obj = tx.pop()
    tx.push_null_pair(obj.var_getattr(tx, inst.argval))


def STORE_ATTR(tx, inst) -> None:
    obj, value = tx.pop(), tx.pop()
    obj.store_attr(tx, inst.argval, value)


def DELETE_ATTR(tx, inst) -> None:
    obj = tx.pop()
    if not isinstance(obj, UserDefinedObjectVariable):
        raise Unsupported("Unsupported mutation", f"deletion of attribute {inst.argval!r} of {obj}")
    obj.delete_attr(tx, inst.argval)


def _load_super(method: bool, zero_args: bool):
    # 3.12+: the stack holds [super, class, self]; the attribute replaces all three.
    def handler(tx, inst) -> None:
        obj, cls, _ = tx.pop(), tx.pop(), tx.pop()
        attr = SuperVariable(cls.as_python_constant(), obj).var_getattr(tx, inst.argval)
        if method:
            tx.push_null_pair(attr)
        else:
            tx.push(attr)
    return handler


LOAD_SUPER_ATTR = _load_super(method=False, zero_args=False)
LOAD_SUPER_METHOD = _load_super(method=True, zero_args=False)
LOAD_ZERO_SUPER_ATTR = _load_super(method=False, zero_args=True)
LOAD_ZERO_SUPER_METHOD = _load_super(method=True, zero_args=True)
