"""framegraph.fake_rules: every result a learned rule makes has the metadata the op's own fake
kernel gives (sizes, strides, dtype, device, and through autograd requires_grad and grad_fn),
whatever family it is learned in; calls outside the families take the kernel's path; and
compiled models that use the ruled ops match eager with the graphs torch.compile captures."""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

import framegraph
from framegraph import config
from framegraph.counters import counters
from framegraph.fake_rules import DIRECT, OPS, fake_mode, rules_applied

from tests.capture.helpers import CountingBackend, assert_same, gradients_like_eager


def _param(*shape, dtype=torch.float32):
    return nn.Parameter(torch.randn(*shape, dtype=dtype))


def _image(n, c, s, dtype, layout):
    x = torch.randn(n, c, s, s + 1, dtype=dtype)
    if layout == "channels_last":
        return x.contiguous(memory_format=torch.channels_last)
    if layout == "transposed":  # no family: the kernel's path
        return x.transpose(2, 3)
    if layout == "sliced":
        return torch.randn(n, c, s, 2 * (s + 1), dtype=dtype)[..., ::2]
    return x


def _matrix(rows, cols, dtype, layout):
    if layout == "transposed":
        return torch.randn(cols, rows, dtype=dtype).t()
    if layout == "sliced":
        return torch.randn(rows, 2 * cols, dtype=dtype)[:, ::2]
    return torch.randn(rows, cols, dtype=dtype)


def _batch(n, rows, cols, dtype, layout):
    if layout == "transposed":
        return torch.randn(n, cols, rows, dtype=dtype).transpose(1, 2)
    if layout == "sliced":
        return torch.randn(n, rows, 2 * cols, dtype=dtype)[..., ::2]
    if layout == "channels_last":  # batch dimension innermost
        return torch.randn(rows, cols, n, dtype=dtype).permute(2, 0, 1)
    return torch.randn(n, rows, cols, dtype=dtype)


def _and_contiguous(x):
    return torch.randn(x.shape, dtype=x.dtype), x


def _row_and(x):
    return torch.randn(1, x.shape[1], 1, x.shape[3], dtype=x.dtype), x


def _on_image(*make_rest):
    return lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), *(m(c, s, dt) for m in make_rest))


def _channel_param(c, s, dt):
    return _param(c, dtype=dt)


def _channel_stat(value):
    return lambda c, s, dt: torch.full((c,), value, dtype=dt)


def _with_width_params(n, c, s, dt, layout):
    x = _image(n, c, s, dt, layout)
    return x, _param(x.shape[-1], dtype=dt), _param(x.shape[-1], dtype=dt)


