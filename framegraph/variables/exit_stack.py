"""`contextlib.ExitStack` made while tracing: managers and callbacks pushed on it, unwound
last-in first-out when it is left or closed, as contextlib unwinds them.

contextlib's own ExitStack keeps its callbacks in a deque of bound methods and reads the
exception being handled through `sys.exc_info()`; this model keeps the same order and the
same rules: a callback that returns true suppresses the exception in flight (the later ones
see none), one that raises replaces it (its `__context__` is the one it replaced), and the
stack's `__exit__` re-raises what is left. Tracebacks are not modelled (an exit callback
gets None, as a `with` block's `__exit__` does in the trace).
"""

from __future__ import annotations

import contextlib

from ..exc import ObservedException, Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable
from .exceptions import ExceptionVariable, raise_observed

_NONE = ConstantVariable(None)
_METHODS = frozenset({"__enter__", "__exit__", "enter_context", "push", "callback", "pop_all", "close"})


class ExitStackVariable(VariableTracker):
    __slots__ = ("callbacks",)

    def __init__(self) -> None:
        super().__init__()
        # (exit callable, the arguments before the exception details, keyword arguments, takes
        # the exception details): an exit method gets (type, value, traceback), a callback not.
        self.callbacks: list[tuple[VariableTracker, list, dict, bool]] = []

    def python_type(self) -> type:
        return contextlib.ExitStack

    def children(self) -> list[VariableTracker]:
        return [v for fn, args, kwargs, _ in self.callbacks for v in (fn, *args, *kwargs.values())]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _METHODS:
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"ExitStack.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__enter__" and not args and not kwargs:
            return self
        if name == "__exit__" and len(args) == 3 and not kwargs:
            return self.unwind(tx, args[1])
        if name == "close" and not args and not kwargs:
            self.unwind(tx, _NONE)
            return _NONE
        if name == "enter_context" and len(args) == 1 and not kwargs:
            manager = args[0]
            exit_method = _exit_of(tx, manager)
            result = manager.call_method(tx, "__enter__", [], {})
            self.callbacks.append((exit_method, [], {}, True))
            return result
        if name == "push" and len(args) == 1 and not kwargs:
            target = args[0]
            exit_method = _exit_of(tx, target, missing_ok=True)
            self.callbacks.append((exit_method or target, [], {}, True))
            return target
        if name == "callback" and args:
            self.callbacks.append((args[0], list(args[1:]), dict(kwargs), False))
            return args[0]
        if name == "pop_all" and not args and not kwargs:
            moved = ExitStackVariable()
            moved.callbacks, self.callbacks = self.callbacks, []
            return moved
        raise Unsupported("Unsupported method call", f"ExitStack.{name}")

    def unwind(self, tx, exception: VariableTracker) -> VariableTracker:
        """Runs every callback, last pushed first; the result of `__exit__`."""
        received = isinstance(exception, ExceptionVariable)
        suppressed = pending = False
        while self.callbacks:
            fn, args, kwargs, takes_details = self.callbacks.pop()
            details = _details(exception) if takes_details else []
            try:
                if fn.call_function(tx, [*args, *details], kwargs).bool_value(tx) and takes_details:
                    suppressed, pending, exception = True, False, _NONE
            except ObservedException as raised:
                new = raised.exception
                if isinstance(new, ExceptionVariable) and isinstance(exception, ExceptionVariable) \
                        and new is not exception:
                    _link_context(new, exception)
                pending, exception = True, new
        if pending:
            raise ObservedException(exception, reraised=True)
        return ConstantVariable(received and suppressed)

    def reconstruct(self, codegen) -> None:
        raise Unsupported("Unsupported context manager", "an ExitStack made while tracing outlives the graph")


def _exit_of(tx, manager: VariableTracker, missing_ok: bool = False) -> VariableTracker | None:
    """The manager's bound `__exit__` (an AttributeError, as contextlib raises, when it has none)."""
    try:
        return manager.var_getattr(tx, "__exit__")
    except ObservedException as raised:
        if not (isinstance(raised.exception, ExceptionVariable) and issubclass(raised.exception.cls, AttributeError)):
            raise
    if missing_ok:
        return None
    raise_observed(TypeError, f"'{manager.python_type().__qualname__}' object does not support the "
                              "context manager protocol")


def _details(exception: VariableTracker) -> list[VariableTracker]:
    if isinstance(exception, ExceptionVariable):
        return [ConstantVariable(exception.cls), exception, _NONE]
    return [_NONE, _NONE, _NONE]


def _link_context(new: ExceptionVariable, old: ExceptionVariable) -> None:
    """contextlib's _fix_exception_context: the exception a callback raised while `old` was
    in flight gets `old` at the end of its context chain (stopping at a cycle)."""
    link = new
    while True:
        context = link.context
        if context is None or context is old:
            break
        if not isinstance(context, ExceptionVariable):
            return
        link = context
    link.context = old


def make_exit_stack(tx, args, kwargs) -> ExitStackVariable:
    if args or kwargs:
        raise_observed(TypeError, "ExitStack() takes no arguments")
    return ExitStackVariable()
