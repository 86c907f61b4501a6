"""`python -m bench [--quick]`: every benchmark, framegraph beside torch.compile, into RESULTS.md.

Order matters: this process imports torch and framegraph but never runs a tensor op or compiles,
because every measurement is a child forked from it, and a fork after OpenMP has started can
hang. The hook microbenchmark runs as its own interpreter (it times calls before framegraph._C
is imported).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from . import cache_hit, compile_time, harness, per_block, report, steady_state

HOOK_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hook_overhead.py")


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def hook_overhead(quick: bool) -> str:
    head = ["### Frame hook overhead (`bench/hook_overhead.py`)", "",
            "ns per call of `def f(x): return x` from a Python loop, best of the repeats; the columns "
            "are explained in the hand-written hook-overhead section at the end of this file.", ""]
    command = [sys.executable, HOOK_SCRIPT, "--repeat", "3" if quick else "7"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(HOOK_SCRIPT))))
    except subprocess.TimeoutExpired:
        return "\n".join(head + ["Failed: timed out after 300 s"])
    if done.returncode:
        return "\n".join(head + [f"Failed (exit {done.returncode}): {done.stderr.strip()[-300:]}"])
    lines = done.stdout.strip().splitlines()
    return "\n".join(head + [lines[0].lstrip("# "), ""] + lines[1:])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer runs and rounds, no 16/32-layer LMs, no gpt8 cache-hit or inductor run")
    args = parser.parse_args()
    start = time.perf_counter()
    info = report.machine()
    load_before = os.getloadavg()
    if harness.FRAMEGRAPH_IMPORT_ERROR:
        log(f"import framegraph failed, its columns will say so: {harness.FRAMEGRAPH_IMPORT_ERROR}")

    log("hook overhead")
    hook = hook_overhead(args.quick)

    names, depths, every = compile_time.names_and_depths(args.quick)
    runs = 3 if args.quick else 7
    log(f"compile time: {len(every)} workloads x 2 frontends x {runs} runs, one process each")
    compiled = compile_time.run(every, runs, log)

    rounds = 5 if args.quick else 9
    zoo = [n for n in names if n.startswith("zoo_")]
    hits = cache_hit.run(["three_op", "mlp", "breaks3"] + zoo[:2] if args.quick
                         else ["three_op", "mlp", "gpt8", "breaks3"] + zoo, rounds, log)

    log("per-block compile")
    blocks = per_block.run(runs, log)

    inductor_names = ["mlp", "cnn", "flex_attention"] if args.quick else ["mlp", "cnn", "gpt8", "flex_attention"]
    log("steady state (inductor)")
    steady = steady_state.run(inductor_names, rounds, log)

    elapsed = time.perf_counter() - start
    load_after = os.getloadavg()
    section = "\n\n".join([
        report.header(info, elapsed)
        + f" Load average (1 min) {load_before[0]:.2f} at start, {load_after[0]:.2f} at the end: "
          "the machine is shared, so treat differences under ~10% as noise. torch uses 1 "
          "intra-op thread throughout. Times are wall-clock `time.perf_counter`.",
        compile_time.render(compiled, names, depths),
        cache_hit.render(hits, rounds),
        per_block.render(blocks),
        steady_state.render(steady, rounds),
        hook,
    ])
    report.prepend(section)
    log(f"done in {elapsed / 60:.1f} min; wrote {report.RESULTS} and {compile_time.PLOT}")


if __name__ == "__main__":
    main()
