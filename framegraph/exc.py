"""The exceptions framegraph raises, and the catalog of reasons it gives for each graph break.

Three tiers, each with one meaning for the code that catches it:
- `Unsupported`: the translator met something it cannot model. At top level this becomes a
  graph break (or, where no break is possible, the frame runs eagerly). It always carries a
  `gb_type` from `CATALOG`, the context (what exactly was met), an explanation and hints.
- `RestartAnalysis`: translation must start again from the top of the frame, knowing more.
- `ObservedException`: the traced program itself raised; the translator finds its handler.
- `InternalError`: our own bug. The frame falls back to eager with a warning, or, in strict
  mode, the error reaches the caller. Its `GeneratedCodeError`s (bytecode the verifier
  refused, graph code torch.fx cannot compile) reach the caller under `fullgraph=True` too.

User-facing failures that are not about translation (`BackendCompilerFailed`, bad arguments to
the public API) derive from `FramegraphError` too, so `except framegraph.exc.FramegraphError`
catches everything we raise and nothing the user's own code raised.
"""

from __future__ import annotations

import dataclasses


class FramegraphError(Exception):
    """Base class of every exception framegraph raises itself."""


def drop_tracebacks(error: BaseException) -> None:
    """Drops the traceback of `error` and of every exception chained to it: for an exception
    kept after its handler (a break's reason). A traceback holds the frames it passed through;
    a finished frame keeps its caller's, and so every frame up the stack (the user's among
    them, with their locals) would live as long as the record, past the collector's reach
    while the record sits in a cycle through one of those frames."""
    pending, seen = [error], set()
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        error.__traceback__ = None
        pending += [error.__cause__, error.__context__]


class InternalError(FramegraphError):
    """An invariant of framegraph's own code does not hold: a bug to report, never user error."""


class GeneratedCodeError(InternalError):
    """Code framegraph generated is invalid: bytecode the verifier refused, or a graph whose
    Python torch.fx cannot compile. Unlike other internal errors it also raises under
    `fullgraph=True`, since the function could not be compiled at all."""


class GraphCodeError(GeneratedCodeError):
    """torch.fx could not turn a captured graph into Python (its generated `forward` does
    not compile); the message quotes the offending line of the graph's code."""


class RestartAnalysis(FramegraphError):
    """Translate the frame again from the start, stopping cleanly at `break_at` (the
    instruction that could not be translated, where the frame will be split)."""

    def __init__(self, break_at) -> None:
        super().__init__(f"restart to break the graph at instruction {break_at.index}")
        self.break_at = break_at


class SpecializeFloats(FramegraphError):
    """The backend could not keep dynamic floats symbolic (AOTAutograd's pass that turns float
    arithmetic into tensor ops met an op it cannot rewrite, and specialised them): translate
    again with `sources` (float inputs) as constants."""

    def __init__(self, sources) -> None:
        super().__init__(f"restart with the floats {', '.join(s.name for s in sources)} specialised")
        self.sources = sources


class ObservedException(FramegraphError):
    """The traced program raised `exception` (a tracker); the translator looks for the
    handler that catches it, in this frame or in the frames it was inlined from."""

    def __init__(self, exception, reraised: bool = False) -> None:
        super().__init__(f"traced code raised {exception}")
        self.exception = exception
        # Whether its __context__ is settled: it is, for a re-raise, and once the frame it was
        # raised in has linked it to the exception being handled there.
        self.contexted = reraised


class BackendCompilerFailed(FramegraphError):
    """The backend raised while compiling a captured graph."""

    def __init__(self, backend_name: str, inner: BaseException) -> None:
        super().__init__(f"backend {backend_name!r} raised {type(inner).__name__}: {inner}")
        self.backend_name = backend_name
        self.inner = inner


class BackendOutputError(FramegraphError):
    """A backend's compiled function returned outputs that do not match its graph's (checked on
    its first call)."""


class RecompileLimitExceeded(FramegraphError):
    """With fullgraph=True, a function reached a recompile limit: it would otherwise run eagerly."""


class MarkedDynamicError(FramegraphError):
    """A dimension passed to mark_dynamic was specialised by the program."""


