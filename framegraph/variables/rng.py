"""A torch.Generator the program passes in (`scheduler.step(..., generator=g)`).

Its state is the point of it: a random op drawing from it must advance that very object, call
after call, in the order eager draws. The graph holds it as an attribute (a get_attr node) and
passes it to the ops that take it, so each draw happens where eager's does (the eager backend
runs the graph, AOTAutograd keeps the attribute as it is). Only a frame that passes the
generator to an op is guarded on its identity; reading its device needs only its type.

Where that would be wrong, the op runs eagerly at a graph break instead, as it always does
under torch.compile:
- inductor puts a pickled copy of the attribute in the code it generates, and would draw from
  the copy (`copies_graph_attributes` on the backend);
- a program that passes a new generator each call (`torch.Generator().manual_seed(0)` at the
  call site) would recompile each call: once a frame has seen two generators at one place,
  the graph no longer holds the one there.
"""

from __future__ import annotations

import torch

from ..call_args import OpaqueVariable
from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource
from .base import VariableTracker


class RandomGeneratorVariable(OpaqueVariable):
    __slots__ = ("output", "line", "varies")

    def __init__(self, output, value: torch.Generator, source, line: int, varies: bool) -> None:
        VariableTracker.__init__(self, source)  # `node` is made on demand, below
        self.value, self.output, self.line, self.varies = value, output, line, varies

    @property
    def node(self) -> torch.fx.Node:
        """The generator as the graph being recorded reads it, when an op is given it."""
        if self.varies:
            raise Unsupported("Random generator argument", f"the torch.Generator at {self.source}, a new one "
                                                           "each call, passed to an op")
        if getattr(self.output.backend, "copies_graph_attributes", False):
            raise Unsupported("Random generator argument", f"the torch.Generator at {self.source} passed to an op, "
                                                           "for a backend that would draw from a copy of it")
        self.output.guards.add(GuardKind.ID_MATCH, self.source, self.value, self.line)
        return self.output.add_static_attr("generator", self.value).node

    def python_type(self) -> type:
        return torch.Generator

    def as_python_constant(self):
        raise Unsupported("Random generator argument", f"the torch.Generator at {self.source} used as a constant")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import wrap

        value = getattr(self.value, name, None)  # missing: the break below, where eager raises
        if name == "device" or callable(value):
            # A method (`manual_seed`) is a break where it is called, run as is.
            return wrap(tx, value, AttrSource(self.source, name))
        raise Unsupported("Random generator argument", f"torch.Generator.{name} of the generator at {self.source}")

    def __repr__(self) -> str:
        return f"RandomGeneratorVariable({self.source})"


def wrap_random_generator(tx, value: torch.Generator, source, line: int) -> RandomGeneratorVariable:
    tx.output.guards.add(GuardKind.TYPE_MATCH, source, torch.Generator, line)
    return RandomGeneratorVariable(tx.output, value, source, line, tx.output.dynamic.generator_varies(source, value))
