"""Second-zoo models written with einops (`rearrange`, `reduce`, `repeat`, `einsum`, and its
`Rearrange`/`Reduce` layers), the way vision transformers, MLP-mixers, perceivers and
vector quantisers are written in research code; and x-transformers, built on einops."""

from __future__ import annotations

import torch
from torch import nn


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


class ViT(nn.Module):
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


class Mixer(nn.Module):
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


class Perceiver(nn.Module):
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


class _VectorQuantizer(nn.Module):
    """A VQ-VAE bottleneck: each latent vector replaced by its nearest codebook entry, with the
    straight-through gradient and the commitment loss."""

    def __init__(self, codes: int = 32, dim: int = 16) -> None:
        super().__init__()
        self.codebook = nn.Embedding(codes, dim)

    def forward(self, z):
        einops, _, _ = _einops()
        flat = einops.rearrange(z, "b d h w -> (b h w) d")
        distances = torch.cdist(flat, self.codebook.weight)
        indices = distances.argmin(dim=-1)
        quantized = einops.rearrange(self.codebook(indices), "(b h w) d -> b d h w", b=z.shape[0], h=z.shape[2])
        loss = (quantized.detach() - z).pow(2).mean() * 0.25 + (quantized - z.detach()).pow(2).mean()
        return z + (quantized - z).detach(), loss, einops.rearrange(indices, "(b n) -> b n", b=z.shape[0])


class VQVAE(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, dim, 4, 2, 1))
        self.quantizer = _VectorQuantizer(dim=dim)
        self.decoder = nn.Sequential(nn.ConvTranspose2d(dim, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 3, 4, 2, 1))

    def forward(self, image):
        quantized, loss, indices = self.quantizer(self.encoder(image))
        return self.decoder(quantized), loss, indices


def x_transformers_decoder() -> nn.Module:
    from x_transformers import Decoder, TransformerWrapper

    return TransformerWrapper(num_tokens=64, max_seq_len=32, attn_layers=Decoder(dim=32, depth=2, heads=4))


def x_transformers_vit() -> nn.Module:
    from x_transformers import Encoder, ViTransformerWrapper

    return ViTransformerWrapper(image_size=16, patch_size=4, num_classes=10,
                                attn_layers=Encoder(dim=32, depth=2, heads=4))


def x_transformers_encoder_decoder() -> nn.Module:
    from x_transformers import XTransformer

    return XTransformer(dim=32, enc_num_tokens=64, enc_depth=2, enc_heads=4, enc_max_seq_len=32,
                        dec_num_tokens=64, dec_depth=2, dec_heads=4, dec_max_seq_len=32)
