"""Tensors while tracing: an fx node plus a fake tensor with the real one's metadata."""

from __future__ import annotations

import torch

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker, is_method_of
from .constant import ConstantVariable
from .tensor_subclasses import RULES as SUBCLASS_RULES

# Methods whose result is metadata the tensor guard already pins down: they fold to constants.
_METADATA_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
    "element_size", "is_floating_point", "is_complex", "get_device", "is_inference",
})
_METADATA_ATTRS = frozenset({
    "ndim", "dtype", "device", "layout", "requires_grad", "is_cuda", "is_cpu",
    "is_sparse", "is_quantized", "is_meta", "is_leaf", "is_nested",
})
# Properties that give another tensor: recorded as a getattr node.
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
# Conversions to Python values need the data, which a graph capture does not have.
_TO_PYTHON = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__"})
# Reads of a tensor's memory layout: unknown for the gradients an autograd.Function's backward
# is traced with (OutputGraph.layout_unknown).
_LAYOUT_METHODS = frozenset({"stride", "is_contiguous", "storage_offset", "data_ptr", "is_non_overlapping_and_dense"})
# Autograd calls a forward graph cannot hold: they run eagerly at a break, as in torch.compile.
# (requires_grad_ makes a leaf, or changes an input's flag, which no graph output can carry.)
_AUTOGRAD_METHODS = frozenset({"backward", "retain_grad", "requires_grad_"})


