"""Every difference between the CPython 3.11, 3.12 and 3.13 bytecodes, as data.

The rest of the toolkit reads the tables and flags defined here and never looks
at ``sys.version_info``. The facts behind them are collected, with sources, in
``/work/shared/notes/bytecode-versions.md``.

Vocabulary used by the tables:

* *raw* opnames are those that can appear in ``co_code`` of this interpreter;
* *normal* opnames (the "normal form", see ``decode``) are what decoded
  instruction lists contain. Most are raw opnames; the others are pseudo-ops
  such as ``JUMP`` or ``LOAD_METHOD`` that ``assemble`` lowers to raw ones.
"""

from __future__ import annotations

import dis
import opcode
import sys
from collections.abc import Callable

VERSION: tuple[int, int] = sys.version_info[:2]
if VERSION not in ((3, 11), (3, 12), (3, 13)):
    raise ImportError(f"framegraph.bytecode supports CPython 3.11 to 3.13, not {sys.version}")
PY311 = VERSION == (3, 11)
PY312 = VERSION == (3, 12)
PY313 = VERSION == (3, 13)

# Internal or instrumentation opcodes: the compiler never emits them, and some
# abort the process when found in co_code (ENTER_EXECUTOR).
_NEVER_COMPILED = frozenset({"ENTER_EXECUTOR", "RESERVED", "INTERPRETER_EXIT"})


def _raw_opmap() -> dict[str, int]:
    return {
        name: op
        for name, op in dis.opmap.items()
        if op < 256 and not name.startswith("INSTRUMENTED_") and name not in _NEVER_COMPILED
    }


RAW_OPMAP: dict[str, int] = _raw_opmap()
RAW_OPNAME: dict[int, str] = {op: name for name, op in RAW_OPMAP.items()}


def _has_arg() -> frozenset[str]:
    # 3.11 has no `hasarg`; on 3.13 HAVE_ARGUMENT misclassifies WITH_EXCEPT_START.
    if hasattr(opcode, "hasarg"):
        return frozenset(RAW_OPNAME[op] for op in opcode.hasarg if op in RAW_OPNAME)
    return frozenset(name for name, op in RAW_OPMAP.items() if op >= opcode.HAVE_ARGUMENT)


def _cache_entries() -> dict[str, int]:
    table = opcode._inline_cache_entries  # list by opcode (3.11/3.12), dict by name (3.13)
    if isinstance(table, dict):
        return {name: table.get(name, 0) for name in RAW_OPMAP}
    return {name: table[op] for name, op in RAW_OPMAP.items()}


def _names(ops: list[int]) -> frozenset[str]:
    return frozenset(dis.opname[op] for op in ops if dis.opname[op] in dis.opmap)


HAS_ARG: frozenset[str] = _has_arg()
CACHE_ENTRIES: dict[str, int] = _cache_entries()
RAW_JUMPS: frozenset[str] = _names(opcode.hasjrel) & RAW_OPMAP.keys()
RAW_BACKWARD_JUMPS: frozenset[str] = frozenset(n for n in RAW_JUMPS if "BACKWARD" in n)

# --- Superinstructions (3.13): one raw instruction, two normal ones. -------------
SUPERINSTRUCTIONS: dict[str, tuple[str, str]] = (
    {
        "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
        "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
        "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
    }
    if PY313
    else {}
)

