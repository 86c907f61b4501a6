"""The idioms real libraries use on their forward path (transformers, torchvision and timm
write them so), run eagerly, under framegraph and under torch.compile (frontends.run): results
and the state left behind equal eager's (or torch.compile's, where being compiled is what the
code asks), with exact graph, op and break counts compared against torch.compile's.

Here: imports inside functions, compile-state queries, `inspect`, `warnings` and `logging`,
`os.environ`. Enums, ABCs, registries, class caches, `copy`, `functools`, `torch.finfo` and
function attributes are in test_library_values.py.
"""

import functools
import inspect
import logging
import os
import sys
import time
import types
import warnings

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .frontends import Counts, compile_with, break_count, library, run, t
from .helpers import CountingBackend, assert_same


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


def test_import_star_is_a_break():
    # Only module-level code can hold it, and the hook offers function frames only: the
    # translator is run on a module body directly.
    from framegraph.exc import Unsupported
    from framegraph.output_graph import OutputGraph
    from framegraph.symbolic_convert import InstructionTranslator

    code = compile("from math import *\n", "<module body>", "exec")
    scope = {"__name__": "fg_star_module", "__builtins__": __builtins__}
    tx = InstructionTranslator(code, {}, scope, vars(__import__("builtins")), OutputGraph(scope, None, "none"))
    with pytest.raises(Unsupported, match="import \\*|CALL_INTRINSIC_1"):
        tx.run()


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
    counters.clear()
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
    assert not counters["graph_break"]


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
    # Breaks: the import (is it a package? the module's __getattr__ is asked for __path__),
    # the name read from it, and __getattr__'s own frame, whose AttributeError leaves it.
    assert counts["framegraph"] == Counts(1, 1, 3)
    assert counts["torch"].breaks == 0  # torch.compile runs __getattr__ while tracing
    eager_calls, framegraph_calls = marks[1] - marks[0], len(made) - marks[2]
    assert eager_calls == framegraph_calls == 2


def test_real_transformers_is_torchdynamo_compiling_is_true_while_tracing():
    transformers_utils = library("transformers.utils")

    def forward(x):
        if transformers_utils.is_torchdynamo_compiling():
            return x + 1
        return x - 1
    counts = run(forward, (t(4),), expected_from="torch")
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)


def _index_select_twice(x, index):
    return torch.index_select(x.sin(), 1, index) * 2


@pytest.mark.parametrize("backend", ["counting", "eager"])
def test_a_torch_function_a_library_replaced_with_a_wrapper_runs_it_eagerly_from_the_graph(monkeypatch, backend):
    """torch_geometric replaces `torch.index_select` with a Python wrapper that calls the
    original. The trace goes through the wrapper and records the original, which fx's code
    writes as `torch.index_select`: the wrapper again, when the graph runs. It runs eagerly
    there, as inside torch.compile's graphs, instead of being compiled from inside the graph
    for ever (a RecursionError on transformers' xlnet once torch_geometric was imported)."""
    original = torch.index_select

    def index_select(input, dim, index, out=None):
        if isinstance(dim, int) and not -input.dim() <= dim < input.dim():
            raise IndexError(f"Dimension out of range (got {dim})")
        return original(input, dim, index) if out is None else original(input, dim, index, out=out)

    monkeypatch.setattr(torch, "index_select", index_select)
    args = (t(3, 4), torch.tensor([0, 2]))
    if backend == "counting":
        counts = run(_index_select_twice, args, args)
        assert counts["framegraph"] == counts["torch"] == Counts(1, 3, 0)
        return
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(_index_select_twice, backend="eager")
    for _ in range(2):
        assert_same(_index_select_twice(*args), compiled(*args), "eager backend")
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"], dict(counters["stats"])


# ---- 2. compile-state queries --------------------------------------------------------------------

def compile_state(x):
    import torch._dynamo

    flags = (torch.compiler.is_compiling(), torch._dynamo.is_compiling(), torch.compiler.is_dynamo_compiling(),
             torch.jit.is_scripting(), torch.jit.is_tracing(), torch._C._get_tracing_state() is None)
    return x * sum(bit << i for i, bit in enumerate(flags)), flags


def test_compile_state_queries_answer_as_under_torch_compile():
    counts = run(compile_state, (t(4),), expected_from="torch")
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)
    assert compile_state(t(4))[1] == (False, False, False, False, False, True)


@framegraph.disable
def _eager_only():
    pass


def frame_run_eagerly(x):
    try:
        raise ValueError
    except ValueError:
        _eager_only()  # a break while an exception is handled: the whole frame runs eagerly
    return x * 2 if torch.compiler.is_compiling() else x * 3


