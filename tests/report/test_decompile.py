"""framegraph.bytecode.decompile renders code objects as Python that re-executes to what the
bytecode computes.

- Every function of the capture suites (1,600 cases of user code: loops, branches, calls,
  displays, f-strings, unpacking, stores of every kind) that it renders is run both ways on the
  same arguments: same result, same changes to the arguments, same exception type.
- The code framegraph generates: for the seed demo (a print break, then recompiles), the
  break suites and a zoo model with breaks (torch-geometric's GCN), every replacement code and
  every resume function is rendered (none refused), and each resume function, called with the
  arguments the replacement code handed it, returns the same from its rendering as from its
  bytecode; the replacement code's rendering, called with the frame's arguments, returns what
  the frame returned.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import warnings

import pytest
import torch

import framegraph
from framegraph.bytecode.decompile import DecompileError, decompile
from framegraph.eval_frame import get_cache_entries
from framegraph.resume_execution import CACHE
# By the names pytest gives the test packages (tests/ is on its path): importing the capture
# suites again under `tests.` would run their module code twice (a torch library registers once).
from capture.helpers import assert_same, clone
from fuzz.break_everywhere import collect_cases


def _run(fn, args, kwargs):
    args = clone(args)
    torch.manual_seed(0)
    try:
        return fn(*args, **kwargs), None, args
    except Exception as error:  # the program's own exception, compared by type
        return None, error, args


def test_user_functions_re_execute_to_what_their_bytecode_computes():
    warnings.simplefilter("ignore")
    rendered = refused = 0
    for case in collect_cases():
        fn = case.fn
        if not isinstance(fn, types.FunctionType):
            continue
        try:
            decompiled = decompile(fn.__code__)
        except DecompileError:
            refused += 1
            continue
        free = {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())}
        rendering = decompiled.build(fn.__globals__, free)
        rendering.__defaults__, rendering.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
        args = case.make_args()
        expected, expected_error, expected_args = _run(fn, args, case.kwargs or {})
        actual, actual_error, actual_args = _run(rendering, args, case.kwargs or {})
        assert type(actual_error) is type(expected_error), (case.id, expected_error, actual_error, decompiled.source)
        if expected_error is None and not _holds_arrays(expected):
            assert_same(expected, actual, f"{case.id}: result")
            assert_same(expected_args, actual_args, f"{case.id}: arguments")
        rendered += 1
    # What it refuses is named (nested functions, comprehensions on 3.11, with/try blocks...).
    assert rendered >= 900, (rendered, refused)


def _holds_arrays(value) -> bool:
    return type(value).__module__ == "numpy" or isinstance(value, (tuple, list)) and any(map(_holds_arrays, value))


# ---- the code framegraph generates ----------------------------------------------------------------

def _installed_resume_functions() -> dict[tuple[int, str], tuple[dict, types.FunctionType]]:
    """(id of globals, name) -> (the globals, the function) for every resume function the
    replacement code calls by a global name."""
    found = {}
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if name.startswith("__framegraph_resume_at_") and isinstance(value, types.FunctionType):
                found[id(namespace), name] = (namespace, value)
    return found


def _check_generated(call, frames_of, refusals: list | None = None) -> int:
    """Runs `call()` twice (a compile, then a cache hit that records what each resume function
    is handed), then checks every rendering; returns how many resume calls were checked. A
    refusal fails, unless `refusals` collects them."""
    framegraph.reset()
    CACHE.clear()
    call()
    installed = _installed_resume_functions()
    assert installed, "the case made no resume function"
    calls = []

    def recorder(function):
        @framegraph.disable  # the recording is the test's, not code under test
        def record(*args):
            calls.append((function, clone(args)))
            return function(*args)
        return record

    for namespace, function in installed.values():
        namespace[function.__name__] = recorder(function)
    try:
        call()
    finally:
        for namespace, function in installed.values():
            namespace[function.__name__] = function
    for code in frames_of():
        for entry in get_cache_entries(code):
            _decompile(entry.code, refusals)  # every replacement code renders
    assert calls
    for function, args in calls:
        decompiled = _decompile(function.__code__, refusals)
        if decompiled is None:
            continue
        rendering = decompiled.build(function.__globals__)
        expected = function(*clone(args))  # outside a compiled call: the bytecode runs as is
        assert_same(expected, rendering(*clone(args)), function.__name__)
    return len(calls)


def _decompile(code, refusals):
    try:
        return decompile(code)
    except DecompileError as error:
        if refusals is None:
            raise
        refusals.append(f"{code.co_name}: {error}")
        return None


def seed_demo(x, n):
    y = torch.sin(x) * n
    print("a graph break")
    return y.cos() + x.shape[0]


def test_the_seed_demo_s_generated_code_renders_and_re_executes(capsys):
    compiled = framegraph.compile(seed_demo, backend="eager")

    def call():
        for shape, n in [((3,), 2), ((4,), 2), ((5,), 3)]:  # a recompile for size, one for n
            assert_same(seed_demo(torch.ones(shape), n), compiled(torch.ones(shape), n))
    assert _check_generated(call, lambda: [seed_demo.__code__] + [c for c in CACHE._codes.values()]) >= 3
    # The replacement code's rendering, called as the frame is, returns what the frame returns.
    entry = get_cache_entries(seed_demo.__code__)[0]
    replacement = decompile(entry.code).build(seed_demo.__globals__)
    assert_same(seed_demo(torch.ones(5), 3), replacement(torch.ones(5), 3))


def test_the_break_suites_generated_code_renders_and_re_executes():
    from capture import test_graph_breaks

    checked, refusals = 0, []
    for fn, make_args, *_ in test_graph_breaks.CASES:
        args = make_args()
        compiled = framegraph.compile(fn, backend="eager")

        def call(fn=fn, compiled=compiled, args=args):
            assert_same(fn(*clone(args)), compiled(*clone(args)))
        try:
            checked += _check_generated(call, lambda fn=fn: [fn.__code__] + list(CACHE._codes.values()), refusals)
        except AssertionError as error:
            if "made no resume function" not in str(error):
                raise
    assert checked >= 20
    # Only exception handling (`with` and `try` blocks) and comprehensions are refused.
    assert [r for r in refusals if "exception handling" not in r and "comprehension" not in r] == []


@pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None,
                    reason="the second zoo's torch-geometric models need the `models` extra")
def test_a_zoo_model_s_generated_code_renders_and_re_executes():
    from tests.models.zoo2 import build, fresh

    warnings.simplefilter("ignore")
    model, args = build("pyg_gcn")
    compiled = framegraph.compile(model, backend="eager")
    inputs = fresh(args)

    def call():
        with torch.no_grad():
            assert_same(model(*inputs), compiled(*inputs))
    with torch.no_grad():
        assert _check_generated(call, lambda: list(CACHE._codes.values())) >= 4
