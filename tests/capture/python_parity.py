"""The parity check of the Python-breadth modules (test_parity_*.py): each case runs eagerly,
under framegraph and under torch.compile with counting backends (`datadep_cases.compare`, which
compares results, raised exception types and mutated arguments), twice on fresh arguments.

A case passes when framegraph has no more breaks and no fewer captured ops than torch.compile
(ops whose result nothing uses are not counted: see `datadep_cases._op_count`). Where it
breaks less, or captures where torch.compile runs the frame eagerly, the case passes and says
so: it is recorded in `AHEAD` and printed (`pytest -rP` shows it).
"""

from __future__ import annotations

import torch

from .datadep_cases import at_least_torch, compare, torch_wrong

# name -> (framegraph counts, torch.compile counts) for cases where framegraph breaks less.
AHEAD: dict[str, tuple] = {}


def t(*shape, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed + sum(shape) + len(shape))
    return torch.randn(*shape, generator=generator)


def check(fn, make_args) -> None:
    wrong_before = len(torch_wrong)
    counts = compare(fn, make_args(), make_args(), scalars=False, shapes=False, grad_switches=False)
    if len(torch_wrong) > wrong_before:
        # torch.compile's result differs from eager's (framegraph's was checked): its counts
        # are no reference.
        print(f"torch.compile deviates from eager on {fn.__qualname__}; framegraph matches: {counts}")
        return
    assert at_least_torch(counts), counts
    ours, theirs = counts["framegraph"], counts["torch"]
    if ours.breaks < theirs.breaks or (theirs.graphs == 0 and ours.graphs > 0):
        AHEAD[fn.__qualname__] = (ours, theirs)
        print(f"framegraph breaks less than torch.compile on {fn.__qualname__}: {ours} vs {theirs}")

