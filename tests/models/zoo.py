"""Real models from the libraries users run, built from small configs with random weights.

Every entry builds `(model, args, kwargs)` with no network access: 2 layers, hidden sizes
of 64 to 128, a vocabulary of 128, and small images. `ZOO` maps a name to its `Entry`;
`build(name)` makes the model in eval mode with a fixed seed.

torchvision from the package registry is built against the CUDA torch of its release and
its `_C` does not load beside the CPU torch this project uses; importing it then fails
while it registers fake kernels for `torchvision::nms` and `torchvision::qnms`. We define
those two operator schemas first (no kernels: the models here never call them), which is
all its Python needs. transformers imports torchvision whenever it is installed, so this
module must be imported before either.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any, Callable

import torch


def _define_torchvision_schemas() -> None:
    try:
        torch.ops.torchvision.nms.default
        return  # a working torchvision (or an earlier call) defined them
    except (AttributeError, RuntimeError):
        pass
    global _TORCHVISION_LIB
    _TORCHVISION_LIB = torch.library.Library("torchvision", "DEF")  # kept alive: it owns the schemas
    for op in ("nms", "qnms"):
        _TORCHVISION_LIB.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


_TORCHVISION_LIB = None
if importlib.util.find_spec("torchvision") is not None:
    _define_torchvision_schemas()

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
HAVE_TIMM = importlib.util.find_spec("timm") is not None
HAVE_TORCHVISION = importlib.util.find_spec("torchvision") is not None

VOCAB = 128
SEQ = 8


@dataclasses.dataclass(frozen=True)
class Entry:
    family: str                       # decoder, encoder, encoder-decoder, audio, vision, cnn
    library: str                      # transformers, timm, torchvision
    make: Callable[[], tuple[torch.nn.Module, tuple, dict]]


def _tokens(batch: int = 2, seq: int = SEQ) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq))


def _image(size: int = 32, batch: int = 2) -> torch.Tensor:
    return torch.randn(batch, 3, size, size)


# ---- transformers -----------------------------------------------------------------------------
def _hf(config_name: str, model_name: str, inputs: Callable[[], dict], **config: Any):
    def make():
        import transformers

        cfg = getattr(transformers, config_name)(**config)
        model = getattr(transformers, model_name)(cfg)
        return model, (), inputs()
    return make


def _ids() -> dict:
    return {"input_ids": _tokens()}


def _ids_mask() -> dict:
    return {"input_ids": _tokens(), "attention_mask": torch.ones(2, SEQ, dtype=torch.long)}


_SMALL = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=128, max_position_embeddings=64)
_LLAMA_LIKE = dict(_SMALL, num_key_value_heads=2)

DECODERS = {
    "gpt2": _hf("GPT2Config", "GPT2LMHeadModel", _ids, vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                n_positions=64, bos_token_id=0, eos_token_id=0),
    "gpt_neox": _hf("GPTNeoXConfig", "GPTNeoXForCausalLM", _ids, **_SMALL),
    "gptj": _hf("GPTJConfig", "GPTJForCausalLM", _ids, vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                n_positions=64, rotary_dim=8, bos_token_id=0, eos_token_id=0),
    "opt": _hf("OPTConfig", "OPTForCausalLM", _ids, vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
               num_attention_heads=4, ffn_dim=128, max_position_embeddings=64, word_embed_proj_dim=64,
               bos_token_id=0, eos_token_id=0, pad_token_id=1),
    "bloom": _hf("BloomConfig", "BloomForCausalLM", _ids, vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4,
                 bos_token_id=0, eos_token_id=0),
    "falcon": _hf("FalconConfig", "FalconForCausalLM", _ids, vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=4, bos_token_id=0, eos_token_id=0),
    "llama": _hf("LlamaConfig", "LlamaForCausalLM", _ids, **_LLAMA_LIKE),
    "mistral": _hf("MistralConfig", "MistralForCausalLM", _ids, **_LLAMA_LIKE),
    "qwen2": _hf("Qwen2Config", "Qwen2ForCausalLM", _ids, **_LLAMA_LIKE),
    "qwen3": _hf("Qwen3Config", "Qwen3ForCausalLM", _ids, head_dim=16, **_LLAMA_LIKE),
    "phi": _hf("PhiConfig", "PhiForCausalLM", _ids, **_SMALL),
    "phi3": _hf("Phi3Config", "Phi3ForCausalLM", _ids, pad_token_id=0, bos_token_id=0, eos_token_id=0,
                **_LLAMA_LIKE),
    "gemma": _hf("GemmaConfig", "GemmaForCausalLM", _ids, head_dim=16, **_LLAMA_LIKE),
    "gemma2": _hf("Gemma2Config", "Gemma2ForCausalLM", _ids, head_dim=16, **_LLAMA_LIKE),
    "mixtral": _hf("MixtralConfig", "MixtralForCausalLM", _ids, num_local_experts=4, num_experts_per_tok=2,
                   **_LLAMA_LIKE),
}

ENCODERS = {
    "bert": _hf("BertConfig", "BertModel", _ids_mask, **_SMALL),
    "roberta": _hf("RobertaConfig", "RobertaModel", _ids_mask, pad_token_id=1, **_SMALL),
    "distilbert": _hf("DistilBertConfig", "DistilBertModel", _ids_mask, vocab_size=VOCAB, dim=64, n_layers=2,
                      n_heads=4, hidden_dim=128, max_position_embeddings=64),
    "albert": _hf("AlbertConfig", "AlbertModel", _ids_mask, embedding_size=32, **_SMALL),
    "electra": _hf("ElectraConfig", "ElectraModel", _ids_mask, embedding_size=32, **_SMALL),
    "deberta_v2": _hf("DebertaV2Config", "DebertaV2Model", _ids_mask, **_SMALL),
    "mobilebert": _hf("MobileBertConfig", "MobileBertModel", _ids_mask, embedding_size=32, intra_bottleneck_size=32,
                      true_hidden_size=32, num_feedforward_networks=2, **_SMALL),
    "xlnet": _hf("XLNetConfig", "XLNetModel", _ids_mask, vocab_size=VOCAB, d_model=64, n_layer=2, n_head=4,
                 d_inner=128),
}


def _seq2seq() -> dict:
    return {"input_ids": _tokens(), "decoder_input_ids": _tokens(seq=4)}


def _whisper() -> dict:
    return {"input_features": torch.randn(2, 16, 64), "decoder_input_ids": _tokens(seq=4)}


ENCODER_DECODERS = {
    "t5": _hf("T5Config", "T5ForConditionalGeneration", _seq2seq, vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
              num_layers=2, num_heads=4, decoder_start_token_id=0),
    "bart": _hf("BartConfig", "BartForConditionalGeneration", _seq2seq, vocab_size=VOCAB, d_model=64,
                encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64),
    "whisper": _hf("WhisperConfig", "WhisperForConditionalGeneration", _whisper, vocab_size=VOCAB, d_model=64,
                   encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                   encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=32,
                   max_target_positions=64, decoder_start_token_id=0, pad_token_id=0, bos_token_id=0,
                   eos_token_id=0),
    "wav2vec2": _hf("Wav2Vec2Config", "Wav2Vec2Model", lambda: {"input_values": torch.randn(2, 800)},
                    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                    conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                    num_conv_pos_embedding_groups=4),
}


def _pixels(size: int = 32) -> Callable[[], dict]:
    return lambda: {"pixel_values": _image(size)}


_VIT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=32,
            patch_size=8)

HF_VISION = {
    "clip": _hf("CLIPVisionConfig", "CLIPVisionModel", _pixels(), **_VIT),
    "vit": _hf("ViTConfig", "ViTModel", _pixels(), **_VIT),
    "deit": _hf("DeiTConfig", "DeiTModel", _pixels(), **_VIT),
    "swin": _hf("SwinConfig", "SwinModel", _pixels(), image_size=32, patch_size=4, embed_dim=16, depths=(1, 1),
                num_heads=(2, 4), window_size=4),
    "convnext": _hf("ConvNextConfig", "ConvNextModel", _pixels(), hidden_sizes=(16, 32), depths=(1, 1),
                    num_stages=2),
    "hf_resnet": _hf("ResNetConfig", "ResNetModel", _pixels(), embedding_size=16, hidden_sizes=(16, 32),
                     depths=(1, 1)),
}


# ---- torchvision and timm ---------------------------------------------------------------------
def _torchvision(name: str, size: int = 32, **kwargs: Any):
    def make():
        import torchvision

        return getattr(torchvision.models, name)(weights=None, num_classes=10, **kwargs), (_image(size),), {}
    return make


TORCHVISION = {
    "tv_resnet18": _torchvision("resnet18"),
    "tv_mobilenet_v3_small": _torchvision("mobilenet_v3_small"),
    "tv_efficientnet_b0": _torchvision("efficientnet_b0"),
    "tv_convnext_tiny": _torchvision("convnext_tiny"),
    "tv_swin_t": _torchvision("swin_t"),
    "tv_shufflenet_v2": _torchvision("shufflenet_v2_x0_5"),
}


def _tv_vit():
    """vit_b_16's architecture (torchvision's VisionTransformer), small."""
    from torchvision.models.vision_transformer import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                              mlp_dim=128, num_classes=10)
    return model, (_image(32),), {}


TORCHVISION["tv_vit_b_16"] = _tv_vit


def _timm(name: str, size: int = 32, **kwargs: Any):
    def make():
        import timm

        return timm.create_model(name, pretrained=False, num_classes=10, **kwargs), (_image(size),), {}
    return make


TIMM = {
    "timm_resnet18": _timm("resnet18"),
    "timm_vit_tiny": _timm("vit_tiny_patch16_224", size=32, img_size=32, patch_size=8, depth=2),
    "timm_efficientnet_b0": _timm("efficientnet_b0"),
    "timm_convnext_atto": _timm("convnext_atto"),
}


ZOO: dict[str, Entry] = {}
for _family, _library, _table in (
    ("decoder", "transformers", DECODERS), ("encoder", "transformers", ENCODERS),
    ("encoder-decoder", "transformers", ENCODER_DECODERS), ("vision", "transformers", HF_VISION),
    ("cnn", "torchvision", TORCHVISION), ("cnn", "timm", TIMM),
):
    for _name, _make in _table.items():
        ZOO[_name] = Entry(_family, _library, _make)


def available(name: str) -> bool:
    library = ZOO[name].library
    return {"transformers": HAVE_TRANSFORMERS, "timm": HAVE_TIMM, "torchvision": HAVE_TORCHVISION}[library]


def build(name: str, seed: int = 0) -> tuple[torch.nn.Module, tuple, dict]:
    """The model in eval mode and inputs for it, the same for every call with one seed."""
    torch.manual_seed(seed)
    model, args, kwargs = ZOO[name].make()
    return model.eval(), args, kwargs
