"""`framegraph.explain(fn)(*args)`: run once under framegraph and report what it saw.

It compiles and runs `fn` with the eager backend, records every graph, graph break (with its
gb_type, reason and user stack), guard set and compile time, and then removes the cache
entries it made, so the program is left as it was. The code objects it compiled had their
earlier entries dropped too (they were recompiled to be observed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import textwrap
from typing import Any, Callable

import torch

from . import config, convert_frame, output_graph
from . import breaks as graph_breaks
from .api import compile as compile_fn
from .eval_frame import reset_code


@dataclasses.dataclass
class BreakReason:
    gb_type: str  # the family, one of framegraph.exc.CATALOG
    reason: str
    user_stack: list[tuple[str, int, str]]
    whole_frame: bool  # the frame could not be split and ran eagerly as a whole
    explanation: str = ""
    hints: tuple[str, ...] = ()

    def __str__(self) -> str:
        tail = " (the whole frame ran eagerly)" if self.whole_frame else ""
        lines = [f"{self.gb_type}: {self.reason}{tail}"]
        lines += [f"  Explanation: {self.explanation}"] if self.explanation else []
        lines += [f"  Hint: {hint}" for hint in self.hints]
        lines += [f"  {f}:{line} in {name}" for f, line, name in self.user_stack]
        return "\n".join(lines)


@dataclasses.dataclass
class ExplainOutput:
    graphs: list[torch.fx.GraphModule]
    break_reasons: list[BreakReason]
    ops_per_graph: list[list[str]]
    out_guards: list[list[str]]
    compile_times: list[dict[str, float]]
    # why a backend wrapper compiled a graph in pieces (the DDP split), one per graph split
    split_reasons: list[str] = dataclasses.field(default_factory=list)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {sum(len(ops) for ops in self.ops_per_graph)}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  Break Reason {i + 1}:\n" + textwrap.indent(str(r), "    ")
                      for i, r in enumerate(self.break_reasons)]
        lines += [f"Split Reason {i + 1}: {reason}" for i, reason in enumerate(self.split_reasons)]
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"Ops per Graph {i + 1}: {', '.join(ops)}")
        for i, guards in enumerate(self.out_guards):
            lines.append(f"Guards {i + 1}:")
            lines += [f"  - {g}" for g in guards]
        total = sum(t.get("total", 0.0) for t in self.compile_times)
        lines.append(f"Compile Time: {total * 1000:.1f} ms over {len(self.compile_times)} frame(s)")
        return "\n".join(lines)


class Recording:
    """What framegraph compiles while it is on (`recording()`): every graph, break, guard set
    and compile time, and the code objects compiled."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.breaks: list[BreakReason] = []
        self.guards: list[list[str]] = []
        self.times: list[dict[str, float]] = []
        self.codes: list = []

    def on_graph(self, gm) -> None:
        self.graphs.append(gm)

    def on_break(self, reason, code, whole_frame) -> None:
        self.breaks.append(BreakReason(reason.gb_type, reason.context, list(reason.user_stack), whole_frame,
                                       reason.explanation, reason.hints))

    def on_compile(self, code, check, timings) -> None:
        self.codes.append(code)
        self.guards.append(list(check.texts))
        self.times.append({**timings, "total": sum(timings.values())})

    def output(self) -> ExplainOutput:
        splits = [gm.meta["split_reason"] for gm in self.graphs if "split_reason" in gm.meta]
        return ExplainOutput(self.graphs, self.breaks, [_ops(gm) for gm in self.graphs], self.guards, self.times,
                             splits)


@contextlib.contextmanager
def recording():
    """Records what framegraph compiles inside the block (for explain, and for the command
    line's `python -m framegraph explain`)."""
    record = Recording()
    observers = ((output_graph.graph_observers, record.on_graph), (graph_breaks.break_observers, record.on_break),
                 (convert_frame.compile_observers, record.on_compile))
    for registry, observer in observers:
        registry.append(observer)
    try:
        with config.patch(cache_dir=None):  # traced here, not loaded: only a trace meets the breaks
            yield record
    finally:
        for registry, observer in observers:
            registry.remove(observer)


def explain(fn: Callable) -> Callable[..., ExplainOutput]:
    """Returns a function that runs `fn(*args, **kwargs)` once and explains it."""
    if not callable(fn):
        raise TypeError(f"framegraph.explain expects a function or an nn.Module, got {type(fn).__name__}")

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        target = getattr(fn, "forward", fn) if isinstance(fn, torch.nn.Module) else fn
        code = getattr(target, "__code__", None)
        if code is not None:
            reset_code(code)  # so the run compiles it (and we see it) even if it was cached
        with recording() as record:
            try:
                compile_fn(fn, backend="eager")(*args, **kwargs)
            finally:
                for compiled in record.codes:
                    reset_code(compiled)
                    convert_frame.forget(compiled)
        return record.output()

    return run


def _ops(gm: torch.fx.GraphModule) -> list[str]:
    """The calls of a graph by name; a higher-order operator's with the calls of the subgraphs
    it takes nested under it: `cond{cond_true_0: sin; cond_false_0: cos}`."""
    return [_op_name(n, gm) for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]


def _op_name(node, gm: torch.fx.GraphModule) -> str:
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    if name == "apply_transform" and len(node.args) > 1 and isinstance(node.args[1], str):
        name = node.args[1]  # torch.func's transform, by its name
    bodies = [(arg.target, getattr(gm, arg.target)) for arg in node.args
              if isinstance(arg, torch.fx.Node) and arg.op == "get_attr"
              and isinstance(getattr(gm, arg.target, None), torch.fx.GraphModule)]
    if not bodies:
        return name
    return name + "{" + "; ".join(f"{attr}: {', '.join(_ops(body))}" for attr, body in bodies) + "}"
