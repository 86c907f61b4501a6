"""Distributed training under framegraph: DistributedDataParallel's bucket split, collectives
as graph nodes, and FSDP2's module hooks run eagerly.

The core knows nothing of this package: importing it installs the DDP split as a backend
wrapper (`framegraph.backends.backend_wrappers`), consulted at every compile, registers a
handler per collective with the translator and FSDP2's forward hooks as hooks that run eagerly
(`framegraph.variables.handled_callables`); the API imports it once.
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
