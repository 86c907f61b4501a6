"""A bounded slice of the break-everywhere fuzz (`python -m tests.fuzz.break_everywhere` runs
all of it): for a fixed sample of capture-suite cases, a graph break forced before every
instruction of the test's own code that framegraph translates for them (the slice leaves
out torch's nn.Module internals, which the full sweep covers), one at a time, and a few
random pairs, must each leave results, exceptions, mutated inputs and globals as in eager,
with no fallback. It runs in this process: a crash fails the whole run, which is the point."""

import random

import pytest

from . import break_everywhere as fuzz

SAMPLE = fuzz.select(fuzz.collect_cases(), 48)
PAIRS = 4  # per case


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_a_break_anywhere_matches_eager(case):
    baselines: dict = {}
    discovery = fuzz.run_task(case, None, baselines)
    assert not (discovery.mismatch or discovery.fallbacks), discovery
    points = [fuzz.parse_point(text) for text, _ in discovery.candidates if text.startswith("tests/")]
    failures, split = [], []
    for point in points:
        result = fuzz.run_task(case, [point], baselines)
        if result.mismatch or result.fallbacks:
            failures.append(f"{fuzz.point_text(point)}: {result.mismatch or result.fallbacks}")
        if result.split:
            split.append(point)
    assert split, f"no forced break split {case.id}: the test did not test anything"
    rng = random.Random(case.id)
    for _ in range(PAIRS if len(split) > 1 else 0):
        pair = rng.sample(split, 2)
        result = fuzz.run_task(case, pair, baselines)
        if result.mismatch or result.fallbacks:
            failures.append(f"{[fuzz.point_text(p) for p in pair]}: {result.mismatch or result.fallbacks}")
    assert not failures, "\n".join(failures)
