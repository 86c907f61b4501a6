"""Inlining: a call to a user function runs its body in a child translator.

The child shares the parent's OutputGraph (one graph, one guard set) and returns the callee's
return value as a tracker. Everything the callee reads comes either from its arguments (the
caller's trackers, with the caller's sources) or from places the compiled frame can reach:
its globals through `G` (or through the function object when it lives in another module) and
its closure through `__closure__`. So guards and reconstruction never need the callee's frame.
"""

from __future__ import annotations

from .. import config
from ..exc import Unsupported
from ..source import AttrSource, GlobalSource, ItemSource
from ..variables.base import VariableTracker
from ..variables.builder import wrap, wrap_library_value
from ..variables.user_functions import BaseUserFunctionVariable, bind_arguments
from .translator import InstructionTranslator

_NOT_INLINED = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


class InliningInstructionTranslator(InstructionTranslator):
    def __init__(self, parent: InstructionTranslator, fn: BaseUserFunctionVariable,
                 bound: dict[str, VariableTracker]) -> None:
        code = fn.get_code()
        super().__init__(code, {}, fn.get_globals(), parent.f_builtins, parent.output)
        self.parent = parent
        self.fn = fn
        self.root_globals = parent.root_globals
        self.depth = parent.depth + 1
        self.symbolic_locals = bound
        self.cells = fn.closure_boxes(parent)

    def load_global(self, name: str) -> VariableTracker:
        if self.f_globals is self.root_globals:
            return super().load_global(name)
        if name in self.f_globals:
            if self.fn.source is None:
                raise Unsupported("Unsupported value type",
                                  f"global {name!r} of a function from another module, reached without a source")
            return wrap(self, self.f_globals[name], ItemSource(AttrSource(self.fn.source, "__globals__"), name))
        if name in self.f_builtins:
            return wrap_library_value(self.f_builtins[name], None)
        raise Unsupported("Unsupported exception handling", f"name {name!r} is not defined")


def inline_call(parent: InstructionTranslator, fn: BaseUserFunctionVariable,
                args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    code = fn.get_code()
    if code.co_flags & _NOT_INLINED:
        raise Unsupported("Unsupported frame", f"inlining {code.co_qualname}, a generator or coroutine")
    if parent.depth + 1 > config.inline_depth_limit:
        raise Unsupported("Inline depth exceeded", f"calling {code.co_qualname} at depth {parent.depth + 1}")
    bound = bind_arguments(parent, fn, args, kwargs)
    child = InliningInstructionTranslator(parent, fn, bound)
    try:
        return child.run()
    finally:
        # Guards recorded after the call belong to the caller's line again.
        parent.output.set_user_line(parent.code.co_filename, parent.lineno, parent.code.co_name)
