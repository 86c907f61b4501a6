"""Faster fake-tensor propagation for the ops whose fake kernels are slow: Python
decompositions, and views.

FakeTensorMode caches an op's fake result per exact input metadata, so a model with many sizes
(a CNN's stages, a MobileNet's widths, a Swin's windows) misses on most calls, and a miss of an
op whose fake kernel is a Python decomposition runs that decomposition op by op, each inner op
through FakeTensorMode again: about 5 ms for an eval batch_norm, 4.7 ms for layer_norm, 3.6 ms
for hardswish, 3.4 ms for addmm, 0.3-1 ms for a view or a slice.

**Learned rules** (OPS). For those ops the outputs' metadata is a size-generic function of the
inputs': batch_norm's output is laid out as its input, layer_norm's mean is its input with the
normalized dimensions set to 1, addmm's output is (rows of mat1, columns of mat2). A mode made
by `fake_mode()` learns that function instead of writing it down. A *family* is everything
about a call's arguments except the values of its sizes: the same op and non-tensor arguments,
tensors of the same dtypes, devices, ranks and dense layouts (the order of their dimensions in
memory: contiguous, channels_last, transposed...), and the same sizes equal to 1. The first
call of a family runs the op's kernel on meta tensors standing for the fake ones (the same
kernel without FakeTensorMode around each inner op: 0.4-1 ms), and each output is described by
a rule: tensor argument j itself, for an op in place; or each output size named by the position
of an equal input size (or 0 or 1), in a dense layout. When several input sizes were equal to an
output size, the rule holds for a later call only while they all still are (one of them is
where the kernel took the size from), so a family keeps a few rules, one per such pattern; a
family with an output no rule describes keeps FakeTensorMode's path. Anything outside the
families (a symbolic size, a layout that is not dense, an empty dimension, a constant tensor, a
batch_norm that updates running stats) takes FakeTensorMode's own path.

**Views** (VIEWS). A view's metadata is computed by its C++ kernel, the same code for every
device. With static sizes it is run directly on the fake input, as FakeTensorMode runs an op
with a C++ meta kernel: the output shares the input's storage, with the strides eager gives.

**Direct ops** (DIRECT). A convolution's output sizes are arithmetic, not equalities, and its
memory format is whatever backend eager would pick; `empty` is asked for by every batch_norm.
Both are answered by FakeTensorMode's own steps, less its argument normalisation and cache key
(a convolution: 80 µs against 450). So is `x.contiguous()` of a view no family takes (one
that is not dense): a new contiguous tensor of its sizes.

**Dispatch.** While the rules are on, the mode's `__torch_dispatch__` answers device, size and
stride queries, views, direct ops and learned rules before FakeTensorMode's own, whose wrappers
cost 15 µs a call even for a device query (C++ asks one per fake argument of most calls).

Everything outside framegraph's own propagation (`OutputGraph._record`) takes FakeTensorMode's
path: a backend reusing the mode (AOTAutograd) runs the real kernels. FakeTensorMode's cache is
process-wide, so a result made here can still be handed to another mode: one more reason it
must reproduce the kernel's metadata exactly (tests/test_fake_rules.py checks every learned
result against FakeTensorMode's own, and every view against eager's).
"""

from __future__ import annotations

import contextlib
import math
import types
import weakref
from typing import Any, Callable, NamedTuple

import torch
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, in_kernel_invocation_manager
from torch.utils._mode_utils import no_dispatch

from . import config
from .counters import counters

aten = torch.ops.aten


