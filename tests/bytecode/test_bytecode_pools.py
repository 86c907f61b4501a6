"""co_consts, co_names and local slots: a round trip keeps the compiler's order and slots.

Code indexes these tuples itself (test_dis reads `outer.__code__.co_consts[3]`), so
assembling them in first-use order, or picking the wrong one of two slots with the same
name, changes behaviour even when every instruction's operand is right.
"""

import types

from bytecode_corpus import rebuild

from framegraph.bytecode import assemble, create_instruction, decode
from framegraph.bytecode.roundtrip import first_difference, iter_code_objects
from framegraph.bytecode.transforms import identity, insert_nops, roundtrip_code


def outer():
    # The defaults tuple is loaded before the code object, yet the compiler gives the
    # code object the lower co_consts index (and keeps the folded-away (5, 6) too):
    # first-use order would renumber them.
    def inner(a=(5, 6)):
        return a

    return inner


def _assert_same_pools(old: types.CodeType, new: types.CodeType) -> None:
    assert len(new.co_consts) == len(old.co_consts)
    for before, after in zip(old.co_consts, new.co_consts):
        if isinstance(before, types.CodeType):
            assert (after.co_name, after.co_firstlineno) == (before.co_name, before.co_firstlineno)
        else:
            assert after is before
    assert new.co_names == old.co_names


def test_identity_round_trip_keeps_consts_names_and_bytes():
    code = outer.__code__
    slots_in_load_order = [inst.arg for inst in decode(code) if inst.opname == "LOAD_CONST"]
    assert slots_in_load_order != sorted(slots_in_load_order)
    rebuilt = assemble(decode(code), code)
    assert rebuilt.co_consts == code.co_consts and rebuilt.co_names == code.co_names
    assert rebuilt.co_code == code.co_code
    assert first_difference(code, rebuilt) is None


def _code_slot(code: types.CodeType) -> int:
    return next(i for i, c in enumerate(code.co_consts) if isinstance(c, types.CodeType))


def test_rewritten_nested_code_takes_the_old_slot():
    for transform in (identity, insert_nops):
        new = roundtrip_code(outer.__code__, transform)
        for old_code, new_code in zip(iter_code_objects(outer.__code__), iter_code_objects(new)):
            _assert_same_pools(old_code, new_code)
        assert new.co_consts[_code_slot(new)] is not outer.__code__.co_consts[_code_slot(outer.__code__)]
        assert rebuild(outer, new)()() == (5, 6)


def with_finally(xs):
    # The finally body (and its lambda) is compiled once per exit: two LOAD_CONSTs of
    # one code object, which must stay one slot after the rewrite.
    try:
        return sorted(xs)
    finally:
        xs.sort(key=lambda x: -x)


def test_code_object_loaded_twice_keeps_one_slot():
    loads = [inst for inst in decode(with_finally.__code__)
             if inst.opname == "LOAD_CONST" and isinstance(inst.argval, types.CodeType)]
    assert len(loads) == 2 and loads[0].argval is loads[1].argval
    new = roundtrip_code(with_finally.__code__)
    _assert_same_pools(with_finally.__code__, new)
    xs = [2, 3, 1]
    assert rebuild(with_finally, new)(xs) == [1, 2, 3] and xs == [3, 2, 1]


def test_distinct_nan_constants_keep_their_slots():
    def two(x):
        a = 1.5
        b = 2.5
        return a, b

    code = two.__code__
    consts = list(code.co_consts)
    first, second = float("nan"), float("nan")
    consts[consts.index(1.5)], consts[consts.index(2.5)] = first, second
    template = code.replace(co_consts=tuple(consts))
    rebuilt = assemble(decode(template), template)
    assert rebuilt.co_code == template.co_code
    assert all(a is b for a, b in zip(rebuilt.co_consts, template.co_consts))


def test_new_operands_are_appended_and_no_string_becomes_a_docstring():
    def f():
        return "old"

    instructions = decode(f.__code__)
    ret = instructions[-1]
    instructions[-1:] = [create_instruction("LOAD_CONST", argval="new"),
                         create_instruction("STORE_GLOBAL", argval="fresh_name"), ret]
    code = assemble(instructions, f.__code__)
    assert code.co_consts[: len(f.__code__.co_consts)] == f.__code__.co_consts
    assert code.co_consts[-1] == "new"
    assert code.co_names == f.__code__.co_names + ("fresh_name",)

    empty = f.__code__.replace(co_consts=())
    body = [create_instruction("RESUME", arg=0), create_instruction("LOAD_CONST", argval="text"),
            create_instruction("RETURN_VALUE")]
    code = assemble(body, empty)
    assert code.co_consts == (None, "text")
    g = types.FunctionType(code, {})
    assert g.__doc__ is None and g() == "text"


class Pathology:
    def make(self):
        # `x = __class__` reads the enclosing method's free `__class__`; `f` makes the
        # class body own a `__class__` cell too: two slots with the same name.
        class X:
            x = __class__

            def f():
                __class__

        return X


def test_cell_and_free_variable_of_the_same_name_keep_their_slots():
    body = next(c for c in iter_code_objects(Pathology.make.__code__) if c.co_name == "X")
    assert "__class__" in body.co_cellvars and "__class__" in body.co_freevars
    assert assemble(decode(body), body).co_code == body.co_code
    make = rebuild(Pathology.make, roundtrip_code(Pathology.make.__code__))
    assert make(Pathology()).x is Pathology
