"""Check a finished code object before framegraph installs it.

The interpreter trusts bytecode completely: a NULL passed where an object is expected, a
stack deeper than co_stacksize, a LOAD_FAST of an unbound slot (3.12+) or a *_DEREF of a
slot that holds no cell crash the process instead of raising. `verify` decodes the code
object and runs an abstract interpretation over every reachable instruction, along
fall-through, jump and exception-table edges, until nothing changes. It refuses code that
breaks one of these rules with a `VerificationError` naming the instruction and the rule:

* the stack never underflows, never exceeds co_stacksize, and has one depth at every
  instruction, exception handlers included (entered at the entry's depth + lasti + 1);
* a NULL sits only where a call takes one (`KINDS` says what each opcode pops and pushes);
* LOAD_FAST reads a definitely bound slot, where the version does not check at run time
  (`versions.LOAD_FAST_CHECKS_UNBOUND`); framegraph's replacement code never relies on
  that check;
* *_DEREF, LOAD_CLOSURE and MAKE_CELL name cell or free variables of the code, and the
  slot holds a cell when it is read; COPY_FREE_VARS copies exactly co_freevars;
* instructions the interpreter reads together stay together (`versions.GLUED_PAIRS`, the
  units FOR_ITER's exit skips).

Abstract values. A stack slot or a local slot may hold NULL, an object, or a cell (an
object that a *_DEREF may read through); the analysis keeps the set of those it may hold,
as three bits. A stack slot that may hold NULL also remembers the instruction that pushed
it, for messages, and because a NULL saved by LOAD_FAST_AND_CLEAR may legitimately be
stored back (what an inlined comprehension does on 3.12+). Local slots are packed three
bits each into one int, so a join of two states is one `|`.
"""

from __future__ import annotations

import heapq
import types
from collections.abc import Callable

from ..exc import GeneratedCodeError
from . import versions
from .analysis import stack_effect
from .decode import argument_count, decode, localsplus_names
from .instruction import Instruction, OperandKind, OPERAND_KINDS

NULL, OBJ, CELL = 1, 2, 4
_KIND = 7  # the three bits; a stack slot keeps (index of the NULL's origin + 1) above them
_ORIGIN = 3


class VerificationError(GeneratedCodeError):
    """Bytecode that would crash or misbehave; `rule` names the rule it breaks.

    The message reads `<what went wrong> at offset <n> (line <l>) in <qualname> (<file>:<line>)`.
    """

    def __init__(self, rule: str, detail: str, code: types.CodeType, inst: Instruction | None = None) -> None:
        self.rule = rule
        self.detail = detail
        self.code = code
        self.offset = inst.offset if inst is not None else None
        self.opname = inst.opname if inst is not None else None
        self.argval = inst.argval if inst is not None else None
        self.lineno = inst.lineno if inst is not None else None
        line = "no line" if inst is None or inst.lineno is None else f"line {inst.lineno}"
        where = "" if inst is None else f" at offset {inst.offset} ({line})"
        super().__init__(f"{detail}{where} in {code.co_qualname} ({code.co_filename}:{code.co_firstlineno})")


def verify(code: types.CodeType, *, replacement_for: types.CodeType | None = None) -> None:
    """Raise VerificationError if `code` breaks a rule of the module docstring.

    `replacement_for` is the code of the frame that `code` replaces: its free variables
    must be the same (the hook runs `code` with the frame's closure), and every LOAD_FAST
    of the body, which framegraph wrote, must read a bound slot on every version.
    """
    if replacement_for is not None and code.co_freevars != replacement_for.co_freevars:
        raise VerificationError(
            "free variables",
            f"replacement code has co_freevars {code.co_freevars}, but the frame it replaces has "
            f"{replacement_for.co_freevars} (the hook runs it with that frame's closure)", code)
    strict = replacement_for is not None or not versions.LOAD_FAST_CHECKS_UNBOUND
    _Verifier(code, strict).run()


