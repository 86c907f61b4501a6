"""The verifier refuses broken code objects with a message naming the instruction and
accepts everything the compiler makes."""

import dataclasses
import re

import pytest
from bytecode_corpus import CASES

from framegraph.bytecode import ExceptionTableEntry, assemble, create_instruction, decode, emit, versions
from framegraph.bytecode.instruction import Positions
from framegraph.bytecode.roundtrip import iter_code_objects, main
from framegraph.bytecode.tables import decode_exception_table, encode_exception_table
from framegraph.bytecode.transforms import insert_nops, roundtrip_code
from framegraph.bytecode.verify import VerificationError, verify
from framegraph.exc import InternalError

IDS = [f"{fn.__qualname__}-{i}" for i, (fn, _) in enumerate(CASES)]


def _template(a):
    pass


LINE = _template.__code__.co_firstlineno + 1


def build(*body, template=_template):
    """A code object of `template`'s shape running `body`, every instruction on LINE."""
    instructions = [create_instruction("RESUME", arg=0), *body]
    for inst in instructions:
        inst.positions = Positions(LINE, LINE, 0, 1)
    return assemble(instructions, template.__code__)


def I(opname, **operand):  # noqa: E743 (short on purpose: the listings read like dis output)
    return create_instruction(opname, **operand)


def offset_of(code, opname, nth=0):
    return [inst.offset for inst in decode(code) if inst.opname == opname][nth]


def patched(code, offset, opname):
    """`code` with the raw instruction at `offset` turned into `opname` (same oparg):
    broken code that assemble, which checks its input, would never make."""
    old = code.co_code[offset]
    assert versions.CACHE_ENTRIES[versions.RAW_OPNAME[old]] == versions.CACHE_ENTRIES[opname]
    raw = bytearray(code.co_code)
    raw[offset] = versions.RAW_OPMAP[opname]
    return code.replace(co_code=bytes(raw))


def refused(code, rule, message, **kwargs):
    with pytest.raises(VerificationError) as info:
        verify(code, **kwargs)
    assert info.value.rule == rule
    assert re.search(message, str(info.value)), str(info.value)
    return info.value


def ret_none():
    return [I("LOAD_CONST", argval=None), I("RETURN_VALUE")]


# ---- NULLs -------------------------------------------------------------------------------

def test_null_passed_as_call_argument():
    code = build(*emit.create_load_global("print", push_null=True), I("LOAD_FAST", argval="a"),
                 I("PUSH_NULL"), I("CALL", arg=2), I("RETURN_VALUE"))
    null, call = offset_of(code, "PUSH_NULL", 1), offset_of(code, "CALL")
    error = refused(code, "NULL argument",
                    rf"^NULL \(pushed by PUSH_NULL at offset {null}\) passed as argument 2 of CALL 2 "
                    rf"at offset {call} \(line {LINE}\) in _template \(.*test_verify.py:{LINE - 1}\)$")
    assert isinstance(error, InternalError)
    assert (error.offset, error.opname, error.argval, error.lineno) == (call, "CALL", 2, LINE)


def test_maybe_null_of_load_method_passed_as_argument():
    # The shape of a graph break at LOAD_METHOD whose two slots went to a resume
    # function as ordinary arguments: one of them is NULL whenever the attribute is
    # not a method, and the interpreter crashed on it.
    code = build(*emit.create_load_global("print", push_null=True), I("LOAD_FAST", argval="a"),
                 I("LOAD_METHOD", argval="append"), I("CALL", arg=2), I("RETURN_VALUE"))
    position = 2 if versions.NULL_AFTER_CALLABLE else 1
    refused(code, "NULL argument",
            rf"a value that may be NULL \(pushed by LOAD_METHOD append at offset {offset_of(code, 'LOAD_METHOD')}\) "
            rf"passed as argument {position} of CALL 2 at offset {offset_of(code, 'CALL')}")


def test_method_pair_is_a_valid_callable():
    code = build(I("LOAD_FAST", argval="a"), I("LOAD_METHOD", argval="append"), I("LOAD_CONST", argval=1),
                 I("CALL", arg=1), I("RETURN_VALUE"))
    verify(code)


def test_null_as_the_callable():
    pair = [I("PUSH_NULL"), I("PUSH_NULL")]
    code = build(*pair, I("CALL", arg=0), I("RETURN_VALUE"))
    refused(code, "NULL argument", r"NULL \(pushed by PUSH_NULL at offset \d+\) passed as the callable of CALL 0")


