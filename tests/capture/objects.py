"""Running a function eagerly, under framegraph and under torch.compile, and comparing objects.

`parity` is the differential check of test_user_defined.py and test_model_outputs.py: fresh
arguments for every run (objects that the call changes are made anew), the results and what
the call left in its arguments compared as object graphs (types, dict items in order, list
items, instance `__dict__`s, and which results are the same object), and both compilers'
graph and break counts asserted.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same


class AttributeMapped:
    """Reads and writes go through the class's `attribute_map`, with super() in both hooks,
    as transformers' PreTrainedConfig does."""

    attribute_map: dict = {}

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    def __setattr__(self, key, value):
        if key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        super().__setattr__(key, value)


def same(expected: Any, actual: Any, path: str = "result", seen: dict | None = None) -> None:
    """`actual` is a copy of `expected`'s object graph, aliasing included."""
    seen = {} if seen is None else seen
    if isinstance(expected, torch.Tensor):
        assert_same(expected, actual, path)
        # attributes the program set on the tensor (framegraph's and torch's marks aside)
        mine = {k: v for k, v in vars(expected).items() if not k.startswith("_")}
        theirs = {k: v for k, v in vars(actual).items() if not k.startswith("_")}
        assert list(mine) == list(theirs), f"{path}.__dict__: {list(theirs)} != {list(mine)}"
        for name, value in mine.items():
            same(value, theirs[name], f"{path}.{name}", seen)
        return
    if expected is None or isinstance(expected, (bool, int, float, str)):
        assert_same(expected, actual, path)
        return
    if id(expected) in seen:
        assert seen[id(expected)] is actual, f"{path}: the same object eagerly, another one compiled"
        return
    seen[id(expected)] = actual
    assert type(expected) is type(actual), f"{path}: type {type(actual)} != {type(expected)}"
    if isinstance(expected, torch.nn.Module):
        assert expected is actual or list(vars(expected)) == list(vars(actual)), f"{path}: module attributes"
        for name, value in vars(expected).items():
            if not name.startswith("_"):
                same(value, vars(actual)[name], f"{path}.{name}", seen)
        return
    if isinstance(expected, dict):
        assert list(expected) == list(actual), f"{path}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            same(dict.__getitem__(expected, key), dict.__getitem__(actual, key), f"{path}[{key!r}]", seen)
    elif isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            same(e, a, f"{path}[{i}]", seen)
    elif hasattr(expected, "__next__"):  # an iterator: what is left of it, read without taking it
        same(expected.__reduce__()[1:], actual.__reduce__()[1:], f"{path}.__reduce__()", seen)
    elif not hasattr(type(expected), "__dict__") or type(expected).__module__ == "builtins":
        assert expected == actual, f"{path}: {actual!r} != {expected!r}"
    try:
        attributes = object.__getattribute__(expected, "__dict__")
    except AttributeError:
        return
    theirs = object.__getattribute__(actual, "__dict__")
    assert list(attributes) == list(theirs), f"{path}.__dict__: {list(theirs)} != {list(attributes)}"
    for name, value in attributes.items():
        same(value, theirs[name], f"{path}.{name}", seen)


def _torch_breaks() -> int:
    from torch._dynamo.utils import counters as torch_counters

    return sum(torch_counters["graph_break"].values())


def framegraph_runs(fn: Callable, make_args: Callable[[], tuple], graphs: int, breaks: int,
                    calls: int = 2) -> tuple[Any, tuple, Callable]:
    """Asserts framegraph's runs of `fn` match eager's (results and the state the call leaves
    in its arguments) and its (graphs, breaks); returns eager's result, eager's arguments
    after the call, and the compiled function."""
    expected_args = make_args()
    expected = fn(*expected_args)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(fn, backend=counting)
    for call in range(calls):
        args = make_args()
        actual = compiled(*args)
        same((expected, expected_args), (actual, args), f"call {call}")
    assert not counters["fallback"], dict(counters["fallback"])
    found = (counting.graph_count, sum(counters["graph_break"].values()))
    assert found == (graphs, breaks), f"framegraph: {found} (graphs, breaks), {dict(counters['graph_break'])}"
    return expected, expected_args, compiled


def parity(fn: Callable, make_args: Callable[[], tuple], graphs: int, breaks: int,
           torch_counts: tuple[int, int] | None = None, calls: int = 2, torch_wrong: str = "") -> Callable:
    """framegraph_runs, then the same for torch.compile: its (graphs, breaks) are framegraph's
    unless `torch_counts` says otherwise. `torch_wrong` names a known torch.compile bug: then
    its result must differ from eager's."""
    import torch._dynamo

    expected, expected_args, compiled = framegraph_runs(fn, make_args, graphs, breaks, calls)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch_counting = CountingBackend()
    args = make_args()
    actual = torch.compile(fn, backend=torch_counting)(*args)
    if torch_wrong:
        with pytest.raises(AssertionError):
            same((expected, expected_args), (actual, args), "torch.compile")
    else:
        same((expected, expected_args), (actual, args), "torch.compile")
    found = (torch_counting.graph_count, _torch_breaks())
    assert found == (torch_counts or (graphs, breaks)), f"torch.compile: {found} (graphs, breaks)"
    torch._dynamo.reset()
    return compiled


SCALER_GAIN = 3.0  # read by `scaler`'s closures: a global of this module, not of their caller's


def scaler(k):
    """A closure whose code and globals belong to this module (as contextlib's are to it)."""
    def scale(v):
        return v * k * SCALER_GAIN
    return scale
