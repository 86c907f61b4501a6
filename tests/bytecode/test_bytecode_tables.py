"""Exception- and line-table encoders, checked against the interpreter's readers."""

import dis

import pytest

from framegraph.bytecode import assemble, create_instruction
from framegraph.bytecode.instruction import Positions
from framegraph.bytecode.tables import RawExceptionEntry, decode_exception_table, encode_exception_table


def test_exception_table_worked_example():
    # Objects/exception_handling_notes.txt: start 20, size 8, target 100, depth 3, no lasti.
    assert encode_exception_table([RawExceptionEntry(20, 28, 100, 3, False)]) == bytes(
        [0x94, 0x08, 0x41, 0x24, 0x06])


def test_exception_table_round_trip_large_values():
    entries = [RawExceptionEntry(0, 5, 7, 0, True), RawExceptionEntry(5, 70000, 1 << 20, 300, False)]
    assert decode_exception_table(encode_exception_table(entries)) == entries


def test_exception_table_matches_dis_parser():
    def f(a):
        try:
            with a:
                return a()
        except* ValueError:
            a = 2
        return a

    parsed = dis._parse_exception_table(f.__code__)
    ours = decode_exception_table(f.__code__.co_exceptiontable)
    assert [(e.start, e.end, e.target, e.depth, e.lasti) for e in parsed] == [
        (2 * e.start, 2 * e.end, 2 * e.target, e.depth, e.lasti) for e in ours]


def _template():
    pass


FIRST = _template.__code__.co_firstlineno
POSITIONS = [
    Positions(FIRST, FIRST, 4, 10),              # short form
    Positions(FIRST + 2, FIRST + 2, 100, 120),   # one-line form, delta 2
    Positions(None, None, None, None),           # no location
    Positions(FIRST + 1, FIRST + 1, None, None),  # no column, negative delta
    Positions(FIRST + 5, FIRST + 9, 3, 200),     # long form, multi-line
    Positions(FIRST + 5, FIRST + 5, 300, 301),   # long form, wide columns
    Positions(FIRST - 1, FIRST + 1, None, None),  # long form without columns
    Positions(FIRST + 40, FIRST + 40, 0, 0),     # large delta
]


def test_line_table_encodes_every_location_kind():
    instructions = [create_instruction("RESUME", arg=0)]
    for positions in POSITIONS:
        # LOAD_ATTR has caches, so some entries span several units.
        load = create_instruction("LOAD_CONST", argval=positions)
        attr = create_instruction("LOAD_ATTR", argval="count")
        load.positions = attr.positions = positions
        instructions += [load, attr, create_instruction("POP_TOP")]
        instructions[-1].positions = positions
    instructions += [create_instruction("LOAD_CONST", argval=None), create_instruction("RETURN_VALUE")]
    code = assemble(instructions, _template.__code__)
    by_offset = {inst.offset: inst.positions for inst in dis.get_instructions(code)}
    seen = [by_offset[i.offset] for i in dis.get_instructions(code) if i.opname == "LOAD_ATTR"]
    assert seen == POSITIONS
    units = list(code.co_positions())
    assert len(units) == len(code.co_code) // 2
    for i, inst in enumerate(dis.get_instructions(code)):
        if inst.opname == "LOAD_ATTR":
            size = len(code.co_code) // 2  # all units of the instruction share its position
            first = inst.offset // 2
            following = next((j.offset // 2 for j in dis.get_instructions(code) if j.offset > inst.offset), size)
            assert set(units[first:following]) == {tuple(inst.positions)}


@pytest.mark.parametrize("lines", [1, 3, 17])
def test_long_runs_split_in_eight_unit_entries(lines):
    source = "def f(x):\n    return (x" + " + x" * (lines * 5) + ")\n"
    namespace = {}
    exec(compile(source, "<runs>", "exec"), namespace)
    from framegraph.bytecode import decode

    code = namespace["f"].__code__
    rebuilt = assemble(decode(code), code)
    assert list(rebuilt.co_positions()) == list(code.co_positions())
