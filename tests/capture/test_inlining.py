"""Inlining: user functions, closures, lambdas, nested functions, decorators, methods,
properties, super(), every argument shape, recursion, nonlocal. One graph each, no fallback."""

import functools

import pytest
import torch

from .helpers import check


def t(*shape):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape)


def double(x):
    return x * 2


def scale(x, k=3.0):
    return x * k


def kwonly(x, *, shift, factor=2.0):
    return (x + shift) * factor


def posonly(x, y, /, z=1.0):
    return x - y + z


def star(*xs):
    return sum(xs[1:], xs[0])


def starstar(x, **kw):
    return x * kw["a"] + kw.get("b", 0)


def everything(a, b=2.0, /, c=3.0, *rest, d, e=5.0, **kw):
    return a * b + c + sum(rest, 0.0) + d * e + kw.get("f", 0.0)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1
    return wrapper


@logged
def decorated(x):
    return x.cos()


def twice(fn):
    def wrapper(x):
        return fn(fn(x))
    return wrapper


@twice
def decorated_plain(x):
    return x + 0.5


def factorial_like(x, n):
    if n == 0:
        return x
    return factorial_like(x * 1.5, n - 1)


def make_adder(k):
    return lambda x: x + k


ADD_FOUR = make_adder(4.0)


class Shape:
    unit = 2.0

    def __init__(self, w):
        self.w = w

    def area(self, x):
        return x * self.w * self.unit

    @property
    def doubled(self):
        return self.w * 2

    @staticmethod
    def static_scale(x):
        return x * 10

    @classmethod
    def from_unit(cls, x):
        return x * cls.unit


class Square(Shape):
    def area(self, x):
        return super().area(x) + 1

    def describe(self, x):
        return self.area(x) * self.doubled


SHAPE = Shape(3.0)
SQUARE = Square(2.0)


def call_global(x): return double(x) + 1
def call_default(x): return scale(x)
def call_default_override(x): return scale(x, 5.0)
def call_keyword(x): return scale(x, k=0.5)
def call_kwonly(x): return kwonly(x, shift=1.0)
def call_kwonly_all(x): return kwonly(x, factor=4.0, shift=x)
def call_posonly(x, y): return posonly(x, y)
def call_posonly_default(x, y): return posonly(x, y, 4.0)
def call_star(x, y): return star(x, y, x)
def call_star_unpack(xs): return star(*xs)
def call_starstar(x): return starstar(x, a=2.0, b=x)
def call_starstar_unpack(x, kw): return starstar(x, **kw)
def call_both_unpack(args, kw): return everything(*args, **kw)
def call_everything(x): return everything(x, 1.0, 2.0, x, x, d=x, f=3.0)
def call_decorated(x): return decorated(x)
def call_decorated_plain(x): return decorated_plain(x)
def call_recursive(x): return factorial_like(x, 4)
def call_lambda(x):
    f = lambda y, z=2: y ** z
    return f(x) + f(x, 3)
def call_closure(x):
    k = 3.0
    def inner(y):
        return y * k
    return inner(x) + inner(x + 1)
def call_nested_closure(x):
    def outer(a):
        def inner(b):
            return a * b
        return inner(x)
    return outer(2.0) + outer(x)
def call_nonlocal(x):
    total = x
    def bump(v):
        nonlocal total
        total = total + v
    bump(1.0)
    bump(x)
    return total
def call_closure_global_factory(x): return ADD_FOUR(x)
def call_method(x): return SHAPE.area(x)
def call_property(x): return x * SHAPE.doubled
def call_staticmethod(x): return SHAPE.static_scale(x) + Shape.static_scale(x)
def call_classmethod(x): return Shape.from_unit(x) + SHAPE.from_unit(x)
def call_super(x): return SQUARE.area(x)
def call_subclass_method(x): return SQUARE.describe(x)
def call_bound_method_value(x):
    f = SHAPE.area
    return f(x)
def call_map_function(xs): return list(map(double, xs))
def call_function_passed(fn, x): return fn(x) * 2
def call_higher_order(x):
    def apply(fn, v):
        return fn(v)
    return apply(double, x) + apply(lambda v: v - 1, x)
def call_default_tensor(x, w=None):
    return x if w is None else x * w
def call_generator_helper(x):
    def evens(n):
        for i in range(n):
            if i % 2 == 0:
                yield x * i
    return sum(evens(5))


CASES = [
    (call_global, lambda: (t(3),), 2),
    (call_default, lambda: (t(3),), 1),
    (call_default_override, lambda: (t(3),), 1),
    (call_keyword, lambda: (t(3),), 1),
    (call_kwonly, lambda: (t(3),), 2),
    (call_kwonly_all, lambda: (t(3),), 2),
    (call_posonly, lambda: (t(3), t(3)), 2),
    (call_posonly_default, lambda: (t(3), t(3)), 2),
    (call_star, lambda: (t(3), t(3)), 2),
    (call_star_unpack, lambda: ([t(3), t(3), t(3)],), 2),
    (call_starstar, lambda: (t(3),), 2),
    (call_starstar_unpack, lambda: (t(3), {"a": 3.0}), 2),
    (call_both_unpack, lambda: ((t(3), 2.0), {"d": t(3), "e": 1.0}), 6),
    (call_everything, lambda: (t(3),), 8),
    (call_decorated, lambda: (t(3),), 2),
    (call_decorated_plain, lambda: (t(3),), 2),
    (call_recursive, lambda: (t(3),), 4),
    (call_lambda, lambda: (t(3),), 3),
    (call_closure, lambda: (t(3),), 4),
    (call_nested_closure, lambda: (t(3),), 3),
    (call_nonlocal, lambda: (t(3),), 2),
    (call_closure_global_factory, lambda: (t(3),), 1),
    (call_method, lambda: (t(3),), 2),
    (call_property, lambda: (t(3),), 1),
    (call_staticmethod, lambda: (t(3),), 3),
    (call_classmethod, lambda: (t(3),), 3),
    (call_super, lambda: (t(3),), 3),
    (call_subclass_method, lambda: (t(3),), 4),
    (call_bound_method_value, lambda: (t(3),), 2),
    (call_map_function, lambda: ([t(3), t(2)],), 2),
    (call_function_passed, lambda: (double, t(3)), 2),
    (call_higher_order, lambda: (t(3),), 3),
    (call_default_tensor, lambda: (t(3),), 0),
    (call_default_tensor, lambda: (t(3), t(3)), 1),
    (call_generator_helper, lambda: (t(3),), 6),
]


@pytest.mark.parametrize("fn,make_args,ops", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_inlined_calls_match_eager(fn, make_args, ops):
    check(fn, *make_args(), graphs=1 if ops else 0, ops=ops, fullgraph=True)


def test_recursion_beyond_the_depth_limit_is_unsupported_not_wrong():
    import framegraph
    from framegraph.exc import Unsupported

    with framegraph.config.patch(inline_depth_limit=3):
        with pytest.raises(Unsupported, match="Inline depth exceeded"):
            framegraph.compile(call_recursive, backend="eager", fullgraph=True)(t(3))
        # Without fullgraph the frame runs eagerly, and the answer is still right.
        check(call_recursive, t(3), graphs=None)


def test_changing_a_closure_value_recompiles():
    import framegraph
    from .helpers import CountingBackend, assert_same

    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(call_function_passed, backend=backend)
    for k in (2.0, 2.0, 5.0):
        fn = make_adder(k)
        assert_same(call_function_passed(fn, t(3)), compiled(fn, t(3)))
    assert backend.graph_count == 2
