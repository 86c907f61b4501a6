"""Fake-tensor propagation for the few ops whose fake kernels are slow Python decompositions.

FakeTensorMode caches an op's fake result per exact input metadata, so a model with many sizes
(a CNN's stages, a MobileNet's widths) misses on most calls, and a miss of an op whose meta
kernel is a Python decomposition runs that decomposition op by op: about 7 ms for an eval
batch_norm, 4 ms for layer_norm, 3.6 ms for hardswish, 2.5 ms for addmm, against 0.3 ms for an
op with a C++ meta kernel. For those ops the outputs' metadata is a size-generic function of
the inputs': batch_norm's output is laid out as its input, layer_norm's mean is its input with
the normalized dimensions set to 1, addmm's output is (rows of mat1, columns of mat2).

A mode made by `fake_mode()` learns that function instead of writing it down. A *family* is
everything about a call's arguments except the values of its sizes: the same op and
non-tensor arguments, tensors of the same dtypes, devices, ranks and layouts, and the same
sizes equal to 1. The first call of a family runs the op's real fake kernel, and each output is
described by a rule: tensor argument j itself, for an op in place; or each output size named by
the position of an equal input size (or 0 or 1), laid out contiguous or channels_last. When
several input sizes were equal to an output size, the rule holds for a later call only while
they all still are (one of them is where the kernel took the size from), so a family keeps a
few rules, one per such pattern; a family with an output no rule describes keeps the kernel.
Anything outside the families (a symbolic size, an irregular layout, an empty
dimension, a constant tensor, a batch_norm that updates running stats) takes
FakeTensorMode's own path, and so does everything outside framegraph's own propagation
(`OutputGraph._record`): a backend reusing the mode (AOTAutograd) runs the real kernels.
FakeTensorMode's cache is process-wide, so a result a rule made can still be handed to another
mode: one more reason a rule must reproduce the kernel's metadata exactly
(tests/test_fake_rules.py checks the rules' results against the kernels').
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable, NamedTuple

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._mode_utils import no_dispatch

from . import config
from .counters import counters

aten = torch.ops.aten


def _eval_batch_norm(args: tuple, kwargs: dict) -> bool:
    # training=True writes running_mean and running_var (their schema does not say so): a rule
    # would make the outputs but not the writes
    return len(args) >= 6 and args[5] is False


class Op(NamedTuple):
    check: Callable[[tuple, dict], bool] | None = None  # what the call must also meet
    size_args: tuple[int, ...] = ()  # positions of int or int-list arguments that are sizes


OPS: dict[Any, Op] = {
    aten.native_batch_norm.default: Op(_eval_batch_norm),
    aten._native_batch_norm_legit_no_training.default: Op(),
    aten.native_layer_norm.default: Op(size_args=(1,)),  # normalized_shape
    aten.native_group_norm.default: Op(size_args=(3, 4, 5, 6)),  # N, C, H*W, groups
    aten.addmm.default: Op(),
    aten.relu.default: Op(),
    aten.hardtanh.default: Op(),
    aten.gelu.default: Op(),
    aten.hardswish.default: Op(),
    aten.hardsigmoid.default: Op(),
    # in place (nn.ReLU(inplace=True) and the like): the result is the input, whose version
    # the autograd layer above bumps whichever way the fake result is made
    aten.relu_.default: Op(),
    aten.hardtanh_.default: Op(),
    aten.hardswish_.default: Op(),
    aten.hardsigmoid_.default: Op(),
}

# family -> its learned rules (see _learn), or None: an output no rule describes
_LEARNED: dict[tuple, tuple | None] = {}
_ENTRIES = 4  # rules kept per family, each for its own pattern of equal sizes


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


def _strides(layout: str, sizes: tuple) -> tuple:
    return _contiguous(sizes) if layout == "c" else _channels_last(sizes)


def _ints(value: Any) -> bool:
    return type(value) is int or (type(value) in (list, tuple) and all(type(v) is int for v in value))


def _family(func, op: Op, args: tuple, kwargs: dict, mode: FakeTensorMode) -> tuple | None:
    """(family key, tensor arguments, sizes) of a call, or None outside the families.

    `sizes` is every tensor argument's sizes and every size argument's values, in order. The
    key holds everything about the arguments but those values, and which of them are 1."""
    parts: list = [func, tuple(sorted(kwargs))]
    tensors: list = []
    sizes: list = []
    for position, value in enumerate([*args, *(kwargs[name] for name in sorted(kwargs))]):
        if isinstance(value, torch.Tensor):
            if (type(value) is not FakeTensor or value.fake_mode is not mode or value.constant is not None
                    or value.layout != torch.strided or value.storage_offset() != 0):
                return None
            shape, strides = tuple(value.shape), value.stride()
            if not all(type(s) is int and s > 0 for s in shape) or not all(type(s) is int for s in strides):
                return None
            layout = _layout(shape, strides)
            if layout is None:
                return None
            parts.append(("T", value.dtype, value.device, layout, len(shape)))
            tensors.append(value)
            sizes += shape
        elif position in op.size_args and _ints(value):
            parts.append(("S", len(value) if type(value) is not int else None))
            sizes += [value] if type(value) is int else value
        elif value is None or type(value) in (bool, int, float, str):
            parts.append((type(value), value))
        elif type(value) in (list, tuple) and _ints(value):
            parts.append(("L", tuple(value)))
        else:
            return None
    if not all(s > 0 for s in sizes):
        return None
    parts.append(tuple(s == 1 for s in sizes))
    return tuple(parts), tensors, sizes


def _rule_for(out: Any, tensors: list, sizes: list) -> tuple | None:
    """('same', j): out is tensor argument j; or (size refs, layout, dtype, device), where each
    ref is the position in `sizes` of an equal input size, or ('k', 0 or 1); None: no rule."""
    for j, t in enumerate(tensors):
        if out is t:
            return ("same", j)
    if type(out) is not FakeTensor or out._is_view() or out.storage_offset() != 0:
        return None
    shape = tuple(out.shape)
    layout = _layout(shape, out.stride())
    if layout is None or not all(type(s) is int for s in shape):
        return None
    refs = []
    for s in shape:
        if s in (0, 1):
            refs.append(("k", s))
        elif s in sizes:
            refs.append(sizes.index(s))
        else:
            return None
    return tuple(refs), layout, out.dtype, out.device


def _learn(result: Any, tensors: list, sizes: list) -> tuple | None:
    """(output rules, the result's container type, classes), or None: no rule fits. A rule
    names each output size by the first position of an equal input size; `classes` are all
    the positions that held each such size, which must still be equal in a call the rule
    answers (when they are, the position the kernel takes its size from is among them, and
    it holds what the named one holds)."""
    container = type(result) if isinstance(result, (tuple, list)) else None  # a decomposition's namedtuple too
    rules = tuple(_rule_for(out, tensors, sizes) for out in (result if container is not None else (result,)))
    if any(rule is None for rule in rules):
        return None
    named = {ref for rule in rules if rule[0] != "same" for ref in rule[0] if type(ref) is int}
    classes = tuple(tuple(p for p, s in enumerate(sizes) if s == sizes[ref]) for ref in sorted(named))
    return rules, container, tuple(c for c in classes if len(c) > 1)


def _holds(classes: tuple, sizes: list) -> bool:
    return all(sizes[p] == sizes[c[0]] for c in classes for p in c)


def _make(mode: FakeTensorMode, learned: tuple, tensors: list, sizes: list) -> Any:
    rules, container, _ = learned
    outputs = []
    for rule in rules:
        if rule[0] == "same":
            outputs.append(tensors[rule[1]])
            continue
        refs, layout, dtype, device = rule
        shape = tuple(ref[1] if type(ref) is tuple else sizes[ref] for ref in refs)
        # what `torch.empty_strided(..., device=device)` under the mode makes, without
        # dispatching it through the mode
        with no_dispatch():
            meta = torch.empty_strided(shape, _strides(layout, shape), dtype=dtype, device="meta")
        outputs.append(FakeTensor(mode, meta, device))
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
        op = OPS[func]
        found = None if op.check is not None and not op.check(args, kwargs) else _family(func, op, args, kwargs, mode)
        if found is None:
            return FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
        key, tensors, sizes = found
        entries = _LEARNED.get(key, ())
        if entries is None:  # refused: an output no rule describes
            return FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
        for learned in entries:
            if _holds(learned[2], sizes):
                counters["fake_rules"]["applied"] += 1
                return _make(mode, learned, tensors, sizes)
        result = FakeTensorMode._dispatch_impl(mode, func, types, args, kwargs)
        learned = _learn(result, tensors, sizes)
        if learned is None:
            _LEARNED[key] = None
            counters["fake_rules"]["refused"] += 1
        elif len(entries) < _ENTRIES:
            _LEARNED[key] = (*entries, learned)
            counters["fake_rules"]["learned"] += 1
        return result


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
