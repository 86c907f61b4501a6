"""torch.func's transforms: vmap, grad, grad_and_value, jacrev, jacfwd, hessian and jvp.

The function a transform is given is traced into a graph of its own, taking one example (for
vmap: the inputs without their batch dimension) or the inputs as they are; the frame's graph
then applies the transform to that graph in one node (`apply_transform`). Eager runs torch's
transform on the graph module; AOTAutograd traces through it into aten operations, so every
backend takes it. (torch.compile inlines functorch's own Python instead, with its
interpreter levels as graph nodes; either way the call is part of one graph.)

Both ways of writing a transform are met: `torch.vmap(f)(x)` (the transform called while
tracing returns a transformed function) and a function transformed eagerly, a module global
made by `batched = torch.vmap(f)` or a decorator (recognised by the code of the closure
functorch returns, whose cells hold the function and the options).

A transform calls its function once (vmap in chunks, once per chunk): a change the function
makes to outer state (an append to a global list) happens once eagerly, and is kept, replayed
after the graph like the frame's own changes, if it holds no value computed inside.

What a transform's body cannot be (a graph break inside it, a write to an input, a result
that is not tensors, arguments other than tensors and constants, a change to outer state in
chunks) makes the whole call run eagerly at a graph break, where eager's answer and errors
are eager's own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch._functorch.apis as apis
import torch._functorch.eager_transforms as eager_transforms
import torch.utils._pytree as pytree

from ..eval_frame import disable
from ..exc import Unsupported
from ..source import AttrSource, ItemSource
from ..subgraph import SubGraph
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.containers import ListVariable, TupleVariable
from ..variables.tensor import TensorVariable
from . import speculate as spec
from .speculate import GB_TYPE

FORWARD_MODE = ("jacfwd", "hessian")


def apply_transform(body: torch.fx.GraphModule, kind: str, options: tuple, *inputs: Any) -> tuple:
    """In the graph: torch.func's `kind` applied to `body` (which returns a tuple: the
    function's result flattened), called on `inputs`; the result flattened to a tuple.
    Nothing under it is offered to framegraph's hook (functorch's lazy imports script code
    with TorchScript, whose frames are not the program's)."""
    with disable():
        return _apply(body, kind, dict(options), inputs)


def _apply(body, kind: str, options: dict, inputs) -> tuple:
    if kind == "vmap":
        return tuple(torch.func.vmap(body, **options)(*inputs))
    if kind == "jvp":
        n = options.pop("primals")
        primals, tangents, lifted = inputs[:n], inputs[n:2 * n], inputs[2 * n:]
        out, tangent_out = torch.func.jvp(lambda *p: body(*p, *lifted), primals, tangents, **options)
        return (*out, *tangent_out)
    if kind == "call":  # vjp's output: the function itself
        return tuple(body(*inputs))
    if kind == "vjp":  # vjp's pullback applied: the function again, under torch.func.vjp
        n, m = options["primals"], options["outputs"]
        primals, cotangents, lifted = inputs[:n], inputs[n:n + m], inputs[n + m:]
        _, pullback = torch.func.vjp(lambda *p: tuple(body(*p, *lifted)[:m]), *primals)
        return tuple(pullback(tuple(cotangents)))
    has_aux = options.get("has_aux", False)
    if has_aux:
        def fn(*args):
            out = body(*args)
            return out[0], out[1:]
    else:
        def fn(*args):
            return body(*args)[0]
    return tuple(pytree.tree_leaves(getattr(torch.func, kind)(fn, **options)(*inputs)))


@dataclasses.dataclass
class Transform:
    kind: str
    fn: VariableTracker
    options: dict[str, Any]  # the transform's own arguments, as constants


class TransformedFunctionVariable(VariableTracker):
    """What a transform returns while tracing: calling it traces the function and records the
    transform's node."""

    __slots__ = ("transform",)

    def __init__(self, transform: Transform) -> None:
        super().__init__(None)
        self.transform = transform

    def python_type(self) -> type:
        return type(lambda: None)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return call_transformed(tx, self.transform, list(args), dict(kwargs))

    def reconstruct(self, codegen) -> None:
        # Needed at a graph break (its body could not be traced): the transformed function
        # made again, to run eagerly with framegraph's hook off, as a break leaves it.
        codegen.load_callable_const(remake)
        codegen.load_const(self.transform.kind)
        codegen.reconstruct(self.transform.fn)
        codegen.load_const(tuple(self.transform.options.items()))
        codegen.call(3)

    def __repr__(self) -> str:
        return f"TransformedFunctionVariable({self.transform.kind})"


