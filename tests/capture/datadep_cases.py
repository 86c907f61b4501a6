"""Running one function eagerly, under framegraph and under torch.compile with the same data-
dependence settings (capture_scalar_outputs, capture_dynamic_output_shape_ops), and comparing.

`compare` checks every result (or raised exception type) of both frontends against eager on
fresh copies of each call's arguments, and returns the graph, op and break counts of each.
Only tests import torch._dynamo.
"""

from __future__ import annotations

import contextlib

import torch

import framegraph
from framegraph.counters import counters

from .frontends import Counts, compile_with
from .helpers import CountingBackend, assert_same, clone


@contextlib.contextmanager
def settings(scalars: bool, shapes: bool):
    """Both frontends' settings for the block, restored afterwards."""
    import torch._dynamo

    with framegraph.config.patch(capture_scalar_outputs=scalars, capture_dynamic_output_shape_ops=shapes), \
            torch._dynamo.config.patch(capture_scalar_outputs=scalars, capture_dynamic_output_shape_ops=shapes):
        yield


def _break_count(frontend: str) -> int:
    if frontend == "framegraph":
        return sum(counters["graph_break"].values())
    import torch._dynamo

    dynamo = torch._dynamo.utils.counters  # a data-dependent jump counts as "unimplemented"
    return sum(dynamo["graph_break"].values()) + sum(dynamo["unimplemented"].values())


def _op_count(backend: CountingBackend) -> int:
    """Captured ops, without the nodes both frontends add to pass values through their graphs
    in another form: `.item()` of a placeholder that stands for a float input and
    `torch.scalar_tensor` of a float output (dynamic floats travel as 0-d float64 tensors),
    and the no-op conversions between an ndarray and its tensor
    (`torch.as_tensor` of a graph input, `t.view_as(t)` for `t.numpy()`; in framegraph an
    ndarray and its tensor are one node)."""
    count = 0
    for gm in backend.graphs:
        for node in gm.graph.nodes:
            if node.op not in ("call_function", "call_method", "call_module"):
                continue
            if node.op == "call_method" and node.target == "item" and node.args[0].op == "placeholder" \
                    and node.args[0].meta.get("example_value") is not None \
                    and node.args[0].meta["example_value"].dtype == torch.float64 \
                    and node.args[0].meta["example_value"].dim() == 0:
                continue
            if node.target is torch.scalar_tensor and all(user.op == "output" for user in node.users):
                continue
            if node.target is torch.as_tensor and node.args[0].op == "placeholder" and len(node.args) == 1:
                continue
            if node.target == "view_as" and len(node.args) == 2 and node.args[0] is node.args[1]:
                continue
            count += 1
    return count


def _call(fn, args):
    try:
        return fn(*args), None
    except Exception as error:  # the program's own exception is part of what must match
        return None, error


def compare(fn, *calls, scalars: bool = True, shapes: bool = True, same=assert_same) -> dict[str, Counts]:
    expected = []
    for args in calls:
        copied = clone(args)
        expected.append((*_call(fn, copied), copied))
    counts = {}
    with settings(scalars, shapes):
        for frontend in ("torch", "framegraph"):
            backend = CountingBackend()
            compiled = compile_with(frontend, fn, backend)
            for i, args in enumerate(calls):
                copied = clone(args)
                result, error = _call(compiled, copied)
                want, want_error, want_args = expected[i]
                where = f"{frontend} call {i}"
                try:
                    if want_error is not None or error is not None:
                        assert type(error) is type(want_error), f"{where}: raised {error!r}, eager raised {want_error!r}"
                    else:
                        same(want, result, where)
                    same(want_args, copied, f"{where}: arguments")
                except AssertionError:
                    if frontend == "framegraph":
                        raise
                    torch_wrong.append(name_of(fn))  # torch.compile's own deviation from eager
            counts[frontend] = Counts(backend.graph_count, _op_count(backend), _break_count(frontend))
            if frontend == "framegraph":
                assert not counters["fallback"], dict(counters["fallback"])
    import torch._dynamo

    torch._dynamo.reset()
    return counts


torch_wrong: list[str] = []  # cases where torch.compile's result differs from eager's


def name_of(fn) -> str:
    return getattr(fn, "__name__", repr(fn))


def at_least_torch(counts: dict[str, Counts]) -> bool:
    """No more breaks and no fewer captured ops than torch.compile. Where torch.compile
    captured nothing (it ran the whole frame eagerly, which it does not always count as a
    break), any capture is at least as good."""
    ours, theirs = counts["framegraph"], counts["torch"]
    if theirs.graphs == 0:
        return True
    return ours.breaks <= theirs.breaks and ours.ops >= theirs.ops


def ints(*values) -> torch.Tensor:
    return torch.tensor(values)


def floats(*shape, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator)
