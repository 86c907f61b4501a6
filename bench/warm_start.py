"""Warm starts: the first call of a compiled model in a fresh process, with caches on disk.

    python -m bench.warm_start [--backend eager|inductor] [--repeat N] [workload ...]

For each workload, four fresh processes in turn, all sharing one temporary inductor cache:
framegraph with an empty FRAMEGRAPH_CACHE_DIR (cold), framegraph again (warm: it installs the
saved translations), torch.compile (its first process; with inductor, the inductor caches are
already filled by framegraph's runs, which compiled the same graphs), and torch.compile again
(warm: the state a restarted torch.compile job is in). Each child builds the model, then times
its first compiled call to the result (all of a workload's first calls: `dynamic` makes three,
with sizes that change, so its second compile has symbolic sizes), and reports framegraph's
frontend seconds (`counters["compile_seconds"]["total"]`: translation or, warm, loading). Both
frontends' results are checked against eager. With --repeat N the four processes run N times,
each time with empty caches, and every column is the median of the N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT = ["gpt8", "zoo_tv_resnet18", "zoo_tv_mobilenet_v3_small", "zoo_tv_vit_b_16", "zoo_tv_swin_t",
           "zoo_timm_resnet18", "zoo_timm_vit_tiny", "zoo_hf_gpt2", "zoo_hf_llama", "zoo_hf_gpt_neox", "zoo_hf_bert",
           "zoo_hf_roberta", "zoo_hf_t5", "zoo_hf_vit", "zoo_hf_convnext"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(name: str, frontend: str, backend: str) -> dict:
    import torch

    from .harness import check_equal, compile_with
    from .workloads import get

    with torch.no_grad():
        case = get(name)
        compiled = compile_with(frontend, case.fn, backend)
        start = time.perf_counter()
        results = [compiled(*args) for args in case.calls()]
        seconds = time.perf_counter() - start
        mismatch = next(filter(None, (check_equal(result, case.fn(*args), rtol=1e-4, atol=1e-4)
                                      for result, args in zip(results, case.calls()))), None)
    row = {"first_call": seconds, "mismatch": mismatch}
    if frontend == "framegraph":
        from framegraph.counters import counters

        row["frontend"] = counters["compile_seconds"]["total"]
        row["persistent"] = dict(counters["persistent"])
    return row


def measure(name: str, backend: str) -> dict:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as inductor:
        env = {**os.environ, "FRAMEGRAPH_CACHE_DIR": cache, "TORCHINDUCTOR_CACHE_DIR": inductor}
        runs = {}
        for label, frontend in (("fg_cold", "framegraph"), ("fg_warm", "framegraph"),
                                ("torch_cold", "torch"), ("torch_warm", "torch")):
            out = subprocess.run([sys.executable, "-m", "bench.warm_start", "--child", name, frontend, backend],
                                 cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
            if out.returncode != 0:
                return {"error": f"{label}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"}
            runs[label] = json.loads(out.stdout.strip().splitlines()[-1])
        return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="eager")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("workloads", nargs="*")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    print(f"backend {args.backend}; seconds; frontend = framegraph's translation (cold) or loading (warm)\n")
    print("| workload | fg cold: first call (frontend) | fg warm: first call (frontend) | warm/cold frontend "
          "| torch.compile 1st process | torch.compile warm | fg warm / torch warm | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.workloads or DEFAULT:
        rounds = [measure(name, args.backend) for _ in range(args.repeat)]
        failed = [runs["error"] for runs in rounds if "error" in runs]
        if failed:
            print(f"| `{name}` | | | | | | | {failed[0]} |")
            continue
        notes = sorted({f"{k}: {v['mismatch']}" for runs in rounds for k, v in runs.items() if v["mismatch"]})
        notes += sorted({f"no saved translation was used: {runs['fg_warm']['persistent']}" for runs in rounds
                         if runs["fg_warm"]["persistent"].get("hits", 0) == 0})
        cold, warm, tc, tw = ({key: statistics.median(runs[label][key] for runs in rounds)
                               for key in ("first_call", "frontend") if key in rounds[0][label]}
                              for label in ("fg_cold", "fg_warm", "torch_cold", "torch_warm"))
        print(f"| `{name}` | {cold['first_call']:.3f} ({cold['frontend']:.3f}) | {warm['first_call']:.3f} "
              f"({warm['frontend']:.3f}) | {warm['frontend'] / cold['frontend']:.3f} | {tc['first_call']:.3f} "
              f"| {tw['first_call']:.3f} | {warm['first_call'] / tw['first_call']:.2f}x | {'; '.join(notes)} |", flush=True)


if __name__ == "__main__":
    main()
