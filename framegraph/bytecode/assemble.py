"""Assemble normal-form instructions into a code object, and the edit entry point.

`assemble` validates the list, computes co_stacksize from `analysis`, lowers
the instructions (`lower`), lays them out (EXTENDED_ARG and jump opargs,
iterated until stable, zeroed caches) and encodes the exception and line
tables. `transform_code_object` is the one way to edit a code object.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable

from . import versions
from .analysis import max_stack_depth
from .decode import decode
from .instruction import Instruction, OPERAND_KINDS, OperandKind, check_operand
from .lower import LoweredInstruction, OperandPools, handler_key, lower
from .tables import LineTableWriter, RawExceptionEntry, encode_exception_table, merge_ranges

_EXTENDED_ARG = versions.RAW_OPMAP["EXTENDED_ARG"]


@dataclasses.dataclass
class CodeMeta:
    """The code-object fields a transform may edit."""

    co_name: str
    co_qualname: str
    co_argcount: int
    co_posonlyargcount: int
    co_kwonlyargcount: int
    co_flags: int
    co_varnames: tuple[str, ...]
    co_cellvars: tuple[str, ...]
    co_freevars: tuple[str, ...]
    co_firstlineno: int
    co_filename: str

    @classmethod
    def from_code(cls, code: types.CodeType) -> CodeMeta:
        return cls(**{field.name: getattr(code, field.name) for field in dataclasses.fields(cls)})

    def as_fields(self) -> dict[str, object]:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


def transform_code_object(
    code: types.CodeType, transform: Callable[[list[Instruction], CodeMeta], None]
) -> types.CodeType:
    """Decode `code`, let `transform` edit the instructions and meta in place, assemble."""
    instructions = decode(code)
    meta = CodeMeta.from_code(code)
    transform(instructions, meta)
    return assemble(instructions, code, **meta.as_fields())


def assemble(
    instructions: list[Instruction], template_code: types.CodeType, **code_fields: object
) -> types.CodeType:
    """A code object running `instructions`; other fields come from `template_code`
    unless overridden by `code_fields` (the `CodeMeta` field names)."""
    meta = CodeMeta.from_code(template_code)
    for name, value in code_fields.items():
        if not hasattr(meta, name):
            raise TypeError(f"assemble() got an unexpected code field {name!r}")
        setattr(meta, name, tuple(value) if name.endswith("vars") else value)
    _validate(instructions, meta)
    stacksize = max(max_stack_depth(instructions), versions.MIN_STACKSIZE)
    pools = OperandPools(instructions, meta, template_code)
    lowered = lower(instructions, pools)
    units = _layout(lowered)
    fields = meta.as_fields()
    fields["co_varnames"] = pools.varnames
    return template_code.replace(
        **fields,
        co_code=_code_bytes(lowered, units),
        co_consts=tuple(pools.consts),
        co_names=tuple(pools.names),
        co_nlocals=len(pools.varnames),
        co_stacksize=stacksize,
        co_linetable=_line_table(lowered, units, meta.co_firstlineno),
        co_exceptiontable=_exception_table(lowered, units),
    )


def _validate(instructions: list[Instruction], meta: CodeMeta) -> None:
    index = {inst: i for i, inst in enumerate(instructions)}
    if len(index) != len(instructions):
        duplicate = next(i for i, inst in enumerate(instructions) if index[inst] != i)
        raise ValueError(f"{instructions[duplicate].opname} at index {duplicate} appears twice")
    made_cells = set()
    for i, inst in enumerate(instructions):
        if not isinstance(inst, Instruction):
            raise TypeError(f"item {i} is a {type(inst).__name__}, not an Instruction")
        kind = OPERAND_KINDS.get(inst.opname)
        if kind is None:
            raise ValueError(f"unknown opname {inst.opname!r} at index {i}")
        if kind is OperandKind.JUMP and inst.target not in index:
            raise ValueError(f"{inst.opname} at index {i} jumps to an instruction not in the list")
        if kind is not OperandKind.JUMP and inst.target is not None:
            raise ValueError(f"{inst.opname} at index {i} is not a jump but has a target")
        if inst.exn_tab_entry is not None and inst.exn_tab_entry.target not in index:
            raise ValueError(f"{inst.opname} at index {i} has an exception handler not in the list")
        try:
            check_operand(inst.opname, inst.argval)
        except TypeError as error:
            raise TypeError(f"{error} (at index {i})") from None
        if inst.opname == "MAKE_CELL":
            made_cells.add(inst.argval)
        _check_neighbours(instructions, i)
    used_cells = {inst.argval for inst in instructions if inst.kind is OperandKind.FREE}
    missing = (used_cells & set(meta.co_cellvars)) - made_cells
    if missing:
        raise ValueError(f"cell variables {sorted(missing)} are used but have no MAKE_CELL")
    if meta.co_freevars and not any(inst.opname == "COPY_FREE_VARS" for inst in instructions):
        raise ValueError("free variables need a COPY_FREE_VARS in the prefix")


def _check_neighbours(instructions: list[Instruction], i: int) -> None:
    inst = instructions[i]
    following = instructions[i + 1] if i + 1 < len(instructions) else None
    for first, second in versions.GLUED_PAIRS:
        if inst.opname == first and (following is None or following.opname != second):
            raise ValueError(f"{first} at index {i} must be immediately followed by {second}")
    if inst.opname == "SEND" and versions.THROW_RAISES_BEFORE_SEND_TARGET:
        # Lowering keeps list order (PRECALL takes its CALL's handler, the 3.11
        # PUSH_NULL; LOAD_GLOBAL fusion its second piece's) and layout puts
        # every unit of an instruction in its range, so the unit before SEND's
        # target is covered by the handler of the instruction listed before it.
        before = instructions[instructions.index(inst.target) - 1]
        if handler_key(before) != handler_key(inst):
            raise ValueError(
                f"SEND at index {i}: the instruction before its target must have SEND's "
                "exception handler (gen.throw raises there on this version)"
            )
    if inst.opname == "FOR_ITER" and versions.FOR_ITER_EXIT:
        target = inst.target
        position = instructions.index(target)
        found = tuple(x.opname for x in instructions[position : position + len(versions.FOR_ITER_EXIT)])
        if found != versions.FOR_ITER_EXIT:
            raise ValueError(
                f"FOR_ITER at index {i} must target {' ; '.join(versions.FOR_ITER_EXIT)}, not {found}"
            )


def _extended_args(arg: int) -> int:
    return 0 if arg < 1 << 8 else 1 if arg < 1 << 16 else 2 if arg < 1 << 24 else 3


def _layout(lowered: list[LoweredInstruction]) -> list[int]:
    """Unit offset of every instruction (plus the end), fixing jump opargs.

    Prefixes only grow, so the loop ends; an instruction keeps a prefix it
    no longer needs (EXTENDED_ARG 0) rather than shrink and oscillate. A jump
    starts from the prefix its decoded oparg had: two layouts can both be
    stable (a backward jump of 256 with a prefix, or of 255 without), CPython's
    assembler sometimes settles on the longer one, and starting from it is what
    makes a round trip byte-identical.
    """
    position = {inst: i for i, inst in enumerate(lowered)}
    prefixes = [_extended_args(inst.arg) for inst in lowered]
    caches = [versions.CACHE_ENTRIES[inst.opname] for inst in lowered]
    while True:
        starts = [0]
        for prefix, cache in zip(prefixes, caches):
            starts.append(starts[-1] + prefix + 1 + cache)
        changed = False
        for i, inst in enumerate(lowered):
            if inst.target is None:
                continue
            base = starts[i + 1]
            target = starts[position[inst.target]]
            inst.arg = base - target if inst.backward else target - base
            needed = _extended_args(inst.arg)
            if needed > prefixes[i]:
                prefixes[i] = needed
                changed = True
        if not changed:
            return starts


def _code_bytes(lowered: list[LoweredInstruction], starts: list[int]) -> bytes:
    out = bytearray()
    for i, inst in enumerate(lowered):
        size = starts[i + 1] - starts[i]
        prefixes = size - 1 - versions.CACHE_ENTRIES[inst.opname]
        for shift in range(prefixes, 0, -1):
            out += bytes((_EXTENDED_ARG, (inst.arg >> (8 * shift)) & 0xFF))
        out += bytes((versions.RAW_OPMAP[inst.opname], inst.arg & 0xFF))
        out += bytes(2 * versions.CACHE_ENTRIES[inst.opname])
    return bytes(out)


def _exception_table(lowered: list[LoweredInstruction], starts: list[int]) -> bytes:
    position = {inst: i for i, inst in enumerate(lowered)}
    runs = []
    for i, inst in enumerate(lowered):
        entry = inst.exn_tab_entry
        if entry is not None:
            handler = starts[position[inst.handler]]
            runs.append((starts[i], starts[i + 1], (handler, entry.depth, entry.lasti)))
    return encode_exception_table(
        RawExceptionEntry(start, end, handler, depth, lasti)
        for start, end, (handler, depth, lasti) in merge_ranges(runs)
    )


def _line_table(lowered: list[LoweredInstruction], starts: list[int], firstlineno: int) -> bytes:
    writer = LineTableWriter(firstlineno)
    for i, inst in enumerate(lowered):
        writer.add(inst.positions, starts[i + 1] - starts[i])
    return writer.getvalue()
