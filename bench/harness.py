"""What every benchmark needs: the two frontends behind one interface, isolated runs, timing.

Isolation: each measurement runs in a child forked from the `python -m bench` process, which has
imported torch, torch._dynamo, framegraph and the workloads but compiled and run nothing. A child
is therefore a fresh process without the import cost (about 2 s), for both frontends alike, and a
crash or hang in one measurement costs only that measurement. Linux (fork) only.
"""

from __future__ import annotations

import math
import multiprocessing
import statistics
import time
import traceback
import warnings
from typing import Any, Callable

import torch
import torch._dynamo  # torch.compile imports it on first use; import it here so neither side pays

# Imports that a compile pulls in lazily, paid here once so neither frontend's timing includes
# them: the first ShapeEnv symbol calls uninteresting_files(), which imports torch.export,
# torch._inductor.sizevars and with them networkx (~400 modules, 0.1-0.25 s). torch.compile
# reaches it during its warm-up compile; framegraph's first module compile otherwise would.
# Not preloaded: sympy.sets.setexpr and sympy.tensor.tensor, which framegraph's first GPT compile
# makes sympy import. They are not just import cost: preloading them made torch.compile's gpt1
# compile ~180 ms slower (sympy's dispatch tables grow), so they stay inside framegraph's timing
# and show as "modules imported while timed".
from torch.fx.experimental.symbolic_shapes import uninteresting_files  # noqa: E402

uninteresting_files()

# One intra-op thread for everything: on this shared 2-core machine two OpenMP threads spin
# against other jobs and made eager calls 2-8x slower and erratic.
torch.set_num_threads(1)

try:
    import framegraph
    FRAMEGRAPH_IMPORT_ERROR = None
except Exception as error:  # a broken checkout must still leave the torch columns measured
    framegraph = None
    FRAMEGRAPH_IMPORT_ERROR = f"{type(error).__name__}: {error}"

FRONTENDS = ("framegraph", "torch")


def compile_with(frontend: str, fn: Callable, backend: str) -> Callable:
    if frontend == "torch":
        return torch.compile(fn, backend=backend)
    if framegraph is None:
        raise RuntimeError(f"import framegraph failed: {FRAMEGRAPH_IMPORT_ERROR}")
    return framegraph.compile(fn, backend=backend)


def counters(frontend: str):
    return torch._dynamo.utils.counters if frontend == "torch" else framegraph.counters


def clear_counters() -> None:
    torch._dynamo.utils.counters.clear()
    torch._dynamo.utils.compilation_time_metrics.clear()
    if framegraph is not None:
        framegraph.counters.clear()


def graph_count(frontend: str) -> int:
    return counters(frontend)["stats"]["unique_graphs"]


def issues(frontend: str) -> list[str]:
    """Why a frontend did not capture everything in one graph: breaks, fallbacks, recompiles."""
    c = counters(frontend)
    if frontend == "torch":
        breaks = sum(c["graph_break"].values())
        return [f"{breaks} graph break(s)"] if breaks else []
    # counters["graph_break"] counts splits (the frame resumes after the break) and whole
    # frames that ran eagerly; the latter are also in counters["unsupported"].
    eager_frames = sum(c["unsupported"].values())
    breaks = sum(c["graph_break"].values()) - eager_frames
    found = [f"{breaks} graph break(s)"] if breaks else []
    found += [f"frame ran eagerly ({n}x): {reason}" for reason, n in c["unsupported"].items()]
    found += [f"fallback ({n}x): {kind}" for kind, n in c["fallback"].items()]
    recompiles = sum(c["recompiles"].values())
    return found + ([f"{recompiles} recompile(s)"] if recompiles else [])


def check_equal(actual: Any, expected: Any, **tolerances: float) -> str | None:
    """None when outputs match eager, else the first line of assert_close's message. Objects
    assert_close does not compare (a transformers key/value cache) are compared by what they
    hold: their tensors within the tolerances, everything else by equality."""
    try:
        try:
            torch.testing.assert_close(actual, expected, **tolerances)
        except TypeError:
            (tensors, others), (want_tensors, want_others) = _leaves(actual), _leaves(expected)
            torch.testing.assert_close(tensors, want_tensors, **tolerances)
            if others != want_others:
                raise AssertionError(f"non-tensor contents differ: {others!r} != {want_others!r}")
    except AssertionError as error:
        return "output differs from eager: " + str(error).strip().splitlines()[0]
    return None


def _leaves(value: Any, tensors: list | None = None, others: list | None = None) -> tuple[list, list]:
    """The tensors and the other values `value` holds, through containers and objects' `__dict__`."""
    tensors, others = ([], []) if tensors is None else (tensors, others)
    if isinstance(value, torch.Tensor):
        tensors.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            others.append(k)
            _leaves(v, tensors, others)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _leaves(v, tensors, others)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        others.append(type(value).__qualname__)
        _leaves(vars(value), tensors, others)
    else:
        others.append(value)
    return tensors, others


def per_call_seconds(fn: Callable, args: tuple, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - t0) / calls


def calls_for(fn: Callable, args: tuple, seconds: float) -> int:
    """How many calls of `fn` take about `seconds`, measured after a few warm calls."""
    per_call = min(per_call_seconds(fn, args, 3) for _ in range(3))
    return max(10, int(seconds / max(per_call, 1e-7)))


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _child(conn, target: Callable, args: tuple) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = target(*args)
        except BaseException as error:
            result = {"error": f"{type(error).__name__}: {error}",
                      "traceback": traceback.format_exc(limit=6)}
    # Warnings (framegraph's "runs it eagerly", dynamo's graph-break hints) go in the report notes.
    result.setdefault("warnings", sorted({str(w.message).splitlines()[0][:200] for w in caught}))
    conn.send(result)
    conn.close()


def run_isolated(target: Callable[..., dict], *args: Any, timeout: float = 300.0) -> dict:
    """`target(*args)` in a forked child; its dict, or {"error": ...} if it raised, died or hung."""
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(sender, target, args), daemon=True)
    process.start()
    sender.close()
    try:
        if receiver.poll(timeout):
            return receiver.recv()
        return {"error": f"timed out after {timeout:.0f} s"}
    except EOFError:
        return {"error": "child process died"}
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()


def timed_rounds(variants: dict[str, Callable], args: tuple, rounds: int, calls: int) -> dict[str, list[float]]:
    """Seconds per call of each variant, one value per round; the order rotates every round."""
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(per_call_seconds(variants[name], args, calls))
    return times
