"""`model.generate()` with a compiled forward, as users speed up decoding: the tokens equal
eager's, and framegraph compiles no more graphs than torch.compile does on the same calls
(the prompt, the first decoding step, then one graph dynamic in the sequence length: the
key/value cache grows by a token a step)."""

from __future__ import annotations

import warnings

import pytest
import torch

import framegraph
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend
from tests.models.zoo import HAVE_TRANSFORMERS, build

NEW_TOKENS = 8


def _generate(model, ids):
    return model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0)


def _graphs_when_forward_compiled(model, ids, frontend: str) -> tuple[torch.Tensor, int]:
    forward = model.forward
    backend = CountingBackend()
    if frontend == "framegraph":
        framegraph.reset()
        counters.clear()
        model.forward = framegraph.compile(forward, backend=backend)
    else:
        import torch._dynamo

        torch._dynamo.reset()
        model.forward = torch.compile(forward, backend=backend)
    try:
        return _generate(model, ids), backend.graph_count
    finally:
        model.forward = forward


@pytest.mark.skipif(not HAVE_TRANSFORMERS, reason="transformers is not installed (the `models` extra)")
@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_generate_gives_eager_tokens_with_no_more_graphs_than_torch_compile(name):
    warnings.simplefilter("ignore")
    model, _, kwargs = build(name)
    ids = kwargs["input_ids"][:1]
    with torch.no_grad():
        expected = _generate(model, ids)
        ours, our_graphs = _graphs_when_forward_compiled(model, ids, "framegraph")
        assert not counters["fallback"], dict(counters["fallback"])
        breaks = sum(counters["graph_break"].values())
        theirs, their_graphs = _graphs_when_forward_compiled(model, ids, "torch")
    assert torch.equal(ours, expected)
    assert torch.equal(theirs, expected)
    assert expected.shape[1] == ids.shape[1] + NEW_TOKENS
    assert breaks == 0
    assert our_graphs <= their_graphs == 3