# Hints shared by many reasons, so the wording stays the same everywhere.
HINT_SUPPORTABLE = "It may be possible to support this in framegraph: please file an issue with a small example."
HINT_USER_CODE = "Move the call out of the compiled region, or wrap it in a function decorated with @framegraph.disable."
HINT_DATA_DEPENDENT = ("The control flow depends on the value of a tensor. Use torch.where or torch.cond, "
                       "or compute the condition outside the compiled function.")
HINT_ALLOW_IN_GRAPH = "If the function is pure and works on tensors, @framegraph.allow_in_graph puts it in the graph as one node."
HINT_FIND_BREAKS = "framegraph.explain(fn)(*args) lists every break; FRAMEGRAPH_LOGS=graph_breaks prints them as they happen."


@dataclasses.dataclass(frozen=True)
class BreakReason:
    """The default explanation and hints for one gb_type."""

    explanation: str
    hints: tuple[str, ...]


CATALOG: dict[str, BreakReason] = {
    "Missing bytecode handler": BreakReason(
        "framegraph has no handler for this bytecode instruction yet.",
        (HINT_SUPPORTABLE,)),
    "Attempted to call function marked as skipped": BreakReason(
        "The function is not traced into: it belongs to a library framegraph leaves alone, or it "
        "has side effects outside Python (I/O, printing), so it runs eagerly.",
        (HINT_USER_CODE, HINT_ALLOW_IN_GRAPH)),
    "Data-dependent branching": BreakReason(
        "Python needs a concrete value of a tensor to decide which way to go, and tensors have "
        "no values while a graph is being captured.",
        (HINT_DATA_DEPENDENT,)),
    "Tensor to Python scalar": BreakReason(
        "Converting a tensor to a Python number or list (.item(), .tolist(), int(t)) needs its value.",
        ("Keep the value as a tensor, or do the conversion outside the compiled function.",
         "framegraph.config.capture_scalar_outputs = True keeps .item() in the graph as a symbol.")),
    "Dynamic shape operator": BreakReason(
        "The shape of this operation's output depends on the values in its input (nonzero, a "
        "boolean mask, unique), which a graph capture does not see.",
        ("Set framegraph.config.capture_dynamic_output_shape_ops = True to keep it in the graph with "
         "a symbolic size (torch.compile's torch._dynamo.config.capture_dynamic_output_shape_ops).",
         "Or use an operation with a fixed output shape (torch.where with three arguments).")),
    "Unsupported builtin call": BreakReason(
        "framegraph does not model this builtin with these argument types.",
        (HINT_SUPPORTABLE,)),
    "Unsupported method call": BreakReason(
        "framegraph does not model this method on this type of object.",
        (HINT_SUPPORTABLE,)),
    "Unsupported attribute access": BreakReason(
        "framegraph cannot read this attribute without running code it does not model.",
        (HINT_SUPPORTABLE,)),
    "Unsupported mutation": BreakReason(
        "The program changes an object in a way the side-effect ledger cannot record and replay.",
        (HINT_SUPPORTABLE,)),
    "Unsupported value type": BreakReason(
        "framegraph does not model values of this type yet, so it cannot trace code that uses one.",
        (HINT_SUPPORTABLE,)),
    "Unsupported distributed collective": BreakReason(
        "A torch.distributed collective is a graph node only in the forms torch.compile traces (the "
        "functional collectives, and all_reduce without async_op) with a group and op known while "
        "tracing; this call runs eagerly at a graph break.",
        ("Pass the group (a ProcessGroup, a list of ranks or a group name) and the reduce op as values "
         "fixed for the program, or use torch.distributed._functional_collectives.",)),
    "Unsupported DTensor operation": BreakReason(
        "A DTensor call is a graph node when its mesh and placements are known while tracing and its "
        "tensors are graph values (from_local of a plain tensor, redistribute, to_local, full_tensor); "
        "this one runs eagerly at a graph break.",
        ("Pass the device mesh and placements as values fixed for the program, and leave run_check off "
         "in DTensor.from_local.",)),
    "Module hooks run eagerly": BreakReason(
        "The module carries forward hooks its library marks to run outside any compiler (FSDP2's, "
        "which gather and free the module's parameters and run collectives around its forward), so "
        "the module is called eagerly and its own forward compiles as a frame of its own. A frame "
        "calling such modules in a loop runs eagerly as a whole (not counted as a graph break), as "
        "under torch.compile; elsewhere it is split at the call.",
        ("Compile the managed modules' forwards (per block) rather than the code that loops over them.",)),
    "Unsupported higher-order operator": BreakReason(
        "A function passed to an operator that takes functions (torch.cond, checkpoint...) could not "
        "be traced into a graph of its own as the operator requires (it changes state outside "
        "itself, breaks, or returns what the operator does not allow), so the operator runs eagerly.",
        ("Keep the function passed to the operator free of side effects and graph breaks, and have it "
         "return tensors it computed.",)),
    "Random generator argument": BreakReason(
        "An op drawing from a torch.Generator the program passes in runs eagerly, between graphs, "
        "so that very generator advances as it does without framegraph (torch.compile breaks there too).",
        ("To keep the random op in the graph, draw from the global generator (seeded with "
         "torch.manual_seed) instead of passing one.",)),
    "Unsupported tensor operation": BreakReason(
        "Running the operation on fake tensors failed, so its result cannot be described.",
        ("Check that the operation works eagerly on the same inputs.", HINT_SUPPORTABLE)),
    "Unsupported context manager": BreakReason(
        "framegraph cannot enter this context manager while capturing a graph.",
        (HINT_SUPPORTABLE,)),
    "Unsupported exception handling": BreakReason(
        "framegraph cannot follow this raise or try block.",
        (HINT_SUPPORTABLE,)),
    "Inline depth exceeded": BreakReason(
        "Calls are nested deeper than config.inline_depth_limit while inlining.",
        ("Raise framegraph.config.inline_depth_limit, or break the recursion with @framegraph.disable.",)),
    "Import that runs code": BreakReason(
        "Importing a module that is not loaded yet, or a name a package would have to load or "
        "compute, runs code framegraph does not trace; the import runs eagerly.",
        ("Import the module at the top of the file, or before the compiled function is first called.",)),
    "Call to graph_break()": BreakReason(
        "The program asks for a graph break here (`torch._dynamo.graph_break()`, which "
        "torch.optim's step wrapper calls); framegraph breaks there, as torch.compile does.",
        ("Remove the call if the code around it can be captured in one graph.",)),
    "Frame introspection": BreakReason(
        "The code reads its own running frame (sys._getframe, inspect.currentframe). After a graph "
        "break the rest of the function runs in a frame of its own, where that frame object's "
        "f_locals (a write-through view on 3.13) are no longer its locals, so the frame runs eagerly.",
        (HINT_USER_CODE,)),
    "Unsupported frame": BreakReason(
        "This kind of frame (generator, coroutine, or one with unusual bytecode) is run eagerly.",
        (HINT_SUPPORTABLE,)),
    "Unsupported autograd.Function": BreakReason(
        "framegraph traces a torch.autograd.Function's forward and backward into the graph as one "
        "autograd function, so its gradients are the Function's own; this part of it cannot be "
        "traced that way, so the apply runs eagerly.",
        ("Keep forward and backward to tensor operations on their arguments and ctx "
         "(save_for_backward, attributes, needs_input_grad, mark_non_differentiable).", HINT_SUPPORTABLE)),
    "Forced graph break": BreakReason(
        "config.debug_force_break asked for a graph break before this instruction; it would "
        "otherwise have been traced. This exists to test the graph-break machinery.",
        ("Set framegraph.config.debug_force_break = None to trace it.",)),
}


class Unsupported(FramegraphError):
    """The translator cannot model something; carries the reason a person needs to fix it."""

    def __init__(self, gb_type: str, context: str, explanation: str | None = None,
                 hints: tuple[str, ...] | None = None) -> None:
        if gb_type not in CATALOG:
            raise InternalError(f"graph-break type {gb_type!r} is not in framegraph.exc.CATALOG")
        reason = CATALOG[gb_type]
        self.gb_type = gb_type
        self.context = context
        self.explanation = explanation or reason.explanation
        self.hints = tuple(hints) if hints is not None else reason.hints
        # Filled in by the translator as the error passes through each frame it was inlining.
        self.user_stack: list[tuple[str, int, str]] = []
        # A BreakPoint earlier in the frame that avoids the problem, when one is known (a
        # generator that must not outlive the trace: break where it was driven instead).
        self.break_instead = None
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.gb_type}: {self.context}", f"  Explanation: {self.explanation}"]
        lines += [f"  Hint: {hint}" for hint in self.hints]
        for filename, lineno, name in self.user_stack:
            lines.append(f"  User code: {filename}:{lineno} in {name}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()

