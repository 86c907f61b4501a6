"""The `ctx` an autograd.Function's forward, setup_context and backward receive, while traced.

Eagerly it is the Function's backward node (`Cls._backward_cls`), a FunctionCtx. Here it is
a record: the tensors `save_for_backward` kept, the outputs marked non-differentiable,
`set_materialize_grads`, `needs_input_grad` (fixed by the apply's arguments) and the
attributes the program stores on it (`ctx.scale = k`, `ctx.x = x`). The backward reads the
same record; what it reads of the forward's tensors is lifted into the backward's graph
(subgraph.py). The backward may only read it: a store there is refused.
"""

from __future__ import annotations

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable
from .containers import TupleVariable
from .tensor import TensorVariable

# FunctionCtx methods that only matter to forward-mode AD, custom storage sharing or in-place
# outputs, which the traced function does not model.
_REFUSED_METHODS = frozenset({"mark_dirty", "save_for_forward", "mark_shared_storage"})
_METHODS = frozenset({"save_for_backward", "mark_non_differentiable", "set_materialize_grads"}) | _REFUSED_METHODS


class AutogradCtxVariable(VariableTracker):
    __slots__ = ("cls", "needs_input_grad", "saved", "non_differentiable", "materialize_grads", "attrs",
                 "phase")

    def __init__(self, cls: type, needs_input_grad: tuple[bool, ...]) -> None:
        super().__init__()
        self.cls = cls
        self.needs_input_grad = needs_input_grad
        self.saved: list[VariableTracker] | None = None  # what save_for_backward kept
        self.non_differentiable: list[TensorVariable] = []
        self.materialize_grads = True
        self.attrs: dict[str, VariableTracker] = {}
        self.phase = "forward"  # then "backward"

    def python_type(self) -> type:
        return self.cls._backward_cls

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _METHODS:
            return MethodVariable(self, name)
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return ConstantVariable(self.needs_input_grad)
        if name in ("saved_tensors", "saved_variables"):
            if self.phase != "backward":
                raise Unsupported("Unsupported autograd.Function", f"ctx.{name} read in forward")
            return TupleVariable(list(self.saved or []))
        raise Unsupported("Unsupported autograd.Function", f"ctx.{name}, which the program did not set")

    def has_attribute(self, tx, name: str) -> bool:
        if name in self.attrs or name in _METHODS or name == "needs_input_grad":
            return True
        if name in ("saved_tensors", "saved_variables") or hasattr(self.python_type(), name):
            raise Unsupported("Unsupported autograd.Function", f"hasattr(ctx, {name!r})")
        return False

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if self.phase != "forward":
            raise Unsupported("Unsupported autograd.Function", f"ctx.{name} assigned in backward")
        if name in _METHODS or hasattr(self.python_type(), name) or name == "needs_input_grad":
            raise Unsupported("Unsupported autograd.Function", f"assignment to ctx.{name}, a name FunctionCtx uses")
        self.attrs[name] = value

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name not in _METHODS:
            return super().call_method(tx, name, args, kwargs)
        if name in _REFUSED_METHODS:
            raise Unsupported("Unsupported autograd.Function", f"ctx.{name}() (in-place outputs, forward-mode "
                                                               "AD and shared storage are not modelled)")
        if self.phase != "forward":
            raise Unsupported("Unsupported autograd.Function", f"ctx.{name}() called in backward")
        if kwargs:
            raise Unsupported("Unsupported autograd.Function", f"ctx.{name}() with keyword arguments")
        if name == "save_for_backward":
            for arg in args:
                if not isinstance(arg, TensorVariable) and not _is_none(arg):
                    raise Unsupported("Unsupported autograd.Function",
                                      f"ctx.save_for_backward() of {arg} (only tensors and None are saved)")
            self.saved = list(args)  # a second call replaces the first, as FunctionCtx does
        elif name == "mark_non_differentiable":
            if not all(isinstance(arg, TensorVariable) for arg in args):
                raise Unsupported("Unsupported autograd.Function", "ctx.mark_non_differentiable() of a non-tensor")
            self.non_differentiable.extend(args)
        else:  # set_materialize_grads
            if len(args) != 1 or not args[0].is_python_constant():
                raise Unsupported("Unsupported autograd.Function", "ctx.set_materialize_grads() of a non-constant")
            self.materialize_grads = bool(args[0].as_python_constant())
        return ConstantVariable(None)

    def saved_tensors(self) -> list[TensorVariable]:
        return [t for t in self.saved or () if isinstance(t, TensorVariable)]

    def is_non_differentiable(self, tensor: TensorVariable) -> bool:
        return any(marked.example is tensor.example for marked in self.non_differentiable)

    def __repr__(self) -> str:
        return f"AutogradCtxVariable({self.cls.__qualname__})"


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None
