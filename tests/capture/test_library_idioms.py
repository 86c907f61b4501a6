"""The idioms real libraries use on their forward path, each written the way transformers,
torchvision and timm write it, run eagerly, under framegraph and under torch.compile: results
and the state left behind equal eager's (or torch.compile's, where being compiled is what the
code asks), with exact graph, op and break counts compared against torch.compile's.

Imports inside functions, compile-state queries, `inspect`, `warnings`/`logging`, `os.environ`,
enums and ABCs, class-level registries and caches, `copy`, `functools`, `torch.finfo` and
function attributes. Where framegraph takes fewer breaks than torch.compile (a deepcopy of a
tensor, a pure lru_cache call) the test says so.
"""

import collections.abc
import copy
import dataclasses
import enum
import functools
import inspect
import logging
import os
import sys
import types
import warnings

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, clone


@dataclasses.dataclass(frozen=True)
class Counts:
    graphs: int
    ops: int
    breaks: int


def compile_with(frontend: str, fn, backend):
    if frontend == "framegraph":
        framegraph.reset()
        counters.clear()
        return framegraph.compile(fn, backend=backend)
    import torch._dynamo

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return torch.compile(fn, backend=backend)


def break_count(frontend: str) -> int:
    if frontend == "framegraph":
        return sum(counters["graph_break"].values())
    import torch._dynamo

    return sum(torch._dynamo.utils.counters["graph_break"].values())


def run(fn, *calls, expected_from="eager", torch_matches_eager=True, before_each=None):
    """Compiles `fn` once per frontend and calls it with each argument tuple of `calls` in
    turn, on fresh copies. Every framegraph result and the state it leaves in the arguments
    equal eager's on the same arguments (torch.compile's with expected_from="torch": code that
    asks whether it is being compiled); torch.compile's are checked against eager too unless
    `torch_matches_eager` is False. `before_each()` resets outside state before each run.
    Returns {frontend: Counts} after all calls."""
    reference = {"eager": [], "torch": []}
    if before_each:
        before_each()
    for args in calls:
        copied = clone(args)
        reference["eager"].append((fn(*copied), copied))
    counts = {}
    for frontend in ("torch", "framegraph"):
        if before_each:
            before_each()
        backend = CountingBackend()
        compiled = compile_with(frontend, fn, backend)
        for i, args in enumerate(calls):
            copied = clone(args)
            result = compiled(*copied)
            if frontend == "torch":
                reference["torch"].append((result, copied))
                if not torch_matches_eager or expected_from == "torch":
                    continue
                expected, expected_args = reference["eager"][i]
            else:
                expected, expected_args = reference[expected_from][i]
            assert_same(expected, result, f"{frontend} call {i}")
            _assert_same_state(expected_args, copied, f"{frontend} call {i}: arguments")
        counts[frontend] = Counts(backend.graph_count, backend.op_count, break_count(frontend))
    assert not counters["fallback"], dict(counters["fallback"])
    return counts


def _assert_same_state(expected_args, actual_args, path: str) -> None:
    for i, (expected, actual) in enumerate(zip(expected_args, actual_args)):
        if isinstance(expected, nn.Module):
            assert_same(expected.state_dict(), actual.state_dict(), f"{path}[{i}] state")
        else:
            assert_same(expected, actual, f"{path}[{i}]")


def t(*shape):
    torch.manual_seed(sum(shape) + len(shape))
    return torch.randn(*shape)


# ---- 1. imports inside functions ----------------------------------------------------------------

def imports_everywhere(x):
    import math
    import os.path
    import torch.nn.functional as F
    from os import path
    from torch.nn import functional
    from . import helpers
    from .helpers import clone as copy_of
    scale = len(os.path.sep) + len(path.sep) + (copy_of is helpers.clone)
    return functional.relu(F.gelu(x) * math.pi) * scale


def test_imports_of_loaded_modules_fold_like_torch_compile():
    counts = run(imports_everywhere, (t(4),), (t(4),))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 4, 0)


@pytest.fixture
def package(monkeypatch):
    """fgpkg, fgpkg.sub and fgpkg.other, loaded; and a function defined in fgpkg.sub.mod."""
    for name in ("fgpkg", "fgpkg.sub", "fgpkg.other"):
        module = types.ModuleType(name)
        module.__path__ = []
        monkeypatch.setitem(sys.modules, name, module)
    sys.modules["fgpkg.other"].VALUE = 3
    sys.modules["fgpkg"].other = sys.modules["fgpkg.other"]
    scope = {"__name__": "fgpkg.sub.mod", "__package__": "fgpkg.sub"}
    exec("def up_two(x):\n    from ..other import VALUE\n    from .. import other\n    return x * VALUE + other.VALUE\n"
         "def too_far(x):\n    from .... import nothing\n    return x\n", scope)
    return scope


