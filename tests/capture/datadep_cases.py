"""Running one function eagerly, under framegraph and under torch.compile with the same data-
dependence settings (capture_scalar_outputs, capture_dynamic_output_shape_ops), and comparing.

`compare` checks every result (or raised exception type) of both frontends against eager on
fresh copies of each call's arguments, and returns the graph, op and break counts of each.
Only tests import torch._dynamo.
"""

from __future__ import annotations

import contextlib
import operator

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


def _op_count(backend: CountingBackend, distinct: bool = False, grad_switches: bool = True) -> int:
    """Captured ops, without the nodes both frontends add to pass values through their graphs
    in another form: `.item()` of a placeholder that stands for a float input and
    `torch.scalar_tensor` of a float output (dynamic floats travel as 0-d float64 tensors),
    and the no-op conversions between an ndarray and its tensor
    (`torch.as_tensor` of a graph input, `t.view_as(t)` for `t.numpy()`; in framegraph an
    ndarray and its tensor are one node), nor dead code: a node whose value no other node
    and no output uses and that changes nothing (torch.compile keeps the computations of
    values the program made and dropped, framegraph leaves them out). With `distinct`, a graph
    compiled again with the same ops counts once. With `grad_switches=False`, the grad-mode
    switches are not counted either: torch.compile repeats them in every graph of a `no_grad`
    block split by a break."""
    count = 0
    graphs = backend.graphs
    if distinct:  # a recompile to the same ops (sizes aside) captures nothing new
        graphs = list({tuple((n.op, str(n.target)) for n in gm.graph.nodes if n.op.startswith("call")): gm
                       for gm in graphs}.values())
    for gm in graphs:
        dead: set = set()
        for node in reversed(gm.graph.nodes):
            if _dead(node, dead):
                dead.add(node)
        for node in gm.graph.nodes:
            if node.op not in ("call_function", "call_method", "call_module") or node in dead:
                continue
            if not grad_switches and node.target is torch._C._set_grad_enabled:
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


_INPLACE = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
                      operator.ilshift, operator.irshift, operator.setitem})
_INPLACE_NAMES = frozenset(fn.__name__ for fn in _INPLACE)


def _dead(node, dead: set) -> bool:
    if node.op not in ("call_function", "call_method") or any(user not in dead for user in node.users):
        return False
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if name.endswith("_") and not name.endswith("__") or "out" in node.kwargs or node.target in _INPLACE \
            or name.startswith("__i") or name.rsplit("_", 1)[-1] in _INPLACE_NAMES:
        return False  # an in-place op (framegraph's numpy_iadd too)
    return not node.is_impure()


def _call(fn, args):
    try:
        return fn(*args), None
    except Exception as error:  # the program's own exception is part of what must match
        return None, error


def compare(fn, *calls, scalars: bool = True, shapes: bool = True, same=assert_same,
            distinct: bool = False, grad_switches: bool = True) -> dict[str, Counts]:
    # Every call starts in the grad mode of the first: a program may leave it changed (eagerly
    # too), and torch.compile 2.13 can leave it changed where eager does not.
    grad = torch.is_grad_enabled()
    expected = []
    for args in calls:
        copied = clone(args)
        torch.set_grad_enabled(grad)
        expected.append((*_call(fn, copied), copied))
    counts = {}
    with settings(scalars, shapes):
        for frontend in ("torch", "framegraph"):
            backend = CountingBackend()
            compiled = compile_with(frontend, fn, backend)
            for i, args in enumerate(calls):
                copied = clone(args)
                torch.set_grad_enabled(grad)
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
            counts[frontend] = Counts(backend.graph_count, _op_count(backend, distinct, grad_switches),
                                      _break_count(frontend))
            if frontend == "framegraph":
                assert not counters["fallback"], dict(counters["fallback"])
    import torch._dynamo as dynamo

    dynamo.reset()
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


class BeatsTorch(UserWarning):
    """framegraph broke less often or captured more ops than torch.compile on a parity case."""


def parity_params(cases: list, short_of_torch: dict[str, str]):
    """Parametrizes a test over `(fn, make_args)` cases, ids by function name; those named in
    `short_of_torch` are strict xfails with the reason framegraph cannot reach parity."""
    import pytest

    params = []
    for fn, make_args in cases:
        marks = ()
        if name_of(fn) in short_of_torch:
            marks = pytest.mark.xfail(strict=True, reason=short_of_torch[name_of(fn)])
        params.append(pytest.param(fn, make_args, id=name_of(fn), marks=marks))
    unknown = set(short_of_torch) - {name_of(fn) for fn, _ in cases}
    assert not unknown, f"short-list names without a case: {unknown}"
    return pytest.mark.parametrize("fn, make_args", params)


def assert_parity(fn, make_args, calls: int = 2) -> dict[str, Counts]:
    """Equal results on `calls` fresh argument sets (object graphs compared), and no more
    breaks nor fewer captured ops than torch.compile; beating it is reported as a warning."""
    import warnings

    from .objects import same

    counts = compare(fn, *[make_args() for _ in range(calls)], scalars=False, shapes=False, same=same,
                     distinct=True)
    assert at_least_torch(counts), counts
    ours, theirs = counts["framegraph"], counts["torch"]
    if theirs.graphs and (ours.breaks < theirs.breaks or ours.ops > theirs.ops):
        warnings.warn(BeatsTorch(f"{name_of(fn)}: framegraph {ours}, torch.compile {theirs}"), stacklevel=2)
    return counts
