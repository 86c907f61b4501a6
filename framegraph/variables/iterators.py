"""Iteration: what `for`, unpacking and `list(x)` see when they walk a value."""

from __future__ import annotations

import operator

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import BaseSequenceVariable, DictVariable
from .tensor import TensorVariable
from .user_objects import NNModuleVariable


class ListIteratorVariable(VariableTracker):
    """An iterator over items known while tracing; advancing it is pure bookkeeping."""

    __slots__ = ("items", "index")

    def __init__(self, items: list[VariableTracker]) -> None:
        super().__init__()
        self.items = items
        self.index = 0

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items):
            return None
        item = self.items[self.index]
        self.index += 1
        return item

    def __repr__(self) -> str:
        return f"ListIteratorVariable({self.index}/{len(self.items)})"


def unpack(tx, value: VariableTracker) -> list[VariableTracker]:
    """The items iterating `value` would produce, as trackers."""
    if isinstance(value, BaseSequenceVariable):
        return list(value.items)
    if isinstance(value, DictVariable):
        return [ConstantVariable(k) for k in value.items]
    if isinstance(value, ListIteratorVariable):
        items = value.items[value.index:]
        value.index = len(value.items)
        return items
    if isinstance(value, NNModuleVariable):
        return value.iterate(tx)
    if isinstance(value, TensorVariable):
        if value.example.dim() == 0:
            raise Unsupported("Unsupported builtin call", "iteration over a 0-d tensor")
        return [tx.output.call_function(operator.getitem, [value, ConstantVariable(i)], {})
                for i in range(value.example.shape[0])]
    if value.is_python_constant():
        constant = value.as_python_constant()
        if isinstance(constant, (range, str, bytes, tuple, frozenset)):
            return [ConstantVariable(item) for item in constant]
    raise Unsupported("Unsupported builtin call", f"iteration over {value}")
