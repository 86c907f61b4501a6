"""Differential testing: run a function eagerly and compiled, and compare everything."""

from __future__ import annotations

import collections
import copy
import dataclasses
import inspect
import types
from typing import Any, Callable

import torch

import framegraph
from framegraph.counters import counters


@dataclasses.dataclass
class CountingBackend:
    """An eager backend that records every graph it is given."""

    graphs: list[torch.fx.GraphModule] = dataclasses.field(default_factory=list)

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def op_count(self) -> int:
        return sum(1 for g in self.graphs for n in g.graph.nodes
                   if n.op in ("call_function", "call_method", "call_module"))


def clone(value: Any, memo: dict | None = None) -> Any:
    """A deep copy in which tensors are cloned with their requires_grad; an object that
    appears twice is copied once, so aliasing between arguments survives."""
    memo = {} if memo is None else memo  # id -> copy; under "alive", the originals, so no id is reused
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, torch.Tensor):
        copied = value.detach().clone()
        result = copied.requires_grad_(value.requires_grad) if value.is_leaf else copied
        _remember(memo, value, result)
        for name, attribute in vars(value).items():  # what the program set on the tensor
            setattr(result, name, clone(attribute, memo))
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        result = type(value)(*(clone(v, memo) for v in value))
    elif type(value) in (list, tuple):
        result = type(value)(clone(v, memo) for v in value)
    elif type(value) is dict:
        result = {k: clone(v, memo) for k, v in value.items()}
    elif type(value) is collections.deque:
        result = collections.deque((clone(v, memo) for v in value), value.maxlen)
    elif isinstance(value, (dict, list)):
        # a subclass (OrderedDict, defaultdict, Counter, the program's own): its type, its
        # factory and its attributes kept, the items cloned without running its methods
        result = copy.copy(value)
        _remember(memo, value, result)
        if isinstance(value, dict):
            dict.clear(result)
            dict.update(result, {k: clone(v, memo) for k, v in dict.items(value)})
        else:
            list.clear(result)
            list.extend(result, [clone(v, memo) for v in list.__iter__(value)])
        if hasattr(value, "__dict__"):
            object.__setattr__(result, "__dict__", clone(vars(value), memo))
    elif _plain_object(value):
        result = copy.copy(value)
        _remember(memo, value, result)
        object.__setattr__(result, "__dict__", clone(vars(value), memo))  # not through a __setattr__ of the class
    elif type(value).__getattribute__ is not object.__getattribute__:
        result = value  # cannot be copied safely; such test inputs are never mutated
    else:
        result = copy.copy(value)
    _remember(memo, value, result)
    return result


def _remember(memo: dict, value: Any, result: Any) -> None:
    memo[id(value)] = result
    memo.setdefault("alive", []).append(value)


def assert_same(expected: Any, actual: Any, path: str = "result", _seen: set | None = None) -> None:
    """Compares what a run left with what eager left, by value and structure. A pair met
    again (an object that refers to itself) counts as equal there: the rest of the walk
    compares what it holds."""
    seen = set() if _seen is None else _seen
    if (id(expected), id(actual)) in seen:
        return
    seen.add((id(expected), id(actual)))
    _assert_same(expected, actual, path, lambda e, a, p: assert_same(e, a, p, seen))


def _assert_same(expected: Any, actual: Any, path: str, assert_same) -> None:
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{path}: expected a tensor, got {type(actual)}"
        assert expected.dtype == actual.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert expected.shape == actual.shape, f"{path}: shape {actual.shape} != {expected.shape}"
        assert expected.requires_grad == actual.requires_grad, f"{path}: requires_grad differs"
        torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{path}: {m}")
        return
    assert type(expected) is type(actual), f"{path}: type {type(actual)} != {type(expected)}"
    if isinstance(expected, collections.deque):
        assert expected.maxlen == actual.maxlen, f"{path}: maxlen {actual.maxlen} != {expected.maxlen}"
        assert_same(list(expected), list(actual), f"{path} items")
        return
    if isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert list(expected) == list(actual), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_same(expected[k], actual[k], f"{path}[{k!r}]")
    elif isinstance(expected, torch.nn.Module):  # compared by what a module's state is
        assert [m.training for m in expected.modules()] == [m.training for m in actual.modules()], \
            f"{path}: training flags differ"
        assert_same(dict(expected.state_dict()), dict(actual.state_dict()), f"{path}.state_dict()")
    elif _plain_object(expected):
        assert_same(vars(expected), vars(actual), f"{path}.__dict__")
    elif _slotted_object(expected):
        for name in _slot_names(type(expected)):
            mine, theirs = getattr(expected, name, _UNSET), getattr(actual, name, _UNSET)
            assert (mine is _UNSET) == (theirs is _UNSET), f"{path}.{name}: set in only one of them"
            if mine is not _UNSET:
                assert_same(mine, theirs, f"{path}.{name}")
    elif isinstance(expected, types.FunctionType) and expected is not actual:
        # A closure or lambda the function made: the same code, defaults and cell contents.
        assert actual.__code__ is expected.__code__, f"{path}: code {actual.__code__} != {expected.__code__}"
        assert_same(expected.__defaults__, actual.__defaults__, f"{path}.__defaults__")
        assert_same([c.cell_contents for c in expected.__closure__ or ()],
                    [c.cell_contents for c in actual.__closure__ or ()], f"{path}.__closure__")
    elif isinstance(expected, torch.Generator):  # compared by where it is in its stream
        assert torch.equal(expected.get_state(), actual.get_state()), f"{path}: generator state differs"
    elif isinstance(expected, _LAZY_ITERATORS) and expected is not actual:
        # An iterator the function returned: the items it has left (taken from both; eager's
        # are read once and kept, since one eager result is compared with several runs).
        if id(expected) not in _ITEMS_LEFT:
            _ITEMS_LEFT[id(expected)] = (expected, list(expected))
        assert_same(_ITEMS_LEFT[id(expected)][1], list(actual), f"{path} items")
    else:
        assert expected == actual, f"{path}: {actual!r} != {expected!r}"