def _consistent_group_norm(args: tuple, kwargs: dict) -> bool:
    # its sizes are arguments too: N, C, H*W (a product, not an equality) and groups dividing C
    if len(args) != 8 or kwargs or not isinstance(args[0], torch.Tensor) or not _ints(list(args[3:7])):
        return False
    shape, (n, c, hw, groups) = args[0].shape, args[3:7]
    if len(shape) < 2 or not all(type(s) is int for s in shape) or groups <= 0:
        return False
    return shape[0] == n and shape[1] == c and math.prod(shape[2:]) == hw and c % groups == 0


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
    aten.native_group_norm.default: Op(_consistent_group_norm, size_args=(3, 4, 5, 6)),  # N, C, H*W, groups
    aten.addmm.default: Op(),
    aten.mm.default: Op(),
    aten.bmm.default: Op(),
    # between tensors, or a tensor and a Python number (which is part of the family); the
    # output takes each dimension's non-1 size, in the layout the inputs' layouts decide
    aten.add.Tensor: Op(),
    aten.sub.Tensor: Op(),
    aten.mul.Tensor: Op(),
    aten.div.Tensor: Op(),
    aten.clone.default: Op(),
    aten._softmax.default: Op(),
    aten.relu.default: Op(),
    aten.hardtanh.default: Op(),
    aten.gelu.default: Op(),
    aten.hardswish.default: Op(),
    aten.hardsigmoid.default: Op(),
    # in place (nn.ReLU(inplace=True) and the like): the result is the input, whose version
    # the autograd layer above bumps whichever way the fake result is made
    aten.relu_.default: Op(),
    aten.add_.Tensor: Op(),  # a residual sum, `out += identity`
    aten.sub_.Tensor: Op(),
    aten.mul_.Tensor: Op(),
    aten.div_.Tensor: Op(),
    aten.hardtanh_.default: Op(),
    aten.hardswish_.default: Op(),
    aten.hardsigmoid_.default: Op(),
}

# family -> its learned rules (see _learn), or None: an output no rule describes
_LEARNED: dict[tuple, tuple | None] = {}
_ENTRIES = 4  # rules kept per family, each for its own pattern of equal sizes


def _dense(sizes: tuple, order: tuple) -> tuple:
    """The strides of a dense tensor whose dimensions, outermost first, are `order`."""
    strides, step = [0] * len(sizes), 1
    for d in reversed(order):
        strides[d] = step
        step *= sizes[d]
    return tuple(strides)


def _layout(sizes: tuple, strides: tuple) -> tuple | None:
    """The order of dimensions (outermost first) of a dense tensor with exactly these strides:
    (0, 1, ...) contiguous, (0, 2, 3, 1) channels_last, (1, 0) a transposed matrix; else None.
    A size-1 dimension's stride counts too: kernels set them, and a rule must reproduce them.

    Within a family (the same dimensions of size 1) the strides name one layout for every
    size: the dimensions of size > 1 have distinct strides, so their order is fixed, and a
    dimension of size 1 only takes its stride from where it sits among them."""
    order = tuple(sorted(range(len(sizes)), key=lambda d: -strides[d]))  # stable: ties keep dim order
    return order if _dense(sizes, order) == strides else None


_SEQUENCES = (list, tuple, torch.Size)  # sizes come as any of them
# non-tensor arguments a family is keyed by the value of (`clone(x, memory_format=...)`)
_PLAIN_VALUES = (bool, int, float, str, torch.memory_format, torch.dtype, torch.layout)


def _ints(value: Any) -> bool:
    return type(value) is int or (type(value) in _SEQUENCES and all(type(v) is int for v in value))


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
        elif value is None or type(value) in _PLAIN_VALUES:
            parts.append((type(value), value))
        elif type(value) in _SEQUENCES and _ints(value):
            parts.append(("L", tuple(value)))
        else:
            return None
    if not all(s > 0 for s in sizes):
        return None
    parts.append(tuple(s == 1 for s in sizes))
    return tuple(parts), tensors, sizes


def _rule_for(out: Any, tensors: list, sizes: list, device: torch.device) -> tuple | None:
    """('same', j): out is tensor argument j; or (size refs, layout, dtype, device), where each
    ref is the position in `sizes` of an equal input size, or ('k', 0 or 1); None: no rule."""
    for j, t in enumerate(tensors):
        if out is t:
            return ("same", j)
    if not isinstance(out, torch.Tensor) or out._is_view() or out.storage_offset() != 0:
        return None
    shape, strides = tuple(out.shape), out.stride()
    if not all(type(s) is int for s in (*shape, *strides)):
        return None
    layout = _layout(shape, strides)
    if layout is None:
        return None
    refs = []
    for s in shape:
        if s in (0, 1):
            refs.append(("k", s))
        elif s in sizes:
            refs.append(sizes.index(s))
        else:
            return None
    return tuple(refs), layout, out.dtype, device


