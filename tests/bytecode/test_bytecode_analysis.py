"""Stack-effect data against dis.stack_effect, and the analyses built on it."""

import dis
import sys

import pytest
from bytecode_corpus import CASES

from framegraph.bytecode import (
    create_instruction, decode, jump_targets, live_locals, max_stack_depth, prefix_end,
    stack_depths, stack_effect, versions,
)
from framegraph.bytecode.roundtrip import iter_code_objects

OPARGS = (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 255, 258, 0x0201)
VALID_OPARGS = {"BUILD_SLICE": (2, 3)}  # dis answers for any oparg, the compiler uses these


def _net(name, oparg, jump):
    pops, pushes = stack_effect(versions.RAW_TO_NORMAL_JUMP.get(name, name), oparg, jump=jump)
    return pushes - pops


def _expected(name, oparg, jump):
    op = dis.opmap[name]
    arg = oparg if name in versions.HAS_ARG else None
    expected = dis.stack_effect(op, arg, jump=jump)
    if name == "RETURN_GENERATOR" and sys.version_info < (3, 13):
        expected += 1  # dis says 0, yet the POP_TOP after it pops the sent value
    if name == "CALL" and versions.HAS_PRECALL:
        expected += dis.stack_effect(dis.opmap["PRECALL"], oparg)  # normal CALL absorbs PRECALL
    return expected


@pytest.mark.parametrize("name", sorted(set(versions.RAW_OPMAP) - {"PRECALL"}))
def test_stack_effect_table_matches_dis(name):
    opargs = VALID_OPARGS.get(name, OPARGS) if name in versions.HAS_ARG else (0,)
    jumps = (False, True) if name in versions.RAW_JUMPS else (False,)
    checked = 0
    for oparg in opargs:
        for jump in jumps:
            try:
                expected = _expected(name, oparg, jump)
            except ValueError:
                continue  # an oparg this opcode cannot have
            assert _net(name, oparg, jump) == expected, (name, oparg, jump)
            checked += 1
    assert checked


def test_pseudo_ops_match_what_they_lower_to():
    # Compared with the raw opcode and flag bits they assemble to: dis's own entry
    # for the pseudo-op LOAD_ZERO_SUPER_ATTR says -1 where the raw op is -2.
    for name in sorted(versions.NORMAL_OPNAMES - versions.RAW_OPMAP.keys()):
        pops, pushes = stack_effect(name)
        if name in versions.NAME_ENCODINGS:
            raw, _, bits = versions.NAME_ENCODINGS[name]
            assert pushes - pops == dis.stack_effect(dis.opmap[raw], bits), name
        elif name in versions.JUMPS:
            forward = versions.JUMPS[name][0]
            for jump in (False, True):
                assert pushes - pops == dis.stack_effect(dis.opmap[forward], 0, jump=jump), name


def test_max_depth_reproduces_co_stacksize():
    for function, _ in CASES:
        for code in iter_code_objects(function.__code__):
            assert max(max_stack_depth(decode(code)), versions.MIN_STACKSIZE) == code.co_stacksize


def test_stack_depths_of_a_simple_function():
    def f(a, b):
        return a + b

    instructions = decode(f.__code__)
    depths = stack_depths(instructions)
    body = [(i.opname, depths[i]) for i in instructions[prefix_end(instructions):]]
    assert body == [("LOAD_FAST", 0), ("LOAD_FAST", 1), ("BINARY_OP", 2), ("RETURN_VALUE", 1)]


def test_handler_depth_includes_lasti_and_exception():
    def f(cm):
        with cm:
            return 1

    instructions = decode(f.__code__)
    depths = stack_depths(instructions)
    entry = next(i.exn_tab_entry for i in instructions if i.exn_tab_entry)
    assert depths[entry.target] == entry.depth + entry.lasti + 1


def _instructions(*specs):
    return [create_instruction(name, **kw) for name, kw in specs]


def test_stack_depth_errors_name_the_instruction():
    underflow = _instructions(("RESUME", {"arg": 0}), ("POP_TOP", {}), ("RETURN_VALUE", {}))
    with pytest.raises(ValueError, match="POP_TOP at index 1"):
        stack_depths(underflow)
    falls = _instructions(("RESUME", {"arg": 0}), ("NOP", {}))
    with pytest.raises(ValueError, match="NOP at index 1 falls off"):
        stack_depths(falls)
    ret = create_instruction("RETURN_VALUE")
    merge = [create_instruction("RESUME", arg=0), create_instruction("LOAD_CONST", argval=1),
             create_instruction("LOAD_CONST", argval=True),
             create_instruction("POP_JUMP_IF_TRUE", target=ret),
             create_instruction("LOAD_CONST", argval=2), ret]
    with pytest.raises(ValueError, match="inconsistent stack depth at RETURN_VALUE at index 5"):
        stack_depths(merge)
    stray = create_instruction("JUMP", target=create_instruction("NOP"))
    with pytest.raises(ValueError, match="JUMP at index 1 targets an instruction not in the list"):
        stack_depths([create_instruction("RESUME", arg=0), stray])


def test_live_locals_follow_jumps_and_exception_edges():
    def f(a, b, c, d):
        x = a
        if b:
            return x
        try:
            y = c()
        except ValueError:
            return d
        x = 1
        return x + y

    instructions = decode(f.__code__)
    first = instructions[prefix_end(instructions)]
    assert live_locals(instructions, first) == {"a", "b", "c", "d"}
    after_store = instructions[next(i for i, x in enumerate(instructions)
                                    if x.opname == "STORE_FAST" and x.argval == "x") + 1]
    assert live_locals(instructions, after_store) == {"x", "b", "c", "d"}
    call = next(x for x in instructions if x.opname == "CALL")
    assert live_locals(instructions, call) == {"d"}


def test_live_locals_count_cells():
    def f(a):
        def g():
            return a

        return g

    instructions = decode(f.__code__)
    assert "a" in live_locals(instructions, instructions[0])


def test_jump_targets_and_prefix():
    def f(xs):
        total = 0
        for x in xs:
            total += x
        return total

    instructions = decode(f.__code__)
    targets = jump_targets(instructions)
    assert any(t.opname == "FOR_ITER" for t in targets)
    assert all(t in instructions for t in targets)

    def gen(a):
        def inner():
            return a

        yield inner

    names = [i.opname for i in decode(gen.__code__)]
    assert names[prefix_end(decode(gen.__code__)) - 1] == "RESUME"
    assert names[:names.index("RESUME")] == ["MAKE_CELL", "RETURN_GENERATOR", "POP_TOP"]
