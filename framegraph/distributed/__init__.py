"""Distributed training under framegraph: DistributedDataParallel's bucket split.

The core knows nothing of this package: importing it installs the DDP split as a backend
wrapper (`framegraph.backends.backend_wrappers`), consulted at every compile, and the API
imports it once.
"""

from __future__ import annotations

import torch

from ..backends import backend_wrappers

if torch.distributed.is_available():
    from .ddp import ddp_backend

    backend_wrappers.append(ddp_backend)
