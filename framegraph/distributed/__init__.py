"""Distributed training under framegraph: DistributedDataParallel's bucket split, collectives
as graph nodes, FSDP2's module hooks run eagerly, and DTensor (tensor parallelism) in the graph.

The core knows nothing of this package: importing it installs the DDP split as a backend
wrapper (`framegraph.backends.backend_wrappers`), consulted at every compile, registers a
handler per collective with the translator and FSDP2's forward hooks as hooks that run eagerly
(`framegraph.variables.handled_callables`), and DTensor as a tensor subclass the translator
models (`framegraph.variables.tensor_subclasses`); the API imports it once.
"""

from __future__ import annotations

import torch

from ..backends import backend_wrappers
from ..variables.handled_callables import register, register_eager_hook_test, register_opaque_type

if torch.distributed.is_available():
    from .collectives import HANDLERS
    from .ddp import ddp_backend
    from .fsdp import is_fsdp_hook

    backend_wrappers.append(ddp_backend)
    for _fn, _handler in HANDLERS.items():
        register(_fn, _handler)
    register_opaque_type(torch.distributed.ProcessGroup)
    register_opaque_type(torch.distributed.Work)  # handed to a resume function by an async collective
    register_eager_hook_test(is_fsdp_hook)

    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.placement_types import Placement

    from ..trace_rules import inline_torch_modules
    from ..variables.constant import register_constant_type
    from ..variables.tensor_subclasses import register_tensor_subclass
    from .dtensor import HANDLERS as DTENSOR_HANDLERS, DTensorRule

    # The hooks a tensor-parallel style installs (`distribute_module`'s lambdas, the styles'
    # input and output functions) are traced, as torch.compile traces them.
    inline_torch_modules("torch.distributed.tensor._api", "torch.distributed.tensor.parallel.style",
                         "torch.distributed.tensor.parallel._utils")
    register_tensor_subclass(DTensor, DTensorRule())
    register_opaque_type(DeviceMesh)
    register_constant_type(Placement)
    for _fn, _handler in DTENSOR_HANDLERS.items():
        register(_fn, _handler)
