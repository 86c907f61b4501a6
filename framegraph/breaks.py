"""Graph breaks: harvest the graph so far, run the breaking instruction eagerly, resume.

When translation meets something it cannot model at instruction N of the compiled frame
(possibly deep inside an inlined call, whose CALL in this frame then becomes N), it restarts
and stops cleanly before N. The replacement code for that attempt then:

    calls the graph so far                 __compiled_fn_<n>(inputs) -> graph_out_0
    replays the side-effect ledger         the caller's objects now look as in eager
    writes back live locals                locals N (and what follows) reads hold real values
    runs N itself, on the rebuilt stack    e.g. the real print("mid")
    calls the resume function              __framegraph_resume_at_<offset>_<k>(stack..., live locals...)
    returns its result
    (if N raised inside a with block)      calls the resume function of N's handler instead

A conditional jump on a tensor gets one resume function per branch. The resume functions
(resume_execution.py) are compiled by the hook as frames of their own.

`config.debug_force_break` makes chosen instructions break as if unsupported (`forced_breaks`),
so tests can split any function anywhere: `python -m tests.fuzz.break_everywhere` does it
before every instruction of the capture suites and compares each split with eager.
"""

from __future__ import annotations

import dataclasses
import types

from . import config, logs
from .bytecode import Instruction, create_instruction, decoded, emit, live_locals, versions
from .bytecode.analysis import stack_effect
from .bytecode.instruction import OPERAND_KINDS, ExceptionTableEntry, OperandKind
from .codegen import PyCodegen, replace_body
from .counters import counters
from .exc import InternalError, Unsupported, drop_tracebacks
from .output_graph import OutputGraph
from .resume_execution import CACHE, ResumeSpec
from .source import LocalSource
from .variables.base import NullVariable, UnboundVariable, VariableTracker
from .variables.iterators import IteratorVariable

# Instructions that only move stack items: a break at one needs no exception handler.
_CANNOT_RAISE = frozenset({"SWAP", "COPY", "NOP", "PUSH_NULL"})
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

    def __post_init__(self) -> None:
        drop_tracebacks(self.reason)  # a BreakPoint outlives the attempt that raised it


def why_unbreakable(tx, inst: Instruction, reason: Unsupported | None = None) -> str | None:
    """Why the frame cannot be split at `inst` for `reason` (then it runs eagerly as a whole), or None."""
    if reason is not None and reason.gb_type == "Frame introspection":
        return "its frame object would outlive the split"
    if inst.opname in _UNBREAKABLE:
        return f"a graph break at {inst.opname} cannot be resumed"
    origin = CACHE.origin(tx.code)
    if origin is not None and tx.index_of[inst] < origin.body_start:
        # The prologue rebuilds the stack the break left (GET_ITER on an iterator it was
        # handed): it has no place in the original to resume at.
        return "a graph break in the prologue of a resume function"
    if inst.opname == "MAKE_FUNCTION" and _following(tx, inst).opname == "SET_FUNCTION_ATTRIBUTE":
        return "a graph break between MAKE_FUNCTION and the SET_FUNCTION_ATTRIBUTEs that finish it"
    if _hands_on_an_instance_dict(tx, inst):
        return "a graph break while an object's __dict__ is held (the resume function would see two unrelated values)"
    if inst.opname in ("LOAD_FAST", "LOAD_FAST_CHECK") and inst.argval in tx.cell_names:
        # 3.13's LOAD_CLOSURE: the cell object itself would be handed to the resume function,
        # and a function made from it would close over this frame's cell, not the resume's.
        return "a graph break at a load of a closure cell cannot be resumed"
    if reason is not None and reason.gb_type == "Unsupported exception handling" and _in_try_block(tx, inst.exn_tab_entry):
        # The eager run raises there, and its handler would run in a resume function that
        # starts with the exception in hand, which runs eagerly anyway.
        return "an exception raised inside a try block, which its handler would take in a frame run eagerly"
    if not _handlers_resume(tx, inst.exn_tab_entry):
        return "graph breaks inside `with` blocks whose manager cannot be handed on are not supported"
    if tx.exception_stack:
        return "a graph break while an exception is being handled"
    if any(box.captured for box in tx.cells.values()):
        return "a graph break in a frame whose closure cells are shared with functions it made"
    if inst.opname == "DICT_MERGE" and versions.NULL_AFTER_CALLABLE \
            and any(isinstance(v, NullVariable) for v in tx.stack):
        # 3.13 names the callable in its error from a fixed depth, across the NULL beside it,
        # which the replacement code cannot keep on its stack: it would read another value.
        return "a graph break at the ** of a call (3.13)"
    if _moves_unbound(tx, inst):
        return f"a graph break at {inst.opname}, which moves a comprehension's saved unbound local"
    return None


