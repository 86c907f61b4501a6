"""Numbers read from tensor data, and the checks programs make on them.

With `config.capture_scalar_outputs`, `t.item()` is a graph node whose value is an unbacked
symbol (`u0`, `zuf0`): a number with no value at trace time, which may differ on every call.
Arithmetic on it and tensor ops that take it are nodes too; what needs its value in Python
(a branch, `range(n)`) is a graph break there. `t.tolist()` of an integer tensor is one
`t[i]...item()` per element, as torch.compile records it. `torch._check(cond)` on such a
number tells the ShapeEnv what the program promises (`u0 >= 0`) and becomes a runtime assert
in the graph; `torch._check_is_size(n)` is a node that checks the same at run time.

Without the setting, each of these conversions is a graph break whose hint names it.
"""

from __future__ import annotations

import operator
import types

import torch

from .. import config
from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .tensor import SymNodeVariable, TensorVariable

_CAPTURE_SCALARS_HINT = ("Set framegraph.config.capture_scalar_outputs = True to keep the number in the graph "
                         "as a symbol (torch.compile's torch._dynamo.config.capture_scalar_outputs).")
_INTEGER_DTYPES = frozenset({torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                             torch.uint16, torch.uint32, torch.uint64})


def refuse_scalar(what: str) -> Unsupported:
    return Unsupported("Tensor to Python scalar", f"{what} with config.capture_scalar_outputs=False",
                       hints=(_CAPTURE_SCALARS_HINT,
                              "Or keep the value as a tensor, or do the conversion outside the compiled function."))


def item(tx, tensor: TensorVariable) -> VariableTracker:
    """`tensor.item()`: a node whose value is a fresh unbacked symbol."""
    if not config.capture_scalar_outputs:
        raise refuse_scalar("Tensor.item()")
    tx.output.needs_runtime_asserts = True
    return tx.output.call_method("item", [tensor], {})


def to_number(tx, tensor: TensorVariable, kind: type) -> VariableTracker:
    """`int(t)` / `float(t)`: `.item()`, converted as Python converts the number."""
    if not config.capture_scalar_outputs:
        raise refuse_scalar(f"{kind.__name__}() of a tensor")
    if tensor.example.is_complex():
        raise Unsupported("Tensor to Python scalar", f"{kind.__name__}() of a {tensor.example.dtype} tensor",
                          "The conversion is left to run eagerly.", ())
    value = item(tx, tensor)
    if not isinstance(value, SymNodeVariable) or value.python_type() is kind:
        return value
    if value.python_type() is bool:
        one, zero = (ConstantVariable(1), ConstantVariable(0)) if kind is int else \
            (ConstantVariable(1.0), ConstantVariable(0.0))
        return tx.output.call_function(torch.sym_ite, [value, one, zero], {})
    return tx.output.call_function(torch.sym_int if kind is int else torch.sym_float, [value], {})


