"""torch.func's transforms at torch.compile's parity: vmap, grad, grad_and_value, jacrev, jacfwd,
hessian, alone, nested and composed, made while tracing (`torch.vmap(f)(x)`) or eagerly (a
module global, a decorator). Every case runs eagerly, under framegraph and under torch.compile
with counting backends: equal results and raised exception types, no more breaks and no more
graphs than torch.compile. (Ops are not compared: torch.compile inlines functorch's Python,
its interpreter levels becoming nodes; framegraph calls the transform on the traced body in
one node.) Cases with inputs that require grad
also compare gradients through the compiled result.

A body framegraph cannot trace (an in-place write to its argument, a graph break) makes the
transform's call a break that runs it eagerly: the result and the errors are eager's.
"""

import pytest
import torch

import framegraph
from framegraph.counters import counters

from .datadep_cases import parity_params
from .helpers import CountingBackend, assert_same, clone, gradients_like_eager
from .python_parity import check_operator_counts, t

W = torch.randn(4, 4, generator=torch.Generator().manual_seed(5))
LINEAR = torch.nn.Linear(4, 3)
SEEN = []


def tg(*shape, seed=0):
    return t(*shape, seed=seed).requires_grad_()


batched_matmul = torch.vmap(lambda r: r @ W)


@torch.vmap
def batched_softplus(r):
    return torch.nn.functional.softplus(r) - r.mean()


grad_of_cube = torch.func.grad(lambda a: (a ** 3).sum())


# ---- vmap ------------------------------------------------------------------------------------
def vmap_elementwise(x):
    return torch.vmap(lambda r: r.sin() * 2)(x)


def vmap_reads_a_global(x):
    return torch.vmap(lambda r: (r @ W).relu())(x) + 1


def vmap_in_dims_none(x, y):
    return torch.vmap(lambda a, b: a * b, in_dims=(0, None))(x, y)


def vmap_in_dim_one(x):
    return torch.vmap(lambda c: c.sum(), in_dims=1)(x)


def vmap_negative_in_dim(x):
    return torch.vmap(lambda c: c * 2, in_dims=-1)(x)


def vmap_out_dim_one(x):
    return torch.vmap(lambda r: r.cumsum(0), out_dims=1)(x)


def vmap_two_outputs(x):
    return torch.vmap(lambda r: (r.sum(), r * 2), out_dims=(0, 1))(x)


def vmap_nested(x):
    return torch.vmap(torch.vmap(lambda s: s.cos() + s))(x)


def vmap_a_module(x):
    return torch.vmap(LINEAR)(x)


def vmap_a_def(x, scale):
    def row(r):
        return r.softmax(-1) * scale
    return torch.vmap(row)(x)


def vmap_global_made_eagerly(x):
    return batched_matmul(x)


def vmap_decorated(x):
    return batched_softplus(x) * 2


def vmap_keyword_argument_unbatched(x, y):
    return torch.vmap(lambda r, bias: r + bias)(x, bias=y)


def vmap_randomness_same(x):
    return torch.vmap(lambda r: r * 0 + 1, randomness="same")(x)


def vmap_chunked(x):
    return torch.vmap(lambda r: r.exp(), chunk_size=2)(x)


def vmap_then_more_work(x):
    y = torch.vmap(lambda r: r.norm())(x)
    return y / y.sum()


def vmap_result_is_a_list(x):
    return torch.vmap(lambda r: [r + 1, r - 1])(x)


def vmap_writes_its_argument(x):
    y = x.clone()
    out = torch.vmap(lambda r: r.exp_() + 1)(y)
    return out, y


def vmap_body_writes_a_closure_tensor(x):
    w = torch.zeros(4)

    def f(r):
        w.add_(1)  # unbatched: once, as eager
        return r * 2
    return torch.vmap(f)(x), w


