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



def check_operator_counts(fn, make_args) -> None:
    """The check for operators whose calls framegraph and torch.compile record differently
    (a torch.func transform is one node here and functorch's inlined levels there; a nested
    compile region's first call is inlined there): equal results, and no more graphs or breaks
    than torch.compile, with a graph where it makes one. Ops are not compared."""
    wrong_before = len(torch_wrong)
    counts = compare(fn, make_args(), make_args(), scalars=False, shapes=False, grad_switches=False)
    if len(torch_wrong) > wrong_before:
        return  # torch.compile's result differs from eager's (framegraph's was checked)
    ours, theirs = counts["framegraph"], counts["torch"]
    assert ours.breaks <= theirs.breaks, counts
    assert ours.graphs <= theirs.graphs or theirs.graphs == 0, counts
    if theirs.graphs and not theirs.breaks:
        assert ours.graphs >= 1 and ours.ops >= 1, counts
