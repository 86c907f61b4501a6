"""Cache-hit overhead: per-call time of a compiled call minus the eager call, `eager` backend.

    python -m bench.cache_hit [--rounds N] [workload ...]    (default: the 14 zoo models)

Part of `python -m bench`; run alone it prints its table (for one Python version, or for the
zoo on every model without the rest of the suite).

Each workload runs in its own forked child, eager and both frontends in that one process. It is
compiled by both frontends, checked against eager on fresh inputs, warmed, then timed in rounds:
every round times eager, framegraph and torch.compile back to back (rotating the order) over the same number of calls of the example
inputs; overhead is compiled minus eager within a round, and the table gives medians over rounds.
A frontend whose graph count still grows after its first call is not hitting its cache, and the
table says so. Guard evaluation is also timed on its own, calling the cache entry's check with a
dict shaped like the frame's locals.
"""

from __future__ import annotations

import inspect

import torch

from . import harness, report
from .workloads import get

WARM_CALLS = 12  # more than framegraph's recompile_limit (8): a cache that never hits shows


def _bound_locals(function, args: tuple) -> dict:
    bound = inspect.signature(function).bind(*args)
    bound.apply_defaults()
    return dict(bound.arguments)


def _entries(frontend: str, fn, compiled, args: tuple) -> tuple[list, dict]:
    """The first cache entries found on the frame the frontend compiled, and that frame's locals."""
    if frontend == "framegraph":
        if isinstance(fn, torch.nn.Module):
            # OptimizedModule compiles a per-module `module_call(module, *args, **kwargs)`.
            code, f_locals = compiled._call.__wrapped__.__code__, {"module": fn, "args": args, "kwargs": {}}
        else:
            code, f_locals = fn.__code__, _bound_locals(fn, args)
        return harness.framegraph.eval_frame.get_cache_entries(code), f_locals
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    from torch._dynamo.external_utils import wrap_inline

    if not isinstance(fn, torch.nn.Module):
        return _debug_get_cache_entry_list(fn.__code__), _bound_locals(fn, args)
    # torch.compile(module) starts at wrap_inline's `inner(*args, **kwargs)` (closing over `fn`);
    # when that frame holds no tensor work the graph's entry is on forward(self, ...) instead.
    forward = type(fn).forward
    for code, f_locals in ((forward.__code__, _bound_locals(forward, (fn, *args))),
                           (wrap_inline(len).__code__, {"args": args, "kwargs": {}, "fn": fn})):
        entries = _debug_get_cache_entry_list(code)
        if entries:
            return entries, f_locals
    return [], {}


def _guard(frontend: str, entries: list, f_locals: dict) -> dict:
    if not entries:
        return {"note": "no cache entry on the entry frame"}
    if frontend == "framegraph":
        check = entries[0].check_fn
        count, failures = len(check.check.guards), check.check.failures
    else:
        check, count, failures = entries[0].guard_manager.check, None, lambda _: []
    passes = bool(check(f_locals))
    calls = harness.calls_for(check, (f_locals,), 0.05)
    seconds = min(harness.per_call_seconds(check, (f_locals,), calls) for _ in range(5))
    result = {"seconds": seconds, "passes": passes, "entries": len(entries), "guards": count}
    if not passes:
        result["note"] = "returns False on the frame's locals: " + "; ".join(failures(f_locals)[:2])
    return result


def measure(name: str, rounds: int, loop_seconds: float) -> dict:
    case = get(name)
    args = case.example_inputs
    harness.clear_counters()
    variants = {"eager": case.fn}
    row = {"notes": {}, "graphs": {}, "guard": {}}
    for frontend in harness.FRONTENDS:
        compiled = harness.compile_with(frontend, case.fn, "eager")
        compiled(*args)
        first_graphs = harness.graph_count(frontend)
        mismatches = set()
        for _ in range(WARM_CALLS):
            fresh = case.fresh_inputs()
            mismatches.add(harness.check_equal(compiled(*fresh), case.fn(*fresh)))
        graphs = harness.graph_count(frontend)
        row["graphs"][frontend] = graphs
        notes = sorted(m for m in mismatches if m)
        if graphs != first_graphs:
            notes.append(f"not cache hits: recompiled on repeat calls ({first_graphs} -> {graphs} "
                         f"graphs in {WARM_CALLS} calls)")
        row["notes"][frontend] = notes + harness.issues(frontend)
        variants[frontend] = compiled
        row["guard"][frontend] = _guard(frontend, *_entries(frontend, case.fn, compiled, args))
    calls = harness.calls_for(case.fn, args, loop_seconds)
    times = harness.timed_rounds(variants, args, rounds, calls)
    for frontend in harness.FRONTENDS:
        if harness.graph_count(frontend) != row["graphs"][frontend]:
            row["notes"][frontend].append("compiled again during timing")
    row["per_call"] = {v: harness.median(t) for v, t in times.items()}
    row["overhead"] = {fe: harness.median([c - e for c, e in zip(times[fe], times["eager"])])
                       for fe in harness.FRONTENDS}
    row["calls"] = calls
    return row


