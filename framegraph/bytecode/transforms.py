"""Ready-made transforms for round-trip tests of the toolkit and of CPython's suite."""

from __future__ import annotations

import types
from collections.abc import Callable

from . import versions
from .analysis import prefix_end
from .assemble import CodeMeta, transform_code_object
from .instruction import Instruction, create_instruction

Transform = Callable[[list[Instruction], CodeMeta], None]


def identity(instructions: list[Instruction], meta: CodeMeta) -> None:
    """Change nothing: a pure decode/assemble round trip."""


def insert_nops(instructions: list[Instruction], meta: CodeMeta) -> None:
    """Put a NOP before every body instruction and `NOP; LOAD_CONST None; POP_TOP`
    after the prefix, so every offset, jump, exception range and line entry moves.

    New instructions take the position of the one they precede, so line events
    and tracebacks stay the same. Jumps still land on the original instruction,
    so a new one is only reached from the one before it, and it takes that
    one's exception entry (none of them can raise): the unit before every
    original instruction then keeps the handler it had, which matters where the
    interpreter raises at an instruction it did not run
    (`versions.THROW_RAISES_BEFORE_SEND_TARGET`). Glued pairs
    (`versions.GLUED_PAIRS`) are left adjacent.
    """
    start = prefix_end(instructions)
    body = instructions[start:]
    result = instructions[:start]
    anchor = body[0] if body else instructions[-1]
    previous = result[-1] if result else None
    for inst in (create_instruction("NOP"), create_instruction("LOAD_CONST", argval=None),
                 create_instruction("POP_TOP")):
        result.append(_placed(inst, anchor, previous))
        previous = inst
    for inst in body:
        if (previous.opname, inst.opname) not in versions.GLUED_PAIRS:
            result.append(_placed(create_instruction("NOP"), inst, previous))
        result.append(inst)
        previous = inst
    instructions[:] = result


def _placed(inst: Instruction, position_of: Instruction, entry_of: Instruction | None) -> Instruction:
    inst.positions = position_of.positions
    inst.exn_tab_entry = None if entry_of is None else entry_of.exn_tab_entry
    return inst


def roundtrip_code(code: types.CodeType, transform: Transform = identity) -> types.CodeType:
    """Apply `transform` to `code` and, recursively, to the code objects it creates."""

    def apply(instructions: list[Instruction], meta: CodeMeta) -> None:
        # The compiler may load one nested code object twice (a `finally` body
        # is emitted once per exit); one copy keeps it one co_consts slot.
        # Keyed by identity, as co_consts shares slots (`lower.const_key`).
        copies: dict[int, types.CodeType] = {}
        for inst in instructions:
            if isinstance(inst.argval, types.CodeType):
                if id(inst.argval) not in copies:
                    copies[id(inst.argval)] = roundtrip_code(inst.argval, transform)
                inst.argval = copies[id(inst.argval)]
        transform(instructions, meta)

    return transform_code_object(code, apply)
