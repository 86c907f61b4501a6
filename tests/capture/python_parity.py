"""The parity check of the Python-breadth modules (test_parity_*.py): each case runs eagerly,
under framegraph and under torch.compile with counting backends (`datadep_cases.compare`, which
compares results, raised exception types and mutated arguments), twice on fresh arguments.

A case passes when framegraph has no more breaks and no fewer captured ops than torch.compile.
Where it breaks less, the case passes and is recorded in `AHEAD` (printed at the end of the
session by the conftest hook, `-rA` shows it per test too).
"""

from __future__ import annotations

import types

import pytest
import torch

from .datadep_cases import at_least_torch, compare
from .helpers import assert_same

# name -> (framegraph counts, torch.compile counts) for cases where framegraph breaks less.
AHEAD: dict[str, tuple] = {}


def t(*shape, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed + sum(shape) + len(shape))
    return torch.randn(*shape, generator=generator)


# id(an iterator eager returned) -> (it, the items it had left), read once (holding it keeps the id).
_ITEMS_LEFT: dict[int, tuple] = {}


def same(expected, actual, path: str = "result") -> None:
    """assert_same, where functions (closures and lambdas a case returns) are the same when
    they have the same code and defaults, and their cells hold the same values, and
    iterators when they are of one type and have the same items left."""
    if isinstance(expected, (list, tuple)) and type(expected) is type(actual) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual)):
            same(e, a, f"{path}[{i}]")
    elif isinstance(expected, dict) and type(actual) is dict and list(expected) == list(actual):
        for key in expected:
            same(expected[key], actual[key], f"{path}[{key!r}]")
    elif isinstance(expected, (types.GeneratorType, zip, map, filter, enumerate)):
        # An iterator a case returns: the same kind, with the same items left (taken from both).
        assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
        if id(expected) not in _ITEMS_LEFT:  # eager's result is compared with each frontend's
            _ITEMS_LEFT[id(expected)] = (expected, list(expected))
        same(_ITEMS_LEFT[id(expected)][1], list(actual), f"{path} items")
    elif isinstance(expected, types.FunctionType):
        assert isinstance(actual, types.FunctionType), f"{path}: {actual!r} is not a function"
        assert actual.__code__ is expected.__code__, f"{path}: code {actual.__code__} != {expected.__code__}"
        same(expected.__defaults__, actual.__defaults__, f"{path}.__defaults__")
        cells = [c.cell_contents for c in expected.__closure__ or ()]
        same(cells, [c.cell_contents for c in actual.__closure__ or ()], f"{path}.__closure__")
    else:
        assert_same(expected, actual, path)


def check(fn, make_args) -> None:
    counts = compare(fn, make_args(), make_args(), scalars=False, shapes=False, dead_ops=False, same=same)
    assert at_least_torch(counts), counts
    ours, theirs = counts["framegraph"], counts["torch"]
    if ours.breaks < theirs.breaks or (theirs.graphs == 0 and ours.graphs > 0):
        AHEAD[fn.__qualname__] = (ours, theirs)
        print(f"framegraph breaks less than torch.compile on {fn.__qualname__}: {ours} vs {theirs}")


def parametrize(cases: list[tuple], short: dict[str, str]):
    """Parametrises a test over `(fn, make_args)` cases by function name; a case named in
    `short` (name -> why framegraph falls short of torch.compile there) is a strict xfail."""
    params = []
    for fn, make_args in cases:
        marks = [pytest.mark.xfail(strict=True, reason=short[fn.__name__])] if fn.__name__ in short else []
        params.append(pytest.param(fn, make_args, id=fn.__name__, marks=marks))
    unknown = set(short) - {fn.__name__ for fn, _ in cases}
    assert not unknown, f"short-list names without a case: {unknown}"
    return pytest.mark.parametrize("fn, make_args", params)
