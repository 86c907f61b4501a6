"""Tracing a function argument into a graph of its own: the mechanism every higher-order
operator here shares.

`speculate(tx, fn, args, kwargs, name)` calls `fn` with its tensor (and symbolic size)
arguments as the first placeholders of a new SubGraph and records what it does there. A
tensor it reads from outside (a module's weight, a global, a closure's tensor) is lifted: it
becomes a further placeholder, and the caller passes the outer value (subgraph.py).

The body must be a function of its inputs, as the operators require:
- a change to state outside it (an object, a global, a cell) would happen once after the
  graph, or never; the side-effect ledger refuses it (`forbidden`), and so does a graph break.
  Only where the operator calls the function exactly once, as eager does (torch.func's
  transforms without chunks), is the change kept, replayed after the graph like the frame's
  own, and then only with values that exist outside the body (`runs_once`);
- it may not write to a tensor it was given (the change would not show outside);
- its result must be what the operator allows (`flatten`).
Any refusal raises Unsupported, so the operator's call becomes a graph break and runs eagerly,
as it would without framegraph. Guards taken while tracing the body join the frame's.
"""

from __future__ import annotations

import contextlib
import dataclasses

import torch
import torch.fx

from ..exc import Unsupported
from ..subgraph import SubGraph, outer_value
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.containers import ListVariable, TupleVariable
from ..variables.functions import graph_values
from ..variables.tensor import SymNodeVariable, TensorVariable

GB_TYPE = "Unsupported higher-order operator"


@dataclasses.dataclass
class Body:
    graph: SubGraph
    result: VariableTracker  # what the function returned, its tensors in `graph`
    leaves: list[VariableTracker]  # result flattened: tensors and constants, in order
    given: int  # how many placeholders stand for the arguments (the rest are lifted)


def speculate(tx, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
              name: str) -> Body:
    graph = SubGraph(tx.output.graph, name, GB_TYPE)
    inner_args = [_as_input(graph, a) for a in args]
    inner_kwargs = {k: _as_input(graph, v) for k, v in kwargs.items()}
    return trace(tx, graph, fn, inner_args, inner_kwargs)


def speculate_on(tx, fn: VariableTracker, examples: list[tuple[str, torch.Tensor]], name: str) -> Body:
    """`speculate` for arguments the operator makes itself when it runs (flex_attention's
    score and indices), not the caller's values: each a new placeholder named and shaped by
    its (name, fake example)."""
    graph = SubGraph(tx.output.graph, name, GB_TYPE)
    return trace(tx, graph, fn, [placeholder(graph, n, example) for n, example in examples], {})


def placeholder(graph: SubGraph, name: str, example: torch.Tensor) -> TensorVariable:
    """A new argument of the body, as the function sees it (for vmap and scan, one example or
    one slice of the caller's tensor, not the tensor itself)."""
    return TensorVariable(graph.add_placeholder(name, example), example)


def trace(tx, graph: SubGraph, fn: VariableTracker, inner_args: list[VariableTracker],
          inner_kwargs: dict[str, VariableTracker], runs_once: bool = False) -> Body:
    """Calls `fn` on arguments whose tensors are `graph`'s placeholders, recording into it
    under the side-effect ledger's ban (lifted where the operator calls `fn` exactly once,
    `runs_once`). The placeholders made so far are the body's arguments;
    those made while tracing are lifted. A write to any of them is refused (with
    `graph.writes_inputs`, vmap's, only to the lifted ones: a write to an argument there is a
    write to the caller's tensor, which the operator's node makes)."""
    output = tx.output
    given = len(graph.placeholders)
    effects = contextlib.nullcontext() if runs_once else output.side_effects.forbidden(graph.name)
    with output.tracing_into(graph), effects:
        result = fn.call_function(tx, inner_args, inner_kwargs)
    if runs_once:
        _refuse_inner_values_outside(output, graph)
    for placeholder in graph.placeholders[given if graph.writes_inputs else 0:]:
        example = placeholder.meta.get("example_value")
        if isinstance(example, torch.Tensor) and example._version != placeholder.meta["version"]:
            raise Unsupported(GB_TYPE, f"the {graph.name} writes in place to a tensor it was given "
                                       f"({placeholder.name})")
    return Body(graph, result, flatten(result, graph.name), given)


def _refuse_inner_values_outside(output, graph: SubGraph) -> None:
    """No change the ledger replays may hold a tensor or size the body computes: eagerly that is
    a batched or differentiated tensor of the transform's own, which has no graph form."""
    outside, where = set(), output.graph  # the graph being recorded and those it is nested in
    while where is not None:
        outside.add(id(where))
        where = getattr(where, "parent", None)
    replayed = [value for entry in output.side_effects for value in vars(entry).values()
                if isinstance(value, VariableTracker)]
    if any(id(value.node.graph) not in outside for value in graph_values(replayed)):
        raise Unsupported(GB_TYPE, f"the {graph.name} keeps a value it computes in state outside it")