def _label(inst: Instruction) -> str:
    """`CALL 3`, `LOAD_FAST x`, `LOAD_CONST None`: an instruction as messages name it."""
    kind = OPERAND_KINDS[inst.opname]
    if kind is OperandKind.NONE:
        return inst.opname
    if kind is OperandKind.JUMP:
        return f"{inst.opname} to offset {inst.target.offset}"
    if kind is OperandKind.CONST:
        text = repr(inst.argval)
        return f"{inst.opname} {text if len(text) <= 40 else text[:37] + '...'}"
    return f"{inst.opname} {inst.argval}"


def _oparg(inst: Instruction) -> int:
    # Normal-form operands that are values carry no flag bits.
    return inst.argval if OPERAND_KINDS[inst.opname] is OperandKind.INT else 0


class _Verifier:
    def __init__(self, code: types.CodeType, strict_locals: bool) -> None:
        self.code = code
        self.strict_locals = strict_locals
        try:
            self.instructions = decode(code)
        except (ValueError, IndexError, KeyError) as error:
            raise VerificationError("decode", f"the code cannot be decoded: {error}", code) from None
        if not self.instructions:
            raise VerificationError("decode", "the code has no instructions", code)
        nargs = argument_count(code.co_argcount, code.co_kwonlyargcount, code.co_flags)
        self.slot_names = localsplus_names(code.co_varnames, code.co_cellvars, code.co_freevars)
        self._check_slot_layout()
        self.cells = frozenset(code.co_cellvars) | frozenset(code.co_freevars)
        self.first_free = len(self.slot_names) - len(code.co_freevars)
        self.index = {inst: i for i, inst in enumerate(self.instructions)}
        self._check_neighbours()
        count = len(self.instructions)
        self.stacks: list[tuple[int, ...] | None] = [None] * count
        self.slots: list[int] = [0] * count
        self.queued = [False] * count
        self.heap: list[int] = []
        # Arguments are bound; every other slot, cells and free variables included,
        # starts out NULL until a store, MAKE_CELL or COPY_FREE_VARS fills it.
        entry = 0
        for slot in range(len(self.slot_names)):
            entry |= (OBJ if slot < nargs else NULL) << (3 * slot)
        self._reach(0, (), entry, None)

    def _check_slot_layout(self) -> None:
        # Slot operands are decoded (and assembled) by name through `localsplus_names`; if
        # the interpreter laid the slots out otherwise, every name after the first
        # disagreement would be another variable's.
        code = self.code
        for slot, name in enumerate([*self.slot_names, None]):
            try:
                actual = code._varname_from_oparg(slot)
            except IndexError:
                actual = None
            if actual != name:
                raise VerificationError(
                    "slot layout", f"slot {slot} is {actual!r} to the interpreter but {name!r} to "
                    "framegraph's decoder", code)

    def _check_neighbours(self) -> None:
        # The interpreter reads the second of these pairs through the first, or skips a
        # fixed number of units after FOR_ITER's target (`versions.GLUED_PAIRS`).
        instructions = self.instructions
        for i, inst in enumerate(instructions):
            following = instructions[i + 1].opname if i + 1 < len(instructions) else None
            for first, second in versions.GLUED_PAIRS:
                if inst.opname == first and following != second:
                    raise self.fail("layout", f"{_label(inst)} must be directly followed by {second}", inst)
            if inst.opname == "FOR_ITER" and versions.FOR_ITER_EXIT:
                at = self.index[inst.target]
                found = tuple(x.opname for x in instructions[at:at + len(versions.FOR_ITER_EXIT)])
                if found != versions.FOR_ITER_EXIT:
                    raise self.fail("layout", f"{_label(inst)} must jump to {'; '.join(versions.FOR_ITER_EXIT)}, "
                                              f"which its exit skips, not to {'; '.join(found)}", inst)

    # ---- errors -----------------------------------------------------------------------

    def fail(self, rule: str, detail: str, inst: Instruction) -> VerificationError:
        return VerificationError(rule, detail, self.code, inst)

    def describe(self, slot: int) -> str:
        origin = self.instructions[(slot >> _ORIGIN) - 1]
        what = "NULL" if slot & _KIND == NULL else "a value that may be NULL"
        return f"{what} (pushed by {_label(origin)} at offset {origin.offset})"

    def require_object(self, slot: int, inst: Instruction, rule: str, role: str) -> None:
        if slot & NULL:
            raise self.fail(rule, f"{self.describe(slot)} {role} {_label(inst)}", inst)

    def origin(self, inst: Instruction) -> int:
        return (self.index[inst] + 1) << _ORIGIN

    # ---- local slots --------------------------------------------------------------------

    def slot_kind(self, slots: int, inst: Instruction) -> int:
        return (slots >> (3 * inst.arg)) & _KIND

    @staticmethod
    def with_slot(slots: int, slot: int, kind: int) -> int:
        shift = 3 * slot
        return (slots & ~(_KIND << shift)) | (kind << shift)

    def require_cell(self, slots: int, inst: Instruction) -> None:
        name = self.slot_names[inst.arg]
        if name not in self.cells:
            raise self.fail("cell", f"{_label(inst)}: {name!r} is not a cell or free variable of this code", inst)
        kind = self.slot_kind(slots, inst)
        if kind & NULL:
            raise self.fail("cell", f"{_label(inst)} may run before the cell of {name!r} exists "
                                    "(no MAKE_CELL or COPY_FREE_VARS on some path)", inst)
        if kind != CELL:
            raise self.fail("cell", f"{_label(inst)}: the slot of {name!r} may hold a plain value, not a cell", inst)

    # ---- propagation --------------------------------------------------------------------

    def _reach(self, target: int, stack: tuple[int, ...], slots: int, source: Instruction | None) -> None:
        known = self.stacks[target]
        if known is None:
            self.stacks[target], self.slots[target] = stack, slots
        else:
            if len(known) != len(stack):
                inst = self.instructions[target]
                raise self.fail("stack depth", f"{_label(inst)} is reached with stack depth {len(known)} and, "
                                               f"from {_label(source)} at offset {source.offset}, {len(stack)}", inst)
            merged = known if known == stack else tuple(
                a if a == b else self._join_slot(a, b) for a, b in zip(known, stack))
            joined = self.slots[target] | slots
            if merged == known and joined == self.slots[target]:
                return
            self.stacks[target], self.slots[target] = merged, joined
        if not self.queued[target]:
            self.queued[target] = True
            heapq.heappush(self.heap, target)

    def _join_slot(self, a: int, b: int) -> int:
        kind = (a | b) & _KIND
        if not kind & NULL:
            return kind
        origins = [slot >> _ORIGIN for slot in (a, b) if slot & NULL]
        # The join must be order-independent: a NULL that only LOAD_FAST_AND_CLEAR could
        # have pushed ranks below any other (it may be stored back), then the earliest wins.
        cleared = [self.instructions[o - 1].opname == "LOAD_FAST_AND_CLEAR" for o in origins]
        return kind | (min(zip(cleared, origins))[1] << _ORIGIN)

    def run(self) -> None:
        while self.heap:
            i = heapq.heappop(self.heap)
            self.queued[i] = False
            self._step(i)

    def _step(self, i: int) -> None:
        inst = self.instructions[i]
        before = self.stacks[i]
        slots = self.slots[i]
        pops, pushes = stack_effect(inst.opname, _oparg(inst))
        if pops > len(before):
            raise self.fail("stack underflow", f"{_label(inst)} pops {pops} but the stack holds {len(before)}", inst)
        entry = inst.exn_tab_entry
        if entry is not None:
            if entry.depth > len(before):
                raise self.fail("handler depth", f"the exception handler at offset {entry.target.offset} keeps "
                                                  f"{entry.depth} stack items but {_label(inst)} has {len(before)}", inst)
            handler = before[:entry.depth] + (OBJ,) * (entry.lasti + 1)
            self._check_depth(len(handler), inst, f"entering its exception handler at offset {entry.target.offset}")
            self._reach(self.index[entry.target], handler, slots, inst)
        stack = list(before)
        slots = KINDS.get(inst.opname, _generic)(self, inst, stack, slots, pops, pushes)
        self._check_depth(len(stack), inst, "")
        if inst.target is not None:
            jump = versions.JUMP_EFFECTS.get(inst.opname)
            if jump is None:
                jumped = tuple(stack)
            else:
                jump_pops, jump_pushes = stack_effect(inst.opname, _oparg(inst), jump=True)
                jumped = before[:len(before) - jump_pops] + (OBJ,) * jump_pushes
            self._reach(self.index[inst.target], jumped, slots, inst)
        if inst.opname not in versions.TERMINATORS:
            if i + 1 == len(self.instructions):
                raise self.fail("falls off end", f"control falls off the end of the code after {_label(inst)}", inst)
            self._reach(i + 1, tuple(stack), slots, inst)

    def _check_depth(self, depth: int, inst: Instruction, how: str) -> None:
        if depth > self.code.co_stacksize:
            how = f" {how}" if how else ""
            raise self.fail("stack overflow", f"{_label(inst)}{how} makes the stack {depth} deep, past "
                                              f"co_stacksize {self.code.co_stacksize}", inst)


