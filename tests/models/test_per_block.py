"""Identical blocks compiled one by one, as training frameworks compile transformer blocks
(FSDP2's per-block compile, `for block in blocks: block.compile()`): one graph serves every
block (the blocks' parameters are graph inputs, their guards are on types, structure and
tensor metadata), at most as many graphs as torch.compile makes, with eager's outputs."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch._dynamo

import framegraph
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.models.zoo import _LLAMA_LIKE, available

LAYERS = 8


def _llama():
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(**{**_LLAMA_LIKE, "num_hidden_layers": LAYERS})
    return transformers.LlamaForCausalLM(config).eval()


def _per_layer(compile_layer) -> tuple[int, torch.Tensor]:
    model = _llama()
    backend = CountingBackend()
    for i, layer in enumerate(model.model.layers):
        model.model.layers[i] = compile_layer(layer, backend)
    ids = torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        first = model(ids, use_cache=False).logits
        again = model(ids, use_cache=False).logits
    assert torch.equal(first, again)
    return backend.graph_count, first


def test_a_decoder_compiled_layer_by_layer_makes_one_graph():
    if not available("llama"):
        pytest.skip("transformers is not installed (the `models` extra)")
    warnings.simplefilter("ignore")
    ids = torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = _llama()(ids, use_cache=False).logits
    framegraph.reset()
    counters.clear()
    ours, actual = _per_layer(lambda layer, backend: framegraph.compile(layer, backend=backend))
    assert not counters["fallback"] and not counters["graph_break"], (dict(counters["fallback"]),
                                                                        dict(counters["graph_break"]))
    torch._dynamo.reset()
    theirs, _ = _per_layer(lambda layer, backend: torch.compile(layer, backend=backend))
    torch._dynamo.reset()
    assert torch.equal(actual, expected)
    assert ours == 1 and ours <= theirs, (ours, theirs)


def test_identical_blocks_compiled_one_by_one_share_a_graph():
    """The repro's 8 small blocks: the first block's input needs no grad, the next ones' do,
    so both frontends compile twice; every further block reuses the second graph."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(16)
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            return x + self.fc(self.ln(x)).relu()

    def run(compile_block):
        backend = CountingBackend()
        torch.manual_seed(0)
        blocks = [compile_block(Block(), backend) for _ in range(8)]
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
        for block in blocks:
            x = block(x)
        return backend.graph_count, x

    torch.manual_seed(0)
    eager = [Block() for _ in range(8)]
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    for block in eager:
        x = block(x)
    framegraph.reset()
    ours, actual = run(lambda block, backend: framegraph.compile(block, backend=backend))
    torch._dynamo.reset()
    theirs, _ = run(lambda block, backend: torch.compile(block, backend=backend))
    torch._dynamo.reset()
    assert torch.allclose(actual, x)
    assert ours == 2 and ours <= theirs, (ours, theirs)