class TensorVariable(VariableTracker):
    __slots__ = ("node", "example")

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, source=None) -> None:
        super().__init__(source)
        self.node = node
        self.example = example

    def python_type(self) -> type:
        # The example is a FakeTensor, a Parameter, or a subclass a package registered
        # (tensor_subclasses.py), which wraps fake tensors and is what the real value is.
        kind = type(self.example)
        if kind in SUBCLASS_RULES:
            return kind
        return torch.nn.Parameter if isinstance(self.example, torch.nn.Parameter) else torch.Tensor

    def var_getattr(self, tx, name: str) -> VariableTracker:
        rule = SUBCLASS_RULES.get(type(self.example))
        if rule is not None:
            found = rule.var_getattr(tx, self, name)
            if found is not None:
                return found
        if name == "shape":
            return self.sizes(tx)
        if name == "grad":
            return self._grad(tx)
        if name == "is_leaf" and self.source is not None:
            # The tensor guard does not cover leafness: guard it where it is read.
            from ..guards import GuardKind
            from ..source import AttrSource

            tx.output.guards.add(GuardKind.EQUALS_MATCH, AttrSource(self.source, "is_leaf"),
                                 self.example.is_leaf, tx.output.user_line)
        if name in _METADATA_ATTRS:
            return ConstantVariable(getattr(self.example, name))
        if name in _TENSOR_ATTRS:
            return tx.output.call_function(getattr, [self, ConstantVariable(name)], {})
        if is_method_of(torch.Tensor, name):
            # Conversions such as .item() fail at the call, so a graph break lands there.
            return MethodVariable(self, name)
        if not hasattr(self.python_type(), name):
            return self._own_attribute(tx, name)
        return super().var_getattr(tx, name)

    def _own_attribute(self, tx, name: str) -> VariableTracker:
        """An attribute the program set on the tensor (it lives in the tensor's `__dict__`):
        what the trace stored, else the caller's tensor's own, guarded."""
        from ..guards import GuardKind
        from ..source import AttrSource
        from .builder import wrap
        from .exceptions import raise_observed

        written = tx.output.side_effects.load_attr(self, name)
        if written is not None:
            return written
        if self.source is not None:
            attrs = getattr(tx.output.real_tensor(self), "__dict__", {})
            if name in attrs:
                return wrap(tx, attrs[name], AttrSource(self.source, name))
            tx.output.guards.add(GuardKind.HASATTR, self.source, (name, False), tx.output.user_line, key=name)
        raise_observed(AttributeError, f"'Tensor' object has no attribute {name!r}")

    def _grad(self, tx) -> VariableTracker:
        """`t.grad` of a tensor the frame received: what autograd left there (None or a
        tensor, guarded like any input), or what the trace assigned to it."""
        written = tx.output.side_effects.load_attr(self, "grad")
        if written is not None:
            return written
        if self.source is None:
            raise Unsupported("Unsupported attribute access", "Tensor.grad of a tensor computed in the graph")
        from ..source import AttrSource
        from .builder import wrap

        return wrap(tx, tx.output.real_tensor(self).grad, AttrSource(self.source, "grad"))

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        """`p.grad = None` (or a tensor): replayed on the real tensor after the graph, as a
        hand-written zero_grad loop needs."""
        if name != "grad" and not hasattr(torch.Tensor, name):
            # A new attribute of the tensor's own: replayed on the caller's tensor, or set on
            # the graph's output (one nobody holds after the graph needs none).
            tx.output.side_effects.store_attr(self, name, value)
            return
        if name != "grad" or self.source is None:
            raise Unsupported("Unsupported mutation", f"assignment to Tensor.{name}"
                              + ("" if name == "grad" else " (only .grad and the tensor's own attributes are modelled)"))
        if isinstance(value, TensorVariable):
            mine, new = self.example, value.example
            if (new.shape != mine.shape or new.dtype != mine.dtype or new.device != mine.device
                    or new is mine):
                # torch refuses these at the assignment; eagerly it raises from the real line
                raise Unsupported("Unsupported mutation", "a .grad of another shape, dtype or device, or itself")
        elif not (value.is_python_constant() and value.as_python_constant() is None):
            raise Unsupported("Unsupported mutation", f"assignment of {value} to Tensor.grad")
        tx.output.side_effects.store_attr(self, name, value)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        rule = SUBCLASS_RULES.get(type(self.example))
        if rule is not None:
            found = rule.call_method(tx, self, name, args, kwargs)
            if found is not None:
                return found
        if name in _LAYOUT_METHODS and tx.output.layout_is_unknown:
            raise Unsupported("Unsupported autograd.Function",
                              f"Tensor.{name}() in a backward (gradients may come with any strides)")
        if name == "numpy" and not args and not kwargs:
            from .numpy import from_tensor

            return from_tensor(tx, self)
        if name in ("item", "tolist") and not args and not kwargs:
            from . import scalars

            return scalars.item(tx, self) if name == "item" else scalars.tolist(tx, self)
        if name in _TO_PYTHON:
            raise Unsupported("Tensor to Python scalar", f"Tensor.{name}()")
        if name == "requires_grad_" and self.example.requires_grad and _asks_for_grad(args, kwargs):
            return self  # already requires grad: nothing changes (transformers' input hook)
        if name in _AUTOGRAD_METHODS:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"Tensor.{name}() runs autograd or changes what it records",
                              "Autograd calls are not part of a forward graph; they run eagerly "
                              "(torch.compile breaks on them too).")
        refuse_new_leaf(f"Tensor.{name}", kwargs)
        if name == "new":
            return self._legacy_new(tx, args, kwargs)
        if name == "size" and not kwargs:
            sizes = self.sizes(tx)
            return sizes.items[args[0].as_python_constant()] if args else sizes
        if name in ("numel", "nelement") and not args and _symbolic(self.example.numel()):
            return tx.output.call_function(torch.ops.aten.sym_numel.default, [self], {})
        if name == "stride" and not kwargs:
            strides = self._strides(tx)
            return strides.items[args[0].as_python_constant()] if args else strides
        if name == "storage_offset":
            # Not part of the tensor guard: only an input's offset can be guarded, by source.
            if self.source is None or _symbolic(self.example.storage_offset()):
                raise Unsupported("Unsupported method call", "storage_offset() of a tensor computed in the graph")
            from ..guards import GuardKind
            from ..source import MethodCallSource

            offset = int(self.example.storage_offset())
            tx.output.guards.add(GuardKind.EQUALS_MATCH, MethodCallSource(self.source, "storage_offset"),
                                 offset, tx.output.user_line)
            return ConstantVariable(offset)
        if name in _METADATA_METHODS:
            values = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            result = getattr(self.example, name)(*values, **kw)
            if _symbolic(result):
                raise Unsupported("Unsupported method call", f"Tensor.{name}() of a dynamic shape")
            return ConstantVariable(result)
        if not callable(getattr(torch.Tensor, name, None)):
            raise Unsupported("Unsupported method call", f"Tensor.{name}")
        return tx.output.call_method(name, [self, *args], kwargs)

    def _legacy_new(self, tx, args, kwargs) -> VariableTracker:
        """`x.new(...)`, the legacy constructor, as the method it stands for: sizes (ints, or
        one torch.Size) make an uninitialised tensor like x (`new_empty`), one sequence of
        numbers is data (`new_tensor`), nothing is an empty tensor."""
        from .containers import TupleVariable

        if kwargs:
            raise Unsupported("Unsupported method call", "Tensor.new() with keyword arguments")
        if not args:
            return tx.output.call_method("new_empty", [self, ConstantVariable((0,))], {})
        only = args[0] if len(args) == 1 else None
        if isinstance(only, SizeVariable):
            return tx.output.call_method("new_empty", [self, only], {})
        value = only.as_python_constant() if only is not None and only.is_python_constant() else None
        if isinstance(value, torch.Size):
            return tx.output.call_method("new_empty", [self, ConstantVariable(tuple(value))], {})
        if all(isinstance(a, SymNodeVariable) or (a.is_python_constant() and type(a.as_python_constant()) is int)
               for a in args):
            return tx.output.call_method("new_empty", [self, TupleVariable(list(args))], {})
        if isinstance(value, (list, tuple)):
            return tx.output.call_method("new_tensor", [self, only], {})
        raise Unsupported("Unsupported method call", f"Tensor.new({', '.join(map(repr, args))})")

    def has_attribute(self, tx, name: str) -> bool:
        """`hasattr(t, name)`: the class answers for its attributes; an attribute a program
        set on a tensor lives in the tensor's __dict__, guarded (a graph never sets one)."""
        if hasattr(self.python_type(), name):
            return True
        if tx.output.side_effects.load_attr(self, name) is not None:
            return True
        if self.source is None:
            return False
        present = hasattr(tx.output.real_tensor(self), name)
        from ..guards import GuardKind

        tx.output.guards.add(GuardKind.HASATTR, self.source, (name, present), tx.output.user_line, key=name)
        return present

    def bool_value(self, tx) -> bool:
        raise Unsupported("Data-dependent branching", "the truth value of a tensor")

    def sizes(self, tx) -> VariableTracker:
        """`x.shape`: constants, and for dynamic dimensions a node reading the size."""
        items = []
        for dim, size in enumerate(self.example.shape):
            if _symbolic(size):
                items.append(tx.output.call_function(torch.ops.aten.sym_size.int,
                                                     [self, ConstantVariable(dim)], {}))
            else:
                items.append(ConstantVariable(int(size)))
        return SizeVariable(items)

    def _strides(self, tx) -> VariableTracker:
        from .containers import TupleVariable

        items = []
        for dim, stride in enumerate(self.example.stride()):
            if _symbolic(stride):
                items.append(tx.output.call_function(torch.ops.aten.sym_stride.int,
                                                     [self, ConstantVariable(dim)], {}))
            else:
                items.append(ConstantVariable(int(stride)))
        return TupleVariable(items)

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name}, {tuple(self.example.shape)}, {self.example.dtype})"


