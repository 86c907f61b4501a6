"""framegraph.fake_leaves: a fake made directly for a plain leaf has everything the general
converter (`FakeTensorMode.from_tensor`) gives it, and is recorded where the converter would
look for it; every tensor it is not sure of is left to the converter; and compiled models with
tied weights, views of parameters and trained parameters match eager with torch.compile's
graphs."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from framegraph.fake_leaves import fake_leaf

from tests.capture.helpers import CountingBackend, check, gradients_like_eager


def _mode() -> FakeTensorMode:
    return FakeTensorMode(shape_env=ShapeEnv())


def _described(t: torch.Tensor) -> tuple:
    return (type(t).__name__, tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device,
            t.requires_grad, t.is_leaf, getattr(t, "_is_param", False), t.untyped_storage().nbytes(),
            t.is_contiguous(), t.is_contiguous(memory_format=torch.channels_last))


PLAIN = {
    "parameter": lambda: nn.Parameter(torch.randn(4, 3)),
    "frozen parameter": lambda: nn.Parameter(torch.randn(4, 3), requires_grad=False),
    "buffer": lambda: torch.zeros(7),
    "int buffer": lambda: torch.tensor(3),
    "leaf requiring grad": lambda: torch.randn(2, 5, requires_grad=True),
    "channels_last": lambda: torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last),
    "strided leaf": lambda: torch.empty_strided((3, 4), (1, 3)),
    "empty": lambda: torch.empty(0, 3),
    "half": lambda: torch.randn(3, 3, dtype=torch.float16),
    "bool": lambda: torch.ones(2, 2, dtype=torch.bool),
    "complex": lambda: torch.randn(3, dtype=torch.complex64),
    "meta": lambda: torch.empty(5, 2, device="meta"),
}


@pytest.mark.parametrize("make", PLAIN.values(), ids=PLAIN.keys())
def test_a_plain_leaf_gets_the_converters_fake(make):
    t = make()
    mode = _mode()
    fake = fake_leaf(mode, t)
    assert fake is not None
    assert _described(fake) == _described(_mode().from_tensor(t, static_shapes=True))
    assert fake.fake_mode is mode
    # the converter's memo has it: later conversions of the tensor give this very fake
    assert fake_leaf(mode, t) is fake
    assert mode.from_tensor(t, static_shapes=True) is fake
    assert mode.from_tensor(t) is fake


def _with_grad():
    p = nn.Parameter(torch.randn(3))
    p.sum().backward()
    return p


def _inference():
    with torch.inference_mode():
        return torch.randn(3)


def _resized():
    t = torch.randn(8)
    t.resize_(4)
    return t


def _offset():
    t = torch.empty(0)
    t.set_(torch.randn(10).untyped_storage(), 2, (4,), (1,))
    return t


OTHERS = {
    "view": lambda: torch.randn(4, 4)[1:],
    "transposed view": lambda: torch.randn(4, 3).t(),
    "non-leaf": lambda: torch.randn(3, requires_grad=True) * 2,
    "leaf with a grad": _with_grad,
    "inference tensor": _inference,
    "conjugate view": lambda: torch.randn(3, dtype=torch.complex64).conj(),
    "storage larger than the tensor": _resized,
    "storage offset": _offset,
    "sparse": lambda: torch.randn(3, 3).to_sparse(),
}


@pytest.mark.parametrize("make", OTHERS.values(), ids=OTHERS.keys())
def test_anything_else_is_left_to_the_converter(make):
    t = make()
    mode = _mode()
    assert fake_leaf(mode, t) is None
    # and the converter still makes its fake as usual afterwards
    assert mode.from_tensor(t, static_shapes=True) is not None


def test_a_tensor_the_converter_made_first_is_reused():
    t = torch.randn(3, 3)
    mode = _mode()
    made = mode.from_tensor(t, static_shapes=True)
    assert fake_leaf(mode, t) is made


def test_views_converted_later_share_the_fakes_storage():
    base = nn.Parameter(torch.randn(6, 4))
    mode = _mode()
    fake = fake_leaf(mode, base)
    view = mode.from_tensor(base[2:], static_shapes=True)
    assert view._base is fake
    assert view.untyped_storage()._cdata == fake.untyped_storage()._cdata
    assert view.storage_offset() == 8


def test_a_second_tensor_on_a_converted_storage_is_left_to_the_converter():
    base = torch.randn(6)
    other = torch.empty(0)
    other.set_(base.untyped_storage(), 0, (6,), (1,))  # not a view, yet the same storage
    mode = _mode()
    fake = fake_leaf(mode, base)  # kept alive: the memos hold their fakes weakly, as the converter's do
    assert fake is not None
    assert fake_leaf(mode, other) is None
    assert mode.from_tensor(other, static_shapes=True).untyped_storage()._cdata == fake.untyped_storage()._cdata


class Tied(nn.Module):
    """Tied weights, a buffer that is a view of a parameter, a buffer of its own."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.proj = nn.Linear(6, 10, bias=False)
        self.proj.weight = self.embed.weight
        self.register_buffer("first_rows", self.embed.weight.detach()[:3])
        self.register_buffer("scale", torch.full((6,), 0.5))
        self.norm = nn.LayerNorm(6)

    def forward(self, ids):
        h = self.norm(self.embed(ids) * self.scale + self.first_rows.sum(0))
        return self.proj(h)


def _compile_and_compare(model, inputs, backward: bool):
    counting = check(model, *inputs, graphs=1)
    if backward:
        def outputs_and_grads(f, *args):
            out = f(*args)
            return out, torch.autograd.grad(out.sum(), list(model.parameters()))
        counting = gradients_like_eager(model, lambda: inputs, outputs_and_grads)
        assert counting.graph_count == 1
    torch._dynamo.reset()
    reference = CountingBackend()
    torch.compile(model, backend=reference)(*inputs)
    assert reference.graph_count == 1 and reference.op_count == counting.op_count
    return counting


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_tied_weights_and_views_of_parameters_match_eager(backward):
    torch.manual_seed(0)
    model = Tied()
    counting = _compile_and_compare(model, (torch.tensor([[1, 2, 3], [4, 5, 9]]),), backward)
    placeholders = [n for n in counting.graphs[0].graph.nodes if n.op == "placeholder"]
    fakes = {n.name: n.meta["val"] for n in placeholders}
    weight = next(v for k, v in fakes.items() if "weight" in k and v.shape == (10, 6))
    rows = next(v for k, v in fakes.items() if "first_rows" in k)
    # the buffer is still a view of the parameter's fake, as of the parameter itself
    assert rows.untyped_storage()._cdata == weight.untyped_storage()._cdata
    assert sum(1 for v in fakes.values() if v.shape == (10, 6)) == 1  # tied: one input


def test_a_parameter_that_has_a_grad_is_left_to_the_converter_and_still_compiles():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model(torch.randn(3, 4)).sum().backward()  # every parameter now has a .grad
    _compile_and_compare(model, (torch.randn(3, 4),), backward=True)


class Wrapper(torch.Tensor):
    pass


def test_a_tensor_subclass_is_left_to_the_converter():
    t = torch.randn(3).as_subclass(Wrapper)
    assert fake_leaf(_mode(), t) is None
    assert fake_leaf(_mode(), nn.Parameter(torch.randn(3)).as_subclass(Wrapper)) is None
