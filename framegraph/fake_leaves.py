"""Fake tensors for plain leaf tensors with static sizes (parameters, buffers, inputs), made
directly instead of through FakeTensorMode's general converter.

`FakeTensorMode.from_tensor` describes every tensor in full (views, subclasses, functorch
wrappers, sparse layouts, autograd history, storage sharing) before it makes the fake one:
about 100 µs a tensor, 12 ms for a resnet18's 122 parameters and buffers, paid again by every
compile. A dense leaf that owns its storage needs none of that: its fake is an empty meta
tensor of the same sizes, strides and dtype, wrapped as a FakeTensor on the tensor's device,
with the leaf's requires_grad and parameter mark. That takes about 20 µs.

`fake_leaf` makes that fake only for such a tensor, and records it in the converter's memos
exactly as the converter would have: the tensor's own memo (a later `from_tensor` of it returns
this fake) and its storage's (a view of it converted later shares the fake's storage, so
aliasing is kept). Anything else returns None, and the caller uses `from_tensor`.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._mode_utils import no_dispatch


def _plain(t: torch.Tensor) -> bool:
    """A dense strided leaf of its own storage (from its first byte), with no autograd
    state beyond requires_grad, and of no subclass: nothing the general converter would have
    to reproduce."""
    if (type(t) not in (torch.Tensor, torch.nn.Parameter)
            or t.layout is not torch.strided or t.is_quantized or t.is_nested or t.is_mkldnn
            or t._is_view() or not t.is_leaf or t.storage_offset() != 0
            or t.is_inference() or t.is_conj() or t.is_neg() or t._is_zerotensor()
            or torch._C._functorch.is_functorch_wrapped_tensor(t) or torch._is_functional_tensor(t)):
        return False
    # A leaf's .grad is faked along with it, and its grad dtype carried over: the converter's.
    return not t.requires_grad or (t.grad is None and getattr(t, "grad_dtype", t.dtype) == t.dtype)


def fake_leaf(mode: FakeTensorMode, t: torch.Tensor) -> FakeTensor | None:
    """`mode`'s fake of `t` with static sizes, or None: `mode.from_tensor` must make it."""
    converter = mode.fake_tensor_converter
    known = converter._get_memo(t)
    if known is not None:
        return known
    if not _plain(t):
        return None
    storage = t.untyped_storage()
    metas = converter.meta_converter
    storage_id = metas.describer.lookup_storage.get(storage)
    if storage_id is not None and storage_id in metas.storage_memo:
        return None  # its storage already has a fake (another tensor on it): the converter shares it
    with no_dispatch():
        meta = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device="meta")
        if meta.untyped_storage().nbytes() != storage.nbytes():
            return None  # a storage larger or smaller than the tensor (resized): the converter's
        fake = FakeTensor(mode, meta, t.device)
    if t.requires_grad:
        fake.requires_grad_(True)
    if isinstance(t, torch.nn.Parameter):
        fake._is_param = True
    metas.storage_memo[metas.describer.get_storage_id(storage)] = fake.untyped_storage()
    converter.set_tensor_memo(t, fake)
    return fake