def refuse_new_leaf(what: str, kwargs: dict[str, VariableTracker]) -> None:
    """A tensor made with requires_grad=True is a new autograd leaf, which a backend's graph
    (AOTAutograd) would return as a non-leaf without requires_grad: the call runs eagerly at
    a break, as in torch.compile."""
    flag = kwargs.get("requires_grad")
    if flag is not None and (not flag.is_python_constant() or flag.as_python_constant()):
        raise Unsupported("Attempted to call function marked as skipped",
                          f"{what} with requires_grad=True makes a new autograd leaf",
                          "A graph cannot return a new leaf tensor that requires grad; it is made eagerly.",
                          ("Make the tensor outside the compiled function and pass it in.",))


def _symbolic(value) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


class SymNodeVariable(VariableTracker):
    """An int (or float, bool) that depends on a dynamic size: an fx node and its symbol.

    Arithmetic on it records nodes. Where Python needs the concrete value (a branch,
    `range(n)`, a constant slice bound), reading it asks the ShapeEnv, which records the
    assumption as a guard, so a different value recompiles.
    """

    __slots__ = ("node", "value", "specialized_at")

    def __init__(self, node: torch.fx.Node, value, source=None, specialized_at: list | None = None) -> None:
        super().__init__(source)
        self.node, self.value = node, value
        # The graph's record of where Python made a symbol concrete (for mark_dynamic errors).
        self.specialized_at = specialized_at

    def python_type(self) -> type:
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(self.value)]

    def as_python_constant(self):
        """The concrete value, guarded to stay this value (Python needs it as a constant)."""
        self._refuse_unbacked()
        self._note_specialization()
        return self.python_type()(self.value)

    def bool_value(self, tx) -> bool:
        self._refuse_unbacked()
        if self.python_type() is float:
            # The truth of a float is `s != 0` (a guard that it is not zero), not its value,
            # which bool() of a SymFloat would pin.
            return bool(self.value != 0)
        self._note_specialization()
        return bool(self.value)

    def is_unbacked(self) -> bool:
        """Read from a tensor's data (`.item()`, a nonzero count): no value to guard."""
        return bool(self.value.node.expr.free_symbols) and not self.value.node.has_hint()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        """An attribute or method of a dynamic float (`s.is_integer()`, `s.hex()`) is read from
        its value, which becomes a guarded constant, as a specialised float would give it."""
        if self.python_type() is not float:
            return super().var_getattr(tx, name)
        return ConstantVariable(self.as_python_constant()).var_getattr(tx, name)

    def is_dynamic_float(self) -> bool:
        return isinstance(self.value, torch.SymFloat) and not self.is_unbacked()

    def _refuse_unbacked(self) -> None:
        if self.is_unbacked():
            raise Unsupported("Data-dependent branching", f"the value of {self.node.name}, read from a tensor")

    def _note_specialization(self) -> None:
        if self.specialized_at is not None:
            self.specialized_at.append(self.node.meta.get("stack_trace") or "")

    def __repr__(self) -> str:
        return f"SymNodeVariable({self.node.name}, {self.value})"


