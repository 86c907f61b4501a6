"""Containers and builtins with CPython's semantics: tuples, lists, dicts, sets, namedtuples,
dataclasses, slices, ranges, their methods, iteration, unpacking, comprehensions, builtins,
math/operator on constants and string formatting. One graph each, no fallback."""

import collections
import dataclasses
import math
import operator

import pytest
import torch

from .helpers import check

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Config:
    scale: float
    shift: float = 0.5


def t(*shape):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape)


# ---- containers ---------------------------------------------------------------------------
def tuple_index_count(x): return x * (1, 2, 2).index(2) + (1, 2, 2).count(2)
def tuple_slice(xs): return xs[1:][0] + xs[-1]
def tuple_compare(x): return x * ((1, 2) < (1, 3)) + x * ((1, 2) == (1, 2))
def list_methods(x):
    xs = [x, x + 1]
    xs.append(x * 2)
    xs.insert(0, x - 1)
    xs.extend([x, x])
    last = xs.pop()
    first = xs.pop(0)
    xs.reverse()
    return xs[0] + last + first + len(xs)
def list_setitem(x):
    xs = [1, 2, 3]
    xs[1] = 5
    xs[0:2] = [7]
    return x * sum(xs)
def list_del(x):
    xs = [x, x * 2, x * 3]
    del xs[0]
    return xs[0] + xs[-1]
def list_sort_constants(x):
    xs = [3, 1, 2]
    xs.sort(reverse=True)
    return x * xs[0] - xs[-1]
def list_remove(x):
    xs = [1, 2, 3]
    xs.remove(2)
    return x + xs[1]
def list_concat_repeat(x): return ([x] + [x * 2]) * 2
def list_iadd(x):
    xs = [x]
    xs += [x + 1]
    return xs
def list_in(x): return x * (2 in [1, 2, 3]) + x * ("a" not in ["b"])
def list_equality(x): return x if [1, 2] == [1, 2] else -x
def dict_methods(x):
    d = {"a": x}
    d["b"] = x * 2
    d.update(c=x * 3)
    d.setdefault("a", x * 100)
    d.setdefault("e", x * 5)
    gone = d.pop("c")
    return d["a"] + d.get("b") + d.get("missing", x) + gone + d["e"] + len(d)
def dict_iteration(d):
    total = 0
    for key in d:
        total = total + d[key]
    for key, value in d.items():
        total = total + value * len(key)
    for value in d.values():
        total = total - value
    return total, list(d.keys())
def dict_ordering(x):
    d = {}
    d["z"] = x
    d["a"] = x + 1
    d["m"] = x + 2
    del d["a"]
    return list(d), d
def dict_comprehension(x): return {f"k{i}": x * i for i in range(3)}
def dict_from_pairs(x): return dict([("a", x), ("b", x + 1)], c=x * 2)
def dict_merge(x):
    base = {"a": x}
    return {**base, "b": x * 2}
def dict_contains(d): return d["a"] * ("a" in d) + ("q" in d)
def set_ops(x):
    s = {1, 2, 3}
    s.add(4)
    s.discard(1)
    u = {1, 2} | {3}
    return x * len(s | u) + x * len(s & {2, 3}) + x * (3 in s)
def set_comprehension(x): return x * len({i % 3 for i in range(10)})
def frozenset_in(x): return x * (2 in frozenset([1, 2]))
def namedtuple_build(x): return Point(x, x * 2)
def namedtuple_fields(p): return p.x * p.y + p[0]
def namedtuple_keyword(x): return Point(y=x, x=x + 1).x
def namedtuple_unpack(p):
    a, b = p
    return a - b
def dataclass_build(x):
    c = Config(2.0)
    return x * c.scale + c.shift
def dataclass_input(x, cfg): return x * cfg.scale + cfg.shift
def slice_object(x):
    s = slice(1, 3)
    return x[s]
def range_ops(x):
    r = range(2, 10, 3)
    return x * len(r) + x * r[1] + x * (5 in r) + x * sum(r)
def range_reversed(x):
    out = x
    for i in reversed(range(3)):
        out = out * (i + 1)
    return out
def star_unpack_middle(xs):
    a, *mid, b = xs
    return a + b + len(mid)
def nested_unpack(x):
    (a, b), c = (x, x + 1), x * 2
    return a + b + c
def swap_values(x, y):
    x, y = y, x
    return x - y