def grad_body_writes_a_closure_tensor(x):
    w = x.detach().clone()

    def f(r):
        w.add_(1)  # eager refuses a write to a captured tensor under grad: the same error
        return (r * w).sum()
    return torch.func.grad(f)(x), w


def vmap_of_an_unbound_in_place_method(x):
    return torch.vmap(torch.Tensor.exp_)(x.clone())


def vmap_body_appends_to_a_global(x):
    def loud(r):
        SEEN.append(1)
        return r * 2
    return torch.vmap(loud)(x)


def grad_body_appends_to_a_global(x):
    def loud(r):
        SEEN.append(r.shape[0])
        return (r * r).sum()
    return torch.func.grad(loud)(x)


def nested_vmap_bodies_append(x):
    def inner(r):
        SEEN.append("inner")
        return r + 1

    def outer(r):
        SEEN.append("outer")
        return torch.vmap(inner)(r)
    return torch.vmap(outer)(x)


def vmap_in_chunks_body_appends(x):
    def loud(r):
        SEEN.append(1)
        return r * 2
    return torch.vmap(loud, chunk_size=1)(x)


def vmap_inconsistent_sizes(x, y):
    return torch.vmap(lambda a, b: a + b)(x, y)


def vmap_batch_dim_out_of_range(x):
    return torch.vmap(lambda r: r, in_dims=3)(x)


# ---- grad and friends ------------------------------------------------------------------------
def grad_of_a_sum(x):
    return torch.func.grad(lambda a: (a.sin() ** 2).sum())(x)


def grad_with_aux(x):
    return torch.func.grad(lambda a: ((a * 3).sum(), a.cos()), has_aux=True)(x)


def grad_two_argnums(x, y):
    return torch.func.grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, y)


def grad_second_argument(x, y):
    return torch.func.grad(lambda a, b: (a * b * b).sum(), argnums=1)(x, y)


def grad_reads_a_module(x):
    return torch.func.grad(lambda a: LINEAR(a).pow(2).mean())(x)


def grad_and_value_pair(x, y):
    return torch.func.grad_and_value(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, y)


def grad_and_value_with_aux(x):
    return torch.func.grad_and_value(lambda a: (a.pow(2).sum(), a.mean()), has_aux=True)(x)


def grad_global_made_eagerly(x):
    return grad_of_cube(x) + x


def grad_of_grad(x):
    return torch.func.grad(lambda a: torch.func.grad(lambda b: b.sin().sum())(a).sum())(x)


def grad_of_a_non_scalar(x):
    return torch.func.grad(lambda a: a * 2)(x)


def grad_of_a_float_argument(x):
    return torch.func.grad(lambda s, a: (a * s).sum())(2.0, x)


def jacrev_of_a_map(x):
    return torch.func.jacrev(lambda a: a.sin() @ W)(x)


def jacrev_two_argnums(x, y):
    return torch.func.jacrev(lambda a, b: a * b, argnums=(0, 1))(x, y)


def jacfwd_of_exp(x):
    return torch.func.jacfwd(lambda a: a.exp())(x)


def jacfwd_with_aux(x):
    return torch.func.jacfwd(lambda a: (a.tanh(), a.sum()), has_aux=True)(x)


def hessian_of_a_cubic(x):
    return torch.func.hessian(lambda a: (a ** 3).sum())(x)


def jvp_of_sin(x):
    return torch.func.jvp(lambda a: a.sin() * 2, (x,), (torch.ones_like(x),))


def jvp_two_primals_reads_a_global(x, y):
    out, tangent = torch.func.jvp(lambda a, b: (a * b) @ W, (x, y), (y, x))
    return out + tangent


def vjp_then_apply(x):
    out, pull = torch.func.vjp(lambda a: a.sin(), x)
    return out, pull(torch.ones_like(x))


def vjp_with_aux_two_primals(x, y):
    (out, pull, aux) = torch.func.vjp(lambda a, b: ((a * b).sin() @ W, a.sum()), x, y, has_aux=True)
    gx, gy = pull(torch.ones_like(out))
    return out, gx, gy, aux


