"""Lower normal-form instructions to the running version's raw instructions.

This is the inverse of `decode`: pieces that came from one raw instruction
are fused back, pseudo-ops get their raw opcode and flag bits, PRECALL is put
back on 3.11, and every jump gets the raw opname for its direction (a backward
conditional jump on 3.12+ becomes `POP_JUMP_IF_<not x>` over a JUMP_BACKWARD).
Operands become opargs through `OperandPools`, which also builds co_consts,
co_names and co_varnames. Jump opargs are left to `assemble`'s layout loop.
"""

from __future__ import annotations

import dataclasses
import struct
import types
from typing import Any

from . import versions
from .decode import localsplus_names
from .instruction import (
    BINARY_OPERATORS,
    COMPARE_OPERATORS,
    ExceptionTableEntry,
    Instruction,
    OperandKind,
    OPERAND_KINDS,
    Positions,
)

_INVERTED = {
    "POP_JUMP_IF_TRUE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_IF_FALSE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_IF_NONE": "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_IF_NOT_NONE": "POP_JUMP_IF_NONE",
}


@dataclasses.dataclass(eq=False, slots=True)
class LoweredInstruction:
    opname: str  # a raw opname
    arg: int
    positions: Positions
    exn_tab_entry: ExceptionTableEntry | None
    source: Instruction  # for error messages
    target: LoweredInstruction | None = None
    backward: bool = False
    handler: LoweredInstruction | None = None  # where exn_tab_entry's target landed


def const_key(value: Any) -> tuple:
    """Equal keys exactly when CPython may share one co_consts slot.

    Distinguishes 0 / 0.0 / False / -0.0, keeps NaNs with the same bits together,
    recurses into tuples and frozensets, and compares code objects by identity.
    """
    kind = type(value)
    if kind is float:
        return kind, struct.pack("<d", value)
    if kind is complex:
        return kind, struct.pack("<dd", value.real, value.imag)
    if kind is tuple:
        return kind, tuple(const_key(item) for item in value)
    if kind is frozenset:
        return kind, frozenset(const_key(item) for item in value)
    if kind in (int, str, bytes, bool, type(None), type(Ellipsis)):
        return kind, value
    return kind, id(value)


class OperandPools:
    """co_consts, co_names and the local slots for assembling `instructions`.

    co_consts and co_names start as the template's own tuples, same order and
    same objects, and operands the instructions add are appended. So a pure
    round trip reproduces both exactly, and code that indexes them
    (``f.__code__.co_consts[3]``, `dis` of nested code) sees what the compiler
    made. Unused template entries are kept: dropping one would renumber the rest.
    """

    def __init__(self, instructions: list[Instruction], meta: Any, template_code: types.CodeType) -> None:
        self.consts: list[Any] = list(template_code.co_consts)
        self._const_index: dict[tuple, int] = {}
        for index, value in enumerate(self.consts):
            self._const_index.setdefault(const_key(value), index)
        # Template slots holding a code object that no operand has replaced yet.
        self._replaceable = {i for i, value in enumerate(self.consts) if isinstance(value, types.CodeType)}
        self.names: list[str] = list(template_code.co_names)
        self._name_index = {name: index for index, name in enumerate(self.names)}
        self.freevars = tuple(meta.co_freevars)
        self.cellvars = tuple(meta.co_cellvars)
        varnames = list(meta.co_varnames)
        cells = set(self.cellvars) | set(self.freevars) | set(varnames)
        for inst in instructions:
            if OPERAND_KINDS[inst.opname] is OperandKind.LOCAL and inst.argval not in cells:
                varnames.append(inst.argval)
                cells.add(inst.argval)
        self.varnames = tuple(varnames)
        self._localsplus = localsplus_names(self.varnames, self.cellvars, self.freevars)
        self._slots: dict[str, int] = {}
        for slot, name in enumerate(self._localsplus):
            self._slots.setdefault(name, slot)
        self._cell_names = set(self.cellvars) | set(self.freevars)

    def const(self, value: Any, template_index: int | None = None) -> int:
        """The co_consts index of `value`; `template_index` is the operand's
        decoded oparg (the instruction's `arg`), None for new instructions."""
        if template_index is not None and template_index < len(self.consts):
            if self.consts[template_index] is value:
                # The compiler keeps equal-keyed constants apart when they are
                # distinct objects (two NaNs), so the decoded slot wins.
                return template_index
        key = const_key(value)
        index = self._const_index.get(key)
        if index is not None:
            return index
        index = self._replaced_slot(value, template_index)
        if index is None:
            # co_consts[0] is the function's docstring when it is a str, so a
            # string appended to an empty pool must not become one.
            if not self.consts and isinstance(value, str):
                self.consts.append(None)
            index = len(self.consts)
            self.consts.append(value)
        else:
            self.consts[index] = value
        self._const_index[key] = index
        return index

    def _replaced_slot(self, value: Any, template_index: int | None) -> int | None:
        """The template slot a rewritten nested code object takes over.

        Transforms (`roundtrip_code`) swap a nested code object for a new copy;
        keyed by identity it would get a new slot and shift the indices. The
        decoded oparg says which slot the operand came from: if that slot still
        holds the template's code object for the same function, reuse it.
        """
        if not isinstance(value, types.CodeType) or template_index not in self._replaceable:
            return None
        old = self.consts[template_index]
        if (old.co_name, old.co_firstlineno) != (value.co_name, value.co_firstlineno):
            return None
        self._replaceable.discard(template_index)
        del self._const_index[const_key(old)]
        return template_index

    def name(self, value: str) -> int:
        index = self._name_index.get(value)
        if index is None:
            index = self._name_index[value] = len(self.names)
            self.names.append(value)
        return index

    def slot(self, inst: Instruction, index: int) -> int:
        if OPERAND_KINDS[inst.opname] is OperandKind.FREE and inst.argval not in self._cell_names:
            raise ValueError(
                f"{inst.opname} at index {index}: {inst.argval!r} is not a cell or free variable"
            )
        # A class body can have a cell and a free variable of the same name
        # (`__class__`), two slots the name alone cannot tell apart; the decoded
        # oparg can, as long as it still names that variable.
        if inst.arg is not None and 0 <= inst.arg < len(self._localsplus):
            if self._localsplus[inst.arg] == inst.argval:
                return inst.arg
        return self._slots[inst.argval]


