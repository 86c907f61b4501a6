"""Opcode handlers, one function per opcode named after it, one module per family.

A handler is `OPNAME(tx, inst) -> None`. Families of opcodes that differ only in a
parameter are one-line table rows (`POP_JUMP_IF_TRUE = _jump_if(True)`). The translator
collects every upper-case callable of these modules into its dispatch table once.
"""

from . import build, calls, control_flow, exceptions, functions, generators, imports, load_store, ops, stack

HANDLER_MODULES = (stack, load_store, ops, build, calls, control_flow, functions, generators, exceptions, imports)
