"""torch.compile's debugging backends, under their names, for code that passes them:

- `eager_noexcept`: eager, and an exception while the graph runs is a FramegraphError that
  says so (the program's own exception chained to it): did the graph itself fail?
- `eager_debug`: eager under torch's SchemaCheckMode, which checks every operator against its
  declared schema (a custom op that writes an input it says it only reads).
- `pre_dispatch_eager`: the graph retraced by make_fx at the pre-dispatch level, then run.
- `ts`: the graph compiled by TorchScript (`torch.jit.script`).
- `aot_ts`: AOTAutograd's forward and backward, each compiled by TorchScript.

The minifier's backends and the ones torch keeps for testing itself (their names end in
`_TESTING_ONLY`) belong to torch.compile's own tooling and are not offered.
"""

from __future__ import annotations

from ..exc import FramegraphError
from . import register_backend


@register_backend
def eager_noexcept(gm, example_inputs):
    def run(*args):
        try:
            return gm(*args)
        except Exception as error:
            raise FramegraphError("the graph raised while it ran (backend 'eager_noexcept')") from error
    return run


@register_backend
def eager_debug(gm, example_inputs):
    import torch
    from torch._subclasses.schema_check_mode import SchemaCheckMode

    def run(*args):
        with SchemaCheckMode():
            return torch.fx.Interpreter(gm).run(*args)
    return run


@register_backend
def pre_dispatch_eager(gm, example_inputs):
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(lambda *args: torch.fx.Interpreter(gm).run(*args), pre_dispatch=True)(*example_inputs)


@register_backend(name="ts")
def torchscript(gm, example_inputs):
    import torch

    return torch.jit.script(gm)


@register_backend
def aot_ts(gm, example_inputs):
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.compilers import ts_compile

    return aot_module_simplified(gm, example_inputs, fw_compiler=ts_compile, bw_compiler=ts_compile)