def _hands_on_an_instance_dict(tx, inst: Instruction) -> bool:
    """Whether the resume function would get an object's `__dict__` (held, or read by the
    breaking instruction) as an input of its own: its writes to that dict would not show
    in the object's attributes, which it reads through the object."""
    from .variables.instance_dict import InstanceDictVariable

    if inst.opname == "LOAD_ATTR" and inst.argval == "__dict__":
        return True
    return any(isinstance(v, InstanceDictVariable) for v in [*tx.stack, *tx.symbolic_locals.values()])


def _following(tx, inst: Instruction) -> Instruction:
    return tx.instructions[tx.index_of[inst] + 1]


def _moves_unbound(tx, inst: Instruction) -> bool:
    """Whether `inst` pushes or shuffles the NULL a 3.12+ inlined comprehension saves for a
    local that was unbound (LOAD_FAST_AND_CLEAR, the SWAPs around it). Only its STORE_FAST
    can take that NULL from a resume function's stack; compiled code never breaks at these
    instructions (a forced break does), so such a frame runs eagerly."""
    if inst.opname == "LOAD_FAST_AND_CLEAR":
        return not _is_bound(tx, inst.argval)
    if inst.opname in ("SWAP", "COPY"):
        return any(isinstance(v, UnboundVariable) for v in tx.stack[len(tx.stack) - inst.argval:])
    return False


def _handlers_resume(tx, entry) -> bool:
    """Whether the handlers protecting an instruction (`entry` its exception-table entry) do
    in the resume function what they would have done here. The resume function keeps the
    original's exception table and rebuilds the stack they unwind to, so that holds for an
    inlined comprehension's, which puts back the locals it borrowed (a NULL slot unbinds
    one) and re-raises to whatever protects it, and for `with` blocks whose managers can be
    handed on (`_inside_with_block`)."""
    handler, through_comprehension = _first_handler(tx, entry)
    if handler is None:
        return True
    if through_comprehension and _is_try_handler(tx, handler):
        # Inside an inlined comprehension (3.12+) in a try block a split captures nothing
        # more (its calls break again in the resume function): the frame runs eagerly as a
        # whole, as torch.compile runs it.
        return False
    return _inside_with_block(tx, handler)


def _first_handler(tx, entry):
    """The exception-table entry of the first handler protecting an instruction that is not an
    inlined comprehension's cleanup (those re-raise to what protects them), or None; and
    whether one was passed on the way."""
    through_comprehension = False
    while entry is not None:
        reraise = _comprehension_cleanup(tx.instructions[tx.index_of[entry.target]:])
        if reraise is None:
            return entry, through_comprehension
        through_comprehension = True
        entry = reraise.exn_tab_entry
    return None, through_comprehension


def _is_try_handler(tx, entry) -> bool:
    """Whether `entry` leads to a try block's handler (not a `with` block's)."""
    start = tx.index_of[entry.target]
    handler = tx.instructions[start:start + 2]
    return handler[0].opname == "PUSH_EXC_INFO" and handler[1].opname != "WITH_EXCEPT_START"


def _in_try_block(tx, entry) -> bool:
    """Whether the handler protecting an instruction is a try block's."""
    handler, _ = _first_handler(tx, entry)
    return handler is not None and _is_try_handler(tx, handler)


def _comprehension_cleanup(handler: list[Instruction]) -> Instruction | None:
    """The RERAISE ending `handler` when it is an inlined comprehension's cleanup."""
    head = versions.COMPREHENSION_CLEANUP_HEAD
    if not head or [i.opname for i in handler[:len(head)]] != list(head):
        return None
    stores = handler[len(head):len(head) + handler[len(head) - 1].argval - 1]
    end = len(head) + len(stores)
    if any(i.opname != "STORE_FAST" for i in stores) or len(handler) <= end or handler[end].opname != "RERAISE":
        return None
    return handler[end]


