"""Replaced frames behave exactly like the original function would."""

from __future__ import annotations

import asyncio
import builtins
import sys
import traceback

import pytest

from hookutil import ALWAYS, hooked, twin
from framegraph import _C

# ---- argument shapes ------------------------------------------------------------------


def posonly(a, b, /, c):
    return ("orig", a, b, c)


def defaults(a, b=2, c=3):
    return ("orig", a, b, c)


def kwonly(a, *, k, m=5):
    return ("orig", a, k, m)


def star(a, *args):
    return ("orig", a, args)


def starstar(a, **kwargs):
    return ("orig", a, kwargs)


def everything(a, b=2, /, c=3, *args, d, e=6, **kwargs):
    return ("orig", a, b, c, args, d, e, kwargs)


def posonly_in_kwargs(a, /, **kw):
    return ("orig", a, kw)


def no_args():
    return ("orig",)


SHAPES = [
    (posonly, (1, 2, 3), {}),
    (posonly, (1, 2), {"c": 3}),
    (defaults, (1,), {}),
    (defaults, (1,), {"c": 9}),
    (kwonly, (1,), {"k": 2}),
    (kwonly, (), {"a": 1, "k": 2, "m": 3}),
    (star, (1,), {}),
    (star, (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), {}),
    (starstar, (1,), {"x": 1, "y": 2}),
    (starstar, (), {"a": 0}),
    (everything, (1,), {"d": 4}),
    (everything, (1, 2, 3, 4, 5), {"d": 4, "z": 26, "e": 7}),
    (posonly_in_kwargs, (1,), {"a": 2}),
    (no_args, (), {}),
]


@pytest.mark.parametrize("fn,args,kwargs", SHAPES, ids=lambda x: getattr(x, "__name__", ""))
def test_argument_shapes(replacer, fn, args, kwargs):
    expected = fn(*args, **kwargs)
    replacer.add(fn, twin(fn))
    with hooked(replacer):
        got = fn(*args, **kwargs)
        again = fn(*args, **kwargs)  # cache hit
    assert got == again == ("repl",) + expected[1:]
    assert replacer.names() == [fn.__name__]  # the callback ran once, for the miss


def test_f_locals_holds_arguments_and_free_variables(replacer):
    captured = {}

    def make(n):
        unused_cell = None  # noqa: F841

        def inner(a, /, b, *rest, k, **kw):
            return ("orig", a, b, rest, k, kw, n)

        return inner

    inner = make(10)

    def cb(frame):
        if frame.f_code is inner.__code__:
            captured["f_locals"] = dict(frame.f_locals)
            captured["frame"] = frame
        return False

    with hooked(cb):
        assert inner(1, 2, 3, k=4, z=5) == ("orig", 1, 2, (3,), 4, {"z": 5}, 10)
    assert captured["f_locals"] == {"a": 1, "b": 2, "rest": (3,), "k": 4, "kw": {"z": 5}, "n": 10}
    frame = captured["frame"]
    assert frame.f_code is inner.__code__
    assert frame.f_globals is globals()
    assert frame.f_builtins is builtins.__dict__
    assert frame.closure is inner.__closure__
    assert frame.f_func is inner


# ---- closures, cells, super, nonlocal ------------------------------------------------


def make_adder(n):
    def add(x):
        return ("orig", x + n)

    return add


def cell_argument(x):
    def read():
        return x

    x = x + 1
    return ("orig", read())


def make_counter():
    count = 0

    def bump(k):
        nonlocal count
        count += k
        return ("orig", count)

    return bump


class Base:
    def m(self, x):
        return ("base", x)


class Child(Base):
    def m(self, x):
        return ("orig", super().m(x))

    def m_cell_self(self, x):
        get = lambda: self  # noqa: E731  self is a cell and an argument
        return ("orig", super().m(x), get() is self)


def test_closure(replacer):
    add5, add7 = make_adder(5), make_adder(7)
    replacer.add(add5, twin(add5))
    with hooked(replacer):
        assert add5(1) == ("repl", 6)
        assert add7(1) == ("repl", 8)  # same code object: same entry, its own closure
    assert replacer.names() == ["add"]


def test_cell_that_is_an_argument(replacer):
    replacer.add(cell_argument, twin(cell_argument))
    with hooked(replacer):
        assert cell_argument(1) == ("repl", 2)
        assert cell_argument(10) == ("repl", 11)


def test_nonlocal_writes_reach_the_shared_cell(replacer):
    bump = make_counter()
    replacer.add(bump, twin(bump))
    with hooked(replacer):
        assert bump(1) == ("repl", 1)
        assert bump(2) == ("repl", 3)
    assert bump(3) == ("orig", 6)
    assert bump.__closure__[0].cell_contents == 6


def test_super(replacer):
    replacer.add(Child.m, twin(Child.m))
    replacer.add(Child.m_cell_self, twin(Child.m_cell_self))
    c = Child()
    with hooked(replacer):
        assert c.m(1) == ("repl", ("base", 1))
        assert c.m_cell_self(2) == ("repl", ("base", 2), True)


def rec(n):
    if n == 0:
        return ("orig", 0)
    return ("orig", rec(n - 1)[1] + 1)


def test_recursion_500_deep_through_replaced_frames(replacer):
    replacer.add(rec, twin(rec))
    with hooked(replacer):
        for _ in range(3):
            assert rec(500) == ("repl", 500)