_LAZY_ITERATORS = (types.GeneratorType, zip, map, filter, enumerate)
_ITEMS_LEFT: dict[int, tuple] = {}  # id(an expected iterator) -> (it, its items), holding it keeps the id


def _plain_object(value: Any) -> bool:
    """An instance of an ordinary class, compared and copied through its __dict__ (one with a
    `__call__` of its own too; not a function, a method or a class)."""
    cls = type(value)
    return (cls.__getattribute__ is object.__getattribute__ and hasattr(value, "__dict__")
            and not isinstance(value, (type, torch.nn.Module))
            and (not callable(value) or isinstance(inspect.getattr_static(cls, "__call__", None), types.FunctionType)))


_UNSET = object()


def _slotted_object(value: Any) -> bool:
    """An instance of an ordinary class with __slots__ and no __dict__, compared slot by slot."""
    cls = type(value)
    return (cls.__getattribute__ is object.__getattribute__ and not hasattr(value, "__dict__")
            and cls.__module__ != "builtins" and bool(_slot_names(cls)))


def _slot_names(cls: type) -> list[str]:
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [n for n in slots if n not in ("__dict__", "__weakref__")]
    return names


def _call(fn: Callable, args: tuple) -> tuple[Any, BaseException | None]:
    try:
        return fn(*args), None
    except Exception as error:  # the user's exception is part of what must match
        return None, error


def check(fn: Callable, *args: Any, graphs: int | None = 1, ops: int | None = None,
          backend: Callable | None = None, fullgraph: bool = False) -> CountingBackend:
    """Asserts compiled == eager (result, mutated inputs, exception) and the graph/op counts."""
    framegraph.reset()
    counters.clear()
    eager_args, compiled_args = clone(args), clone(args)
    expected, expected_error = _call(fn, eager_args)
    counting = CountingBackend()
    compiled = framegraph.compile(fn, backend=backend or counting, fullgraph=fullgraph)
    actual, actual_error = _call(compiled, compiled_args)
    if expected_error is not None or actual_error is not None:
        assert type(actual_error) is type(expected_error), f"raised {actual_error!r}, eager raised {expected_error!r}"
        assert str(actual_error) == str(expected_error)
    else:
        assert_same(expected, actual)
    assert_same(eager_args, compiled_args, "mutated inputs")
    assert not counters["fallback"], f"framegraph fell back: {dict(counters['fallback'])}"
    if backend is None:
        if graphs is not None:
            assert counting.graph_count == graphs, f"{counting.graph_count} graphs, expected {graphs}"
        if ops is not None:
            assert counting.op_count == ops, f"{counting.op_count} ops, expected {ops}"
        assert counters["stats"]["unique_graphs"] == counting.graph_count
        assert counters["stats"]["calls_captured"] == counting.op_count
    check.compiled = compiled  # for follow-up calls in the same test
    check.backend = counting
    return counting


def gradients_like_eager(fn: Callable, arguments: Callable[[], tuple], grads: Callable,
                         backend: Callable | None = None) -> CountingBackend:
    """Asserts that `grads(f, *arguments())` (a forward and backward, returning what to
    compare: outputs and gradients) gives the same with `fn` compiled as eagerly, each on fresh
    arguments; no fallback. Returns the counting backend (used unless `backend` is given) for
    the caller's own counts; the breaks are in `counters["graph_break"]`."""
    expected = grads(fn, *arguments())
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    assert_same(expected, grads(framegraph.compile(fn, backend=backend or counting), *arguments()))
    assert not counters["fallback"], f"framegraph fell back: {dict(counters['fallback'])}"
    return counting


def call_again(*args: Any, fn: Callable) -> Any:
    """Calls the last compiled function again and compares with eager."""
    expected = fn(*clone(args))
    actual = check.compiled(*clone(args))
    assert_same(expected, actual)
    return actual
