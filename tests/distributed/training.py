"""What the distributed tests share inside each process: a training loop, counting backends
for framegraph and for torch.compile (the reference), and the comparison of two runs."""

from __future__ import annotations

import torch

STEPS = 20


def batches(rank: int, steps: int, shape=(8, 512)) -> list[torch.Tensor]:
    """Each rank its own data, so the gradients differ until they are all-reduced."""
    generator = torch.Generator().manual_seed(1000 + rank)
    return [torch.randn(*shape, generator=generator) for _ in range(steps)]


def train(model: torch.nn.Module, step, data: list[torch.Tensor], lr: float = 0.01) -> list[float]:
    """Runs `step(x) -> loss` and an SGD update per batch; the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for x in data:
        optimizer.zero_grad(set_to_none=True)
        loss = step(x)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().clone())
    return losses


def assert_same_run(expected_losses, expected_model, losses, model, what: str, tolerance: float = 0.0) -> None:
    """Losses and parameters equal (within `tolerance`, 0 for bit-equal)."""
    close = dict(rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(torch.stack(losses), torch.stack(expected_losses), **close,
                               msg=lambda m: f"{what}: losses differ from the uncompiled run\n{m}")
    for (name, p), (_, q) in zip(model.named_parameters(), expected_model.named_parameters()):
        torch.testing.assert_close(p, q, **close, msg=lambda m: f"{what}: parameter {name} differs\n{m}")


class Counting:
    """A backend that counts the graphs it is given and runs each as it is (or through
    `inner`, another backend)."""

    def __init__(self, inner=None) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.inner = inner

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward if self.inner is None else self.inner(gm, example_inputs)

    @property
    def count(self) -> int:
        return len(self.graphs)


def torch_breaks() -> int:
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values())


def framegraph_breaks() -> int:
    from framegraph.counters import counters

    return sum(counters["graph_break"].values())


def reset_all() -> None:
    import torch._dynamo
    from torch._dynamo.utils import counters as torch_counters

    import framegraph
    from framegraph.counters import counters

    framegraph.reset()
    counters.clear()
    torch._dynamo.reset()
    torch_counters.clear()