def test_relative_imports_resolve_against_the_function_package(package):
    counts = run(package["up_two"], (t(4),))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 2, 0)
    framegraph.reset()
    with pytest.raises(ImportError, match="beyond top-level package"):
        framegraph.compile(package["too_far"], backend=CountingBackend())(t(2))


def library_is_compiling():
    try:
        import torch
        return torch.compiler.is_compiling()
    except Exception:
        return False


def forward_asking_the_library(x):
    return x * 2 if library_is_compiling() else x * 3


def test_transformers_style_import_inside_try_folds():
    counts = run(forward_asking_the_library, (t(4),), expected_from="torch")
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)


@pytest.fixture
def scratch_module(tmp_path, monkeypatch):
    """A module file on sys.path that no one has imported; its body logs each execution."""
    name = f"fg_scratch_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text("import builtins\nbuiltins.FG_SCRATCH_RUNS.append(1)\nSCALE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("builtins.FG_SCRATCH_RUNS", [], raising=False)
    # pytest's import hook runs Python of its own (fnmatch) for every new import, whose
    # frames would be compiled and counted too.
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if "_pytest" not in type(f).__module__])
    yield name
    sys.modules.pop(name, None)


def test_importing_a_module_not_loaded_yet_is_a_break_that_runs_it_once(scratch_module):
    import builtins

    source = f"def f(x):\n    y = x + 1\n    import {scratch_module}\n    return y * {scratch_module}.SCALE\n"
    scope = {}
    exec(compile(source, "<scratch user code>", "exec"), scope)
    fn = scope["f"]

    def unload():
        sys.modules.pop(scratch_module, None)
        builtins.FG_SCRATCH_RUNS.clear()
    counts = run(fn, (t(4),), (t(4),), before_each=unload)
    assert builtins.FG_SCRATCH_RUNS == [1]  # the module body ran once, as eagerly
    assert counts["framegraph"] == Counts(2, 2, 1)  # torch.compile imports at trace time: 1 graph
    assert counts["torch"] == Counts(1, 2, 0)


def test_a_module_swapped_in_sys_modules_or_changed_recompiles():
    name = "fg_swapped_module"
    first, second = types.ModuleType(name), types.ModuleType(name)
    first.SCALE, second.SCALE = 2, 5
    scope = {}
    exec(f"def f(x):\n    import {name}\n    return x * {name}.SCALE\n", scope)
    fn, x = scope["f"], t(3)
    backend = CountingBackend()
    framegraph.reset()
    compiled = framegraph.compile(fn, backend=backend)
    try:
        for module, scale in ((first, 2), (second, 5), (first, 2)):
            sys.modules[name] = module
            assert_same(x * scale, compiled(x))
        first.SCALE = 7
        assert_same(x * 7, compiled(x))
    finally:
        sys.modules.pop(name, None)
    assert backend.graph_count == 3  # first, second, first with SCALE 7 (the second first hits)


def lazy_name(x):
    from fg_lazy_module import computed  # a name the module's __getattr__ makes
    return x * computed


def test_a_name_a_lazy_module_computes_is_a_break(monkeypatch):
    module = types.ModuleType("fg_lazy_module")
    made = []

    def __getattr__(name):
        if name != "computed":
            raise AttributeError(name)
        made.append(name)
        return 4
    module.__getattr__ = __getattr__
    monkeypatch.setitem(sys.modules, "fg_lazy_module", module)
    marks = []
    counts = run(lazy_name, (t(4),), (t(4),), before_each=lambda: marks.append(len(made)))
    assert counts["framegraph"] == Counts(1, 1, 1)
    assert counts["torch"].breaks == 0  # torch.compile runs __getattr__ while tracing
    eager_calls, framegraph_calls = marks[1] - marks[0], len(made) - marks[2]
    assert eager_calls == framegraph_calls == 2


def test_real_transformers_is_torchdynamo_compiling_is_true_while_tracing():
    transformers_utils = pytest.importorskip("transformers.utils")

    def forward(x):
        if transformers_utils.is_torchdynamo_compiling():
            return x + 1
        return x - 1
    counts = run(forward, (t(4),), expected_from="torch")
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)