def _encode(inst: Instruction, index: int, pools: OperandPools) -> tuple[str, int]:
    """The raw opname and oparg of a non-jump instruction."""
    kind = OPERAND_KINDS[inst.opname]
    if inst.opname in versions.NAME_ENCODINGS:
        raw, shift, bits = versions.NAME_ENCODINGS[inst.opname]
        return raw, pools.name(inst.argval) << shift | bits
    if inst.opname == "COPY_FREE_VARS":
        return inst.opname, len(pools.freevars)
    raw = versions.RAW_ALIASES.get(inst.opname, inst.opname)
    if kind is OperandKind.CONST:
        return raw, pools.const(inst.argval, inst.arg)
    if kind is OperandKind.NAME:
        return raw, pools.name(inst.argval)
    if kind in (OperandKind.LOCAL, OperandKind.FREE):
        return raw, pools.slot(inst, index)
    if kind is OperandKind.COMPARE:
        return raw, _compare_arg(inst.argval, to_bool=False)
    if kind is OperandKind.BINARY:
        return raw, BINARY_OPERATORS.index(inst.argval)
    if kind is OperandKind.INT:
        return raw, inst.argval
    return raw, 0


def _compare_arg(operator: str, to_bool: bool) -> int:
    arg = COMPARE_OPERATORS.index(operator) << versions.COMPARE_SHIFT
    arg |= versions.COMPARE_MASKS.get(operator, 0)
    return arg | (versions.COMPARE_TO_BOOL_BIT if to_bool else 0)


def handler_key(inst: Instruction) -> tuple | None:
    """What decides which handler catches an exception raised at `inst`."""
    entry = inst.exn_tab_entry
    return None if entry is None else (entry.target, entry.depth, entry.lasti)


