"""The editable instruction, its exception-table entry, and operand kinds.

An `Instruction` is a normal-form instruction (see `decode`): jumps point at
other Instruction objects, operands are values (names, constants, operator
strings), and the raw encoding (oparg bits, caches, EXTENDED_ARG) is recomputed
by `assemble`. Instructions hash by identity so they can key dicts and sets.
"""

from __future__ import annotations

import dataclasses
import dis
import enum
from typing import Any

from . import versions

Positions = dis.Positions
NO_POSITIONS = Positions(None, None, None, None)

# BINARY_OP operands, indexed by oparg (the NB_* order, identical on 3.11-3.13).
_NB_BINARY = ("+", "&", "//", "<<", "@", "*", "%", "|", "**", ">>", "-", "/", "^")
BINARY_OPERATORS: tuple[str, ...] = _NB_BINARY + tuple(op + "=" for op in _NB_BINARY)
COMPARE_OPERATORS: tuple[str, ...] = ("<", "<=", "==", "!=", ">", ">=")


class OperandKind(enum.Enum):
    NONE = "no operand"
    INT = "an int"
    JUMP = "a target instruction"
    CONST = "a constant"
    NAME = "a name from co_names"
    LOCAL = "a local variable name"
    FREE = "a cell or free variable name"
    COMPARE = f"one of {COMPARE_OPERATORS}"
    BINARY = f"one of {BINARY_OPERATORS}"


def _operand_kinds() -> dict[str, OperandKind]:
    kinds = dict.fromkeys(versions.NORMAL_OPNAMES, OperandKind.NONE)
    for name in versions.NORMAL_OPNAMES & versions.HAS_ARG:
        kinds[name] = OperandKind.INT
    for names, kind in (
        (versions.JUMPS.keys(), OperandKind.JUMP),
        (versions.CONST_OPS, OperandKind.CONST),
        (versions.NAME_OPS, OperandKind.NAME),
        (versions.LOCAL_OPS, OperandKind.LOCAL),
        (versions.FREE_OPS, OperandKind.FREE),
        ({"COMPARE_OP"}, OperandKind.COMPARE),
        ({"BINARY_OP"}, OperandKind.BINARY),
    ):
        kinds.update(dict.fromkeys(names, kind))
    return kinds


OPERAND_KINDS: dict[str, OperandKind] = _operand_kinds()


@dataclasses.dataclass(eq=False, slots=True)
class ExceptionTableEntry:
    """A protected range: `start`..`end` inclusive, handled at `target`.

    `assemble` reads only `target`, `depth` and `lasti`; coverage comes from the
    entry each instruction carries, so `start`/`end` describe the decoded range.
    """

    start: Instruction
    end: Instruction
    target: Instruction
    depth: int
    lasti: bool


@dataclasses.dataclass(eq=False, slots=True)
class Instruction:
    opname: str
    opcode: int
    arg: int | None = None
    argval: Any = None
    target: Instruction | None = None
    offset: int | None = None
    positions: Positions = NO_POSITIONS
    starts_line: int | None = None
    exn_tab_entry: ExceptionTableEntry | None = None
    # Byte offset of the raw instruction this one was decoded from. Pieces of one
    # raw instruction share it, which tells assemble to fuse them back.
    origin: int | None = None

    @property
    def lineno(self) -> int | None:
        return self.positions.lineno

    @property
    def kind(self) -> OperandKind:
        return OPERAND_KINDS[self.opname]

    def __repr__(self) -> str:
        if self.target is not None:
            operand = f" -> {self.target.opname}@{self.target.offset}"
        elif self.opname in OPERAND_KINDS and self.kind is OperandKind.NONE:
            operand = ""
        else:
            operand = f" {self.argval!r}"
        return f"<{self.opname}{operand} @{self.offset}>"


_MISSING: Any = object()


def create_instruction(
    opname: str,
    *,
    arg: int | None = None,
    argval: Any = _MISSING,
    target: Instruction | None = None,
) -> Instruction:
    """A new normal-form instruction; pass exactly the operand its kind takes.

    Jumps take `target`; ops whose operand is a value (constant, name, variable,
    operator string) take `argval`; plain int operands take `arg` (or `argval`);
    ops without operand take nothing.
    """
    kind = OPERAND_KINDS.get(opname)
    if kind is None:
        raise ValueError(f"unknown opname {opname!r} for Python {versions.VERSION}")
    given = [name for name, value in (("arg", arg), ("argval", argval), ("target", target))
             if value is not (_MISSING if name == "argval" else None)]
    if kind is OperandKind.NONE:
        if given:
            raise TypeError(f"{opname} takes no operand, got {', '.join(given)}")
        return Instruction(opname, versions.NORMAL_OPMAP[opname])
    if kind is OperandKind.JUMP:
        if given != ["target"] or not isinstance(target, Instruction):
            raise TypeError(f"{opname} takes exactly target=<Instruction>, got {given or 'nothing'}")
        return Instruction(opname, versions.NORMAL_OPMAP[opname], target=target)
    if kind is OperandKind.INT:
        if len(given) != 1 or "target" in given:
            raise TypeError(f"{opname} takes exactly one of arg= or argval= (an int)")
        value = arg if arg is not None else argval
        check_operand(opname, value)
        return Instruction(opname, versions.NORMAL_OPMAP[opname], arg=value, argval=value)
    if given != ["argval"]:
        raise TypeError(
            f"{opname} takes exactly argval= ({kind.value}); its arg is computed by assemble"
        )
    check_operand(opname, argval)
    return Instruction(opname, versions.NORMAL_OPMAP[opname], argval=argval)


def check_operand(opname: str, value: Any) -> None:
    """Raise TypeError if `value` is not a valid argval for `opname`."""
    kind = OPERAND_KINDS[opname]
    if kind is OperandKind.INT:
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 32
    elif kind in (OperandKind.NAME, OperandKind.LOCAL, OperandKind.FREE):
        ok = isinstance(value, str)
    elif kind is OperandKind.COMPARE:
        ok = value in COMPARE_OPERATORS
    elif kind is OperandKind.BINARY:
        ok = value in BINARY_OPERATORS
    else:
        ok = True
    if not ok:
        raise TypeError(f"{opname} operand must be {kind.value}, got {value!r}")
