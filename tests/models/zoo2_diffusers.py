"""Second-zoo models from diffusers, built from small configs: the UNets, autoencoders and the
DiT that image-generation pipelines run, and a DDPM sampling loop around a UNet, drawing its
noise from a generator the caller passes (as pipelines do)."""

from __future__ import annotations

import torch
from torch import nn

_SMALL = dict(layers_per_block=1, block_out_channels=(32, 64), norm_num_groups=8)


def unet2d() -> nn.Module:
    from diffusers import UNet2DModel

    return UNet2DModel(sample_size=16, in_channels=3, out_channels=3, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"), **_SMALL)


def conditional_unet() -> nn.Module:
    """Cross-attention on text embeddings, as Stable Diffusion's UNet."""
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, cross_attention_dim=32,
                                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), attention_head_dim=8, **_SMALL)


def vae() -> nn.Module:
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                         up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, sample_size=32, **_SMALL)


def vq() -> nn.Module:
    """A vector-quantised autoencoder (the VQ-GAN's), its codebook lookup in the forward."""
    from diffusers import VQModel

    return VQModel(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                   up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, num_vq_embeddings=64,
                   sample_size=32, **_SMALL)


def dit() -> nn.Module:
    from diffusers import DiTTransformer2DModel

    return DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, num_layers=2,
                                 sample_size=8, patch_size=2, num_embeds_ada_norm=1000)


class DDPMSampling(nn.Module):
    """Four denoising steps: the UNet predicts the noise, the scheduler steps, adding noise
    drawn from the caller's generator."""

    def __init__(self) -> None:
        super().__init__()
        from diffusers import DDPMScheduler, UNet2DModel

        self.unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                                block_out_channels=(16, 32), down_block_types=("DownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8)
        self.scheduler = DDPMScheduler(num_train_timesteps=100)
        self.scheduler.set_timesteps(4)

    def forward(self, sample, generator):
        for t in self.scheduler.timesteps:
            noise = self.unet(sample, t).sample
            sample = self.scheduler.step(noise, t, sample, generator=generator).prev_sample
        return sample
