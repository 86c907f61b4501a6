"""What the report shows, gathered while framegraph compiles: each compile of a frame (its
CompileId, code, phases, guards with their user lines, the graphs it made, the recompile reason),
each graph break, and when each happened. It listens on the observer lists the core offers
(convert_frame.compile_observers, output_graph.graph_observers, breaks.break_observers) and
reads the replacement code from the code object's cache entries when the page is written."""

from __future__ import annotations

import dataclasses
import dis
import io
import linecache
import time
import types
from typing import Any

import torch

from .. import convert_frame, logs, output_graph
from .. import breaks as graph_breaks
from ..eval_frame import get_cache_entries
from ..bytecode.decompile import DecompileError, decompile
from ..resume_execution import CACHE, label


@dataclasses.dataclass
class NodeRow:
    name: str
    op: str
    target: str
    value: str  # the example value's type and shape
    user_line: str  # "file:line in fn" of the code that made the node, or ""


@dataclasses.dataclass
class GraphRecord:
    code: str  # the GraphModule's Python
    nodes: list[NodeRow]
    ops: int


@dataclasses.dataclass
class BreakRecord:
    compile_id: str
    gb_type: str
    reason: str
    explanation: str
    hints: tuple[str, ...]
    user_stack: list[tuple[str, int, str]]
    whole_frame: bool
    code_name: str
    at: float  # seconds since the recording began


@dataclasses.dataclass
class FrameRecord:
    compile_id: str
    name: str
    filename: str
    firstlineno: int
    started: float  # seconds since the recording began
    seconds: float
    phases: dict[str, float]
    guards: list[tuple[str, str]]  # (guard, user line)
    graphs: list[GraphRecord]
    breaks: list[BreakRecord]
    recompile_reason: str | None
    code: types.CodeType
    check_fn: Any
    original: str = ""  # the bytecode listings, filled when the page is written
    modified: str = ""
    # Python renderings (framegraph.bytecode.decompile), filled with the listings: the
    # replacement code, then each resume function it calls, as (title, source or why not)
    python: list[tuple[str, str]] = dataclasses.field(default_factory=list)


def _user_line(node: torch.fx.Node) -> str:
    """The innermost user frame of a node's stack trace, as "file:line in fn"."""
    trace = node.meta.get("stack_trace") or ""
    for line in reversed(trace.splitlines()):
        line = line.strip()
        if line.startswith('File "'):
            filename, _, rest = line[len('File "'):].partition('", line ')
            lineno, _, name = rest.partition(", in ")
            return f"{filename}:{lineno} in {name}"
    return ""


def _value(node: torch.fx.Node) -> str:
    value = node.meta.get("example_value", node.meta.get("val"))
    if isinstance(value, torch.Tensor):
        return f"{type(value).__name__ if type(value).__name__ != 'FakeTensor' else 'Tensor'}" \
               f"{list(value.shape)} {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {len(value)}"
    return "" if value is None else type(value).__name__


def graph_record(gm: torch.fx.GraphModule) -> GraphRecord:
    rows = []
    for node in gm.graph.nodes:
        target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
        rows.append(NodeRow(node.name, node.op, str(target), _value(node), _user_line(node)))
    ops = sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
    return GraphRecord(gm.code.strip(), rows, ops)


def python_views(code: types.CodeType) -> list[tuple[str, str]]:
    """The replacement code and the resume functions it calls, as Python."""
    views = [("replacement code", rendering(code))]
    for name in code.co_names:
        resume = CACHE.by_global_name(name) if name.startswith("__framegraph_resume_at_") else None
        if resume is not None:
            views.append((f"{name}: resume function (resume_in_{resume.co_name}, from line {resume.co_firstlineno})",
                          rendering(resume)))
    return views


def rendering(code: types.CodeType) -> str:
    try:
        return decompile(code).source
    except DecompileError as error:
        return f"(not rendered as Python: {error}; the bytecode listing shows it)"


def listing(code: types.CodeType | None) -> str:
    if not isinstance(code, types.CodeType):
        return ""
    out = io.StringIO()
    dis.dis(code, file=out, depth=0)
    return out.getvalue()


def source_lines(filename: str, first: int) -> list[tuple[int, str]]:
    """The function's source from its `def` line to the end of its block (by indentation)."""
    lines = linecache.getlines(filename)
    if not 0 < first <= len(lines):
        return []
    head = lines[first - 1]
    indent = len(head) - len(head.lstrip())
    found = [(first, head.rstrip("\n"))]
    for number in range(first + 1, len(lines) + 1):
        text = lines[number - 1]
        stripped = text.strip()
        if stripped and len(text) - len(text.lstrip()) <= indent and not stripped.startswith((")", "]", "}")):
            break
        found.append((number, text.rstrip("\n")))
    while found and not found[-1][1].strip():
        found.pop()
    return found


class Collector:
    """Listens while installed; `frames` and `breaks` are what the page shows."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.began_wall = time.time()
        self.frames: list[FrameRecord] = []
        self.breaks: list[BreakRecord] = []
        self._graphs: list[GraphRecord] = []  # made by the compile under way
        self._breaks: list[BreakRecord] = []
        self._observers = ((output_graph.graph_observers, self._on_graph),
                           (graph_breaks.break_observers, self._on_break),
                           (convert_frame.compile_observers, self._on_compile))

    def install(self) -> None:
        for registry, observer in self._observers:
            registry.append(observer)

    def uninstall(self) -> None:
        for registry, observer in self._observers:
            if observer in registry:
                registry.remove(observer)

    def _now(self) -> float:
        return time.perf_counter() - self.began

    def _on_graph(self, gm) -> None:
        self._graphs.append(graph_record(gm))

    def _on_break(self, reason, code, whole_frame) -> None:
        compile_id = logs.current_compile_id()
        record = BreakRecord(str(compile_id) if compile_id else "", reason.gb_type, reason.context,
                             reason.explanation, tuple(reason.hints), list(reason.user_stack), whole_frame,
                             label(code), self._now())
        self.breaks.append(record)
        if whole_frame:
            # The frame runs eagerly: no compile follows to own what it traced.
            self._graphs, self._breaks = [], []
        else:
            self._breaks.append(record)

    def _on_compile(self, code, check, timings) -> None:
        seconds = sum(timings.values())
        compile_id = logs.current_compile_id()
        record = convert_frame.record_for(code)
        reason = record.last_reason if compile_id is not None and compile_id.compile_count else None
        guards = [(text, guard.user_line) for text, guard in zip(check.texts, check.guards)]
        self.frames.append(FrameRecord(str(compile_id) if compile_id else "", label(code), code.co_filename,
                                       code.co_firstlineno, self._now() - seconds, seconds, dict(timings), guards,
                                       self._graphs, self._breaks, reason, code, check.fn))
        self._graphs, self._breaks = [], []

    def finish(self) -> None:
        """Fills what is known only after the compiles: the replacement code of each entry."""
        for frame in self.frames:
            frame.original = frame.original or listing(frame.code)
            if not frame.modified:
                new = next((entry.code for entry in get_cache_entries(frame.code) if entry.check_fn is frame.check_fn),
                           None)
                frame.modified = listing(new) if new is not None else ""
                frame.python = python_views(new) if new is not None else []
