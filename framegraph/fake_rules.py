"""Fake-tensor propagation for the few ops whose fake kernels are slow Python decompositions.

FakeTensorMode caches an op's fake result per exact input metadata, so a model with many sizes
(a CNN's stages, a MobileNet's widths) misses on most calls, and a miss of an op whose meta
kernel is a Python decomposition runs that decomposition op by op: about 7 ms for an eval
batch_norm, 4 ms for layer_norm, 3.6 ms for hardswish, against 0.3 ms for an op with a C++
meta kernel. For those ops the outputs' metadata is a size-generic function of the inputs':
batch_norm's output is laid out as its input, layer_norm's mean is its input with the
normalized dimensions set to 1.

A mode made by `fake_mode()` learns that function instead of writing it down. The first call
in a *family* (the same op; the same non-tensor arguments, except that a size list equal to
the first tensor's trailing sizes stands for "its trailing sizes"; tensors of the same dtypes,
devices, ranks, layouts and size-1 dimensions) runs the op's real fake kernel. Each output is
then matched against a few rules (tensor argument j itself, for an op in place; laid out as
argument j; argument j with its last k dimensions set to 1, contiguous; empty), and only a family whose every output one rule
reproduces exactly is answered by rule afterwards. Anything outside the families (a symbolic
size, an irregular layout, an empty dimension, a constant tensor, a batch_norm that updates
running stats) takes FakeTensorMode's own path, and so does everything outside framegraph's
own propagation (`OutputGraph._record`): a backend reusing the mode (AOTAutograd) runs the
real kernels. FakeTensorMode's cache is process-wide, so a result a rule made can still be
handed to another mode: one more reason a rule must reproduce the kernel's metadata exactly
(tests/test_fake_rules.py checks every family it can make against the kernels).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from . import config
from .counters import counters

aten = torch.ops.aten


def _eval_batch_norm(args: tuple, kwargs: dict) -> bool:
    # training=True writes running_mean and running_var (their schema does not say so): a rule
    # would make the outputs but not the writes
    return len(args) >= 6 and args[5] is False


# op -> predicate on (args, kwargs) the call must also meet, or None
OPS: dict[Any, Callable[[tuple, dict], bool] | None] = {
    aten.native_batch_norm.default: _eval_batch_norm,
    aten._native_batch_norm_legit_no_training.default: None,
    aten.native_layer_norm.default: None,
    aten.relu.default: None,
    aten.hardtanh.default: None,
    aten.gelu.default: None,
    aten.hardswish.default: None,
    aten.hardsigmoid.default: None,
    # in place (nn.ReLU(inplace=True) and the like): the result is the input, whose version
    # the autograd layer above bumps whichever way the fake result is made
    aten.relu_.default: None,
    aten.hardtanh_.default: None,
    aten.hardswish_.default: None,
    aten.hardsigmoid_.default: None,
}

_NOT_YET = object()
# family -> tuple of output rules and the result's container type, or None (no rule fits)
_LEARNED: dict[tuple, tuple | None] = {}


def _contiguous(sizes: tuple) -> tuple:
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _channels_last(sizes: tuple) -> tuple:
    n, c, h, w = sizes
    return (h * w * c, 1, w * c, c)


def _layout(sizes: tuple, strides: tuple) -> str | None:
    """'c' for exactly the contiguous strides, 'cl' for exactly channels_last's, else None."""
    if strides == _contiguous(sizes):
        return "c"
    if len(sizes) == 4 and strides == _channels_last(sizes):
        return "cl"
    return None


def _tensor_part(t: FakeTensor, mode: FakeTensorMode) -> tuple | None:
    if type(t) is not FakeTensor or t.fake_mode is not mode or t.constant is not None or t.layout != torch.strided:
        return None
    sizes, strides = tuple(t.shape), t.stride()
    if not all(type(s) is int and s > 0 for s in sizes) or not all(type(s) is int for s in strides):
        return None
    layout = _layout(sizes, strides)
    if layout is None or t.storage_offset() != 0:
        return None
    return ("T", t.dtype, t.device, layout, tuple(s == 1 for s in sizes))


def _part(value: Any, mode: FakeTensorMode, first: torch.Tensor | None) -> tuple | None:
    if isinstance(value, torch.Tensor):
        return _tensor_part(value, mode)
    if value is None or type(value) in (bool, int, float, str):
        return (type(value), value)
    if type(value) in (list, tuple) and all(type(v) is int for v in value):
        if first is not None and 0 < len(value) <= first.dim() and tuple(first.shape[-len(value):]) == tuple(value):
            return ("trailing", len(value))  # layer_norm's normalized_shape: one family for every width
        return ("L", tuple(value))
    return None


