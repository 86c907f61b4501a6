"""Graph breaks: harvest the graph so far, run the breaking instruction eagerly, resume.

When translation meets something it cannot model at instruction N of the compiled frame
(possibly deep inside an inlined call, whose CALL in this frame then becomes N), it restarts
and stops cleanly before N. The replacement code for that attempt then:

    calls the graph so far                 __compiled_fn_<n>(inputs) -> graph_out_0
    replays the side-effect ledger         the caller's objects now look as in eager
    writes back live locals                locals N (and what follows) reads hold real values
    runs N itself, on the rebuilt stack    e.g. the real print("mid")
    calls the resume function              __resume_at_<offset>_<k>(stack..., live locals...)
    returns its result

A conditional jump on a tensor gets one resume function per branch. The resume functions
(resume_execution.py) are compiled by the hook as frames of their own.
"""

from __future__ import annotations

import dataclasses
import types

from . import logs
from .bytecode import Instruction, create_instruction, decode, emit, live_locals
from .bytecode.analysis import stack_effect
from .bytecode.instruction import OPERAND_KINDS, OperandKind
from .codegen import PyCodegen, replace_body
from .counters import counters
from .exc import Unsupported
from .output_graph import OutputGraph
from .resume_execution import CACHE, ResumeSpec
from .source import LocalSource
from .variables.base import NullVariable, VariableTracker
from .variables.iterators import ListIteratorVariable
from .variables.user_functions import CellBox

_JUMPS = frozenset({"POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"})
# Instructions whose eager run cannot be followed by one resume call: they jump, return,
# belong to exception handling, or read state the break does not rebuild.
_UNBREAKABLE = frozenset({
    "FOR_ITER", "RETURN_VALUE", "RETURN_CONST", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP",
    "SEND", "YIELD_VALUE", "RAISE_VARARGS", "RERAISE", "PUSH_EXC_INFO", "POP_EXCEPT",
    "CHECK_EXC_MATCH", "WITH_EXCEPT_START", "BEFORE_WITH", "KW_NAMES", "RETURN_GENERATOR",
    "JUMP", "JUMP_NO_INTERRUPT", "END_FOR", "LOAD_CLOSURE", "MAKE_CELL", "COPY_FREE_VARS",
})


@dataclasses.dataclass
class BreakPoint:
    """Where the restarted translation stops, and why (for logs and explain)."""

    index: int
    reason: Unsupported


def why_unbreakable(tx, inst: Instruction) -> str | None:
    """Why the frame cannot be split at `inst` (then it runs eagerly as a whole), or None."""
    if inst.opname in _UNBREAKABLE:
        return f"a graph break at {inst.opname} cannot be resumed"
    if inst.exn_tab_entry is not None and not _inside_grad_mode_block(tx, inst):
        return "graph breaks inside try blocks and inside `with` blocks other than grad-mode ones are not supported"
    if tx.exception_stack:
        return "a graph break while an exception is being handled"
    if any(box.captured for box in tx.cells.values()):
        return "a graph break in a frame whose closure cells are shared with functions it made"
    return None


def _inside_grad_mode_block(tx, inst: Instruction) -> bool:
    """Whether `inst` is protected only by `with` blocks of grad-mode managers: their
    handlers (PUSH_EXC_INFO; WITH_EXCEPT_START) survive into the resume function, whose
    stack gets a GradModeRestorer in place of each manager's `__exit__`."""
    from .variables.ctx_managers import GradModeVariable

    entry = inst.exn_tab_entry
    handler = tx.instructions[tx.index_of[entry.target]:tx.index_of[entry.target] + 2]
    if [i.opname for i in handler] != ["PUSH_EXC_INFO", "WITH_EXCEPT_START"]:
        return False
    exits = [v for v in tx.stack if getattr(v, "name", None) == "__exit__"]
    return bool(exits) and all(isinstance(getattr(v, "obj", None), GradModeVariable) for v in exits)


# Called with every break as it is compiled; explain() listens here.
break_observers: list = []


def report_break(reason: Unsupported, code: types.CodeType, whole_frame: bool = False) -> None:
    """Counts and logs one graph break (or a frame that runs eagerly as a whole)."""
    counters["graph_break"][f"{reason.gb_type}: {reason.context}"] += 1
    for observer in break_observers:
        observer(reason, code, whole_frame)
    if logs.enabled("graph_breaks"):
        filename, lineno, name = reason.user_stack[0] if reason.user_stack else (
            code.co_filename, code.co_firstlineno, code.co_name)
        where = " (the whole frame runs eagerly)" if whole_frame else ""
        lines = [f"Graph break in user code at {filename}:{lineno}{where}",
                 f"Graph Break Reason: {reason.gb_type}: {reason.context}",
                 f"  Explanation: {reason.explanation}"]
        lines += [f"  Hint: {hint}" for hint in reason.hints]
        lines += [f"  User stack: {f}:{line} in {n}" for f, line, n in reason.user_stack]
        logs.log("graph_breaks", "\n".join(lines))