def vjp_pullback_twice(x):
    out, pull = torch.func.vjp(lambda a: (a.exp(), a * 3), x)
    first = pull((torch.ones_like(x), torch.zeros_like(x)))
    second = pull((out[0], out[1]))
    return first, second


def vjp_pullback_returned(x):
    out, pull = torch.func.vjp(lambda a: a.tanh() * 2, x)
    return out * 2, pull


def vjp_pullback_across_a_break(x):
    out, pull = torch.func.vjp(lambda a: a.sin() * W.sum(), x)
    print("", end="")  # a graph break with the pullback live
    return pull(out.cos())


def vjp_with_aux_across_a_break(x):
    out, pull, aux = torch.func.vjp(lambda a: (a.sin() * 2, a.sum()), x, has_aux=True)
    print("", end="")  # the pullback live at a graph break, made again with has_aux
    return pull(out), aux


def vjp_of_dropout(x):
    out, pull = torch.func.vjp(lambda a: torch.nn.functional.dropout(a, 0.5) * 2, x)
    return out, pull(torch.ones_like(out))


def vjp_of_a_vmapped_dropout(x):
    def f(a):
        return torch.vmap(lambda r: torch.nn.functional.dropout(r, 0.5) * 2, randomness="different")(a)
    out, pull = torch.func.vjp(f, x)
    return out, pull(torch.ones_like(out))


def functional_call_of_a_module(x):
    params = {name: p.detach() * 2 for name, p in LINEAR.named_parameters()}
    return torch.func.functional_call(LINEAR, params, (x,))


class TiedDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, 4)
        self.out = torch.nn.Linear(4, 6, bias=False)
        self.out.weight = self.embed.weight  # one parameter under two names
        self.norm = torch.nn.BatchNorm1d(4).eval()

    def forward(self, ids, scale=1.0):
        return self.out(self.norm(self.embed(ids)) * scale)


TIED = TiedDecoder()


def functional_call_with_buffers_and_kwargs(x):
    state = {name: b + 1 for name, b in TIED.named_buffers() if b.is_floating_point()}
    return torch.func.functional_call(TIED, state, (torch.tensor([0, 2, 5]),), {"scale": 2.0}) + x.sum()


def functional_call_tied_weight(x):
    # One name of the tied pair given: eager unties it, so both names use the new tensor.
    return torch.func.functional_call(TIED, {"embed.weight": TIED.embed.weight * x.sum()}, torch.tensor([1, 3]))


def functional_call_two_dicts(x):
    weights, biases = ({n: p * 0.5 for n, p in LINEAR.named_parameters() if n.endswith(kind)}
                       for kind in ("weight", "bias"))
    return torch.func.functional_call(LINEAR, (weights, biases), x)


def functional_call_strict_missing_key(x):
    return torch.func.functional_call(LINEAR, {"weight": LINEAR.weight * 2}, (x,), strict=True)


def functional_call_unknown_key(x):
    return torch.func.functional_call(LINEAR, {"scale": x.sum()}, (x,))


def functional_call_ensemble(x):
    out = 0
    for shift in (0.0, 1.0):
        params = {name: p.detach() + shift for name, p in LINEAR.named_parameters()}
        out = out + torch.func.functional_call(LINEAR, params, (x,))
    return out


def functional_call_gradient(x):
    weight = LINEAR.weight.detach().clone().requires_grad_()
    out = torch.func.functional_call(LINEAR, {"weight": weight}, (x,)).sum()
    return torch.autograd.grad(out, weight)[0]


def vmap_softmax_keyword(x):
    return torch.vmap(lambda r: torch.softmax(r, dim=-1) * r)(x)


def vmap_two_batched(x, y):
    return torch.vmap(lambda a, b: (a * b).sum(), in_dims=(0, 0))(x, y)


def vmap_tuple_out_dim_int(x):
    return torch.vmap(lambda r: (r + 1, r.sum()), out_dims=0)(x)