# name -> (call on the tensors, make the tensors from (n, c, s, dtype, layout))
CASES = {
    "batch_norm_eval": (lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, False, 0.1, 1e-5),
                        _on_image(_channel_param, _channel_param, _channel_stat(0.0), _channel_stat(1.0))),
    "batch_norm_eval_no_affine": (lambda x, m, v: F.batch_norm(x, m, v, None, None, False, 0.1, 1e-3),
                                  _on_image(_channel_stat(0.0), _channel_stat(1.0))),
    "layer_norm_last": (lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b), _with_width_params),
    "layer_norm_two": (lambda x: F.layer_norm(x, x.shape[-2:]), _on_image()),
    "group_norm": (lambda x, w, b: F.group_norm(x, 1, w, b), _on_image(_channel_param, _channel_param)),
    "group_norm_no_affine": (lambda x: F.group_norm(x, x.shape[1]), _on_image()),
    "addmm": (torch.addmm, lambda n, c, s, dt, layout: (_param(s + 2, dtype=dt), _matrix(n * s, c, dt, layout),
                                                        _matrix(c, s + 2, dt, "contiguous"))),
    "addmm_row_bias": (lambda b, x, w: torch.addmm(b, x, w, beta=0.5, alpha=2.0),
                       lambda n, c, s, dt, layout: (_param(1, s + 2, dtype=dt), _matrix(n * s, c, dt, "contiguous"),
                                                    _matrix(c, s + 2, dt, layout))),
    "mm": (torch.mm, lambda n, c, s, dt, layout: (_matrix(n * s, c, dt, layout), _matrix(c, s + 2, dt, "contiguous"))),
    "mm_transposed_right": (torch.mm, lambda n, c, s, dt, layout: (_matrix(n * s, c, dt, "contiguous"),
                                                                  _matrix(c, s + 2, dt, layout))),
    "bmm": (torch.bmm, lambda n, c, s, dt, layout: (_batch(n, s, c, dt, layout), _batch(n, c, s + 2, dt, "contiguous"))),
    "add": (lambda x, y: x + y, lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), _image(n, c, s, dt, layout))),
    "add_mixed_layouts": (lambda x, y: torch.add(x, y, alpha=2),
                          lambda n, c, s, dt, layout: _and_contiguous(_image(n, c, s, dt, layout))),
    "add_broadcast": (lambda x, b: x + b, lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout),
                                                                        torch.randn(c, 1, 1, dtype=dt))),
    "sub": (lambda x, y: x - y, lambda n, c, s, dt, layout: _row_and(_image(n, c, s, dt, layout))),
    "mul": (lambda x, y: x * y, lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout),
                                                              torch.randn(n, c, 1, 1, dtype=dt))),
    "div": (lambda x, y: x / y, lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), _image(n, c, s, dt, layout))),
    "mul_number": (lambda x: x * 0.5, _on_image()),
    "add_int": (lambda x: x + 1, _on_image()),
    "add_int_to_ints": (lambda x: x.to(torch.int32) + 1, _on_image()),
    "div_ints_by_number": (lambda x: x.to(torch.int64) / 3, _on_image()),
    "clone": (lambda x: x.clone(), _on_image()),
    "clone_contiguous": (lambda x: x.clone(memory_format=torch.contiguous_format), _on_image()),
    "clone_channels_last": (lambda x: x.clone(memory_format=torch.channels_last), _on_image()),
    "contiguous_of_permuted": (lambda x: x.permute(0, 2, 3, 1).contiguous(), _on_image()),
    "contiguous_of_slice": (lambda x: x[:, 1:, ::2].contiguous(), _on_image()),
    "contiguous_of_offset_slice": (lambda x: x[:, :, 1:, 1:].contiguous(), _on_image()),
    "clone_of_permuted": (lambda x: x.permute(3, 1, 0, 2).clone(), _on_image()),
    "softmax": (lambda x: F.softmax(x, -1), _on_image()),
    "softmax_dim1": (lambda x: F.softmax(x, 1), _on_image()),
    "relu": (F.relu, _on_image()),
    "relu6": (F.relu6, _on_image()),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), _on_image()),
    "gelu": (F.gelu, _on_image()),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), _on_image()),
    "hardswish": (F.hardswish, _on_image()),
    "hardsigmoid": (F.hardsigmoid, _on_image()),
    "relu_": (lambda x: F.relu(x.clone(), inplace=True), _on_image()),
    "relu6_": (lambda x: F.relu6(x.clone(), inplace=True), _on_image()),
    "hardswish_": (lambda x: F.hardswish(x.clone(), inplace=True), _on_image()),
    "hardsigmoid_": (lambda x: F.hardsigmoid(x.clone(), inplace=True), _on_image()),
    "relu_on_input": (lambda x: F.relu(x, inplace=True), lambda *a: (_image(*a).detach(),)),
    "add_": (lambda x, y: x.clone().add_(y, alpha=2),
             lambda n, c, s, dt, layout: _and_contiguous(_image(n, c, s, dt, layout))),
    "sub_row": (lambda row, x: x.clone().sub_(row), lambda n, c, s, dt, layout: _row_and(_image(n, c, s, dt, layout))),
    "mul_number_": (lambda x: x.clone().mul_(0.5), _on_image()),
    "div_channels": (lambda x, y: x.clone().div_(y), lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout),
                                                                                  torch.randn(n, c, 1, 1, dtype=dt))),
    # DIRECT: FakeTensorMode's own steps
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1),
               lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), _param(c + 1, c, 3, 3, dtype=dt),
                                            _param(c + 1, dtype=dt))),
    "conv2d_strided_pointwise": (lambda x, w: F.conv2d(x, w, stride=2),
                                 lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout),
                                                              _param(4, c, 1, 1, dtype=dt))),
    "conv2d_depthwise_dilated": (lambda x, w: F.conv2d(x, w, padding=2, dilation=2, groups=x.shape[1]),
                                 lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout),
                                                              _param(c, 1, 3, 3, dtype=dt))),
    "conv2d_channels_last_weight": (
        lambda x, w: F.conv2d(x, w, padding=(0, 1)),
        lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout),
                                     _param(3, c, 1, 3, dtype=dt).contiguous(memory_format=torch.channels_last))),
    "conv2d_batch_of_16": (lambda x, w: F.conv2d(x.expand(16, -1, -1, -1).contiguous(), w),
                           lambda n, c, s, dt, layout: (_image(1, c, s, dt, layout), _param(2, c, 1, 1, dtype=dt))),
    "conv3d": (lambda x, w: F.conv3d(x.unsqueeze(2), w, padding=1),
               lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), _param(2, c, 3, 3, 3, dtype=dt))),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1),
                         lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), _param(c, 3, 3, 3, dtype=dt))),
    "conv1d": (lambda x, w: F.conv1d(x.flatten(2), w, padding=1),  # the kernel's path
               lambda n, c, s, dt, layout: (_image(n, c, s, dt, layout), _param(2, c, 3, dtype=dt))),
    "empty": (lambda x: torch.empty(x.shape[1], 3, dtype=x.dtype) + 0 * x.sum(), _on_image()),
    "empty_channels_last": (lambda x: torch.empty(x.shape, memory_format=torch.channels_last, dtype=torch.int8),
                            _on_image()),
}

