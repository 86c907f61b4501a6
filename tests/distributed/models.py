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


class Block(torch.nn.Module):
    """A residual MLP block: the unit FSDP2 shards and compiles one by one."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.up = torch.nn.Linear(width, width)
        self.down = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.relu(self.up(x)))


class Blocks(torch.nn.Module):
    def __init__(self, n: int = 4) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


class UnrolledBlocks(Blocks):
    """The blocks called one by one, with a little work between them: no loop, so a frame
    calling FSDP2-managed blocks is split at each call (as torch.compile splits it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks[0](x) * 2
        x = self.blocks[1](x).relu()
        x = self.blocks[2](x)
        return self.blocks[3](x) + 1
