"""Resume functions: "continue this function from instruction N", written as bytecode.

After a graph break the replacement code runs the breaking instruction eagerly and then calls
a resume function. Its arguments are what is alive at that point: the values on the stack
(`___stack0`, `___stack1`, ...) and the live locals. Its prologue puts the stack back (a NULL
where the stack held one; NULLs cannot be passed as arguments) and jumps to the instruction
after the break; the rest of its body is the original function's, so loops that jump back
over the break point still work. The hook then compiles the resume function like any frame.

Resume functions are generated once per break point: `ContinueExecutionCache` keys them by a
frozen `ResumeSpec`, so every later trip through the same break reuses the same code object,
and with it that code object's cache entries. A break inside a resume function maps back to
the original function, so a break in a loop resumes through one function, not a new one per
iteration.
"""

from __future__ import annotations

import dataclasses
import types

from .bytecode import CodeMeta, Instruction, create_instruction, prefix_end, transform_code_object
from .codegen import verify_generated
from .variables.base import NEVER_BOUND

CO_VARARGS, CO_VARKEYWORDS, CO_OPTIMIZED, CO_NEWLOCALS = 0x04, 0x08, 0x01, 0x02


@dataclasses.dataclass(frozen=True)
class ResumeSpec:
    code: types.CodeType          # the original function's code (never a resume function's)
    target: int                   # index, in decode(code), of the first instruction to run
    stack_nulls: tuple[bool, ...]  # the stack from the bottom: True where it holds a NULL
    live: tuple[str, ...]         # live locals, passed after the stack values
    # True where the slot is an iterator, passed as a list of what is left (a list can be
    # guarded and traced) and re-made with iter(); an iterator whose rest cannot be listed
    # without running code (a map, a generator) is passed itself, which iter() returns.
    stack_iters: tuple[bool, ...] = ()
    # The original's first argument when zero-argument super() may read it: on 3.11 super()
    # takes it from the frame's first slot, not from any instruction, so it comes first.
    first: str | None = None
    # True where the NULL is a local an inlined comprehension saved unbound (3.12+): pushed
    # as LOAD_FAST_AND_CLEAR pushed it, by clearing a local never bound, as it may be stored back.
    stack_unbound: tuple[bool, ...] = ()

    @property
    def stack_argnames(self) -> tuple[str, ...]:
        return tuple(f"___stack{i}" for i, null in enumerate(self.stack_nulls) if not null)

    @property
    def live_args(self) -> tuple[str, ...]:
        """The live locals passed after the stack values."""
        return tuple(name for name in self.live if name != self.first)

    @property
    def argnames(self) -> tuple[str, ...]:
        first = (self.first,) if self.first is not None else ()
        return first + self.stack_argnames + self.live_args


@dataclasses.dataclass(frozen=True)
class ResumeOrigin:
    """How a resume function's instructions map back to its original function's."""

    code: types.CodeType
    body_start: int       # index of the first original body instruction in the resume code
    original_start: int   # index of that same instruction in the original code


