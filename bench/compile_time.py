"""First-call (compile) time with the `eager` backend, and its growth with LM depth.

Each run is one forked child (see harness): it builds the workload, runs it eagerly once (the
reference output, and it warms the eager kernels), compiles an unrelated function calling a
Linear+ReLU module with the same frontend (absorbing the frontend's one-time lazy setup, reported on its own), clears the
counters, then times the workload's first call(s) with `time.perf_counter`. Runs alternate
framegraph/torch and the order flips every run. The first call includes running the graph once.

`python -m bench` runs it for every workload; `python -m bench.compile_time [--runs N]
[workload ...]` prints the tables for some (default: the zoo models).
"""

from __future__ import annotations

import collections
import os
import sys
import time

import torch

from . import harness, report
from .workloads import DESCRIPTIONS, WORKLOADS, ZOO2_MISSING, ZOO_MISSING, get

PHASES = ("translation", "fake_propagation", "graph_module", "backend", "guards", "total")
# The phases both frontends time, as the side-by-side table names them: framegraph's counter,
# and torch's `compilation_time_metrics` timers (nested: bytecode_tracing holds get_fake_value;
# `_compile.compile_inner` holds them all). translation = tracing minus fake propagation.
SHARED_PHASES = ("fake_propagation", "translation", "guards", "backend", "total")
_TORCH_TIMERS = {"fake_propagation": "get_fake_value", "tracing": "bytecode_tracing", "guards": "build_guards",
                 "backend": "OutputGraph.call_user_compiler", "total": "_compile.compile_inner"}


def _torch_phases() -> dict:
    """torch.compile's compile time by phase, in seconds, from its own timers."""
    timers = torch._dynamo.utils.compilation_time_metrics
    found = {phase: sum(timers.get(name, ())) for phase, name in _TORCH_TIMERS.items()}
    found["translation"] = found.pop("tracing") - found["fake_propagation"]
    return found
PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_scaling.png")


def _call_module(module, x):
    # A function rather than a compiled module. (It dates from when framegraph's per-module entry
    # functions shared compile records, so a compiled warm-up module made the workload's compile
    # count as a recompile; records are now per code object, and the warm-up stays as it was
    # so that runs remain comparable.)
    return module(x)


def first_call(frontend: str, name: str) -> dict:
    """One measurement, in a fresh child: seconds for the workload's first call(s), and counters."""
    case = get(name)
    expected = [case.fn(*args) for args in case.calls()]
    warm = harness.compile_with(frontend, _call_module, "eager")
    t0 = time.perf_counter()
    warm(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), torch.ones(2, 3))
    warm_seconds = time.perf_counter() - t0
    harness.clear_counters()
    compiled = harness.compile_with(frontend, case.fn, "eager")
    modules = set(sys.modules)
    t0 = time.perf_counter()
    outputs = [compiled(*args) for args in case.calls()]
    seconds = time.perf_counter() - t0
    imported = len(set(sys.modules) - modules)
    result = {"seconds": seconds, "warm_seconds": warm_seconds,
              "graphs": harness.graph_count(frontend),
              "issues": harness.issues(frontend) + ([f"{imported} modules imported while timed"] if imported else []),
              "mismatch": harness.check_equal(outputs, expected)}
    if frontend == "framegraph":
        result["phases"] = dict(harness.framegraph.counters["compile_seconds"])
    else:
        result["phases"] = _torch_phases()
    return result


def run(names: list[str], runs: int, log) -> dict:
    """{name: {frontend: [result per run]}}, measured alternately."""
    results: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for run_index in range(runs):
        for i, name in enumerate(names):
            order = harness.FRONTENDS if (run_index + i) % 2 == 0 else harness.FRONTENDS[::-1]
            for frontend in order:
                results[name][frontend].append(harness.run_isolated(first_call, frontend, name, timeout=180))
        log(f"compile time: run {run_index + 1}/{runs} done")
    return {name: dict(by_frontend) for name, by_frontend in results.items()}


