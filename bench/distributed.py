"""Training steps on 2 gloo processes: eager vs framegraph vs torch.compile, for DDP and FSDP2.

    python -m bench.distributed [--backend aot_eager] [--steps 30]

Both compilers get the same backend (aot_eager by default: no code generation, so the
numbers are the frontends' and the split's, not inductor's kernels). Reported on rank 0: the
first step's time (compile included), the median steady-state step time, and the number of
graphs each backend call received.
- DDP: 4 linear layers of 1 MB, bucket_cap_mb=1, the DDP module compiled (DDP's bucket split).
- FSDP2: 4 residual blocks of two 1 MB linear layers, each block `fully_shard`ed, then the
  root; each block's forward compiled (per block, as FSDP2 is compiled: its hooks run eagerly
  around each block).
framegraph runs before torch.compile, so its first step also pays AOTAutograd's one-time
start-up in the process (~0.2 s).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import socket
import statistics
import time

import torch


class Layers(torch.nn.Module):
    def __init__(self, n: int = 4, width: int = 512) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class Block(torch.nn.Module):
    def __init__(self, width: int = 512) -> None:
        super().__init__()
        self.up = torch.nn.Linear(width, width)
        self.down = torch.nn.Linear(width, width)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


class Blocks(torch.nn.Module):
    def __init__(self, n: int = 4) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(n))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def _fsdp2(base, mesh, compiler):
    """A copy of `base`, its blocks sharded one by one (each block's forward compiled by
    `compiler`, if given), then the root."""
    from torch.distributed.fsdp import fully_shard

    model = copy.deepcopy(base)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
        if compiler is not None:
            block.forward = compiler(block.forward)
    fully_shard(model, mesh=mesh)
    return model


def _steps(model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for x in data:
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return times


def _worker(rank, port, backend_name, steps):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import framegraph
    from framegraph.backends import lookup_backend

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(0)
    base = Layers()
    data = [torch.randn(32, 512) for _ in range(steps)]
    counts = {}

    def counting(name, inner):
        counts[name] = 0

        def backend(gm, example_inputs):
            counts[name] += 1
            return inner(gm, example_inputs)
        return backend

    from torch._dynamo.backends.registry import lookup_backend as torch_lookup

    runs = {
        "eager": lambda m: m,
        "framegraph": lambda m: framegraph.compile(m, backend=counting("framegraph", lookup_backend(backend_name))),
        "torch.compile": lambda m: torch.compile(m, backend=counting("torch.compile", torch_lookup(backend_name))),
    }
    def line(name, times):
        median = statistics.median(times[5:])
        return f"| {name} | {times[0] * 1000:.1f} | {median * 1000:.2f} | {counts.get(name, '-')} |"

    ddp_lines = [line(name, _steps(make(DistributedDataParallel(copy.deepcopy(base), bucket_cap_mb=1)), data))
                 for name, make in runs.items()]

    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2,))
    torch.manual_seed(0)
    blocks = Blocks()

    def every_block(compile_fn, name, inner):  # one backend for all blocks, as a user compiles them
        backend = counting(name, inner)
        return lambda fn: compile_fn(fn, backend=backend)

    per_block = {
        "eager": lambda: None,
        "framegraph": lambda: every_block(framegraph.compile, "framegraph", lookup_backend(backend_name)),
        "torch.compile": lambda: every_block(torch.compile, "torch.compile", torch_lookup(backend_name)),
    }
    fsdp_lines = [line(name, _steps(_fsdp2(blocks, mesh, make()), data)) for name, make in per_block.items()]
    if rank == 0:
        for title, lines in (("DDP step", ddp_lines), ("FSDP2 step, per-block compiled", fsdp_lines)):
            print(f"{title}, 2 gloo processes, backend {backend_name}, {steps} steps")
            print("| run | first step (ms) | median step (ms) | graphs |")
            print("|---|---|---|---|")
            print("\n".join(lines))
            print()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    torch.multiprocessing.spawn(_worker, args=(port, args.backend, args.steps), nprocs=2, join=True)


if __name__ == "__main__":
    main()
