"""flex_attention (torch.nn.attention.flex_attention) at torch.compile's parity: captured as
torch's `flex_attention` higher-order operator, with its score_mod and the block mask's mask_mod
traced into graphs of their own.

Each case runs eagerly, under torch.compile and under framegraph with counting backends, twice
on fresh arguments: framegraph's results (or raised exception types) equal eager's; where
torch.compile's equal eager's and it captured a graph, framegraph makes as many graphs, no more
breaks, and as many flex_attention nodes. Every case that runs also runs under framegraph with
the aot_eager backend. Cases where a tensor the score_mod reads requires grad compare the
gradients after a backward with eager's (eager flex_attention refuses a query, key or value
that requires grad on CPU, so gradients reach only the score_mod's buffers).

With inductor (its CPU template needs AVX2): a causal block mask, made outside and inside the
compiled function, and a relative-position score_mod, equal to eager within float tolerance,
one graph and no break under both frontends. Its time per call beside torch.compile's and
eager's is `python -m bench.steady_state flex_attention` (bench/RESULTS.md).
"""

import math
import sys
import warnings

import pytest
import torch
from torch.nn.attention.flex_attention import AuxRequest, and_masks, create_block_mask, flex_attention, or_masks

import framegraph
from framegraph.counters import counters

from .frontends import break_count, compile_with
from .helpers import CountingBackend, assert_same, clone, gradients_like_eager

warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
warnings.filterwarnings("ignore", category=FutureWarning, message=".*return_lse is deprecated.*")

HOP = torch.ops.higher_order.flex_attention
SEQ = 16
SEEN = []


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def qkv(batch=1, heads=2, seq=SEQ, dim=8, kv_heads=None):
    kv_heads = kv_heads or heads
    return rand(batch, heads, seq, dim), rand(batch, kv_heads, seq, dim, seed=1), rand(batch, kv_heads, seq, dim, seed=2)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < 4


DOCUMENT = torch.tensor([0] * 5 + [1] * 7 + [2] * 4)


def same_document(b, h, q_idx, kv_idx):
    return DOCUMENT[q_idx] == DOCUMENT[kv_idx]


def block_mask(mask_mod, heads=None, seq=SEQ):
    return create_block_mask(mask_mod, None, heads, seq, seq, device="cpu")


CAUSAL = block_mask(causal)
BIAS = rand(2 * SEQ, seed=5)
SLOPES = torch.tensor([0.5, 0.25])
LEARNED = torch.nn.Parameter(rand(2 * SEQ, seed=6))


# ---- score_mod ----------------------------------------------------------------------------
def flex_plain(q, k, v):
    return flex_attention(q, k, v)


def flex_relative_position(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda score, b, h, i, j: score + (i - j))


def flex_bias_table(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda score, b, h, i, j: score + BIAS[i - j + SEQ])


def flex_alibi(q, k, v):
    def alibi(score, b, h, i, j):
        return score - SLOPES[h] * (i - j).abs()
    return flex_attention(q, k, v, score_mod=alibi)


def flex_causal_score_mod(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: torch.where(i >= j, s, -float("inf")))


def flex_soft_capping(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: 20 * torch.tanh(s / 20))


def flex_score_mod_reads_an_intermediate(q, k, v):
    temperature = q.abs().mean() + 1
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s / temperature)


def flex_score_mod_from_an_argument(q, k, v, bias):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + bias[h, i, j])


# ---- block masks ----------------------------------------------------------------------------
def flex_block_mask(q, k, v, mask):
    return flex_attention(q, k, v, block_mask=mask)


def flex_block_mask_and_bias(q, k, v, mask):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + BIAS[i - j + SEQ], block_mask=mask)


def flex_positional_arguments(q, k, v, mask):
    return flex_attention(q, k, v, lambda s, b, h, i, j: s * 2, mask, 0.5)


# ---- options ----------------------------------------------------------------------------
def flex_scale(q, k, v):
    return flex_attention(q, k, v, scale=0.25)


def flex_gqa(q, k, v):
    return flex_attention(q, k, v, enable_gqa=True)


def flex_return_lse(q, k, v):
    out, lse = flex_attention(q, k, v, return_lse=True)
    return out, lse