# --- Jumps: normal name -> (raw forward name, raw backward name or None). ----------
_CONDITIONS = ("TRUE", "FALSE", "NONE", "NOT_NONE")
if PY311:
    _COND_JUMPS = {
        f"POP_JUMP_IF_{c}": (f"POP_JUMP_FORWARD_IF_{c}", f"POP_JUMP_BACKWARD_IF_{c}")
        for c in _CONDITIONS
    }
    _FORWARD_ONLY = ("FOR_ITER", "SEND", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP")
else:
    # 3.12+ has no backward conditional jumps; assemble skips over a JUMP_BACKWARD.
    _COND_JUMPS = {f"POP_JUMP_IF_{c}": (f"POP_JUMP_IF_{c}", None) for c in _CONDITIONS}
    _FORWARD_ONLY = ("FOR_ITER", "SEND")

JUMPS: dict[str, tuple[str, str | None]] = {
    "JUMP": ("JUMP_FORWARD", "JUMP_BACKWARD"),
    "JUMP_NO_INTERRUPT": ("JUMP_FORWARD", "JUMP_BACKWARD_NO_INTERRUPT"),
    **_COND_JUMPS,
    **{name: (name, None) for name in _FORWARD_ONLY},
}
RAW_TO_NORMAL_JUMP: dict[str, str] = {
    raw: name for name, pair in JUMPS.items() for raw in pair if raw is not None
}
RAW_TO_NORMAL_JUMP["JUMP_FORWARD"] = "JUMP"  # JUMP_NO_INTERRUPT also lowers forward to it
assert RAW_TO_NORMAL_JUMP.keys() == RAW_JUMPS, RAW_JUMPS ^ RAW_TO_NORMAL_JUMP.keys()

# The units that an exhausted FOR_ITER skips at its target (3.12 jumps past END_FOR,
# 3.13 past END_FOR; POP_TOP), so that layout is fixed.
FOR_ITER_EXIT: tuple[str, ...] = () if PY311 else ("END_FOR", "POP_TOP") if PY313 else ("END_FOR",)

# --- Name operands: normal name -> (raw name, shift of the co_names index, low bits).
NAME_ENCODINGS: dict[str, tuple[str, int, int]] = {"LOAD_GLOBAL": ("LOAD_GLOBAL", 1, 0)}
if PY311:
    NAME_ENCODINGS["LOAD_METHOD"] = ("LOAD_METHOD", 0, 0)
else:
    NAME_ENCODINGS.update(
        LOAD_ATTR=("LOAD_ATTR", 1, 0),
        LOAD_METHOD=("LOAD_ATTR", 1, 1),
        LOAD_ZERO_SUPER_ATTR=("LOAD_SUPER_ATTR", 2, 0),
        LOAD_ZERO_SUPER_METHOD=("LOAD_SUPER_ATTR", 2, 1),
        LOAD_SUPER_ATTR=("LOAD_SUPER_ATTR", 2, 2),
        LOAD_SUPER_METHOD=("LOAD_SUPER_ATTR", 2, 3),
    )
NAME_DECODINGS: dict[tuple[str, int], str] = {
    (raw, bits): name for name, (raw, _, bits) in NAME_ENCODINGS.items()
}
NAME_SHIFTS: dict[str, int] = {raw: shift for raw, shift, _ in NAME_ENCODINGS.values()}

# LOAD_GLOBAL's bit 0 pushes a NULL: below the global on 3.11/3.12, above on 3.13.
# The same order holds for every [callable, NULL] pair a call consumes.
NULL_AFTER_CALLABLE: bool = PY313

# --- Operand encodings ---------------------------------------------------------
# COMPARE_OP: 3.11 `cmp`; 3.12 `cmp<<4 | mask`; 3.13 `cmp<<5 | 16*to_bool | mask`.
COMPARE_SHIFT: int = {(3, 11): 0, (3, 12): 4, (3, 13): 5}[VERSION]
COMPARE_MASKS: dict[str, int] = (
    {} if PY311 else {"<": 2, "<=": 10, "==": 8, "!=": 7, ">": 4, ">=": 12}
)
COMPARE_TO_BOOL_BIT: int = 16 if PY313 else 0

HAS_PRECALL: bool = PY311
# 3.13's MAKE_FUNCTION takes no flags; each attribute is set by SET_FUNCTION_ATTRIBUTE.
MAKE_FUNCTION_SETS_ATTRIBUTES: bool = PY313
HAS_TO_BOOL: bool = PY313
KEYWORDS_VIA_CALL_KW: bool = PY313  # else KW_NAMES directly before CALL
# 3.13 loads closure cells with LOAD_FAST; LOAD_CLOSURE survives only as a pseudo-op.
RAW_ALIASES: dict[str, str] = {"LOAD_CLOSURE": "LOAD_FAST"} if PY313 else {}
# 3.13 sizes the frame for at least one stack slot.
MIN_STACKSIZE: int = 1 if PY313 else 0
# 3.11's LOAD_FAST raises UnboundLocalError on an empty slot, so its compiler emits it for
# locals that may be unbound; 3.12+ reads the slot unchecked (an empty one crashes) and the
# compiler emits LOAD_FAST_CHECK wherever a local may be unbound.
LOAD_FAST_CHECKS_UNBOUND: bool = PY311

# PEP 709 (3.12+): a comprehension runs inline in its function (3.11: a frame of its own) and
# borrows the locals it binds, saved on the stack by LOAD_FAST_AND_CLEAR (a NULL when
# unbound). The handler covering it puts them back and re-raises: SWAP 2; POP_TOP; SWAP n;
# then n - 1 STORE_FASTs; RERAISE. COMPREHENSION_CLEANUP_HEAD is its first three.
INLINED_COMPREHENSIONS: bool = not PY311
COMPREHENSION_CLEANUP_HEAD: tuple[str, ...] = ("SWAP", "POP_TOP", "SWAP") if INLINED_COMPREHENSIONS else ()

# Pairs of normal instructions that must stay adjacent: the interpreter reads the
# second through the first (KW_NAMES, 3.11 gen.throw reading SEND's oparg, the
# generator's "am I in yield from" test on the RESUME after YIELD_VALUE, FOR_ITER
# skipping END_FOR; POP_TOP by a fixed count).
GLUED_PAIRS: frozenset[tuple[str, str]] = frozenset(
    {("SEND", "YIELD_VALUE"), ("YIELD_VALUE", "RESUME"), ("RETURN_GENERATOR", "POP_TOP")}
    | ({("KW_NAMES", "CALL")} if not KEYWORDS_VIA_CALL_KW else set())
    | ({("END_FOR", "POP_TOP")} if PY313 else set())
)

# 3.11 `gen.throw()` into a generator suspended in `yield from`/`await` whose
# delegate raises: `_gen_throw` (Objects/genobject.c) moves `prev_instr` by
# SEND's oparg - 1 from the YIELD_VALUE, i.e. to the unit just before SEND's
# target (the loop's JUMP_BACKWARD_NO_INTERRUPT), and raises there. So the
# handler covering that unit, not SEND's, catches the exception; the compiler
# always gives both the same one. 3.12+ raise at the YIELD_VALUE and route it
# through the CLEANUP_THROW handler instead.
THROW_RAISES_BEFORE_SEND_TARGET: bool = PY311

# --- Normal opnames -------------------------------------------------------------
_HIDDEN = (
    {"CACHE", "EXTENDED_ARG", "PRECALL"}
    | SUPERINSTRUCTIONS.keys()
    | (RAW_JUMPS - JUMPS.keys())
)
NORMAL_OPNAMES: frozenset[str] = frozenset(
    (RAW_OPMAP.keys() - _HIDDEN) | JUMPS.keys() | NAME_ENCODINGS.keys() | RAW_ALIASES.keys()
)
# Opcode numbers for normal names; pseudo-ops unknown to `dis` get numbers >= 300.
NORMAL_OPMAP: dict[str, int] = {
    name: dis.opmap.get(name, 300 + i) for i, name in enumerate(sorted(NORMAL_OPNAMES))
}

# Operand kinds, in normal names.
CONST_OPS: frozenset[str] = _names(opcode.hasconst) & NORMAL_OPNAMES
NAME_OPS: frozenset[str] = (_names(opcode.hasname) & NORMAL_OPNAMES) | NAME_ENCODINGS.keys()
LOCAL_OPS: frozenset[str] = (_names(opcode.haslocal) & NORMAL_OPNAMES) | RAW_ALIASES.keys()
FREE_OPS: frozenset[str] = (_names(opcode.hasfree) & NORMAL_OPNAMES) - LOCAL_OPS

# --- Stack effects -----------------------------------------------------------
# opname -> (pops, pushes); an entry is an int or a function of the raw oparg.
# Normal pseudo-ops carry no flag bits, so they are evaluated with oparg 0.
Effect = int | Callable[[int], int]


def _n(arg: int) -> int:
    return arg


def _bit0(base: int) -> Callable[[int], int]:
    return lambda arg: base + (arg & 1)


_COMMON_EFFECTS: dict[str, tuple[Effect, Effect]] = {
    **dict.fromkeys(
        ["NOP", "RESUME", "EXTENDED_ARG", "CACHE", "MAKE_CELL", "COPY_FREE_VARS", "DELETE_FAST",
         "DELETE_DEREF", "DELETE_NAME", "DELETE_GLOBAL", "SETUP_ANNOTATIONS", "JUMP_FORWARD",
         "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT", "KW_NAMES"],
        (0, 0)),
    **dict.fromkeys(
        ["UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "GET_ITER", "GET_YIELD_FROM_ITER",
         "GET_AITER", "GET_AWAITABLE", "YIELD_VALUE"], (1, 1)),
    **dict.fromkeys(
        ["BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP", "IS_OP", "CONTAINS_OP", "IMPORT_NAME"], (2, 1)),
    **dict.fromkeys(
        ["LOAD_FAST", "LOAD_CONST", "LOAD_DEREF", "LOAD_NAME", "LOAD_BUILD_CLASS",
         "LOAD_ASSERTION_ERROR", "LOAD_CLOSURE", "PUSH_NULL", "RETURN_GENERATOR"], (0, 1)),
    **dict.fromkeys(
        ["STORE_FAST", "STORE_DEREF", "STORE_NAME", "STORE_GLOBAL", "RETURN_VALUE", "POP_EXCEPT",
         "POP_TOP", "DELETE_ATTR"], (1, 0)),
    **dict.fromkeys(
        ["IMPORT_FROM", "GET_ANEXT", "GET_LEN", "MATCH_MAPPING", "MATCH_SEQUENCE",
         "PUSH_EXC_INFO", "BEFORE_WITH", "BEFORE_ASYNC_WITH", "LOAD_METHOD"], (1, 2)),
    **dict.fromkeys(["BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE"],
                    (_n, 1)),
    **dict.fromkeys(["LIST_APPEND", "SET_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE",
                     "DICT_MERGE"], (lambda arg: arg + 1, _n)),
    **dict.fromkeys([f"POP_JUMP_IF_{c}" for c in _CONDITIONS], (1, 0)),
    "MAP_ADD": (lambda arg: arg + 2, _n),
    "COPY": (_n, lambda arg: arg + 1),
    "SWAP": (_n, _n),
    "STORE_SUBSCR": (3, 0),
    "DELETE_SUBSCR": (2, 0),
    "STORE_ATTR": (2, 0),
    "BUILD_MAP": (lambda arg: 2 * arg, 1),
    "BUILD_CONST_KEY_MAP": (lambda arg: arg + 1, 1),
    "UNPACK_SEQUENCE": (1, _n),
    "UNPACK_EX": (1, lambda arg: (arg & 0xFF) + (arg >> 8) + 1),
    "LOAD_GLOBAL": (0, _bit0(1)),
    "CHECK_EXC_MATCH": (2, 2),
    "CHECK_EG_MATCH": (2, 2),
    "MATCH_KEYS": (2, 3),
    "MATCH_CLASS": (3, 1),
    "WITH_EXCEPT_START": (4, 5),
    "END_ASYNC_FOR": (2, 0),
    "RAISE_VARARGS": (_n, 0),
    "RERAISE": (lambda arg: arg + 1, _n),
    # Pops [callable, self-or-NULL] (either order) and the arguments.
    "CALL": (lambda arg: arg + 2, 1),
    "CALL_FUNCTION_EX": (lambda arg: 3 + (arg & 1), 1),
    "FOR_ITER": (1, 2),
    "SEND": (2, 2),
}
_EFFECTS_311: dict[str, tuple[Effect, Effect]] = {
    **dict.fromkeys(["UNARY_POSITIVE", "LIST_TO_TUPLE", "ASYNC_GEN_WRAP", "LOAD_ATTR"], (1, 1)),
    "PREP_RERAISE_STAR": (2, 1),
    "IMPORT_STAR": (1, 0),
    "PRINT_EXPR": (1, 0),
    "LOAD_CLASSDEREF": (0, 1),
    "JUMP_IF_TRUE_OR_POP": (1, 0),
    "JUMP_IF_FALSE_OR_POP": (1, 0),
}
_EFFECTS_312_PLUS: dict[str, tuple[Effect, Effect]] = {
    **dict.fromkeys(["CALL_INTRINSIC_1", "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"],
                    (1, 1)),
    **dict.fromkeys(["LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_LOCALS"], (0, 1)),
    **dict.fromkeys(["LOAD_ZERO_SUPER_ATTR"], (3, 1)),
    **dict.fromkeys(["LOAD_SUPER_METHOD", "LOAD_ZERO_SUPER_METHOD"], (3, 2)),
    "LOAD_SUPER_ATTR": (3, _bit0(1)),
    "LOAD_ATTR": (1, _bit0(1)),
    "CALL_INTRINSIC_2": (2, 1),
    "BINARY_SLICE": (3, 1),
    "STORE_SLICE": (4, 0),
    "END_SEND": (2, 1),
    "CLEANUP_THROW": (3, 2),
    "RETURN_CONST": (0, 0),
}
_EFFECTS_312: dict[str, tuple[Effect, Effect]] = {
    "END_FOR": (2, 0),
    "FORMAT_VALUE": (lambda arg: 1 + ((arg & 4) > 0), 1),
    "MAKE_FUNCTION": (lambda arg: 1 + bin(arg & 15).count("1"), 1),
}
_EFFECTS_313: dict[str, tuple[Effect, Effect]] = {
    **dict.fromkeys(["TO_BOOL", "CONVERT_VALUE", "FORMAT_SIMPLE", "MAKE_FUNCTION"], (1, 1)),
    **dict.fromkeys(["FORMAT_WITH_SPEC", "SET_FUNCTION_ATTRIBUTE"], (2, 1)),
    "END_FOR": (1, 0),
    "EXIT_INIT_CHECK": (1, 0),
    "CALL_KW": (lambda arg: arg + 3, 1),
    "LOAD_FAST_LOAD_FAST": (0, 2),
    "STORE_FAST_LOAD_FAST": (1, 1),
    "STORE_FAST_STORE_FAST": (2, 0),
}
if PY311:
    _VERSION_EFFECTS = {**_EFFECTS_311, "FORMAT_VALUE": _EFFECTS_312["FORMAT_VALUE"],
                        "MAKE_FUNCTION": _EFFECTS_312["MAKE_FUNCTION"]}
else:
    _VERSION_EFFECTS = {**_EFFECTS_312_PLUS, **(_EFFECTS_313 if PY313 else _EFFECTS_312)}

STACK_EFFECTS: dict[str, tuple[Effect, Effect]] = {
    name: effect
    for name, effect in {**_COMMON_EFFECTS, **_VERSION_EFFECTS}.items()
    if name in NORMAL_OPNAMES or name in RAW_OPMAP
}
# (pops, pushes) on the jump edge, where it differs from falling through. 3.11's
# FOR_ITER/SEND pop the iterator on exit; 3.12+ count from the END_FOR/END_SEND
# they target (compile-time view).
JUMP_EFFECTS: dict[str, tuple[Effect, Effect]] = (
    {"FOR_ITER": (1, 0), "SEND": (2, 1), "JUMP_IF_TRUE_OR_POP": (1, 1),
     "JUMP_IF_FALSE_OR_POP": (1, 1)}
    if PY311
    else {}
)

# Instructions after which control never falls through.
TERMINATORS: frozenset[str] = frozenset(
    {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP", "JUMP_NO_INTERRUPT",
     "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}
) & (NORMAL_OPNAMES | RAW_OPMAP.keys())

# --- Runtime objects, not bytecode: iterators the builder reads through __reduce__ ---------
# A partly consumed range iterator: 3.11 reduces it to (iter, (whole range,), position) and
# `__setstate__(n)` moves it to position n; 3.12+ reduce it to (iter, (range still to come,),
# None) and `__setstate__(n)` skips n more items from where it is. (On every version an
# iterator that has let go of its sequence, once next() found the end, reduces with no
# position: a list, tuple or string iterator to (iter, (empty,)), a list_reverseiterator to
# (iter, ([],)); 3.13's list_reverseiterator lets go as soon as it yields its last item,
# and reduces to (reversed, ([],)).)
RANGE_ITERATOR_REDUCES_TO_REST: bool = not PY311

# --- Errors the trace raises on behalf of builtins, as this version raises them ------------
# 3.13's Argument Clinic words list.sort's unknown keyword like any function's, and
# namedtuple._replace raises TypeError for an unknown field (ValueError before).
SORT_BAD_KEYWORD: str = (
    "sort() got an unexpected keyword argument '{}'" if PY313 else "'{}' is an invalid keyword argument for sort()"
)
NAMEDTUPLE_REPLACE_BAD_FIELD: type[Exception] = TypeError if PY313 else ValueError

# --- Generators ---------------------------------------------------------------------------
# When the iterator a `yield from` delegates to is done, SEND jumps to its target with the
# iterator's return value: 3.11 pops the iterator first; 3.12+ leave it for END_SEND.
SEND_EXIT_POPS_RECEIVER: bool = PY311
# generator.close() returns the value the generator returned on GeneratorExit (3.13+; None before).
GENERATOR_CLOSE_RETURNS_VALUE: bool = VERSION >= (3, 13)
