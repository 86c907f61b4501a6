"""Automatic dynamic shapes and ints: one graph swallows every batch size after the first
change, 0/1 stay specialised, ints used arithmetically become symbols while ints Python needs
(range, branches) stay guarded constants, and the switches that override it."""

import logging

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same


def fresh(fn, **options):
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    return framegraph.compile(fn, backend=backend, **options), backend


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h).softmax(-1) * x.shape[0]


def test_a_model_over_batch_sizes_compiles_static_dynamic_and_size_one():
    torch.manual_seed(0)
    model = Net().eval()
    compiled, backend = fresh(model)
    for batch in (2, 3, 4, 5, 8, 16, 1):
        x = torch.randn(batch, 6)
        assert_same(model(x), compiled(x))
    assert backend.graph_count == 3  # static (2), dynamic (3..16), specialised 1


def scale(x, n):
    return x * n


def loop(x, n):
    for _ in range(n):
        x = x + 1
    return x


def branch(x, n):
    if n > 3:
        return x * 2
    return x - n


def test_an_int_used_arithmetically_becomes_a_symbol():
    compiled, backend = fresh(scale)
    for n in range(1, 12):
        assert_same(scale(torch.ones(3), n), compiled(torch.ones(3), n))
    assert backend.graph_count == 2


def test_an_int_python_needs_stays_a_guarded_constant():
    compiled, backend = fresh(loop)
    with pytest.warns(RuntimeWarning, match="recompile_limit"):
        for n in range(1, 12):
            assert_same(loop(torch.zeros(2), n), compiled(torch.zeros(2), n))
    assert backend.graph_count == 8


def test_a_branch_on_a_symbol_is_a_guard_on_its_range():
    compiled, backend = fresh(branch)
    for n in (1, 2, 5, 6, 7, 0, 3):
        assert_same(branch(torch.ones(2), n), compiled(torch.ones(2), n))
    assert backend.graph_count <= 4


def test_dynamic_false_and_true():
    compiled, backend = fresh(scale, dynamic=False)
    for n in (1, 2, 3):
        compiled(torch.ones(2), n)
    assert backend.graph_count == 3
    compiled, backend = fresh(scale, dynamic=True)
    for n in (2, 3, 4):
        compiled(torch.ones(2), n)
    assert backend.graph_count == 1


def sizes_fn(x):
    return x.view(x.shape[0], -1).sum(1) / x.size(0)


def test_mark_dynamic_compiles_a_symbol_from_the_first_call_and_mark_static_prevents_it():
    compiled, backend = fresh(sizes_fn)
    x = torch.randn(4, 3, 2)
    framegraph.mark_dynamic(x, 0)
    assert_same(sizes_fn(x), compiled(x))
    y = torch.randn(7, 3, 2)
    assert_same(sizes_fn(y), compiled(y))
    assert backend.graph_count == 1
    compiled, backend = fresh(sizes_fn)
    for batch in (4, 5, 6):
        y = torch.randn(batch, 3, 2)
        framegraph.mark_static(y, 0)
        assert_same(sizes_fn(y), compiled(y))
    assert backend.graph_count == 3


def needs_the_size(x):
    if x.shape[0] == 4:  # the line that specialises dimension 0
        return x * 2
    return x


def test_mark_dynamic_on_a_specialised_dimension_names_the_line():
    compiled, _ = fresh(needs_the_size)
    x = torch.randn(4, 2)
    framegraph.mark_dynamic(x, 0)
    with pytest.raises(framegraph.exc.MarkedDynamicError, match="dimension 0 was marked dynamic") as info:
        compiled(x)
    assert "if x.shape[0] == 4:" in str(info.value)


def test_mark_dynamic_rejects_bad_dimensions():
    with pytest.raises(IndexError, match="out of range"):
        framegraph.mark_dynamic(torch.ones(2), 3)
    with pytest.raises(TypeError, match="expected a tensor"):
        framegraph.mark_dynamic([1, 2], 0)


def test_symbolic_guards_print_readably(caplog):
    compiled, _ = fresh(sizes_fn)
    compiled(torch.randn(4, 3))
    framegraph.set_logs("guards")
    try:
        with caplog.at_level(logging.INFO, logger="framegraph"):
            compiled(torch.randn(5, 3))
    finally:
        framegraph.set_logs()
    text = "\n".join(caplog.messages)
    assert "size=[?, 3]" in text
    assert "2 <= L['x'].shape[0]" in text


def test_dynamic_results_match_eager_on_aot_eager_and_inductor():
    for backend in ("aot_eager", "inductor"):
        framegraph.reset()
        compiled = framegraph.compile(sizes_fn, backend=backend)
        for batch in (3, 5, 9):
            x = torch.randn(batch, 4)
            assert_same(sizes_fn(x), compiled(x))