def flex_return_aux(q, k, v):
    out, aux = flex_attention(q, k, v, return_aux=AuxRequest(lse=True))
    return out, aux.lse, aux.max_scores


# ---- in programs ----------------------------------------------------------------------------
def flex_between_projections(x, mask):
    heads = x.view(1, SEQ, 2, 4).transpose(1, 2)
    out = flex_attention(heads.sin(), heads.cos(), heads, block_mask=mask)
    return out.transpose(1, 2).reshape(1, SEQ, 8).relu()


def flex_twice(q, k, v):
    first = flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + (i - j))
    return flex_attention(first, k, v, score_mod=lambda s, b, h, i, j: s * 0.5)


class RelativeBiasAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(rand(2, 2 * SEQ, seed=7))

    def forward(self, q, k, v, mask):
        def score_mod(score, b, h, i, j):
            return score + self.bias[h, i - j + SEQ]
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=mask)


ATTENTION = RelativeBiasAttention()


def flex_in_a_module(q, k, v, mask):
    return ATTENTION(q, k, v, mask)


def flex_learned_bias(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + LEARNED[i - j + SEQ])


# ---- what eager refuses, and score_mods that cannot be captured ------------------------------
def flex_query_requires_grad(q, k, v):
    return flex_attention(q.requires_grad_(), k, v)


def flex_mask_for_other_lengths(q, k, v, mask):
    return flex_attention(q[:, :, :8], k[:, :, :8], v[:, :, :8], block_mask=mask)


def flex_score_mod_appends_to_a_global(q, k, v):
    def noisy(score, b, h, i, j):
        SEEN.append(1)
        return score
    return flex_attention(q, k, v, score_mod=noisy)


def flex_score_mod_returns_a_number(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: 1.0)


def flex_block_mask_made_inside(q, k, v):
    return flex_attention(q, k, v, block_mask=block_mask(causal))


def flex_document_mask_made_inside(q, k, v):
    # the mask_mod indexes a table with its 0-d index tensors, under create_block_mask's
    # TransformGetItemToIndex mode and torch.vmap
    return flex_attention(q, k, v, block_mask=block_mask(and_masks(causal, same_document)))


CASES = [
    (flex_plain, lambda: qkv()),
    (flex_relative_position, lambda: qkv()),
    (flex_bias_table, lambda: qkv()),
    (flex_alibi, lambda: qkv()),
    (flex_causal_score_mod, lambda: qkv()),
    (flex_soft_capping, lambda: qkv()),
    (flex_score_mod_reads_an_intermediate, lambda: qkv()),
    (flex_score_mod_from_an_argument, lambda: (*qkv(), rand(2, SEQ, SEQ, seed=3))),
    (flex_block_mask, lambda: (*qkv(), CAUSAL)),
    (flex_block_mask, lambda: (*qkv(), block_mask(same_document))),
    (flex_block_mask, lambda: (*qkv(), block_mask(and_masks(causal, window)))),
    (flex_block_mask, lambda: (*qkv(), block_mask(or_masks(causal, same_document), heads=2))),
    (flex_block_mask, lambda: (*qkv(batch=2, seq=256), block_mask(causal, seq=256))),
    (flex_block_mask_and_bias, lambda: (*qkv(), CAUSAL)),
    (flex_positional_arguments, lambda: (*qkv(), CAUSAL)),
    (flex_scale, lambda: qkv()),
    (flex_gqa, lambda: qkv(heads=4, kv_heads=2)),
    (flex_return_lse, lambda: qkv()),
    (flex_return_aux, lambda: qkv()),
    (flex_between_projections, lambda: (rand(1, SEQ, 8), CAUSAL)),
    (flex_twice, lambda: qkv()),
    (flex_in_a_module, lambda: (*qkv(), CAUSAL)),
    (flex_learned_bias, lambda: qkv()),
    (flex_query_requires_grad, lambda: qkv()),
    (flex_mask_for_other_lengths, lambda: (*qkv(), CAUSAL)),
    (flex_score_mod_appends_to_a_global, lambda: qkv()),
    (flex_score_mod_returns_a_number, lambda: qkv()),
    (flex_block_mask_made_inside, lambda: qkv()),
    (flex_document_mask_made_inside, lambda: qkv()),
]

# Where framegraph makes more graphs or breaks than torch.compile, and why (strict xfails).
SHORT: dict[str, str] = {}