def _inside_with_block(tx, entry) -> bool:
    """Whether `entry` is the handler of a `with` block or a try block, and every `with` block open here is one
    whose manager can be handed on: their handlers (PUSH_EXC_INFO; WITH_EXCEPT_START)
    survive into the resume function, whose stack gets each manager's `__exit__`: the bound
    method of the rebuilt object, for a grad-mode manager (rebuilt with what it saved), a
    profiler region (handed on as a nullcontext), or one
    whose `__exit__` is Python (a user class, contextlib's nullcontext or suppress), which the
    resume function traces. (A manager that cannot be rebuilt, such as a
    contextmanager whose generator has started, makes the frame run eagerly then.)"""
    from .variables.ctx_managers import GradModeVariable, ProfilerRegionVariable
    from .variables.user_functions import UserMethodVariable
    from .variables.user_objects import UserDefinedObjectVariable

    if tx.instructions[tx.index_of[entry.target]].opname != "PUSH_EXC_INFO":
        return False
    grad_exits = [v for v in tx.stack if getattr(v, "name", None) == "__exit__"]
    user_exits = [v for v in tx.stack if isinstance(v, UserMethodVariable)
                  and v.fn.get_code().co_name == "__exit__"]
    # A try block's handler needs nothing from this frame but the exception: the resume
    # function's copy of it runs as the original would. The `with` blocks around it do.
    in_try = _is_try_handler(tx, entry)
    if in_try and any(isinstance(v, IteratorVariable) and v.python_type() in _CHECKED_ITERATORS for v in tx.stack):
        # A loop's iterator is handed on as a list of what it has left: the error a dict's or
        # a set's raises when it changes while iterated would not reach the handler.
        return False
    return (in_try or bool(grad_exits or user_exits)) \
        and all(isinstance(getattr(v, "obj", None), (GradModeVariable, ProfilerRegionVariable)) for v in grad_exits) \
        and all(isinstance(v.obj, UserDefinedObjectVariable) for v in user_exits)


# Iterators that raise when their container changes size while they run.
_CHECKED_ITERATORS = frozenset(type(iter(c)) for c in ({}, {}.keys(), {}.values(), {}.items(), set()))

_NOTHING_FORCED: frozenset[int] = frozenset()


def forced_breaks(code: types.CodeType, instructions: list[Instruction]) -> frozenset[int]:
    """Indices into `instructions` (decode(code)) that config.debug_force_break breaks before.

    The setting names instructions by their offset in the original function, so a resume
    function breaks where its original does: a forced break behaves like an unsupported
    instruction, which breaks again whenever a loop brings it back. Where decoding splits one
    raw instruction in two (PUSH_NULL; LOAD_GLOBAL), its offset breaks before each."""
    spec = config.debug_force_break
    if spec is None:
        return _NOTHING_FORCED
    origin = CACHE.origin(code)
    original = code if origin is None else origin.code
    offsets = [inst.offset for inst in (instructions if origin is None else decoded(original)[0])]
    if callable(spec):
        chosen = [i for i, offset in enumerate(offsets) if spec(original, offset)]
    else:
        wanted = {offset for key, offset in spec if key is original or key == original.co_qualname}
        chosen = [i for i, offset in enumerate(offsets) if offset in wanted]
    if origin is None:
        return frozenset(chosen)
    shift = origin.body_start - origin.original_start
    return frozenset(i + shift for i in chosen if i >= origin.original_start)


