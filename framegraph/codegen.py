"""Bytecode synthesis: the replacement code that calls the compiled graph and rebuilds results.

`PyCodegen` collects normal-form instructions. Version differences stay in
`framegraph.bytecode.emit`; this module only says what to load and call.

The body that replaces a frame reads, for a function whose graph returns two tensors:

    PUSH_NULL; LOAD_GLOBAL __compiled_fn_0     (the NULL goes where the version wants it)
    LOAD_FAST x; LOAD_FAST y                   graph inputs, reloaded from their sources
    CALL 2
    STORE_FAST graph_out_0                     the tuple of graph outputs
    ...rebuild the return value, reading graph_out_0[i] for each tensor in it...
    RETURN_VALUE

When the return value is exactly the graph's single output, the store and rebuild collapse
into `UNPACK_SEQUENCE 1`.
"""

from __future__ import annotations

import collections
import types
from typing import Any, Iterator

from . import config
from .bytecode import CodeMeta, Instruction, create_instruction, emit, prefix_end, transform_code_object
from .bytecode.instruction import NO_POSITIONS
from .bytecode.verify import verify
from .exc import InternalError
from .output_graph import CompiledGraph, is_float_output
from .source import GlobalSource, LocalSource, Source
from .variables.base import VariableTracker
from .variables.builtins import has_identity
from .variables.containers import TupleVariable
from .variables.numpy import NumpyNdarrayVariable
from .variables.object_keys import reconstruct_key
from .variables.tensor import SizeVariable, SymNodeVariable, TensorVariable

GRAPH_OUT = "graph_out_0"


class PyCodegen:
    def __init__(self, code: types.CodeType, f_globals: dict) -> None:
        self.code = code
        self.f_globals = f_globals  # the compiled frame's: what MAKE_FUNCTION gives a function
        self._derefs = frozenset(code.co_cellvars) | frozenset(code.co_freevars)
        self.instructions: list[Instruction] = []
        # id(tensor variable) -> index into the graph's output tuple
        self.graph_outputs: dict[int, int] = {}
        # While a graph call's inputs load: bases that several inputs share, and the
        # temporaries holding those already read.
        self._shared: frozenset[Source] = frozenset()
        self._source_temps: dict[Source, str] = {}
        # id(tracker) -> the temporary holding the object rebuilt for it: a list, object or
        # iterator made while tracing and reached twice (two locals, a local and the result)
        # must come back as one object, as it is in eager.
        self._object_temps: dict[int, str] = {}

    def append(self, *instructions: Instruction) -> None:
        self.instructions.extend(instructions)

    # ---- the Codegen protocol sources use -------------------------------------------------

    def load_local(self, name: str) -> None:
        # A cell's slot holds the cell; its value is read through the cell.
        self.append(create_instruction("LOAD_DEREF" if name in self._derefs else "LOAD_FAST", argval=name))

    def load_cell(self, name: str) -> None:
        """The cell object of a cell or free variable, not its contents."""
        self.append(create_instruction("LOAD_CLOSURE", argval=name))

    def load_global(self, name: str) -> None:
        self.append(*emit.create_load_global(name, push_null=False))

    def load_builtin(self, name: str) -> None:
        """Pushes a builtin with the NULL a call of it needs."""
        self.append(*emit.create_load_global(name, push_null=True))

    def load_attr(self, name: str) -> None:
        self.append(*emit.create_load_attr(name))

    def load_const(self, value: Any) -> None:
        self.append(create_instruction("LOAD_CONST", argval=value))

    def subscript(self) -> None:
        self.append(create_instruction("BINARY_SUBSCR"))

    def store_local(self, name: str) -> None:
        self.append(create_instruction("STORE_DEREF" if name in self._derefs else "STORE_FAST", argval=name))

    def unpack_sequence(self, count: int) -> None:
        self.append(create_instruction("UNPACK_SEQUENCE", arg=count))

    def return_value(self) -> None:
        self.append(create_instruction("RETURN_VALUE"))

    def load_callable_const(self, value: Any) -> None:
        """Pushes a constant callable with the NULL a call of it needs."""
        self.append(*emit.create_push_null_pair(emit.create_load_const(value)))

    def call(self, nargs: int, kw_names: tuple[str, ...] = ()) -> None:
        """Calls the callable pair below `nargs` arguments, the last len(kw_names) by keyword."""
        self.append(*emit.create_call(nargs, kw_names))

    def load_method(self, name: str) -> None:
        """obj -> what a call of obj.name(...) needs on the stack."""
        self.append(*emit.create_load_method(name))

    def load_source(self, source: Source) -> None:
        temp = self._source_temps.get(source)
        if temp is not None:
            self.load_local(temp)
            return
        source.reconstruct(self)
        if source in self._shared:
            temp = self._source_temps[source] = f"___src{len(self._source_temps)}"
            self.append(*emit.create_dup_top())
            self.store_local(temp)

    def push_null(self) -> None:
        self.append(create_instruction("PUSH_NULL"))

    def build(self, kind: type, count: int) -> None:
        opname = {tuple: "BUILD_TUPLE", list: "BUILD_LIST", dict: "BUILD_MAP", set: "BUILD_SET"}[kind]
        self.append(create_instruction(opname, arg=count))

    # ---- values ---------------------------------------------------------------------------

    def reconstruct(self, value: VariableTracker) -> None:
        """Loads the value a tracker stands for. An object made while tracing (a list, dict,
        set, tuple, iterator or instance with no source) is built once and kept in a temporary:
        every place that holds it (locals, the stack, other containers, the ledger) must get
        the same object, or a mutation (or an iterator's advance) through one name is lost
        to the others."""
        index = self.graph_outputs.get(id(value))
        if index is not None:
            self.load_local(GRAPH_OUT)
            self.load_const(index)
            self.subscript()
            if isinstance(value, NumpyNdarrayVariable):
                # the graph computes the array's tensor; the program gets an ndarray
                self.load_method("numpy")
                self.call(0)
            elif is_float_output(value):
                self.load_method("item")  # a float leaves the graph as a 0-d float64 tensor
                self.call(0)
            return
        temp = self._object_temps.get(id(value))
        if temp is not None:
            self.load_local(temp)
            return
        value.reconstruct(self)
        if value.source is None and id(value) not in self._object_temps \
                and (has_identity(value) or isinstance(value, (TupleVariable, SizeVariable))):
            # A tuple (or size) too: an object's attribute and its item may be one tuple.
            self.hold_made(value)

    def hold_made(self, value: VariableTracker) -> None:
        """Keeps the object on top of the stack as `value`'s, in a temporary `reconstruct`
        reloads; called by a rebuild that makes the object before filling it, so what fills
        it (its items, its attributes) may refer to it."""
        temp = self._object_temps[id(value)] = f"___obj{len(self._object_temps)}"
        self.append(*emit.create_dup_top())
        self.store_local(temp)

    def pop_top(self) -> None:
        self.append(create_instruction("POP_TOP"))

    def release_object_temps(self) -> None:
        """Drops the temporaries `reconstruct` kept, once nothing more is rebuilt: an object
        must not outlive the references eager code holds (a generator's `finally` runs when
        the last one goes)."""
        for temp in self._object_temps.values():
            self.append(create_instruction("DELETE_FAST", argval=temp))
        self._object_temps.clear()

    def reconstruct_source(self, value: VariableTracker) -> None:
        """Loads the existing object a tracker stands for (never a rebuilt copy)."""
        if value.source is None:
            raise InternalError(f"{value} has no source to load it from")
        value.source.reconstruct(self)

    def build_items(self, value: VariableTracker) -> None:
        """Builds a new list or dict holding a container tracker's current items."""
        items = value.items
        if isinstance(items, dict):
            for key, item in items.items():
                reconstruct_key(self, key)
                self.reconstruct(item)
            self.build(dict, len(items))
        else:
            for item in items:
                self.reconstruct(item)
            self.build(list, len(items))

    def call_compiled_graph(self, graph: CompiledGraph) -> None:
        """Leaves the tuple of graph outputs on the stack.

        A module's parameters are inputs reached by long chains (`module._modules['blocks']
        ._modules['3']._parameters['weight']`); a base that several inputs share is read once
        and kept in a temporary, which makes a cache hit on a deep model markedly cheaper.
        """
        self.append(*emit.create_load_global(graph.name, push_null=True))
        uses = collections.Counter(base for inp in graph.inputs for base in _bases(inp.source))
        self._shared = frozenset(base for base, count in uses.items()
                                 if count > 1 and not isinstance(base, (LocalSource, GlobalSource)))
        try:
            for inp in graph.inputs:
                self.load_source(inp.source)
        finally:
            self._shared, self._source_temps = frozenset(), {}
        self.append(*emit.create_call(len(graph.inputs)))


