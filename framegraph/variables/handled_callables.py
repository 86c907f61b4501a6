"""Callables whose calls a capability package outside the core translates
(framegraph.higher_order: torch.cond, checkpoint...).

The package registers one handler per function; the translator finds it here when it meets
the function, and never imports the package. A handler takes (tx, args, kwargs) and returns
the call's result, or raises Unsupported (the call then runs eagerly at a graph break).
"""

from __future__ import annotations

from typing import Any, Callable

from .base import KnownValueVariable, VariableTracker

Handler = Callable[..., VariableTracker]

# id(function) -> (function, handler); the function is held, so its id stays its own.
_HANDLERS: dict[int, tuple[Any, Handler]] = {}


def register(fn: Any, handler: Handler) -> None:
    _HANDLERS[id(fn)] = (fn, handler)


_EAGER: dict[int, Any] = {}  # id(function) -> the function wrapped to run with the hook off


def _eager(fn: Any) -> Any:
    """`fn` run with framegraph's hook off; traced as `fn` itself if met again (a resume
    function gets it from the frame that broke)."""
    from ..eval_frame import disable

    if id(fn) not in _EAGER:
        wrapper = _EAGER[id(fn)] = disable(fn)
        _EAGER[id(wrapper)] = wrapper
        register(wrapper, _HANDLERS[id(fn)][1])
    return _EAGER[id(fn)]


def handled(value: Any, source=None) -> VariableTracker | None:
    """The tracker for `value` if a package handles its calls."""
    found = _HANDLERS.get(id(value))
    if found is None or found[0] is not value:
        return None
    return HandledCallableVariable(value, source, found[1])


class HandledCallableVariable(KnownValueVariable):
    __slots__ = ("handler",)

    def __init__(self, value: Any, source, handler: Handler) -> None:
        super().__init__(value, source)
        self.handler = handler

    def call_function(self, tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.handler(tx, list(args), dict(kwargs))

    def reconstruct(self, codegen) -> None:
        # Rebuilt for a graph break, the operator runs eagerly with framegraph's hook off:
        # torch.cond and while_loop then compile their functions with torch.compile, whose
        # frame hook must not run under ours.
        codegen.load_const(_eager(self.value))

    def __repr__(self) -> str:
        return f"HandledCallableVariable({getattr(self.value, '__qualname__', self.value)})"
