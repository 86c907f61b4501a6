"""Inlining: a call to a user function runs its body in a child translator.

The child shares the parent's OutputGraph (one graph, one guard set) and returns the callee's
return value as a tracker. Everything the callee reads comes either from its arguments (the
caller's trackers, with the caller's sources) or from places the compiled frame can reach:
its globals through `G` (or through the function object when it lives in another module) and
its closure through `__closure__`. So guards and reconstruction never need the callee's frame.
"""

from __future__ import annotations

import sys

from .. import config
from ..exc import Unsupported
from ..source import AttrSource, ItemSource, Source
from ..variables.base import VariableTracker
from ..variables.builder import wrap, wrap_library_value
from ..variables.user_functions import BaseUserFunctionVariable, bind_arguments
from .translator import InstructionTranslator

CO_GENERATOR = 0x20
_NOT_INLINED = 0x80 | 0x100 | 0x200  # coroutine, iterable coroutine, async generator


class InliningInstructionTranslator(InstructionTranslator):
    def __init__(self, parent: InstructionTranslator, fn: BaseUserFunctionVariable,
                 bound: dict[str, VariableTracker]) -> None:
        code = fn.get_code()
        super().__init__(code, {}, fn.get_globals(), parent.f_builtins, parent.output)
        self.parent = parent
        self.fn = fn
        self.root_globals = parent.root_globals
        self.depth = parent.depth + 1
        self.is_root = False
        self.exception_stack = list(parent.exception_stack)
        self.symbolic_locals = bound
        self.cells = fn.closure_boxes(parent)
        if fn.source is not None and self.f_globals is not self.root_globals:
            # A function made inside this one (a comprehension, a closure) reads the same
            # globals, through the first function of the module that had a source.
            parent.output.globals_sources.setdefault(id(self.f_globals), AttrSource(fn.source, "__globals__"))

    def load_global(self, name: str) -> VariableTracker:
        if self.f_globals is self.root_globals:
            return super().load_global(name)
        if name in self.f_globals:
            # Every function of that module sees the same dict entry: read and guard it once.
            key = (id(self.f_globals), name)
            known = self.output.foreign_globals.get(key)
            if known is not None:
                return known
            value = wrap(self, self.f_globals[name], self._foreign_global_source(name))
            self.output.foreign_globals[key] = value
            return value
        if name in self.f_builtins:
            return wrap_library_value(self.f_builtins[name], None)
        raise Unsupported("Unsupported exception handling", f"name {name!r} is not defined")


    def _foreign_global_source(self, name: str) -> Source:
        """Where the compiled frame finds a global of this function's module: through the
        module itself (`sys.modules[module].name`, as imports reach modules), or through the
        function's `__globals__` when they are not a module's."""
        from .handlers.imports import sys_modules_source

        module_name = self.f_globals.get("__name__")
        module = sys.modules.get(module_name) if isinstance(module_name, str) else None
        if module is not None and getattr(module, "__dict__", None) is self.f_globals:
            return AttrSource(sys_modules_source(self, module_name), name)
        # Globals that are no module's: through the first function with a source that read
        # them (a comprehension or closure made in it has none of its own).
        globals_source = self.output.globals_sources.get(id(self.f_globals))
        if globals_source is None:
            raise Unsupported("Unsupported value type",
                              f"global {name!r} of a function from another module, reached without a source")
        return ItemSource(globals_source, name)


def inline_call(parent: InstructionTranslator, fn: BaseUserFunctionVariable,
                args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    code = fn.get_code()
    if code.co_flags & _NOT_INLINED:
        raise Unsupported("Unsupported frame", f"inlining {code.co_qualname}, a coroutine")
    if parent.depth + 1 > config.inline_depth_limit:
        raise Unsupported("Inline depth exceeded", f"calling {code.co_qualname} at depth {parent.depth + 1}")
    bound = bind_arguments(parent, fn, args, kwargs)
    if code.co_flags & CO_GENERATOR:
        from ..variables.generators import GeneratorVariable
        from .generators import GeneratorTranslator

        return GeneratorVariable(fn, bound, lambda: GeneratorTranslator(parent, fn, dict(bound)))
    child = InliningInstructionTranslator(parent, fn, bound)
    try:
        return child.run()
    finally:
        # Guards recorded after the call belong to the caller's line again.
        parent.output.set_user_line(parent.code.co_filename, parent.lineno, parent.code.co_name)