def _family(func, args: tuple, kwargs: dict, mode: FakeTensorMode) -> tuple[tuple, list] | None:
    """The family key of a call and its tensor arguments in order; None outside the families."""
    values = [*args, *(kwargs[name] for name in sorted(kwargs))]
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    first = tensors[0] if tensors else None
    parts = (func, tuple(sorted(kwargs)), *(_part(v, mode, first) for v in values))
    if any(part is None for part in parts):
        return None
    return parts, tensors


def _rule_for(out: Any, tensors: list) -> tuple | None:
    """('same', j) | ('like', j) | ('reduce', j, k) | ('empty',) with the output's dtype and
    device, the first that reproduces out from the tensor arguments; None if none does."""
    for j, t in enumerate(tensors):
        if out is t:
            return ("same", j, out.dtype, out.device)
    if type(out) is not FakeTensor or out._is_view() or out.storage_offset() != 0:
        return None
    sizes, strides = tuple(out.shape), out.stride()
    facts = (out.dtype, out.device)
    for j, t in enumerate(tensors):
        if tuple(t.shape) == sizes and t.stride() == strides:
            return ("like", j) + facts
    if strides == _contiguous(sizes):
        for j, t in enumerate(tensors):
            shape = tuple(t.shape)
            for k in range(1, len(shape) + 1):
                if shape[:-k] + (1,) * k == sizes:
                    return ("reduce", j, k) + facts
        if sizes == (0,):
            return ("empty",) + facts
    return None


def _learn(result: Any, tensors: list) -> tuple | None:
    container = type(result) if isinstance(result, (tuple, list)) else None  # a decomposition's namedtuple too
    rules = tuple(_rule_for(out, tensors) for out in (result if container is not None else (result,)))
    if any(rule is None for rule in rules):
        return None
    return rules, container


def _make(mode: FakeTensorMode, learned: tuple, tensors: list) -> Any:
    rules, container = learned
    outputs = []
    with mode:
        for rule in rules:
            kind, dtype, device = rule[0], rule[-2], rule[-1]
            if kind == "same":
                outputs.append(tensors[rule[1]])
                continue
            if kind == "like":
                t = tensors[rule[1]]
                sizes, strides = tuple(t.shape), t.stride()
            elif kind == "reduce":
                shape = tuple(tensors[rule[1]].shape)
                sizes = shape[:-rule[2]] + (1,) * rule[2]
                strides = _contiguous(sizes)
            else:
                sizes, strides = (0,), (1,)
            outputs.append(torch.empty_strided(sizes, strides, dtype=dtype, device=device))
    if container is None:
        return outputs[0]
    return container(*outputs) if hasattr(container, "_fields") else container(outputs)


class _Rules:
    """What a mode's `_dispatch_impl` becomes: OPS's learned families by rule while `on`."""

    __slots__ = ("mode", "on")

    def __init__(self, mode: FakeTensorMode) -> None:
        self.mode = weakref.ref(mode)  # the mode holds this object: no cycle through it
        self.on = False

    def dispatch_impl(self, func, types, args, kwargs):
        mode = self.mode()
        if not self.on or func not in OPS:
            return FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
        check = OPS[func]
        found = None if check is not None and not check(args, kwargs) else _family(func, args, kwargs, mode)
        if found is None:
            return FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
        key, tensors = found
        learned = _LEARNED.get(key, _NOT_YET)
        if learned is _NOT_YET:
            result = FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
            _LEARNED[key] = _learn(result, tensors)
            counters["fake_rules"]["learned" if _LEARNED[key] is not None else "refused"] += 1
            return result
        if learned is None:
            return FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
        counters["fake_rules"]["applied"] += 1
        return _make(mode, learned, tensors)


def fake_mode(shape_env) -> FakeTensorMode:
    """A FakeTensorMode that `rules_applied` can turn the rules on for. The rules sit on the
    instance (its `_dispatch_impl`, called on every cache miss): the class stays FakeTensorMode
    itself, the exact type higher-order operators look their fake implementations up by."""
    mode = FakeTensorMode(shape_env=shape_env)
    rules = _Rules(mode)
    mode._framegraph_rules = rules
    mode._dispatch_impl = rules.dispatch_impl
    return mode


@contextlib.contextmanager
def rules_applied(mode: FakeTensorMode):
    """Within: a mode made by `fake_mode` answers learned families by rule (a no-op for any
    other mode, or with `config.fake_rules` off)."""
    rules = getattr(mode, "_framegraph_rules", None)
    if rules is None or rules.on or not config.fake_rules:
        yield
        return
    rules.on = True
    try:
        yield
    finally:
        rules.on = False