# Eager flex_attention compiles its operator with torch.compile(fullgraph=True), which refuses
# these score_mods (eager raises torch's Unsupported). On 3.13 a torch.compile that raised, then
# a framegraph compile, leave the next torch.compile in the process hanging (a core issue of
# the two frame hooks, not of flex_attention; see the branch report): not run there.
HANG_ON_313 = {"flex_score_mod_appends_to_a_global", "flex_score_mod_returns_a_number"}
EAGER_RAISES = {"flex_query_requires_grad", "flex_mask_for_other_lengths", *HANG_ON_313}


def _ids():
    seen: dict[str, int] = {}
    params = []
    for fn, make in CASES:
        n = seen[fn.__name__] = seen.get(fn.__name__, 0) + 1
        name = fn.__name__ if n == 1 else f"{fn.__name__}-{n}"
        marks = [pytest.mark.xfail(strict=True, reason=SHORT[fn.__name__])] if fn.__name__ in SHORT else []
        if fn.__name__ in HANG_ON_313:
            marks.append(pytest.mark.skipif(sys.version_info >= (3, 13), reason="a torch.compile after a refused "
                                            "one and a framegraph compile hangs on 3.13"))
        params.append(pytest.param(fn, make, id=name, marks=marks))
    return params


def _call(fn, args):
    try:
        return fn(*args), None
    except Exception as error:  # the program's own exception is part of what must match
        return None, error


def _hops(backend: CountingBackend) -> int:
    return sum(node.target is HOP for gm in backend.graphs for node in gm.graph.nodes)


def _run(frontend, fn, make_args, backend):
    compiled = compile_with(frontend, fn, backend)
    return [_call(compiled, clone(make_args())) for _ in range(2)]


def _same_as(expected, runs, where):
    want, want_error = expected
    for result, error in runs:
        if want_error is not None or error is not None:
            assert type(error) is type(want_error), f"{where}: raised {error!r}, eager raised {want_error!r}"
        else:
            assert_same(want, result, where)


@pytest.mark.parametrize("fn, make_args", _ids())
def test_like_torch_compile(fn, make_args):
    expected = _call(fn, clone(make_args()))
    torch_backend, ours = CountingBackend(), CountingBackend()
    torch_runs = _run("torch", fn, make_args, torch_backend)
    torch_breaks = break_count("torch")
    _same_as(expected, _run("framegraph", fn, make_args, ours), "framegraph")
    assert not counters["fallback"], dict(counters["fallback"])
    try:
        _same_as(expected, torch_runs, "torch.compile")
    except AssertionError:
        return  # torch.compile deviates from eager here: its counts are no reference
    if torch_backend.graph_count == 0:
        return  # it ran the frame eagerly (raising what eager raises): any capture is as good
    theirs = (torch_backend.graph_count, torch_breaks, _hops(torch_backend))
    mine = (ours.graph_count, break_count("framegraph"), _hops(ours))
    assert mine[0] == theirs[0] and mine[1] <= theirs[1] and mine[2] == theirs[2], \
        f"framegraph (graphs, breaks, flex_attention nodes) {mine}, torch.compile {theirs}"


@pytest.mark.parametrize("fn, make_args", [p for p in _ids() if p.values[0].__name__ not in {*SHORT, *EAGER_RAISES}])
def test_aot_eager_like_eager(fn, make_args):
    framegraph.reset()
    counters.clear()
    expected = fn(*clone(make_args()))
    actual = framegraph.compile(fn, backend="aot_eager")(*clone(make_args()))
    assert_same(expected, actual)
    assert not counters["graph_break"], dict(counters["graph_break"])


GRAD_CASES = {
    flex_learned_bias: lambda: [LEARNED],
    flex_in_a_module: lambda: [ATTENTION.bias],
    flex_score_mod_from_an_argument: None,  # the bias argument requires grad
}