def test_deep_recursion_with_exceptions_crossing_datastack_chunks(replacer):
    def boom(n):
        if n == 0:
            raise KeyError("bottom")
        return boom(n - 1)

    replacer.add(boom, boom.__code__.replace(co_name="boom"))  # a distinct copy
    with hooked(replacer):
        for depth in (1, 50, 300, 450):
            with pytest.raises(KeyError):
                boom(depth)


# ---- generators and coroutines are left alone ------------------------------------------


def gen(n):
    for i in range(n):
        yield helper(i)


def helper(i):
    return ("orig", i)


async def coro(x):
    await asyncio.sleep(0)
    return helper(x)


async def agen():
    yield helper(1)


def test_generators_and_coroutines_are_not_offered(replacer):
    replacer.add(helper, twin(helper))
    with hooked(replacer):
        assert list(gen(3)) == [("repl", 0), ("repl", 1), ("repl", 2)]
        assert asyncio.run(coro(4)) == ("repl", 4)

        async def consume():
            return [x async for x in agen()]

        assert asyncio.run(consume()) == [("repl", 1)]
    offered = set(replacer.seen)
    for code in (gen.__code__, coro.__code__, agen.__code__, consume.__code__):
        assert code not in offered
    assert helper.__code__ in offered


def test_generator_throw_and_close(replacer):
    def g():
        try:
            yield 1
            yield 2
        except ValueError:
            yield "caught"

    replacer.add(helper, twin(helper))
    with hooked(replacer):
        it = g()
        assert next(it) == 1
        assert it.throw(ValueError) == "caught"
        it.close()


# ---- exceptions -------------------------------------------------------------------------


def raiser(x):
    if x:
        raise ValueError(f"orig {x}")
    return "orig"


def test_exception_from_replacement_keeps_type_message_traceback(replacer):
    replacer.add(raiser, twin(raiser))  # the f-string's "orig " is a separate constant
    with hooked(replacer):
        assert raiser(0) == "repl"
        with pytest.raises(ValueError, match="orig 3") as info:
            raiser(3)
    names = [fs.name for fs in traceback.extract_tb(info.value.__traceback__)]
    assert names[-1] == "raiser"
    assert names.count("raiser") == 1  # the replacement only; the original never ran


def test_exception_caught_by_caller(replacer):
    def caller():
        try:
            raiser(1)
        except ValueError as e:
            return str(e)

    replacer.add(raiser, twin(raiser))
    with hooked(replacer):
        assert caller() == "orig 1"


def test_frames_and_sys_getframe_inside_replacement(replacer):
    def who():
        f = sys._getframe()
        return ("orig", f.f_code.co_name, f.f_back.f_code.co_name, f.f_locals)

    def caller():
        return who()

    replacer.add(who, twin(who))
    with hooked(replacer):
        tag, name, back, loc = caller()
    assert (tag, name, back) == ("repl", "who", "caller")
    assert "f" in loc


def test_module_class_and_exec_bodies_run_default(replacer):
    with hooked(replacer):
        ns = {}
        exec("def h(x):\n    return x\nclass K:\n    y = h(2)\nz = h(3)\n", ns)
        eval("h(4)", ns)
    assert ns["K"].y == 2 and ns["z"] == 3
    assert set(replacer.names()) == {"h"}  # only the function frames
    assert len(replacer.seen) == 3


def test_getitem_and_property_are_hooked(replacer):
    class C:
        def __getitem__(self, i):
            return ("orig", i)

        @property
        def p(self):
            return ("orig", "p")

    replacer.add(C.__getitem__, twin(C.__getitem__))
    replacer.add(C.p.fget, twin(C.p.fget))
    c = C()
    for _ in range(10):  # let the specialising interpreter warm up first
        c[0], c.p
    with hooked(replacer):
        assert c[1] == ("repl", 1)
        assert c.p == ("repl", "p")


def test_unsupported_returns_second_argument():
    obj = object()
    assert _C.unsupported(1, obj) is obj
    with pytest.raises(TypeError):
        _C.unsupported(1)


def forever(n):
    return ("orig", forever(n + 1))


def test_runaway_recursion_through_replaced_frames_is_a_recursion_error(replacer):
    replacer.add(forever, twin(forever))
    with hooked(replacer):
        for _ in range(3):
            with pytest.raises(RecursionError):
                forever(0)
        assert rec(10) == ("orig", 10)  # still usable afterwards


def test_replacement_keeps_the_frames_builtins(replacer):
    ns = {"__builtins__": {"len": lambda x: "custom len"}}
    exec("def uses_len(x):\n    return ('orig', len(x))\n", ns)
    fn = ns["uses_len"]
    ns["__builtins__"] = {"len": lambda x: "changed later"}  # fn keeps its own builtins
    replacer.add(fn, twin(fn))
    with hooked(replacer):
        assert fn([1]) == ("repl", "custom len")


def test_callback_may_return_a_tuple_subclass():
    import collections

    GuardedCode = collections.namedtuple("GuardedCode", "check_fn code")
    new = twin(helper)
    with hooked(lambda fr: GuardedCode(ALWAYS, new) if fr.f_code is helper.__code__ else False):
        assert helper(1) == ("repl", 1)
    _C.reset_code(helper.__code__)
