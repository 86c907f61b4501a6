"""Graphs traced inside the frame's graph: the forward and backward of an autograd.Function,
and the bodies of higher-order operators (framegraph.higher_order.speculate).

While a body is traced into a `SubGraph`, the OutputGraph records every node there instead
of in the frame's graph (`OutputGraph.tracing_into`). The translator keeps using the
trackers it already holds, whose nodes live in the enclosing graph; a node of an enclosing
graph that an operation here reads is lifted: it becomes a placeholder of this graph, once,
and `lifted` remembers which outer node each placeholder stands for (the caller passes those
values in, in placeholder order). A backward traced inside a forward lifts a node of the
frame's graph through the forward (which takes it as an input and hands it on).

Once closed, a subgraph's nodes belong to no graph the frame can still add to: an operation
of the frame that reads one (a tensor made inside a forward that escaped through an object
it mutated) is refused, not silently wired across graphs.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx
from torch.fx.node import map_arg

from .exc import Unsupported


class SubGraph(torch.fx.Graph):
    def __init__(self, parent: torch.fx.Graph, name: str, gb_type: str = "Unsupported autograd.Function") -> None:
        super().__init__()
        self.parent = parent
        self.name = name  # what it is the body of, for messages
        self.gb_type = gb_type  # the break a value it cannot take makes
        self.lifted: dict[torch.fx.Node, torch.fx.Node] = {}  # enclosing node -> placeholder
        self.outer: dict[torch.fx.Node, torch.fx.Node] = {}  # placeholder -> the parent's node
        self.placeholders: list[torch.fx.Node] = []  # in order: the arguments the caller passes
        self.static_attrs: dict[str, Any] = {}  # what its get_attr nodes read (a nested operator's bodies)
        self.closed = False
        self.writes_inputs = False  # an operator that lets its body write to its arguments (vmap)

    def create_node(self, op: str, target: Any, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> torch.fx.Node:
        args = map_arg(args or (), self.local)
        kwargs = map_arg(kwargs or {}, self.local)
        return super().create_node(op, target, args, kwargs, name, type_expr)

    def local(self, node: torch.fx.Node) -> torch.fx.Node:
        """`node` as a value of this graph: itself, or the placeholder it is lifted to."""
        if node.graph is self:
            return node
        placeholder = self.lifted.get(node)
        if placeholder is not None:
            return placeholder
        if node.graph is self.parent:
            outer = node
        elif isinstance(self.parent, SubGraph) and not self.parent.closed:
            outer = self.parent.local(node)
            placeholder = self.lifted.get(outer)
            if placeholder is not None:
                self.lifted[node] = placeholder
                return placeholder
        else:
            raise Unsupported(self.gb_type, f"the {self.name} reads {node.name}, a value made inside "
                                            "another operator's body")
        placeholder = self.add_placeholder(node.name, node.meta.get("example_value"))
        self.lifted[outer] = placeholder
        self.outer[placeholder] = outer
        if outer is not node:
            self.lifted[node] = placeholder
        return placeholder

    def take(self, node: torch.fx.Node, example: Any) -> torch.fx.Node:
        """An enclosing graph's value the caller hands the body as an argument: a placeholder
        (in order) mapped to it, as a lifted value is, so the body's reads of it stay inside."""
        placeholder = self.add_placeholder(node.name, example)
        self.lifted.setdefault(node, placeholder)
        self.outer[placeholder] = node
        return placeholder

    def add_placeholder(self, name: str, example: Any) -> torch.fx.Node:
        """A new input after the others."""
        where = (self.inserting_after(self.placeholders[-1]) if self.placeholders
                 else self.inserting_before(next(iter(self.nodes), None)))
        with where:
            node = super().create_node("placeholder", name, (), {}, name)
        node.target = node.name  # the parameter's name in the generated code: unique
        node.meta["example_value"] = node.meta["val"] = example
        if isinstance(example, torch.Tensor):
            node.meta["version"] = example._version  # a body writing to it is seen by the change
        self.placeholders.append(node)
        return node


    def module(self, class_name: str) -> torch.fx.GraphModule:
        """The graph as a GraphModule, holding what its get_attr nodes read."""
        root = torch.nn.Module()
        for name, value in self.static_attrs.items():
            setattr(root, name, value)
        return torch.fx.GraphModule(root, self, class_name=class_name)

    def refuse_writes_to_inputs(self, what: str, written: list[torch.Tensor]) -> None:
        """A body may write only to tensors it made: an input written in place (or through a
        view) is a change mark_dirty would have to declare, or one to state outside the
        Function, which the graph's function does not model."""
        if self.writes_inputs:
            return
        inputs = set()
        for placeholder in self.placeholders:
            example = placeholder.meta.get("example_value")
            if isinstance(example, torch.Tensor):
                inputs.add(id(example))
                if example._base is not None:
                    inputs.add(id(example._base))
        for tensor in written:
            if id(tensor) in inputs or (tensor._base is not None and id(tensor._base) in inputs):
                raise Unsupported("Unsupported autograd.Function",
                                  f"{what} in the {self.name} writes to a tensor it did not make")


def outer_value(node: torch.fx.Node, gb_type: str, reader: str) -> Any:
    """The tracker of an enclosing graph's node a body read, as the caller passes it in."""
    from .variables.tensor import SymNodeVariable, TensorVariable

    example = node.meta.get("example_value")
    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example)
    if isinstance(example, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return SymNodeVariable(node, example)
    raise Unsupported(gb_type, f"{reader} reads {node.name}, which is neither a tensor nor a size")


def foreign_nodes(graph: torch.fx.Graph, values: Any) -> list[torch.fx.Node]:
    """The nodes among `values` (nested in tuples, lists, dicts) that are not `graph`'s."""
    found: list[torch.fx.Node] = []
    map_arg(values, lambda n: found.append(n) if n.graph is not graph else None)
    return found


def refuse_escaped(graph: torch.fx.Graph, values: Any, what: str) -> None:
    """An operation of `graph` must not read a node of another graph (a closed subgraph's)."""
    stray = foreign_nodes(graph, values)
    if stray:
        raise Unsupported("Unsupported autograd.Function",
                          f"{what} reads {stray[0].name}, a tensor made inside an autograd.Function's "
                          "body that escaped it (stored on an object or in a container)")


@contextlib.contextmanager
def grad_mode(enabled: bool):
    """The real grad mode while a body is traced (fake propagation and folded
    `torch.is_grad_enabled()` see it), restored afterwards."""
    previous = torch.is_grad_enabled()
    torch._C._set_grad_enabled(enabled)
    try:
        yield
    finally:
        torch._C._set_grad_enabled(previous)
