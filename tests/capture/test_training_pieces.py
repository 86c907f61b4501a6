"""The constructs a training step relies on, each in the general form programs use it:
`.grad` of parameters (read, guarded, assigned), dicts keyed by tensors (an optimizer's
state), torch's grouping of tensor lists for foreach kernels, torch's own marks
(`torch._dynamo.graph_break()`, `torch._dynamo.disable`), functions of torch's inlined
packages reached through their module, and `typing.cast`."""

from __future__ import annotations

import collections
import typing

import pytest
import torch
import torch._dynamo  # tests may: the program's own graph_break() and disable
from torch import nn

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, check


def copy_params(params):
    """Copies of parameters with their gradients (helpers.clone makes plain tensors)."""
    copies = []
    for p in params:
        copy = nn.Parameter(p.detach().clone())
        copy.grad = None if p.grad is None else p.grad.clone()
        copies.append(copy)
    return copies


def assert_same_params(expected, actual) -> None:
    for e, a in zip(expected, actual):
        assert torch.equal(e, a)
        assert (e.grad is None) == (a.grad is None) and (e.grad is None or torch.equal(e.grad, a.grad))


def differential(fn, params, *args, graphs):
    """fn on copies of `params` eagerly and compiled: equal results, parameters and grads."""
    expected_params, actual_params = copy_params(params), copy_params(params)
    expected = fn(expected_params, *args)
    compiled_fn, counting = compiled(fn)
    actual = compiled_fn(actual_params, *args)
    assert_same(expected, actual)
    assert_same_params(expected_params, actual_params)
    assert counting.graph_count == graphs, f"{counting.graph_count} graphs, expected {graphs}"
    assert not counters["fallback"], dict(counters["fallback"])
    return counting


def compiled(fn):
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    return framegraph.compile(fn, backend=counting), counting


def with_grads(*shapes, missing=()):
    """Parameters of these shapes, each with a gradient unless its index is in `missing`."""
    torch.manual_seed(0)
    params = [nn.Parameter(torch.randn(*shape)) for shape in shapes]
    for i, p in enumerate(params):
        if i not in missing:
            p.grad = torch.randn_like(p)
    return params


# ---- .grad ------------------------------------------------------------------------------------
def sgd_by_hand(params, lr):
    for p in params:
        if p.grad is not None:
            p.data.add_(p.grad, alpha=-lr)
            p.grad = None
    return len([p for p in params if p.grad is None])


def test_grads_are_read_and_cleared_in_one_graph():
    params = with_grads((3, 4), (4,), (2,), missing=(1,))
    counting = differential(sgd_by_hand, params, 0.1, graphs=1)
    assert counting.op_count == 4  # two reads of .data, two add_


def test_a_gradient_that_appears_or_goes_recompiles():
    fn, counting = compiled(sgd_by_hand)
    params = with_grads((3,), (3,))
    expected = copy_params(params)
    assert fn(params, 0.5) == sgd_by_hand(expected, 0.5) == 2
    assert_same_params(expected, params)
    # no gradients now: the guard on `p.grad is not None` fails; the recompile has no ops
    assert fn(params, 0.5) == 2 and counting.graph_count == 1
    params[0].grad = torch.ones(3)
    expected = copy_params(params)
    fn(params, 0.5)
    sgd_by_hand(expected, 0.5)
    assert_same_params(expected, params)
    assert counting.graph_count == 2


def accumulate(p, g):
    if p.grad is None:
        p.grad = g.clone()
    else:
        p.grad.add_(g)
    return p.grad


def test_assigning_a_gradient_is_replayed_on_the_parameter():
    p = nn.Parameter(torch.randn(3))
    g = torch.randn(3)
    fn, counting = compiled(accumulate)
    first = fn(p, g)
    assert torch.equal(p.grad, g) and p.grad is first  # the graph's new tensor, stored by replay
    fn(p, g)
    assert torch.equal(p.grad, 2 * g) and p.grad is first
    assert counting.graph_count == 2 and not counters["fallback"]
    assert not counters["graph_break"], dict(counters["graph_break"])


def give_wrong_grad(p):
    p.grad = torch.zeros(2)


def test_a_gradient_of_another_shape_raises_as_eagerly():
    p = nn.Parameter(torch.randn(3))
    with pytest.raises(RuntimeError) as eager:
        give_wrong_grad(p)
    fn, _ = compiled(give_wrong_grad)
    with pytest.raises(RuntimeError) as compiled_error:
        fn(p)
    assert str(compiled_error.value) == str(eager.value)
    assert p.grad is None
    # the trace reached the assignment and left it to run eagerly, where torch raises
    assert [reason for reason in counters["graph_break"] if "another shape" in reason]


# ---- dicts keyed by tensors ---------------------------------------------------------------------
def momentum_step(params, state, beta):
    for p in params:
        buf = state[p].get("buf")
        if buf is None:
            state[p]["buf"] = p.grad.clone()
        else:
            buf.mul_(beta).add_(p.grad)
        p.data.add_(state[p]["buf"], alpha=-0.1)
    return len(state)


def test_a_defaultdict_keyed_by_parameters_is_filled_then_read():
    params = with_grads((3, 2), (2,))
    state = collections.defaultdict(dict)
    expected_params, expected_state = copy_params(params), collections.defaultdict(dict)
    fn, counting = compiled(momentum_step)
    for call in range(4):
        assert fn(params, state, 0.9) == momentum_step(expected_params, expected_state, 0.9)
        assert_same(expected_params, params)
        assert list(state) == params and all(list(state[p]) == ["buf"] for p in params)
        for p, q in zip(params, expected_params):
            assert torch.equal(state[p]["buf"], expected_state[q]["buf"])
    # the first call made the buffers (a graph storing them), the others read them
    assert counting.graph_count == 2 and not counters["fallback"]


