"""Models the tests and benchmarks share: `gpt` is our own small GPT; `zoo` builds real
library models (transformers, timm, torchvision) from small configs, with random weights."""

from .gpt import GPT, gpt_inputs  # noqa: F401