def _asks_for_grad(args, kwargs) -> bool:
    """`requires_grad_()`, `requires_grad_(True)`: the argument is a constant True."""
    value = args[0] if args else kwargs.get("requires_grad")
    return len(args) + len(kwargs) <= 1 and (
        value is None or (value.is_python_constant() and value.as_python_constant() is True))


class SizeVariable(VariableTracker):
    """`x.shape` / `x.size()`: a torch.Size of constants and symbolic sizes."""

    __slots__ = ("items",)

    def __init__(self, items: list[VariableTracker], source=None) -> None:
        super().__init__(source)
        self.items = items

    def python_type(self) -> type:
        return torch.Size

    def is_python_constant(self) -> bool:
        return all(item.is_python_constant() for item in self.items)

    def as_python_constant(self):
        return torch.Size(item.as_python_constant() for item in self.items)

    def children(self) -> list[VariableTracker]:
        return list(self.items)

    def getitem(self, tx, index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant()
        return SizeVariable(self.items[key]) if isinstance(key, slice) else self.items[key]

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "numel" and not args and not kwargs:
            if self.is_python_constant():
                return ConstantVariable(self.as_python_constant().numel())
            import operator

            from .builtins import apply_operator

            product: VariableTracker = ConstantVariable(1)
            for item in self.items:
                product = apply_operator(tx, operator.mul, product, item)
            return product
        if name in ("count", "index", "__contains__") and args and not kwargs:
            # tuple's methods, on the sizes' values (a symbolic size is guarded to its value)
            values = tuple(item.as_python_constant() for item in self.items)
            if not args[0].is_python_constant():
                raise Unsupported("Unsupported method call", f"torch.Size.{name} of {args[0]}")
            try:
                return ConstantVariable(getattr(values, name)(*(a.as_python_constant() for a in args)))
            except ValueError as error:
                from .exceptions import raise_observed

                raise_observed(ValueError, str(error))
        raise Unsupported("Unsupported method call", f"torch.Size.{name}")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("numel", "__len__", "__getitem__", "count", "index"):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def reconstruct(self, codegen) -> None:
        if self.source is not None:  # the caller's own object (a size is immutable)
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(torch.Size)
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(tuple, len(self.items))
        codegen.call(1)