def test_a_new_key_or_another_parameter_recompiles():
    params = with_grads((3,), (3,))
    state = collections.defaultdict(dict)
    fn, counting = compiled(momentum_step)
    fn(params, state, 0.9)
    fn(params, state, 0.9)
    assert counting.graph_count == 2
    other = with_grads((3,))[0]
    state[other]["buf"] = torch.zeros(3)  # a key the entry did not see: the length guard fails
    fn(params, state, 0.9)
    assert counting.graph_count == 3
    swapped = [params[1], params[0]]  # the same keys, looked up in another order
    fn(swapped, state, 0.9)
    assert counting.graph_count == 4
    assert not counters["fallback"]


def lookups(state, a, b, made):
    hits = (a in state, b in state, made in state, len(state))
    state[made] = made * 2  # a tensor made in the graph as a key
    return hits, state.get(a), state.get(made), state.setdefault(b, a)


def test_membership_get_and_setdefault_on_a_tensor_keyed_dict():
    a, b = torch.randn(2), torch.randn(2)
    state = {a: torch.ones(2)}
    fn, counting = compiled(lambda s, x, y: lookups(s, x, y, x + y))
    result = fn(state, a, b)
    assert result[0] == (True, False, False, 1)
    assert torch.equal(result[1], torch.ones(2)) and result[3] is a
    assert list(state)[0] is a and list(state)[2] is b and len(state) == 3
    made = list(state)[1]
    assert torch.equal(made, a + b) and torch.equal(state[made], made * 2) and result[2] is state[made]
    assert counting.graph_count == 1 and not counters["fallback"]


# ---- grouping tensor lists for foreach kernels ----------------------------------------------------
def grouped(tensors, others):
    groups = torch.utils._foreach_utils._group_tensors_by_device_and_dtype([tensors, others], with_indices=True)
    out = []
    for (device, dtype), ((group, other_group), indices) in groups.items():
        out.append((str(dtype), indices, torch._foreach_add(group, other_group)))
    return out


def test_tensors_are_grouped_by_dtype_in_eager_order():
    """Mixed dtypes make several groups; their order is the real function's (a hash table's),
    which decides the order of the kernels."""
    tensors = [torch.randn(2), torch.randn(2, dtype=torch.float64), torch.randn(3), torch.randn(1, dtype=torch.float16),
               torch.randn(2, dtype=torch.float64)]
    others = [t.clone() for t in tensors]
    counting = check(grouped, tensors, others, graphs=1)  # the order of the groups is compared too
    groups = len({t.dtype for t in tensors})
    # a foreach add per group, a getitem per tensor, and the grad-mode switches of its @no_grad
    assert counting.op_count == groups + len(tensors) + 2


def clip_total(params):
    return torch.nn.utils.clip_grad_norm_(params, 0.5, foreach=True)


def test_clip_grad_norm_is_traced_through_its_module():
    """`torch.nn.utils.clip_grad_norm_` is reached as a module attribute: its Python is traced
    (foreach norms, the scaling done in place), not run as one opaque node."""
    params = with_grads((3, 2), (2,), (4,), missing=(1,))
    counting = differential(clip_total, params, graphs=1)
    targets = [n.target for g in counting.graphs for n in g.graph.nodes]
    assert torch._foreach_norm in targets and torch._foreach_mul_ in targets
    assert torch.nn.utils.clip_grad_norm_ not in targets


# ---- torch's marks ----------------------------------------------------------------------------
def with_user_break(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()


def test_torch_dynamo_graph_break_is_a_graph_break():
    x = torch.randn(3)
    counting = check(with_user_break, x, graphs=2)
    assert list(counters["graph_break"]) == [
        "Call to graph_break(): torch._dynamo.decorators.graph_break() was called"]
    assert all(n.target is not torch._dynamo.graph_break for g in counting.graphs for n in g.graph.nodes)


def test_functions_marked_disabled_run_eagerly():
    calls = []

    @torch._dynamo.disable
    def eager_only(t):
        calls.append(torch.compiler.is_compiling())
        return t + 1

    def fn(x):
        return eager_only(x.sin()) * 2

    x = torch.randn(3)
    check(fn, x, graphs=2)
    assert calls == [False, False]  # eagerly, then at the break: never traced
    assert any("torch._dynamo.disable" in reason for reason in counters["graph_break"])


# ---- typing.cast, an unbacked number ---------------------------------------------------------
def casts(x):
    y = typing.cast(torch.Tensor, x.sin()) * 2
    return typing.cast("list[int]", [y, 1])


def test_typing_cast_is_the_identity():
    check(casts, torch.randn(3), graphs=1)
    assert not counters["graph_break"], dict(counters["graph_break"])


def branch_on_step(step, x):
    from torch.optim.optimizer import _get_value

    value = _get_value(step)
    x = x * (1 - 0.9 ** value)
    if value > 2:  # data-dependent: a break, never a guess
        return x + 1
    return x - 1


def test_a_number_read_from_a_step_tensor_is_not_guarded():
    for step in (torch.tensor(1.0), torch.tensor(3.0)):
        counting = check(branch_on_step, step, torch.randn(3), graphs=2)
        reads = [n for g in counting.graphs for n in g.graph.nodes if n.target == "item"]
        assert len(reads) == 1