def force_break(tx, inst: Instruction) -> None:
    """Stands in for the handler of an instruction config.debug_force_break names."""
    original, index = CACHE.original_index(tx.code, tx.index_of[inst])
    raise Unsupported("Forced graph break", f"before {inst.opname} at offset "
                      f"{decoded(original)[0][index].offset} of {original.co_qualname}")


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
    """The replacement code for a frame split at `inst` (translation stopped just before it).

    Nothing is stored into the frame's own locals: every value a later step loads (stack
    survivors, the operands of `inst`, live locals) is read from its source or from the graph
    outputs while the frame still holds the values it had on entry. A local rebound during
    the trace is handed on through a temporary, so `residual = h; h = h * 2` cannot make a
    load of the old `h` see the new one."""
    code = tx.code
    index = tx.index_of[inst]
    # Named after the offset of the break in the original function, as torch.compile does.
    original, original_index = CACHE.original_index(code, index)
    tx.break_offset = decoded(original)[0][original_index].offset if original is not code else inst.offset
    local_values = {name: _local_value(tx, name) for name in _live(tx, inst)}
    cg = PyCodegen(code, tx.output.f_globals)
    generate_prefix(cg, [*tx.stack, *local_values.values()])
    held = _hold_changed_locals(cg, local_values)
    stack = list(tx.stack)
    as_lists = _iterators_as_lists(stack, local_values)
    jump = _conditional_jump(tx, inst)
    if jump is not None:
        *survivors, condition = stack
        kept = [v for v in survivors if not isinstance(v, NullVariable)]
        for value in kept:
            _pass_survivor(cg, value, as_lists)
        cg.reconstruct(condition)
        output.side_effects.codegen_replay(cg)
        cg.release_object_temps()
        other_branch = create_instruction("NOP")
        eager = [*([create_instruction(inst.opname)] if jump is not inst else []),
                 create_instruction(jump.opname, target=other_branch)]
        cg.append(*eager)
        handler = _route_exceptions(tx, eager, inst, stack, len(survivors), as_lists)
        for branch_start, target_index in ((None, tx.index_of[jump] + 1), (other_branch, tx.index_of[jump.target])):
            if branch_start is not None:
                cg.append(branch_start)
            spec = _spec(tx, target_index, survivors, (), as_lists)
            _call_resume(tx, cg, spec, len(kept), held, inst)
        handler(cg, held)
        return replace_body(code, cg.instructions)
    eager, pushed_nulls = _eager_copy(tx, inst)
    pops = stack_effect(inst.opname, _oparg(inst))[0]
    survivors, consumed = stack[:len(stack) - pops], stack[len(stack) - pops:]
    binding = _binding_after(inst, stack[-1] if stack else None)
    spec = _spec(tx, index + 1, survivors, pushed_nulls, as_lists, binding)
    for value in survivors:
        _pass_survivor(cg, value, as_lists)
    for value in consumed:
        cg.reconstruct(value)
    output.side_effects.codegen_replay(cg)
    cg.release_object_temps()
    cg.append(*_sync_operand(tx, inst, held), *eager)
    handler = _route_exceptions(tx, eager, inst, stack, len(survivors), as_lists)
    on_stack = sum(not isinstance(v, NullVariable) for v in survivors) + pushed_nulls.count(False)
    # What the eager instruction stored is in the frame; a temporary holds what it replaced.
    _call_resume(tx, cg, spec, on_stack, {name: temp for name, temp in held.items() if name not in binding}, inst)
    handler(cg, held)
    return replace_body(code, cg.instructions)


def _conditional_jump(tx, inst: Instruction) -> Instruction | None:
    """The conditional jump a break at `inst` splits the frame at: `inst` itself, or the jump
    a TO_BOOL feeds (3.13 takes a value's truth before the jump), so both branches resume
    where they would on the versions without it, not at the jump with a bool."""
    if inst.opname in _JUMPS:
        return inst
    following = tx.instructions[tx.index_of[inst] + 1]
    if inst.opname == "TO_BOOL" and following.opname in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"):
        return following
    return None


def _oparg(inst: Instruction) -> int:
    return inst.argval if OPERAND_KINDS[inst.opname] is OperandKind.INT else 0


# A method load leaves [method, self] or [NULL, function]: neither can be handed to the
# resume function as arguments. Its eager copy loads the bound attribute alone; the resume
# prologue puts the NULL a call expects beside it.
_METHOD_LOADS = {"LOAD_METHOD": "LOAD_ATTR", "LOAD_SUPER_METHOD": "LOAD_SUPER_ATTR",
                 "LOAD_ZERO_SUPER_METHOD": "LOAD_ZERO_SUPER_ATTR"}