class ContinueExecutionCache:
    def __init__(self) -> None:
        self._codes: dict[ResumeSpec, types.CodeType] = {}
        self._origins: dict[int, tuple[types.CodeType, ResumeOrigin]] = {}
        self._names: dict[ResumeSpec, str] = {}
        self._adopted: dict[str, types.CodeType] = {}  # global name -> code made by another process

    def clear(self) -> None:
        self._codes.clear()
        self._origins.clear()
        self._names.clear()
        self._adopted.clear()

    def origin(self, code: types.CodeType) -> ResumeOrigin | None:
        found = self._origins.get(id(code))
        return found[1] if found is not None and found[0] is code else None

    def original_index(self, code: types.CodeType, index: int) -> tuple[types.CodeType, int]:
        """Maps an instruction index of `code` (maybe a resume function) to the original."""
        origin = self.origin(code)
        if origin is None:
            return code, index
        return origin.code, origin.original_start + index - origin.body_start

    def get(self, spec: ResumeSpec) -> types.CodeType:
        code = self._codes.get(spec)
        if code is None:
            code, origin = _generate(spec)
            verify_generated(code)
            self._codes[spec] = code
            self._origins[id(code)] = (code, origin)
        return code

    def by_global_name(self, name: str) -> types.CodeType | None:
        """The resume function the replacement code calls by `name`, if it is still cached."""
        spec = next((spec for spec, known in self._names.items() if known == name), None)
        return self._codes.get(spec) if spec is not None else self._adopted.get(name)

    def adopt(self, code: types.CodeType, origin: ResumeOrigin, offset: int) -> str:
        """Takes in a resume function another process generated (the persistent cache loads
        one with the replacement code that calls it): it is known by its origin, as one made
        here, and gets a global name no other resume function of this process has."""
        self._origins[id(code)] = (code, origin)
        name = self._fresh_name(offset)
        self._adopted[name] = code
        return name

    def global_name(self, spec: ResumeSpec, offset: int) -> str:
        """`__framegraph_resume_at_<offset>_<n>`: the global the replacement code calls it by
        (torch.compile installs its own as `__resume_at_<offset>_<n>` in the same globals when
        both compile one function; the prefix keeps either from calling the other's)."""
        name = self._names.get(spec)
        if name is None:
            name = self._names[spec] = self._fresh_name(offset)
        return name

    def _fresh_name(self, offset: int) -> str:
        return f"__framegraph_resume_at_{offset}_{len(self._names) + len(self._adopted) + 1}"


CACHE = ContinueExecutionCache()


def label(code: types.CodeType) -> str:
    """The name diagnostics give a code object: `resume_in_f` for a resume function made from
    `f`, which carries `f`'s own name."""
    return f"resume_in_{code.co_name}" if CACHE.origin(code) is not None else code.co_name


def _generate(spec: ResumeSpec) -> tuple[types.CodeType, ResumeOrigin]:
    original = spec.code
    target_line: list[int] = []

    def transform(instructions: list[Instruction], meta: CodeMeta) -> None:
        start = prefix_end(instructions)
        body = instructions[start:]
        target = instructions[spec.target]
        prologue = [create_instruction("COPY_FREE_VARS", arg=len(original.co_freevars))] if original.co_freevars else []
        prologue += [create_instruction("MAKE_CELL", argval=name) for name in original.co_cellvars]
        prologue.append(create_instruction("RESUME", arg=0))
        stack_names = iter(spec.stack_argnames)
        iters = spec.stack_iters or (False,) * len(spec.stack_nulls)
        unbound = spec.stack_unbound or (False,) * len(spec.stack_nulls)
        for null, is_iter, cleared in zip(spec.stack_nulls, iters, unbound):
            if cleared:
                prologue.append(create_instruction("LOAD_FAST_AND_CLEAR", argval=NEVER_BOUND))
            else:
                prologue.append(create_instruction("PUSH_NULL") if null
                                else create_instruction("LOAD_FAST", argval=next(stack_names)))
            if is_iter:
                prologue.append(create_instruction("GET_ITER"))
        prologue.append(create_instruction("JUMP", target=target))
        for inst in prologue:
            inst.positions = target.positions
        target_line.append(target.positions.lineno or original.co_firstlineno)
        instructions[:] = prologue + body
        argnames = spec.argnames
        meta.co_varnames = argnames + tuple(n for n in original.co_varnames if n not in argnames)
        meta.co_varnames += (NEVER_BOUND,) if any(spec.stack_unbound) else ()
        meta.co_argcount = len(argnames)
        meta.co_posonlyargcount = meta.co_kwonlyargcount = 0
        meta.co_flags = (original.co_flags & ~(CO_VARARGS | CO_VARKEYWORDS)) | CO_OPTIMIZED | CO_NEWLOCALS
        # The original's names: a traceback, a log record or `f_code.co_name` read in the code
        # after a break names the function the program wrote (diagnostics use `label`).
        meta.co_name = original.co_name
        meta.co_qualname = original.co_qualname
        meta.co_firstlineno = target_line[0]
        origin.append(ResumeOrigin(original, len(prologue), start))

    origin: list[ResumeOrigin] = []
    code = transform_code_object(original, transform)
    return code, origin[0]