def _learn(result: Any, tensors: list, sizes: list, device: torch.device | None = None) -> tuple | None:
    """(output rules, the result's container type, classes), or None: no rule fits. A rule
    names each output size by the first position of an equal input size. `classes` group
    the positions of the input sizes that were equal, which must all still be equal in a call
    the rule answers:
    - the kernel took each output size from one position of its class, so the named one
      still holds what it holds;
    - the call the rule was learned from was valid, and what makes such a call valid is sizes
      being equal (mm's inner sizes, a weight's and the channels, broadcast sizes), so a call
      that breaks an equality goes to the kernel, which raises its own error.
    `device`: the outputs' device, if not their own (they are the meta kernel's)."""
    container = type(result) if isinstance(result, (tuple, list)) else None  # a decomposition's namedtuple too
    outs = result if container is not None else (result,)
    rules = tuple(_rule_for(out, tensors, sizes, device if device is not None else getattr(out, "device", None))
                  for out in outs)
    if any(rule is None for rule in rules):
        return None
    equal: dict[int, list[int]] = {}
    for position, size in enumerate(sizes):
        if size != 1:  # sizes of 1 are the family's
            equal.setdefault(size, []).append(position)
    return rules, container, tuple(tuple(c) for c in equal.values() if len(c) > 1)


def _on_meta(func, args: tuple, kwargs: dict, tensors: list) -> tuple | None:
    """(the op's result on meta tensors standing for the fake ones, those meta tensors, the
    device the fake results are on), or None. The meta kernel is the fake kernel without
    FakeTensorMode around each of its inner ops: an eval batch_norm's decomposition takes
    about 0.9 ms on meta tensors against 5 ms on fake ones."""
    devices = {t.device for t in tensors}
    if len(devices) != 1:
        return None  # which device the kernel's outputs go to is FakeTensorMode's to say
    with no_dispatch():
        metas = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in tensors]
        swap = {id(t): m for t, m in zip(tensors, metas)}  # by identity: an argument passed twice stays one
        try:
            result = func(*[swap.get(id(a), a) for a in args], **{k: swap.get(id(v), v) for k, v in kwargs.items()})
        except Exception:  # the call's error is the fake kernel's to raise, in its own words
            return None
    return result, metas, devices.pop()


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
            meta = torch.empty_strided(shape, _dense(shape, layout), dtype=dtype, device="meta")
        outputs.append(FakeTensor(mode, meta, device))
    if container is None:
        return outputs[0]
    return container(*outputs) if hasattr(container, "_fields") else container(outputs)


VIEWS = {
    aten.view.default, aten._unsafe_view.default, aten.slice.Tensor, aten.select.int, aten.permute.default,
    aten.t.default, aten.transpose.int, aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim,
    aten.squeeze.dims, aten.squeeze.default, aten.as_strided.default, aten.alias.default, aten.detach.default,
    aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int, aten.unfold.default, aten.diagonal.default,
}


def _static_fakes(mode: FakeTensorMode, tensors: tuple) -> bool:
    """Fake tensors of this mode, not constants, with static sizes, strides and offset: what
    the views and direct ops can run their kernels on plainly."""
    return all(type(t) is FakeTensor and t.fake_mode is mode and t.constant is None
               and all(type(s) is int for s in (*t.shape, *t.stride(), t.storage_offset())) for t in tensors)