def tensor_of_number(tx, value: SymNodeVariable, kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`torch.tensor(n)` of a symbolic number: a 0-d tensor of the dtype torch.tensor gives
    that kind of number (`scalar_tensor`, which takes a symbol where torch.tensor takes data)."""
    if set(kwargs) - {"dtype", "device"}:
        raise Unsupported("Unsupported builtin call", f"torch.tensor of a symbolic number with {sorted(kwargs)}")
    default = {float: torch.get_default_dtype(), int: torch.int64, bool: torch.bool}[value.python_type()]
    kwargs.setdefault("dtype", ConstantVariable(default))
    return tx.output.call_function(torch.scalar_tensor, [value], kwargs)


def tolist(tx, tensor: TensorVariable) -> VariableTracker:
    """`tensor.tolist()` of an integer tensor of known shape: nested lists of `.item()`s of
    its elements (torch.compile reads floats eagerly at a break, and so does framegraph)."""
    from .containers import ListVariable

    if not config.capture_scalar_outputs:
        raise refuse_scalar("Tensor.tolist()")
    example = tensor.example
    if example.dtype not in _INTEGER_DTYPES:
        raise Unsupported("Tensor to Python scalar", f"Tensor.tolist() of a {example.dtype} tensor",
                          "Only integer tensors become lists of symbols, as in torch.compile.",
                          ("Keep the values as a tensor, or convert outside the compiled function.",))
    if any(isinstance(size, torch.SymInt) for size in example.shape):
        raise Unsupported("Tensor to Python scalar", "Tensor.tolist() of a tensor with a dynamic shape",
                          "The length of the list would depend on a symbolic size.",
                          ("Keep the values as a tensor.",))

    tx.output.needs_runtime_asserts = True

    def elements(value: TensorVariable, sizes: tuple[int, ...]) -> VariableTracker:
        if not sizes:
            return tx.output.call_method("item", [value], {})
        rows = [tx.output.call_function(operator.getitem, [value, ConstantVariable(i)], {}) for i in range(sizes[0])]
        return ListVariable([elements(row, sizes[1:]) for row in rows])

    return elements(tensor, tuple(int(s) for s in example.shape))


def check(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`torch._check(cond, message=None)`. A constant condition folds (True) or is left to
    run eagerly (False: the call raises there). A symbolic one is a `torch._check` node whose
    message, a function, is an attribute of the graph: the runtime-assert pass turns the node
    into an assert, which keeps a message the function returns as a constant string."""
    cond, message = _check_arguments("torch._check", args, kwargs, ("cond", "message"))
    if isinstance(cond, TensorVariable):
        raise Unsupported("Unsupported builtin call", "torch._check of a tensor (it raises TypeError)",
                          "torch._check takes a bool; the call runs eagerly, where it raises.",
                          ("Use torch._check_tensor_all for a tensor condition.",))
    if not isinstance(cond, SymNodeVariable):
        if cond.is_python_constant() and cond.as_python_constant() is True:
            return ConstantVariable(None)
        raise Unsupported("Unsupported builtin call", f"torch._check({cond}) with a condition that is not True",
                          "The check fails (or its condition is not a bool): the call runs eagerly, "
                          "where it raises.", ())
    tx.output.needs_runtime_asserts = True
    node_args = [cond]
    if message is not None and not (message.is_python_constant() and message.as_python_constant() is None):
        node_args.append(tx.output.add_static_attr("_check_message", _message_function(tx, message)))
    return tx.output.call_function(torch._check, node_args, {})


def check_tensor_all(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`torch._check_tensor_all(cond, message=None)`: torch._check of whether every element
    of `cond` is true, read with `.item()` (so it needs config.capture_scalar_outputs)."""
    cond, message = _check_arguments("torch._check_tensor_all", args, kwargs, ("cond", "message"))
    if not isinstance(cond, TensorVariable):
        raise Unsupported("Unsupported builtin call", "torch._check_tensor_all of something else than a tensor",
                          "It raises TypeError; the call runs eagerly.", ())
    every = item(tx, cond.call_method(tx, "_is_all_true", [], {}))
    return check(tx, [every] if message is None else [every, message], {})


def _check_arguments(name: str, args, kwargs, names: tuple[str, ...]) -> list[VariableTracker | None]:
    if len(args) > len(names) or set(kwargs) - set(names):
        raise Unsupported("Unsupported builtin call", f"{name} with unexpected arguments")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in bound:
            raise Unsupported("Unsupported builtin call", f"{name} got {key!r} twice")
        bound[key] = value
    if names[0] not in bound:
        raise Unsupported("Unsupported builtin call", f"{name} without a condition (it raises TypeError)")
    return [bound.get(key) for key in names]


def _message_function(tx, message: VariableTracker) -> types.FunctionType:
    """The real function a message tracker stands for: a function of the program, or one
    made while tracing (a lambda) whose defaults and closure are constants."""
    from .user_functions import NestedFunctionVariable, UserFunctionVariable

    if isinstance(message, UserFunctionVariable):
        return message.fn
    if isinstance(message, NestedFunctionVariable):
        values = [*message.positional_defaults, *message.keyword_defaults.values(),
                  *(box.get(tx) for box in message.closure)]
        if all(isinstance(v, VariableTracker) and v.is_python_constant() for v in values):
            fn = types.FunctionType(message.code, message.f_globals, message.code.co_name,
                                    tuple(v.as_python_constant() for v in message.positional_defaults) or None,
                                    tuple(types.CellType(box.get(tx).as_python_constant())
                                          for box in message.closure) or None)
            if message.keyword_defaults:
                fn.__kwdefaults__ = {k: v.as_python_constant() for k, v in message.keyword_defaults.items()}
            return fn
        raise Unsupported("Unsupported builtin call", "torch._check message that closes over values of the trace",
                          "The message function of torch._check is kept for run time, so its closure "
                          "must hold constants.",
                          ("Build the message from constants, e.g. lambda: 'n must be positive'.",))
    raise Unsupported("Unsupported builtin call", f"torch._check message {message}",
                      "The message of torch._check must be a function (it is called only if the check fails).",
                      ())
