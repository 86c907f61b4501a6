"""Each emit helper, assembled into a small function and run on this version."""

import types

import pytest

from framegraph.bytecode import assemble, create_instruction, emit


def _template(a=None, b=None):
    pass


def build(body, **names):
    """A function of (a, b) running RESUME + body; `names` become its globals."""
    instructions = [create_instruction("RESUME", arg=0), *body]
    code = assemble(instructions, _template.__code__)
    return types.FunctionType(code, {"__builtins__": __builtins__, **names}, "built", (None, None))


def local(name, op="LOAD_FAST"):
    return create_instruction(op, argval=name)


def _target(*args, **kwargs):
    return args, kwargs


def test_load_global_and_call():
    body = [*emit.create_load_global("len", push_null=True), local("a"), *emit.create_call(1),
            *emit.create_return_value()]
    assert build(body)("abcd") == 4


def test_keyword_call():
    body = [*emit.create_load_global("target", push_null=True), local("a"), local("b"),
            *emit.create_load_const(3), *emit.create_call(3, ("x", "y")), *emit.create_return_value()]
    assert build(body, target=_target)(1, 2) == ((1,), {"x": 2, "y": 3})


def test_push_null_pair_for_a_local_callable():
    body = [*emit.create_push_null_pair([local("a")]), local("b"), *emit.create_call(1),
            *emit.create_return_value()]
    assert build(body)(abs, -5) == 5


def test_method_and_attribute():
    body = [local("a"), *emit.create_load_method("split"), *emit.create_load_const("-"),
            *emit.create_call(1), local("b"), *emit.create_load_attr("imag"),
            *emit.create_build_tuple(2), *emit.create_return_value()]
    assert build(body)("x-y", 2 + 3j) == (["x", "y"], 3.0)


@pytest.mark.parametrize(("value", "expected"), [([], "no"), ([0], "yes"), (0, "no"), ("s", "yes"), (None, "no")])
def test_conditional_jump_on_any_truthy_value(value, expected):
    no = create_instruction("LOAD_CONST", argval="no")
    body = [local("a"), *emit.create_jump_if(no, when=False), *emit.create_load_const("yes"),
            *emit.create_return_value(), no, *emit.create_return_value()]
    assert build(body)(value) == expected


def test_backward_conditional_jump_and_unconditional_jump():
    # acc = 0; loop: acc += a; a -= 1; if a: goto loop; goto done; done: return acc
    loop = local("acc")
    done = local("acc")
    body = [*emit.create_load_const(0), local("acc", "STORE_FAST"),
            loop, local("a"), create_instruction("BINARY_OP", argval="+="), local("acc", "STORE_FAST"),
            local("a"), *emit.create_load_const(1), create_instruction("BINARY_OP", argval="-"),
            *emit.create_dup_top(), local("a", "STORE_FAST"),
            *emit.create_jump_if(loop, when=True), *emit.create_jump(done),
            *emit.create_load_const("unreachable"), *emit.create_return_value(),
            done, *emit.create_return_value()]
    assert build(body)(4) == 10


def test_tuples_rotation_and_swaps():
    body = [local("a"), *emit.create_unpack_sequence(3),  # 3 2 1 (top on the right)
            *emit.create_rot_n(3),                           # 1 3 2
            *emit.create_swap(2),                            # 1 2 3
            *emit.create_dup_top(),                          # 1 2 3 3
            *emit.create_build_tuple(4), *emit.create_return_value()]
    assert build(body)((1, 2, 3)) == (1, 2, 3, 3)


def test_rot_n_matches_old_semantics():
    body = [*emit.create_load_const(1), *emit.create_load_const(2), *emit.create_load_const(3),
            *emit.create_load_const(4), *emit.create_rot_n(4), *emit.create_build_tuple(4),
            *emit.create_return_value()]
    assert build(body)() == (4, 1, 2, 3)
    assert emit.create_rot_n(1) == [] and emit.create_swap(1) == []
