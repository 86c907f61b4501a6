"""Models of the distributed tests; module-level, so spawned processes import them by name."""

from __future__ import annotations

import torch


class Layers(torch.nn.Module):
    """`n` linear layers of `width`² floats (width 512: 1 MB each), ReLU between them."""

    def __init__(self, n: int = 4, width: int = 512) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x