def _grads(fn, args, leaves):
    for leaf in leaves:
        leaf.grad = None
    out = fn(*args)
    out.sum().backward()
    return out, [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", list(GRAD_CASES), ids=lambda fn: fn.__name__)
def test_gradients_like_eager(fn, backend):
    make = dict(CASES)[fn]

    def arguments():
        args = clone(make())
        if GRAD_CASES[fn] is None:
            args[-1].requires_grad_()
        leaves = GRAD_CASES[fn]() if GRAD_CASES[fn] else [args[-1]]
        return args, leaves
    counting = gradients_like_eager(fn, arguments, _grads, backend=None if backend == "eager" else backend)
    assert not counters["graph_break"], dict(counters["graph_break"])
    if backend == "eager":
        assert counting.graph_count == 1 and _hops(counting) == 1


def test_new_lengths_recompile_like_torch_compile():
    """A second sequence length makes the lengths dynamic; the block mask comes with them."""
    def fn(q, k, v, mask):
        return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + (i - j) / 8, block_mask=mask)
    calls = [(*qkv(seq=n), block_mask(causal, seq=n)) for n in (16, 32, 48)]
    counts = {}
    for frontend in ("torch", "framegraph"):
        backend = CountingBackend()
        compiled = compile_with(frontend, fn, backend)
        for args in calls:
            assert_same(fn(*clone(args)), compiled(*clone(args)), frontend)
        counts[frontend] = (backend.graph_count, break_count(frontend), _hops(backend))
    assert counts["framegraph"] == counts["torch"], counts


def test_default_scale_is_one_over_root_of_head_size():
    q, k, v = qkv(dim=16)
    framegraph.reset()
    backend = CountingBackend()
    framegraph.compile(flex_plain, backend=backend)(q, k, v)
    node = next(n for n in backend.graphs[0].graph.nodes if n.target is HOP)
    assert node.args[5] == 1.0 / math.sqrt(16)


# ---- with inductor ------------------------------------------------------------------------------

def _relative_position(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx).to(score.dtype) * 0.01


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def causal_relative_outside(q, k, v, block_mask):
    return flex_attention(q, k, v, score_mod=_relative_position, block_mask=block_mask)


def causal_relative_inside(q, k, v):
    block_mask = create_block_mask(_causal, None, None, q.shape[-2], k.shape[-2], device="cpu")
    # (nothing after it: inductor's CPU template takes no epilogue, under either frontend)
    return flex_attention(q, k, v, score_mod=_relative_position, block_mask=block_mask)


@pytest.mark.skipif(not torch.cpu._is_avx2_supported(),
                    reason="inductor lowers flex_attention on CPU only where the CPU has AVX2")
@pytest.mark.parametrize("fn", [causal_relative_outside, causal_relative_inside], ids=lambda fn: fn.__name__)
def test_inductor_causal_relative_position_like_eager_and_torch_compile(fn):
    """The fused kernel inductor generates equals eager's unfused computation within float
    tolerance, with framegraph's graphs, breaks and flex_attention nodes as torch.compile's."""
    from torch._inductor.compile_fx import compile_fx

    from framegraph.backends.builtin import inductor

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 256, 64) for _ in range(3))
    args = (q, k, v) if fn is causal_relative_inside else (
        q, k, v, create_block_mask(_causal, None, None, 256, 256, device="cpu"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention warns that it is unfused
        expected = fn(*args)
    results, graphs, breaks = {}, {}, {}
    for frontend, compiler in (("torch", compile_fx), ("framegraph", inductor)):
        seen = []

        def counting(gm, example_inputs, compiler=compiler, seen=seen):
            seen.append(gm)
            return compiler(gm, example_inputs)

        counting.copies_graph_attributes = True
        compiled = compile_with(frontend, fn, counting)
        results[frontend] = [compiled(*args), compiled(*args)]
        graphs[frontend] = seen
        breaks[frontend] = break_count(frontend)
    for frontend, (first, second) in results.items():
        torch.testing.assert_close(first, expected, atol=2e-5, rtol=2e-5, msg=frontend)
        torch.testing.assert_close(second, first, atol=0, rtol=0, msg=frontend)
    assert not counters["fallback"], dict(counters["fallback"])
    nodes = {frontend: sum(1 for g in found for n in g.graph.nodes if n.target is torch.ops.higher_order.flex_attention)
             for frontend, found in graphs.items()}
    assert (len(graphs["framegraph"]), breaks["framegraph"], nodes["framegraph"]) == (1, 0, 1)
    assert (len(graphs["torch"]), breaks["torch"], nodes["torch"]) == (1, 0, 1)
