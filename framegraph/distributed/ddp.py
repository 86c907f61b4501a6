"""The DDP split: a graph captured inside DistributedDataParallel's forward is cut at the
boundaries of DDP's gradient buckets, and each piece is compiled by the backend on its own.

Why: DDP all-reduces a bucket of gradients as soon as autograd has produced all of them. A
graph compiled as one piece (an AOTAutograd function) produces every gradient at the end of
its single backward, so no all-reduce overlaps backward compute. Cut at the buckets, each
piece's backward finishes its bucket's gradients and DDP's hooks fire in between.

Buckets are filled as DDP fills them: parameters in the order their gradients become ready,
the reverse of the order the graph uses them, up to `bucket_bytes_cap` bytes (the first one
up to DDP's first-bucket size). This follows torch.compile's DDP optimizer node for node, so
both split a graph into the same pieces.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
import torch.fx
from torch.fx.passes.split_module import split_module
from torch.nn.parallel import DistributedDataParallel

from .. import config

REASON = ("DDP optimizer: the graph is split at DDP's gradient-bucket boundaries so that each bucket's "
          "all-reduce overlaps the rest of backward; set framegraph.config.optimize_ddp = False for one graph")


def ddp_backend(backend: Callable) -> Callable:
    """The backend to use for a graph captured now: `backend` itself unless a DDP forward is
    in progress (the graph is part of the module DDP runs) and the split is on."""
    ddp = DistributedDataParallel._get_active_ddp_module()
    if ddp is None or not config.optimize_ddp:
        return backend
    first_cap = min(torch.distributed._DEFAULT_FIRST_BUCKET_BYTES, ddp.bucket_bytes_cap)
    return DDPSplitBackend(backend, ddp, ddp.bucket_bytes_cap, first_cap)


@dataclasses.dataclass
class Bucket:
    size: int = 0  # bytes of the parameters counted towards the cap
    params: list[str] = dataclasses.field(default_factory=list)
    nodes: list[torch.fx.Node] = dataclasses.field(default_factory=list)


class DDPSplitBackend:
    def __init__(self, backend: Callable, ddp: DistributedDataParallel, bucket_bytes_cap: int,
                 first_bucket_cap: int) -> None:
        self.backend = backend
        self.ddp = ddp
        self.bucket_bytes_cap = bucket_bytes_cap
        self.first_bucket_cap = first_bucket_cap
        self.buckets: list[Bucket] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        buckets = self.assign(gm, _fake_mode(example_inputs))
        self.buckets = buckets
        if len(buckets) == 1:
            return self.backend(gm, example_inputs)
        partition = {node: index for index, bucket in enumerate(buckets) for node in bucket.nodes}
        split = split_module(gm, None, lambda node: partition[node])
        _compile_pieces(split, self.backend, example_inputs)
        gm.meta["split_reason"] = self.describe(buckets)
        return split.forward

    def assign(self, gm: torch.fx.GraphModule, fake_mode) -> list[Bucket]:
        """Nodes to buckets, walking the graph backwards: a bucket closes once its parameters
        reach the cap and one of its nodes feeds a later piece (a piece with no output cannot
        be cut out)."""
        ignored = self._ignored(fake_mode)
        buckets = [Bucket()]
        for node in reversed(gm.graph.nodes):
            if node.op in ("output", "placeholder"):
                continue
            cap = self.first_bucket_cap if len(buckets) == 1 else self.bucket_bytes_cap
            if buckets[0].size >= cap and _has_external_user(buckets[0]):
                buckets.insert(0, Bucket())
            for param_node, param in _parameters_read(gm, node):
                if param.requires_grad and id(param) not in ignored:
                    buckets[0].size += param.untyped_storage().nbytes()
                    buckets[0].params.append(param_node)
            buckets[0].nodes.append(node)
        if len(buckets) > 1 and buckets[0].size == 0:
            # The nodes before the first parameter is used: no gradient of theirs to wait for.
            buckets[1].nodes.extend(buckets.pop(0).nodes)
        return buckets

    def _ignored(self, fake_mode) -> set[int]:
        """ids of the fakes of the parameters DDP does not all-reduce (`_ddp_ignored`): the
        graph holds fakes, and the mode hands back the fake it made for a tensor."""
        params = [p for p in self.ddp.module.parameters() if getattr(p, "_ddp_ignored", False)]
        if not params or fake_mode is None:
            return {id(p) for p in params}
        return {id(fake_mode.from_tensor(p)) for p in params}

    def describe(self, buckets: list[Bucket]) -> str:
        sizes = ", ".join(f"{b.size} B ({len(b.params)} params)" for b in buckets)
        return (f"{REASON}. bucket_bytes_cap={self.bucket_bytes_cap}, first bucket cap="
                f"{self.first_bucket_cap}: {len(buckets)} subgraphs, in graph order: {sizes}")


def _parameters_read(gm: torch.fx.GraphModule, node: torch.fx.Node):
    """(name, parameter) for the parameters `node` reads: graph inputs holding a parameter
    (framegraph passes a module's parameters in), or attributes of the graph module."""
    if node.op == "get_attr":
        value = getattr(gm, node.target)
        if isinstance(value, torch.nn.Parameter):
            yield node.target, value
        return
    if node.op not in ("call_function", "call_method"):
        return
    for arg in node.args:
        if isinstance(arg, torch.fx.Node) and arg.op == "placeholder":
            value = arg.meta.get("example_value")
            if isinstance(value, torch.nn.Parameter):
                yield arg.target, value


def _has_external_user(bucket: Bucket) -> bool:
    inside = set()
    for node in bucket.nodes:
        inside.add(node)
        if any(user not in inside for user in node.users):
            return True
    return False


def _fake_mode(example_inputs: list):
    from torch._guards import detect_fake_mode

    return detect_fake_mode(example_inputs)


def _compile_pieces(split: torch.fx.GraphModule, backend: Callable, example_inputs: list) -> None:
    """Replaces each piece of `split` with what `backend` makes of it. A piece's example
    inputs are the fake outputs of the pieces before it, so its inputs are propagated
    through the uncompiled pieces in order."""
    fake_mode = _fake_mode(example_inputs)
    env: dict[torch.fx.Node, Any] = {}
    inputs = iter(example_inputs)
    for node in list(split.graph.nodes):
        if node.op == "placeholder":
            env[node] = next(inputs)
        elif node.op == "call_module":
            piece = split.get_submodule(node.target)
            args = torch.fx.node.map_arg(node.args, env.__getitem__)
            compiled = _compile_piece(piece, backend, list(args))
            split.delete_submodule(node.target)
            node.target = f"compiled_{node.target}"
            split.add_submodule(node.target, compiled)
            env[node] = _propagate(piece, args, fake_mode)
        elif node.op == "call_function":  # getitem on a piece's outputs
            env[node] = node.target(*torch.fx.node.map_arg(node.args, env.__getitem__))
    split.recompile()


def _propagate(piece: torch.fx.GraphModule, args: tuple, fake_mode) -> Any:
    if fake_mode is None:
        return piece(*args)
    # Constants the graph holds as attributes are real tensors.
    previous, fake_mode.allow_non_fake_inputs = fake_mode.allow_non_fake_inputs, True
    try:
        with fake_mode:
            return piece(*args)
    finally:
        fake_mode.allow_non_fake_inputs = previous


class _Piece(torch.nn.Module):
    """A compiled piece, called as the uncompiled one: AOTAutograd-based backends need a
    tuple output, so a piece returning one value is compiled returning a 1-tuple."""

    def __init__(self, compiled: Callable, single: bool) -> None:
        super().__init__()
        self.compiled = compiled
        self.single = single

    def forward(self, *args: Any) -> Any:
        outputs = self.compiled(*args)
        return outputs[0] if self.single else outputs


def _compile_piece(piece: torch.fx.GraphModule, backend: Callable, args: list) -> _Piece:
    output = next(node for node in reversed(piece.graph.nodes) if node.op == "output")
    single = not isinstance(output.args[0], tuple)
    graph = piece.graph
    if single:
        graph = torch.fx.Graph()
        remap: dict = {}
        graph.graph_copy(piece.graph, remap)
        graph.output((remap[output.args[0]],) if isinstance(output.args[0], torch.fx.Node)
                     else (output.args[0],))
    tupled = torch.fx.GraphModule(piece, graph) if single else piece
    return _Piece(backend(tupled, args), single)
