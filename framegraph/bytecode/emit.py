"""Instruction sequences for common operations, correct for the running version.

Codegen builds bytecode only through these helpers (and `create_instruction`);
each returns a fresh list of normal-form instructions for `assemble`. The stack
comments use the Python-level view: the rightmost item is the top.
"""

from __future__ import annotations

from typing import Any

from . import versions
from .instruction import Instruction, create_instruction


def create_push_null_pair(load_callable: list[Instruction]) -> list[Instruction]:
    """Push a callable together with the NULL a plain call needs, in this
    version's order ([NULL, callable] on 3.11/3.12, [callable, NULL] on 3.13).
    The one place that knows where the NULL goes."""
    null = create_instruction("PUSH_NULL")
    return [*load_callable, null] if versions.NULL_AFTER_CALLABLE else [null, *load_callable]


def create_load_global(name: str, push_null: bool) -> list[Instruction]:
    load = [create_instruction("LOAD_GLOBAL", argval=name)]
    return create_push_null_pair(load) if push_null else load


def create_load_attr(name: str) -> list[Instruction]:
    """obj -> obj.name"""
    return [create_instruction("LOAD_ATTR", argval=name)]


def create_load_method(name: str) -> list[Instruction]:
    """obj -> the pair `create_call` expects for obj.name(...)."""
    return [create_instruction("LOAD_METHOD", argval=name)]


def create_call(nargs: int, kw_names: tuple[str, ...] = ()) -> list[Instruction]:
    """callable pair, nargs arguments (the last len(kw_names) are keywords) -> result"""
    if not kw_names:
        return [create_instruction("CALL", arg=nargs)]
    if versions.KEYWORDS_VIA_CALL_KW:
        return [create_instruction("LOAD_CONST", argval=tuple(kw_names)),
                create_instruction("CALL_KW", arg=nargs)]
    return [create_instruction("KW_NAMES", argval=tuple(kw_names)),
            create_instruction("CALL", arg=nargs)]


def create_make_function(code: Any, flags: int = 0) -> list[Instruction]:
    """[defaults] [kwdefaults] [annotations] [closure] -> a function of `code` with the
    frame's globals; `flags` says which of those are on the stack (1, 2, 4, 8), as
    MAKE_FUNCTION's oparg did before 3.13."""
    load = create_instruction("LOAD_CONST", argval=code)
    if not versions.MAKE_FUNCTION_SETS_ATTRIBUTES:
        return [load, create_instruction("MAKE_FUNCTION", arg=flags)]
    attributes = [create_instruction("SET_FUNCTION_ATTRIBUTE", arg=bit) for bit in (8, 4, 2, 1) if flags & bit]
    return [load, create_instruction("MAKE_FUNCTION"), *attributes]


def create_make_closure(code: Any) -> list[Instruction]:
    """closure tuple -> a function of `code` with that closure and the frame's globals"""
    return create_make_function(code, 8)


def create_to_bool() -> list[Instruction]:
    """x -> bool(x) where the version's branches need an exact bool (3.13); else nothing."""
    return [create_instruction("TO_BOOL")] if versions.HAS_TO_BOOL else []


def create_jump(target: Instruction) -> list[Instruction]:
    return [create_instruction("JUMP", target=target)]


def create_jump_if(target: Instruction, when: bool) -> list[Instruction]:
    """x -> (jump to target if bool(x) is `when`); any truthy value works."""
    opname = "POP_JUMP_IF_TRUE" if when else "POP_JUMP_IF_FALSE"
    return [*create_to_bool(), create_instruction(opname, target=target)]


def create_build_tuple(n: int) -> list[Instruction]:
    return [create_instruction("BUILD_TUPLE", arg=n)]


def create_unpack_sequence(n: int) -> list[Instruction]:
    """seq -> seq[n-1], ..., seq[0] (seq[0] on top)"""
    return [create_instruction("UNPACK_SEQUENCE", arg=n)]


def create_swap(n: int) -> list[Instruction]:
    """Exchange the top with the n-th item from the top."""
    return [create_instruction("SWAP", arg=n)] if n > 1 else []


def create_rot_n(n: int) -> list[Instruction]:
    """a1, ..., an-1, an -> an, a1, ..., an-1 (the old ROT_N)."""
    return [create_instruction("SWAP", arg=i) for i in range(n, 1, -1)]


def create_dup_top() -> list[Instruction]:
    return [create_instruction("COPY", arg=1)]


def create_load_unbound_local(name: str) -> list[Instruction]:
    """-> (raises UnboundLocalError for the empty local `name`, as reading it does).
    3.12+ has a checking load; 3.11's LOAD_FAST checks, but generated code must not read a
    slot it knows to be empty (the verifier's rule), so it deletes the slot again, which
    raises the same error, and pushes a placeholder the stack depth expects."""
    if versions.LOAD_FAST_CHECKS_UNBOUND:
        return [create_instruction("DELETE_FAST", argval=name), create_instruction("LOAD_CONST", argval=None)]
    return [create_instruction("LOAD_FAST_CHECK", argval=name)]


def create_load_const(value: Any) -> list[Instruction]:
    return [create_instruction("LOAD_CONST", argval=value)]


def create_return_value() -> list[Instruction]:
    return [create_instruction("RETURN_VALUE")]
