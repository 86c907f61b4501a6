"""The translation main loop: run a frame's bytecode on VariableTrackers instead of values.

The translator holds a symbolic stack and symbolic locals and walks the decoded
instructions. Each instruction goes to the handler named after its opcode (handlers live
in `handlers/`, one module per family, and are collected into `DISPATCH` once). Handlers
record tensor work in the OutputGraph and guards in its GuardSet. The loop ends when a
handler sets `return_value`; anything it cannot model raises `Unsupported`.

Locals start out as the real values the hook passed in and become trackers on first read,
so only what the code touches is guarded.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from ..bytecode import Instruction, decoded
from ..bytecode import versions
from ..exc import InternalError, ObservedException, Unsupported
from ..breaks import force_break, forced_breaks
from ..output_graph import OutputGraph
from ..source import FrameCellSource, GlobalSource, LocalSource
from ..variables.base import NULL, VariableTracker
from ..variables.builder import wrap, wrap_library_value
from ..variables.constant import ConstantVariable
from ..variables.exceptions import set_context
from ..variables.user_functions import CellBox


class InstructionTranslator:
    def __init__(self, code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any],
                 f_builtins: dict[str, Any], output: OutputGraph, closure: tuple | None = None) -> None:
        self.code = code
        self.f_locals = f_locals
        self.f_globals = f_globals
        self.f_builtins = f_builtins
        self.output = output
        self.instructions, self.index_of = decoded(code)
        self.stack: list[VariableTracker] = []
        self.symbolic_locals: dict[str, VariableTracker] = {}
        self.deleted: set[str] = set()  # locals deleted while tracing; the real value is stale
        self.ip = 0
        self.current: Instruction | None = None
        self.lineno = code.co_firstlineno
        output.set_user_line(code.co_filename, self.lineno, code.co_name)
        self.kw_names: tuple[str, ...] = ()  # set by KW_NAMES for the next CALL (3.11, 3.12)
        self.return_value: VariableTracker | None = None
        self.exception_stack: list[VariableTracker] = []  # exceptions being handled (PUSH_EXC_INFO)
        self.is_root = True
        self.stop_at = -1  # index of the instruction to stop before (a graph break), or -1
        self.forced = forced_breaks(code, self.instructions)  # config.debug_force_break
        self.root_globals = f_globals  # the globals guards see as G (an inlined call may differ)
        self.depth = 0                 # inlining depth
        self.cell_names = frozenset(code.co_cellvars) | frozenset(code.co_freevars)
        # Closure cells by name. The free variables of the compiled frame come from the hook's
        # f_locals: they are the caller's cells, so writing them is a side effect, replayed
        # through the frame's own cell. Each is known by its real cell, so that a function of
        # the trace closing over the same cell (a nested helper, a @contextmanager) shares
        # the box and its writes.
        self.cells: dict[str, CellBox] = {}
        for i, name in enumerate(code.co_freevars):
            if name not in f_locals:
                continue
            box = CellBox(name, pending=(f_locals[name], LocalSource(name)), shared=True, owner=code,
                          cell_source=FrameCellSource(name))
            self.cells[name] = box
            if closure is not None and i < len(closure):
                output.objects[id(closure[i])] = box

    # ---- the loop -------------------------------------------------------------------------

    def run(self) -> VariableTracker | None:
        """The return value, or None when translation stopped at `stop_at`."""
        dispatch = DISPATCH
        instructions = self.instructions
        forced = self.forced
        while self.return_value is None:
            if self.ip == self.stop_at:
                self.current = instructions[self.ip]
                return None
            inst = instructions[self.ip]
            self.ip += 1
            self.current = inst
            line = inst.positions.lineno
            if line is not None and line != self.lineno:
                self.lineno = line
                self.output.set_user_line(self.code.co_filename, line, self.code.co_name)
            handler = force_break if forced and self.ip - 1 in forced else dispatch.get(inst.opname)
            if handler is None:
                raise Unsupported("Missing bytecode handler", f"{inst.opname} at {self.user_line()}")
            try:
                handler(self, inst)
            except Unsupported as error:
                # Innermost first: each translator the error passes through adds its line.
                error.user_stack.append((self.code.co_filename, self.lineno, self.code.co_name))
                raise
            except GuardOnDataDependentSymNode as error:
                # The translator itself needed the value of a number read from tensor data (a
                # length to iterate over, a size to compare): the program is data-dependent here.
                unsupported = Unsupported("Data-dependent branching",
                                          f"{inst.opname} needs {str(error).splitlines()[0]}")
                unsupported.user_stack.append((self.code.co_filename, self.lineno, self.code.co_name))
                raise unsupported from None
            except ObservedException as raised:
                if not raised.contexted:
                    set_context(raised.exception, self.exception_stack)
                    raised.contexted = True
                self.handle_exception(inst, raised)
        return self.return_value

    def handle_exception(self, inst: Instruction, raised: ObservedException) -> None:
        """Jumps to the handler covering `inst`, set up as the interpreter would; with none,
        the exception leaves this frame."""
        entry = inst.exn_tab_entry
        if entry is None:
            if self.is_root:
                # Running eagerly raises the real exception from the real line.
                raise Unsupported("Unsupported exception handling",
                                  f"{raised.exception} escapes the compiled function") from None
            raise raised
        del self.stack[entry.depth:]
        if entry.lasti:
            self.push(ConstantVariable(self.index_of[inst]))
        self.push(raised.exception)
        self.jump(entry.target)

    def user_line(self) -> str:
        return f"{self.code.co_filename}:{self.lineno} in {self.code.co_name}"

    def jump(self, target: Instruction) -> None:
        self.ip = self.index_of[target]

    # ---- the stack ------------------------------------------------------------------------

    def push(self, value: VariableTracker) -> None:
        self.stack.append(value)

    def pop(self) -> VariableTracker:
        if not self.stack:
            raise InternalError(f"symbolic stack underflow at {self.current} ({self.user_line()})")
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        if n == 0:
            return []
        if len(self.stack) < n:
            raise InternalError(f"symbolic stack underflow at {self.current} ({self.user_line()})")
        values = self.stack[-n:]
        del self.stack[-n:]
        return values

    def peek(self, depth: int = 1) -> VariableTracker:
        return self.stack[-depth]

    def push_null_pair(self, callable_: VariableTracker) -> None:
        """Pushes a callable with the NULL a call needs beside it, where this version puts it."""
        if versions.NULL_AFTER_CALLABLE:
            self.push(callable_)
            self.push(NULL)
        else:
            self.push(NULL)
            self.push(callable_)

    # ---- names ----------------------------------------------------------------------------

    def load_local(self, name: str) -> VariableTracker:
        value = self.symbolic_locals.get(name)
        if value is None:
            if name not in self.f_locals or name in self.deleted:
                raise Unsupported("Unsupported exception handling",
                                  f"local variable {name!r} is read before it is assigned")
            value = self.symbolic_locals[name] = wrap(self, self.f_locals[name], LocalSource(name))
        return value

    def store_local(self, name: str, value: VariableTracker) -> None:
        self.symbolic_locals[name] = value
        self.deleted.discard(name)

    def delete_local(self, name: str) -> None:
        self.load_local(name)  # raises like Python if the name is unbound
        self.symbolic_locals.pop(name, None)
        self.deleted.add(name)

    def load_global(self, name: str) -> VariableTracker:
        written = self.output.side_effects.load_global(name)
        if written is not None and self.f_globals is self.root_globals:
            return written
        if name in self.f_globals:
            return wrap(self, self.f_globals[name], GlobalSource(name))
        if name in self.f_builtins:
            # Guarding `name not in G` on every call would cost more than it protects:
            # shadowing a builtin with a global mid-run is out of scope, as in torch.compile.
            # LOAD_GLOBAL finds builtins too, so the global source reloads it (unguarded).
            return wrap_library_value(self.f_builtins[name], GlobalSource(name))
        raise Unsupported("Unsupported exception handling", f"name {name!r} is not defined")

    def cell(self, name: str) -> CellBox:
        box = self.cells.get(name)
        if box is None:
            raise Unsupported("Unsupported exception handling", f"free variable {name!r} is not bound")
        return box

    def make_cell(self, name: str) -> None:
        """MAKE_CELL: a new cell holding the local of the same name, if it is bound."""
        box = CellBox(name, owner=self.code)
        if name in self.symbolic_locals:
            box.value = self.symbolic_locals.pop(name)
        elif name in self.f_locals and name not in self.deleted:
            box = CellBox(name, pending=(self.f_locals[name], LocalSource(name)), owner=self.code)
        self.cells[name] = box

    def on_return_generator(self) -> None:
        raise Unsupported("Unsupported frame", "a generator or coroutine body")

    def on_yield(self, value: VariableTracker) -> None:
        raise Unsupported("Unsupported frame", "yield outside a generator being iterated")

    def store_global(self, name: str, value: VariableTracker) -> None:
        if self.f_globals is not self.root_globals:
            raise Unsupported("Unsupported mutation", f"assignment to global {name!r} of another module")
        self.output.side_effects.store_global(name, value)

    # ---- helpers handlers share -----------------------------------------------------------

    def call(self, fn: VariableTracker, args: list[VariableTracker],
             kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return fn.call_function(self, args, kwargs)

    def inline_call(self, fn, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .inline import inline_call

        return inline_call(self, fn, args, kwargs)

    def unpack_iterable(self, value: VariableTracker) -> list[VariableTracker]:
        from ..variables.iterators import unpack

        return unpack(self, value)


Handler = Callable[[InstructionTranslator, Instruction], None]


def _build_dispatch() -> dict[str, Handler]:
    from .handlers import HANDLER_MODULES

    table: dict[str, Handler] = {}
    for module in HANDLER_MODULES:
        for name, handler in vars(module).items():
            if not name.isupper() or not callable(handler):
                continue
            if name in table:
                raise InternalError(f"two handlers for {name}: {table[name].__module__} and {module.__name__}")
            table[name] = handler
    return table


DISPATCH: dict[str, Handler] = _build_dispatch()