def remake(kind: str, fn: Any, options: tuple) -> Any:
    return disable(TRANSFORMS[kind](fn, **dict(options)))


def _constant(value: VariableTracker, what: str) -> Any:
    if not value.is_python_constant():
        raise Unsupported(GB_TYPE, f"{what} is {value}, not a constant")
    return value.as_python_constant()


def _bind(kind: str, signature_of, args, kwargs, constants: tuple[str, ...] | None = None) -> Transform:
    bound = spec.bind(signature_of, args, kwargs, f"torch.func.{kind}")
    bound.apply_defaults()
    values = dict(bound.arguments)
    fn = values.pop("func")
    options = {key: value if not isinstance(value, VariableTracker) or (constants is not None and key not in constants)
               else _constant(value, f"{kind}'s {key}") for key, value in values.items()}
    return Transform(kind, fn, options)


def _transform_handler(kind: str, signature_of):
    def call(tx, args, kwargs) -> VariableTracker:
        return TransformedFunctionVariable(_bind(kind, signature_of, args, kwargs))
    return call


def _call_jvp(tx, args, kwargs) -> VariableTracker:
    """`torch.func.jvp(func, primals, tangents)`: the output and its directional derivative,
    from one node."""
    if isinstance(tx.output.graph, SubGraph):
        raise Unsupported(GB_TYPE, "torch.func.jvp inside another operator's function")  # as FORWARD_MODE
    transform = _bind("jvp", _jvp_signature, args, kwargs, constants=("strict",))
    primals, tangents = transform.options.pop("primals"), transform.options.pop("tangents")
    if not all(type(v) in (TupleVariable, ListVariable) and all(isinstance(i, TensorVariable) for i in v.items)
               for v in (primals, tangents)) or len(primals.items) != len(tangents.items):
        raise Unsupported(GB_TYPE, "torch.func.jvp with primals and tangents that are not tuples of tensors "
                                   "of one length")
    body = _trace_body(tx, transform, list(primals.items), {}, list(range(len(primals.items))),
                       [p.example for p in primals.items])
    tensors = [leaf for leaf in body.leaves if isinstance(leaf, TensorVariable)]
    if len(tensors) != len(body.leaves) or not tensors:
        raise Unsupported(GB_TYPE, "the function torch.func.jvp differentiates returns something other than tensors")
    spec.close(body, [t.node for t in tensors], may_return_inputs=True)
    module = spec.graph_module(tx, body, "jvp_body")
    lifted = spec.lifted_values(body)
    options = ConstantVariable(tuple(sorted({**transform.options, "primals": len(primals.items)}.items())))
    result = tx.output.record_call(apply_transform, [module, ConstantVariable("jvp"), options,
                                                     *primals.items, *tangents.items, *lifted], {})
    leaves = list(result.items)
    return TupleVariable([spec.rebuild(body.result, leaves), spec.rebuild(body.result, leaves)])


def _jvp_signature(func, primals, tangents, *, strict=False):
    """What framegraph traces of jvp (has_aux runs eagerly)."""


def _closure_handler(kind: str):
    """For a transformed function made eagerly: the cells of functorch's closure hold the
    function and the options."""
    def call(fn, source, tx, args, kwargs) -> VariableTracker:
        from ..variables.builder import wrap

        if source is None:
            raise Unsupported(GB_TYPE, f"a function torch.func.{kind} made, reached where it cannot be guarded")
        names = fn.__code__.co_freevars
        cells = dict(zip(names, (c.cell_contents for c in fn.__closure__)))
        options = {k: v for k, v in cells.items() if k not in ("func", "eager_transforms")}
        # The closure is pinned by identity; its cells are read through it.
        func_source = AttrSource(ItemSource(AttrSource(source, "__closure__"), names.index("func")), "cell_contents")
        transform = Transform(kind, wrap(tx, cells["func"], func_source), options)
        return call_transformed(tx, transform, list(args), dict(kwargs))
    return call


# ---- one call of a transformed function ------------------------------------------------------

