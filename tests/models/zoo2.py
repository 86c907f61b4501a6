"""The second zoo: models written with libraries the first zoo does not have, built small,
with random weights. So far: models written with einops (`rearrange`, `reduce`, `repeat`,
`einsum`, and its `Rearrange`/`Reduce` layers), the way vision transformers, MLP-mixers and
perceivers are written in research code.

Each entry makes a model and its inputs; `test_zoo2.py` compiles it beside torch.compile.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Callable

import torch
from torch import nn


@dataclasses.dataclass(frozen=True)
class Entry:
    library: str
    make: Callable[[], tuple[nn.Module, tuple]]


def _einops():
    import einops
    from einops.layers.torch import Rearrange, Reduce

    return einops, Rearrange, Reduce


class _Attention(nn.Module):
    """Multi-head self-attention with its heads split and merged by rearrange."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        einops, _, _ = _einops()
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (einops.rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        scores = einops.einsum(q, k, "b h i d, b h j d -> b h i j") * q.shape[-1] ** -0.5
        out = einops.einsum(scores.softmax(dim=-1), v, "b h i j, b h j d -> b h i d")
        return self.out(einops.rearrange(out, "b h n d -> b n (h d)"))


class _ViT(nn.Module):
    def __init__(self, image: int = 16, patch: int = 4, dim: int = 32, depth: int = 2, classes: int = 10) -> None:
        super().__init__()
        _, Rearrange, _ = _einops()
        self.to_patches = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.LayerNorm(patch * patch * 3), nn.Linear(patch * patch * 3, dim))
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim))
        self.blocks = nn.ModuleList(nn.ModuleList([nn.LayerNorm(dim), _Attention(dim, 4), nn.LayerNorm(dim),
                                                   nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(),
                                                                 nn.Linear(dim * 2, dim))])
                                    for _ in range(depth))
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        einops, _, _ = _einops()
        x = self.to_patches(img)
        cls = einops.repeat(self.cls, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat([cls, x], dim=1) + self.pos
        for norm1, attn, norm2, mlp in self.blocks:
            x = x + attn(norm1(x))
            x = x + mlp(norm2(x))
        return self.head(einops.reduce(x, "b n d -> b d", "mean"))


class _Mixer(nn.Module):
    """An MLP-mixer: token mixing by rearranging tokens to the last axis and back."""

    def __init__(self, image: int = 16, patch: int = 4, dim: int = 32, depth: int = 2, classes: int = 10) -> None:
        super().__init__()
        _, Rearrange, Reduce = _einops()
        tokens = (image // patch) ** 2
        layers = [Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
                  nn.Linear(patch * patch * 3, dim)]
        for _ in range(depth):
            layers += [_Residual(nn.Sequential(nn.LayerNorm(dim), Rearrange("b n d -> b d n"),
                                               nn.Linear(tokens, tokens), nn.GELU(), Rearrange("b d n -> b n d"))),
                       _Residual(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2), nn.GELU(),
                                               nn.Linear(dim * 2, dim)))]
        layers += [nn.LayerNorm(dim), Reduce("b n d -> b d", "mean"), nn.Linear(dim, classes)]
        self.net = nn.Sequential(*layers)

    def forward(self, img):
        return self.net(img)


class _Residual(nn.Module):
    def __init__(self, fn: nn.Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return x + self.fn(x)


class _Perceiver(nn.Module):
    """Latents attending to the inputs (cross-attention), then to themselves."""

    def __init__(self, dim: int = 32, latents: int = 8, heads: int = 4) -> None:
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, dim))
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, dim * 2, bias=False)
        self.self_attn = _Attention(dim, heads)
        self.out = nn.Linear(dim, 4)

    def forward(self, x):
        einops, _, _ = _einops()
        latents = einops.repeat(self.latents, "n d -> b n d", b=x.shape[0])
        q = einops.rearrange(self.to_q(latents), "b n (h d) -> (b h) n d", h=self.heads)
        k, v = (einops.rearrange(t, "b n (h d) -> (b h) n d", h=self.heads) for t in self.to_kv(x).chunk(2, -1))
        attn = torch.softmax(torch.einsum("bid,bjd->bij", q, k) * q.shape[-1] ** -0.5, dim=-1)
        latents = einops.rearrange(torch.einsum("bij,bjd->bid", attn, v), "(b h) n d -> b n (h d)", h=self.heads)
        latents = latents + self.self_attn(latents)
        return self.out(einops.reduce(latents, "b n d -> b d", "max"))


def _image(batch: int = 2, size: int = 16) -> torch.Tensor:
    return torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(batch))


ZOO2: dict[str, Entry] = {
    "einops_vit": Entry("einops", lambda: (_ViT(), (_image(),))),
    "einops_mixer": Entry("einops", lambda: (_Mixer(), (_image(),))),
    "einops_perceiver": Entry("einops", lambda: (_Perceiver(),
                                                 (torch.randn(2, 12, 32, generator=torch.Generator().manual_seed(1)),))),
}


def available(name: str) -> bool:
    return importlib.util.find_spec(ZOO2[name].library) is not None


def build(name: str, seed: int = 0) -> tuple[nn.Module, tuple]:
    torch.manual_seed(seed)
    model, args = ZOO2[name].make()
    return model.eval(), args