def list_comprehension(xs): return [v * 2 for v in xs if v.dim() == 1]
def nested_comprehension(x): return [[x * i * j for j in range(2)] for i in range(2)]
def comprehension_with_closure(x):
    k = 3
    return [x * k + i for i in range(2)]
def generator_expression(xs): return sum(v * v for v in xs)
def walrus(x):
    if (n := x.dim()) > 0:
        return x * n
    return x


# ---- builtins -----------------------------------------------------------------------------
def builtin_len(x, xs): return x * len(xs) + len("abc")
def builtin_isinstance(x, n): return x * isinstance(n, int) + x * isinstance(x, (int, torch.Tensor))
def builtin_issubclass(x): return x * issubclass(bool, int)
def builtin_type(x, n): return x * (type(n) is int) + x * (type(x) is torch.Tensor)
def builtin_callable(x): return x * callable(len) - x * callable(3)
def builtin_getattr(x):
    c = Config(2.0)
    return x * getattr(c, "scale") + getattr(c, "missing", 1.0)
def builtin_hasattr(x, cfg): return x * hasattr(cfg, "scale") + hasattr(cfg, "nope")
def builtin_setattr(x):
    c = Config(1.0)
    setattr(c, "scale", 4.0)
    return x * c.scale
def builtin_range_enumerate(xs):
    out = 0
    for i, v in enumerate(xs, start=1):
        out = out + v * i
    return out
def builtin_zip(xs, ys): return [a * b for a, b in zip(xs, ys)]
def builtin_zip_strict(xs, ys): return [a + b for a, b in zip(xs, ys, strict=True)]
def builtin_map(xs): return list(map(lambda v: v + 1, xs))
def builtin_map_two(xs, ys): return list(map(operator.mul, xs, ys))
def builtin_filter(x): return x * len(list(filter(lambda i: i % 2, range(7))))
def builtin_filter_none(x): return x * len(list(filter(None, [0, 1, 2, 0])))
def builtin_reversed(xs): return list(reversed(xs))
def builtin_sorted(x): return x * sorted([3, 1, 2])[0] + x * sorted([3, 1, 2], reverse=True)[0]
def builtin_sorted_key(x): return x * sorted(["bb", "a", "ccc"], key=len)[-1].count("c")
def builtin_min_max(x): return x * min(3, 1, 2) + x * max([4, 9, 2]) + x * max(1.5, 2)
def builtin_abs(x): return abs(x) + abs(-3)
def builtin_sum(xs): return sum(xs) + sum([1, 2, 3])
def builtin_sum_start(xs): return sum(xs, xs[0])
def builtin_any_all(x): return x * any([0, 0, 1]) + x * all([1, 2, 3]) + x * all([])
def builtin_round(x): return x * round(2.567, 1) + round(7.5)
def builtin_divmod_pow(x): return x * divmod(17, 5)[0] + x * pow(2, 3) + pow(x, 2)
def builtin_conversions(x): return x * int("3") + x * float(2) + x * bool([]) + x * len(str(12))
def builtin_tuple_list(xs): return tuple(xs), list(xs)
def builtin_iter_next(xs):
    it = iter(xs)
    first = next(it)
    second = next(it)
    return first * second + next(it, 7)
def math_functions(x): return x * math.sqrt(16) + x * math.floor(2.7) + x * math.pi
def operator_functions(x): return operator.add(x, operator.mul(2, 3))
def operator_on_tensors(x, y): return operator.sub(operator.matmul(x, y), 1)
def fstring(x, n): return x * len(f"{n:>5}|{n!r}|{3.14159:.2f}")
def str_format(x, n): return x * len("{}-{:03d}".format("a", n))
def percent_format(x, n): return x * len("%s:%d" % ("a", n))
def str_methods(x): return x * len("a,b,c".split(",")) + x * "abc".upper().count("B")


