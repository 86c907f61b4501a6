"""The backends torch.compile offers that hand the graph to another runtime: `cudagraphs`,
`tvm`, `openxla` and `openxla_eval`, under torch.compile's names. Each imports what it needs
only when a graph is compiled, and a missing package is an error naming it.

- `cudagraphs` records the graph as a CUDA graph, forward and backward, with
  `torch.cuda.make_graphed_callables`. A graph it cannot record (a tensor not on one CUDA
  device, no CUDA, a symbolic size) runs through AOTAutograd without CUDA graphs, and says so
  once per reason, as torch.compile's backend does ("skipping cudagraphs due to ...").
- `tvm` imports the graph with Apache TVM's FX frontend (Relax) and runs it on TVM's virtual
  machine, for CPU (LLVM) or CUDA tensors. torch.compile's own `tvm` backend needs Relay, which
  TVM 0.20 and later no longer have. Inference only: a graph that would record autograd is refused.
- `openxla` (training, through AOTAutograd) and `openxla_eval` (inference) compile with
  PyTorch/XLA's dynamo bridge, as torch.compile's do.
"""

from __future__ import annotations

import warnings

from ..exc import FramegraphError
from . import register_backend
from .builtin import aot_eager

_NOTED: set[str] = set()


def _note_once(message: str) -> None:
    if message not in _NOTED:
        _NOTED.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _tensors(example_inputs) -> list:
    import torch

    return [x for x in example_inputs if isinstance(x, torch.Tensor)]


def _cuda_graph_obstacle(gm, example_inputs) -> str | None:
    import torch

    if not torch.cuda.is_available():
        return "CUDA is not available"
    if any(not isinstance(x, torch.Tensor) for x in example_inputs):
        return "the graph takes a symbolic size"
    devices = {x.device for x in example_inputs} | {
        v.device for n in gm.graph.nodes if isinstance(v := n.meta.get("val"), torch.Tensor)}
    if len(devices) != 1 or next(iter(devices)).type != "cuda":
        return f"the graph's tensors are on {', '.join(sorted(map(str, devices))) or 'no device'}, not one CUDA device"
    return None


@register_backend
def cudagraphs(gm, example_inputs):
    import torch

    obstacle = _cuda_graph_obstacle(gm, example_inputs)
    if obstacle is not None:
        _note_once(f"framegraph backend 'cudagraphs': {obstacle}; the graph runs without CUDA graphs "
                   "(through AOTAutograd), as under torch.compile")
        return aot_eager(gm, example_inputs)
    graphed = torch.cuda.make_graphed_callables(gm, tuple(example_inputs))
    return lambda *args: graphed(*args)


@register_backend
def tvm(gm, example_inputs):
    import torch

    try:
        import tvm as tvm_package
        from tvm import relax
        from tvm.relax.frontend.torch import from_fx
    except ImportError as error:
        raise FramegraphError("framegraph backend 'tvm' needs Apache TVM 0.20 or later (its Relax FX frontend): "
                              f"pip install apache-tvm ({error})") from error
    if any(not isinstance(x, torch.Tensor) for x in example_inputs):
        raise FramegraphError("framegraph backend 'tvm' compiles static shapes only: the graph takes a symbolic "
                              "size (compile with dynamic=False)")
    if torch.is_grad_enabled() and any(x.requires_grad for x in example_inputs):
        raise FramegraphError("framegraph backend 'tvm' is inference only: an input of the graph requires grad "
                              "(run under torch.no_grad(), or use another backend to train)")
    devices = {x.device for x in example_inputs}
    device = next(iter(devices)) if devices else torch.device("cpu")
    if len(devices) > 1 or device.type not in ("cpu", "cuda"):
        raise FramegraphError(f"framegraph backend 'tvm' runs on one CPU or CUDA device, not {sorted(map(str, devices))}")
    info = [(tuple(x.shape), str(x.dtype).replace("torch.", "")) for x in example_inputs]
    module = from_fx(gm, info, keep_params_as_input=False)
    target, tvm_device = ("llvm", tvm_package.cpu()) if device.type == "cpu" else ("cuda", tvm_package.cuda(device.index or 0))
    machine = relax.VirtualMachine(tvm_package.compile(module, target=target), tvm_device)
    run = machine["main"]

    def call(*args):
        outputs = run(*(tvm_package.runtime.from_dlpack(a.contiguous()) for a in args))
        outputs = outputs if isinstance(outputs, (list, tuple)) or type(outputs).__name__ == "Array" else [outputs]
        return tuple(torch.from_dlpack(o) for o in outputs)
    return call


def _xla_bridge():
    try:
        from torch_xla._dynamo import dynamo_bridge
    except ImportError as error:
        raise FramegraphError("framegraph backends 'openxla' and 'openxla_eval' need PyTorch/XLA (torch_xla, "
                              f"the release matching this torch) ({error})") from error
    return dynamo_bridge


@register_backend
def openxla_eval(gm, example_inputs):
    return _xla_bridge().extract_compiled_graph(gm, example_inputs)


@register_backend
def openxla(gm, example_inputs):
    from torch._functorch._aot_autograd.utils import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    bridge = _xla_bridge()

    def compiler(graph, inputs):
        return make_boxed_func(bridge.extract_compiled_graph(graph, inputs))
    return aot_module_simplified(gm, example_inputs, fw_compiler=compiler, bw_compiler=compiler)