def test_a_frame_that_runs_eagerly_sees_false():
    framegraph.reset()
    counters.clear()
    x = t(4)
    assert_same(x * 3, framegraph.compile(frame_run_eagerly, backend=CountingBackend())(x))


# ---- 3. inspect ------------------------------------------------------------------------------------

class WithLabels(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, labels=None, return_loss=True, **kwargs):
        return self.lin(x)


def accepted_arguments(model, x):
    parameters = inspect.signature(model.forward).parameters
    names = [name for name in parameters if "label" in name]
    var_keyword = [p.name for p in parameters.values() if p.kind == p.VAR_KEYWORD]
    loss = parameters["return_loss"].default is True
    return model(x) * (len(parameters) + len(names) + len(var_keyword) + loss + ("labels" in parameters))


def test_signature_parameters_fold_like_torch_compile():
    counts = run(accepted_arguments, (WithLabels(), t(2, 4)), (WithLabels(), t(2, 4)))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 2, 0)


def make_scaler(factor):
    def scale(x, factor=factor):
        return x * factor
    return scale


def uses_a_default(fn, x):
    return fn(x) + inspect.signature(fn).parameters["factor"].default


def test_a_default_read_through_signature_is_guarded():
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    compiled = framegraph.compile(uses_a_default, backend=backend)
    x = t(3)
    for fn in (make_scaler(2), make_scaler(3), make_scaler(2)):
        assert_same(uses_a_default(fn, x), compiled(fn, x))
    half = make_scaler(2)
    half.__defaults__ = (0.5,)
    assert_same(uses_a_default(half, x), compiled(half, x))
    assert backend.graph_count == 3  # 2, 3 and 0.5 (closures of one def share an entry)
    assert not counters["graph_break"]


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@logged
def wrapped_forward(x, mask=None, *, scale=2.0):
    return x * scale


def signature_through_wraps(x):
    parameters = inspect.signature(wrapped_forward).parameters
    return wrapped_forward(x) * len(parameters) + list(parameters).index("scale")


def inspect_predicates(x, model):
    return x * (inspect.isfunction(wrapped_forward) + 2 * inspect.ismethod(model.forward)
                + 4 * inspect.isclass(WithLabels) + 8 * inspect.isclass(model) + 16 * inspect.ismodule(inspect)
                + 32 * inspect.isbuiltin(len) + 64 * inspect.isfunction(len))


@pytest.mark.parametrize("fn, args, expected", [(signature_through_wraps, lambda: (t(4),), Counts(1, 3, 0)),
                                                (inspect_predicates, lambda: (t(4), WithLabels()), Counts(1, 1, 0))])
def test_inspect_folds_like_torch_compile(fn, args, expected):
    counts = run(fn, args(), args())
    assert counts["framegraph"] == counts["torch"] == expected


# ---- 4. warnings and logging --------------------------------------------------------------------

def _library_helper(x):
    warnings.warn("the helper is deprecated", FutureWarning, stacklevel=2)
    return x + 1


def warns(x):
    y = x * 2
    warnings.warn("careful with y")
    return _library_helper(y) - 1


demo_logger = logging.getLogger("framegraph.tests.idioms")


@functools.lru_cache(None)
def _warning_once(self, *args):
    self.warning(*args)


class OnceLogger(logging.Logger):
    warning_once = _warning_once  # transformers' logging.Logger.warning_once


once_logger = OnceLogger("framegraph.tests.idioms.once")
once_logger.parent = demo_logger


def logs(x):
    demo_logger.warning("computing with %d values", x.numel())
    once_logger.warning_once("only once per process")
    return x.sin()