def test_call_function_ex_needs_a_plain_null():
    code = build(I("LOAD_FAST", argval="a"), I("LOAD_METHOD", argval="extend"), I("BUILD_TUPLE", arg=0),
                 I("CALL_FUNCTION_EX", arg=0), I("RETURN_VALUE"))
    refused(code, "NULL argument", "CALL_FUNCTION_EX 0 needs a NULL beside its callable")
    good = build(*emit.create_load_global("print", push_null=True), I("BUILD_TUPLE", arg=0),
                 I("CALL_FUNCTION_EX", arg=0), I("RETURN_VALUE"))
    verify(good)


def test_null_returned():
    code = build(I("PUSH_NULL"), I("RETURN_VALUE"))
    refused(code, "NULL returned", rf"NULL \(pushed by PUSH_NULL at offset \d+\) returned by RETURN_VALUE "
                                   rf"at offset {offset_of(code, 'RETURN_VALUE')} \(line {LINE}\)")


@pytest.mark.parametrize(("tail", "rule", "message"), [
    ([I("STORE_FAST", argval="a"), *ret_none()], "NULL stored", "stored by STORE_FAST a"),
    ([I("LOAD_CONST", argval=1), I("BINARY_OP", argval="+"), I("RETURN_VALUE")], "NULL operand",
     r"used as operand 1 of BINARY_OP \+"),
    ([I("COPY", arg=1), I("POP_TOP"), I("POP_TOP"), *ret_none()], "NULL operand", "copied by COPY 1"),
    ([I("POP_TOP"), *ret_none()], "NULL operand", "used as operand 1 of POP_TOP"),
])
def test_null_stored_or_operated_on(tail, rule, message):
    refused(build(I("PUSH_NULL"), *tail), rule, message)


def test_swap_moves_a_null_to_where_a_call_takes_it():
    # [NULL, f] built as [f, NULL] and swapped into place on 3.11/3.12, and back on 3.13
    code = build(I("LOAD_GLOBAL", argval="print"), I("PUSH_NULL"), I("SWAP", arg=2),
                 *([I("SWAP", arg=2)] if versions.NULL_AFTER_CALLABLE else []), I("CALL", arg=0), I("RETURN_VALUE"))
    verify(code)


# ---- stack depth ---------------------------------------------------------------------------

def _join(pop_on_fall_through):
    join = I("RETURN_VALUE")
    fall = I("POP_TOP") if pop_on_fall_through else I("NOP")
    return build(I("LOAD_CONST", argval=1), I("LOAD_FAST", argval="a"), *emit.create_jump_if(join, True),
                 I("LOAD_CONST", argval=2), fall, join)


def test_stack_depth_mismatch_at_a_join():
    verify(_join(True))
    code = patched(_join(True), offset_of(_join(True), "POP_TOP"), "NOP")
    nop, ret = offset_of(code, "NOP"), offset_of(code, "RETURN_VALUE")
    refused(code, "stack depth", rf"RETURN_VALUE is reached with stack depth 1 and, from NOP at offset {nop}, 2 "
                                 rf"at offset {ret}")


def test_stack_underflow():
    code = patched(_join(True), offset_of(_join(True), "LOAD_CONST"), "NOP")
    refused(code, "stack underflow", rf"RETURN_VALUE pops 1 but the stack holds 0 at offset {offset_of(code, 'RETURN_VALUE')}")


def test_stack_overflow_past_co_stacksize():
    code = build(I("LOAD_CONST", argval=1), I("LOAD_CONST", argval=2), I("BUILD_TUPLE", arg=2), I("RETURN_VALUE"))
    assert code.co_stacksize == 2
    verify(code)
    small = code.replace(co_stacksize=1)
    refused(small, "stack overflow", rf"LOAD_CONST 2 makes the stack 2 deep, past co_stacksize 1 "
                                     rf"at offset {offset_of(code, 'LOAD_CONST', 1)}")


def _protected(depth_below):
    """`1; [a + 1] -> handler at depth 1`, the handler returning what it kept below."""
    handler = I("POP_TOP")
    load, one, add = I("LOAD_FAST", argval="a"), I("LOAD_CONST", argval=1), I("BINARY_OP", argval="+")
    entry = ExceptionTableEntry(load, add, handler, depth_below, False)
    for inst in (load, one, add):
        inst.exn_tab_entry = entry
    return build(I("LOAD_CONST", argval=0), load, one, add, I("RETURN_VALUE"), handler, I("RETURN_VALUE"))