def summarize(runs: list[dict]) -> dict:
    """Medians over the runs that worked, plus what went wrong in any of them."""
    good = [r for r in runs if "error" not in r]
    notes = sorted({r["error"] for r in runs if "error" in r}
                   | {i for r in good for i in r["issues"]}
                   | {r["mismatch"] for r in good if r["mismatch"]})
    phases = {p: harness.median([r["phases"].get(p, 0.0) for r in good if "phases" in r])
              for p in dict.fromkeys(PHASES + SHARED_PHASES)}
    return {"seconds": harness.median([r["seconds"] for r in good]),
            "warm_seconds": harness.median([r["warm_seconds"] for r in good]),
            "graphs": sorted({r["graphs"] for r in good}), "n": len(good), "of": len(runs),
            "notes": notes, "phases": phases,
            "warnings": sorted({w for r in runs for w in r.get("warnings", [])})}


def _graphs(s: dict) -> str:
    return "/".join(map(str, s["graphs"])) or "n/a"


def render(results: dict, names: list[str], depths: list[int]) -> str:
    summary = {name: {fe: summarize(rs) for fe, rs in by.items()} for name, by in results.items()}
    runs = max(len(rs) for by in results.values() for rs in by.values())
    rows, phase_rows, shared_rows, notes = [], [], [], []
    for name in names:
        fg, tc = summary[name]["framegraph"], summary[name]["torch"]
        rows.append([f"`{name}`", DESCRIPTIONS.get(name, ""), _cell(fg), _cell(tc),
                     report.ratio(fg["seconds"], tc["seconds"]), _graphs(fg), _graphs(tc),
                     "; ".join(fg["notes"]) or "-", "; ".join(tc["notes"]) or "-"])
        p = fg["phases"]
        phase_rows.append([f"`{name}`"] + [report.ms(p[k]) for k in PHASES]
                          + [report.ms(fg["seconds"]), report.ms(fg["seconds"] - p["total"])])
        shared_rows.append([f"`{name}`"] + [f"{report.ms(p[k])} / {report.ms(tc['phases'][k])}"
                                            for k in SHARED_PHASES])
        notes += [f"- `{name}`, {fe}: {w}" for fe, s in (("framegraph", fg), ("torch", tc))
                  for w in s["warnings"]]
    first = {fe: harness.median([summary[n][fe]["warm_seconds"] for n in names]) for fe in harness.FRONTENDS}
    parts = [
        "### Compile time: first call, `eager` backend",
        "",
        f"Median of {runs} runs, each in a fresh process (forked after `import torch, torch._dynamo, "
        "framegraph`, and after importing what the first ShapeEnv symbol imports, so import cost is "
        "excluded for both; a note says if a timed call still imported modules). Before timing, each run calls the "
        "workload eagerly once (reference output; warms eager kernels) and compiles an unrelated "
        "function calling a Linear+ReLU module with the same frontend (one-time lazy setup, "
        "excluded; median "
        f"{report.ms(first['framegraph'])} ms framegraph, {report.ms(first['torch'])} ms torch). "
        "Included: compiling, guard building, and running the graph once. Outputs are checked "
        "against eager with `torch.testing.assert_close`. Graphs: `unique_graphs` counters.",
        "",
        report.table(["workload", "what", "framegraph (ms)", "torch.compile (ms)", "ratio fg/torch",
                      "graphs fg", "graphs torch", "framegraph notes", "torch notes"], rows),
        "",
        "framegraph's compile phases (`framegraph.counters[\"compile_seconds\"]`, ms, summed over "
        "the run's compiles, median over runs). `outside` = first-call wall time minus `total`: "
        "the hook, frames that are not compiled, and running the graph.",
        "",
        report.table(["workload"] + list(PHASES) + ["first call", "outside"], phase_rows),
        "",
        "Both frontends by phase, framegraph / torch.compile (ms, median over runs). torch's from "
        "its own timers (`torch._dynamo.utils.compilation_time_metrics`): fake_propagation = "
        "`get_fake_value`, translation = `bytecode_tracing` minus that, guards = `build_guards`, "
        "backend = `OutputGraph.call_user_compiler`, total = `_compile.compile_inner`; summed over "
        "the run's compiles. Fake-tensor propagation is paid by both; the rest is each frontend's own.",
        "",
        report.table(["workload"] + list(SHARED_PHASES), shared_rows),
    ]
    for prefix, label, missing in (("zoo_", "Zoo models", ZOO_MISSING), ("zoo2_", "Second-zoo models", ZOO2_MISSING)):
        parts += _zoo_line(summary, [n for n in names if n.startswith(prefix)], label, missing)
    if notes:
        parts += ["", "Warnings seen (first line):", ""] + sorted(set(notes))
    if depths:
        parts += ["", render_scaling(summary, depths)]
    return "\n".join(parts)


