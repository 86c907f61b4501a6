"""`python -m tests.matrix.census [--match TEXT] [--jobs N]`: runs every cell of the matrix and
prints what each frontend did, grouped: framegraph's mismatches with eager (with the error),
the cells torch.compile traces and framegraph breaks on (with framegraph's reasons), and the
totals. The test module asserts the same facts; this is for finding and fixing them."""

from __future__ import annotations

import argparse
import collections
import sys
import time

from .cells import ALL_CELLS, framegraph_traces, run, torch_traces


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--match", default="")
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("--verbose", action="store_true", help="name each cell before it runs")
    args = parser.parse_args()
    index, count = (int(p) for p in args.shard.split("/"))
    cells = [c for i, c in enumerate(ALL_CELLS) if args.match in c.id and i % count == index]
    mismatches, short, reasons = [], [], collections.Counter()
    traced_by_torch = 0
    begun = time.perf_counter()
    for cell in cells:
        if args.verbose:
            print("RUN", cell.id, flush=True)
        try:
            outcomes = run(cell)
        except Exception as error:
            mismatches.append((cell.id, f"{type(error).__name__}: {str(error)[:300]}"))
            continue
        if torch_traces(outcomes):
            traced_by_torch += 1
            if not framegraph_traces(outcomes):
                short.append((cell.id, outcomes["framegraph"].reasons))
                reasons.update(outcomes["framegraph"].reasons)
    elapsed = time.perf_counter() - begun
    for cell_id, error in mismatches:
        print("MISMATCH", cell_id, error)
    for cell_id, why in short:
        print("SHORT", cell_id, why)
    print(f"{len(cells)} cells in {elapsed:.0f} s: {len(mismatches)} mismatches; torch.compile traces "
          f"{traced_by_torch}, framegraph short on {len(short)}")
    for reason, n in reasons.most_common(40):
        print(f"{n:5d}  {reason}")


if __name__ == "__main__":
    sys.exit(main())