def _view(mode: FakeTensorMode, func, args: tuple, kwargs: dict) -> Any:
    """The view's result made by its C++ kernel on the fake input itself (FakeTensorMode's
    kernel invocation: fake tensors act as the meta tensors they hold), or None: a symbolic
    size, a constant, an argument the kernel cannot take plainly."""
    device = None
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            if not _static_fakes(mode, (value,)):
                return None
            device = value.device
        elif not (value is None or type(value) in (bool, int) or _ints(value)):
            return None
    if device is None:
        return None
    try:
        with in_kernel_invocation_manager(mode):
            out = func(*args, **kwargs)
    except Exception:  # an invalid view: FakeTensorMode's path raises its own error for it
        return None
    if isinstance(out, (list, tuple)):
        return type(out)(FakeTensor(mode, o, device) for o in out)
    return FakeTensor(mode, out, device)


def _convolution(mode: FakeTensorMode, func, args: tuple, kwargs: dict) -> Any:
    """FakeTensorMode's own convolution (its fake implementation, in the same steps) for static
    sizes, less its argument normalisation and cache key: 80 µs against 450. The output's
    memory format is the one the backend eager would pick (which can depend on the sizes: a
    batch of 16, an input of over 20480 elements), so it is asked for at every call."""
    if kwargs or len(args) != 9:
        return None
    x, weight, bias = args[:3]
    tensors = (x, weight) if bias is None else (x, weight, bias)
    # (a dtype mismatch is the kernel's error to raise; a 1-d convolution's input is reshaped
    # for the backend choice there)
    if not _static_fakes(mode, tensors) or x.dtype != weight.dtype or weight.dim() == 3:
        return None
    stride, padding, dilation, transposed, output_padding, groups = args[3:]
    choice = dict(stride=stride, padding=padding, dilation=dilation, transposed=transposed,
                  output_padding=output_padding, groups=groups, bias=bias)
    if bias is None:
        choice["bias_sizes"] = None
    try:
        with mode:  # the tensors report their fake device to the backend choice
            backend = torch._C._select_conv_backend(x, weight, **choice)
            memory_format = torch._C._conv_determine_backend_memory_format(x, weight, backend)
        with in_kernel_invocation_manager(mode):
            out = func(*args).to(memory_format=memory_format)
    except Exception:  # an invalid call: FakeTensorMode's path raises its own error for it
        return None
    return FakeTensor(mode, out, x.fake_device)


_EMPTY_OPTIONS = {"dtype", "layout", "device", "pin_memory", "memory_format"}


def _empty(mode: FakeTensorMode, func, args: tuple, kwargs: dict) -> Any:
    """FakeTensorMode's constructor path for `empty` with static sizes (a normalisation and a
    cache lookup less): the meta kernel's tensor, on the device asked for (cpu by default)."""
    if (len(args) != 1 or not _ints(args[0]) or not kwargs.keys() <= _EMPTY_OPTIONS
            or kwargs.get("layout") not in (None, torch.strided) or kwargs.get("pin_memory")):
        return None
    device = kwargs.get("device")
    try:
        with in_kernel_invocation_manager(mode):
            out = func(args[0], **{**kwargs, "device": torch.device("meta")})
    except Exception:
        return None
    return FakeTensor(mode, out, device if device is not None else torch.device("cpu"))


def _contiguous_clone(mode: FakeTensorMode, func, args: tuple, kwargs: dict) -> Any:
    """`x.contiguous()` of a view that is not dense (a slice of a fused qkv, a window of a
    padded map), which no family takes: a new contiguous tensor of x's sizes, whatever its
    strides. Any other clone is left to the learned rules."""
    if len(args) != 1 or kwargs != {"memory_format": torch.contiguous_format} or not _static_fakes(mode, args):
        return None
    x = args[0]
    with no_dispatch():
        meta = torch.empty(x.shape, dtype=x.dtype, device="meta")
    return FakeTensor(mode, meta, x.fake_device)


# ops answered by FakeTensorMode's own steps, less its generic costs (None: not this call)
DIRECT = {
    aten.convolution.default: _convolution,
    aten.empty.memory_format: _empty,
    aten.clone.default: _contiguous_clone,
}

# prim.device, size, stride, storage_offset: what C++ asks a fake tensor for, once per fake
# argument of most calls (five for a batch_norm)
_QUERIES = fake_tensor._DISPATCH_META_HANDLERS


