"""Process state a capture must respect: global switches the body reads (guarded or a graph
break, and re-checked after a cached hit), TorchDispatchModes and jit tracing (frames run as
they are), and Python that torch's dispatcher runs (custom-op kernels), each compared with eager
and, where the behaviour is a choice, with torch.compile. Crash-prone cases run in a
subprocess, so a segfault fails the test instead of killing pytest."""

import contextlib
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch.nn.functional as F

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, check
from .test_torch_semantics import framegraph_counts, t, torch_compile_counts


# ---- global switches the body reads ------------------------------------------------------------
@contextlib.contextmanager
def deterministic(warn_only=False):
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=warn_only)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


@contextlib.contextmanager
def anomaly_mode():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.set_detect_anomaly(True):
            yield


SWITCHES = {
    # name: (what the body reads, a context in which it reads differently)
    "profiler_enabled": (torch.autograd._profiler_enabled, torch.autograd.profiler.profile),
    "profiler_flag": (lambda: torch.autograd.profiler._is_profiler_enabled, torch.autograd.profiler.profile),
    "anomaly": (torch.is_anomaly_enabled, anomaly_mode),
    "anomaly_check_nan": (torch.is_anomaly_check_nan_enabled, anomaly_mode),
    "deterministic": (torch.are_deterministic_algorithms_enabled, deterministic),
    "deterministic_warn_only": (torch.is_deterministic_algorithms_warn_only_enabled,
                                lambda: deterministic(warn_only=True)),
    "num_threads": (lambda: torch.get_num_threads() == 1, lambda: _threads(1)),
    "cudnn_enabled": (lambda: torch.backends.cudnn.enabled, lambda: torch.backends.cudnn.flags(enabled=False)),
    "autocast_cpu": (lambda: torch.is_autocast_enabled("cpu"), lambda: torch.autocast("cpu")),
    "any_autocast": (torch._C._is_any_autocast_enabled, lambda: torch.autocast("cpu")),
    "autocast_dtype": (lambda: torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.float16,
                       lambda: torch.autocast("cpu", dtype=torch.float16)),
    "grad_mode": (torch.is_grad_enabled, torch.no_grad),
    "default_dtype": (lambda: torch.get_default_dtype() == torch.float64, lambda: _default_dtype(torch.float64)),
}


@contextlib.contextmanager
def _threads(n):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def _default_dtype(dtype):
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


@pytest.mark.parametrize("order", ["off_on_off", "on_off_on"])
@pytest.mark.parametrize("name", SWITCHES)
def test_global_switch_read_in_body_is_guarded_or_breaks(name, order):
    """A switch flipped after a cached call: the compiled function sees it as eager does."""
    reader, context = SWITCHES[name]

    def fn(x):
        return (x + 1) * 2 if reader() else (x - 1) * 2

    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(fn, backend=CountingBackend())
    x = torch.ones(3)
    for state in order.split("_") * 2:
        scope = context() if state == "on" else contextlib.nullcontext()
        with scope:
            assert_same(fn(x), compiled(x))
    assert not counters["fallback"], dict(counters["fallback"])


def test_jit_trace_of_compiled_function_sees_tracing():
    def fn(x):
        return x + 1 if torch.jit.is_tracing() else x - 1

    framegraph.reset()
    compiled = framegraph.compile(fn, backend="eager")
    x = torch.ones(3)
    assert_same(fn(x), compiled(x))  # compiled outside tracing first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, actual = torch.jit.trace(fn, x), torch.jit.trace(compiled, x)
    assert_same(expected(x), actual(x))
    assert_same(fn(x), compiled(x))


@pytest.mark.parametrize("name", ["profiler_enabled", "anomaly", "num_threads", "deterministic"])
def test_global_switch_reads_break_like_torch_compile(name):
    reader = SWITCHES[name][0]

    def fn(x):
        return (x + 1) * 2 if reader() else (x - 1) * 2
    assert framegraph_counts(fn, t(3)) == torch_compile_counts(fn, t(3))


# ---- torch's dispatcher running Python ------------------------------------------------------------
def _run_isolated(script: str) -> str:
    """Runs `script` in a fresh interpreter (a crash fails the test instead of killing pytest)
    and returns what it printed."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


DISPATCH_PRELUDE = """
    import torch, framegraph
    from framegraph.counters import counters
    from torch.utils._python_dispatch import TorchDispatchMode

    class LoggingMode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.name())
            print("dispatch", func.overloadpacket.__name__)   # a graph break inside the handler
            return func(*args, **(kwargs or {}))

    def logged(fn, *args):
        with LoggingMode() as mode:
            out = fn(*args)
        return out, mode.ops
