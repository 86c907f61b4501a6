"""Values and modules of torch's own library that real models hand to compiled code, run
eagerly, under framegraph and under torch.compile (frontends.run): torch.Size arguments,
and nn.MultiheadAttention, whose forward asks whether the fast
path is on and whether make_fx is tracing before it picks a kernel.
"""

import pytest
import torch
from torch import nn

import framegraph

from .frontends import Counts, run, t
from .helpers import CountingBackend, assert_same


def reshape_to(x, size):
    return x.reshape(size) * size.numel(), size[1:], len(size)


def size_defaults(x, defaults=torch.Size([2, 3])):
    if x.shape == defaults:
        return x + 1
    return x - 1


def size_returned(x, size):
    return size, x.sum()


@pytest.mark.parametrize("fn, args", [
    (reshape_to, (t(6), torch.Size([2, 3]))),
    (size_defaults, (t(2, 3),)),
    (size_defaults, (t(3, 2),)),
    (size_returned, (t(2), torch.Size([4, 5]))),
])
def test_a_torch_size_argument_is_traced_like_torch_compile(fn, args):
    counts = run(fn, args)
    assert counts["framegraph"] == counts["torch"] == Counts(1, counts["torch"].ops, 0)


def test_a_torch_size_stays_a_torch_size_and_another_size_recompiles():
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(reshape_to, backend=backend)
    for size in (torch.Size([2, 3]), torch.Size([3, 2]), torch.Size([6])):
        result = compiled(t(6), size)
        assert type(result[1]) is torch.Size
        assert_same(result, reshape_to(t(6), size))
    assert backend.graph_count == 3  # each size is guarded by its length and items


def attention(module, x):
    out, weights = module(x, x, x, need_weights=False)
    return out


@pytest.mark.parametrize("grad", [True, False])
def test_multihead_attention_is_one_graph_like_torch_compile(grad):
    torch.manual_seed(0)
    module = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    with torch.set_grad_enabled(grad):
        counts = run(attention, (module, t(2, 3, 8)))
    assert counts["framegraph"].graphs == counts["torch"].graphs == 1
    assert counts["framegraph"].breaks == counts["torch"].breaks == 0


def test_the_fast_path_switch_is_guarded():
    torch.manual_seed(0)
    module = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    framegraph.reset()  # `attention` was compiled by the tests above
    backend = CountingBackend()
    compiled = framegraph.compile(attention, backend=backend)
    x = t(2, 3, 8)
    try:
        with torch.no_grad():
            assert_same(compiled(module, x), attention(module, x))
            torch.backends.mha.set_fastpath_enabled(False)
            assert_same(compiled(module, x), attention(module, x))
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    assert backend.graph_count == 2
    fast, slow = ({str(n.target) for n in g.graph.nodes} for g in backend.graphs)
    assert fast != slow  # the fused kernel, then the composite path