def _record(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def test_warnings_run_once_per_call_at_a_break_with_their_stack_level():
    x = t(4)
    expected = [_record(warns, x) for _ in range(3)]
    counts = {}
    for frontend in ("framegraph", "torch"):
        backend = CountingBackend()
        compiled = compile_with(frontend, warns, backend)
        actual = [_record(compiled, x) for _ in range(3)]
        for (expected_result, expected_warnings), (result, caught) in zip(expected, actual):
            assert_same(expected_result, result)
            if frontend == "framegraph":
                assert caught == expected_warnings
        counts[frontend] = Counts(backend.graph_count, backend.op_count, break_count(frontend))
    # A break at each warn, and in the helper's own frame (compiled when the break runs it).
    assert counts["framegraph"] == counts["torch"] == Counts(3, 3, 3)


def test_logger_calls_are_made_after_the_graph_with_eager_records(caplog):
    counts = {}
    with caplog.at_level(logging.WARNING, logger="framegraph.tests.idioms"):
        _warning_once.cache_clear()
        eager = [logs(t(4)) for _ in range(2)]
        eager_records = [(r.name, r.getMessage(), r.lineno) for r in caplog.records]
        for frontend in ("framegraph", "torch"):
            caplog.clear()
            _warning_once.cache_clear()
            backend = CountingBackend()
            compiled = compile_with(frontend, logs, backend)
            for expected in eager:
                assert_same(expected, compiled(t(4)))
            assert [(r.name, r.getMessage(), r.lineno) for r in caplog.records] == eager_records
            counts[frontend] = Counts(backend.graph_count, backend.op_count, break_count(frontend))
    assert [r[1] for r in eager_records].count("only once per process") == 1
    # torch.compile breaks at each logger call; framegraph makes the records after the graph
    # (variables/logging_calls.py; tests/capture/test_logging_calls.py).
    assert counts["framegraph"] == Counts(1, 1, 0)
    assert counts["torch"] == Counts(1, 1, 2)


# ---- 5. os.environ ---------------------------------------------------------------------------------

def reads_environment(x):
    if os.environ.get("FG_IDIOMS_MODE", "off").lower() in ("1", "true", "on"):
        x = x * 2
    if "FG_IDIOMS_PRESENT" in os.environ:
        x = x + int(os.environ["FG_IDIOMS_PRESENT"])
    return x * len(os.getenv("FG_IDIOMS_NAME", "ab"))


def test_environment_reads_fold_and_a_change_recompiles(monkeypatch):
    x = t(4)
    monkeypatch.delenv("FG_IDIOMS_MODE", raising=False)
    monkeypatch.delenv("FG_IDIOMS_PRESENT", raising=False)
    monkeypatch.delenv("FG_IDIOMS_NAME", raising=False)
    counts = run(reads_environment, (x,), (x,))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(reads_environment, backend=backend)
    settings = [{}, {"FG_IDIOMS_MODE": "ON"}, {"FG_IDIOMS_MODE": "ON", "FG_IDIOMS_PRESENT": "3"},
                {"FG_IDIOMS_MODE": "ON", "FG_IDIOMS_PRESENT": "5", "FG_IDIOMS_NAME": "abcd"},
                {"FG_IDIOMS_MODE": "yes", "FG_IDIOMS_PRESENT": "5", "FG_IDIOMS_NAME": "abcd"}, {}]
    for setting in settings:
        for name in ("FG_IDIOMS_MODE", "FG_IDIOMS_PRESENT", "FG_IDIOMS_NAME"):
            if name in setting:
                monkeypatch.setenv(name, setting[name])
            else:
                monkeypatch.delenv(name, raising=False)
        assert_same(reads_environment(x), compiled(x))
    assert backend.graph_count == 5  # the last setting is the first one again


def environment_missing_key(x):
    return x * int(os.environ["FG_IDIOMS_SURELY_UNSET"])


def test_a_missing_variable_raises_the_eager_key_error(monkeypatch):
    monkeypatch.delenv("FG_IDIOMS_SURELY_UNSET", raising=False)
    framegraph.reset()
    with pytest.raises(KeyError, match="FG_IDIOMS_SURELY_UNSET"):
        framegraph.compile(environment_missing_key, backend=CountingBackend())(t(2))


# ---- 6. the standard library called at a graph break ------------------------------------------------
# Its frames, run from eager code, are not compiled (as under torch.compile): strptime's
# helpers (calendar's, locale's) hold no model code, and compiling them cost recompiles and a
# warning about the recompile limit.

def parses_a_date(x, text):
    x = x + 1
    stamp = time.strptime(text, "%Y-%m-%d")  # time is not traced: a break
    return x * stamp.tm_mday


def forget_strptime_locale():
    """The next strptime rebuilds its locale tables, running calendar's Python frames."""
    import _strptime

    _strptime._TimeRE_cache.locale_time.lang = None


def test_standard_library_frames_run_from_a_break_are_not_compiled():
    import calendar

    calls = [(t(3), f"{year}-01-03") for year in (2020, 2021, 2022)]
    counts = run(parses_a_date, *calls, before_each=forget_strptime_locale)
    assert counts["framegraph"] == counts["torch"] == Counts(2, 2, 1)
    # calendar's month and day names were each a frame of their own, recompiled per index
    # until the recompile limit warned.
    assert not counters["recompiles"], dict(counters["recompiles"])
    assert framegraph.trace_rules.skip_reason(calendar.isleap.__code__) is not None
