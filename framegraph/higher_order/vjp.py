"""`torch.func.vjp(func, *primals, has_aux=False)`: func's output, and the pullback that maps
cotangents of the output to gradients of the primals.

func is traced once into a graph of its own (primals as placeholders, what it reads from
outside lifted). Its output is that graph called (`apply_transform(..., "call")`); calling the
pullback records a second node that runs torch.func.vjp over the same graph and applies it to
the cotangents (`"vjp"`). The pullback's node computes func again: what backward needs is not
kept between the two nodes, as it cannot be a graph value. So a func that draws random numbers
(dropout) is not traced (its second run would draw other numbers): vjp then runs eagerly at a
graph break. A pullback the frame hands on (returned, stored, or live at a graph break) is made
again there by eager vjp on the same function and primals.
"""

from __future__ import annotations

from typing import Any

import torch

from ..eval_frame import disable
from ..exc import Unsupported
from ..subgraph import SubGraph
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.containers import TupleVariable
from ..variables.tensor import TensorVariable
from . import speculate as spec
from .functorch import apply_transform
from .speculate import GB_TYPE

# The calls that draw random numbers, by name (torch functions, tensor methods, F.dropout...).
_RANDOM = frozenset({
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm", "bernoulli",
    "bernoulli_", "multinomial", "normal", "normal_", "uniform_", "exponential_", "poisson", "cauchy_",
    "geometric_", "log_normal_", "random_", "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "native_dropout", "rrelu", "rrelu_"})


def _signature(func, *primals, has_aux=False):
    """torch.func.vjp's."""


def call_vjp(tx, args, kwargs) -> VariableTracker:
    bound = spec.bind(_signature, args, kwargs, "torch.func.vjp")
    func, primals = bound.arguments["func"], list(bound.arguments.get("primals", ()))
    has_aux = bound.arguments.get("has_aux", ConstantVariable(False))
    if not has_aux.is_python_constant():
        raise Unsupported(GB_TYPE, f"torch.func.vjp's has_aux {has_aux} is not a constant")
    has_aux = bool(has_aux.as_python_constant())
    if not primals or not all(isinstance(p, TensorVariable) for p in primals):
        raise Unsupported(GB_TYPE, "torch.func.vjp of primals that are not tensors")
    graph = SubGraph(tx.output.graph, "function torch.func.vjp differentiates", GB_TYPE)
    inner = [spec.placeholder(graph, p.node.name, p.example) for p in primals]
    body = spec.trace(tx, graph, func, inner, {})
    result = body.result
    if has_aux:
        if not (type(result) is TupleVariable and len(result.items) == 2):
            raise Unsupported(GB_TYPE, "torch.func.vjp(has_aux=True) of a function that does not return a pair "
                                       "(eager raises)")
        out, aux = result.items
    else:
        out, aux = result, None
    outputs = spec.flatten(out, graph.name)
    if not all(isinstance(o, TensorVariable) for o in body.leaves):
        raise Unsupported(GB_TYPE, "the function torch.func.vjp differentiates returns something other than tensors")
    drawn = _random_call(graph, graph.static_attrs)
    if drawn is not None:
        raise Unsupported(GB_TYPE, f"the function torch.func.vjp differentiates draws random numbers ({drawn}): "
                                   "its pullback could not run it again")
    spec.close(body, [leaf.node for leaf in body.leaves], may_return_inputs=True)
    module = spec.graph_module(tx, body, "vjp_body")
    lifted = spec.lifted_values(body)
    forward = tx.output.record_call(apply_transform, [module, ConstantVariable("call"), ConstantVariable(()),
                                                      *primals, *lifted], {})
    leaves = list(forward.items)
    pullback = PullbackVariable(func, module, primals, lifted, len(outputs), has_aux)
    items = [spec.rebuild(out, leaves), pullback]
    if has_aux:
        items.append(spec.rebuild(aux, leaves))
    return TupleVariable(items)


def _random_call(graph: torch.fx.Graph, attrs: dict) -> str | None:
    """The name of a call in the graph, or in a graph it holds (a nested operator's body),
    that draws random numbers."""
    for node in graph.nodes:
        name = getattr(node.target, "__name__", str(node.target))
        if node.op in ("call_function", "call_method") and name in _RANDOM:
            return name
    for value in attrs.values():
        if isinstance(value, torch.fx.GraphModule):
            found = _random_call(value.graph, dict(value.named_children()))
            if found is not None:
                return found
    return None


class PullbackVariable(VariableTracker):
    """The function vjp returns: called with cotangents like the output, it records the node that
    computes the primals' gradients."""

    __slots__ = ("func", "module", "primals", "lifted", "outputs", "has_aux")

    def __init__(self, func, module, primals, lifted, outputs: int, has_aux: bool) -> None:
        super().__init__(None)
        self.func, self.module, self.primals, self.lifted, self.outputs = func, module, primals, lifted, outputs
        self.has_aux = has_aux

    def python_type(self) -> type:
        return type(lambda: None)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if kwargs or len(args) != 1:
            raise Unsupported(GB_TYPE, "vjp's pullback called with other than one cotangent structure (eager raises)")
        cotangents = spec.flatten(args[0], "vjp's pullback's cotangents")
        if len(cotangents) != self.outputs or not all(isinstance(c, TensorVariable) for c in cotangents):
            raise Unsupported(GB_TYPE, "vjp's pullback given cotangents unlike the output (eager raises)")
        options = ConstantVariable((("outputs", self.outputs), ("primals", len(self.primals))))
        grads = tx.output.record_call(apply_transform, [self.module, ConstantVariable("vjp"), options,
                                                        *self.primals, *cotangents, *self.lifted], {})
        return TupleVariable(list(grads.items))

    def reconstruct(self, codegen) -> None:
        # Handed on, or live at a graph break: eager vjp of the same function and primals.
        codegen.load_callable_const(remake_pullback)
        codegen.load_const(self.has_aux)
        codegen.reconstruct(self.func)
        for primal in self.primals:
            codegen.reconstruct(primal)
        codegen.call(2 + len(self.primals))

    def __repr__(self) -> str:
        return "PullbackVariable()"


def remake_pullback(has_aux: bool, func: Any, *primals: torch.Tensor) -> Any:
    with disable():
        _, pullback = torch.func.vjp(func, *primals, has_aux=has_aux)[:2]
    return disable(pullback)
