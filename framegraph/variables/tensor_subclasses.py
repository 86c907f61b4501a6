"""Tensor subclasses a capability package teaches the translator (framegraph.distributed: DTensor).

The core models plain tensors and Parameters. A package registers a subclass with a rule: the
guards on what the subclass adds to a tensor's metadata (a DTensor's mesh and placements), and
the attributes and methods of its own (`placements`, `to_local()`). The core never imports the
package.

The example value of such an input is the subclass around fake tensors (torch's `from_tensor`
flattens and rebuilds it), so every op runs through the subclass's own dispatch while tracing,
as it will when the graph runs, and the graph's nodes take and give the subclass as torch.compile's
do. Its sizes stay static: a symbolic size would have to be threaded through the subclass's
insides.
"""

from __future__ import annotations

from typing import Any, Protocol

from .base import VariableTracker


class SubclassRule(Protocol):
    def guard(self, guards, value: Any, source, line: str) -> None:
        """Guards beyond the tensor guard (which pins the outer sizes, strides, dtype, device)."""

    def var_getattr(self, tx, variable, name: str) -> VariableTracker | None:
        """The subclass's own attribute or method, or None for what a tensor answers."""

    def call_method(self, tx, variable, name: str, args: list, kwargs: dict) -> VariableTracker | None:
        """A call of the subclass's own method, or None for what a tensor does."""


RULES: dict[type, SubclassRule] = {}


def register_tensor_subclass(kind: type, rule: SubclassRule) -> None:
    RULES[kind] = rule