CASES = [
    (tuple_index_count, lambda: (t(3),), 2),
    (tuple_slice, lambda: ((t(3), t(3), t(3)),), 1),
    (tuple_compare, lambda: (t(3),), 3),
    (list_methods, lambda: (t(3),), 4),  # items popped before use are never computed
    (list_setitem, lambda: (t(3),), 1),
    (list_del, lambda: (t(3),), 3),
    (list_sort_constants, lambda: (t(3),), 2),
    (list_remove, lambda: (t(3),), 1),
    (list_concat_repeat, lambda: (t(3),), 1),
    (list_iadd, lambda: (t(3),), 1),
    (list_in, lambda: (t(3),), 3),
    (list_equality, lambda: (t(3),), 0),
    (dict_methods, lambda: (t(3),), 8),  # the unused setdefault default is dropped
    (dict_iteration, lambda: ({"ab": t(3), "c": t(3)},), 8),
    (dict_ordering, lambda: (t(3),), 1),  # the deleted entry is never computed
    (dict_comprehension, lambda: (t(3),), 3),
    (dict_from_pairs, lambda: (t(3),), 2),
    (dict_merge, lambda: (t(3),), 1),
    (dict_contains, lambda: ({"a": t(3)},), 2),
    (set_ops, lambda: (t(3),), 5),
    (set_comprehension, lambda: (t(3),), 1),
    (frozenset_in, lambda: (t(3),), 1),
    (namedtuple_build, lambda: (t(3),), 1),
    (namedtuple_fields, lambda: (Point(t(3), t(3)),), 2),
    (namedtuple_keyword, lambda: (t(3),), 1),
    (namedtuple_unpack, lambda: (Point(t(3), t(3)),), 1),
    (dataclass_build, lambda: (t(3),), 2),
    (dataclass_input, lambda: (t(3), Config(3.0, 1.0)), 2),
    (slice_object, lambda: (t(5),), 1),
    (range_ops, lambda: (t(3),), 7),
    (range_reversed, lambda: (t(3),), 3),
    (star_unpack_middle, lambda: ([t(3), t(3), t(3), t(3)],), 2),
    (nested_unpack, lambda: (t(3),), 4),
    (swap_values, lambda: (t(3), t(3)), 1),
    (list_comprehension, lambda: ([t(3), t(2, 2), t(4)],), 2),
    (nested_comprehension, lambda: (t(3),), 8),
    (comprehension_with_closure, lambda: (t(3),), 4),
    (generator_expression, lambda: ([t(3), t(3)],), 4),
    (walrus, lambda: (t(3),), 1),
    (builtin_len, lambda: (t(3), [1, 2]), 2),
    (builtin_isinstance, lambda: (t(3), 3), 3),
    (builtin_issubclass, lambda: (t(3),), 1),
    (builtin_type, lambda: (t(3), 3), 3),
    (builtin_callable, lambda: (t(3),), 3),
    (builtin_getattr, lambda: (t(3),), 2),
    (builtin_hasattr, lambda: (t(3), Config(1.0)), 2),
    (builtin_setattr, lambda: (t(3),), 1),
    (builtin_range_enumerate, lambda: ([t(3), t(3)],), 4),
    (builtin_zip, lambda: ([t(3), t(3)], [t(3), t(3), t(3)]), 2),
    (builtin_zip_strict, lambda: ([t(3), t(3)], [t(3), t(3)]), 2),
    (builtin_map, lambda: ([t(3), t(2)],), 2),
    (builtin_map_two, lambda: ([t(3), t(2)], [2.0, 3.0]), 2),
    (builtin_filter, lambda: (t(3),), 1),
    (builtin_filter_none, lambda: (t(3),), 1),
    (builtin_reversed, lambda: ([t(3), t(2)],), 0),
    (builtin_sorted, lambda: (t(3),), 3),
    (builtin_sorted_key, lambda: (t(3),), 1),
    (builtin_min_max, lambda: (t(3),), 5),
    (builtin_abs, lambda: (t(3),), 2),
    (builtin_sum, lambda: ([t(3), t(3)],), 3),
    (builtin_sum_start, lambda: ([t(3), t(3)],), 2),
    (builtin_any_all, lambda: (t(3),), 5),
    (builtin_round, lambda: (t(3),), 2),
    (builtin_divmod_pow, lambda: (t(3),), 5),
    (builtin_conversions, lambda: (t(3),), 7),
    (builtin_tuple_list, lambda: ([t(3), t(3)],), 0),
    (builtin_iter_next, lambda: ([t(3), t(3)],), 2),
    (math_functions, lambda: (t(3),), 5),
    (operator_functions, lambda: (t(3),), 1),
    (operator_on_tensors, lambda: (t(2, 3), t(3, 2)), 2),
    (fstring, lambda: (t(3), 42), 1),
    (str_format, lambda: (t(3), 7), 1),
    (percent_format, lambda: (t(3), 7), 1),
    (str_methods, lambda: (t(3),), 3),
]


@pytest.mark.parametrize("fn,make_args,ops", CASES, ids=[c[0].__name__ for c in CASES])
def test_containers_and_builtins_match_eager(fn, make_args, ops):
    check(fn, *make_args(), graphs=1 if ops else 0, ops=ops, fullgraph=True)