def run(names: list[str], rounds: int, log) -> dict:
    """One forked child per workload, so one workload's compiles cannot change another's."""
    out = {}
    for name in names:
        out[name] = harness.run_isolated(measure, name, rounds, 0.1, timeout=300)
        log(f"cache hit: {name} done")
    return out


def _overhead_ratio(per_call: dict, overhead: dict) -> str:
    # Below zero (the graph skips nn.Module.__call__) a ratio of overheads reads backwards:
    # -67 against -145 is 0.46x yet the slower result. Compare whole calls instead.
    if overhead["torch"] <= 0 or overhead["framegraph"] <= 0:
        return f"n/a (per call {report.ratio(per_call['framegraph'], per_call['torch'])})"
    return report.ratio(overhead["framegraph"], overhead["torch"])


def _zoo_summary(data: dict) -> list[str]:
    ratios = [row["per_call"]["framegraph"] / row["per_call"]["torch"]
              for name, row in data.items() if name.startswith("zoo_") and "error" not in row]
    if not ratios:
        return []
    return [f"Zoo models ({len(ratios)}): median per-call ratio fg/torch {harness.median(ratios):.2f}x "
            f"(each: {', '.join(f'{r:.2f}x' for r in ratios)}).", ""]


def render(data: dict, rounds: int) -> str:
    rows, guard_rows = [], []
    for name, row in data.items():
        if "error" in row:
            rows.append([f"`{name}`"] + ["n/a"] * 7 + [f"failed: {row['error']}"])
            continue
        pc, oh = row["per_call"], row["overhead"]
        notes = "; ".join(f"{fe}: {n}" for fe in harness.FRONTENDS for n in row["notes"][fe]) or "-"
        rows.append([f"`{name}`", report.us(pc["eager"]), report.us(pc["framegraph"]), report.us(pc["torch"]),
                     report.us(oh["framegraph"]), report.us(oh["torch"]),
                     _overhead_ratio(pc, oh), str(row["calls"]), notes])
        for fe in harness.FRONTENDS:
            g = row["guard"][fe]
            # A failing check stops at its first false guard, so its time is not a guard's cost.
            seconds = report.us(g["seconds"]) if g.get("passes") else "n/a"
            guard_rows.append([f"`{name}`", fe, seconds,
                               str(g.get("guards") if g.get("guards") is not None else "n/a"),
                               str(g.get("entries", 0)), g.get("note", "-")])
    return "\n".join([
        "### Cache-hit overhead, `eager` backend",
        "",
        f"One process per workload; per call = median over {rounds} rounds of the mean over "
        "`calls` calls with the same inputs (µs). Overhead = compiled minus eager in the same "
        "round, median over rounds; it can be negative, because the captured graph skips "
        "`nn.Module.__call__` and its hook checks; where either is not positive the ratio "
        "column compares whole compiled calls instead. Each compiled function was called "
        f"1 + {WARM_CALLS} times before timing, outputs checked against eager on fresh inputs.",
        "",
        report.table(["workload", "eager (µs)", "framegraph (µs)", "torch.compile (µs)",
                      "framegraph overhead (µs)", "torch overhead (µs)", "overhead ratio fg/torch",
                      "calls", "notes"], rows),
        "",
        *_zoo_summary(data),
        "Guard evaluation alone: the first cache entry's check (`check_fn(f_locals)`; for torch "
        "`guard_manager.check(f_locals)`) on a dict shaped like the frame's locals, best of 5 "
        "(µs per check; n/a when the check returns False). For modules framegraph's frame is "
        "`module_call(module, *args, **kwargs)` and torch's is the module's `forward(self, ...)` "
        "(or `wrap_inline`'s `inner(*args, **kwargs)` when forward is not where its graph starts). "
        "For `breaks3` it is the root frame's check only; the resume functions after each break "
        "have cache entries (and checks) of their own, paid in the per-call time above. "
        "`python -m bench.hotspots <workload>` breaks framegraph's check down by guard kind.",
        "",
        report.table(["workload", "frontend", "guard check (µs)", "guards", "cache entries", "notes"],
                     guard_rows),
    ])


def main() -> None:
    from .compile_time import command_line

    names, rounds = command_line("cache_hit", __doc__, "rounds", 5)
    print(render(run(names, rounds, lambda message: None), rounds))


if __name__ == "__main__":
    main()
