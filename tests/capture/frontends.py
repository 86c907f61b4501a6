"""Running one function eagerly, under framegraph and under torch.compile, and comparing.

Tests of library idioms use `run`: results and the state left in the arguments must equal
eager's, and the graph, op and break counts of both frontends are returned for the test to
compare. Only tests may import torch._dynamo.
"""

import dataclasses

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, clone


@dataclasses.dataclass(frozen=True)
class Counts:
    graphs: int
    ops: int
    breaks: int


def compile_with(frontend: str, fn, backend):
    if frontend == "framegraph":
        framegraph.reset()
        counters.clear()
        return framegraph.compile(fn, backend=backend)
    import torch._dynamo

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return torch.compile(fn, backend=backend)


def break_count(frontend: str) -> int:
    if frontend == "framegraph":
        return sum(counters["graph_break"].values())
    import torch._dynamo

    return sum(torch._dynamo.utils.counters["graph_break"].values())


def run(fn, *calls, expected_from="eager", torch_matches_eager=True, before_each=None):
    """Compiles `fn` once per frontend and calls it with each argument tuple of `calls` in
    turn, on fresh copies. Every framegraph result and the state it leaves in the arguments
    equal eager's on the same arguments (torch.compile's with expected_from="torch": code that
    asks whether it is being compiled); torch.compile's are checked against eager too unless
    `torch_matches_eager` is False. `before_each()` resets outside state before each run.
    Returns {frontend: Counts} after all calls."""
    reference = {"eager": [], "torch": []}
    if before_each:
        before_each()
    for args in calls:
        copied = clone(args)
        reference["eager"].append((fn(*copied), copied))
    counts = {}
    for frontend in ("torch", "framegraph"):
        if before_each:
            before_each()
        backend = CountingBackend()
        compiled = compile_with(frontend, fn, backend)
        for i, args in enumerate(calls):
            copied = clone(args)
            result = compiled(*copied)
            if frontend == "torch":
                reference["torch"].append((result, copied))
                if not torch_matches_eager or expected_from == "torch":
                    continue
                expected, expected_args = reference["eager"][i]
            else:
                expected, expected_args = reference[expected_from][i]
            assert_same(expected, result, f"{frontend} call {i}")
            _assert_same_state(expected_args, copied, f"{frontend} call {i}: arguments")
        counts[frontend] = Counts(backend.graph_count, backend.op_count, break_count(frontend))
    assert not counters["fallback"], dict(counters["fallback"])
    return counts


def _assert_same_state(expected_args, actual_args, path: str) -> None:
    for i, (expected, actual) in enumerate(zip(expected_args, actual_args)):
        if isinstance(expected, nn.Module):
            assert_same(expected.state_dict(), actual.state_dict(), f"{path}[{i}] state")
        else:
            assert_same(expected, actual, f"{path}[{i}]")


def library(name: str):
    """A module of a real library; tests.models.zoo first makes torchvision importable beside
    this torch (transformers imports it too)."""
    pytest.importorskip("tests.models.zoo")
    return pytest.importorskip(name)


def t(*shape):
    torch.manual_seed(sum(shape) + len(shape))
    return torch.randn(*shape)
