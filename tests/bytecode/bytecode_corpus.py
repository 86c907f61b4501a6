"""Functions covering the constructs the bytecode toolkit must round-trip.

Each CASES entry is (function, args); `run` gives a comparable outcome for the
original and for a rebuilt copy: the result (generators and coroutines are
driven to completion) or the exception type, message and line.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def closure(a):
    b = a + 1

    def inner(c):
        nonlocal b
        b += c
        return a, b

    return inner(10), inner(5)


def cell_argument(a, *rest, **kw):
    def get():
        return a, rest, kw

    a = a * 2
    return get()


def generator(n):
    total = yield "start"
    for i in range(n):
        total = (total or 0) + (yield i)
    yield from range(2)
    return total


async def _sleep(value):
    return value


async def coroutine(n):
    total = 0
    for i in range(n):
        total += await _sleep(i)
    async with _AsyncContext() as ctx:
        total += ctx
    return total


async def async_generator(n):
    for i in range(n):
        yield await _sleep(i)


async def async_comprehension(n):
    return [x async for x in async_generator(n)]


class _AsyncContext:
    async def __aenter__(self):
        return 100

    async def __aexit__(self, *exc):
        return False


def try_except_finally(x):
    log = []
    try:
        try:
            log.append(1 / x)
        except ZeroDivisionError as e:
            log.append(type(e).__name__)
            raise ValueError("inner") from e
        else:
            log.append("else")
        finally:
            log.append("finally")
    except ValueError as e:
        log.append(str(e))
    return log


def except_star(n):
    caught = []
    try:
        raise ExceptionGroup("g", [ValueError(n), TypeError(n)])
    except* ValueError as e:
        caught.append(len(e.exceptions))
    except* TypeError:
        caught.append("type")
    return caught


class _Context:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind, value, tb):
        self.log.append(kind.__name__ if kind else None)
        return kind is KeyError


def with_blocks(fail):
    log = []
    with _Context(log) as ctx, _Context(log):
        if fail:
            raise KeyError(fail)
        ctx.log.append("body")
    return log


def match_statement(value):
    match value:
        case 0 | 1:
            return "small"
        case [x, y, *rest]:
            return ("seq", x, y, rest)
        case {"k": v, **others}:
            return ("map", v, others)
        case str() as s if len(s) > 2:
            return ("str", s)
        case complex(real=r):
            return ("complex", r)
        case _:
            return "other"


def comprehensions(xs):
    lst = [x * 2 for x in xs if x % 2]
    st = {x for x in xs}
    dct = {x: [y for y in range(x)] for x in xs}
    gen = sum(x for x in xs)
    nested = [lambda: x for x in xs]
    return lst, sorted(st), dct, gen, [f() for f in nested]


def fstrings(a, b):
    return f"{a!r:>{b}}|{a!s}|{a!a}|{b:03d}|{a=}|{'x' if a else 'y'}"


def walrus_and_unpacking(data):
    first, *middle, last = data
    if (n := len(middle)) > 1:
        head, *_ = middle
    else:
        head = None
    a, b = b, a = last, first
    return first, middle, last, n, head, a, b, [*data, *middle], {**{"k": 1}, "j": 2}


def _target(*args, **kwargs):
    return args, kwargs


def calls(a, b):
    args = (a, b)
    kwargs = {"z": 3}
    return (
        _target(a, b, key=1),
        _target(*args, **kwargs),
        _target(*args, b, *args, k=a, **kwargs),
        "-".join(map(str, args)),
        len(args),
        (lambda *p, **k: (p, k))(1, x=2),
    )


class _Base:
    def greet(self, name):
        return f"base {name}"


class _Child(_Base):
    def greet(self, name):
        return "child " + super().greet(name) + super(_Child, self).greet(name).upper()


def super_calls(name):
    return _Child().greet(name)


def classes(n):
    class Local:
        count = n
        doubled = [count * 2 for _ in range(2)]

        def method(self):
            return self.count + n

        @property
        def prop(self):
            return __class__.__name__

    obj = Local()
    return obj.method(), obj.prop, Local.doubled


def loops(n):
    out = []
    i = 0
    while True:
        i += 1
        if i > n:
            break
        if i % 2:
            continue
        for j in range(i):
            if j == 3:
                break
            out.append((i, j))
        else:
            out.append("no break")
    while i and n:
        i -= 1
    return out, i


def boolean_logic(a, b, c):
    return (a and b) or c, not a, a is None, b is not None, a in (1, 2), b not in [3], a < b <= c, -a, ~b


def global_and_delete(x):
    global _GLOBAL_COUNTER
    _GLOBAL_COUNTER = x
    y = x
    del y
    try:
        return y  # noqa: F821
    except UnboundLocalError as e:
        return "unbound", _GLOBAL_COUNTER


def raising(x):
    values = [1, 2]
    return values[x]


_GLOBAL_COUNTER = 0


def _big_source() -> str:
    names = [f"v{i}" for i in range(300)]
    lines = ["def big(k):"]
    lines += [f"    {name} = {i} + k * {i * 1.5!r}" for i, name in enumerate(names)]
    lines.append("    total = 0")
    lines.append("    for i in range(3):")
    lines += [f"        total += {name} if i != {j % 3} else -{name}" for j, name in enumerate(names)]
    lines.append("    return total, " + ", ".join(f"'{i}'" for i in range(300)))
    return "\n".join(lines)


exec(compile(_big_source(), __file__ + ":big", "exec"))

CASES: list[tuple[Any, tuple]] = [
    (closure, (1,)),
    (cell_argument, (3, 4, 5)),
    (generator, (3,)),
    (coroutine, (4,)),
    (async_generator, (3,)),
    (async_comprehension, (3,)),
    (try_except_finally, (0,)),
    (try_except_finally, (2,)),
    (with_blocks, (0,)),
    (with_blocks, ("boom",)),
    (match_statement, (1,)),
    (match_statement, ([1, 2, 3, 4],)),
    (match_statement, ({"k": 1, "m": 2},)),
    (match_statement, ("hello",)),
    (match_statement, (3j,)),
    (match_statement, (object,)),
    (comprehensions, ([1, 2, 3],)),
    (fstrings, (7, 9)),
    (walrus_and_unpacking, ([1, 2, 3, 4, 5],)),
    (calls, (1, 2)),
    (super_calls, ("bob",)),
    (_Child.greet, (_Child(), "ann")),
    (classes, (4,)),
    (loops, (9,)),
    (boolean_logic, (1, 2, 3)),
    (boolean_logic, (0, None, 3)),
    (global_and_delete, (5,)),
    (raising, (5,)),
    (big, (2,)),  # noqa: F821 (defined by exec above)
]
if sys.version_info >= (3, 11):
    CASES.append((except_star, (1,)))


def rebuild(function: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    clone = types.FunctionType(code, function.__globals__, function.__name__,
                               function.__defaults__, function.__closure__)
    clone.__kwdefaults__ = function.__kwdefaults__
    return clone


def _drive(awaitable: Any) -> Any:
    try:
        while True:
            awaitable.send(None)
    except StopIteration as stop:
        return stop.value


def _drive_generator(gen: types.GeneratorType) -> list:
    sent = []
    value = next(gen)
    try:
        while True:
            sent.append(value)
            value = gen.send(len(sent))
    except StopIteration as stop:
        sent.append(("return", stop.value))
    return sent


async def _collect(agen: Any) -> list:
    return [item async for item in agen]


def run(function: Any, args: tuple) -> Any:
    """The observable outcome of calling function(*args)."""
    try:
        result = function(*args)
        if isinstance(result, types.GeneratorType):
            return _drive_generator(result)
        if isinstance(result, types.CoroutineType):
            return _drive(result)
        if isinstance(result, types.AsyncGeneratorType):
            return _drive(_collect(result))
        return result
    except Exception as error:  # the outcome under test
        tb = error.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        return type(error).__name__, str(error), tb.tb_lineno
