"""Builtins and `math` functions applied to symbolic numbers (a dynamic size, a number read
from a tensor): graph nodes on the symbol, as torch.compile records them, so one graph
serves every size. What has no symbolic meaning here falls back to the caller, which makes
the number a guarded constant (`range(n)`, `str(n)`).
"""

from __future__ import annotations

import math
import operator
from typing import Callable

import torch

from .base import VariableTracker
from .constant import ConstantVariable
from .tensor import SymNodeVariable


def _number(value: VariableTracker) -> bool:
    return isinstance(value, SymNodeVariable) or (
        value.is_python_constant() and type(value.as_python_constant()) in (int, float, bool))


def symbolic_call(tx, fn: Callable, args: list[VariableTracker],
                  kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """`fn(*args)` with a symbolic number among `args`, as nodes; None when not modelled."""
    if fn is slice and not kwargs and 1 <= len(args) <= 3:
        from .slices import make_slice

        return make_slice(*args) if any(isinstance(a, SymNodeVariable) for a in args) else None
    if kwargs or not any(isinstance(a, SymNodeVariable) for a in args) or not all(_number(a) for a in args):
        return None
    record = tx.output.call_function
    if fn in (abs, round, pow, operator.abs) and len(args) <= 2:
        return record(fn, list(args), {})
    if fn in (min, max) and len(args) == 2:
        return record(torch.sym_min if fn is min else torch.sym_max, list(args), {})
    if fn is divmod and len(args) == 2:
        from .builtins import apply_operator
        from .containers import TupleVariable

        return TupleVariable([apply_operator(tx, operator.floordiv, *args), apply_operator(tx, operator.mod, *args)])
    if len(args) != 1:
        return None
    (value,) = args
    kind = value.python_type()
    if fn is int:
        return value if kind is int else record(torch.sym_int, [value], {})
    if fn is float:
        return value if kind is float else record(torch.sym_float, [value], {})
    if fn in (math.floor, math.ceil, math.trunc):
        return value if kind is int else record(fn, [value], {})
    if fn in _SYMBOLIC_MATH:
        return record(_SYMBOLIC_MATH[fn], [value], {})
    return None


# math functions with a symbolic form in torch (torch._sym_sqrt, _sym_cos...), as torch.compile
# records them; the others (exp, log...) need the value, so the number becomes a guarded constant.
_SYMBOLIC_MATH = {getattr(math, name[len("_sym_"):]): getattr(torch, name) for name in dir(torch)
                  if name.startswith("_sym_") and callable(getattr(math, name[len("_sym_"):], None))}


def formats_as_constant(value: VariableTracker) -> VariableTracker:
    """What `str`/`format`/an f-string of a symbolic number sees: its value, guarded."""
    if isinstance(value, SymNodeVariable):
        return ConstantVariable(value.as_python_constant())
    return value