def _zoo_line(summary: dict, zoo: list[str], label: str, missing: list[str]) -> list[str]:
    """The median compile-time ratio over a zoo's workloads, or why they were not run."""
    if zoo:
        ratios = [summary[n]["framegraph"]["seconds"] / summary[n]["torch"]["seconds"] for n in zoo]
        return ["", f"{label} ({len(zoo)}): median compile-time ratio fg/torch "
                    f"{harness.median(ratios):.2f}x (each: {', '.join(f'{r:.2f}x' for r in ratios)})."]
    if missing:
        return ["", f"{label}: not run ({', '.join(missing)} not installed; they come with the `models` extra)."]
    return []


def _cell(s: dict) -> str:
    text = report.ms(s["seconds"])
    return text if s["n"] == s["of"] else f"{text} ({s['n']}/{s['of']} runs worked)"


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def render_scaling(summary: dict, depths: list[int]) -> str:
    rows, series = [], {}
    for fe in harness.FRONTENDS:
        points = [(d, summary[f"gpt{d}"][fe]["seconds"] * 1e3) for d in depths
                  if summary[f"gpt{d}"][fe]["n"]]
        series[fe] = points
    slopes = {fe: _slope([d for d, _ in pts], [t for _, t in pts]) if len(pts) > 1 else float("nan")
              for fe, pts in series.items()}
    for d in depths:
        fg, tc = summary[f"gpt{d}"]["framegraph"], summary[f"gpt{d}"]["torch"]
        rows.append([str(d), _cell(fg), _cell(tc), report.ratio(fg["seconds"], tc["seconds"])])
    plotted = _plot(series, slopes)
    return "\n".join([
        "### Compile-time scaling with LM depth (`eager` backend)",
        "",
        "The GPT of tests/models.py at each depth, measured as above (same runs for depths that are "
        "also workloads). Slope = least-squares fit of first-call ms against layers. Plot: "
        + ("`bench/compile_scaling.png`." if plotted else "none (matplotlib, the `bench` extra, is not installed)."),
        "",
        report.table(["layers", "framegraph (ms)", "torch.compile (ms)", "ratio fg/torch"], rows),
        "",
        f"Slope: framegraph {slopes['framegraph']:.1f} ms/layer, torch.compile "
        f"{slopes['torch']:.1f} ms/layer (ratio {report.ratio(slopes['framegraph'], slopes['torch'])}).",
    ])


def _plot(series: dict, slopes: dict) -> bool:
    """Draws the scaling plot; False where matplotlib is missing (the tables matter more than
    the picture, and a run is minutes of measurement)."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    for fe, label in (("framegraph", "framegraph"), ("torch", "torch.compile")):
        if series[fe]:
            xs, ys = zip(*series[fe])
            ax.plot(xs, ys, "o-", label=f"{label} ({slopes[fe]:.1f} ms/layer)")
    ax.set_xlabel("GPT layers")
    ax.set_ylabel("first call, eager backend (ms, median)")
    ax.set_title("Compile time against model depth")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(PLOT)
    plt.close(fig)
    return True


def names_and_depths(quick: bool) -> tuple[list[str], list[int], list[str]]:
    """(table workloads, scaling depths, every workload to measure)."""
    names = [n for n in WORKLOADS if not (quick and n == "gpt32")]
    depths = [1, 2, 4, 8] if quick else [1, 2, 4, 8, 16, 32]
    return names, depths, names + [f"gpt{d}" for d in depths if f"gpt{d}" not in names]


def command_line(module: str, doc: str, option: str, default: int) -> tuple[list[str], int]:
    """(workloads, the --`option` count) from the command line of `python -m bench.<module>`,
    the zoo models when none are named; prints the interpreter and torch versions first."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m bench.{module}", description=doc.splitlines()[0])
    parser.add_argument(f"--{option}", type=int, default=default)
    parser.add_argument("workloads", nargs="*")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, torch {torch.__version__}\n")
    return args.workloads or [n for n in names_and_depths(False)[0] if n.startswith("zoo_")], getattr(args, option)


def main() -> None:
    """The compile-time tables alone, printed, not written to RESULTS.md."""
    names, runs = command_line("compile_time", __doc__, "runs", 3)
    print(render(run(names, runs, lambda message: None), names, []))


if __name__ == "__main__":
    main()
