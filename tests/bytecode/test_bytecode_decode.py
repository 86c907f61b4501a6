"""decode() gives the documented normal form on every version."""

import dis
import sys

import pytest

from framegraph.bytecode import decode, versions
from framegraph.bytecode.decode import localsplus_names
from bytecode_corpus import CASES, _Child
from framegraph.bytecode.roundtrip import iter_code_objects

PY313 = sys.version_info >= (3, 13)
HIDDEN = {"CACHE", "EXTENDED_ARG", "PRECALL", "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST",
          "STORE_FAST_STORE_FAST", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}


def opnames(function):
    return [inst.opname for inst in decode(function.__code__)]


def find(instructions, opname, argval=None):
    return next(i for i, inst in enumerate(instructions)
                if inst.opname == opname and (argval is None or inst.argval == argval))


def all_codes():
    for function, _ in CASES:
        yield from iter_code_objects(function.__code__)


def test_normal_form_hides_raw_encodings():
    for code in all_codes():
        instructions = decode(code)
        names = {inst.opname for inst in instructions}
        assert not names & HIDDEN
        assert not any(n.startswith(("POP_JUMP_FORWARD", "POP_JUMP_BACKWARD")) for n in names)
        members = set(instructions)
        for inst in instructions:
            assert inst.target is None or inst.target in members
            entry = inst.exn_tab_entry
            assert entry is None or {entry.start, entry.end, entry.target} <= members


def test_global_call_has_explicit_null_in_version_order():
    def f():
        return len(())

    instructions = decode(f.__code__)
    i = find(instructions, "LOAD_GLOBAL", "len")
    neighbour = instructions[i + 1] if PY313 else instructions[i - 1]
    assert neighbour.opname == "PUSH_NULL"
    assert neighbour.origin == instructions[i].origin


def test_method_and_attribute_loads():
    def f(o):
        return o.m(o.x)

    instructions = decode(f.__code__)
    assert instructions[find(instructions, "LOAD_METHOD")].argval == "m"
    assert instructions[find(instructions, "LOAD_ATTR")].argval == "x"
    assert "PRECALL" not in opnames(f)


def test_keyword_call_form():
    def f(g, a):
        return g(a, k=1)

    names = opnames(f)
    call = "CALL_KW" if PY313 else "CALL"
    kw_op = "LOAD_CONST" if PY313 else "KW_NAMES"
    assert names[names.index(call) - 1] == kw_op
    instructions = decode(f.__code__)
    assert instructions[names.index(call) - 1].argval == ("k",)


def test_superinstructions_are_split():
    def f(a, b):
        b, a = a, b
        return a + b

    instructions = decode(f.__code__)
    pairs = [(inst.opname, inst.argval) for inst in instructions]
    assert ("LOAD_FAST", "a") in pairs and ("LOAD_FAST", "b") in pairs
    i = find(instructions, "BINARY_OP")
    assert [x.opname for x in instructions[i - 2 : i]] == ["LOAD_FAST", "LOAD_FAST"]
    assert instructions[i].argval == "+"


def test_compare_and_binary_operands():
    def f(a, b):
        a += b
        if a <= b:
            return a < b
        return a ** b

    instructions = decode(f.__code__)
    assert [i.argval for i in instructions if i.opname == "COMPARE_OP"] == ["<=", "<"]
    assert [i.argval for i in instructions if i.opname == "BINARY_OP"] == ["+=", "**"]
    branch = find(instructions, "COMPARE_OP", "<=")
    following = [x.opname for x in instructions[branch + 1 : branch + 3]]
    assert following == (["TO_BOOL", "POP_JUMP_IF_FALSE"] if PY313 else ["POP_JUMP_IF_FALSE", "LOAD_FAST"])


def test_jumps_are_unified_with_object_targets():
    def f(n):
        while n:
            n -= 1
        return n

    instructions = decode(f.__code__)
    conditional = [i for i in instructions if i.opname.startswith("POP_JUMP_IF")]
    assert conditional and all(i.target in instructions for i in conditional)
    backward = [i for i in instructions if i.target is not None
                and instructions.index(i.target) <= instructions.index(i)]
    assert backward and {i.opname for i in backward} <= {"JUMP", "POP_JUMP_IF_TRUE", "JUMP_NO_INTERRUPT"}


def test_super_forms():
    instructions = decode(_Child.greet.__code__)
    if sys.version_info >= (3, 12):
        assert instructions[find(instructions, "LOAD_ZERO_SUPER_METHOD")].argval == "greet"
        assert instructions[find(instructions, "LOAD_SUPER_METHOD")].argval == "greet"
    else:
        assert instructions[find(instructions, "LOAD_GLOBAL", "super")]
        assert [i.argval for i in instructions if i.opname == "LOAD_METHOD"][:2] == ["greet", "greet"]


def test_exception_entries_and_positions():
    def f(g):
        try:
            return g()
        except ValueError:
            return None

    instructions = decode(f.__code__)
    call = instructions[find(instructions, "CALL")]
    assert call.exn_tab_entry.target.opname == "PUSH_EXC_INFO"
    assert call.exn_tab_entry.depth == 0 and not call.exn_tab_entry.lasti
    assert call.lineno == f.__code__.co_firstlineno + 2
    by_offset = {i.offset: i for i in dis.get_instructions(f)}
    for inst in instructions:
        reference = by_offset.get(inst.offset)
        if reference is not None:
            assert inst.positions == reference.positions
    assert instructions[0].starts_line == f.__code__.co_firstlineno


def test_slots_match_the_interpreter():
    def outer(a, b, *args, c, **kw):
        d = 1

        def inner():
            return a, d, kw

        return inner

    def closures(kw):
        def free_after_local_cell(xs):
            # On 3.12+ the comprehension is inlined and `x` is both a local and a cell:
            # the interpreter gives them one slot, so `kw` (free) directly follows the locals.
            return [lambda: x for x in xs], kw

        def plain_local():
            y = 1
            return y, kw

        return free_after_local_cell, plain_local

    free_after_local_cell, plain_local = closures(0)
    # The same overlap on every version: a local that is also listed as a cell.
    local_cell = plain_local.__code__.replace(co_cellvars=("y",))
    # A resume function whose cell was an argument of the original is laid out that way
    # too (an extra slot made MAKE_CELL write past the frame's locals).
    not_argument = outer.__code__.replace(co_argcount=0, co_kwonlyargcount=0, co_flags=outer.__code__.co_flags & ~0x0C)
    codes = (outer.__code__, outer(1, 2, c=3).__code__, free_after_local_cell.__code__, local_cell, not_argument)
    for code in codes:
        names = localsplus_names(code.co_varnames, code.co_cellvars, code.co_freevars)
        assert names == [code._varname_from_oparg(i) for i in range(len(names))]
        with pytest.raises(IndexError):
            code._varname_from_oparg(len(names))
    loads = [i.argval for i in decode(local_cell) if i.opname in ("LOAD_DEREF", "LOAD_CLOSURE")]
    assert loads[-1] == "kw"


@pytest.mark.parametrize("value", [None, "code", 3, print, (lambda: 0)])
def test_decode_rejects_non_code(value):
    with pytest.raises(TypeError, match="code object"):
        decode(value)


def test_normal_opnames_table_is_consistent():
    assert versions.NORMAL_OPNAMES >= {"JUMP", "POP_JUMP_IF_TRUE", "LOAD_METHOD", "PUSH_NULL"}
    assert not versions.NORMAL_OPNAMES & HIDDEN