class _Lowering:
    def __init__(self, instructions: list[Instruction], pools: OperandPools) -> None:
        self.instructions = instructions
        self.pools = pools
        self.targets = {inst.target for inst in instructions if inst.target is not None}
        self.targets |= {inst.exn_tab_entry.target for inst in instructions if inst.exn_tab_entry}
        self.out: list[LoweredInstruction] = []
        self.first: dict[Instruction, LoweredInstruction] = {}

    def run(self) -> list[LoweredInstruction]:
        instructions = self.instructions
        i = 0
        while i < len(instructions):
            inst = instructions[i]
            following = instructions[i + 1] if i + 1 < len(instructions) else None
            if following is not None and self._try_fuse(inst, following, i):
                i += 2
            else:
                self._lower_one(inst, i)
                i += 1
        for lowered in self.out:
            if lowered.source.target is not None:
                lowered.target = self.first[lowered.source.target]
            if lowered.exn_tab_entry is not None:
                lowered.handler = self.first[lowered.exn_tab_entry.target]
        return self._choose_directions()

    def _emit(self, sources: tuple[Instruction, ...], main: Instruction, opname: str, arg: int) -> None:
        lowered = LoweredInstruction(opname, arg, main.positions, main.exn_tab_entry, main)
        self.out.append(lowered)
        for source in sources:
            self.first.setdefault(source, lowered)

    def _lower_one(self, inst: Instruction, index: int) -> None:
        if inst.opname in versions.JUMPS:
            # The decoded oparg only seeds the size of the encoding (see
            # `assemble._layout`); the layout loop computes the real one.
            self._emit((inst,), inst, inst.opname, inst.arg or 0)
            return
        opname, arg = _encode(inst, index, self.pools)
        if opname == "CALL" and versions.HAS_PRECALL:
            self._emit((inst,), inst, "PRECALL", arg)
        self._emit((inst,), inst, opname, arg)

    def _try_fuse(self, inst: Instruction, following: Instruction, index: int) -> bool:
        """Fuse a pair the compiler would have emitted as one raw instruction."""
        if following in self.targets:
            return False
        pair = (inst.opname, following.opname)
        if pair == ("PUSH_NULL", "LOAD_GLOBAL") and not versions.NULL_AFTER_CALLABLE:
            self._emit_null_global(following, (inst, following))
            return True
        if pair == ("LOAD_GLOBAL", "PUSH_NULL") and versions.NULL_AFTER_CALLABLE:
            self._emit_null_global(inst, (inst, following))
            return True
        if handler_key(inst) != handler_key(following):
            return False
        if pair == ("COMPARE_OP", "TO_BOOL") and versions.COMPARE_TO_BOOL_BIT:
            self._emit((inst, following), inst, "COMPARE_OP", _compare_arg(inst.argval, to_bool=True))
            return True
        return self._try_fuse_superinstruction(inst, following, index)

    def _emit_null_global(self, load: Instruction, sources: tuple[Instruction, ...]) -> None:
        self._emit(sources, load, "LOAD_GLOBAL", self.pools.name(load.argval) << 1 | 1)

    def _try_fuse_superinstruction(self, inst: Instruction, following: Instruction, index: int) -> bool:
        if inst.origin is None or inst.origin != following.origin:
            return False
        for raw, pattern in versions.SUPERINSTRUCTIONS.items():
            if pattern == (inst.opname, following.opname):
                high = self.pools.slot(inst, index)
                low = self.pools.slot(following, index + 1)
                if high < 16 and low < 16:
                    self._emit((inst, following), inst, raw, high << 4 | low)
                    return True
        return False

    def _choose_directions(self) -> list[LoweredInstruction]:
        position = {lowered: i for i, lowered in enumerate(self.out)}
        result: list[LoweredInstruction] = []
        skips: list[LoweredInstruction] = []
        for i, lowered in enumerate(self.out):
            if lowered.target is None:
                result.append(lowered)
                continue
            forward, backward = versions.JUMPS[lowered.opname]
            if position[lowered.target] > i:
                lowered.opname = forward
            elif backward is not None:
                lowered.opname, lowered.backward = backward, True
            elif lowered.opname in _INVERTED:
                # Whatever pointed at this jump now reaches the guarding skip.
                jump_back = dataclasses.replace(lowered, opname="JUMP_BACKWARD", backward=True)
                lowered.opname = _INVERTED[lowered.opname]
                result.append(lowered)
                skips.append(lowered)
                lowered = jump_back
            else:
                raise ValueError(
                    f"{lowered.opname} at index {self.instructions.index(lowered.source)} "
                    "can only jump forward"
                )
            result.append(lowered)
        self._resolve_skips(result, skips)
        return result

    @staticmethod
    def _resolve_skips(result: list[LoweredInstruction], skips: list[LoweredInstruction]) -> None:
        if not skips:
            return
        position = {lowered: i for i, lowered in enumerate(result)}
        for skip in skips:
            after = position[skip] + 2  # past the JUMP_BACKWARD it guards
            if after >= len(result):
                raise ValueError(f"{skip.source.opname} is the last instruction and falls off the end")
            skip.target = result[after]


def lower(instructions: list[Instruction], pools: OperandPools) -> list[LoweredInstruction]:
    return _Lowering(instructions, pools).run()

