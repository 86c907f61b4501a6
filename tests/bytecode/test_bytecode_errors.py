"""Bad input fails with a clear error naming the instruction, never a broken code object."""

import pytest

from framegraph.bytecode import (
    ExceptionTableEntry, assemble, create_instruction, decode, transform_code_object, versions,
)


def _template():
    pass


def body(*instructions):
    return [create_instruction("RESUME", arg=0), *instructions]


def ret_none():
    return [create_instruction("LOAD_CONST", argval=None), create_instruction("RETURN_VALUE")]


@pytest.mark.parametrize(("opname", "kwargs", "error", "match"), [
    ("NOT_AN_OPCODE", {}, ValueError, "unknown opname"),
    ("EXTENDED_ARG", {"arg": 1}, ValueError, "unknown opname"),
    ("LOAD_FAST", {"arg": 0}, TypeError, "argval"),
    ("LOAD_FAST", {}, TypeError, "argval"),
    ("LOAD_FAST", {"argval": 3}, TypeError, "variable name"),
    ("JUMP", {}, TypeError, "target"),
    ("JUMP", {"arg": 4}, TypeError, "target"),
    ("NOP", {"arg": 1}, TypeError, "no operand"),
    ("BUILD_TUPLE", {"arg": -1}, TypeError, "an int"),
    ("BUILD_TUPLE", {"arg": 1, "argval": 1}, TypeError, "exactly one"),
    ("COMPARE_OP", {"argval": "<>"}, TypeError, "one of"),
    ("BINARY_OP", {"argval": "+++"}, TypeError, "one of"),
])
def test_create_instruction_validates(opname, kwargs, error, match):
    with pytest.raises(error, match=match):
        create_instruction(opname, **kwargs)


def test_jump_outside_the_list():
    stray = create_instruction("NOP")
    with pytest.raises(ValueError, match="JUMP at index 1 jumps to an instruction not in the list"):
        assemble(body(create_instruction("JUMP", target=stray), *ret_none()), _template.__code__)


def test_stack_underflow():
    with pytest.raises(ValueError, match="POP_TOP at index 1"):
        assemble(body(create_instruction("POP_TOP"), *ret_none()), _template.__code__)


def test_unknown_opname_and_bad_operand_after_creation():
    bogus = create_instruction("NOP")
    bogus.opname = "BOGUS"
    with pytest.raises(ValueError, match="'BOGUS' at index 1"):
        assemble(body(bogus, *ret_none()), _template.__code__)
    load = create_instruction("LOAD_FAST", argval="x")
    load.argval = 7
    with pytest.raises(TypeError, match="LOAD_FAST operand.*index 1"):
        assemble(body(load, *ret_none()), _template.__code__)
    with pytest.raises(TypeError, match="Instruction"):
        assemble(body("LOAD_FAST", *ret_none()), _template.__code__)


def test_duplicate_instruction_and_missing_handler():
    nop = create_instruction("NOP")
    with pytest.raises(ValueError, match="appears twice"):
        assemble(body(nop, nop, *ret_none()), _template.__code__)
    elsewhere = create_instruction("NOP")
    load, ret = ret_none()
    load.exn_tab_entry = ExceptionTableEntry(load, load, elsewhere, 0, False)
    with pytest.raises(ValueError, match="LOAD_CONST at index 1 has an exception handler not in the list"):
        assemble(body(load, ret), _template.__code__)


def test_falling_off_the_end():
    with pytest.raises(ValueError, match="falls off the end"):
        assemble(body(create_instruction("NOP")), _template.__code__)


def test_glued_pairs_must_stay_adjacent():
    def gen():
        yield 1

    def split(instructions, meta):
        i = next(i for i, inst in enumerate(instructions) if inst.opname == "YIELD_VALUE")
        instructions.insert(i + 1, create_instruction("NOP"))

    with pytest.raises(ValueError, match="YIELD_VALUE at index .* must be immediately followed by RESUME"):
        transform_code_object(gen.__code__, split)


def test_free_variable_operand_must_be_a_cell():
    load = create_instruction("LOAD_DEREF", argval="nope")
    with pytest.raises(ValueError, match="LOAD_DEREF at index 1: 'nope' is not a cell"):
        assemble(body(load, create_instruction("RETURN_VALUE")), _template.__code__)


def test_forward_only_jump_backwards():
    def f(xs):
        for x in xs:
            pass

    instructions = decode(f.__code__)
    for_iter = next(i for i in instructions if i.opname == "FOR_ITER")
    for_iter.target = instructions[0]
    with pytest.raises(ValueError, match="FOR_ITER at index"):
        assemble(instructions, f.__code__)


def test_unknown_code_field():
    with pytest.raises(TypeError, match="co_bogus"):
        assemble(body(*ret_none()), _template.__code__, co_bogus=1)


def test_version_table_sanity():
    assert versions.VERSION in ((3, 11), (3, 12), (3, 13))
    assert set(versions.STACK_EFFECTS) >= versions.NORMAL_OPNAMES


@pytest.mark.skipif(not versions.THROW_RAISES_BEFORE_SEND_TARGET, reason="3.11 gen.throw rule")
def test_send_target_must_follow_an_instruction_with_sends_handler():
    async def awaits_in_try(x):
        try:
            return await x
        except ZeroDivisionError:
            return None

    instructions = decode(awaits_in_try.__code__)
    send = next(inst for inst in instructions if inst.opname == "SEND")
    position = instructions.index(send.target)
    instructions.insert(position, create_instruction("NOP"))  # outside the try
    with pytest.raises(ValueError, match="SEND at index .* exception handler"):
        assemble(instructions, awaits_in_try.__code__)