# (n, c, s): sizes equal to each other or to 1 make families of their own. The first ones have
# coincidences (addmm: rows n*s == bias width s+2; images: c == s) that a family keyed without
# them would learn a wrong rule from.
SHAPES = [(2, 3, 2), (2, 4, 4), (2, 2, 2), (2, 3, 4), (2, 5, 6), (1, 8, 1), (3, 4, 1), (2, 6, 5), (4, 4, 4),
          (3, 7, 2), (5, 9, 3), (2, 7, 7)]
LAYOUTS = ["contiguous", "channels_last", "transposed", "sliced"]
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def _facts(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [(tuple(o.shape), o.stride(), o.dtype, o.device, o.storage_offset(), o.requires_grad,
             type(o.grad_fn).__name__) for o in outs]


def _run(mode, call, real_args, rules: bool):
    fakes = [mode.from_tensor(a, static_shapes=True) for a in real_args]
    with mode, (rules_applied(mode) if rules else contextlib.nullcontext()):
        return _facts(call(*fakes))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rule_results_are_the_kernels_results(name, dtype):
    _compare_with_the_kernels(name, dtype, cache=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_results_are_the_kernels_results_with_the_cache_on(name):
    """The rules answer before FakeTensorMode's cache; what the cache then holds (the
    kernel's results for calls no rule answered) must agree too."""
    _compare_with_the_kernels(name, torch.float32, cache=True)


def _answered() -> int:
    return sum(counters["fake_rules"][kind] for kind in ("applied", "direct", "views"))


def _compare_with_the_kernels(name, dtype, cache: bool):
    call, make = CASES[name]
    reference = FakeTensorMode(shape_env=ShapeEnv())
    reference.cache_enabled = False  # FakeTensorMode's cache is process-wide: it may hold rule-made results
    ours = fake_mode(ShapeEnv())
    ours.cache_enabled = cache
    before = _answered()
    compared = 0
    for layout in LAYOUTS:
        for n, c, s in SHAPES:
            torch.manual_seed(c)
            args = make(n, c, s, dtype, layout)
            with torch.no_grad() if name.startswith("batch") else contextlib.nullcontext():
                expected = _run(reference, call, args, rules=False)
                got = _run(ours, call, args, rules=True)
            assert got == expected, f"{name} {layout} {(n, c, s)}"
            compared += 1
    assert compared == len(LAYOUTS) * len(SHAPES)
    assert _answered() > before, "no rule or direct op ever answered: the test compared nothing"


def test_every_ruled_op_is_covered_by_a_case():
    ops = set()
    for name, (call, make) in CASES.items():
        mode = FakeTensorMode()
        args = [mode.from_tensor(a) for a in make(2, 3, 4, torch.float32, "contiguous")]
        seen = []

        class Spy(torch.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, a=(), k=None):
                seen.append(func)
                return func(*a, **(k or {}))

        with mode, Spy():
            call(*args)
        ops |= set(seen) & (set(OPS) | set(DIRECT))
    assert ops == (set(OPS) | set(DIRECT)) - {torch.ops.aten._native_batch_norm_legit_no_training.default}


def test_a_batch_norm_that_updates_running_stats_runs_the_kernel():
    """training=True writes running_mean and running_var (their schema does not say so): the
    kernel, with its writes, runs, and no family is learned."""
    reference = FakeTensorMode(shape_env=ShapeEnv())
    reference.cache_enabled = False
    from framegraph.fake_rules import _LEARNED

    def batch_norm_families():
        return {key for key in _LEARNED if key[0] is torch.ops.aten.native_batch_norm.default}

    ours = fake_mode(ShapeEnv())
    before = batch_norm_families()
    for c in (3, 5, 7):
        real = (torch.randn(2, c, 4, 4), _param(c), _param(c), torch.zeros(c), torch.ones(c))
        results = []
        for mode, rules in ((reference, False), (ours, True)):
            x, w, b, m, v = (mode.from_tensor(t, static_shapes=True) for t in real)
            with mode, (rules_applied(mode) if rules else contextlib.nullcontext()):
                results.append((_facts(F.batch_norm(x, m, v, w, b, True, 0.1, 1e-5)), m._version, v._version))
        assert results[0] == results[1]
    # (the ops of the kernel's own decomposition may still be answered by rules and kernels)
    assert batch_norm_families() == before


def test_rules_are_off_outside_the_context_and_with_the_config_off():
    ours = fake_mode(ShapeEnv())
    before = dict(counters["fake_rules"])
    for c in (3, 4, 5):
        x = ours.from_tensor(torch.randn(2, c, 3, 3), static_shapes=True)
        with ours:
            F.hardswish(x)
        with ours, config.patch(fake_rules=False), rules_applied(ours):
            F.hardswish(x + 1)
    assert dict(counters["fake_rules"]) == before


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, c // 2, 1), nn.Conv2d(c // 2, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class MobileBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.se = SqueezeExcite(cout)

    def forward(self, x):
        return self.se(F.hardswish(self.bn(self.conv(x))))


class TinyNet(nn.Module):
    """MobileNet-like stages of four widths, then tokens through layer_norm and gelu."""

    def __init__(self):
        super().__init__()
        self.stages = nn.Sequential(MobileBlock(3, 8, 1), MobileBlock(8, 16, 2), MobileBlock(16, 24, 2),
                                    MobileBlock(24, 32, 2))
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.stages(x)
        tokens = F.relu6(x).flatten(2).transpose(1, 2)
        return self.head(F.gelu(self.norm(tokens))).mean(1)


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
def test_a_model_of_ruled_ops_matches_eager_and_torch_compile(channels_last):
    torch.manual_seed(0)
    model = TinyNet().eval()
    x = torch.randn(2, 3, 16, 16)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(model, backend=counting)
    with torch.no_grad():
        assert_same(model(x), compiled(x))
        assert_same(model(x), compiled(x))
    assert counters["fake_rules"]["applied"] > 0
    assert counting.graph_count == 1 and not counters["graph_break"]
    ours = counting.graphs[0]

    framegraph.reset()
    off = CountingBackend()
    with config.patch(fake_rules=False), torch.no_grad():
        assert_same(model(x), framegraph.compile(model, backend=off)(x))
    # the same graph, and every node's fake value the same as the kernels'
    assert str(off.graphs[0].graph) == str(ours.graph)
    for a, b in zip(ours.graph.nodes, off.graphs[0].graph.nodes):
        va, vb = a.meta.get("val"), b.meta.get("val")
        if isinstance(va, torch.Tensor):
            assert (va.shape, va.stride(), va.dtype) == (vb.shape, vb.stride(), vb.dtype), a.name

    torch._dynamo.reset()
    reference = CountingBackend()
    with torch.no_grad():
        torch.compile(model, backend=reference)(x)
    assert reference.graph_count == counting.graph_count == 1
    assert reference.op_count == counting.op_count


def _view_facts(out, inputs) -> tuple:
    """What a view's result must share with eager's: its metadata, and that it is a view of
    (and shares the storage of) the same input; and, apart, its grad_fn."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    facts = []
    for o in outs:
        base = next((j for j, t in enumerate(inputs) if o._base is t), None)
        storage = next((j for j, t in enumerate(inputs) if o.untyped_storage()._cdata == t.untyped_storage()._cdata),
                       None)
        facts.append((tuple(o.shape), o.stride(), o.storage_offset(), o.dtype, o.device, o.requires_grad,
                      o._is_view(), base, storage, o.is_contiguous()))
    return facts, [type(o.grad_fn).__name__ for o in outs]


# name -> (call on the tensor, what the tensor is made from: (n, c, s) -> sizes)
VIEW_CASES = {
    "view": (lambda x: x.view(x.shape[0], -1), lambda n, c, s: (n, c, s, s + 1)),
    "view_as_size": (lambda x: x.view(torch.Size([x.shape[0], -1])), lambda n, c, s: (n, c, s, s + 1)),
    "expand_as_size": (lambda x: x.expand(torch.Size([3, x.shape[1], 4])), lambda n, c, s: (1, c, 1)),
    "view_split_dim": (lambda x: x.view(x.shape[0], x.shape[1], 1, -1), lambda n, c, s: (n, c, s, s + 1)),
    "reshape_of_transposed": (lambda x: x.transpose(1, 2).reshape(x.shape[0], -1), lambda n, c, s: (n, c, s)),
    "flatten": (lambda x: x.flatten(1), lambda n, c, s: (n, c, s, s + 1)),
    "slice": (lambda x: x[:, 1:], lambda n, c, s: (n, c + 1, s)),
    "slice_step": (lambda x: x[..., ::2], lambda n, c, s: (n, c, 2 * s)),
    "select": (lambda x: x[:, 0], lambda n, c, s: (n, c, s)),
    "permute": (lambda x: x.permute(2, 0, 1), lambda n, c, s: (n, c, s)),
    "t": (lambda x: x.t(), lambda n, c, s: (n * s, c)),
    "transpose": (lambda x: x.transpose(0, 2), lambda n, c, s: (n, c, s)),
    "expand": (lambda x: x.expand(3, -1, 4), lambda n, c, s: (1, c, 1)),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda n, c, s: (n, c, s)),
    "squeeze": (lambda x: x.squeeze(), lambda n, c, s: (n, 1, c, s)),
    "squeeze_dim": (lambda x: x.squeeze(1), lambda n, c, s: (n, 1, c)),
    "squeeze_dims": (lambda x: x.squeeze((1, 3)), lambda n, c, s: (n, 1, c, 1)),
    "alias": (lambda x: torch.ops.aten.alias(x), lambda n, c, s: (n, c, s)),
    "as_strided": (lambda x: x.as_strided((2, 2), (1, 2), 1), lambda n, c, s: (n, c, s + 1)),
    "detach": (lambda x: x.detach(), lambda n, c, s: (n, c, s)),
    "split": (lambda x: x.split(2, dim=1), lambda n, c, s: (n, c + 2, s)),
    "split_sizes": (lambda x: x.split([1, x.shape[1] - 1], dim=1), lambda n, c, s: (n, c + 1, s)),
    "unbind": (lambda x: x.unbind(1), lambda n, c, s: (n, c, s)),
    "chunk": (lambda x: x.chunk(2, dim=-1), lambda n, c, s: (n, c, 2 * s)),
    "unfold": (lambda x: x.unfold(2, 2, 1), lambda n, c, s: (n, c, s + 1)),
    "diagonal": (lambda x: x.diagonal(0, 1, 2), lambda n, c, s: (n, c, s)),
    "unsafe_view": (lambda x: torch.ops.aten._unsafe_view(x, (-1,)), lambda n, c, s: (n, c, s)),
}
VIEW_LAYOUTS = {"contiguous": lambda t: t, "transposed": lambda t: t.transpose(0, -1).contiguous().transpose(0, -1),
                "sliced": lambda t: torch.cat([t, t], dim=-1)[..., ::2], "offset": lambda t: torch.cat([t, t])[t.shape[0]:]}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
@pytest.mark.parametrize("requires_grad", [False, True], ids=["plain", "requires_grad"])
@pytest.mark.parametrize("cache", [False, True], ids=["uncached", "cached"])
def test_views_are_eagers_views(name, requires_grad, cache):
    """Compared with eager's own views: a view's C++ kernel is eager's code. (FakeTensorMode's
    Python refs give some views other strides on dimensions of size 1: a transposed (1, 8, 1, 2)
    viewed as (1, 8, 1, -1) has strides (8, 1, 16, 8) in eager and (1, 1, 1, 8) there.)"""
    call, sizes_of = VIEW_CASES[name]
    reference = FakeTensorMode(shape_env=ShapeEnv())
    reference.cache_enabled = False
    ours = fake_mode(ShapeEnv())
    ours.cache_enabled = cache
    before = counters["fake_rules"]["views"]
    compared = 0
    for layout, lay in VIEW_LAYOUTS.items():
        for n, c, s in SHAPES:
            real = lay(torch.randn(sizes_of(n, c, s))).requires_grad_(requires_grad)
            results = []
            for mode in (None, reference, ours):
                value = real if mode is None else mode.from_tensor(real, static_shapes=True)
                with contextlib.nullcontext() if mode is None else mode, \
                        rules_applied(ours) if mode is ours else contextlib.nullcontext():
                    try:
                        results.append(_view_facts(call(value), [value]))
                    except (RuntimeError, ValueError):  # a view the layout does not allow
                        results.append(None)
            eager, kernel, got = results
            where = f"{name} {layout} {(n, c, s)}"
            if eager is None:
                # FakeTensorMode's refs allow some views eager refuses: there it stays FakeTensorMode's
                assert got == kernel, where
                continue
            assert got[0] == eager[0], where
            # reshape's grad_fn is decided above any dispatch mode, differently from eager's
            assert got[1] == kernel[1], where
            compared += 1
    assert compared >= len(SHAPES)
    assert counters["fake_rules"]["views"] > before, "no view was made by the kernel: the test compared nothing"


def test_every_view_is_covered_by_a_case():
    seen = set()

    class Spy(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, a=(), k=None):
            seen.add(func)
            return func(*a, **(k or {}))

    for call, sizes_of in VIEW_CASES.values():
        mode = FakeTensorMode()
        x = mode.from_tensor(torch.randn(sizes_of(2, 3, 4)))
        with mode, Spy():
            call(x)
    from framegraph.fake_rules import VIEWS
    assert VIEWS <= seen, VIEWS - seen


class WindowAttention(nn.Module):
    """Swin-like: windows cut out by view/permute, shifted with slices, heads split and merged."""

    def __init__(self, dim=8, heads=2, window=2):
        super().__init__()
        self.heads, self.window = heads, window
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        b, h, w, c = x.shape
        k = self.window
        x = torch.cat([x[:, 1:], x[:, :1]], dim=1)
        win = x.view(b, h // k, k, w // k, k, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, k * k, c)
        q, kk, v = self.qkv(win).reshape(win.shape[0], k * k, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ kk.transpose(-2, -1)).softmax(-1)
        out = (attn @ v).transpose(1, 2).reshape(win.shape[0], k * k, c)
        out = self.proj(out).view(b, h // k, w // k, k, k, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return out[..., :c // 2].sum() + out.select(1, 0).mean()


def test_a_model_of_views_matches_eager_and_torch_compile():
    torch.manual_seed(0)
    model = WindowAttention()
    x = torch.randn(2, 4, 6, 8)

    def output_and_grads(f, x):
        out = f(x)
        return out, torch.autograd.grad(out, [x, *model.parameters()])
    counting = gradients_like_eager(model, lambda: (x.clone().requires_grad_(),), output_and_grads)
    expected = model(x)
    assert counters["fake_rules"]["views"] > 0
    assert counting.graph_count == 1 and not counters["graph_break"]
    ours = counting.graphs[0]

    framegraph.reset()
    off = CountingBackend()
    with config.patch(fake_rules=False):
        assert_same(expected, framegraph.compile(model, backend=off)(x))
    assert str(off.graphs[0].graph) == str(ours.graph)
    for a, b in zip(ours.graph.nodes, off.graphs[0].graph.nodes):
        va, vb = a.meta.get("val"), b.meta.get("val")
        if isinstance(va, torch.Tensor):
            assert (va.shape, va.stride(), va.storage_offset(), va.dtype) == \
                (vb.shape, vb.stride(), vb.storage_offset(), vb.dtype), a.name

    torch._dynamo.reset()
    reference = CountingBackend()
    torch.compile(model, backend=reference)(x)
    assert reference.graph_count == counting.graph_count == 1
    assert reference.op_count == counting.op_count


def _r(*shape):
    return torch.randn(*shape)


# name -> (call, valid tensors, tensors of the same family that the kernel refuses)
REFUSED = {
    "mm_inner_sizes": (torch.mm, (_r(2, 3), _r(3, 5)), (_r(2, 3), _r(4, 5))),
    "addmm_inner_sizes": (torch.addmm, (_r(5), _r(2, 3), _r(3, 5)), (_r(5), _r(2, 3), _r(4, 5))),
    "addmm_bias": (torch.addmm, (_r(5), _r(2, 3), _r(3, 5)), (_r(6), _r(2, 3), _r(3, 5))),
    "bmm_batch": (torch.bmm, (_r(2, 2, 3), _r(2, 3, 5)), (_r(2, 2, 3), _r(3, 3, 5))),
    "add_sizes": (torch.add, (_r(2, 3), _r(2, 3)), (_r(2, 3), _r(2, 4))),
    "mul_broadcast": (torch.mul, (_r(2, 3, 4), _r(3, 1)), (_r(2, 3, 4), _r(5, 1))),
    "batch_norm_weight": (lambda x, w: F.batch_norm(x, torch.zeros(3), torch.ones(3), w, None, False),
                          (_r(2, 3, 4, 4), _r(3)), (_r(2, 3, 4, 4), _r(5))),
    "layer_norm_weight": (lambda x, w: F.layer_norm(x, (5,), w), (_r(2, 5), _r(5)), (_r(2, 5), _r(6))),
    # H*W given right for the 3x3 input, one off for the 5x5 one
    "group_norm_area": (lambda x: torch.ops.aten.native_group_norm(x, None, None, 2, 4, 9 if x.shape[2] == 3 else 26,
                                                                   2, 1e-5),
                        (_r(2, 4, 3, 3),), (_r(2, 4, 5, 5),)),
    "group_norm_groups": (lambda x: torch.ops.aten.native_group_norm(x, None, None, 2, x.shape[1], 9, 2, 1e-5),
                          (_r(2, 4, 3, 3),), (_r(2, 5, 3, 3),)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
@pytest.mark.parametrize("cache", [False, True], ids=["uncached", "cached"])
def test_a_call_the_kernel_refuses_is_refused_after_a_rule_was_learned(name, cache):
    """A rule is learned from a valid call; a call of its family that the kernel refuses
    (an equality of sizes broken, a product that does not match) still raises."""
    call, valid, invalid = REFUSED[name]
    reference = FakeTensorMode(shape_env=ShapeEnv())
    reference.cache_enabled = False
    ours = fake_mode(ShapeEnv())
    ours.cache_enabled = cache
    before = counters["fake_rules"]["learned"] + counters["fake_rules"]["applied"]
    with ours, rules_applied(ours):
        call(*(ours.from_tensor(t, static_shapes=True) for t in valid))
        call(*(ours.from_tensor(t, static_shapes=True) for t in valid))
    assert counters["fake_rules"]["learned"] + counters["fake_rules"]["applied"] > before
    errors = []
    for mode, rules in ((reference, False), (ours, True)):
        with mode, (rules_applied(mode) if rules else contextlib.nullcontext()):
            with pytest.raises(Exception) as raised:
                call(*(mode.from_tensor(t, static_shapes=True) for t in invalid))
        errors.append(type(raised.value))
    assert errors[0] == errors[1]
