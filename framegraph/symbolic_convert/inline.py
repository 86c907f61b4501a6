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
from ..variables.constant import ConstantVariable
from ..variables.iterators import GeneratorVariable
from ..variables.user_functions import BaseUserFunctionVariable, bind_arguments
from .translator import InstructionTranslator

CO_GENERATOR = 0x20
_NOT_INLINED = 0x80 | 0x100 | 0x200  # coroutine, iterable coroutine, async generator
# A generator is run to completion when it is first iterated; one that yields more than this
# is probably infinite (`while True: yield`), and the loop must not hang the compiler.
MAX_GENERATOR_ITEMS = 10_000


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
            globals_source = self.output.globals_sources.get(id(self.f_globals))
            if globals_source is None:
                raise Unsupported("Unsupported value type",
                                  f"global {name!r} of a function from another module, reached without a source")
            value = wrap(self, self.f_globals[name], ItemSource(globals_source, name))
            self.output.foreign_globals[key] = value
            return value
        if name in self.f_builtins:
            return wrap_library_value(self.f_builtins[name], None)
        raise Unsupported("Unsupported exception handling", f"name {name!r} is not defined")


class GeneratorTranslator(InliningInstructionTranslator):
    """Runs a generator body to completion, collecting what it yields.

    Consumers see the same items in the same order. The difference from lazy iteration is
    only when the body's own effects interleave with the consumer's, which bodies made of
    tensor work and pure Python (generator expressions, helper generators) do not notice.
    """

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.yielded: list[VariableTracker] = []

    def on_return_generator(self) -> None:
        self.push(ConstantVariable(None))  # what the first resumption sends in

    def on_yield(self, value: VariableTracker) -> None:
        if len(self.yielded) >= MAX_GENERATOR_ITEMS:
            raise Unsupported("Unsupported frame",
                              f"generator {self.code.co_qualname} yielded over {MAX_GENERATOR_ITEMS} items")
        self.yielded.append(value)
        self.push(ConstantVariable(None))  # the value of the yield expression: next() sends None


def inline_call(parent: InstructionTranslator, fn: BaseUserFunctionVariable,
                args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    code = fn.get_code()
    if code.co_flags & _NOT_INLINED:
        raise Unsupported("Unsupported frame", f"inlining {code.co_qualname}, a coroutine")
    if parent.depth + 1 > config.inline_depth_limit:
        raise Unsupported("Inline depth exceeded", f"calling {code.co_qualname} at depth {parent.depth + 1}")
    bound = bind_arguments(parent, fn, args, kwargs)
    if code.co_flags & CO_GENERATOR:
        return GeneratorVariable(lambda: _run_generator(parent, fn, bound))
    child = InliningInstructionTranslator(parent, fn, bound)
    try:
        return child.run()
    finally:
        # Guards recorded after the call belong to the caller's line again.
        parent.output.set_user_line(parent.code.co_filename, parent.lineno, parent.code.co_name)


def _run_generator(parent: InstructionTranslator, fn: BaseUserFunctionVariable,
                   bound: dict[str, VariableTracker]) -> list[VariableTracker]:
    child = GeneratorTranslator(parent, fn, bound)
    try:
        child.run()
    finally:
        parent.output.set_user_line(parent.code.co_filename, parent.lineno, parent.code.co_name)
    return child.yielded
