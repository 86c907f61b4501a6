"""`slice` objects whose bounds include a symbolic size (`x[: n - 1]` with a dynamic `n`).

A slice of constants is a constant. One with a symbolic bound stays symbolic where the
consumer takes symbols: a tensor index is a graph node that slices by the symbol, as
torch.compile records it. Anywhere Python needs the bounds themselves (slicing a list,
`s.indices(n)`, hashing it), they become guarded constants.
"""

from __future__ import annotations

from .base import VariableTracker
from .constant import ConstantVariable
from .tensor import SymNodeVariable


class SliceVariable(VariableTracker):
    __slots__ = ("start", "stop", "step")

    def __init__(self, start: VariableTracker, stop: VariableTracker, step: VariableTracker) -> None:
        super().__init__()
        self.start, self.stop, self.step = start, stop, step

    @property
    def parts(self) -> list[VariableTracker]:
        return [self.start, self.stop, self.step]

    def python_type(self) -> type:
        return slice

    def children(self) -> list[VariableTracker]:
        return self.parts

    def as_python_constant(self) -> slice:
        return slice(*(part.as_python_constant() for part in self.parts))  # a symbol is guarded

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):
            return getattr(self, name)
        return ConstantVariable(self.as_python_constant()).var_getattr(tx, name)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        return ConstantVariable(self.as_python_constant()).call_method(tx, name, args, kwargs)

    def bool_value(self, tx) -> bool:
        return True

    def reconstruct(self, codegen) -> None:
        from ..bytecode import create_instruction

        for part in self.parts:
            codegen.reconstruct(part)
        codegen.append(create_instruction("BUILD_SLICE", arg=3))

    def __repr__(self) -> str:
        return f"SliceVariable({self.start!r}, {self.stop!r}, {self.step!r})"


def make_slice(*bounds: VariableTracker) -> VariableTracker:
    """`slice(*bounds)` (BUILD_SLICE's order): a constant, or symbolic where a bound is."""
    if len(bounds) == 1:
        bounds = (ConstantVariable(None), bounds[0], ConstantVariable(None))
    elif len(bounds) == 2:
        bounds = (*bounds, ConstantVariable(None))
    if any(isinstance(b, SymNodeVariable) and b.python_type() is int for b in bounds) \
            and all(b.is_python_constant() or isinstance(b, SymNodeVariable) for b in bounds):
        return SliceVariable(*bounds)
    return ConstantVariable(slice(*(b.as_python_constant() for b in bounds)))
