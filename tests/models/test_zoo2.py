"""The second zoo (zoo2.py), each model compiled as a user compiles it beside torch.compile in
the same test: the output equals eager's (eager backend), a second call hits the cache with
nothing falling back, and framegraph's graph and break counts are at most torch.compile's.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import framegraph
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.models.census import _max_diff
from tests.models.zoo2 import ZOO2, available, build

# name -> why framegraph is behind torch.compile there (none yet).
BEHIND: dict[str, str] = {}


def _torch_counts(model, args) -> tuple[int, int]:
    import torch._dynamo
    from torch._dynamo.utils import counters as torch_counters

    torch._dynamo.reset()
    torch_counters.clear()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    compiled(*args)
    compiled(*args)
    breaks = sum(torch_counters["graph_break"].values())
    torch._dynamo.reset()
    return backend.graph_count, breaks


@pytest.mark.parametrize("name", list(ZOO2))
def test_second_zoo_model_at_torch_compile_counts(name):
    if not available(name):
        pytest.skip(f"{ZOO2[name].library} is not installed (the `models` extra)")
    warnings.simplefilter("ignore")
    model, args = build(name)
    with torch.no_grad():
        expected = model(*args)
        framegraph.reset()
        counters.clear()
        backend = CountingBackend()
        compiled = framegraph.compile(model, backend=backend)
        actual = compiled(*args)
        again = compiled(*args)
        ours = (backend.graph_count, sum(counters["graph_break"].values()))
        theirs = _torch_counts(model, args)
    assert _max_diff(expected, actual) == 0.0
    assert _max_diff(expected, again) == 0.0
    assert not counters["fallback"], dict(counters["fallback"])
    assert ours[0] >= 1, f"{name}: no graph ({dict(counters['graph_break'])})"
    if name in BEHIND:
        pytest.xfail(BEHIND[name])
    assert ours[0] <= theirs[0] and ours[1] <= theirs[1], \
        f"{name}: framegraph {ours} (graphs, breaks), torch.compile {theirs}: {dict(counters['graph_break'])}"