def _with_handler_depth(code, depth):
    entries = [dataclasses.replace(entry, depth=depth) for entry in decode_exception_table(code.co_exceptiontable)]
    return code.replace(co_exceptiontable=encode_exception_table(entries))


def test_handler_target_with_the_wrong_depth():
    code = _protected(1)
    verify(code)
    # More than the protected code ever has on the stack.
    refused(_with_handler_depth(code, 3), "handler depth",
            rf"the exception handler at offset {offset_of(code, 'POP_TOP')} keeps 3 stack items but "
            rf"LOAD_FAST a has 1 at offset {offset_of(code, 'LOAD_FAST')}")
    # Fewer than the handler needs: it pops the exception and returns from an empty stack.
    refused(_with_handler_depth(code, 0), "stack underflow", "RETURN_VALUE pops 1 but the stack holds 0")


def test_handler_reached_with_two_depths():
    handler = I("POP_TOP")
    first, second = I("LOAD_FAST", argval="a"), I("LOAD_FAST", argval="a")
    first.exn_tab_entry = ExceptionTableEntry(first, first, handler, 0, False)
    second.exn_tab_entry = ExceptionTableEntry(second, second, handler, 0, False)
    code = build(first, second, I("BUILD_TUPLE", arg=2), I("RETURN_VALUE"), handler, *ret_none())
    verify(code)
    table = decode_exception_table(code.co_exceptiontable)
    assert len(table) == 1  # one merged range; split it, the second at depth 1
    start, end = table[0].start, table[0].end
    entries = [dataclasses.replace(table[0], end=start + 1), dataclasses.replace(table[0], start=start + 1, depth=1)]
    assert end == start + 2
    broken = code.replace(co_exceptiontable=encode_exception_table(entries))
    refused(broken.replace(co_stacksize=3), "stack depth", r"POP_TOP is reached with stack depth 1 and, from "
                                                           r"LOAD_FAST a at offset \d+, 2")


def test_falling_off_the_end():
    code = build(I("LOAD_CONST", argval=1), I("RETURN_VALUE"))
    refused(patched(code, offset_of(code, "RETURN_VALUE"), "POP_TOP"), "falls off end",
            "control falls off the end of the code after POP_TOP")


# ---- locals ------------------------------------------------------------------------------

def test_load_fast_of_an_unassigned_local():
    code = build(I("LOAD_FAST", argval="b"), I("RETURN_VALUE"))
    message = rf"LOAD_FAST b reads a slot that is unbound here .* at offset {offset_of(code, 'LOAD_FAST')}"
    if versions.LOAD_FAST_CHECKS_UNBOUND:
        verify(code)  # 3.11 raises UnboundLocalError there, and its compiler relies on it
    else:
        refused(code, "unbound local", message)
    # framegraph's replacement bodies never rely on the check, on any version
    refused(code, "unbound local", message, replacement_for=_template.__code__)
    if "LOAD_FAST_CHECK" in versions.NORMAL_OPNAMES:
        checked = build(I("LOAD_FAST_CHECK", argval="b"), I("RETURN_VALUE"))
        verify(checked, replacement_for=_template.__code__)


def test_load_fast_of_a_local_bound_on_one_path_only():
    join = I("LOAD_FAST", argval="b")
    code = build(I("LOAD_FAST", argval="a"), *emit.create_jump_if(join, True), I("LOAD_CONST", argval=1),
                 I("STORE_FAST", argval="b"), join, I("RETURN_VALUE"))
    refused(code, "unbound local", "LOAD_FAST b reads a slot that may be unbound here",
            replacement_for=_template.__code__)
    both = build(I("LOAD_CONST", argval=1), I("STORE_FAST", argval="b"), I("LOAD_FAST", argval="b"),
                 I("RETURN_VALUE"))
    verify(both, replacement_for=_template.__code__)
    deleted = build(I("LOAD_CONST", argval=1), I("STORE_FAST", argval="b"), I("DELETE_FAST", argval="b"),
                    I("LOAD_FAST", argval="b"), I("RETURN_VALUE"))
    refused(deleted, "unbound local", "LOAD_FAST b reads a slot that is unbound", replacement_for=_template.__code__)