def vmap_nested_inner_unbatched(x, y):
    return torch.vmap(lambda a: torch.vmap(lambda b, c: b * c, in_dims=(0, None))(a, y))(x)


def vmap_bound_forward(x):
    return torch.vmap(LINEAR.forward)(x)


def vmap_default_argument(x):
    def row(r, power=2):
        return r ** power
    return torch.vmap(row)(x)


def vmap_transposed_input(x):
    return torch.vmap(lambda c: c.cumsum(0))(x.t())


def vmap_chunk_of_one(x):
    return torch.vmap(lambda r: r.tanh(), chunk_size=1)(x)


def vmap_two_shapes(x, y):
    f = torch.vmap(lambda r: r.norm())
    return f(x).sum() + f(y).sum()


def grad_of_where(x):
    return torch.func.grad(lambda a: torch.where(a > 0, a, a * 0.1).pow(2).sum())(x)


def grad_negative_argnum(x, y):
    return torch.func.grad(lambda a, b: (a.sin() * b).sum(), argnums=-1)(x, y)


def grad_and_value_one_argnum(x):
    return torch.func.grad_and_value(lambda a: a.exp().mean())(x)


def jacrev_with_aux(x):
    return torch.func.jacrev(lambda a: (a.sin(), a.sum()), has_aux=True)(x)


def jacfwd_two_argnums(x, y):
    return torch.func.jacfwd(lambda a, b: a * b.cos(), argnums=(0, 1))(x, y)


def hessian_second_argument(x, y):
    return torch.func.hessian(lambda a, b: (a * b ** 3).sum(), argnums=1)(x, y)


def grad_under_no_grad(x):
    with torch.no_grad():
        return torch.func.grad(lambda a: (a ** 2).sum())(x)


def grad_per_module(x):
    total = x.new_zeros(())
    for module in (LINEAR, LINEAR):
        total = total + torch.func.grad(lambda a: module(a).sum())(x).sum()
    return total


def vmap_closure_int_and_tensor(x, k):
    offset = x.mean(0)
    return torch.vmap(lambda r: r * k + offset)(x)


# ---- composed --------------------------------------------------------------------------------
def per_sample_gradients(w, x):
    return torch.vmap(torch.func.grad(lambda p, r: ((r @ p) ** 2).sum()), in_dims=(None, 0))(w, x)


def batched_jacobians(x):
    return torch.vmap(torch.func.jacrev(lambda a: a.sin() * a))(x)


def vmap_of_hessian(x):
    return torch.vmap(torch.func.hessian(lambda a: a.pow(3).sum()))(x)


def transform_in_a_called_function(x):
    def helper(v):
        return torch.vmap(lambda r: r.relu().sum())(v)
    return helper(x) + helper(x * 2)


def transform_in_a_loop(x):
    total = x.new_zeros(())
    for scale in (1.0, 2.0):
        total = total + torch.func.grad(lambda a: (a * scale).sin().sum())(x).sum()
    return total


