"""torch's grouping of tensor lists for foreach kernels, decided from metadata while tracing.

`torch._C._group_tensors_by_device_and_dtype(tensorlistlist, with_indices)` splits parallel
lists of tensors (parameters, gradients, optimizer buffers) into groups of one device and
dtype, so each group can go to one `torch._foreach_*` kernel. Optimizers and
`clip_grad_norm_` call it on every step. The grouping depends only on the devices and dtypes
of the first list's tensors, which the tensor guards pin, so it folds: the groups hold the
very trackers they were given, and no node is recorded.

The C function returns its groups in the order of a hash table. The order of the groups
decides the order of the kernels, and with it how a total (a gradient norm) is summed, so
it must be eager's: it is taken from the real function, run on one empty tensor per
(device, dtype) in the order the tensors come.
"""

from __future__ import annotations

import torch

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import ListVariable, TupleVariable
from .dicts import DictVariable
from .tensor import TensorVariable


def group_tensors_by_device_and_dtype(tx, args, kwargs) -> VariableTracker:
    from .iterators import unpack

    if len(args) + len(kwargs) > 2 or set(kwargs) - {"tensorlistlist", "with_indices"}:
        raise Unsupported("Unsupported builtin call", "_group_tensors_by_device_and_dtype with unexpected arguments")
    given = dict(zip(("tensorlistlist", "with_indices"), args), **kwargs)
    flag = given.get("with_indices", ConstantVariable(False))
    if "tensorlistlist" not in given or not flag.is_python_constant():
        raise Unsupported("Unsupported builtin call", "_group_tensors_by_device_and_dtype with unexpected arguments")
    with_indices = bool(flag.as_python_constant())
    lists = [unpack(tx, item) for item in unpack(tx, given["tensorlistlist"])]
    if not lists or not lists[0] or any(len(items) not in (0, len(lists[0])) for items in lists):
        # torch raises (an empty list of lists, an empty first list) or reads out of range
        raise Unsupported("Unsupported builtin call", "_group_tensors_by_device_and_dtype of lists it refuses")
    keys = []
    for item in lists[0]:
        if not isinstance(item, TensorVariable):
            raise Unsupported("Unsupported builtin call",
                              "_group_tensors_by_device_and_dtype with a first list that is not all tensors")
        keys.append((item.example.device, item.example.dtype))
    for items in lists[1:]:
        if not all(isinstance(i, TensorVariable) or (i.is_python_constant() and i.as_python_constant() is None)
                   for i in items):
            raise Unsupported("Unsupported builtin call", "_group_tensors_by_device_and_dtype of lists of non-tensors")
    groups: dict[tuple, tuple[list[list[VariableTracker]], list[int]]] = {
        key: ([[] for _ in lists], []) for key in _eager_order(keys)}
    for index, key in enumerate(keys):
        grouped, indices = groups[key]
        for items, group in zip(lists, grouped):
            if items:
                group.append(items[index])
        if with_indices:
            indices.append(index)
    return DictVariable({key: TupleVariable([ListVariable([ListVariable(group) for group in grouped]),
                                             ListVariable([ConstantVariable(i) for i in indices])])
                         for key, (grouped, indices) in groups.items()})


def _eager_order(keys: list[tuple]) -> list[tuple]:
    """The (device, dtype) groups in the order the real function returns them."""
    probes = [torch.empty(0, device=device, dtype=dtype) for device, dtype in keys]
    return list(torch._C._group_tensors_by_device_and_dtype([probes], False))
