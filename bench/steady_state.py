"""Steady-state speed with the `inductor` backend on CPU: framegraph, torch.compile and eager.

Each workload runs in its own forked child (an inductor failure or hang costs one row), under
`torch.no_grad()` (inference; with grad on, inductor would compile forward and backward). Both
frontends compile, their outputs are checked against eager (rtol = atol = 1e-4: inductor
reorders float arithmetic), then eager and both compiled versions are timed in rotating rounds.
"""

from __future__ import annotations

import time

import torch

from . import harness, report
from .workloads import get

WARM_CALLS = 12  # more than framegraph's recompile_limit (8): a cache that never hits shows
TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


def measure(name: str, rounds: int, loop_seconds: float) -> dict:
    with torch.no_grad():
        case = get(name)
        args = case.example_inputs
        harness.clear_counters()
        variants = {"eager": case.fn}
        row = {"notes": {}, "compile_seconds": {}}
        for frontend in harness.FRONTENDS:
            compiled = harness.compile_with(frontend, case.fn, "inductor")
            t0 = time.perf_counter()
            mismatches = {harness.check_equal(compiled(*args), case.fn(*args), **TOLERANCE)}
            row["compile_seconds"][frontend] = time.perf_counter() - t0
            first_graphs = harness.graph_count(frontend)
            for _ in range(WARM_CALLS):
                fresh = case.fresh_inputs()
                mismatches.add(harness.check_equal(compiled(*fresh), case.fn(*fresh), **TOLERANCE))
            graphs = harness.graph_count(frontend)
            notes = sorted(m for m in mismatches if m)
            if graphs != first_graphs:
                notes.append(f"not cache hits: recompiled on repeat calls ({first_graphs} -> {graphs} "
                             f"graphs in {WARM_CALLS} calls)")
            row["notes"][frontend] = notes + harness.issues(frontend)
            variants[frontend] = compiled
        calls = harness.calls_for(case.fn, args, loop_seconds)
        times = harness.timed_rounds(variants, args, rounds, calls)
    row["per_call"] = {v: harness.median(t) for v, t in times.items()}
    row["calls"] = calls
    return row


def run(names: list[str], rounds: int, log) -> dict:
    out = {}
    for name in names:
        out[name] = harness.run_isolated(measure, name, rounds, 0.2, timeout=420)
        log(f"steady state: {name} done")
    return out


def render(data: dict, rounds: int) -> str:
    rows = []
    for name, row in data.items():
        if "error" in row:
            rows.append([f"`{name}`"] + ["n/a"] * 7 + [f"failed: {row['error']}"])
            continue
        pc, cs = row["per_call"], row["compile_seconds"]
        notes = "; ".join(f"{fe}: {n}" for fe in harness.FRONTENDS for n in row["notes"][fe]) or "-"
        rows.append([f"`{name}`", report.us(pc["eager"]), report.us(pc["framegraph"]), report.us(pc["torch"]),
                     report.ratio(pc["framegraph"], pc["torch"]), report.ratio(pc["framegraph"], pc["eager"]),
                     report.ratio(pc["torch"], pc["eager"]),
                     f"{report.ms(cs['framegraph'])} / {report.ms(cs['torch'])}", notes])
    return "\n".join([
        "### Steady-state speed, `inductor` backend (CPU, `torch.no_grad()`)",
        "",
        f"Per call (µs): median over {rounds} rounds of the mean over many calls with the same "
        "inputs, eager and both compiled versions alternating in one process per workload. "
        "Ratios below 1 are faster. First call (ms) includes inductor compilation, with inductor's "
        "on-disk caches as left by earlier runs. It is not a compile-time benchmark: framegraph "
        "compiles first in each process and pays inductor's one-time set-up and kernel builds, "
        "which torch.compile then finds cached (run the other way round, gpt8 was 192 ms "
        "framegraph against 2047 ms torch.compile).",
        "",
        report.table(["workload", "eager (µs)", "framegraph (µs)", "torch.compile (µs)",
                      "fg / torch", "fg / eager", "torch / eager", "first call fg / torch (ms)",
                      "notes"], rows),
    ])


if __name__ == "__main__":
    # `python -m bench.steady_state [--rounds N] workload...`: only this table, printed.
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.steady_state")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("names", nargs="+")
    options = parser.parse_args()
    print(render(run(options.names, options.rounds, lambda message: print(message, flush=True)), options.rounds))