"""


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_calls_under_a_dispatch_mode_show_the_mode_eager_ops(backend):
    """Under a TorchDispatchMode compiled code runs as it is (as torch.compile does), so the
    mode sees the operators eager runs, whether the function was compiled before or not."""
    out = _run_isolated(DISPATCH_PRELUDE + f"""
    def f(x, w):
        return torch.relu(x @ w).sum(dim=-1) * 2

    x, w = torch.randn(3, 4), torch.randn(4, 4)
    add = framegraph.compile(torch.add, backend={backend!r})
    compiled = framegraph.compile(f, backend={backend!r})
    expected = logged(f, x, w)
    assert torch.equal(logged(add, x, x)[0], x + x) and logged(add, x, x)[1] == logged(torch.add, x, x)[1]
    for _ in range(2):
        actual = logged(compiled, x, w)
        assert torch.equal(actual[0], expected[0]) and actual[1] == expected[1], (actual, expected)
        assert torch.equal(compiled(x, w), f(x, w))   # and outside the mode, compiled again
    print("RESULT graphs", counters["stats"]["unique_graphs"], "mode saw ops", bool(expected[1]))
    """)
    results = [line for line in out.splitlines() if line.startswith("RESULT")]
    assert results == ["RESULT graphs 1 mode saw ops True"]  # compiled once, outside the mode


def test_custom_op_kernel_with_a_break_runs_as_is_inside_the_dispatcher():
    out = _run_isolated("""
    import torch, framegraph
    from framegraph.counters import counters

    @torch.library.custom_op("fg_isolated::noisy", mutates_args=())
    def noisy(x: torch.Tensor) -> torch.Tensor:
        y = x * 3
        print("kernel", torch.ops.aten.sin.default(y).shape)   # breaks, at a method load
        return y.sin()

    @noisy.register_fake
    def _(x):
        return torch.empty_like(x)

    lib = torch.library.Library("fg_isolated", "FRAGMENT")
    lib.define("bump(Tensor(a!) x) -> ()")
    def bump(x):
        print("bump kernel")
        x.add_(1)
    lib.impl("bump", bump, "CPU")
    torch.library.register_fake("fg_isolated::bump", lambda x: None, lib=lib)

    def f(x):
        y = torch.ops.fg_isolated.noisy(x * 2) + 1
        torch.ops.fg_isolated.bump(y)
        return y * 2

    for backend in ("eager", "aot_eager"):
        framegraph.reset()
        counters.clear()
        compiled = framegraph.compile(f, backend=backend)
        for _ in range(2):
            x = torch.randn(4)
            assert torch.equal(compiled(x), f(x))
        print("RESULT", backend, "graphs", counters["stats"]["unique_graphs"])
    """)
    results = [line for line in out.splitlines() if line.startswith("RESULT")]
    assert results == ["RESULT eager graphs 1", "RESULT aot_eager graphs 1"]


def test_deterministic_warn_only_flip_after_a_cached_hit():
    def fn(x):
        return x + 1 if torch.is_deterministic_algorithms_warn_only_enabled() else x - 1

    framegraph.reset()
    compiled = framegraph.compile(fn, backend=CountingBackend())
    x = torch.ones(2)
    for warn_only in (False, False, True, False, True):
        with deterministic(warn_only=warn_only):
            assert_same(fn(x), compiled(x))


FOLDED_WITHOUT_A_BREAK = {
    "log_api_usage_once": lambda x: (torch._C._log_api_usage_once("framegraph.test"), x * 2)[1],
    "is_compiling": lambda x: x * 2 if torch._utils.is_compiling() == torch.compiler.is_compiling() else x,
    "not_exporting": lambda x: x if torch.compiler.is_exporting() or torch.onnx.is_in_onnx_export() else x * 2,
    "not_fx_tracing": lambda x: x if torch.fx._symbolic_trace.is_fx_tracing() else x * 2,
    "promote_types": lambda x: x.to(torch.promote_types(torch.int32, torch.float16)) * 2,
    "sym_max_of_constants": lambda x: x * torch.sym_max(2, 3),
    "assert_constant": lambda x: (torch._assert(True, "never"), x * 2)[1],
    "none_or_dtype": lambda x: x * 2 if F._none_or_dtype(None) is None else x,
    "asarray": lambda x: x + torch.asarray([1.0, 2.0, 3.0]),
    "autocast_off": lambda x: x * 2 if not torch.is_autocast_enabled("cpu") else x,
}


@pytest.mark.parametrize("name", FOLDED_WITHOUT_A_BREAK)
def test_pure_readers_and_telemetry_fold_without_a_break(name):
    check(FOLDED_WITHOUT_A_BREAK[name], t(3), graphs=1)
    assert not counters["graph_break"], dict(counters["graph_break"])
