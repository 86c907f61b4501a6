"""Running one cell of the semantics matrix: a kind of value crossed with an operation, the
value passed as an argument or made inside the compiled function. The cell runs eagerly,
under framegraph and under torch.compile (each with a counting backend), twice on fresh
values; what each run returns or raises, and the value after it, are compared as described
values (`describe`), so that objects made in different runs compare by what they hold.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import re
import types
import warnings
from typing import Any, Callable

import numpy as np
import torch
import torch._dynamo

from framegraph.counters import counters

# The capture suite's helpers: `tests.capture` under `python -m`, `capture` under pytest
# (tests/ is not a package).
_TESTS = __package__.rpartition(".")[0]
_datadep, _frontends, _helpers = (importlib.import_module(f"{_TESTS + '.' if _TESTS else ''}capture.{name}")
                                  for name in ("datadep_cases", "frontends", "helpers"))
_break_count, _op_count = _datadep._break_count, _datadep._op_count
compile_with = _frontends.compile_with
CountingBackend, assert_same = _helpers.CountingBackend, _helpers.assert_same
from .kinds import KINDS, t
from .operations import OPERATIONS

PLACEMENTS = ("arg", "made")
CALLS = 2


@dataclasses.dataclass(frozen=True)
class Cell:
    kind: str
    operation: str
    placement: str

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.operation}-{self.placement}"


@dataclasses.dataclass
class Outcome:
    graphs: int
    ops: int
    breaks: int
    reasons: list[str]


def build(cell: Cell) -> tuple[Callable, Callable[[], tuple]]:
    """The cell's function and a maker of fresh arguments for one call."""
    make, op = KINDS[cell.kind], OPERATIONS[cell.operation]
    if cell.placement == "arg":
        def run_on_argument(x, v):
            return x + 1, op(v, x), v
        return run_on_argument, lambda: (t(3), make())

    def run_on_made(x):
        v = make()
        return x + 1, op(v, x), v
    return run_on_made, lambda: (t(3),)


_ADDRESS = re.compile(r"0x[0-9a-f]+")


def describe(value: Any, seen: dict | None = None) -> Any:
    """What a value holds, as data that compares equal between runs: tensors and numbers as
    they are, containers item by item, objects by type and attributes, functions by name;
    addresses in text are blanked. Identity within the value is kept ("same as #n")."""
    seen = {} if seen is None else seen
    if isinstance(value, (np.ndarray, np.generic)):
        # A numpy scalar and a 0-d array describe alike: numpy code traced through torch gives
        # 0-d arrays where numpy gives scalars, under torch.compile as under framegraph.
        return ("ndarray", value.dtype.str, np.asarray(value).tolist())
    if isinstance(value, (torch.Tensor, int, float, complex, str, bytes, type(None), torch.dtype, torch.device)):
        return _ADDRESS.sub("0x?", value) if isinstance(value, str) else value
    if id(value) in seen:
        return ("same as", seen[id(value)])
    seen[id(value)] = len(seen)
    kind = type(value)
    if isinstance(value, (list, tuple, set, frozenset)) or kind.__name__ in ("deque",):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        extra = describe(vars(value), seen) if hasattr(value, "__dict__") else None
        return (kind.__qualname__, [describe(item, seen) for item in items], extra)
    if isinstance(value, dict):
        extra = describe(vars(value), seen) if hasattr(value, "__dict__") and not type(value) is dict else None
        return (kind.__qualname__, [(describe(k, seen), describe(v, seen)) for k, v in dict.items(value)], extra)
    if isinstance(value, torch.nn.Module):
        return ("module", kind.__qualname__, {k: describe(v, seen) for k, v in value.state_dict().items()},
                {k: describe(v, seen) for k, v in vars(value).items() if not k.startswith("_")})
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)):
        return (kind.__name__, getattr(value, "__qualname__", getattr(value, "__name__", "?")))
    if isinstance(value, types.MethodType):
        return ("method", value.__func__.__qualname__, describe(value.__self__, seen))
    if isinstance(value, types.GeneratorType):
        return ("generator", value.__qualname__, value.gi_frame is None)
    if hasattr(value, "__next__"):
        try:
            return ("iterator", kind.__name__, describe(list(value.__reduce__()[1:]), seen))
        except TypeError:
            return ("iterator", kind.__name__)
    state: dict = {}
    try:
        state = dict(object.__getattribute__(value, "__dict__"))
    except AttributeError:
        for name in getattr(kind, "__slots__", ()):
            try:
                state[name] = object.__getattribute__(value, name)
            except AttributeError:
                pass
    if not state and kind.__module__ == "builtins":
        return (kind.__name__, _ADDRESS.sub("0x?", repr(value)))
    return (kind.__qualname__, {k: describe(v, seen) for k, v in state.items()})


