"""Iteration: what `for`, unpacking and `list(x)` see when they walk a value."""

from __future__ import annotations

import operator
import types

from ..bytecode import create_instruction, emit

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import BaseSequenceVariable, DictVariable
from .tensor import TensorVariable
from .nn_module import ModuleSliceVariable
from .user_defined import InstanceDictVariable
from .user_objects import UserDefinedObjectVariable


class ListIteratorVariable(VariableTracker):
    """An iterator over items known while tracing; advancing it is pure bookkeeping."""

    __slots__ = ("items", "index", "start")

    def __init__(self, items: list[VariableTracker], source=None, start: int = 0) -> None:
        super().__init__(source)
        self.items = items
        self.index = 0
        self.start = start  # for a real iterator (with a source): its position when read

    def children(self) -> list[VariableTracker]:
        return self.items[self.index:]

    def reconstruct(self, codegen) -> None:
        self.reconstruct_remaining(codegen)
        codegen.append(create_instruction("GET_ITER"))

    def reconstruct_remaining(self, codegen) -> None:
        """A list of the items not yet produced (at a graph break inside a loop)."""
        for item in self.items[self.index:]:
            codegen.reconstruct(item)
        codegen.build(list, len(self.items) - self.index)

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items):
            return None
        item = self.items[self.index]
        self.index += 1
        return item

    def __repr__(self) -> str:
        return f"ListIteratorVariable({self.index}/{len(self.items)})"


class GeneratorVariable(VariableTracker):
    """A generator made while tracing; its body runs when it is first iterated."""

    __slots__ = ("_run", "_items")

    def __init__(self, run) -> None:
        super().__init__()
        self._run = run
        self._items: list[VariableTracker] | None = None

    def python_type(self) -> type:
        return types.GeneratorType

    def iterator(self) -> ListIteratorVariable:
        if self._items is None:
            self._items = self._run()
        iterator = ListIteratorVariable(self._items)
        self._items = []  # a generator is iterated once; a second pass sees nothing
        return iterator


class DictViewVariable(VariableTracker):
    """`d.keys()`, `d.values()` or `d.items()` of a dict tracker."""

    __slots__ = ("dict_var", "kind")

    def __init__(self, dict_var: DictVariable, kind: str) -> None:
        super().__init__()
        self.dict_var, self.kind = dict_var, kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def children(self) -> list[VariableTracker]:
        return [self.dict_var]

    def items_now(self) -> list[VariableTracker]:
        from .containers import TupleVariable

        items = self.dict_var.items
        if self.kind == "keys":
            return [ConstantVariable(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([ConstantVariable(k), v]) for k, v in items.items()]

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__len__":
            return ConstantVariable(len(self.dict_var.items))
        if name == "__contains__" and self.kind == "keys" and args[0].is_python_constant():
            return ConstantVariable(args[0].as_python_constant() in self.dict_var.items)
        raise Unsupported("Unsupported method call", f"dict_{self.kind}.{name}")

    def reconstruct(self, codegen) -> None:
        codegen.reconstruct(self.dict_var)
        codegen.append(*emit.create_load_method(self.kind), *emit.create_call(0))


def unpack(tx, value: VariableTracker) -> list[VariableTracker]:
    """The items iterating `value` would produce, as trackers."""
    if isinstance(value, BaseSequenceVariable):
        return list(value.items)
    if isinstance(value, DictVariable):
        return [ConstantVariable(k) for k in value.items]
    if isinstance(value, ListIteratorVariable):
        items = []
        while (item := value.next_item()) is not None:
            items.append(item)
        return items
    if isinstance(value, GeneratorVariable):
        return unpack(tx, value.iterator())
    if isinstance(value, DictViewVariable):
        return value.items_now()
    if isinstance(value, (UserDefinedObjectVariable, ModuleSliceVariable)):
        return value.iterate(tx)
    if isinstance(value, InstanceDictVariable):
        return unpack(tx, value.snapshot(tx))
    if isinstance(value, TensorVariable):
        if value.example.dim() == 0:
            raise Unsupported("Unsupported builtin call", "iteration over a 0-d tensor")
        return [tx.output.call_function(operator.getitem, [value, ConstantVariable(i)], {})
                for i in range(int(value.example.shape[0]))]  # a symbolic length is guarded
    if value.is_python_constant():
        constant = value.as_python_constant()
        if isinstance(constant, (range, str, bytes, tuple, frozenset, set, list)):
            return [ConstantVariable(item) for item in constant]
    raise Unsupported("Unsupported builtin call", f"iteration over {value}")