def _eager_copy(tx, inst: Instruction) -> tuple[list[Instruction], tuple[bool, ...]]:
    """The breaking instruction as emitted in the replacement code, and the slots the
    resume function's stack gets for what it pushed (True: a NULL, not passed)."""
    if inst.opname == "PUSH_NULL":
        return [], (True,)  # the resume prologue pushes it
    if inst.opname == "CALL" and tx.kw_names:
        call = emit.create_call(inst.argval, tx.kw_names)  # keeps KW_NAMES right before it
        for part in call:
            part.positions = inst.positions
        return call, (False,)
    attr_load = _METHOD_LOADS.get(inst.opname)
    if attr_load is not None:
        load = create_instruction(attr_load, argval=inst.argval)
        load.positions = inst.positions
        return [load], (False, True) if versions.NULL_AFTER_CALLABLE else (True, False)
    pushes = stack_effect(inst.opname, _oparg(inst))[1]
    copy = dataclasses.replace(inst, exn_tab_entry=None, target=None, offset=None, origin=None)
    if copy.opname == "LOAD_FAST" and not _is_bound(tx, copy.argval):
        return emit.create_load_unbound_local(copy.argval), (False,)  # the program deleted it
    return [copy], (False,) * pushes


# Instructions that read or change the local (or cell) they name.
_LOCAL_OPERAND = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST",
                            "LOAD_DEREF", "DELETE_DEREF"})
_BINDS = {"STORE_FAST": True, "STORE_DEREF": True, "DELETE_FAST": False, "DELETE_DEREF": False,
          "LOAD_FAST_AND_CLEAR": False}


def _sync_operand(tx, inst: Instruction, held: dict[str, str]) -> list[Instruction]:
    """Makes the frame's slot for the local `inst` names hold its traced value, so the
    eager instruction sees what the traced program would. The frame still holds what it
    had on entry: a local the trace rebound is in its temporary, one the trace deleted
    (or never bound) must be unbound for the instruction to raise as Python would."""
    name = inst.argval
    if inst.opname not in _LOCAL_OPERAND or name in tx.code.co_freevars:
        return []
    cell = inst.opname.endswith("_DEREF")
    if name in held:
        return [create_instruction("LOAD_FAST", argval=held[name]),
                create_instruction("STORE_DEREF" if cell else "STORE_FAST", argval=name)]
    if not _is_bound(tx, name) and name in tx.f_locals:
        return [create_instruction("DELETE_DEREF" if cell else "DELETE_FAST", argval=name)]
    return []


def _binding_after(inst: Instruction, top: VariableTracker | None) -> dict[str, bool]:
    """The locals the eager instruction binds (True) or unbinds (False). A store of what
    LOAD_FAST_AND_CLEAR saved from an unbound local (3.12+ comprehensions put it back)
    leaves the local unbound."""
    bound = _BINDS.get(inst.opname)
    if bound and inst.opname == "STORE_FAST" and isinstance(top, UnboundVariable):
        bound = False
    return {} if bound is None else {inst.argval: bound}


def _live(tx, inst: Instruction, binding: dict[str, bool] | None = None) -> list[str]:
    """Locals some path from `inst` reads before writing, that are bound now (or, with
    `binding`, after the eager instruction bound or unbound some)."""
    names = live_locals(tx.instructions, inst) - set(tx.code.co_freevars)
    binding = binding or {}
    return sorted(name for name in names if (binding[name] if name in binding else _is_bound(tx, name)))


def _is_bound(tx, name: str) -> bool:
    if name in tx.cells:
        return tx.cells[name].value is not None or tx.cells[name].has_pending()
    return name in tx.symbolic_locals or (name in tx.f_locals and name not in tx.deleted)


def _local_value(tx, name: str) -> VariableTracker:
    if name in tx.cells:
        return tx.cells[name].get(tx)
    return tx.load_local(name)


def _hold_changed_locals(cg: PyCodegen, values: dict[str, VariableTracker]) -> dict[str, str]:
    """Loads the traced value of every live local the trace changed into a temporary of its
    own, before anything else runs; returns name -> temporary. Unchanged locals are passed
    on from the frame itself."""
    held = {}
    for name, value in values.items():
        if value.source == LocalSource(name):
            continue
        cg.reconstruct(value)
        held[name] = f"___live_{name}"
        cg.append(create_instruction("STORE_FAST", argval=held[name]))
    return held


