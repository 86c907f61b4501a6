"""A first run: compile a small model and report what happened.

    python examples/quickstart.py [--backend eager|aot_eager|inductor]
"""

from __future__ import annotations

import argparse
import time

import torch

import framegraph


def mlp(x, layers):
    for weight, bias in layers[:-1]:
        x = torch.relu(x @ weight.t() + bias)
    weight, bias = layers[-1]
    return torch.log_softmax(x @ weight.t() + bias, dim=-1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="eager", choices=framegraph.list_backends())
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    sizes = [(64, 32), (64, 64), (64, 64), (10, 64)]
    layers = [(torch.randn(o, i) / i ** 0.5, torch.zeros(o)) for o, i in sizes]
    x = torch.randn(8, 32)
    compiled = framegraph.compile(mlp, backend=args.backend)
    start = time.perf_counter()
    out = compiled(x, layers)
    first_call = time.perf_counter() - start
    torch.testing.assert_close(out, mlp(x, layers))
    stats = framegraph.counters["stats"]
    print(f"backend {args.backend}: {stats['unique_graphs']} graph, {stats['calls_captured']} ops captured, "
          f"first call {first_call * 1000:.1f} ms; result equals eager")


if __name__ == "__main__":
    main()
