"""What framegraph holds on to, and how it shares the process: reset() takes back what it put in
user globals, the accumulated limit counts only live code, and compiles are one at a time."""

import gc
import io
import os
import subprocess
import sys
import threading
import types
import warnings
import weakref

import pytest
import torch

import framegraph
from framegraph import config, convert_frame
from framegraph.counters import counters
from framegraph.eval_frame import get_cache_entries, reset_code

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCE = """
import framegraph

@framegraph.disable
def opaque(x):
    return x + 1

def f(x):
    y = opaque(x * 2)   # a break: a compiled function before it, a resume function after
    return y * {factor}
"""
# Each namespace gets its own factor: code objects equal by value share resume functions.


def ours(namespace: dict) -> list[str]:
    return sorted(name for name in namespace
                  if name.startswith(("__compiled_fn_", "__framegraph_resume_at_", "__framegraph_installed__")))


def module_from_source(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(SOURCE.format(factor=3), f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def test_reset_takes_what_framegraph_installed_out_of_module_and_plain_globals():
    framegraph.reset()
    module = module_from_source("framegraph_test_installed")
    plain: dict = {}
    exec(compile(SOURCE.format(factor=4), "<plain namespace>", "exec"), plain)
    try:
        x = torch.randn(3)
        for namespace in (module.__dict__, plain):
            compiled = framegraph.compile(namespace["f"], backend="eager")
            for _ in range(2):  # the first call's output check, then the compiled function itself
                torch.testing.assert_close(compiled(x), namespace["f"](x))
            names = ours(namespace)
            assert any(n.startswith("__compiled_fn_") for n in names), names
            assert any(n.startswith("__framegraph_resume_at_") for n in names), names
        framegraph.reset()
        assert ours(module.__dict__) == [] and ours(plain) == []
        assert "f" in plain and "opaque" in module.__dict__, "only framegraph's names go"
    finally:
        del sys.modules["framegraph_test_installed"]


def test_reset_leaves_a_name_the_user_rebound():
    framegraph.reset()
    namespace: dict = {}
    exec(compile(SOURCE.format(factor=5), "<rebound>", "exec"), namespace)
    framegraph.compile(namespace["f"], backend="eager")(torch.randn(3))
    names = ours(namespace)
    for name in names:
        namespace[name] = "the user's own value"
    framegraph.reset()
    assert ours(namespace) == names and all(namespace[n] == "the user's own value" for n in names)


def test_the_record_of_what_was_installed_keeps_no_namespace_alive():
    framegraph.reset()
    namespace: dict = {}
    exec(compile(SOURCE.format(factor=7), "<dropped>", "exec"), namespace)
    compiled = framegraph.compile(namespace["f"], backend="eager")
    compiled(torch.randn(3))
    assert ours(namespace)
    for code in convert_frame.touched_codes():  # the entries hold their globals: drop them
        reset_code(code)
    alive = weakref.ref(namespace["opaque"])
    del namespace, compiled
    # Until nothing more is found: on 3.13 garbage from earlier compiles can hold the namespace
    # through references the collector does not see until that garbage goes, a pass later.
    while gc.collect():
        pass
    assert alive() is None, "framegraph's record of what it installed keeps the namespace alive"


def test_a_compile_after_reset_installs_and_runs_again():
    framegraph.reset()
    namespace: dict = {}
    exec(compile(SOURCE.format(factor=6), "<again>", "exec"), namespace)
    x = torch.randn(3)
    for _ in range(3):
        compiled = framegraph.compile(namespace["f"], backend="eager")
        torch.testing.assert_close(compiled(x), namespace["f"](x))
        torch.testing.assert_close(compiled(x), namespace["f"](x))
        assert ours(namespace)
        framegraph.reset()
        assert ours(namespace) == []


RSS_SCRIPT = """
import gc, os, sys, torch, framegraph

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

namespace = dict()
x = torch.ones(3)
marks = []
for i in range({compiles}):
    fn = eval(f"lambda x: x * {{i % 7 + 2}} + {{i}}", namespace)
    framegraph.compile(fn, backend="eager")(x)
    if (i + 1) % 200 == 0:
        framegraph.reset()
        gc.collect()
        marks.append(rss_mb())
print(" ".join(f"{{m:.1f}}" for m in marks))
print(framegraph.counters["stats"]["unique_graphs"])
"""


def test_rss_stays_flat_over_many_compiles_with_reset():
    """Each compile put a GraphModule (its fake tensors and ShapeEnv with it) in the lambda's
    globals for good: about 25 KB a tiny compile, 5 MB per 200 here, 15 MB over the 600
    compiles measured. The first 200 compiles warm up (imports, caches); from there the RSS
    must stay flat (what is left is torch's: the source of each GraphModule in linecache,
    fake-tensor dispatch cache entries; about 2 KB a compile)."""
    compiles = 800
    done = subprocess.run([sys.executable, "-c", RSS_SCRIPT.format(compiles=compiles)], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr[-2000:]
    marks_line, graphs = done.stdout.strip().splitlines()
    marks = [float(m) for m in marks_line.split()]
    assert int(graphs) == compiles
    assert marks[-1] - marks[0] < 6.0, f"RSS (MB) after every 200 compiles: {marks}"


def test_accumulated_limit_counts_only_entries_of_live_code():
    framegraph.reset()
    counters.clear()
    namespace: dict = {}
    x = torch.ones(2)
    with config.patch(accumulated_recompile_limit=10), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(40):  # short-lived functions, each compiled and called once
            fn = eval(f"lambda x: x * {i}", namespace)
            torch.testing.assert_close(framegraph.compile(fn, backend="eager")(x), x * i)
            del fn
            if i % 5 == 4:  # at most 5 dead ones wait for a collection: under the limit of 10
                gc.collect()
        assert counters["stats"]["unique_graphs"] == 40, "a new function was not compiled"
        kept = [eval(f"lambda x: x + {i}", namespace) for i in range(12)]
        for fn in kept:
            framegraph.compile(fn, backend="eager")(x)
    assert counters["stats"]["unique_graphs"] == 50, "the limit still holds for live code"
    assert [get_cache_entries(fn.__code__) != [] for fn in kept] == [True] * 10 + [False] * 2
    assert sum("accumulated_recompile_limit (10)" in str(w.message) for w in caught) == 2


def scale(x, n):
    return x * n


def run_threads(compiled, values, calls):
    x = torch.randn(4)
    errors: list = []
    barrier = threading.Barrier(len(values))

    def worker(n):
        try:
            barrier.wait()
            for _ in range(calls):
                torch.testing.assert_close(compiled(x, n), x * n)
        except BaseException as error:  # noqa: BLE001  reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(n,)) for n in values]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_the_recompile_limit_holds_under_threads():
    framegraph.reset()
    counters.clear()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: a race shows within a compile
    try:
        with config.patch(recompile_limit=4), warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            compiled = framegraph.compile(scale, backend="eager", dynamic=False)
            run_threads(compiled, values=[2, 3, 4, 5, 6, 7, 8, 9], calls=5)
    finally:
        sys.setswitchinterval(interval)
    entries = get_cache_entries(scale.__code__)
    assert len(entries) <= 4
    assert counters["stats"]["unique_graphs"] == len(entries)


def test_threads_wanting_one_variant_compile_it_once():
    framegraph.reset()
    counters.clear()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        compiled = framegraph.compile(scale, backend="eager", dynamic=False)
        run_threads(compiled, values=[3] * 8, calls=3)
    finally:
        sys.setswitchinterval(interval)
    assert len(get_cache_entries(scale.__code__)) == 1
    assert counters["stats"]["unique_graphs"] == 1


class CountingLock:
    def __init__(self, lock):
        self.lock, self.acquired = lock, 0

    def __enter__(self):
        self.acquired += 1
        return self.lock.__enter__()

    def __exit__(self, *exc_info):
        return self.lock.__exit__(*exc_info)


def test_cache_hits_and_calls_past_the_limit_take_no_lock(monkeypatch):
    framegraph.reset()
    lock = CountingLock(convert_frame._compile_lock)
    monkeypatch.setattr(convert_frame, "_compile_lock", lock)
    x = torch.randn(3)
    with config.patch(recompile_limit=2), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        compiled = framegraph.compile(scale, backend="eager", dynamic=False)
        for n in (1, 2, 3):  # two compiles, then the limit is met and diagnosed once
            compiled(x, n)
        taken = lock.acquired
        assert taken == 3
        for n in (1, 2, 3, 4, 5) * 20:
            torch.testing.assert_close(compiled(x, n), x * n)
    assert lock.acquired == taken


class Token:
    """Stands for what a caller's frame holds while framegraph compiles under it: a tensor,
    a lock, or an RAII guard such as the one torch's tensor printing holds (it switches
    functorch off until it is freed)."""


@framegraph.disable
def _opaque(x):
    return x + 1


def _breaks(x):
    return _opaque(x * 2) * 3


def _breaks_in_a_callee(x):
    return _breaks(x) - 1


def _introspects(x):
    return sys._getframe().f_lineno + x  # the frame object would outlive a split: all eager


def _generates(x):
    def gen():
        yield x + 1
        _opaque(x)
        yield x + 2
    return sum(gen())


def _backend_fails(gm, example_inputs):
    raise RuntimeError("the backend refuses")


LIFETIME_CASES = {
    "a graph break": (_breaks, "eager"),
    "a graph break in a callee": (_breaks_in_a_callee, "eager"),
    "a frame that runs eagerly as a whole": (_introspects, "eager"),
    "a break in a generator": (_generates, "eager"),
    "a backend that fails": (_breaks, _backend_fails),
}


@pytest.mark.parametrize("case", list(LIFETIME_CASES))
def test_a_compile_keeps_no_frame_of_the_caller_alive(case):
    """What the caller's frame holds is freed when the caller returns, as eagerly, with the
    collector off: no record framegraph keeps of a compile (a break's reason, a failed
    attempt) may hold a traceback, whose frames link back to every caller on the stack."""
    fn, backend = LIFETIME_CASES[case]

    def caller():
        compiled = framegraph.compile(fn, backend=backend)
        held = Token()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                compiled(torch.ones(3))
            except framegraph.exc.BackendCompilerFailed:  # raised to the caller, then dropped
                pass
        return weakref.ref(held)

    caller()  # torch's first ShapeEnv imports modules lazily, and a failed import leaves a cycle
    framegraph.reset()
    gc.collect()
    gc.disable()
    try:
        alive = caller()
        assert alive() is None, f"after {case}, framegraph keeps the caller's frame alive"
    finally:
        gc.enable()
        framegraph.reset()


def _logs_a_tensor(x):
    y = x.sum()
    print_to = io.StringIO()
    print(y, file=print_to)  # a break; torch's tensor printing switches functorch off meanwhile
    return y.sin()


def test_tensor_printing_under_a_break_leaves_functorch_switched_on():
    """torch's `_str` holds a guard that excludes functorch's dispatch keys until its frame is
    freed. A frame compiled under it (namedtuple's generated `__new__` on 3.13) must not keep
    it alive, or every later torch.func transform fails (the BatchedTensor storage error)."""
    excluded = torch._C._dispatch_tls_local_exclude_set
    before = str(excluded())
    framegraph.reset()
    compiled = framegraph.compile(_logs_a_tensor, backend="eager")
    for _ in range(3):
        torch.testing.assert_close(compiled(torch.ones(3)), _logs_a_tensor(torch.ones(3)))
        assert str(excluded()) == before
    assert torch.func.vmap(torch.sin)(torch.ones(2, 3)).shape == (2, 3)
    framegraph.reset()
