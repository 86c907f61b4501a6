"""A torch.Generator the program passes in (`scheduler.step(..., generator=g)`).

Its state is the point of it: a random op drawing from it must advance that very object,
call after call, so such an op runs eagerly at a graph break (as under torch.compile) rather
than in a graph. What the program reads about the generator without drawing from it (its
device) is known and guarded, so the code around the op is still captured.
"""

from __future__ import annotations

import torch

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource
from .base import VariableTracker


class RandomGeneratorVariable(VariableTracker):
    __slots__ = ("device",)

    def __init__(self, device: torch.device, source) -> None:
        super().__init__(source)
        self.device = device

    def python_type(self) -> type:
        return torch.Generator

    def as_python_constant(self):
        raise Unsupported("Random generator argument", f"the torch.Generator at {self.source} passed to an op")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "device":
            from .builder import wrap

            return wrap(tx, self.device, AttrSource(self.source, "device"))
        raise Unsupported("Random generator argument", f"torch.Generator.{name} of the generator at {self.source}")

    def __repr__(self) -> str:
        return f"RandomGeneratorVariable({self.source})"


def wrap_random_generator(tx, value: torch.Generator, source, line: int) -> RandomGeneratorVariable:
    tx.output.guards.add(GuardKind.TYPE_MATCH, source, torch.Generator, line)
    return RandomGeneratorVariable(value.device, source)
