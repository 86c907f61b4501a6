"""decode -> assemble round trips, untouched and with every offset moved, behave like the original."""

import dis
import types

import pytest
from bytecode_corpus import CASES, big, rebuild, run

from framegraph.bytecode import CodeMeta, assemble, decode, transform_code_object
from framegraph.bytecode.roundtrip import first_difference, iter_code_objects, main
from framegraph.bytecode.transforms import identity, insert_nops, roundtrip_code

IDS = [f"{fn.__qualname__}-{i}" for i, (fn, _) in enumerate(CASES)]


@pytest.mark.parametrize(("function", "args"), CASES, ids=IDS)
def test_identity_round_trip_is_byte_exact_and_runs(function, args):
    for code in iter_code_objects(function.__code__):
        rebuilt = assemble(decode(code), code)
        assert first_difference(code, rebuilt) is None
        assert rebuilt.co_code == code.co_code
        assert all(a is b for a, b in zip(rebuilt.co_consts, code.co_consts, strict=True))
        assert rebuilt.co_names == code.co_names
        assert rebuilt.co_exceptiontable == code.co_exceptiontable
        assert list(rebuilt.co_positions()) == list(code.co_positions())
        assert rebuilt.co_stacksize == code.co_stacksize
    clone = rebuild(function, roundtrip_code(function.__code__, identity))
    assert run(clone, args) == run(function, args)


@pytest.mark.parametrize(("function", "args"), CASES, ids=IDS)
def test_inserting_nops_everywhere_keeps_behaviour(function, args):
    code = roundtrip_code(function.__code__, insert_nops)
    for old, new in zip(iter_code_objects(function.__code__), iter_code_objects(code)):
        assert len(new.co_code) > len(old.co_code)
        assert bool(new.co_exceptiontable) == bool(old.co_exceptiontable)
        assert new.co_flags == old.co_flags
    assert run(rebuild(function, code), args) == run(function, args)


def test_insert_nops_adds_prologue_after_resume():
    decoded = [inst.opname for inst in decode(roundtrip_code(big.__code__, insert_nops))]
    start = decoded.index("RESUME") + 1
    assert decoded[start : start + 3] == ["NOP", "LOAD_CONST", "POP_TOP"]


def test_big_function_needs_extended_args_and_survives_edits():
    opnames = {inst.opname for inst in dis.get_instructions(big)}
    assert "EXTENDED_ARG" in opnames
    assert len(big.__code__.co_varnames) > 256 and len(big.__code__.co_consts) > 256
    edited = rebuild(big, transform_code_object(big.__code__, insert_nops))
    assert run(edited, (3,)) == run(big, (3,))


def test_traceback_lines_survive_nops():
    def fails(x):
        y = x + 1
        return {}[y]

    clone = rebuild(fails, roundtrip_code(fails.__code__, insert_nops))
    assert run(clone, (1,)) == run(fails, (1,))
    assert run(fails, (1,))[2] == fails.__code__.co_firstlineno + 2


def test_transform_can_edit_meta_and_add_locals():
    def source(a):
        return a

    def rename_and_store(instructions, meta: CodeMeta):
        meta.co_name = meta.co_qualname = "renamed"
        ret = instructions[-1]
        load = instructions[-2]
        from framegraph.bytecode import create_instruction

        extra = [create_instruction("STORE_FAST", argval="fresh"),
                 create_instruction("LOAD_FAST", argval="fresh")]
        instructions[-1:-1] = extra
        assert load.argval == "a" and ret.opname in ("RETURN_VALUE",)

    code = transform_code_object(source.__code__, rename_and_store)
    assert code.co_name == code.co_qualname == "renamed"
    assert code.co_varnames == ("a", "fresh")
    assert types.FunctionType(code, {})(7) == 7


def test_roundtrip_tool_reports_equivalence(capsys):
    assert main(["json.decoder", "string", "-j", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    total = int(last.split()[0])
    assert last == f"{total} code objects, {total} equivalent, 0 differ" and total > 10


def test_first_difference_names_what_changed():
    def f(a):
        return a + 1

    code = f.__code__
    assert "co_stacksize" in first_difference(code, code.replace(co_stacksize=code.co_stacksize + 1))
    other = (lambda a: a + 2).__code__
    assert "operand" in first_difference(code, code.replace(co_consts=other.co_consts))
    shifted = code.replace(co_firstlineno=code.co_firstlineno + 1)
    assert "positions" in first_difference(code, shifted)


class _FutureLike:
    def __await__(self):
        return (yield)


async def _await_in_try():
    try:
        return await _FutureLike()
    except ZeroDivisionError:
        return "caught"


@pytest.mark.parametrize("transform", [identity, insert_nops])
def test_throw_into_await_inside_try_is_caught(transform):
    # On 3.11 the delegate's exception is raised at the unit before SEND's target
    # (`versions.THROW_RAISES_BEFORE_SEND_TARGET`); a NOP there must keep the try's handler.
    clone = rebuild(_await_in_try, roundtrip_code(_await_in_try.__code__, transform))
    coro = clone()
    coro.send(None)
    with pytest.raises(StopIteration) as stop:
        coro.throw(ZeroDivisionError)
    assert stop.value.value == "caught"


def test_insert_nops_keeps_the_handler_before_every_instruction():
    def handler(inst):
        entry = inst.exn_tab_entry
        return None if entry is None else (entry.target, entry.depth, entry.lasti)

    for code in iter_code_objects(_await_in_try.__code__):
        instructions = decode(code)
        before = {inst: handler(prev) for prev, inst in zip(instructions, instructions[1:])}
        insert_nops(instructions, CodeMeta.from_code(code))
        for prev, inst in zip(instructions, instructions[1:]):
            if inst in before:
                assert handler(prev) == before[inst], inst