def _bases(source: Source) -> Iterator[Source]:
    base = getattr(source, "base", None)
    while base is not None:
        yield base
        base = getattr(base, "base", None)


def tensors_in(value: VariableTracker) -> list[VariableTracker]:
    """The values a result holds that the graph computes (tensors and symbolic sizes), in
    reconstruction order, each once."""
    found: dict[int, VariableTracker] = {}
    seen: set[int] = set()

    def visit(v: VariableTracker) -> None:
        if id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, (TensorVariable, SymNodeVariable)):
            found.setdefault(id(v), v)
        for child in v.children():
            visit(child)

    visit(value)
    return list(found.values())


def replace_body(code: types.CodeType, body: list[Instruction]) -> types.CodeType:
    """A code object with `code`'s prefix (cells, free variables, RESUME) and a new body;
    every name the body stores that `code` lacks (the graph's outputs, shared bases of its
    inputs, values kept across a branch) becomes a new local."""
    new_locals = list(dict.fromkeys(i.argval for i in body if i.opname in ("STORE_FAST", "LOAD_FAST_AND_CLEAR")))

    in_body = set(map(id, body))

    def transform(instructions: list[Instruction], meta: CodeMeta) -> None:
        prefix = instructions[:prefix_end(instructions)]
        anchor = prefix[-1] if prefix else None
        for inst in body:
            # An instruction copied from the user's code (the one a graph break runs eagerly)
            # keeps its line: a warning's location, a log record's and a traceback's read it.
            if anchor is not None and inst.positions == NO_POSITIONS:
                inst.positions = anchor.positions
            # Only the body's own handlers are kept; an entry copied from the user's code
            # points into a table the body does not have.
            if inst.exn_tab_entry is not None and id(inst.exn_tab_entry.target) not in in_body:
                inst.exn_tab_entry = None
        instructions[:] = prefix + body
        meta.co_varnames = meta.co_varnames + tuple(n for n in new_locals if n not in meta.co_varnames)

    return transform_code_object(code, transform)


def verify_generated(code: types.CodeType, replacement_for: types.CodeType | None = None) -> types.CodeType:
    """`code`, once the bytecode verifier accepts it (`config.verify_bytecode`): every code
    object framegraph generates passes here before it is installed. A refusal raises
    VerificationError; see `bytecode.verify.verify` for `replacement_for`."""
    if config.verify_bytecode:
        verify(code, replacement_for=replacement_for)
    return code