def call_transformed(tx, transform: Transform, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> VariableTracker:
    kind, options = transform.kind, dict(transform.options)
    if kind in FORWARD_MODE and isinstance(tx.output.graph, SubGraph):
        # Run on fake tensors inside another transform, forward-mode AD reaches kernels that
        # only inference mode may call, and functorch's levels are left behind.
        raise Unsupported(GB_TYPE, f"torch.func.{kind} inside another operator's function")
    for value in [*args, *kwargs.values()]:
        if not isinstance(value, TensorVariable) and not value.is_python_constant():
            raise Unsupported(GB_TYPE, f"torch.func.{kind} of a function given {value} "
                                       "(only tensors and constants are traced)")
    positions = [i for i, a in enumerate(args) if isinstance(a, TensorVariable)]
    if kind == "vmap":
        in_dims = _vmap_in_dims(options.pop("in_dims"), args)
        examples = [_per_example(tx, args[i].example, in_dims[i]) for i in positions]
        options["in_dims"] = tuple(in_dims[i] for i in positions)
    else:
        examples = [args[i].example for i in positions]
        options["argnums"] = _argnums(kind, options.get("argnums", 0), args, positions)
    body = _trace_body(tx, transform, args, kwargs, positions, examples)
    tensors = [leaf for leaf in body.leaves if isinstance(leaf, TensorVariable)]
    if len(tensors) != len(body.leaves) or not tensors:
        raise Unsupported(GB_TYPE, f"the function torch.func.{kind} transforms returns something other "
                                   "than tensors")
    if kind == "vmap":
        lifted = len(body.graph.placeholders) - body.given
        options["in_dims"] = (*options["in_dims"], *([None] * (len(body.graph.placeholders) - len(positions) - lifted)),
                              *([None] * lifted))
        options["out_dims"] = _vmap_out_dims(options["out_dims"], body)
    else:
        _check_differentiated_output(kind, options, body)
    # The transform is called in Python, not as an operator: an argument handed back (a
    # vmapped in-place method returns its input) is an output like any other.
    spec.close(body, [t.node for t in tensors], may_return_inputs=True)
    module = spec.graph_module(tx, body, f"{kind}_body")
    inputs = spec.outer_values(body, [args[i] for i in positions] +
                               [v for v in kwargs.values() if isinstance(v, TensorVariable)])
    flat = ConstantVariable(tuple(sorted(options.items())))
    result = tx.output.record_call(apply_transform, [module, ConstantVariable(kind), flat, *inputs], {})
    return _structure(kind, options, body, list(result.items))


def _trace_body(tx, transform: Transform, args, kwargs, positions, examples) -> spec.Body:
    """The function traced with fresh placeholders for its tensor arguments (an outer tensor it
    reads is lifted after them, and passed unbatched, undifferentiated)."""
    graph = SubGraph(tx.output.graph, f"function torch.func.{transform.kind} transforms", GB_TYPE)
    # vmap runs the function once on the batched arguments: a write to one is a write to the
    # caller's tensor, which the transform's node makes (and the trace records as its effect).
    graph.writes_inputs = transform.kind == "vmap"
    inner_args = list(args)
    for i, example in zip(positions, examples):
        inner_args[i] = spec.placeholder(graph, args[i].node.name, example)
    inner_kwargs = {key: spec.placeholder(graph, value.node.name, value.example)
                    if isinstance(value, TensorVariable) else value for key, value in kwargs.items()}
    # Each transform calls the function once, as a whole (vmap unless in chunks): a change it
    # makes to outer state happens once eagerly, and is kept.
    once = transform.kind != "vmap" or transform.options.get("chunk_size") is None
    return spec.trace(tx, graph, transform.fn, inner_args, inner_kwargs, runs_once=once)


def _per_example(tx, example: torch.Tensor, dim: int | None) -> torch.Tensor:
    """A fake tensor as the function sees one example of a batched input."""
    if dim is None:
        return example
    size = [s for d, s in enumerate(example.shape) if d != dim]
    with tx.output.fake_mode:
        return torch.empty(size, dtype=example.dtype, device=example.device).requires_grad_(example.requires_grad)


def _vmap_in_dims(in_dims: Any, args: list[VariableTracker]) -> list[int | None]:
    dims = [in_dims] * len(args) if isinstance(in_dims, int) or in_dims is None else in_dims
    if not isinstance(dims, (tuple, list)) or len(dims) != len(args):
        raise Unsupported(GB_TYPE, f"vmap's in_dims {in_dims!r} for {len(args)} arguments (eager raises)")
    normal = []
    for arg, dim in zip(args, dims):
        if dim is None:
            normal.append(None)
        elif not isinstance(arg, TensorVariable) or not isinstance(dim, int) or isinstance(dim, bool) \
                or not -arg.example.dim() <= dim < max(arg.example.dim(), 1):
            raise Unsupported(GB_TYPE, f"vmap's in_dim {dim!r} for the argument {arg} (eager raises)")
        else:
            normal.append(dim % arg.example.dim())
    if all(d is None for d in normal):
        raise Unsupported(GB_TYPE, "vmap with no batched tensor argument (eager raises)")
    return normal


def _vmap_out_dims(out_dims: Any, body: spec.Body) -> Any:
    if isinstance(out_dims, int) and not isinstance(out_dims, bool):
        return out_dims
    result = body.result
    if isinstance(out_dims, (tuple, list)) and type(result) in (TupleVariable, ListVariable) \
            and len(out_dims) == len(result.items) and all(isinstance(item, TensorVariable) for item in result.items) \
            and all(isinstance(d, int) and not isinstance(d, bool) for d in out_dims):
        return tuple(out_dims)
    raise Unsupported(GB_TYPE, f"vmap's out_dims {out_dims!r} for the result {result}")


def _check_differentiated_output(kind: str, options: dict, body: spec.Body) -> None:
    """The function must return one tensor, or with has_aux a pair of it and the rest."""
    result = body.result
    if options.get("has_aux"):
        if not (type(result) in (TupleVariable, ListVariable) and len(result.items) == 2):
            raise Unsupported(GB_TYPE, f"torch.func.{kind}(has_aux=True) of a function that does not return a pair "
                                       "(eager raises)")
        result = result.items[0]
    if not isinstance(result, TensorVariable):
        raise Unsupported(GB_TYPE, f"torch.func.{kind} of a function whose output is {result}, not one tensor")


def _argnums(kind: str, argnums: Any, args, positions: list[int]) -> int | tuple[int, ...]:
    """The transform's argnums as positions among the body's placeholders."""
    many = isinstance(argnums, tuple)
    numbers = argnums if many else (argnums,)
    mapped = []
    for number in numbers:
        if not isinstance(number, int) or isinstance(number, bool) or not -len(args) <= number < len(args):
            raise Unsupported(GB_TYPE, f"torch.func.{kind} with argnums {argnums!r} (eager raises)")
        index = number % len(args)
        if index not in positions:
            raise Unsupported(GB_TYPE, f"torch.func.{kind} differentiates argument {index}, not a tensor (eager raises)")
        mapped.append(positions.index(index))
    if not mapped:
        raise Unsupported(GB_TYPE, f"torch.func.{kind} with empty argnums (eager raises)")
    return tuple(mapped) if many else mapped[0]


def _structure(kind: str, options: dict, body: spec.Body, leaves: list[VariableTracker]) -> VariableTracker:
    """The transform's result rebuilt from the node's flat outputs."""
    if kind == "vmap":
        return spec.rebuild(body.result, leaves)
    argnums = options["argnums"]
    grads = TupleVariable([leaves.pop(0) for _ in argnums]) if isinstance(argnums, tuple) else leaves.pop(0)
    if kind == "grad_and_value":
        value = leaves.pop(0)
        if options.get("has_aux"):
            return TupleVariable([grads, TupleVariable([value, spec.rebuild(body.result.items[1], leaves)])])
        return TupleVariable([grads, value])
    if options.get("has_aux"):
        return TupleVariable([grads, spec.rebuild(body.result.items[1], leaves)])
    return grads


# ---- registration ---------------------------------------------------------------------------

TRANSFORMS = {"vmap": apis.vmap, "grad": apis.grad, "grad_and_value": apis.grad_and_value,
              "jacrev": eager_transforms.jacrev, "jacfwd": eager_transforms.jacfwd,
              "hessian": eager_transforms.hessian}


def handlers() -> list[tuple[Any, Any]]:
    """(function, handler) for each transform, called while tracing."""
    return [
        (apis.vmap, _transform_handler("vmap", apis.vmap)),
        (apis.grad, _transform_handler("grad", apis.grad)),
        (apis.grad_and_value, _transform_handler("grad_and_value", apis.grad_and_value)),
        (eager_transforms.jacrev, _transform_handler("jacrev", _jac_signature)),
        (eager_transforms.jacfwd, _transform_handler("jacfwd", _jac_signature)),
        (eager_transforms.hessian, _transform_handler("hessian", _hessian_signature)),
        (eager_transforms.jvp, _call_jvp),
    ]


def _jac_signature(func, argnums=0, *, has_aux=False):
    """What framegraph traces of jacrev/jacfwd (chunk_size, randomness... run eagerly)."""


def _hessian_signature(func, argnums=0):
    """What framegraph traces of hessian."""


def closure_handlers() -> list[tuple[Any, Any]]:
    """(code, handler) for the closures vmap and grad return when called eagerly."""
    made = []
    for kind, make in (("vmap", lambda: apis.vmap(abs)), ("grad", lambda: apis.grad(abs)),
                       ("grad_and_value", lambda: apis.grad_and_value(abs))):
        made.append((make().__code__, _closure_handler(kind)))
    return made
