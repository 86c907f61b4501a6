"""FSDP2 (`torch.distributed.fsdp.fully_shard`) under framegraph: its module hooks run eagerly.

`fully_shard` registers a forward pre-hook (with kwargs) and a forward hook on each managed
module. They are the heart of FSDP2, and are not graph material: the pre-hook all-gathers
the module's parameters and swaps them in (resizing storages, switching the module's
parameters from sharded to unsharded), the post-hook frees them again and hangs the
pre-backward hook on the output, both driving a per-state training-state machine and
prefetching the next module's gather. torch marks them so that no compiler traces them
(`_dynamo_disable` in torch 2.13, `disable_if_config_true` with the `skip_fsdp_hooks` config
before): torch.compile runs them eagerly, so a managed module's boundary is where its graphs
end, and compiling FSDP2 means compiling each managed module's forward (per block).

framegraph follows that: this package tells the core which hooks run eagerly. Calling a
module that carries one then breaks at the call (gb_type "Module hooks run eagerly"): the
compiled module's own hooks run before and after the frame framegraph picks up (no break, as
under torch.compile), a frame calling managed modules in a loop runs eagerly while each
module's forward compiles as a frame of its own (torch.compile skips such a frame too), and
elsewhere the frame is split at the call.
"""

from __future__ import annotations

import sys
import types
from typing import Any

_STATE_MODULE = "torch.distributed.fsdp._fully_shard._fsdp_state"
_codes: dict[int, types.CodeType] = {}  # id(code) -> code of FSDP2's forward hooks, once imported


def is_fsdp_hook(hook: Any) -> bool:
    """Whether a module hook is FSDP2's forward pre-hook or forward hook."""
    state = sys.modules.get(_STATE_MODULE)
    if state is None:  # no program has imported FSDP2, so no module carries its hooks
        return False
    if not _codes:
        # Both are the same wrapper code in torch 2.13 (`_dynamo_disable`'s), which also wraps
        # the hooks of modules sharded as a group (`fully_shard([a, b])`): the code covers those.
        for fn in (state.FSDPState._pre_forward, state.FSDPState._post_forward):
            _codes[id(fn.__code__)] = fn.__code__
    fn = getattr(hook, "__func__", hook)  # a bound method (state._pre_forward): its function
    return isinstance(fn, types.FunctionType) and _codes.get(id(fn.__code__)) is fn.__code__
