"""`torch.compiler.nested_compile_region`: a function marked as a region that repeats (a
transformer layer) is traced into a graph of its own and called through
`torch.ops.higher_order.invoke_subgraph`, as torch.compile emits it. Calls whose traced
bodies are the same graph on the same kinds of inputs share one subgraph and one identifier,
so a backend compiles the region once and stamps it out at every call.

The marked function is met as the closure `nested_compile_region` returns (found by its
code). A call that autograd records is inlined instead: invoke_subgraph's backward runs only
under a compiler's fake tensors, so the eager backend could not take it. What the region cannot be (a break, a side effect, a write to an input) makes its call
run eagerly at a graph break.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._higher_order_ops.invoke_subgraph import mark_compile_region

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.builder import wrap
from ..variables.constant import ConstantVariable
from ..variables.tensor import SymNodeVariable, TensorVariable
from ..source import AttrSource, ItemSource
from . import speculate as spec
from .speculate import GB_TYPE

REGION_CODE = mark_compile_region(lambda: None).__code__


def call_region(fn, source, tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if source is None:
        raise Unsupported(GB_TYPE, "a nested compile region reached where it cannot be guarded")
    names = fn.__code__.co_freevars
    func_source = AttrSource(ItemSource(AttrSource(source, "__closure__"), names.index("func")), "cell_contents")
    func = fn.__closure__[names.index("func")].cell_contents
    if hasattr(func, "__marked_compile_region_fn__"):
        raise Unsupported(GB_TYPE, "a nested compile region marked twice")
    function = wrap(tx, func, func_source)
    body = spec.speculate(tx, function, list(args), dict(kwargs), "nested compile region")
    inputs = spec.outer_values(body, [*args, *kwargs.values()])
    if torch.is_grad_enabled() and any(isinstance(v, TensorVariable) and v.example.requires_grad for v in inputs):
        # invoke_subgraph's backward needs a compiler's fake tensors (run by the eager backend,
        # as torch.compile's graph is, it fails): a region that autograd records is inlined.
        return function.call_function(tx, list(args), dict(kwargs))
    if not body.leaves or not all(isinstance(leaf, TensorVariable) for leaf in body.leaves):
        raise Unsupported(GB_TYPE, "the nested compile region returns something other than tensors")
    spec.close(body, [leaf.node for leaf in body.leaves])
    module, identifier = _shared(tx, body)
    result = tx.output.record_call(torch.ops.higher_order.invoke_subgraph,
                                   [module, ConstantVariable(identifier), *inputs], {})
    return spec.rebuild(body.result, list(result.items))


def _shared(tx, body: spec.Body) -> tuple[VariableTracker, str]:
    """The region's module (read in the graph being recorded) and identifier: those of an
    earlier call in this frame whose body is the same code on inputs of the same kinds, else
    new ones."""
    regions = tx.output.shared_bodies
    try:
        body.graph.lint()
    except Exception as error:
        raise Unsupported(GB_TYPE, f"the nested compile region does not make a graph: {error}") from None
    key = ("nested_compile_region", _structure(body.graph),
           tuple(_kind(p.meta.get("example_value")) for p in body.graph.placeholders))
    if key not in regions:
        module = spec.graph_module(tx, body, "subgraph")
        regions[key] = (module.value, f"subgraph_{sum(1 for k in regions if k[0] == key[0])}")
        return module, regions[key][1]
    module, identifier = regions[key]
    return tx.output.add_static_attr("subgraph", module), identifier


def _structure(graph: torch.fx.Graph) -> tuple:
    """The graph's nodes with each argument node as its position: equal for two traces of the
    same code whatever their inputs were named."""
    position = {node: i for i, node in enumerate(graph.nodes)}
    as_key = lambda arg: torch.fx.node.map_arg(arg, lambda n: ("node", position[n]))
    return tuple((node.op, node.target if node.op != "placeholder" else None, repr(as_key(node.args)),
                  repr(as_key(node.kwargs))) for node in graph.nodes)


def _kind(example: Any) -> Any:
    if isinstance(example, torch.Tensor):
        return ("tensor", tuple(example.shape), tuple(example.stride()), example.dtype, example.device,
                example.requires_grad)
    if isinstance(example, (torch.SymInt, SymNodeVariable)):
        return ("size", str(example))
    return ("value", type(example))