def _outcome(fn: Callable, args: tuple) -> tuple:
    try:
        result, error = fn(*args), None
    except Exception as raised:  # the program's own exception is part of what must match
        result, error = None, raised
    return (describe((result, args)), type(error).__name__ if error is not None else None)


def run(cell: Cell) -> dict[str, Outcome]:
    """Runs the cell under both frontends; framegraph's outcome must be eager's (asserted
    here); torch.compile's outcome is reported as `torch_matches` in its Outcome's reasons."""
    fn, make_args = build(cell)
    grad = torch.is_grad_enabled()
    shared = _shared_state(KINDS[cell.kind]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = []
        for _ in range(CALLS):
            expected.append(_outcome(fn, make_args()))
            _restore(shared)
        outcomes = {}
        for frontend in ("torch", "framegraph"):
            backend = CountingBackend()
            compiled = compile_with(frontend, fn, backend)
            matches = True
            for call in range(CALLS):
                torch.set_grad_enabled(grad)
                actual = _outcome(compiled, make_args())
                _restore(shared)
                if frontend == "framegraph":
                    assert actual[1] == expected[call][1], \
                        f"call {call}: raised {actual[1]}, eager raised {expected[call][1]}"
                    assert_same(expected[call][0], actual[0], f"call {call}")
                elif not _same(actual, expected[call]):
                    matches = False
            reasons = list(counters["graph_break"]) if frontend == "framegraph" else []
            outcomes[frontend] = Outcome(backend.graph_count, _op_count(backend), _break_count(frontend),
                                         reasons + ([] if matches else ["torch.compile differs from eager"]))
            if frontend == "framegraph":
                assert not counters["fallback"], dict(counters["fallback"])
    torch._dynamo.reset()
    return outcomes


def _shared_state(value: Any) -> tuple | None:
    """A value every make returns itself (a class, a module, a function, an enum member) keeps
    what one run writes on it: its attributes are saved, to be put back after each run."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, enum.Enum)):
        return value, dict(vars(value))
    return None


def _restore(shared: tuple | None) -> None:
    if shared is None:
        return
    value, saved = shared
    for name in set(vars(value)) - set(saved):
        delattr(value, name)
    for name, item in saved.items():
        if vars(value).get(name, _MISSING) is not item:
            setattr(value, name, item)


_MISSING = object()


def _same(a, b) -> bool:
    try:
        assert_same(a, b)
        return True
    except (AssertionError, RuntimeError, TypeError, ValueError):
        return False


def torch_traces(outcomes: dict[str, Outcome]) -> bool:
    """torch.compile captured the cell in graphs without a break, and got eager's answer."""
    theirs = outcomes["torch"]
    return theirs.graphs >= 1 and theirs.breaks == 0 and not theirs.reasons


def framegraph_traces(outcomes: dict[str, Outcome]) -> bool:
    ours = outcomes["framegraph"]
    return ours.graphs >= 1 and ours.breaks == 0


# A tuple: the fuzzer watches a case's module-level lists and dicts for writes, and copying
# five thousand cells before and after every call was most of its time.
ALL_CELLS = tuple(Cell(kind, operation, placement)
                  for kind in KINDS for operation in OPERATIONS for placement in PLACEMENTS)
