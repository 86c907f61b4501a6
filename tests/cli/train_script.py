"""A training script written for torch.compile, run unmodified by the command-line tests: as
`python train_script.py` (torch.compile) and as `python -m framegraph run train_script.py`.
It prints its losses as JSON on the last line."""

import json
import sys

import torch
import torch._dynamo

torch._dynamo.config.cache_size_limit = 16


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 32))
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)) + x.mean())


@torch.compile(backend="aot_eager")
def loss_fn(logits, target):
    return torch.nn.functional.cross_entropy(logits, target)


def main(steps: int) -> None:
    torch.manual_seed(0)
    model = Net()
    model.compile(backend="aot_eager")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        x = torch.randn(8 + step % 2, 16)  # two batch sizes: a recompile, then a dynamic size
        torch._dynamo.mark_dynamic(x, 0) if step == 3 else None
        target = torch.randint(0, 4, (x.shape[0],))
        loss = loss_fn(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(json.dumps(losses))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
