"""Higher-order operators: functions that take functions (torch.cond, while_loop, activation
checkpointing, flex_attention, scan and map, torch.func's transforms, nested compile regions),
each traced into a graph of its own and called through the operator torch defines for it, so
every backend takes the frame's graph as it takes torch.compile's; and
torch.func.functional_call, a module called inline with its tensors swapped.

The core knows nothing of this package: importing it registers one handler per function with
the translator (`framegraph.variables.handled_callables`), and the API imports it once.
`speculate.py` is the shared mechanism; one module per operator family.
"""

from __future__ import annotations

import torch
import torch.nn.attention.flex_attention
import torch.utils.checkpoint
from torch._higher_order_ops.while_loop import while_loop as _while_loop

from ..variables.handled_callables import register, register_code
from . import functorch
from .invoke_subgraph import REGION_CODE, call_region
from .scan import HANDLED as SEQUENCE_OPERATORS
from .checkpoint import call_checkpoint
from .cond import call_cond
from .flex_attention import call_flex_attention
from .functional_call import call_functional_call
from .vjp import call_vjp
from .while_loop import call_while_loop


def _undecorated(fn):
    """The function a torch._disable_dynamo wrapper hides, and the wrapper: either is met."""
    return [fn, *([fn.__wrapped__] if hasattr(fn, "__wrapped__") else [])]


for _fn in _undecorated(torch.cond):
    register(_fn, call_cond)
for _fn in _undecorated(torch.utils.checkpoint.checkpoint):
    register(_fn, call_checkpoint)
for _fn in _undecorated(_while_loop):
    register(_fn, call_while_loop)
for _fn, _handler in functorch.handlers():
    for _f in _undecorated(_fn):
        register(_f, _handler)
for _code, _handler in functorch.closure_handlers():
    register_code(_code, _handler)
register_code(REGION_CODE, call_region)
register(torch.nn.attention.flex_attention.flex_attention, call_flex_attention)
for _fn in _undecorated(torch.func.functional_call):
    register(_fn, call_functional_call)
for _fn in _undecorated(torch.func.vjp):
    register(_fn, call_vjp)
for _fn, _handler in SEQUENCE_OPERATORS.items():
    for _f in _undecorated(_fn):
        register(_f, _handler)