# ---- what each opcode pops and pushes -------------------------------------------------
# A kind handler pops its operands from `stack`, pushes its results and returns the local
# slots after the instruction. Opcodes not listed take objects and push objects.

Handler = Callable[[_Verifier, Instruction, list, int, int, int], int]


def _misuse(opname: str, position: int) -> tuple[str, str]:
    if opname in ("RETURN_VALUE", "YIELD_VALUE"):
        return "NULL returned", "returned by" if opname == "RETURN_VALUE" else "yielded by"
    if opname.startswith("STORE_"):
        return "NULL stored", "stored by"
    return "NULL operand", f"used as operand {position} of"


def _pop_objects(v: _Verifier, inst: Instruction, stack: list, pops: int) -> None:
    base = len(stack) - pops
    for position, slot in enumerate(stack[base:], 1):
        if slot & NULL:
            rule, role = _misuse(inst.opname, position)
            v.require_object(slot, inst, rule, role)
    del stack[base:]


def _generic(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    _pop_objects(v, inst, stack, pops)
    stack.extend((OBJ,) * pushes)
    return slots


def _push_null(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    stack.append(NULL | v.origin(inst))
    return slots


def _load_method(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    # [method, self] or, for an attribute that is not a method, the attribute and a NULL
    # in the version's order: the slot that may be NULL is where a call accepts one.
    _pop_objects(v, inst, stack, pops)
    maybe = NULL | OBJ | v.origin(inst)
    stack.extend((OBJ, maybe) if versions.NULL_AFTER_CALLABLE else (maybe, OBJ))
    return slots


def _call_pair(v: _Verifier, inst: Instruction, stack: list, base: int) -> int:
    """Checks the callable of the [callable, self-or-NULL] pair at `base` (in the
    version's order); returns the kind of the slot that may hold NULL."""
    callable_at, nullable_at = (base, base + 1) if versions.NULL_AFTER_CALLABLE else (base + 1, base)
    v.require_object(stack[callable_at], inst, "NULL argument", "passed as the callable of")
    return stack[nullable_at]


def _call(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    # CALL n: pair, n arguments. CALL_KW n (3.13): pair, n arguments, the keyword names.
    base = len(stack) - pops
    _call_pair(v, inst, stack, base)
    for position, slot in enumerate(stack[base + 2:], 1):
        role = f"passed as argument {position} of" if position <= _oparg(inst) else "passed as the keyword names of"
        v.require_object(slot, inst, "NULL argument", role)
    del stack[base:]
    stack.append(OBJ)
    return slots


def _call_function_ex(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    # The compiler always gives it a plain PUSH_NULL; a method pair would drop `self`.
    base = len(stack) - pops
    if _call_pair(v, inst, stack, base) & _KIND != NULL:
        raise v.fail("NULL argument", f"{_label(inst)} needs a NULL beside its callable, but that slot may "
                                      "hold a value (a method pair would lose its self)", inst)
    for position, slot in enumerate(stack[base + 2:], 1):
        v.require_object(slot, inst, "NULL argument", f"passed as argument {position} of")
    del stack[base:]
    stack.append(OBJ)
    return slots


def _copy(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    source = stack[-inst.argval]
    v.require_object(source, inst, "NULL operand", "copied by")
    stack.append(source)
    return slots


def _swap(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    n = inst.argval
    stack[-1], stack[-n] = stack[-n], stack[-1]
    return slots


def _load_fast(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    kind = v.slot_kind(slots, inst)
    if kind & NULL:
        if inst.opname == "LOAD_FAST" and v.strict_locals:
            state = "is unbound" if kind == NULL else "may be unbound"
            raise v.fail("unbound local", f"{_label(inst)} reads a slot that {state} here (LOAD_FAST does not "
                                          "check; only LOAD_FAST_CHECK may read a maybe-unbound local)", inst)
        # Past a run-time check the slot is bound, or the instruction raised.
        kind = (kind & ~NULL) or OBJ
        slots = v.with_slot(slots, inst.arg, kind)
    stack.append(kind)
    return slots


def _load_closure(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    v.require_cell(slots, inst)
    stack.append(CELL)
    return slots


def _load_fast_and_clear(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    kind = v.slot_kind(slots, inst)
    stack.append(kind | v.origin(inst) if kind & NULL else kind)
    return v.with_slot(slots, inst.arg, NULL)


def _store_fast(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    value = stack.pop()
    if value & NULL and v.instructions[(value >> _ORIGIN) - 1].opname != "LOAD_FAST_AND_CLEAR":
        v.require_object(value, inst, "NULL stored", "stored by")
    return v.with_slot(slots, inst.arg, value & _KIND)


def _delete_fast(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    return v.with_slot(slots, inst.arg, NULL)


def _make_cell(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    if v.slot_names[inst.arg] not in v.code.co_cellvars:
        raise v.fail("cell", f"{_label(inst)}: {inst.argval!r} is not a cell variable of this code", inst)
    return v.with_slot(slots, inst.arg, CELL)


def _copy_free_vars(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    if inst.argval != len(v.code.co_freevars):
        raise v.fail("cell", f"{_label(inst)} copies {inst.argval} cells but the code has "
                             f"{len(v.code.co_freevars)} free variables", inst)
    for slot in range(v.first_free, len(v.slot_names)):
        slots = v.with_slot(slots, slot, CELL)
    return slots


def _deref(v: _Verifier, inst: Instruction, stack: list, slots: int, pops: int, pushes: int) -> int:
    v.require_cell(slots, inst)
    return _generic(v, inst, stack, slots, pops, pushes)


KINDS: dict[str, Handler] = {
    "PUSH_NULL": _push_null,
    **dict.fromkeys(["LOAD_METHOD", "LOAD_SUPER_METHOD", "LOAD_ZERO_SUPER_METHOD"], _load_method),
    **dict.fromkeys(["CALL", "CALL_KW"], _call),
    "CALL_FUNCTION_EX": _call_function_ex,
    "COPY": _copy,
    "SWAP": _swap,
    **dict.fromkeys(["LOAD_FAST", "LOAD_FAST_CHECK"], _load_fast),
    "LOAD_CLOSURE": _load_closure,
    "LOAD_FAST_AND_CLEAR": _load_fast_and_clear,
    "STORE_FAST": _store_fast,
    "DELETE_FAST": _delete_fast,
    "MAKE_CELL": _make_cell,
    "COPY_FREE_VARS": _copy_free_vars,
    **dict.fromkeys(["LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLASSDEREF",
                     "LOAD_FROM_DICT_OR_DEREF"], _deref),
}
KINDS = {name: handler for name, handler in KINDS.items() if name in versions.NORMAL_OPNAMES}
