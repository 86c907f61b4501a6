"""Running a generator body one step at a time, as the interpreter does.

`resume` translates the body up to its next `yield` and returns the value; the translator
then stays suspended there (its stack, locals and position are plain data) until the next
resumption, which sends a value in (the `yield` expression's result) or throws an exception
in at the `yield`. So a consumer that mutates what the body reads, or stops early (`any`,
`next`, `zip`), sees exactly the interleaving it sees eagerly.

`yield from` (GET_YIELD_FROM_ITER, SEND) delegates each resumption to the inner iterator; a
throw while delegating goes to the inner generator first, as `gen.throw` does.
"""

from __future__ import annotations

import types

from ..bytecode import Instruction, versions
from ..exc import ObservedException, Unsupported
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.exceptions import ExceptionVariable, generator_exit
from .inline import InliningInstructionTranslator

# A generator drained by its consumer (`list(gen)`) that yields more than this is probably
# infinite (`while True: yield`), and the loop must not hang the compiler.
MAX_GENERATOR_ITEMS = 10_000


class _Suspended(Exception):
    """Carries a yielded value out of the generator's translation loop (never escapes resume)."""

    def __init__(self, value: VariableTracker) -> None:
        super().__init__()
        self.value = value


class GeneratorTranslator(InliningInstructionTranslator):
    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.yielded = 0
        self.suspended_at: Instruction | None = None  # the YIELD_VALUE it waits at
        self._inner_value: VariableTracker | None = None  # what the inner generator of a `yield from` yielded
        # Where the root frame can break to run this generator eagerly: the first call that
        # ran it (should it outlive the graph once started), the first that left it
        # suspended inside a handler (see variables/generators.check_no_pending_cleanup).
        self.first_break = _consumer_break(self, "is started here and outlives the graph")
        self.break_instead = None

    def on_return_generator(self) -> None:
        self.push(ConstantVariable(None))  # what RETURN_GENERATOR leaves for its POP_TOP

    def on_yield(self, value: VariableTracker) -> None:
        if self.yielded >= MAX_GENERATOR_ITEMS:
            raise Unsupported("Unsupported frame",
                              f"generator {self.code.co_qualname} yielded over {MAX_GENERATOR_ITEMS} items")
        self.yielded += 1
        self.suspended_at = self.current
        if self.break_instead is None and self.suspended_in_handler():
            self.break_instead = _consumer_break(self, "yields inside a try or with block and is not run to its end")
        raise _Suspended(value)

    def suspended_in_handler(self) -> bool:
        """Whether it waits inside a block whose cleanup `close()` would run: a `finally`,
        a `with`, or an `except` that can catch GeneratorExit."""
        if self.suspended_at is None:
            return False
        entry = self.suspended_at.exn_tab_entry
        if self._delegating(self.suspended_at):  # a `yield from` waits at its SEND's handler
            entry = self.instructions[self.index_of[self.suspended_at] - 1].exn_tab_entry
        return close_runs_code(self, entry)

    def _delegating(self, at: Instruction) -> bool:
        index = self.index_of[at]
        return index > 0 and self.instructions[index - 1].opname == "SEND"

    def resume(self, consumer, sent: VariableTracker, thrown: ExceptionVariable | None) -> tuple[bool, VariableTracker]:
        """(True, the value yielded) or (False, the value returned)."""
        try:
            at, self.suspended_at = self.suspended_at, None
            if at is not None:
                if thrown is not None and self._throw_at(consumer, at, thrown):
                    self.suspended_at = at  # the inner generator of a `yield from` yielded
                    return True, self._inner_value
                if thrown is None:
                    self.push(sent)  # the value of the `yield` expression
            return False, self.run()
        except _Suspended as suspended:
            return True, suspended.value
        except ObservedException as raised:  # 3.11 converts a StopIteration here, 3.12+ in the body
            raise generator_exit(raised) from None
        finally:
            # Guards recorded after the step belong to the consumer's line again.
            consumer.output.set_user_line(consumer.code.co_filename, consumer.lineno, consumer.code.co_name)

    def _throw_at(self, consumer, at: Instruction, thrown: ExceptionVariable) -> bool:
        """Raises `thrown` in the body where it waits, for its handlers to catch. Inside
        `yield from` the inner generator gets it first: True when that one yields instead."""
        if not self._delegating(at):
            self.handle_exception(at, ObservedException(thrown))
            return False
        from ..variables.generators import GeneratorVariable

        send = self.instructions[self.index_of[at] - 1]
        receiver = self.peek()
        try:
            if issubclass(thrown.cls, GeneratorExit):
                if isinstance(receiver, GeneratorVariable):
                    receiver.close(consumer)
                raise ObservedException(thrown)
            if not isinstance(receiver, GeneratorVariable):
                raise ObservedException(thrown)  # a plain iterator has no throw()
            yielded, value = receiver.resume(consumer, thrown=thrown)
        except ObservedException as raised:
            self.pop()  # the inner iterator: the exception is raised at the `yield from` itself
            self.handle_exception(send, raised)
            return False
        if yielded:
            self._inner_value = value
            return True
        finish_send(self, send, value)  # the inner generator returned: so does `yield from`
        return False