CASES = [
    (vmap_elementwise, lambda: (t(3, 4),)),
    (vmap_reads_a_global, lambda: (t(3, 4),)),
    (vmap_in_dims_none, lambda: (t(3, 4), t(4, seed=1))),
    (vmap_in_dim_one, lambda: (t(3, 5),)),
    (vmap_negative_in_dim, lambda: (t(3, 5),)),
    (vmap_out_dim_one, lambda: (t(3, 4),)),
    (vmap_two_outputs, lambda: (t(3, 4),)),
    (vmap_nested, lambda: (t(2, 3, 4),)),
    (vmap_a_module, lambda: (t(5, 4),)),
    (vmap_a_def, lambda: (t(3, 4), 0.5)),
    (vmap_global_made_eagerly, lambda: (t(3, 4),)),
    (vmap_decorated, lambda: (t(3, 4),)),
    (vmap_keyword_argument_unbatched, lambda: (t(3, 4), t(4, seed=1))),
    (vmap_randomness_same, lambda: (t(3, 4),)),
    (vmap_chunked, lambda: (t(5, 4),)),
    (vmap_then_more_work, lambda: (t(3, 4),)),
    (vmap_result_is_a_list, lambda: (t(3, 4),)),
    (vmap_writes_its_argument, lambda: (t(3, 4),)),
    (vmap_of_an_unbound_in_place_method, lambda: (t(3, 4),)),
    (vmap_body_writes_a_closure_tensor, lambda: (t(3, 4),)),
    (grad_body_writes_a_closure_tensor, lambda: (t(4),)),
    (vmap_body_appends_to_a_global, lambda: (t(3, 4),)),
    (grad_body_appends_to_a_global, lambda: (t(3, 4),)),
    (nested_vmap_bodies_append, lambda: (t(2, 3, 4),)),
    (vmap_in_chunks_body_appends, lambda: (t(3, 4),)),
    (vmap_inconsistent_sizes, lambda: (t(3, 4), t(2, 4))),
    (vmap_batch_dim_out_of_range, lambda: (t(3, 4),)),
    (grad_of_a_sum, lambda: (t(4),)),
    (grad_with_aux, lambda: (t(4),)),
    (grad_two_argnums, lambda: (t(4), t(4, seed=1))),
    (grad_second_argument, lambda: (t(4), t(4, seed=1))),
    (grad_reads_a_module, lambda: (t(2, 4),)),
    (grad_and_value_pair, lambda: (t(4), t(4, seed=1))),
    (grad_and_value_with_aux, lambda: (t(4),)),
    (grad_global_made_eagerly, lambda: (t(4),)),
    (grad_of_grad, lambda: (t(4),)),
    (grad_of_a_non_scalar, lambda: (t(4),)),
    (grad_of_a_float_argument, lambda: (t(4),)),
    (jacrev_of_a_map, lambda: (t(4),)),
    (jacrev_two_argnums, lambda: (t(3), t(3, seed=1))),
    (jacfwd_of_exp, lambda: (t(4),)),
    (jacfwd_with_aux, lambda: (t(4),)),
    (hessian_of_a_cubic, lambda: (t(3),)),
    (jvp_of_sin, lambda: (t(4),)),
    (jvp_two_primals_reads_a_global, lambda: (t(4), t(4, seed=1))),
    (vjp_then_apply, lambda: (t(4),)),
    (vjp_with_aux_two_primals, lambda: (t(3, 4), t(3, 4, seed=1))),
    (vjp_pullback_twice, lambda: (t(4),)),
    (vjp_then_apply, lambda: (tg(4),)),
    (functional_call_of_a_module, lambda: (t(2, 4),)),
    (functional_call_with_buffers_and_kwargs, lambda: (t(2),)),
    (functional_call_tied_weight, lambda: (t(2),)),
    (functional_call_two_dicts, lambda: (t(2, 4),)),
    (functional_call_strict_missing_key, lambda: (t(2, 4),)),
    (functional_call_unknown_key, lambda: (t(2, 4),)),
    (functional_call_ensemble, lambda: (t(2, 4),)),
    (functional_call_gradient, lambda: (t(2, 4),)),
    (functional_call_of_a_module, lambda: (tg(2, 4),)),
    (vmap_softmax_keyword, lambda: (t(3, 4),)),
    (vmap_two_batched, lambda: (t(3, 4), t(3, 4, seed=1))),
    (vmap_tuple_out_dim_int, lambda: (t(3, 4),)),
    (vmap_nested_inner_unbatched, lambda: (t(2, 3), t(3, seed=1))),
    (vmap_bound_forward, lambda: (t(5, 4),)),
    (vmap_default_argument, lambda: (t(3, 4),)),
    (vmap_transposed_input, lambda: (t(4, 3),)),
    (vmap_chunk_of_one, lambda: (t(3, 4),)),
    (vmap_two_shapes, lambda: (t(3, 4), t(2, 5, seed=1))),
    (grad_of_where, lambda: (t(4),)),
    (grad_negative_argnum, lambda: (t(4), t(4, seed=1))),
    (grad_and_value_one_argnum, lambda: (t(4),)),
    (jacrev_with_aux, lambda: (t(3),)),
    (jacfwd_two_argnums, lambda: (t(3), t(3, seed=1))),
    (hessian_second_argument, lambda: (t(3), t(3, seed=1))),
    (grad_under_no_grad, lambda: (t(4),)),
    (grad_per_module, lambda: (t(2, 4),)),
    (vmap_closure_int_and_tensor, lambda: (t(3, 4), 3)),
    (per_sample_gradients, lambda: (t(4, 2), t(5, 4, seed=1))),
    (batched_jacobians, lambda: (t(2, 3),)),
    (transform_in_a_called_function, lambda: (t(3, 4),)),
    (transform_in_a_loop, lambda: (t(4),)),
    (grad_of_a_sum, lambda: (tg(4),)),
    (vmap_reads_a_global, lambda: (tg(3, 4),)),
    (per_sample_gradients, lambda: (tg(4, 2), t(5, 4, seed=1))),
]

