"""Second-zoo text models: LoRA adapters from peft on a transformers Llama, and sentence
embeddings pooled the way sentence-transformers pools them (mean over the attention mask,
or the first token, then normalised)."""

from __future__ import annotations

import torch
from torch import nn

VOCAB = 128


def llama(layers: int = 2) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=64))


def lora_llama() -> nn.Module:
    from peft import LoraConfig, get_peft_model

    return get_peft_model(llama(), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                              lora_dropout=0.0))


class SentenceEmbedding(nn.Module):
    def __init__(self, encoder: str, pooling: str) -> None:
        super().__init__()
        from transformers import AutoModel, BertConfig, DistilBertConfig

        small = dict(vocab_size=VOCAB, max_position_embeddings=64)
        config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, **small) \
            if encoder == "bert" else DistilBertConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=128, **small)
        self.encoder = AutoModel.from_config(config)
        self.pooling = pooling

    def forward(self, input_ids, attention_mask):
        tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if self.pooling == "cls":
            pooled = tokens[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).expand(tokens.size()).float()
            pooled = (tokens * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
        return nn.functional.normalize(pooled, p=2, dim=1)


def padded_batch(seq: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    mask = torch.ones(2, seq, dtype=torch.long)
    mask[1, seq - 3:] = 0
    return torch.randint(0, VOCAB, (2, seq), generator=torch.Generator().manual_seed(0)), mask
