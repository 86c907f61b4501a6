"""Graphs written for another process: the nodes as a flat list (pickling a torch.fx Graph
recurses once per node, too deep for a model's graph), each argument that is a node written
by the node's name, with only the metadata a person or a backend reads besides example
values (fake tensors belong to the process that made them); and the attributes the get_attr
nodes read (constants the trace made, subgraphs). The backend gets fake inputs made from the
saved tensor facts, as from a trace.

The code fx generated for the graph is saved too, as source and as a compiled code object:
a GraphModule loaded for a backend takes it instead of generating it node by node, and the
eager backend, which would only run that code, gets it without a Graph at all
(`eager_forward`)."""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import operator
import pickle
import types
from typing import Any, Callable

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from ..eval_frame import run_eagerly_inside
from ..output_graph import has_subclass_values
from ..shapes import torch_source
from .portable import NotPortable, graph_dumps

_KEPT_META = ("stack_trace", "custom")


@dataclasses.dataclass(frozen=True)
class NodeRef:
    name: str


def graph_bytes(gm: torch.fx.GraphModule) -> bytes:
    nodes = []
    for node in gm.graph.nodes:
        to_ref = lambda arg: NodeRef(arg.name)  # noqa: E731
        nodes.append((node.op, node.name, node.target, torch.fx.node.map_arg(node.args, to_ref),
                      torch.fx.node.map_arg(node.kwargs, to_ref), node.type,
                      {key: node.meta[key] for key in _KEPT_META if key in node.meta}))
    attributes = {node.target: operator.attrgetter(node.target)(gm) for node in gm.graph.nodes if node.op == "get_attr"}
    try:
        code = graph_dumps(_python_code(gm))
    except NotPortable:  # the graph is still saved: the next process generates its code again
        code = None
    # (the nodes apart: the eager backend's load does not read them)
    return graph_dumps((graph_dumps(nodes), attributes, code))


def _python_code(gm: torch.fx.GraphModule) -> tuple | None:
    """What fx generated for the graph's forward (its source and the globals it runs in): a
    later process gives it back to the GraphModule instead of generating it node by node
    again, which is a third of loading a graph. With it the forward's code object, compiled
    (compiling the source again is another sixth), unless a node's value is a tensor subclass
    (whose graph must not run as it is: `output_graph.ready_to_install`)."""
    forward = type(gm).__dict__.get("forward")
    if type(getattr(gm.graph, "_codegen", None)) is not torch.fx.graph.CodeGen or not isinstance(forward, types.FunctionType):
        return None
    scope = {name: value for name, value in forward.__globals__.items() if name != "__builtins__"}
    plain = not has_subclass_values(gm) and not forward.__defaults__ and not forward.__closure__
    compiled = marshal.dumps(forward.__code__) if plain else None
    return gm.code, scope, getattr(gm, "_lineno_map", None), getattr(gm, "_prologue_start", 0), compiled


def eager_forward(data: bytes) -> Callable | None:
    """What the eager backend makes of the saved graph (its forward, bound to an object holding
    the attributes it reads), made without building the graph; None if the code was not saved."""
    _, attributes, code = pickle.loads(data)
    if code is None:
        return None
    source, scope, _, _, compiled = pickle.loads(code)
    if compiled is None:
        return None
    filename = _fx_source_name(source, scope)
    forward = types.FunctionType(_renamed(marshal.loads(compiled), filename), {**scope, "__builtins__": builtins})
    run_eagerly_inside(forward.__code__)  # as output_graph.ready_to_install marks a traced graph's
    root = torch.nn.Module()
    for target, value in attributes.items():  # placed as GraphModule places a dict root's
        torch.fx.graph_module._assign_attr(value, root, target)
    return types.MethodType(forward, root)