def _spec(tx, target_index: int, survivors: list[VariableTracker], pushed_nulls: tuple[bool, ...],
          as_lists: set[int], binding: dict[str, bool] | None = None) -> ResumeSpec:
    # Resume where an unconditional jump would land, not at the jump: 3.12+ closes a loop
    # with a forward conditional jump over a JUMP_BACKWARD, and resuming at the jump made
    # each trip through the loop a resume function of its own (the 3.11 layout jumps back
    # directly, reaching the one already compiled).
    while tx.instructions[target_index].opname in ("JUMP", "JUMP_NO_INTERRUPT"):
        target_index = tx.index_of[tx.instructions[target_index].target]
    nulls = tuple(isinstance(v, NullVariable) for v in survivors) + pushed_nulls
    iters = tuple(id(v) in as_lists for v in survivors) + (False,) * len(pushed_nulls)
    live = tuple(_live(tx, tx.instructions[target_index], binding))
    original, original_index = CACHE.original_index(tx.code, target_index)
    first = _super_self(original)
    if first is not None and not _is_bound(tx, first):
        raise InternalError(f"{first!r}, which zero-argument super() reads, is unbound at the break")
    unbound = tuple(isinstance(v, UnboundVariable) for v in survivors) + (False,) * len(pushed_nulls)
    return ResumeSpec(original, original_index, nulls, live, iters if any(iters) else (), first,
                      unbound if any(unbound) else ())


def _super_self(code: types.CodeType) -> str | None:
    """The argument zero-argument `super()` reads from the frame's first slot (on 3.11 it
    is not loaded by any instruction), when the code can call it."""
    if "__class__" in code.co_freevars and code.co_argcount:
        return code.co_varnames[0]
    return None


def _iterators_as_lists(stack: list[VariableTracker], local_values: dict[str, VariableTracker]) -> set[int]:
    """The stack's iterators (by id) handed on as lists of what is left (ResumeSpec.stack_iters):
    those nothing else holds. An iterator a local also names (`for a in it: next(it)`) stays
    one real iterator, or the loop and the local would advance two."""
    seen: set[int] = set()
    shared: set[int] = set()
    for value in [*stack, *local_values.values()]:
        (shared if id(value) in seen else seen).add(id(value))
    return {id(v) for v in stack if isinstance(v, IteratorVariable) and id(v) not in shared}


def _pass_survivor(cg: PyCodegen, value: VariableTracker, as_lists: set[int]) -> None:
    """Loads a stack value to hand to the resume function (see ResumeSpec.stack_iters)."""
    if id(value) in as_lists:
        value.reconstruct_remaining(cg)
    elif not isinstance(value, NullVariable):
        cg.reconstruct(value)


def _call_resume(tx, cg: PyCodegen, spec: ResumeSpec, on_stack: int, held: dict[str, str], at: Instruction) -> None:
    """Calls the resume function with the `on_stack` values the stack holds (moved above it
    through temporaries) and returns its result."""
    temps = [f"___stack_tmp{i}" for i in range(on_stack)]
    for name in reversed(temps):
        cg.store_local(name)
    cg.append(*_resume_pair(tx, spec))
    if spec.first is not None:
        _load_local_or_held(cg, spec.first, held)
    for name in temps:
        cg.load_local(name)
    _load_live_and_call(cg, spec, held, at)


