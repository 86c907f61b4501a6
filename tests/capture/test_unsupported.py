"""Every construct known to be unsupported raises Unsupported with a gb_type, the user's line
and a hint under fullgraph=True, and otherwise runs eagerly with the right answer."""

import inspect
import types

import numpy as np
import pytest
import torch

import framegraph
from framegraph.exc import Unsupported

from .helpers import check


def t(*shape):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape)


class Magic:
    @types.DynamicClassAttribute  # a descriptor of a library that is not traced (types)
    def anything(self):
        return 1.0


def calls_print(x):
    print("side effect")  # MARK
    return x + 1
def branches_on_data(x):
    if x.sum() > 0:  # MARK
        return x
    return -x
def loops_on_data(x):
    while x.sum() < 10:  # MARK
        x = x + 1
    return x
def item_call(x):
    return x * x.sum().item()  # MARK
def tolist_call(x):
    return sum(x.tolist()) + x  # MARK
def int_of_tensor(x):
    return x * int(x.sum())  # MARK
def numpy_call(x):
    return x + np.interp(0.5, [0.0, 1.0], [0.0, 2.0])  # MARK
def dynamic_shape(x):
    return x[x > 0]  # MARK
def custom_descriptor(x, obj):
    return x * obj.anything  # MARK
def huge_generator(x):
    def many():
        for i in range(20_000):
            yield i  # MARK
    return x * sum(many())
def set_of_tensors(x):
    return sum({x, x + 1})  # MARK


class WithProperty:
    @property
    def p(self):
        return 2.0


def property_get_with_keywords(x):
    return x * WithProperty.p.__get__(WithProperty(), WithProperty, extra=1)  # MARK
def property_with_a_doc(x):
    return x + property(lambda s: 1.0, None, None, "doc").fget(None)  # MARK


CASES = [
    (calls_print, lambda: (t(3),), "Attempted to call function marked as skipped", "print"),
    (branches_on_data, lambda: (t(3),), "Data-dependent branching", "truth value"),
    (loops_on_data, lambda: (t(3),), "Data-dependent branching", "truth value"),
    (item_call, lambda: (t(3),), "Tensor to Python scalar", "item"),
    (tolist_call, lambda: (t(3),), "Tensor to Python scalar", "tolist"),
    (int_of_tensor, lambda: (t(3),), "Tensor to Python scalar", "int"),
    (numpy_call, lambda: (t(3),), "Attempted to call function marked as skipped", "interp"),
    (dynamic_shape, lambda: (t(5),), "Dynamic shape operator", "depends on tensor values"),
    (custom_descriptor, lambda: (t(3), Magic()), "Unsupported attribute access", "descriptor DynamicClassAttribute"),
    (huge_generator, lambda: (t(3),), "Unsupported frame", "yielded over"),
    (set_of_tensors, lambda: (t(3),), "Unsupported builtin call", "set of objects made while tracing"),
    (property_get_with_keywords, lambda: (t(3),), "Unsupported method call", "property.__get__"),
    (property_with_a_doc, lambda: (t(3),), "Unsupported builtin call", "doc argument"),
]


def _mark_line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if "# MARK" in line)


@pytest.mark.parametrize("fn,make_args,gb_type,context", CASES, ids=[c[0].__name__ for c in CASES])
def test_fullgraph_names_the_reason_and_the_line(fn, make_args, gb_type, context):
    framegraph.reset()
    with pytest.raises(Unsupported) as info:
        framegraph.compile(fn, backend="eager", fullgraph=True)(*make_args())
    error = info.value
    assert error.gb_type == gb_type
    assert context in error.context
    assert error.hints and error.explanation
    filename, lineno, name = error.user_stack[0]
    assert (filename, lineno) == (__file__, _mark_line(fn)), error.user_stack


@pytest.mark.parametrize("fn,make_args,gb_type,context", CASES, ids=[c[0].__name__ for c in CASES])
def test_without_fullgraph_the_answer_is_right_and_the_reason_counted(fn, make_args, gb_type, context, capsys):
    """The frame is split at the construct (a graph break) or, where it cannot be split,
    runs eagerly; either way the result is eager's and the reason is counted."""
    check(fn, *make_args(), graphs=None)
    breaks = [reason for reason in framegraph.counters["graph_break"] if reason.startswith(gb_type)]
    assert breaks or framegraph.counters["unsupported"][gb_type] >= 1
