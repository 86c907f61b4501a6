"""Values known exactly at trace time: Python scalars, strings, dtypes, devices, slices."""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch

from ..exc import Unsupported
from .base import KnownValueVariable, MethodVariable, VariableTracker
from .handled_callables import handled

# Types whose values are immutable and safe to fold and to embed in generated code.
CONSTANT_TYPES: tuple[type, ...] = (int, float, bool, complex, str, bytes, type(None),
                                    type(Ellipsis), type(NotImplemented), range)


# Immutable value types a capability package adds (DTensor's placements): compared by value
# where guarded; their methods are pure functions of the value, folded on constant arguments.
_PACKAGE_CONSTANT_TYPES: tuple[type, ...] = ()


def register_constant_type(kind: type) -> None:
    global _PACKAGE_CONSTANT_TYPES
    if kind not in _PACKAGE_CONSTANT_TYPES:
        _PACKAGE_CONSTANT_TYPES += (kind,)


def is_constant_type(value: Any) -> bool:
    if isinstance(value, CONSTANT_TYPES):
        return True
    if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return True
    if isinstance(value, _PACKAGE_CONSTANT_TYPES):
        return True
    numpy = sys.modules.get("numpy")  # a numpy dtype is immutable too; numpy is not imported for it
    return numpy is not None and isinstance(value, numpy.dtype)


def is_pybind_enum_member(value: Any) -> bool:
    """A member of an enum a C++ extension defines with pybind11 (torch.distributed.ReduceOp.SUM,
    torch.DispatchKey.CPU): immutable, equal by value (pybind11 may hand out a new wrapper for
    one member), and sometimes callable (a RedOpType takes a factor), yet no function."""
    if type(type(value)).__name__ != "pybind11_type":  # first: this is asked of every value wrapped
        return False
    members = getattr(type(value), "__members__", None)
    return isinstance(members, dict) and members.get(getattr(value, "name", None)) == value


# Methods of constants that are pure functions of the value: folding them is exact.
PURE_METHOD_TYPES = (int, float, bool, complex, str, bytes, tuple, frozenset, range, slice)


class ConstantVariable(KnownValueVariable):
    """A value known while tracing. One read from program state (an argument, a global)
    carries its guard unrecorded until the trace uses the value: a value that only passes
    through (handed to a resume function, then dropped) must not force a recompile when it
    changes."""

    __slots__ = ("_pending_guard",)

    def __init__(self, value: Any, source=None, pending_guard: Callable[[], None] | None = None) -> None:
        super().__init__(value, source)
        self._pending_guard = pending_guard

    def _realize(self) -> None:
        guard, self._pending_guard = self._pending_guard, None
        if guard is not None:
            guard()

    def python_type(self) -> type:
        self._realize()
        return type(self.value)

    def as_python_constant(self) -> Any:
        self._realize()
        return self.value

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ..trace_rules import is_user_class

        self._realize()
        if isinstance(self.value, type) and is_user_class(self.value):
            from .classes import class_getattr

            return class_getattr(tx, self, name)
        if isinstance(self.value, type):
            from .user_defined import builtin_class_attribute

            method = builtin_class_attribute(self.value, name, None)  # object.__setattr__, dict.__setitem__...
            if method is not None:
                return method
        try:
            attr = getattr(self.value, name)
        except AttributeError as error:
            raise Unsupported("Unsupported attribute access", f"{self.value!r}.{name}: {error}") from None
        if callable(attr) and not isinstance(attr, type) and not is_pybind_enum_member(attr):
            # A static method a package translates (`DTensor.from_local`), read off its class.
            return handled(attr) or MethodVariable(self, name)
        return ConstantVariable(attr)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        self._realize()
        if name == "join" and isinstance(self.value, (str, bytes)) and len(args) == 1 and not kwargs \
                and not args[0].is_python_constant():
            from .containers import TupleVariable
            from .iterators import unpack

            args = [TupleVariable(unpack(tx, args[0]))]  # what a generator of strings yields, in order
        from .tensor import TensorVariable

        if self.value is torch.Tensor and args and isinstance(args[0], TensorVariable):
            # `torch.Tensor.add(x, y)`: the unbound method, called on a tensor, is x.add(y)
            return args[0].call_method(tx, name, list(args[1:]), dict(kwargs))
        if not all(a.is_python_constant() for a in (*args, *kwargs.values())):
            raise Unsupported("Unsupported method call",
                              f"{type(self.value).__name__}.{name} with non-constant arguments")
        if not (isinstance(self.value, PURE_METHOD_TYPES) or isinstance(self.value, _PACKAGE_CONSTANT_TYPES)):
            raise Unsupported("Unsupported method call", f"{type(self.value).__name__}.{name}")
        method = getattr(self.value, name, None)
        if method is None:
            from .exceptions import raise_observed

            raise_observed(AttributeError, f"{type(self.value).__name__!r} object has no attribute {name!r}")
        try:
            result = method(*[a.as_python_constant() for a in args],
                            **{k: v.as_python_constant() for k, v in kwargs.items()})
        except (ValueError, TypeError, IndexError, KeyError, OverflowError, ZeroDivisionError) as error:
            from .exceptions import raise_observed

            raise_observed(type(error), *error.args)  # the program's own error, which it may catch
        return as_tracker(result)  # a list (str.split) is a new list of its own

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        self._realize()
        if self.value is super:
            from .classes import make_super

            return make_super(tx, args)
        if isinstance(self.value, type):
            from .ctx_managers import make_context_manager

            manager = make_context_manager(tx, self.value, args, kwargs)
            if manager is not None:
                return manager
            from .user_objects import construct

            return construct(tx, self, args, kwargs)
        return super().call_function(tx, args, kwargs)

    def reconstruct(self, codegen) -> None:
        # From the source when there is one, so the caller gets its very object back.
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            codegen.load_const(self.value)

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"