# Where framegraph falls short of torch.compile, and why (strict xfails).
SHORT = {
    "vmap_in_chunks_body_appends": "vmap with chunk_size calls the function once per chunk; framegraph traces it "
                                   "once, so a change it makes to outer state cannot be kept, and the call runs "
                                   "eagerly at a break; torch.compile inlines functorch's Python, unrolling the "
                                   "chunks",
}


def _grads(fn, args):
    for p in LINEAR.parameters():
        p.grad = None
    out = fn(*args)
    leaves = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
              if isinstance(o, torch.Tensor) and o.requires_grad]
    sum(o.sum() for o in leaves).backward()
    return out, [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]


GRAD_CASES = [(fn, make) for fn, make in CASES
              if any(isinstance(a, torch.Tensor) and a.requires_grad for a in make())]


@pytest.mark.parametrize("fn, make_args", [pytest.param(fn, make, id=fn.__name__) for fn, make in GRAD_CASES])
def test_gradients_like_eager(fn, make_args):
    args = make_args()
    backend = gradients_like_eager(fn, lambda: (clone(args),), _grads)
    assert backend.graph_count == 1 and not counters["graph_break"], dict(counters["graph_break"])


def test_forward_mode_inside_another_transform_runs_eagerly():
    """hessian (forward-mode AD) inside vmap: run on fake tensors it reaches kernels only
    inference mode may call, so the outer transform runs eagerly at a break, with eager's
    result. (torch.compile 2.13 fails on it, and leaves functorch's levels behind for the rest
    of the process: it is not compared here.)"""
    x = t(2, 3)
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    assert_same(vmap_of_hessian(x), framegraph.compile(vmap_of_hessian, backend=backend)(x))
    assert sum(counters["graph_break"].values()) == 1 and backend.graph_count == 0
    assert torch._C._functorch.peek_interpreter_stack() is None


@pytest.mark.parametrize("fn", [vjp_pullback_returned, vjp_pullback_across_a_break, vjp_with_aux_across_a_break])
def test_a_pullback_handed_on_is_made_again(fn):
    """A pullback returned, or live at a graph break, is eager vjp's of the same function and
    primals: applied, it gives eager's gradients."""
    x = t(4)
    framegraph.reset()
    counters.clear()
    actual = framegraph.compile(fn, backend=CountingBackend())(x)
    expected = fn(x)
    if fn is vjp_pullback_returned:
        (expected, expected_pull), (actual, actual_pull) = expected, actual
        assert_same(expected_pull(torch.ones(4)), actual_pull(torch.ones(4)))
    assert_same(expected, actual)
    assert not counters["fallback"]


