"""Every zoo model, compiled as a user compiles it (`framegraph.compile(model)`), under no_grad:
the output equals eager's exactly (eager backend), a second call hits the cache, nothing falls
back, and the graph and break counts are the ones recorded in COUNTS. In the same test the
model runs under torch.compile with a counting backend, and its counts are compared.

COUNTS records where framegraph stands, so a change in either direction shows: a model that
captures more must have its row lowered in the same commit. Rows with more than 1 graph / 0
breaks are where framegraph is still behind torch.compile (1/0 on every model here); they are
the open part of the real-models issue and are marked in the test's id.

`python -m tests.models.census` prints the same table with the commonest break reasons.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import framegraph
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.models.census import _max_diff
from tests.models.zoo import ZOO, available, build

# name -> (framegraph graphs, framegraph breaks); torch.compile makes 1/0 on each.
COUNTS: dict[str, tuple[int, int]] = {}
# Known faults, each failing the test as written (strict: the test says so when one is
# fixed): name -> (the exception the test meets, why). Raising where eager does not is a wrong
# result, the top of the real-models issue.
KNOWN_FAULTS: dict[str, tuple[type, str]] = {}
WHOLE = (1, 0)


def _breaks() -> int:
    return sum(counters["graph_break"].values())


def _torch_counts(model, args, kwargs) -> tuple[int, int]:
    import torch._dynamo
    from torch._dynamo.utils import counters as torch_counters

    torch._dynamo.reset()
    torch_counters.clear()
    backend = CountingBackend()
    torch.compile(model, backend=backend)(*args, **kwargs)
    breaks = sum(torch_counters["graph_break"].values())
    torch._dynamo.reset()
    return backend.graph_count, breaks


def _ids() -> list:
    """Every model; decoders also with use_cache=False (`<name> nocache`)."""
    params = []
    for name, entry in ZOO.items():
        for variant in [name] + ([f"{name} nocache"] if entry.family == "decoder" else []):
            fault = KNOWN_FAULTS.get(variant)
            marks = [pytest.mark.xfail(strict=True, raises=fault[0], reason=fault[1])] if fault else []
            behind = "" if COUNTS.get(variant, WHOLE) == WHOLE else "-behind"
            params.append(pytest.param(variant, id=variant.replace(" ", "-") + behind, marks=marks))
    return params


@pytest.mark.parametrize("variant", _ids())
def test_zoo_model_equals_eager_with_the_recorded_counts(variant):
    name = variant.split()[0]
    if not available(name):
        pytest.skip(f"{ZOO[name].library} is not installed (the `models` extra)")
    warnings.simplefilter("ignore")
    model, args, kwargs = build(name)
    if variant.endswith(" nocache"):
        kwargs = dict(kwargs, use_cache=False)
    with torch.no_grad():
        expected = model(*args, **kwargs)
        framegraph.reset()
        counters.clear()
        backend = CountingBackend()
        compiled = framegraph.compile(model, backend=backend)
        actual = compiled(*args, **kwargs)
        graphs, breaks = backend.graph_count, _breaks()
        again = compiled(*args, **kwargs)
        theirs = _torch_counts(model, args, kwargs)
    assert _max_diff(expected, actual) == 0.0
    assert _max_diff(expected, again) == 0.0
    assert backend.graph_count == graphs, "the second call recompiled"
    assert not counters["fallback"], dict(counters["fallback"])
    assert (graphs, breaks) == COUNTS.get(variant, WHOLE)
    assert theirs == WHOLE
    framegraph.reset()