def generate_break(tx, inst: Instruction, output: OutputGraph, generate_prefix) -> types.CodeType:
    """The replacement code for a frame split at `inst` (translation stopped just before it)."""
    code = tx.code
    index = tx.index_of[inst]
    # Named after the offset of the break in the original function, as torch.compile does.
    original, original_index = CACHE.original_index(code, index)
    tx.break_offset = decode(original)[original_index].offset if original is not code else inst.offset
    live_here = _live(tx, inst)
    local_values = {name: _local_value(tx, name) for name in live_here}
    cg = PyCodegen(code)
    generate_prefix(cg, [*tx.stack, *local_values.values()])
    # Everything the rest needs is loaded before the side effects are replayed (see
    # convert_frame._emit_graph); the replay itself leaves the stack as it found it.
    _write_back(cg, local_values)
    stack = list(tx.stack)
    if inst.opname in _JUMPS:
        *survivors, condition = stack
        kept = [v for v in survivors if not isinstance(v, NullVariable)]
        temps = [f"___stack_tmp{i}" for i in range(len(kept))]
        for value in kept:
            _pass_survivor(cg, value)
        cg.reconstruct(condition)
        output.side_effects.codegen_replay(cg)
        other_branch = create_instruction("NOP")
        cg.append(create_instruction(inst.opname, target=other_branch))
        for branch_start, target_index in ((None, index + 1), (other_branch, tx.index_of[inst.target])):
            if branch_start is not None:
                cg.append(branch_start)
            for name in reversed(temps):
                cg.store_local(name)
            cg.append(*_resume_pair(tx, target_index, survivors, 0))
            for name in temps:
                cg.load_local(name)
            _load_live_and_call(tx, cg, target_index, survivors, 0)
        return replace_body(code, cg.instructions)
    pops, pushes = stack_effect(inst.opname, _oparg(inst))
    survivors, consumed = stack[:len(stack) - pops], stack[len(stack) - pops:]
    cg.append(*_resume_pair(tx, index + 1, survivors, pushes))
    for value in survivors:
        _pass_survivor(cg, value)
    for value in consumed:
        cg.reconstruct(value)
    output.side_effects.codegen_replay(cg)
    cg.append(*_eager_copy(tx, inst))
    _load_live_and_call(tx, cg, index + 1, survivors, pushes)
    return replace_body(code, cg.instructions)


def _oparg(inst: Instruction) -> int:
    return inst.argval if OPERAND_KINDS[inst.opname] is OperandKind.INT else 0


def _eager_copy(tx, inst: Instruction) -> list[Instruction]:
    """The breaking instruction itself, as emitted in the replacement code."""
    if inst.opname == "CALL" and tx.kw_names:
        return emit.create_call(inst.argval, tx.kw_names)  # keeps KW_NAMES right before it
    return [dataclasses.replace(inst, exn_tab_entry=None, target=None, offset=None, origin=None)]


def _live(tx, inst: Instruction) -> list[str]:
    """Locals some path from `inst` reads before writing, that are bound now."""
    names = live_locals(tx.instructions, inst) - set(tx.code.co_freevars)
    return sorted(name for name in names if _is_bound(tx, name))


def _is_bound(tx, name: str) -> bool:
    if name in tx.cells:
        return tx.cells[name].value is not None or tx.cells[name].has_pending()
    return name in tx.symbolic_locals or (name in tx.f_locals and name not in tx.deleted)


def _local_value(tx, name: str) -> VariableTracker:
    if name in tx.cells:
        return tx.cells[name].get(tx)
    return tx.load_local(name)


def _write_back(cg: PyCodegen, values: dict[str, VariableTracker]) -> None:
    """Stores traced values of live locals into the frame, skipping ones that are unchanged."""
    for name, value in values.items():
        if value.source == LocalSource(name):
            continue
        cg.reconstruct(value)
        cg.store_local(name)


def _spec(tx, target_index: int, survivors: list[VariableTracker], pushes: int) -> ResumeSpec:
    nulls = tuple(isinstance(v, NullVariable) for v in survivors) + (False,) * pushes
    iters = tuple(isinstance(v, ListIteratorVariable) for v in survivors) + (False,) * pushes
    live = tuple(_live(tx, tx.instructions[target_index]))
    original, original_index = CACHE.original_index(tx.code, target_index)
    return ResumeSpec(original, original_index, nulls, live, iters if any(iters) else ())


def _pass_survivor(cg: PyCodegen, value: VariableTracker) -> None:
    """Loads a stack value to hand to the resume function (see ResumeSpec.stack_iters)."""
    if isinstance(value, ListIteratorVariable):
        value.reconstruct_remaining(cg)
    elif not isinstance(value, NullVariable):
        cg.reconstruct(value)


def _resume_pair(tx, target_index: int, survivors: list[VariableTracker], pushes: int) -> list[Instruction]:
    """Instructions pushing the resume function with the NULL a call needs."""
    spec = _spec(tx, target_index, survivors, pushes)
    resume = CACHE.get(spec)
    name = CACHE.global_name(spec, tx.break_offset)
    if resume.co_freevars:
        # It shares this frame's closure cells, so it is made here, not installed globally.
        load = [create_instruction("LOAD_CLOSURE", argval=n) for n in resume.co_freevars]
        load += [create_instruction("BUILD_TUPLE", arg=len(resume.co_freevars)), *emit.create_make_closure(resume)]
        return emit.create_push_null_pair(load)
    tx.f_globals[name] = types.FunctionType(resume, tx.f_globals, name)
    return emit.create_load_global(name, push_null=True)


def _load_live_and_call(tx, cg: PyCodegen, target_index: int, survivors: list[VariableTracker],
                        pushes: int) -> None:
    spec = _spec(tx, target_index, survivors, pushes)
    for name in spec.live:
        cg.load_local(name)
    cg.call(len(spec.argnames))
    cg.return_value()
