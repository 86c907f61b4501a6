"""Control- and data-flow facts about normal-form instruction lists.

Stack effects are data (`versions.STACK_EFFECTS`); an exception edge enters its
handler at `depth + lasti + 1` (the entry's depth, the pushed lasti, the
exception), which together reproduce CPython's co_stacksize.
"""

from __future__ import annotations

from collections.abc import Callable

from . import versions
from .instruction import Instruction, OperandKind, OPERAND_KINDS


def stack_effect(opname: str, oparg: int = 0, *, jump: bool = False) -> tuple[int, int]:
    """(pops, pushes) of `opname`; `jump` selects the taken edge of a branch."""
    effect = versions.JUMP_EFFECTS.get(opname) if jump else None
    pops, pushes = effect or versions.STACK_EFFECTS[opname]
    return (pops(oparg) if callable(pops) else pops, pushes(oparg) if callable(pushes) else pushes)


def _effect(inst: Instruction, jump: bool) -> tuple[int, int]:
    # Normal-form operands that are values carry no flag bits, hence oparg 0.
    oparg = inst.argval if OPERAND_KINDS[inst.opname] is OperandKind.INT else 0
    return stack_effect(inst.opname, oparg, jump=jump)


class _Walker:
    """Propagates depths along fall-through, jump and exception edges."""

    def __init__(self, instructions: list[Instruction], strict: bool) -> None:
        self.instructions = instructions
        self.index = {inst: i for i, inst in enumerate(instructions)}
        self.strict = strict
        self.depths: dict[Instruction, int] = {}
        self.pending: list[Instruction] = []
        self.highest = 0

    def fail(self, message: str) -> None:
        if self.strict:
            raise ValueError(message)

    def name(self, inst: Instruction) -> str:
        return f"{inst.opname} at index {self.index[inst]}"

    def reach(self, inst: Instruction, depth: int, source: Instruction) -> None:
        known = self.depths.get(inst)
        if known is None:
            if inst not in self.index:
                raise ValueError(f"{self.name(source)} targets an instruction not in the list")
            self.depths[inst] = depth
            self.pending.append(inst)
        elif known != depth:
            self.fail(
                f"inconsistent stack depth at {self.name(inst)}: {known} or {depth}"
                f" (reached from {self.name(source)})"
            )

    def run(self) -> None:
        while self.pending:
            self.step(self.pending.pop())

    def step(self, inst: Instruction) -> None:
        depth = self.depths[inst]
        pops, pushes = _effect(inst, jump=False)
        if pops > depth:
            return self.fail(f"stack underflow at {self.name(inst)}: pops {pops} from depth {depth}")
        after = depth - pops + pushes
        self.highest = max(self.highest, depth, after)
        entry = inst.exn_tab_entry
        if entry is not None:
            if depth < entry.depth:
                return self.fail(
                    f"{self.name(inst)} has depth {depth}, below its handler's depth {entry.depth}"
                )
            handler_depth = entry.depth + entry.lasti + 1
            self.highest = max(self.highest, handler_depth)
            self.reach(entry.target, handler_depth, inst)
        if inst.target is not None:
            jump_pops, jump_pushes = _effect(inst, jump=True)
            jump_depth = depth - jump_pops + jump_pushes
            self.highest = max(self.highest, jump_depth)
            self.reach(inst.target, jump_depth, inst)
        i = self.index[inst]
        if inst.opname not in versions.TERMINATORS:
            if i + 1 == len(self.instructions):
                return self.fail(f"{self.name(inst)} falls off the end of the code")
            self.reach(self.instructions[i + 1], after, inst)


def _propagate(instructions: list[Instruction]) -> _Walker:
    if not instructions:
        raise ValueError("empty instruction list")
    walker = _Walker(instructions, strict=True)
    walker.depths[instructions[0]] = 0
    walker.pending.append(instructions[0])
    walker.run()
    return walker


def _dead_code_depth(instructions: list[Instruction], live: dict[Instruction, int]) -> int:
    """Deepest stack in handlers whose protected range the compiler optimised away.

    CPython sized the stack before removing the range, so it counts them. The
    entry depth of a dead straight-line segment is recovered from where it
    rejoins code of known depth (walking its effects backwards) or, for a
    handler that starts with PUSH_EXC_INFO, from its own cleanup entry (the
    depth below the exception).
    """
    walker = _Walker(instructions, strict=False)

    def known(inst: Instruction | None) -> int | None:
        return None if inst is None else live.get(inst, walker.depths.get(inst))

    for segment in _dead_segments(instructions, live):
        first = instructions[segment[0]]
        if first in walker.depths:
            continue
        depth = _rejoin_depth(instructions, segment, known)
        if depth is None and first.opname == "PUSH_EXC_INFO" and first.exn_tab_entry is not None:
            depth = first.exn_tab_entry.depth
        if depth is not None and depth >= 0:
            walker.depths[first] = depth
            walker.pending.append(first)
            walker.run()
    return walker.highest


