"""The operations of the semantics matrix: what a program does to a value. Each is a function
`op(v, x)` of the value and a tensor, traced as a callee of the compiled function; what it
returns (or raises) is compared with eager's, and the value itself after it.
"""

from __future__ import annotations

import copy

import torch


def _helper(v):
    return v


def attribute_read(v, x):
    return getattr(v, "a", "missing")


def attribute_write(v, x):
    v.a = 5
    return v.a


def attribute_delete(v, x):
    del v.a
    return hasattr(v, "a")


def has_attribute(v, x):
    return hasattr(v, "a"), hasattr(v, "__len__")


def type_name(v, x):
    return type(v).__name__


def class_attribute(v, x):
    return v.__class__ is type(v)


def call_no_args(v, x):
    return v()


def call_with_tensor(v, x):
    return v(x)


def iterate(v, x):
    return [item for item in v]


def next_of_iter(v, x):
    return next(iter(v))


def unpack_first(v, x):
    first, *rest = v
    return first, len(rest)


def contains(v, x):
    return 1 in v, "a" in v


def equal(v, x):
    return v == v, v != 1, v == 1


def identity(v, x):
    return v is v, v is None, v is not _helper(v)


def order(v, x):
    return v < v


def hash_value(v, x):
    return hash(v) == hash(v)


def dict_key(v, x):
    d = {v: x}
    return d[v] + 1


def set_member(v, x):
    s = {v}
    return v in s, len(s)


def truth(v, x):
    if v:
        return x + 1
    return x - 1


def negate(v, x):
    return not v


def length(v, x):
    return len(v)


def item_read(v, x):
    return v[0]


def item_read_by_key(v, x):
    return v["a"]


def item_write(v, x):
    v[0] = 7
    return v[0]


def item_delete(v, x):
    del v[0]
    return len(v)


def add_itself(v, x):
    return v + v


def multiply(v, x):
    return v * 2


def inplace_add(v, x):
    w = v
    w += v
    return w is v


def inplace_or(v, x):
    w = v
    w |= v
    return w is v


def text(v, x):
    return str(v), repr(v)


def formatted(v, x):
    return f"<{v}>", format(v, "")


def instance_checks(v, x):
    return isinstance(v, (int, str)), isinstance(v, object), issubclass(type(v), tuple)


def ident(v, x):
    first = id(v)
    return first == id(v), first == id(_helper(v))


def shallow_copy(v, x):
    c = copy.copy(v)
    return c == v


def deep_copy(v, x):
    c = copy.deepcopy(v)
    return type(c) is type(v)


def passed_and_returned(v, x):
    return _helper(v)


def across_a_break(v, x):
    y = x * 2
    torch._dynamo.graph_break()
    return v, y


def star_call(v, x):
    return _helper(*v)


def keyword_call(v, x):
    return dict(**v)


def sort(v, x):
    return sorted(v)


def with_block(v, x):
    with v as entered:
        return entered


OPERATIONS = {fn.__name__: fn for fn in (
    attribute_read, attribute_write, attribute_delete, has_attribute, type_name, class_attribute,
    call_no_args, call_with_tensor, iterate, next_of_iter, unpack_first, contains, equal, identity,
    order, hash_value, dict_key, set_member, truth, negate, length, item_read, item_read_by_key,
    item_write, item_delete, add_itself, multiply, inplace_add, inplace_or, text, formatted,
    instance_checks, ident, shallow_copy, deep_copy, passed_and_returned, across_a_break, star_call,
    keyword_call, sort, with_block,
)}
