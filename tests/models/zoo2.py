"""The second zoo: models from libraries the first zoo does not have, built small, with random
weights: diffusers (UNets, autoencoders, a DiT, a DDPM sampling loop), torch-geometric (GCN,
GAT, a graph transformer, GraphSAGE, GIN with pooling), einops-based models (written with `rearrange`, and
x-transformers), peft (LoRA on a Llama) and sentence-embedding pooling.

Each entry makes a model and its inputs; `test_zoo2.py` compiles it beside torch.compile.
The model makers live beside this file, one module per library family.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Callable

import torch
from torch import nn

from tests.models import zoo  # noqa: F401  (defines torchvision's schemas before transformers loads it)
from tests.models import zoo2_diffusers as diffusers_models
from tests.models import zoo2_einops as einops_models
from tests.models import zoo2_graphs as graph_models
from tests.models import zoo2_text as text_models


@dataclasses.dataclass(frozen=True)
class Entry:
    library: str  # the package that must be installed (the `models` extra)
    make: Callable[[], tuple[nn.Module, tuple]]


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _tokens(vocab: int, batch: int = 2, seq: int = 12) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0))


ZOO2: dict[str, Entry] = {
    # diffusers
    "diffusers_unet2d": Entry("diffusers", lambda: (diffusers_models.unet2d(),
                                                    (_randn(2, 3, 16, 16), torch.tensor([10, 500])))),
    "diffusers_conditional_unet": Entry("diffusers", lambda: (diffusers_models.conditional_unet(),
                                                              (_randn(2, 4, 16, 16), torch.tensor(10),
                                                               _randn(2, 7, 32, seed=1)))),
    "diffusers_vae": Entry("diffusers", lambda: (diffusers_models.vae(), (_randn(2, 3, 32, 32),))),
    "diffusers_vq": Entry("diffusers", lambda: (diffusers_models.vq(), (_randn(2, 3, 32, 32),))),
    "diffusers_dit": Entry("diffusers", lambda: (diffusers_models.dit(),
                                                 (_randn(2, 4, 8, 8), torch.tensor([3, 700]), torch.tensor([1, 2])))),
    "diffusers_ddpm_sampling": Entry("diffusers", lambda: (diffusers_models.DDPMSampling(),
                                                           (_randn(1, 3, 8, 8), torch.Generator().manual_seed(5)))),
    # torch-geometric
    **{f"pyg_{layer}": Entry("torch_geometric", lambda layer=layer: (graph_models.GraphClassifier(layer),
                                                                     graph_models.two_graphs()))
       for layer in ("gcn", "gat", "transformer", "sage", "gin")},
    # einops
    "einops_vit": Entry("einops", lambda: (einops_models.ViT(), (_randn(2, 3, 16, 16),))),
    "einops_mixer": Entry("einops", lambda: (einops_models.Mixer(), (_randn(2, 3, 16, 16),))),
    "einops_perceiver": Entry("einops", lambda: (einops_models.Perceiver(), (_randn(2, 12, 32, seed=1),))),
    "einops_vqvae": Entry("einops", lambda: (einops_models.VQVAE(), (_randn(2, 3, 16, 16),))),
    "x_transformers_decoder": Entry("x_transformers", lambda: (einops_models.x_transformers_decoder(),
                                                               (_tokens(64),))),
    "x_transformers_vit": Entry("x_transformers", lambda: (einops_models.x_transformers_vit(),
                                                           (_randn(2, 3, 16, 16),))),
    "x_transformers_encoder_decoder": Entry("x_transformers", lambda: (
        einops_models.x_transformers_encoder_decoder(), (_tokens(64, seq=10), _tokens(64, seq=9)))),
    # peft and sentence embeddings (transformers encoders)
    "peft_lora_llama": Entry("peft", lambda: (text_models.lora_llama(), (_tokens(text_models.VOCAB, seq=8),))),
    "sentence_mean_pooling_bert": Entry("transformers", lambda: (text_models.SentenceEmbedding("bert", "mean"),
                                                                 text_models.padded_batch())),
    "sentence_cls_pooling_distilbert": Entry("transformers", lambda: (
        text_models.SentenceEmbedding("distilbert", "cls"), text_models.padded_batch())),
}


def available(name: str) -> bool:
    return importlib.util.find_spec(ZOO2[name].library) is not None


def build(name: str, seed: int = 0) -> tuple[nn.Module, tuple]:
    torch.manual_seed(seed)
    model, args = ZOO2[name].make()
    return model.eval(), args


def fresh(args: tuple) -> tuple:
    """The arguments for one more call: a generator among them starts again from its seed, so
    every run draws the same numbers."""
    return tuple(torch.Generator().manual_seed(a.initial_seed()) if isinstance(a, torch.Generator) else a for a in args)