def bind(fn, args: list[VariableTracker], kwargs: dict[str, VariableTracker], what: str):
    """`fn`'s signature bound to the call's arguments (an `inspect.BoundArguments`); a call
    eager would refuse with a TypeError runs eagerly, to raise it."""
    import inspect

    try:
        return inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as error:
        raise Unsupported(GB_TYPE, f"{what} called with arguments it does not take ({error})") from None


def _as_input(graph: SubGraph, value: VariableTracker) -> VariableTracker:
    """A tensor or size argument as a placeholder of the body; containers item by item; other
    values as they are (the body is traced with them, and guarded on them)."""
    if isinstance(value, (TensorVariable, SymNodeVariable)):
        example = value.example if isinstance(value, TensorVariable) else value.value
        return type(value)(graph.take(value.node, example), example)
    if type(value) in (TupleVariable, ListVariable):
        return type(value)([_as_input(graph, item) for item in value.items])
    return value


def flatten(value: VariableTracker, name: str) -> list[VariableTracker]:
    """The leaves of a body's result: a tensor, or tuples and lists of them (and constants)."""
    if isinstance(value, (TensorVariable, SymNodeVariable, ConstantVariable)):
        return [value]
    if type(value) in (TupleVariable, ListVariable):
        return [leaf for item in value.items for leaf in flatten(item, name)]
    raise Unsupported(GB_TYPE, f"the {name} returns {value}, not tensors (in tuples or lists)")


def rebuild(value: VariableTracker, leaves: list[VariableTracker]) -> VariableTracker:
    """`value`'s structure with `leaves` (consumed from the front) in place of its own."""
    if type(value) in (TupleVariable, ListVariable):
        return type(value)([rebuild(item, leaves) for item in value.items])
    return leaves.pop(0)


def close(body: Body, outputs: list[torch.fx.Node], single: bool = False, may_return_inputs: bool = False) -> None:
    """Ends the body's graph returning `outputs` (as a tuple, or the one node if `single`):
    each must be computed inside it (an input handed back as it is would alias it, which the
    operators do not allow), unless `may_return_inputs` (an operator that makes no alias of
    them: flex_attention applies the body to one element at a time; torch.func's transforms are
    called in Python, where an output may be an input)."""
    graph = body.graph
    for node in outputs:
        if node.graph is not graph or (node.op == "placeholder" and not may_return_inputs):
            raise Unsupported(GB_TYPE, f"the {graph.name} returns a tensor it was given or read from "
                                       "outside, not one it computed (return a copy: `.clone()`)")
    graph.output(outputs[0] if single else tuple(outputs))
    graph.closed = True


def share_inputs(bodies: list[Body]) -> list[torch.fx.Node]:
    """Makes the (closed) bodies of one operator (cond's branches, while_loop's condition and
    body) take the same inputs: their arguments, then every outer node any of them lifted, in
    one order (a body lifts the ones it did not read). Returns those outer nodes."""
    lifted: list[torch.fx.Node] = []
    for body in bodies:
        lifted += [node for node in lifted_nodes(body) if node not in lifted]
    for body in bodies:
        graph = body.graph
        wanted = graph.placeholders[:body.given] + [graph.local(node) for node in lifted]
        anchor = next(node for node in graph.nodes if node.op != "placeholder")
        for placeholder in wanted:
            anchor.prepend(placeholder)
        graph.placeholders[:] = wanted
    return lifted


def lifted_nodes(body: Body) -> list[torch.fx.Node]:
    """The outer nodes the body lifted (beyond its arguments), in the order it lifted them."""
    return [body.graph.outer[p] for p in body.graph.placeholders[body.given:]]


def outer_values(body: Body, args: list[VariableTracker]) -> list[VariableTracker]:
    """What the caller passes for the body's placeholders: the tensor and size arguments (from
    `args`, containers flattened), then the lifted values."""
    values: list[VariableTracker] = []

    def add(value: VariableTracker) -> None:
        if isinstance(value, (TensorVariable, SymNodeVariable)):
            values.append(value)
        elif type(value) in (TupleVariable, ListVariable):
            for item in value.items:
                add(item)
    for arg in args:
        add(arg)
    return values + lifted_values(body)


def lifted_values(body: Body) -> list[VariableTracker]:
    """The outer values of what the body lifted, as the caller passes them."""
    return [value_of(node) for node in lifted_nodes(body)]


def value_of(node: torch.fx.Node) -> VariableTracker:
    return outer_value(node, GB_TYPE, "a body")


def graph_module(tx, body: Body, prefix: str) -> VariableTracker:
    """The body as a GraphModule attribute of the frame's graph (a get_attr node)."""
    try:
        body.graph.lint()
        module = body.graph.module(prefix)
    except Exception as error:
        raise Unsupported(GB_TYPE, f"the {body.graph.name} does not make a graph module: "
                                   f"{type(error).__name__}: {error}") from None
    return tx.output.add_static_attr(prefix, module)