def _dead_segments(instructions: list[Instruction], live: dict[Instruction, int]) -> list[list[int]]:
    """Unreachable straight-line runs: split where control cannot fall through."""
    segments: list[list[int]] = []
    for i, inst in enumerate(instructions):
        if inst in live:
            continue
        previous = instructions[i - 1] if i else None
        if segments and segments[-1][-1] == i - 1 and previous.opname not in versions.TERMINATORS:
            segments[-1].append(i)
        else:
            segments.append([i])
    return segments


def _rejoin_depth(
    instructions: list[Instruction], segment: list[int], known: Callable[[Instruction | None], int | None]
) -> int | None:
    last = instructions[segment[-1]]
    if last.opname in versions.TERMINATORS:
        exit_inst, jump = last.target, True
    else:
        exit_inst = instructions[segment[-1] + 1] if segment[-1] + 1 < len(instructions) else None
        jump = False
    depth = known(exit_inst)
    if depth is None:
        return None
    for i in reversed(segment):
        pops, pushes = _effect(instructions[i], jump=jump and i == segment[-1])
        depth += pops - pushes
    return depth


def stack_depths(instructions: list[Instruction]) -> dict[Instruction, int]:
    """Stack depth before each reachable instruction.

    Raises ValueError naming the instruction on underflow, on different depths
    meeting at one instruction, on a target outside the list, or on control
    falling off the end.
    """
    return _propagate(instructions).depths


def max_stack_depth(instructions: list[Instruction]) -> int:
    """The co_stacksize CPython computes: reachable code plus dead handlers."""
    walker = _propagate(instructions)
    if len(walker.depths) == len(instructions):
        return walker.highest
    return max(walker.highest, _dead_code_depth(instructions, walker.depths))


def jump_targets(instructions: list[Instruction]) -> set[Instruction]:
    """Instructions some jump lands on (exception handlers not included)."""
    return {inst.target for inst in instructions if inst.target is not None}


def prefix_end(instructions: list[Instruction]) -> int:
    """Index just after the frame-setup prefix (COPY_FREE_VARS, MAKE_CELL,
    RETURN_GENERATOR; POP_TOP) and its RESUME, where a body edit may begin."""
    for i, inst in enumerate(instructions):
        if inst.opname == "RESUME":
            return i + 1
    return 0


# Slot accesses for liveness. Every cell access needs the cell object, so only
# STORE_FAST (and DELETE_FAST afterwards) makes an earlier value dead.
_VARIABLE_KINDS = (OperandKind.LOCAL, OperandKind.FREE)
_KILLS = frozenset({"STORE_FAST", "DELETE_FAST", "LOAD_FAST_AND_CLEAR"})
_PURE_WRITES = frozenset({"STORE_FAST"})


def live_locals(instructions: list[Instruction], at: Instruction) -> set[str]:
    """Variables that some path from `at` (jumps and exception edges included)
    reads before writing: the values a resume point must restore."""
    bits: dict[str, int] = {}
    gen: list[int] = []
    kill: list[int] = []
    for inst in instructions:
        read = written = 0
        if OPERAND_KINDS[inst.opname] in _VARIABLE_KINDS:
            bit = 1 << bits.setdefault(inst.argval, len(bits))
            read = 0 if inst.opname in _PURE_WRITES else bit
            written = bit if inst.opname in _KILLS else 0
        gen.append(read)
        kill.append(written)
    index = {inst: i for i, inst in enumerate(instructions)}
    live = [0] * len(instructions)
    changed = True
    while changed:
        changed = False
        for i in range(len(instructions) - 1, -1, -1):
            inst = instructions[i]
            out = 0
            if inst.opname not in versions.TERMINATORS and i + 1 < len(instructions):
                out |= live[i + 1]
            if inst.target is not None:
                out |= live[index[inst.target]]
            value = gen[i] | (out & ~kill[i])
            if inst.exn_tab_entry is not None:
                value |= live[index[inst.exn_tab_entry.target]]
            if value != live[i]:
                live[i] = value
                changed = True
    mask = live[index[at]]
    return {name for name, bit in bits.items() if mask >> bit & 1}