def _fx_source_name(source: str, scope: dict) -> str:
    """A file name under which tracebacks find the source, as fx registers what it compiles."""
    loader = getattr(torch.fx.graph_module, "_loader", None)
    return loader.cache(source, scope) if loader is not None else "<framegraph loaded graph>"


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def graph_module(data: bytes) -> torch.fx.GraphModule:
    nodes, attributes, code = pickle.loads(data)
    nodes = pickle.loads(nodes)
    code = pickle.loads(code)[:4] if code is not None else None
    graph = torch.fx.Graph()
    made: dict[str, torch.fx.Node] = {}

    def from_ref(value: Any) -> Any:
        return torch.fx.node.map_aggregate(value, lambda v: made[v.name] if isinstance(v, NodeRef) else v)

    for op, name, target, args, kwargs, type_, meta in nodes:
        node = graph.create_node(op, target, from_ref(args), from_ref(kwargs), name, type_)
        node.meta.update(meta)
        made[name] = node
    if code is not None:
        saved = torch.fx.graph.PythonCode(*code)
        graph.python_code = lambda *args, **kwargs: saved  # (for this one recompile only)
    try:
        # A dict root: GraphModule copies each get_attr target into place, submodules made on the way.
        return torch.fx.GraphModule(attributes, graph, class_name="GraphModule")
    finally:
        graph.__dict__.pop("python_code", None)


def propagate(gm: torch.fx.GraphModule, examples: list[torch.Tensor]) -> None:
    """Gives every node the example value a trace gives it (`val`, `example_value`): a backend
    other than eager may read them (AOTAutograd's cache takes only a method call on a node it
    can see is a tensor)."""
    FakeTensorProp(gm, examples[0].fake_mode if examples else FakeTensorMode()).propagate_dont_convert_inputs(*examples)
    inputs = iter(examples)
    for node in gm.graph.nodes:
        if node.op == "placeholder":  # the input itself, as a trace has it: `val` is a detached copy
            node.meta["example_value"] = next(inputs)
        elif "val" in node.meta:
            node.meta["example_value"] = node.meta["val"]


def fake_inputs(inputs: list[tuple], live: list) -> tuple[list, ShapeEnv]:
    """The graph's inputs as a trace hands them to the backend, and their ShapeEnv. `live`
    holds, beside each input whose spec names a source (`spec_source`), what that source reads
    in the frame being loaded (None if it could not be read): a parameter's fake is the mode's
    fake of the live one; an input with symbols is made from the live value with the trace's
    dynamic dimensions, so its symbols relate as this call's sizes do; the rest are made from
    their specs."""
    # The graph's constants are real tensors: the mode takes them as they are. A ShapeEnv, as
    # a trace's mode has: without one AOTAutograd does not use its cache.
    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    return [_symbolic_input(mode, value, *spec) if is_symbolic(spec) else _fake_input(mode, value, *spec)
            for spec, value in zip(inputs, live)], mode.shape_env


def is_symbolic(spec: tuple) -> bool:
    """A spec of an input with symbols: (kind, source, dynamic dimensions)."""
    return len(spec) == 3


def spec_source(spec: tuple) -> Any:
    """The source a spec's input is read from at load, or None when it is made from the spec."""
    return spec[1] if is_symbolic(spec) else spec[-1]


def _symbolic_input(mode: FakeTensorMode, live: Any, kind: str, source: Any, dims: tuple) -> Any:
    named = torch_source(source)
    if kind == "int" and type(live) is int:
        return mode.shape_env.create_unspecified_symint_and_symbol(live, named, DimDynamic.DYNAMIC)
    if kind == "tensor" and type(live) in (torch.Tensor, torch.nn.Parameter) and max(dims) < live.dim():
        context = StatelessSymbolicContext([DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC
                                            for d in range(live.dim())])
        return mode.from_tensor(live, source=named, symbolic_context=context)
    raise TypeError(f"{source.name} is a {type(live).__name__}, where the saved graph takes a {kind}")


def _fake_input(mode: FakeTensorMode, live: Any, size: tuple, stride: tuple, offset: int,
                dtype: torch.dtype, device: torch.device, grad: bool, parameter: Any) -> torch.Tensor:
    # (a parameter's guards held: the live one has the same sizes, dtype and device)
    if isinstance(live, torch.nn.Parameter) and live.shape == size and live.stride() == stride:
        return mode.from_tensor(live, static_shapes=True)
    with mode:
        if offset == 0:
            made = torch.empty_strided(size, stride, dtype=dtype, device=device)
        else:
            made = torch.empty(offset + _extent(size, stride), dtype=dtype, device=device).as_strided(size, stride, offset)
        return torch.nn.Parameter(made, requires_grad=grad) if parameter is not None else made.detach().requires_grad_(grad)


def _extent(size: tuple, stride: tuple) -> int:
    return 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
