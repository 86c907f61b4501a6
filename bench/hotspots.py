"""Where framegraph's time goes: cProfile of a first call (compile) and of cache hits, and guard cost by kind.

    python -m bench.hotspots [workload ...] [--top N] [--hits N]      (default: gpt8)

Not part of `python -m bench` and not written to RESULTS.md: a diagnostic for the compile-time
and cache-hit tables. For each workload, in one process (after harness's imports and warm-up, as
the compile-time benchmark does): the first call under cProfile (`eager` backend), the top
functions by cumulative and by own time; then `--hits` cache-hit calls under cProfile; then every
guard of the root frame's first cache entry timed on its own, summed by guard kind, with the most
expensive single guards. cProfile inflates Python-heavy code, so read shares, not absolute times.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import pstats
import time

import torch

from . import harness
from .cache_hit import _entries
from .compile_time import _call_module
from .workloads import get


def _top(profile: cProfile.Profile, sort: str, top: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats(sort).print_stats(top)
    text = out.getvalue()
    # Drop pstats' preamble up to the column header.
    return text[text.find("   ncalls"):].rstrip()


def _guard_costs(check, f_locals: dict, top: int) -> str:
    """Each guard lowered alone (with the source reads it needs) and timed, summed by kind."""
    from framegraph.guards import compile_guards

    f_globals = check.scope["G"]
    by_kind: dict[str, list[float]] = collections.defaultdict(list)
    single = []
    for guard, text in zip(check.guards, check.texts):
        alone = compile_guards([guard], f_globals).fn
        best = min(harness.per_call_seconds(alone, (f_locals,), 200) for _ in range(3))
        by_kind[guard.kind.value].append(best)
        single.append((best, guard.kind.value, text))
    whole = min(harness.per_call_seconds(check.fn, (f_locals,), 20) for _ in range(3))
    total = sum(seconds for seconds, _, _ in single)
    n_ops = getattr(check.fn, "n_ops", None)
    reads = f"; the program has {n_ops} ops, {n_ops - len(single)} of them source reads" if n_ops else ""
    lines = [f"whole check ({type(check.fn).__name__}): {whole * 1e6:.1f} µs{reads}; sum of the "
             f"{len(single)} guards timed alone, each with its own reads: {total * 1e6:.1f} µs",
             "", "| kind | guards | µs total | µs mean |", "|---|---|---|---|"]
    for kind, times in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"| {kind} | {len(times)} | {sum(times) * 1e6:.1f} | {sum(times) / len(times) * 1e6:.2f} |")
    lines += ["", "Most expensive single guards (µs):"]
    for seconds, kind, text in sorted(single, reverse=True)[:top]:
        lines.append(f"  {seconds * 1e6:7.2f}  {kind:10s} {text[:150]}")
    return "\n".join(lines)


def profile_workload(name: str, top: int, hits: int) -> None:
    case = get(name)
    [case.fn(*args) for args in case.calls()]
    warm = harness.compile_with("framegraph", _call_module, "eager")
    warm(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), torch.ones(2, 3))
    harness.clear_counters()
    compiled = harness.compile_with("framegraph", case.fn, "eager")

    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    for args in case.calls():
        compiled(*args)
    profile.disable()
    seconds = time.perf_counter() - t0
    phases = {k: f"{v * 1e3:.1f}" for k, v in harness.framegraph.counters["compile_seconds"].items()}
    print(f"## {name}: first call {seconds * 1e3:.1f} ms under cProfile; phases (ms) {phases}\n")
    print(f"### first call, top {top} by cumulative time\n\n{_top(profile, 'cumulative', top)}\n")
    print(f"### first call, top {top} by own time\n\n{_top(profile, 'tottime', top)}\n")

    args = case.example_inputs
    for _ in range(12):
        compiled(*args)
    graphs = harness.graph_count("framegraph")
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    for _ in range(hits):
        compiled(*args)
    profile.disable()
    seconds = (time.perf_counter() - t0) / hits
    again = harness.graph_count("framegraph") - graphs
    print(f"### {hits} cache-hit calls ({seconds * 1e6:.0f} µs per call under cProfile; "
          f"{again} compiles during them), top {top} by cumulative time\n\n{_top(profile, 'cumulative', top)}\n")
    print(f"### cache-hit calls, top {top} by own time\n\n{_top(profile, 'tottime', top)}\n")

    entries, f_locals = _entries("framegraph", case.fn, compiled, args)
    if entries:
        print(f"### guards of the root frame's first cache entry ({len(entries)} entries)\n")
        print(_guard_costs(entries[0].check_fn.check, f_locals, top) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.hotspots", description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=["gpt8"])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--hits", type=int, default=50)
    options = parser.parse_args()
    for name in options.workloads:
        # One forked child per workload, like the benchmarks: no workload sees another's compiles.
        result = harness.run_isolated(_run_one, name, options.top, options.hits, timeout=600)
        if "error" in result:
            print(f"## {name}: failed: {result['error']}\n{result.get('traceback', '')}")


def _run_one(name: str, top: int, hits: int) -> dict:
    profile_workload(name, top, hits)
    return {}


if __name__ == "__main__":
    main()
