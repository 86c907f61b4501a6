"""Where framegraph stands on the zoo: graphs, breaks and correctness against torch.compile.

    python -m tests.models.census [names...] [--no-torch] [--reasons N]

Each model runs in a subprocess of its own (a crash is reported, not fatal): eagerly, under
framegraph with a counting eager backend, and under torch.compile with a counting backend.
Prints one row per model and the commonest break reasons. This is a survey tool; tests/models/test_zoo.py
asserts what it shows (and runs torch.compile in the same test).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time


def _max_diff(a, b) -> float:
    import torch

    if isinstance(a, torch.Tensor):
        return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0
    if isinstance(a, dict) or hasattr(a, "to_tuple"):
        a, b = tuple(a.values()), tuple(b.values())
    if isinstance(a, (tuple, list)):
        return max([_max_diff(x, y) for x, y in zip(a, b)] + [0.0])
    if type(a) is type(b) and hasattr(a, "__dict__") and type(a).__module__ != "builtins":
        # an object such as a key/value cache: what it holds, not its identity
        return _max_diff(tuple(vars(a).values()), tuple(vars(b).values())) if list(vars(a)) == list(vars(b)) \
            else float("inf")
    return 0.0 if a == b else float("inf")


def measure(name: str, with_torch: bool) -> dict:
    import warnings

    import torch

    import framegraph
    from framegraph.counters import counters
    from tests.capture.helpers import CountingBackend
    from tests.models.zoo import build

    warnings.simplefilter("ignore")
    row: dict = {"name": name}
    model, args, kwargs = build(name)
    with torch.no_grad():
        expected = model(*args, **kwargs)
        framegraph.reset()
        counters.clear()
        counting = CountingBackend()
        compiled = framegraph.compile(model, backend=counting)
        start = time.perf_counter()
        try:
            actual = compiled(*args, **kwargs)
            row["fg_ms"] = round((time.perf_counter() - start) * 1e3)
            row["fg_diff"] = _max_diff(expected, actual)
        except Exception as error:
            row["fg_error"] = f"{type(error).__name__}: {str(error)[:200]}"
        row["fg_graphs"] = counting.graph_count
        row["fg_ops"] = counting.op_count
        row["fg_breaks"] = sum(counters["graph_break"].values())
        row["fg_fallbacks"] = dict(counters["fallback"])
        row["fg_reasons"] = dict(counters["graph_break"])
        if with_torch:
            import torch._dynamo
            from torch._dynamo.utils import counters as tcounters

            torch._dynamo.reset()
            tcounters.clear()
            tcounting = CountingBackend()
            start = time.perf_counter()
            try:
                torch.compile(model, backend=tcounting)(*args, **kwargs)
                row["tc_ms"] = round((time.perf_counter() - start) * 1e3)
            except Exception as error:
                row["tc_error"] = f"{type(error).__name__}: {str(error)[:200]}"
            row["tc_graphs"] = tcounting.graph_count
            row["tc_ops"] = tcounting.op_count
            row["tc_breaks"] = sum(tcounters["graph_break"].values())
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--no-torch", action="store_true", help="skip torch.compile")
    parser.add_argument("--reasons", type=int, default=25, help="how many break reasons to list")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.one:
        print(json.dumps(measure(options.one, not options.no_torch)))
        return
    from tests.models.zoo import ZOO, available

    names = options.names or [n for n in ZOO if available(n)]
    reasons: collections.Counter = collections.Counter()
    print(f"{'model':24s} {'fg graphs/breaks':>16s} {'torch':>10s} {'max diff':>10s} {'fg ms':>7s} {'torch ms':>8s}  notes")
    for name in names:
        command = [sys.executable, "-m", "tests.models.census", "--one", name] + (["--no-torch"] if options.no_torch else [])
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            tail = (done.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name:24s} CRASH rc={done.returncode}: {tail[:150]}")
            continue
        row = json.loads(lines[-1])
        for reason, count in row.get("fg_reasons", {}).items():
            reasons[reason[:160]] += count
        notes = row.get("fg_error") or (f"fallbacks {row['fg_fallbacks']}" if row.get("fg_fallbacks") else "")
        torch_counts = f"{row.get('tc_graphs', '-')}/{row.get('tc_breaks', '-')}"
        diff = row.get("fg_diff")
        print(f"{name:24s} {row['fg_graphs']:>9d}/{row['fg_breaks']:<6d} {torch_counts:>10s} "
              f"{'-' if diff is None else f'{diff:.2e}':>10s} {row.get('fg_ms', '-'):>7} {row.get('tc_ms', '-'):>8}  {notes}")
    print("\ncommonest break reasons:")
    for reason, count in reasons.most_common(options.reasons):
        print(f"{count:5d}  {reason}")


if __name__ == "__main__":
    main()