def _dispatch(mode: FakeTensorMode, func, types_, args=(), kwargs=None):
    """The mode's `__torch_dispatch__` while the rules are on. FakeTensorMode's own wraps each
    call in a statistics counter, a TorchDynamo-disabling wrapper and a logging context
    (15 µs even for a device query); what is answered here needs none of them."""
    query = _QUERIES.get(func)
    if query is not None:
        return query(args)
    kwargs = kwargs or {}
    made = _known(mode, func, args, kwargs)
    if made is not None:
        return made
    return FakeTensorMode.__torch_dispatch__(mode, func, types_, args, kwargs)


def _known(mode: FakeTensorMode, func, args: tuple, kwargs: dict) -> Any:
    """The result of a view, of a DIRECT op, or of a call a learned rule answers; else None."""
    if func in VIEWS:
        view = _view(mode, func, args, kwargs)
        if view is not None:
            counters["fake_rules"]["views"] += 1
        return view
    direct = DIRECT.get(func)
    if direct is not None:
        made = direct(mode, func, args, kwargs)
        if made is not None:
            counters["fake_rules"]["direct"] += 1
            return made
    found = _family_of(mode, func, args, kwargs)
    if found is None:
        return None
    key, tensors, sizes = found
    for learned in _LEARNED.get(key, None) or ():
        if _holds(learned[2], sizes):
            counters["fake_rules"]["applied"] += 1
            return _make(mode, learned, tensors, sizes)
    return None


class _Rules:
    """A mode's rules: whether they are on, and its `_dispatch_impl` (FakeTensorMode's, called
    on each cache miss), which learns a family's rule while they are."""

    __slots__ = ("mode", "on")

    def __init__(self, mode: FakeTensorMode) -> None:
        self.mode = weakref.ref(mode)  # the mode holds this object: no cycle through it
        self.on = False

    def dispatch_impl(self, func, types_, args, kwargs):
        mode = self.mode()
        found = _family_of(mode, func, args, kwargs) if self.on else None
        if found is None:
            return FakeTensorMode._dispatch_impl(mode, func, types_, args, kwargs)
        key, tensors, sizes = found
        entries = _LEARNED.get(key, ())
        if entries is None:  # refused: an output no rule describes
            return FakeTensorMode._dispatch_impl(mode, func, types_, args, kwargs)
        on_meta = _on_meta(func, args, kwargs, tensors)
        if on_meta is not None:
            result, metas, device = on_meta
            learned = _learn(result, metas, sizes, device)
            if learned is not None:
                self._keep(key, entries, learned)
                return _make(mode, learned, tensors, sizes)
        result = FakeTensorMode._dispatch_impl(mode, func, types_, args, kwargs)
        learned = _learn(result, tensors, sizes)
        if learned is None:
            _LEARNED[key] = None
            counters["fake_rules"]["refused"] += 1
        else:
            self._keep(key, entries, learned)
        return result

    @staticmethod
    def _keep(key: tuple, entries: tuple, learned: tuple) -> None:
        if len(entries) < _ENTRIES:
            _LEARNED[key] = (*entries, learned)
            counters["fake_rules"]["learned"] += 1


def _family_of(mode: FakeTensorMode, func, args: tuple, kwargs: dict) -> tuple | None:
    op = OPS.get(func)
    if op is None or (op.check is not None and not op.check(args, kwargs)):
        return None
    return _family(func, op, args, kwargs, mode)


def fake_mode(shape_env) -> FakeTensorMode:
    """A FakeTensorMode that `rules_applied` can turn the rules on for. The rules sit on the
    instance (its `_dispatch_impl`, and its `__torch_dispatch__` while they are on): the class
    stays FakeTensorMode itself, the exact type higher-order operators look their fake
    implementations up by."""
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
    # bound to the mode, as dispatch requires; set only while on, since the mode then holds
    # itself through it (a cycle, which would keep every fake tensor alive until a collection)
    mode.__torch_dispatch__ = types.MethodType(_dispatch, mode)
    try:
        yield
    finally:
        rules.on = False
        del mode.__torch_dispatch__