def _route_exceptions(tx, eager: list[Instruction], inst: Instruction, stack: list[VariableTracker],
                      survivors: int, as_lists: set[int]):
    """Gives the instructions a break runs eagerly the handler `inst` has in the original.

    The replacement code runs `eager` outside the original's exception table, so an exception
    it raises inside a `with` block (or an inlined comprehension) would skip the block's
    handler: `suppress` would not swallow it, a grad-mode block would leave the mode changed.
    Instead it lands on a handler of the replacement code that calls a second resume
    function, one starting at the original handler with the stack that handler expects
    (the values below the protected range, the saved instruction offset if it keeps one,
    the exception): the handler then runs as it would have in the original frame.
    `stack` is the stack before `inst`; the compiled frame holds its first `survivors`
    values without their NULLs and the rest as they are. Returns what emits the handler,
    once the main path is emitted."""
    entry = inst.exn_tab_entry
    if entry is None or not eager or inst.opname in _CANNOT_RAISE:
        return lambda cg, held: None
    below = stack[:entry.depth]
    # An instruction working on values under the block's depth (LIST_APPEND, SET_ADD, ...)
    # has them on the compiled stack as they are: the handler can take them only if none is a NULL.
    if any(isinstance(v, (NullVariable, UnboundVariable)) for v in below[survivors:]):
        raise InternalError(f"a graph break at {inst.opname} whose handler keeps a NULL it moved")
    kept = [v for v in below[:survivors] if not isinstance(v, NullVariable)] + below[survivors:]
    landing = create_instruction("NOP")
    protected = ExceptionTableEntry(eager[0], eager[-1], landing, len(kept), False)
    for emitted in eager:
        emitted.exn_tab_entry = protected
    # Pushed on the handler's stack by the interpreter: the offset RERAISE reports the
    # exception from (any offset of the resume function serves: only line numbers read it).
    pushed = (False, False) if entry.lasti else (False,)
    spec = _spec(tx, tx.index_of[entry.target], below, pushed, as_lists)

    def emit_handler(cg: PyCodegen, held: dict[str, str]) -> None:
        start = len(cg.instructions)
        cg.append(landing)
        if entry.lasti:
            cg.load_const(0)
            cg.append(create_instruction("SWAP", arg=2))
        _call_resume(tx, cg, spec, len(kept) + len(pushed), held, inst)
        # What the resume function lets out passed this frame twice (raised here, re-raised
        # by the call): one traceback entry goes, as eager shows the frame once.
        once = create_instruction("STORE_FAST", argval="___raised")
        call = cg.instructions[start + 1:]
        reraised = ExceptionTableEntry(call[0], call[-1], once, 0, False)
        for emitted in call:
            emitted.exn_tab_entry = reraised
        cg.append(once)
        cg.load_callable_const(_without_repeated_frame)
        cg.load_local("___raised")
        cg.call(1)
        cg.append(create_instruction("RERAISE", arg=0))
        for emitted in cg.instructions[start:]:
            emitted.positions = inst.positions

    return emit_handler


def _without_repeated_frame(error: BaseException) -> BaseException:
    """`error`, its traceback's first entry dropped when the next is of the same frame."""
    tb = error.__traceback__
    if tb is not None and tb.tb_next is not None and tb.tb_next.tb_frame is tb.tb_frame:
        error.__traceback__ = tb.tb_next
    return error


def _load_local_or_held(cg: PyCodegen, name: str, held: dict[str, str]) -> None:
    if name in held:
        cg.append(create_instruction("LOAD_FAST", argval=held[name]))
    else:
        cg.load_local(name)


def _resume_pair(tx, spec: ResumeSpec) -> list[Instruction]:
    """Instructions pushing the resume function with the NULL a call needs."""
    resume = CACHE.get(spec)
    name = CACHE.global_name(spec, tx.break_offset)
    if resume.co_freevars:
        # It shares this frame's closure cells, so it is made here, not installed globally.
        load = [create_instruction("LOAD_CLOSURE", argval=n) for n in resume.co_freevars]
        load += [create_instruction("BUILD_TUPLE", arg=len(resume.co_freevars)), *emit.create_make_closure(resume)]
        return emit.create_push_null_pair(load)
    tx.output.install_global(name, types.FunctionType(resume, tx.f_globals, name))
    return emit.create_load_global(name, push_null=True)


def _load_live_and_call(cg: PyCodegen, spec: ResumeSpec, held: dict[str, str], at: Instruction) -> None:
    """Loads the live locals the resume function takes after the stack values, and calls it.
    The call is placed at the breaking instruction's line: a traceback through the rest of
    the function shows the user's frame there, not at its `def`."""
    start = len(cg.instructions)
    for name in spec.live_args:
        _load_local_or_held(cg, name, held)
    cg.call(len(spec.argnames))
    cg.return_value()
    for emitted in cg.instructions[start:]:
        emitted.positions = at.positions
