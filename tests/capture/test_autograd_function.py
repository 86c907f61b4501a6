"""torch.autograd.Function.apply in a compiled function: forward values AND gradients equal
eager's, with the graph and break counts torch.compile makes.

Each case is `(fn, make_args)`. The test runs `fn(*make_args())` eagerly, under framegraph and
under torch.compile (counting backends), then calls backward() on a weighted sum of the
outputs that require grad and compares every gradient the arguments' leaf tensors (and
modules' parameters) received. The backward a Function defines is not always the derivative
of its forward (ScaledGrad, CustomGelu), so a graph that differentiated the forward's ops
would give other gradients. REFUSED cases are Functions the graph cannot hold: the apply runs
eagerly at a typed break, and the gradients are still eager's.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .autograd_function_cases import (CASES, DYNAMIC, REFUSED, GeluModule, custom_gelu, double, leaf, scaled_grad,
                                      sin_saved)
from .frontends import Counts, break_count, compile_with
from .helpers import CountingBackend, assert_same


# ---- the comparison --------------------------------------------------------------------------

def _tensors(value, found: list) -> list:
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, found)
    elif isinstance(value, nn.Module):
        found.extend(value.parameters())
    return found


def _target(fn):
    """The function, or for a module case (a module class) a new module."""
    return fn() if isinstance(fn, type) else fn


def _run(call, make_args):
    """The result of `call(*args)`, then the gradients backward() gives the arguments' leaves
    (and a module's parameters)."""
    args = make_args()
    result = call(*args)
    outputs = [t for t in _tensors(result, []) if t.requires_grad]
    if outputs:
        sum((out.double() * (i + 1)).sum() for i, out in enumerate(outputs)).backward()
    owner = call if isinstance(call, nn.Module) else ()
    leaves = [t for t in _tensors([args, owner], []) if t.is_leaf and t.requires_grad]
    return result, [t.grad for t in leaves], args


def _same_grads(expected, actual, where: str, exact: bool) -> None:
    assert len(expected) == len(actual)
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert (e is None) == (a is None), f"{where}: grad {i} is {a}, eager's is {e}"
        if e is None:
            continue
        if exact:
            assert torch.equal(e, a), f"{where}: grad {i} differs by {(e - a).abs().max()}"
        else:
            torch.testing.assert_close(a, e, msg=lambda m: f"{where}: grad {i}: {m}")


def compare(fn, make_args, backend="eager") -> dict[str, Counts]:
    """Results and gradients of framegraph (and of torch.compile, as a reference run) against
    eager; the counts of both frontends."""
    expected, expected_grads, expected_args = _run(_target(fn), make_args)
    counts = {}
    for frontend in ("torch", "framegraph"):
        counting = CountingBackend()
        compiled = compile_with(frontend, _target(fn), counting if backend == "eager" else backend)
        result, grads, args = _run(compiled, make_args)
        if frontend == "framegraph":
            assert_same(expected, result, "result")
            assert_same(expected_args, args, "arguments")
            _same_grads(expected_grads, grads, "framegraph", exact=backend == "eager")
            assert not counters["fallback"], dict(counters["fallback"])
        counts[frontend] = Counts(counting.graph_count, counting.op_count, break_count(frontend))
    import torch._dynamo

    torch._dynamo.reset()
    return counts


def _id(case) -> str:
    return case[0].__name__


# Cases where torch.compile's graphs differ from ours because its result differs from eager's.
TORCH_DIFFERS = {
    # it returns the input itself (requires_grad True, no op); eager returns a detached alias
    "identity_under_no_grad": (1, 0),
    # it does not fill in the default of a forward with setup_context (`x, scale = inputs`
    # raises in its trace), runs the function eagerly and compiles the two forwards as frames
    "new_style": (1, 0),
}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_function_gives_eager_values_and_gradients(case):
    fn, make_args = case[:2]
    counts = compare(fn, make_args)
    ours, theirs = counts["framegraph"], counts["torch"]
    expected = TORCH_DIFFERS.get(fn.__name__, (theirs.graphs, theirs.breaks))
    assert (ours.graphs, ours.breaks) == expected == (1, 0), counts


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_function_under_aot_eager(case):
    """AOTAutograd takes the traced forward and backward apart and traces them itself."""
    fn, make_args = case[:2]
    framegraph.reset()
    counters.clear()
    expected, expected_grads, _ = _run(_target(fn), make_args)
    result, grads, _ = _run(framegraph.compile(_target(fn), backend="aot_eager"), make_args)
    assert_same(expected, result)
    _same_grads(expected_grads, grads, "aot_eager", exact=False)
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    assert not counters["fallback"], dict(counters["fallback"])


@pytest.mark.parametrize("case", REFUSED, ids=_id)
def test_function_the_graph_cannot_hold_runs_eagerly_at_a_break(case):
    fn, make_args, reason = case
    framegraph.reset()
    counters.clear()
    expected, expected_grads, expected_args = _run(fn, make_args)
    result, grads, args = _run(framegraph.compile(fn, backend=CountingBackend()), make_args)
    assert_same(expected, result)
    assert_same(expected_args, args, "arguments")
    _same_grads(expected_grads, grads, "framegraph", exact=True)
    reasons = list(counters["graph_break"])
    assert any(reason in r for r in reasons), reasons
    assert not counters["fallback"], dict(counters["fallback"])


def test_backward_runs_the_functions_own_gradient_not_the_forwards_derivative():
    """ScaledGrad's forward (round) has derivative 0; its backward says 3."""
    x = leaf(4)
    framegraph.reset()
    framegraph.compile(scaled_grad, backend="eager")(x).sum().backward()
    assert torch.equal(x.grad, torch.full((4,), 6.0))


def test_graph_calls_the_function_as_one_node_with_its_bodies():
    counting = CountingBackend()
    framegraph.reset()
    framegraph.compile(custom_gelu, backend=counting)(leaf(3))
    (gm,) = counting.graphs
    calls = [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.autograd_function_apply]
    assert len(calls) == 1
    fwd, bwd = (getattr(gm, n.target) for n in calls[0].args[:2])
    assert any(n.target == "tanh" or n.target is torch.tanh for n in fwd.graph.nodes)
    assert len([n for n in bwd.graph.nodes if n.op == "placeholder"]) == 2  # the gradient, and x


def test_apply_under_no_grad_is_inlined():
    counting = CountingBackend()
    framegraph.reset()
    with torch.no_grad():
        framegraph.compile(custom_gelu, backend=counting)(leaf(3))
    (gm,) = counting.graphs
    assert not any(n.target is torch.ops.higher_order.autograd_function_apply for n in gm.graph.nodes)


def test_saved_tensor_hooks_apply_to_what_the_function_saves():
    """Eagerly the Function's saved x goes through the pack and unpack hooks; the graph's
    function would skip them, so under hooks the apply runs eagerly (and a cached entry made
    without hooks is not reused under them)."""
    def run(call):
        x = leaf(4)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            call(x).sum().backward()
        return x.grad

    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(sin_saved, backend=CountingBackend())
    _, plain_grads, _ = _run(compiled, lambda: (leaf(4),))  # compiled without hooks first
    _same_grads(_run(sin_saved, lambda: (leaf(4),))[1], plain_grads, "no hooks", exact=True)
    expected = run(sin_saved)
    assert not torch.equal(expected, plain_grads[0])
    assert torch.equal(run(compiled), expected)
    assert any("saved-tensor hooks" in reason for reason in counters["graph_break"]), dict(counters["graph_break"])
    assert not counters["fallback"], dict(counters["fallback"])


def test_grad_mode_change_recompiles():
    """The same compiled function under no_grad and then with grad: each gets its entry."""
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(sin_saved, backend=CountingBackend())
    x = leaf(3, 4)
    with torch.no_grad():
        assert_same(sin_saved(x), compiled(x))
    expected, expected_grads, _ = _run(sin_saved, lambda: (leaf(3, 4),))
    result, grads, _ = _run(compiled, lambda: (leaf(3, 4),))
    assert_same(expected, result)
    _same_grads(expected_grads, grads, "second call", exact=True)


# torch.compile raises here once the size is symbolic: the forward graph it builds returns a
# node of another graph ("Argument 'getitem' of Node 'output_1' does not belong to this Graph").
TORCH_FAILS_DYNAMIC = {"size_argument"}


@pytest.mark.parametrize("case", DYNAMIC, ids=_id)
def test_sizes_that_change_make_the_bodies_dynamic(case):
    """Three calls with a growing first dimension: the second recompiles with a symbolic size,
    which the forward and backward graphs take as an input too; the third reuses it."""
    fn, _ = case
    shapes = [(3, 4), (5, 4), (7, 4)]
    graphs = {"torch": (2, 0)} if fn.__name__ in TORCH_FAILS_DYNAMIC else {}
    for frontend in ("framegraph",) if graphs else ("torch", "framegraph"):
        counting = CountingBackend()
        compiled = compile_with(frontend, fn, counting)
        for shape in shapes:
            expected, expected_grads, _ = _run(fn, lambda: (leaf(*shape),))
            result, grads, _ = _run(compiled, lambda: (leaf(*shape),))
            if frontend == "framegraph":
                assert_same(expected, result)
                _same_grads(expected_grads, grads, f"shape {shape}", exact=True)
        graphs[frontend] = (counting.graph_count, break_count(frontend))
    import torch._dynamo

    torch._dynamo.reset()
    assert graphs["framegraph"] == graphs["torch"] == (2, 0)
    assert not counters["fallback"], dict(counters["fallback"])


def test_module_with_a_function_under_inductor():
    make_args = lambda: (leaf(2, 4),)  # noqa: E731
    framegraph.reset()
    counters.clear()
    expected, expected_grads, _ = _run(GeluModule(), make_args)
    result, grads, _ = _run(framegraph.compile(GeluModule(), backend="inductor"), make_args)
    assert_same(expected, result)
    _same_grads(expected_grads, grads, "inductor", exact=False)
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])