def fold(fn, *args: VariableTracker) -> ConstantVariable:
    """Applies `fn` to constant arguments at trace time.

    If that raises, the user's program raises there too: the same exception, for the
    program's handlers to catch (one that escapes the frame makes it run eagerly, so the user
    sees the real exception from the real line). An error the trace cannot stand in for is
    a graph break there.
    """
    memo: dict[int, tuple[VariableTracker, Any]] = {}
    try:
        result = fn(*(_concrete(a, memo) for a in args))
    except _CATCHABLE as error:
        # The program's own error, which its try blocks may catch (uncaught, the
        # instruction runs eagerly and raises it from the real line).
        from .exceptions import raise_observed

        raise_observed(type(error), *error.args)
    except Exception as error:
        from .exceptions import observed_from

        observed = observed_from(error)
        if observed is not None:
            raise observed from None
        raise Unsupported("Unsupported exception handling",
                          f"{getattr(fn, '__name__', fn)} raised {type(error).__name__}: {error}") from None
    return as_tracker(result, {id(value): tracker for tracker, value in memo.values()})


_CATCHABLE = (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError, KeyError)


def _concrete(tracker: VariableTracker, memo: dict[int, tuple[VariableTracker, Any]]) -> Any:
    """The real value of a constant tracker. A list or dict the program holds twice (`[row] * 2`)
    becomes one object held twice, so that what is folded from it aliases as eagerly."""
    from .containers import ListVariable, TupleVariable
    from .dicts import DictVariable

    kind = type(tracker)
    if kind is TupleVariable:
        return tuple(_concrete(item, memo) for item in tracker.items)
    if kind is not ListVariable and kind is not DictVariable:
        return tracker.as_python_constant()
    known = memo.get(id(tracker))
    if known is not None:
        return known[1]
    value: Any = [] if kind is ListVariable else {}
    memo[id(tracker)] = (tracker, value)
    if kind is ListVariable:
        value.extend(_concrete(item, memo) for item in tracker.items)
    else:
        value.update((key, _concrete(item, memo)) for key, item in tracker.items.items())
    return value


def _holds_containers(value: tuple) -> bool:
    return any(type(item) in (list, dict, set) or type(item) is tuple and _holds_containers(item) for item in value)


def as_tracker(value: Any, known: dict[int, VariableTracker] | None = None) -> VariableTracker:
    """A value computed at trace time: a new list, dict or set is a container of its own
    (mutable, with an identity), anything else a constant. `known` maps the ids of real
    containers to their trackers: a container met again (an argument returned, a row repeated)
    is the same tracker, as it is the same object eagerly."""
    from .containers import DictVariable, ListVariable, TupleVariable
    from .dicts import set_of

    if type(value) is not list and type(value) is not dict:
        if type(value) is set:
            return set_of(value)
        if type(value) is tuple and _holds_containers(value):  # a tuple of lists is not a constant
            known = {} if known is None else known
            return TupleVariable([as_tracker(item, known) for item in value])
        return ConstantVariable(value)
    known = {} if known is None else known
    tracker = known.get(id(value))
    if tracker is not None:
        return tracker
    if type(value) is list:
        tracker = known[id(value)] = ListVariable([])
        tracker.items = [as_tracker(item, known) for item in value]
    else:
        tracker = known[id(value)] = DictVariable({})
        tracker.items = {key: as_tracker(item, known) for key, item in value.items()}
    return tracker