@pytest.mark.parametrize("fn", [vjp_of_dropout, vjp_of_a_vmapped_dropout])
def test_vjp_of_a_random_function_runs_eagerly(fn):
    """Its pullback would run the function again, drawing other numbers: vjp breaks, and the
    draws are eager's (also where the draw is in a nested operator's body)."""
    x = t(3, 4)
    torch.manual_seed(3)
    expected = fn(x)
    framegraph.reset()
    counters.clear()
    torch.manual_seed(3)
    assert_same(expected, framegraph.compile(fn, backend=CountingBackend())(x))
    assert [r for r in counters["graph_break"] if "draws random numbers" in r], dict(counters["graph_break"])


def test_frames_under_an_eager_transform_are_not_compiled():
    """vjp of a random function runs eagerly at a break; the function it calls sees functorch's
    wrapped tensors, which a graph cannot take (inductor failed on them): it runs as it is."""
    x = t(4)
    torch.manual_seed(5)
    expected = vjp_of_dropout(x)
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    torch.manual_seed(5)
    assert_same(expected, framegraph.compile(vjp_of_dropout, backend=backend)(x))
    assert all("dropout" not in str(n.target) for g in backend.graphs for n in g.graph.nodes)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_backends_take_the_transform(backend):
    """AOTAutograd traces through the transform's node into aten operations."""
    x, w = t(5, 4, seed=1), t(4, 2)
    expected = per_sample_gradients(w, x)
    framegraph.reset()
    counters.clear()
    actual = framegraph.compile(per_sample_gradients, backend=backend)(w, x)
    torch.testing.assert_close(actual, expected)
    assert not counters["graph_break"], dict(counters["graph_break"])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_backends_take_functional_call(backend):
    """The swapped tensors are ordinary graph inputs: AOTAutograd differentiates through them."""
    x = tg(2, 4)
    expected = _grads(functional_call_with_buffers_and_kwargs, [x])
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(functional_call_with_buffers_and_kwargs, backend=backend)
    actual = _grads(compiled, [x.detach().clone().requires_grad_()])
    torch.testing.assert_close(actual, expected)
    assert not counters["graph_break"], dict(counters["graph_break"])


@parity_params(CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check_operator_counts(fn, make_args)


@pytest.mark.parametrize("fn, graphs", [(vmap_body_appends_to_a_global, 1), (grad_body_appends_to_a_global, 1),
                                        (nested_vmap_bodies_append, 1), (vmap_in_chunks_body_appends, 0)])
def test_a_transformed_function_changes_outer_state_as_eagerly(fn, graphs):
    """A transform calls its function once (vmap without chunks, grad): what the function appends
    to a global is appended once, as eagerly. In chunks it is called once per chunk, which a
    traced body cannot repeat: the call runs eagerly at a break."""
    x = t(2, 3, 4) if fn is nested_vmap_bodies_append else t(3, 4)
    SEEN.clear()
    expected = fn(x)
    seen = list(SEEN)
    SEEN.clear()
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    actual = framegraph.compile(fn, backend=backend)(x)
    assert_same(actual, expected)
    assert SEEN == seen and seen
    assert backend.graph_count == graphs and sum(counters["graph_break"].values()) == 1 - graphs, \
        dict(counters["graph_break"])


def test_a_transformed_function_keeping_a_value_it_computes_runs_eagerly():
    """A batched tensor kept outside vmap's function has no graph form: the call runs eagerly."""
    kept = []

    def keeps(x):
        def f(r):
            kept.append(r)
            return r * 2
        return torch.vmap(f)(x)
    x = t(3, 4)
    expected = keeps(x)
    kept.clear()
    framegraph.reset()
    counters.clear()
    actual = framegraph.compile(keeps, backend=CountingBackend())(x)
    assert_same(actual, expected)
    assert len(kept) == 1
    (reason,) = counters["graph_break"]
    assert reason.startswith("Unsupported higher-order operator: the function torch.func.vmap transforms keeps a "
                             "value it computes in state outside it"), reason