# ---- functorch's transform state ------------------------------------------------------------

def reads_functorch_state(x):
    return x + 1 if torch._C._are_functorch_transforms_active() else x - 1


def test_functorch_state_read_folds_without_a_break_like_torch_compile():
    counts = compare(reads_functorch_state, lambda: (leaf(3, grad=False),))
    assert (counts["framegraph"].graphs, counts["framegraph"].breaks) == (1, 0)
    assert (counts["torch"].graphs, counts["torch"].breaks) == (1, 0)


def test_functorch_state_read_is_guarded():
    from framegraph.eval_frame import get_cache_entries

    framegraph.reset()
    compiled = framegraph.compile(reads_functorch_state, backend="eager")
    x = leaf(3, grad=False)
    compiled(x)
    (entry,) = get_cache_entries(reads_functorch_state.__code__)
    assert any("_are_functorch_transforms_active() is False" in text for text in entry.check_fn.check.texts)
    assert entry.check_fn({"x": x})
    torch._C._functorch._vmap_increment_nesting(3, "error")
    try:
        assert torch._C._are_functorch_transforms_active()
        assert not entry.check_fn({"x": x})
    finally:
        torch._C._functorch._vmap_decrement_nesting()


def test_frames_that_do_not_read_functorch_state_do_not_guard_it():
    from framegraph.eval_frame import get_cache_entries

    framegraph.reset()
    framegraph.compile(double, backend="eager")(leaf(3, grad=False))
    (entry,) = get_cache_entries(double.__code__)
    assert not any("functorch" in text for text in entry.check_fn.check.texts)