_CLEANUP = ["COPY", "POP_EXCEPT", "RERAISE"]  # what follows a handler: restore, re-raise
_CLASS_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_ATTR", "LOAD_CONST", "BUILD_TUPLE"})


def close_runs_code(tx, entry) -> bool:
    """Whether GeneratorExit raised where `entry` (an exception-table entry, or None) protects
    would run the program's code on its way out: a `finally`, a `with` block's `__exit__`,
    or an `except` clause that can catch it. Clauses are read statically: a class expression
    other than global names, their attributes and tuples of them counts as catching."""
    for _ in range(100):  # handlers protecting handlers nest only so deep
        if entry is None:
            return False
        code, index = tx.instructions, tx.index_of[entry.target]
        first = code[index]
        if first.opname == "CALL_INTRINSIC_1" and first.argval == 3:
            return False  # 3.12+'s wrapper of a generator body: only StopIteration changes there
        if [i.opname for i in code[index:index + 3]] == _CLEANUP:
            entry = code[index + 2].exn_tab_entry
            continue
        if first.opname != "PUSH_EXC_INFO":
            return True
        index += 1
        while code[index].opname != "RERAISE":  # one `except` clause after another
            classes, index = _exception_classes(tx, index)
            if classes is None or any(issubclass(GeneratorExit, cls) for cls in classes) \
                    or code[index].opname != "POP_JUMP_IF_FALSE":
                return True
            index = tx.index_of[code[index].target]
        entry = code[index].exn_tab_entry  # no clause matched: re-raised from the handler
    return True


def _exception_classes(tx, index: int) -> tuple[tuple[type, ...] | None, int]:
    """The classes an `except` clause starting at `index` tests, and the index after its
    CHECK_EXC_MATCH; (None, index) when they cannot be read without running code."""
    stack: list = []
    code = tx.instructions
    while code[index].opname in _CLASS_LOADS:
        inst = code[index]
        if inst.opname == "LOAD_GLOBAL":
            namespace = tx.f_globals if inst.argval in tx.f_globals else tx.f_builtins
            if inst.argval not in namespace:
                return None, index
            stack.append(namespace[inst.argval])
        elif inst.opname == "LOAD_CONST":
            stack.append(inst.argval)
        elif inst.opname == "LOAD_ATTR":
            if not stack or not isinstance(stack[-1], types.ModuleType):
                return None, index
            stack.append(getattr(stack.pop(), inst.argval, None))
        else:
            items = stack[len(stack) - inst.argval:]
            del stack[len(stack) - inst.argval:]
            stack.append(tuple(items))
        index += 1
    if len(stack) != 1 or code[index].opname != "CHECK_EXC_MATCH":
        return None, index
    classes = stack[0] if isinstance(stack[0], tuple) else (stack[0],)
    if not all(isinstance(cls, type) for cls in classes):
        return None, index
    return classes, index + 1


def _consumer_break(tx: GeneratorTranslator, why: str):
    """A break at the root frame's instruction now running (the call driving this
    generator), if the frame can be split there."""
    from ..breaks import BreakPoint, why_unbreakable
    from ..variables.generators import generator_break

    reason = generator_break(f"generator {tx.code.co_qualname} {why}")
    root = tx
    while True:  # where it was met, innermost frame first, as an error passing out would say
        reason.user_stack.append((root.code.co_filename, root.lineno, root.code.co_name))
        if root.is_root:
            break
        root = root.parent
    if root.current is None or why_unbreakable(root, root.current, reason) is not None:
        return None
    return BreakPoint(root.index_of[root.current], reason)


def finish_send(tx, send: Instruction, value: VariableTracker) -> None:
    """SEND when its iterator is done: on to its target with the value it returned."""
    if versions.SEND_EXIT_POPS_RECEIVER:
        tx.pop()
    tx.push(value)
    tx.jump(send.target)
