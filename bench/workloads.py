"""The workloads every benchmark shares.

Each factory builds a fresh function or module (weights seeded, modules in eval mode) and returns
a `Case`: the callable, its example inputs, a function making fresh inputs of the same shapes,
and the calls a compile-time run makes (the example alone, or batch 2, 3 and 4 for `dynamic`).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

# tests/models.py is the GPT the tests use; the repository root makes it importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.models import GPT, gpt_inputs  # noqa: E402


@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]
    example_inputs: tuple
    fresh_inputs: Callable[[], tuple]
    first_calls: tuple[tuple, ...] = field(default=())

    def calls(self) -> tuple[tuple, ...]:
        """The argument tuples of the calls a compile-time run times."""
        return self.first_calls or (self.example_inputs,)


def _randn_maker(*shape: int) -> Callable[[], tuple]:
    seeds = itertools.count(1)
    return lambda: (torch.randn(*shape, generator=torch.Generator().manual_seed(next(seeds))),)


def _three_op(x):
    return torch.sin(x) * 2 + 1


def three_op() -> Case:
    fresh = _randn_maker(16, 16)
    return Case(_three_op, fresh(), fresh)


class MLP(nn.Module):
    def __init__(self, sizes=(64, 128, 128, 128, 10)) -> None:
        super().__init__()
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        # The final ReLU is dropped when building the list, so forward is a flat loop. (Both
        # frontends also capture `self.layers[:-1]` now; the list stays as it is so that runs
        # remain comparable with the earlier ones in RESULTS.md.)
        self.layers = nn.ModuleList(layers[:-1])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def mlp() -> Case:
    torch.manual_seed(0)
    fresh = _randn_maker(32, 64)
    return Case(MLP().eval(), fresh(), fresh)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(out)))


class CNN(nn.Module):
    def __init__(self, channels: int = 16, blocks: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.blocks = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.blocks(torch.relu(self.bn(self.stem(x))))
        return self.head(x.mean(dim=(2, 3)))


def cnn() -> Case:
    torch.manual_seed(0)
    fresh = _randn_maker(4, 3, 32, 32)
    return Case(CNN().eval(), fresh(), fresh)


def gpt(layers: int) -> Callable[[], Case]:
    def factory() -> Case:
        torch.manual_seed(0)
        model = GPT(layers=layers).eval()
        seeds = itertools.count(1)
        return Case(model, (gpt_inputs(model),), lambda: (gpt_inputs(model, seed=next(seeds)),))
    factory.__name__ = f"gpt{layers}"
    return factory


def _breaks3(x):
    # time.perf_counter is a C function neither frontend can put in a graph: for both, each call
    # is a graph break that splits the frame (graph so far, the call run eagerly, then a resume
    # function compiled as a frame of its own), so 3 breaks give 4 graphs.
    x = torch.sin(x)
    time.perf_counter()
    x = x * 2
    time.perf_counter()
    x = x + 1
    time.perf_counter()
    return torch.cos(x)


def breaks3() -> Case:
    fresh = _randn_maker(16, 16)
    return Case(_breaks3, fresh(), fresh)


def _dynamic(x):
    # Both frontends use automatic dynamic shapes: batch 2 compiles a static graph, batch 3 fails
    # its size guard and recompiles with a symbolic batch, and batch 4 hits that graph (2 graphs).
    return torch.relu(x).sum(dim=0) / x.shape[0]


def dynamic() -> Case:
    shapes = [_randn_maker(batch, 16) for batch in (2, 3, 4)]
    return Case(_dynamic, shapes[0](), shapes[0], first_calls=tuple(make() for make in shapes))


class _KeywordCall(nn.Module):
    """A model that takes keyword arguments (transformers') as one called with positional
    tensors, which is how a Case is called: both frontends compile the same wrapper."""

    def __init__(self, model: nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *values):
        return self.model(**dict(zip(self.names, values)))


def _llama4() -> tuple[nn.Module, tuple, dict]:
    """transformers' Llama, the zoo's small config with 4 layers: the inductor warm-start
    workload of the speed issue."""
    from tests.models import zoo

    torch.manual_seed(0)
    model, args, kwargs = zoo._hf("LlamaConfig", "LlamaForCausalLM", zoo._ids,
                                  **dict(zoo._LLAMA_LIKE, num_hidden_layers=4))()
    return model.eval(), args, kwargs


def zoo(name: str) -> Callable[[], Case]:
    """A model of the zoo (tests/models/zoo.py: real transformers, torchvision and timm code,
    small configs); each call gets new float inputs (token ids and masks are kept)."""
    def factory() -> Case:
        from tests.models.zoo import build

        model, args, kwargs = _llama4() if name == "llama4" else build(name)
        if kwargs:
            model, args = _KeywordCall(model, tuple(kwargs)), tuple(kwargs.values())
        seeds = itertools.count(1)

        def fresh() -> tuple:
            generator = torch.Generator().manual_seed(next(seeds))
            return tuple(torch.randn(a.shape, generator=generator) if a.is_floating_point() else a.clone()
                         for a in args)
        return Case(model, fresh(), fresh)
    factory.__name__ = name
    return factory


# Models of the zoo that both frontends capture whole: the acceptance workload of the
# real-models issue and of the speed issue (compile time, cache-hit cost and guard checks
# against torch.compile's). They need the `models` extra (transformers, torchvision, timm);
# without it they are left out, and the report says so.
ZOO_MISSING = [m for m in ("torchvision", "timm", "transformers") if importlib.util.find_spec(m) is None]
ZOO = [] if ZOO_MISSING else ["tv_resnet18", "tv_mobilenet_v3_small", "tv_vit_b_16", "tv_swin_t",
                              "timm_resnet18", "timm_vit_tiny", "hf_gpt2", "hf_llama", "hf_gpt_neox", "hf_bert",
                              "hf_roberta", "hf_t5", "hf_vit", "hf_convnext"]
_ZOO_NAMES = {name: name[3:] if name.startswith("hf_") else name for name in ZOO}  # tests/models/zoo.py's


def _relative_position(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx).to(score.dtype) * 0.01


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def flex_attention_causal() -> Case:
    """flex_attention with a causal block mask (made outside the compiled function) and a
    relative-position score_mod: eagerly the whole score matrix is materialised; inductor
    generates one fused kernel that skips the masked blocks."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    block_mask = create_block_mask(_causal, None, None, 512, 512, device="cpu")

    def attention(q, k, v):
        return flex_attention(q, k, v, score_mod=_relative_position, block_mask=block_mask)

    seeds = itertools.count(1)

    def inputs() -> tuple:
        generator = torch.Generator().manual_seed(next(seeds))
        return tuple(torch.randn(1, 8, 512, 64, generator=generator) for _ in range(3))
    return Case(attention, inputs(), inputs)


def zoo2(name: str) -> Callable[[], Case]:
    """A model of the second zoo (tests/models/zoo2.py: diffusers, torch-geometric, einops,
    x-transformers, peft); each call gets new float inputs (indices and masks are kept)."""
    def factory() -> Case:
        from tests.models.zoo2 import build, fresh

        model, args = build(name)
        seeds = itertools.count(1)

        def again() -> tuple:
            generator = torch.Generator().manual_seed(next(seeds))
            return tuple(torch.randn(a.shape, generator=generator)
                         if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in fresh(args))
        return Case(model, again(), again)
    factory.__name__ = name
    return factory


# Second-zoo models, one or two per library: whole graphs in both frontends, and one
# torch-geometric model that breaks (at the same places in both).
ZOO2_LIBRARIES = ("diffusers", "torch_geometric", "einops", "x_transformers", "peft")
ZOO2_MISSING = [m for m in ZOO2_LIBRARIES if importlib.util.find_spec(m) is None]
ZOO2 = [] if ZOO2_MISSING else ["diffusers_unet2d", "diffusers_conditional_unet", "diffusers_vae", "diffusers_dit",
                                "einops_vit", "x_transformers_decoder", "peft_lora_llama", "pyg_gcn"]

WORKLOADS: dict[str, Callable[[], Case]] = {
    "three_op": three_op,
    "mlp": mlp,
    "cnn": cnn,
    "gpt2": gpt(2),
    "gpt8": gpt(8),
    "gpt32": gpt(32),
    "breaks3": breaks3,
    "dynamic": dynamic,
    "flex_attention": flex_attention_causal,
    **{f"zoo_{name}": zoo(_ZOO_NAMES[name]) for name in ZOO},
    **({} if ZOO_MISSING else {"zoo_hf_llama4": zoo("llama4")}),
    **{f"zoo2_{name}": zoo2(name) for name in ZOO2},
}

DESCRIPTIONS = {
    "three_op": "`torch.sin(x) * 2 + 1`, x 16x16",
    "mlp": "4 Linear+ReLU layers (64-128-128-128-10), batch 32",
    "cnn": "conv-bn-relu stem, 2 residual blocks, pooled linear head; 4x3x32x32",
    "gpt2": "GPT (tests/models.py), 2 layers, dim 32, batch 2 x seq 8",
    "gpt8": "GPT, 8 layers",
    "gpt32": "GPT, 32 layers",
    "breaks3": "3 ops split by 3 `time.perf_counter()` calls, then 1 op",
    "dynamic": "`relu(x).sum(0) / x.shape[0]`, called with batch 2, 3, 4 (all three calls timed)",
    "flex_attention": "flex_attention, causal block mask and relative-position score_mod; q, k, v 1x8x512x64",
    **{f"zoo_{name}": f"zoo model `{_ZOO_NAMES[name]}` (tests/models/zoo.py, "
                      f"{'transformers' if name.startswith('hf_') else 'torchvision' if name.startswith('tv_') else 'timm'})" for name in ZOO},
    "zoo_hf_llama4": "zoo model `llama` with 4 layers (transformers)",
    **{f"zoo2_{name}": f"second-zoo model `{name}` (tests/models/zoo2.py)" for name in ZOO2},
}


def get(name: str) -> Case:
    """A named workload, or `gpt<N>` for the GPT at depth N."""
    if name in WORKLOADS:
        return WORKLOADS[name]()
    if name.startswith("gpt") and name[3:].isdigit():
        return gpt(int(name[3:]))()
    raise KeyError(f"unknown workload {name!r}")