# ---- cells and free variables ------------------------------------------------------------

def _closure_template(a):
    def inner():
        return a
    return inner


def test_load_deref_of_a_name_that_is_not_a_cell():
    code = build(I("LOAD_FAST", argval="a"), I("RETURN_VALUE"))
    broken = patched(code, offset_of(code, "LOAD_FAST"), "LOAD_DEREF")
    refused(broken, "cell", rf"LOAD_DEREF a: 'a' is not a cell or free variable of this code at offset "
                            rf"{offset_of(code, 'LOAD_FAST')} \(line {LINE}\)")


def test_load_deref_before_make_cell():
    code = build(I("MAKE_CELL", argval="a"), I("LOAD_DEREF", argval="a"), I("RETURN_VALUE"),
                 template=_closure_template)
    # MAKE_CELL comes before RESUME in the prefix; build puts it after, which is as valid
    verify(code)
    broken = patched(code, offset_of(code, "MAKE_CELL"), "NOP")
    refused(broken, "cell", "LOAD_DEREF a: the slot of 'a' may hold a plain value, not a cell")


def test_closure_cells_of_a_nested_function():
    inner = _closure_template(1)
    code = inner.__code__
    verify(code)
    copy = offset_of(code, "COPY_FREE_VARS")
    refused(patched(code, copy, "NOP"), "cell", r"LOAD_DEREF a may run before the cell of 'a' exists")


def test_replacement_must_keep_the_free_variables():
    inner = _closure_template(1).__code__
    refused(_template.__code__, "free variables", r"replacement code has co_freevars \(\), but the frame it "
                                                  r"replaces has \('a',\)", replacement_for=inner)
    verify(inner, replacement_for=inner)


# ---- everything the compiler makes -------------------------------------------------------

@pytest.mark.parametrize(("function", "args"), CASES, ids=IDS)
def test_accepts_the_corpus_as_compiled_and_with_nops(function, args):
    for code in iter_code_objects(function.__code__):
        verify(code)
    for code in iter_code_objects(roundtrip_code(function.__code__, insert_nops)):
        verify(code)


def test_sweep_mode_verifies_modules(capsys):
    assert main(["--verify", "-j", "1", "dis", "inspect", "asyncio.base_events"]) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    total, verified = re.match(r"(\d+) code objects, (\d+) verified, 0 refused", summary).groups()
    assert int(total) == int(verified) > 100


def test_sweep_mode_reports_a_refusal(monkeypatch, capsys):
    import framegraph.bytecode.roundtrip as roundtrip

    def refuse(code):
        raise VerificationError("stack depth", "made up", code)

    monkeypatch.setattr(roundtrip, "verify", refuse)
    assert main(["--verify", "-j", "1", "dis"]) == 1
    out = capsys.readouterr().out
    assert "REFUSED" in out and "refused (stack depth): made up" in out
    assert re.search(r"(\d+) code objects, 0 verified, \1 refused", out)


def test_decode_failure_is_a_refusal():
    code = _template.__code__
    raw = bytearray(code.co_code)
    raw[-2] = max(set(range(256)) - set(versions.RAW_OPNAME))  # co_code reads it back as a CACHE unit
    refused(code.replace(co_code=bytes(raw)), "decode", "the code cannot be decoded")
    refused(code.replace(co_code=b"", co_linetable=b""), "decode", "the code has no instructions")


def test_errors_are_internal_errors_and_keep_the_code():
    code = build(I("PUSH_NULL"), I("RETURN_VALUE"))
    error = refused(code, "NULL returned", "RETURN_VALUE")
    assert error.code is code and isinstance(error, InternalError)



def _generator(xs):
    for x in xs:
        yield x


def test_instructions_read_together_stay_together():
    code = _generator.__code__
    verify(code)
    refused(patched(code, offset_of(code, "POP_TOP"), "NOP"), "layout",
            rf"RETURN_GENERATOR must be directly followed by POP_TOP at offset {offset_of(code, 'RETURN_GENERATOR')}")
    if versions.FOR_ITER_EXIT:
        refused(patched(code, offset_of(code, "END_FOR"), "NOP"), "layout",
                r"FOR_ITER to offset \d+ must jump to END_FOR.*, which its exit skips, not to NOP")
