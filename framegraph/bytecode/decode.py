"""Decode a code object into normal-form instructions.

Handlers of the translator see one instruction set on 3.11, 3.12 and 3.13. The
normal form keeps the interpreter's real stack layout (where NULL sits, what
each op pushes); it only unifies encodings:

======================================  =============================================
raw (where it occurs)                   normal form
======================================  =============================================
CACHE, EXTENDED_ARG                     hidden (recomputed by assemble)
PRECALL n (3.11)                        dropped; assemble puts it back before CALL
LOAD_GLOBAL with the NULL bit           PUSH_NULL; LOAD_GLOBAL name (3.11, 3.12)
                                        LOAD_GLOBAL name; PUSH_NULL (3.13)
LOAD_METHOD (3.11), LOAD_ATTR bit 0     LOAD_METHOD name (pushes [meth, self] or the
                                        version's [NULL, attr] / [attr, NULL])
LOAD_ATTR (no method bit)               LOAD_ATTR name
LOAD_SUPER_ATTR flags (3.12+)           LOAD_SUPER_ATTR / LOAD_SUPER_METHOD (two-arg
                                        super), LOAD_ZERO_SUPER_ATTR / _METHOD
LOAD_FAST_LOAD_FAST a,b (3.13)          LOAD_FAST a; LOAD_FAST b
STORE_FAST_LOAD_FAST a,b (3.13)         STORE_FAST a; LOAD_FAST b
STORE_FAST_STORE_FAST a,b (3.13)        STORE_FAST a; STORE_FAST b
JUMP_FORWARD, JUMP_BACKWARD             JUMP (target)
JUMP_BACKWARD_NO_INTERRUPT              JUMP_NO_INTERRUPT (target)
POP_JUMP_{FORWARD,BACKWARD}_IF_x        POP_JUMP_IF_x (target; backward ones are
(3.11), POP_JUMP_IF_x                   lowered by assemble for the version)
COMPARE_OP (any encoding)               COMPARE_OP argval '<' ... '>='
COMPARE_OP with bool bit (3.13)         COMPARE_OP op; TO_BOOL
BINARY_OP n                             BINARY_OP argval '+', '+=', ...
LOAD_CONST, RETURN_CONST, KW_NAMES      argval = the constant
name / local / cell ops                 argval = the name (cells and free variables
                                        by name, whatever their slot)
everything else                         as is; argval = arg
======================================  =============================================

Other version-specific ops (KW_NAMES vs CALL_KW, FORMAT_VALUE vs CONVERT_VALUE,
END_FOR, TO_BOOL, intrinsics...) pass through unchanged: handlers implement the
union. Every instruction keeps the byte `offset` of its raw instruction as
`offset` and `origin`, its source `positions`, and the exception-table entry
covering it.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import weakref
from collections.abc import Sequence

from . import versions
from .instruction import (
    BINARY_OPERATORS,
    COMPARE_OPERATORS,
    ExceptionTableEntry,
    Instruction,
    OperandKind,
    OPERAND_KINDS,
    Positions,
)
from .tables import decode_exception_table

_EXTENDED_ARG = versions.RAW_OPMAP["EXTENDED_ARG"]


@dataclasses.dataclass(slots=True)
class RawInstruction:
    """One instruction of co_code, positions in code units."""

    start: int  # first unit, including EXTENDED_ARG prefixes
    unit: int  # the opcode's unit
    opname: str
    arg: int
    end: int  # first unit after the caches


def raw_instructions(code: types.CodeType) -> list[RawInstruction]:
    data = code.co_code
    result = []
    ext = 0
    start = 0
    unit = 0
    nunits = len(data) // 2
    while unit < nunits:
        op = data[2 * unit]
        arg = ext | data[2 * unit + 1]
        if op == _EXTENDED_ARG:
            ext = arg << 8
            unit += 1
            continue
        opname = versions.RAW_OPNAME.get(op)
        if opname is None:
            raise ValueError(f"{code.co_qualname}: unknown opcode {op} at offset {2 * unit}")
        end = unit + 1 + versions.CACHE_ENTRIES[opname]
        result.append(RawInstruction(start, unit, opname, arg, end))
        ext = 0
        unit = start = end
    return result


def raw_jump_target(raw: RawInstruction) -> int:
    """The unit a raw jump lands on."""
    base = raw.end  # jumps count from after the caches
    return base - raw.arg if raw.opname in versions.RAW_BACKWARD_JUMPS else base + raw.arg


def localsplus_names(varnames: Sequence[str], cellvars: Sequence[str], freevars: Sequence[str]) -> list[str]:
    """Slot names, as the code constructor lays them out: a cell shares the slot of a
    local of the same name (an argument; on 3.12+ a variable of an inlined comprehension;
    in a resume function, a cell that was an argument of the original), any other cell
    gets a slot after the locals."""
    local = set(varnames)
    cells = [name for name in cellvars if name not in local]
    return [*varnames, *cells, *freevars]


def argument_count(argcount: int, kwonlyargcount: int, flags: int) -> int:
    return argcount + kwonlyargcount + bool(flags & inspect.CO_VARARGS) + bool(
        flags & inspect.CO_VARKEYWORDS
    )


def decode(code: types.CodeType) -> list[Instruction]:
    """The normal-form instructions of `code` (see the module docstring)."""
    if not isinstance(code, types.CodeType):
        raise TypeError(f"decode() needs a code object, got {type(code).__name__}")
    raws = raw_instructions(code)
    decoder = _Decoder(code)
    pieces = [decoder.expand(raw) for raw in raws]
    first_at = _first_piece_by_unit(raws, pieces)
    instructions = [inst for group in pieces for inst in group]
    for raw, group in zip(raws, pieces):
        if raw.opname in versions.RAW_JUMPS:
            group[-1].target = _instruction_at(first_at, raw_jump_target(raw), code)
    _attach_exception_entries(code, raws, pieces, first_at)
    _mark_line_starts(instructions)
    return instructions


def _first_piece_by_unit(
    raws: list[RawInstruction], pieces: list[list[Instruction]]
) -> dict[int, Instruction]:
    # A raw instruction that decodes to nothing (PRECALL) is represented by the next.
    first_at: dict[int, Instruction] = {}
    pending: list[int] = []
    for raw, group in zip(raws, pieces):
        pending.append(raw.start)
        if group:
            for unit in pending:
                first_at[unit] = group[0]
            pending.clear()
    return first_at


def _attach_exception_entries(
    code: types.CodeType,
    raws: list[RawInstruction],
    pieces: list[list[Instruction]],
    first_at: dict[int, Instruction],
) -> None:
    table = decode_exception_table(code.co_exceptiontable)
    covered: list[list[Instruction]] = [[] for _ in table]
    index = 0
    for raw, group in zip(raws, pieces):
        while index < len(table) and table[index].end <= raw.unit:
            index += 1
        if index < len(table) and table[index].start <= raw.unit:
            covered[index].extend(group)
    for raw_entry, insts in zip(table, covered):
        if not insts:
            continue
        target = _instruction_at(first_at, raw_entry.target, code)
        entry = ExceptionTableEntry(insts[0], insts[-1], target, raw_entry.depth, raw_entry.lasti)
        for inst in insts:
            inst.exn_tab_entry = entry


def _instruction_at(first_at: dict[int, Instruction], unit: int, code: types.CodeType) -> Instruction:
    inst = first_at.get(unit)
    if inst is None:
        raise ValueError(f"{code.co_qualname}: no instruction starts at offset {2 * unit}")
    return inst


def _mark_line_starts(instructions: list[Instruction]) -> None:
    previous = None
    for inst in instructions:
        line = inst.positions.lineno
        if line is not None and line != previous:
            inst.starts_line = line
            previous = line


class _Decoder:
    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.localsplus = localsplus_names(code.co_varnames, code.co_cellvars, code.co_freevars)
        self.positions = list(code.co_positions())

    def expand(self, raw: RawInstruction) -> list[Instruction]:
        """The normal-form pieces of one raw instruction, without jump targets yet."""
        name, arg = raw.opname, raw.arg
        if name == "PRECALL" and versions.HAS_PRECALL:
            return []
        if name in versions.SUPERINSTRUCTIONS:
            first, second = versions.SUPERINSTRUCTIONS[name]
            return [self._piece(raw, first, self.localsplus[arg >> 4], arg >> 4),
                    self._piece(raw, second, self.localsplus[arg & 15], arg & 15)]
        if name in versions.RAW_TO_NORMAL_JUMP:
            return [self._piece(raw, versions.RAW_TO_NORMAL_JUMP[name], None, arg)]
        if name in versions.NAME_SHIFTS:
            return self._expand_name_op(raw)
        if name == "COMPARE_OP":
            return self._expand_compare(raw)
        return [self._piece(raw, name, self._argval(name, arg), arg if name in versions.HAS_ARG else None)]

    def _expand_name_op(self, raw: RawInstruction) -> list[Instruction]:
        shift = versions.NAME_SHIFTS[raw.opname]
        argval = self.code.co_names[raw.arg >> shift]
        bits = raw.arg & ((1 << shift) - 1)
        if raw.opname == "LOAD_GLOBAL":
            inst = self._piece(raw, "LOAD_GLOBAL", argval, raw.arg)
            if not bits:
                return [inst]
            null = self._piece(raw, "PUSH_NULL", None, None)
            return [inst, null] if versions.NULL_AFTER_CALLABLE else [null, inst]
        return [self._piece(raw, versions.NAME_DECODINGS[raw.opname, bits], argval, raw.arg)]

    def _expand_compare(self, raw: RawInstruction) -> list[Instruction]:
        operator = COMPARE_OPERATORS[raw.arg >> versions.COMPARE_SHIFT]
        inst = self._piece(raw, "COMPARE_OP", operator, raw.arg)
        if raw.arg & versions.COMPARE_TO_BOOL_BIT:
            return [inst, self._piece(raw, "TO_BOOL", None, None)]
        return [inst]

    def _argval(self, opname: str, arg: int) -> object:
        kind = OPERAND_KINDS[opname]
        if kind is OperandKind.CONST:
            return self.code.co_consts[arg]
        if kind is OperandKind.NAME:
            return self.code.co_names[arg]
        if kind in (OperandKind.LOCAL, OperandKind.FREE):
            return self.localsplus[arg]
        if kind is OperandKind.BINARY:
            return BINARY_OPERATORS[arg]
        if kind is OperandKind.INT:
            return arg
        return None

    def _piece(self, raw: RawInstruction, opname: str, argval: object, arg: int | None) -> Instruction:
        return Instruction(
            opname,
            versions.NORMAL_OPMAP[opname],
            arg=arg,
            argval=argval,
            offset=2 * raw.start,
            positions=Positions(*self.positions[raw.unit]),
            origin=2 * raw.start,
        )


# code -> its instructions and each one's index, made once per code object, for readers only
# (the translator, which meets a function inlined at many call sites many times per compile:
# decoding was a fifth of a large model's compile time; a graph break copies the instruction
# it runs). What edits instructions (assemble, transforms) decodes its own with `decode`.
# Keyed by identity (equal code objects of two functions are two entries), dropped with the code.
_DECODED: dict[int, tuple[weakref.ref, list[Instruction], dict[Instruction, int]]] = {}


def decoded(code: types.CodeType) -> tuple[list[Instruction], dict[Instruction, int]]:
    """`decode(code)`, shared, and each instruction's index in it: not to be changed."""
    known = _DECODED.get(id(code))
    if known is not None and known[0]() is code:
        return known[1], known[2]
    instructions = decode(code)
    index_of = {inst: i for i, inst in enumerate(instructions)}
    key = id(code)
    _DECODED[key] = (weakref.ref(code, lambda _, key=key: _forget(key)), instructions, index_of)
    return instructions, index_of


def _forget(key: int) -> None:
    entry = _DECODED.get(key)
    if entry is not None and entry[0]() is None:
        del _DECODED[key]
