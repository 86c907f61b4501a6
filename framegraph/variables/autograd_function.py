"""`Cls.apply(*args)` of a torch.autograd.Function subclass, in the graph.

Eagerly, apply runs `forward` under no_grad and, when grad mode is on and an input requires
grad, records a backward node that calls the Function's own `backward`. A graph must keep
both: the forward's values and the Function's gradients (which need not be the derivative of
the forward's ops). So, as torch.compile does:

- grad mode off: apply records nothing for autograd, and the forward is inlined (with the
  aliasing apply gives an input returned as an output);
- grad mode on: the forward is traced into a graph of its own, then, if an input requires
  grad, the backward into another (subgraph.py), and the frame's graph calls
  `torch.ops.higher_order.autograd_function_apply(fwd, bwd, *inputs)`, which runs them as a
  real autograd.Function (eagerly, under AOTAutograd and inductor alike). The forward graph
  returns its outputs and what the backward reads of it; the backward graph takes one
  gradient per tensor output, then those values, and returns one gradient per input.

Only the tensors passed to apply are the Function's inputs: a tensor its forward reads some
other way (a module's weight, a global) gets no gradient, eagerly as here, where it is passed
in detached. Whatever cannot be traced (a backward that branches on data, ctx.mark_dirty,
outputs in a list) raises Unsupported: the apply runs eagerly at a graph break, never with a
gradient the Function would not give.
"""

from __future__ import annotations

import torch
import torch.fx

from ..exc import ObservedException, Unsupported
from ..subgraph import SubGraph, grad_mode, outer_value
from .autograd_ctx import AutogradCtxVariable
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import TupleVariable
from .functions import reads_graph_values
from .tensor import TensorVariable

_BASE_VJP = torch.autograd.Function.vjp


def call_apply(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`torch.autograd.Function.apply` bound to a class (`args[0]`)."""
    cls_var, args = args[0], list(args[1:])
    cls = cls_var.as_python_constant() if cls_var.is_python_constant() else None
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)) or cls is torch.autograd.Function:
        raise Unsupported("Unsupported autograd.Function", f"Function.apply bound to {cls_var}")
    forward, backward, setup_context = _methods(tx, cls_var, cls)
    args = _positional(tx, cls, forward, args, kwargs, setup_context is not None)
    ctx = AutogradCtxVariable(cls, tuple(isinstance(a, TensorVariable) and a.example.requires_grad for a in args))
    if not torch.is_grad_enabled():  # the global-state guard keeps it so
        return _inline(tx, ctx, forward, setup_context, args)
    return _traced(tx, ctx, forward, backward, setup_context, args)


def _methods(tx, cls_var: VariableTracker, cls: type):
    """forward, backward (or vjp) and setup_context (None when not overridden), each read
    through the class, so a class patched later misses its guards."""
    from .classes import class_getattr

    if getattr(cls, "boxed_grads_call", False):
        raise Unsupported("Unsupported autograd.Function", f"{cls.__qualname__}.boxed_grads_call")
    forward = class_getattr(tx, cls_var, "forward")
    if cls.forward is torch.autograd.Function.forward:
        raise Unsupported("Unsupported autograd.Function", f"{cls.__qualname__} defines no forward")
    overrides_vjp = cls.vjp is not _BASE_VJP
    if overrides_vjp and cls.backward is not torch.autograd.Function.backward:
        raise Unsupported("Unsupported autograd.Function", f"{cls.__qualname__} defines both backward and vjp")
    backward = class_getattr(tx, cls_var, "vjp" if overrides_vjp else "backward")
    class_getattr(tx, cls_var, "setup_context")  # guarded: overriding it later changes the call
    defined = torch.autograd.function._is_setup_context_defined(cls.setup_context)
    setup_context = class_getattr(tx, cls_var, "setup_context") if defined else None
    return forward, backward, setup_context


def _positional(tx, cls: type, forward: VariableTracker, args: list[VariableTracker],
                kwargs: dict[str, VariableTracker], new_style: bool) -> list[VariableTracker]:
    """The inputs as apply passes them on: keywords resolved to positions by forward's
    signature (after ctx); with setup_context, defaults filled in as apply binds them."""
    fn = getattr(forward, "fn", None)
    code = getattr(fn, "__code__", None)
    if code is None:
        if kwargs:
            raise Unsupported("Unsupported autograd.Function", "apply() with keywords of a forward that is not a function")
        return args
    names = code.co_varnames[(0 if new_style else 1):code.co_argcount]
    by_position = dict(enumerate(args))
    for name, value in kwargs.items():
        if name not in names or names.index(name) in by_position:
            raise Unsupported("Unsupported autograd.Function", f"apply() keyword {name!r} (eager raises TypeError)")
        by_position[names.index(name)] = value
    if new_style and hasattr(forward, "defaults"):
        positional_defaults, _ = forward.defaults()
        first_default = len(names) - len(positional_defaults)
        for i in range(len(names)):
            if i not in by_position and i >= first_default:
                by_position[i] = _resolve_default(tx, positional_defaults[i - first_default])
    if sorted(by_position) != list(range(len(by_position))):
        raise Unsupported("Unsupported autograd.Function", "apply() keywords that leave a positional gap")
    return [by_position[i] for i in range(len(by_position))]


def _resolve_default(tx, value) -> VariableTracker:
    from .builder import wrap
    from .user_functions import LazyDefault

    return wrap(tx, value.value, value.source) if isinstance(value, LazyDefault) else value


def _run_forward(tx, ctx: AutogradCtxVariable, forward, setup_context, args) -> VariableTracker:
    """forward(ctx, *args), or forward(*args) then setup_context(ctx, args, output), under
    no_grad as apply runs them."""
    with grad_mode(False):
        if setup_context is None:
            return forward.call_function(tx, [ctx, *args], {})
        output = forward.call_function(tx, list(args), {})
        setup_context.call_function(tx, [ctx, TupleVariable(list(args)), output], {})
        return output


def _output_tensors(output: VariableTracker) -> tuple[list[int], list[VariableTracker]]:
    """The output as apply processes it: a tensor, or the items of a tuple (a list or other
    value passes through untouched). Returns the positions of the tensors and the items."""
    if isinstance(output, TensorVariable):
        return [0], [output]
    if type(output) is TupleVariable:
        return [i for i, item in enumerate(output.items) if isinstance(item, TensorVariable)], list(output.items)
    return [], [output]


def _rebuild(output: VariableTracker, items: list[VariableTracker]) -> VariableTracker:
    if isinstance(output, TensorVariable):
        return items[0]
    if type(output) is TupleVariable:
        return TupleVariable(items)
    return output


# ---- grad mode off ------------------------------------------------------------------------------

def _inline(tx, ctx: AutogradCtxVariable, forward, setup_context, args) -> VariableTracker:
    output = _run_forward(tx, ctx, forward, setup_context, args)
    inputs = {id(a.example) for a in args if isinstance(a, TensorVariable)}
    positions, items = _output_tensors(output)
    for i in positions:
        tensor = items[i]
        if id(tensor.example) in inputs:
            # An input returned as is comes back as an alias: detached if it requires grad.
            items[i] = (tx.output.call_method("detach", [tensor], {}) if tensor.example.requires_grad
                        else tx.output.call_method("view_as", [tensor, tensor], {}))
        elif tensor.example.requires_grad and not tensor.example._is_view():
            # (a view of an input made under no_grad requires grad and is returned as it is)
            raise Unsupported("Unsupported autograd.Function",
                              "a forward output that requires grad under no_grad (apply detaches it in place)")
    return _rebuild(output, items)


# ---- grad mode on ------------------------------------------------------------------------------

def _traced(tx, ctx: AutogradCtxVariable, forward, backward, setup_context, args) -> VariableTracker:
    output_graph = tx.output
    name = ctx.cls.__qualname__
    fwd = SubGraph(output_graph.graph, f"forward of {name}")
    inner_args = []
    for arg in args:
        if isinstance(arg, TensorVariable):
            if arg.node in fwd.lifted:
                raise Unsupported("Unsupported autograd.Function", f"{name}.apply() given one tensor twice")
            inner_args.append(TensorVariable(fwd.take(arg.node, arg.example), arg.example))
        else:
            inner_args.append(arg)
    arg_placeholders = list(fwd.placeholders)
    with output_graph.tracing_into(fwd), grad_mode(False):
        output = _run_forward(tx, ctx, forward, setup_context, inner_args)
        positions, items = _output_tensors(output)
        if not positions:
            raise Unsupported("Unsupported autograd.Function", f"{name}.forward returns no tensor (or a list)")
        if any(reads_graph_values([item]) for i, item in enumerate(items) if i not in positions):
            raise Unsupported("Unsupported autograd.Function", f"{name}.forward returns tensors inside a container")
        non_differentiable = [i for i, p in enumerate(positions) if ctx.is_non_differentiable(items[p])]
        inputs = {id(a.example) for a in inner_args if isinstance(a, TensorVariable)}
        for p in positions:
            tensor = items[p]
            if tensor.node.graph is not fwd or tensor.node in fwd.outer:
                if id(tensor.example) not in inputs:
                    raise Unsupported("Unsupported autograd.Function",
                                      f"{name}.forward returns a tensor it did not compute nor receive")
            if id(tensor.example) in inputs:
                # Apply returns an input as an alias; the graph's autograd function sees a new
                # tensor, which it treats as eager's apply treats every other output.
                items[p] = output_graph.call_method("view_as", [tensor, tensor], {})
    outputs = [items[p] for p in positions]
    if len(outputs) > 1 and not ctx.materialize_grads:
        raise Unsupported("Unsupported autograd.Function",
                          "ctx.set_materialize_grads(False) with several outputs (backward would see None)")
    differentiable = any(a.example.requires_grad for a in args if isinstance(a, TensorVariable))
    if differentiable:
        _refuse_saved_tensors_hooks(tx, name)
    bwd = SubGraph(fwd, f"backward of {name}")
    grads = [bwd.add_placeholder(f"grad_{i}", _like(output_graph, t.example)) for i, t in enumerate(outputs)]
    if differentiable:
        returned = _trace_backward(tx, ctx, backward, bwd, output, positions, grads, args)
    else:
        returned = [None] * len(args)  # no input requires grad: apply records no backward
    # Lifted first: a gradient the backward returns from elsewhere may add an input to the forward.
    returned = [None if node is None else bwd.local(node) for node in returned]
    by_placeholder = dict(zip(arg_placeholders, (r for a, r in zip(args, returned) if isinstance(a, TensorVariable))))
    bwd.output(tuple(by_placeholder.get(p) for p in fwd.placeholders))
    saved = [bwd.outer[p] for p in bwd.placeholders if p in bwd.outer]
    saved_nodes = {fwd.lifted.get(t.node, t.node) for t in ctx.saved_tensors()}
    fwd.output((outputs[0].node if isinstance(output, TensorVariable) else tuple(t.node for t in outputs),
                tuple(saved)))
    fwd.closed = bwd.closed = True
    hop_inputs = _inputs(tx, fwd, args, arg_placeholders)
    result = _call(tx, fwd, bwd, hop_inputs, non_differentiable,
                   [i for i, node in enumerate(saved) if node in saved_nodes])
    results = [result] if isinstance(output, TensorVariable) else list(result.items)
    for p, value in zip(positions, results):
        items[p] = value
    return _rebuild(output, items)


def saved_tensors_hooks_set() -> bool:
    return torch._C._autograd._top_saved_tensors_default_hooks(True) is not None


def _refuse_saved_tensors_hooks(tx, name: str) -> None:
    """Eagerly, what save_for_backward keeps goes through the saved-tensor hooks in force
    (torch.autograd.graph.saved_tensors_hooks: offloading, compression); the graph's function
    hands its forward's values to its backward as they are. So it is used only where no hook
    is set, which the entry guards."""
    from ..guards import GuardKind

    hooked = saved_tensors_hooks_set()
    tx.output.guards.add(GuardKind.STATE_READ, None, (saved_tensors_hooks_set, hooked), tx.output.user_line,
                         key=saved_tensors_hooks_set)
    if hooked:
        raise Unsupported("Unsupported autograd.Function", f"{name}.apply() under saved-tensor hooks")


def _like(output_graph, example: torch.Tensor) -> torch.Tensor:
    """A fake gradient for an output: its sizes, dtype and device (autograd makes them so)."""
    with output_graph.fake_mode:
        return torch.empty_like(example, requires_grad=False)


def _trace_backward(tx, ctx: AutogradCtxVariable, backward, bwd: SubGraph, output, positions, grads,
                    args) -> list:
    """backward(ctx, *grads) traced into `bwd`: one gradient (a node or None) per input of apply."""
    grad_vars = {p: TensorVariable(node, node.meta["example_value"]) for p, node in zip(positions, grads)}
    if isinstance(output, TensorVariable):
        grad_args = [grad_vars[0]]
    else:
        grad_args = [grad_vars.get(i, ConstantVariable(None)) for i in range(len(output.items))]
    ctx.phase = "backward"
    output_graph = tx.output
    with output_graph.tracing_into(bwd), grad_mode(False), \
            output_graph.side_effects.forbidden(f"{ctx.cls.__qualname__}.backward"), \
            output_graph.layout_unknown():
        try:
            result = backward.call_function(tx, [ctx, *grad_args], {})
        except ObservedException as raised:
            # Eagerly it raises in backward(), not at the apply (a Function made for inference).
            raise Unsupported("Unsupported autograd.Function",
                              f"{ctx.cls.__qualname__}.backward raises {raised.exception}") from None
    returned = list(result.items) if type(result) is TupleVariable else [result]
    name = ctx.cls.__qualname__
    if len(returned) < len(args) or any(not _is_none(r) for r in returned[len(args):]):
        raise Unsupported("Unsupported autograd.Function",
                          f"{name}.backward returned {len(returned)} gradients for {len(args)} inputs (eager raises)")
    nodes = []
    for arg, grad in zip(args, returned):
        if _is_none(grad):
            nodes.append(None)
        elif isinstance(grad, TensorVariable) and isinstance(arg, TensorVariable):
            nodes.append(grad.node)
        else:
            raise Unsupported("Unsupported autograd.Function",
                              f"{name}.backward returned {grad} for the input {arg} (eager raises)")
    return nodes


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _inputs(tx, fwd: SubGraph, args, arg_placeholders) -> list[VariableTracker]:
    """What the frame's graph passes for each of the forward graph's placeholders: the
    tensors given to apply, then what the forward read otherwise (detached: it is no input of
    the Function and gets no gradient)."""
    given = {p: a for p, a in zip(arg_placeholders, (a for a in args if isinstance(a, TensorVariable)))}
    inputs = []
    for placeholder in fwd.placeholders:
        if placeholder in given:
            inputs.append(given[placeholder])
            continue
        value = outer_value(fwd.outer[placeholder], "Unsupported autograd.Function", "the forward")
        if isinstance(value, TensorVariable) and value.example.requires_grad:
            value = tx.output.call_method("detach", [value], {})
        inputs.append(value)
    return inputs


def _call(tx, fwd: SubGraph, bwd: SubGraph, inputs, non_differentiable: list[int],
          saved_for_backward: list[int]) -> VariableTracker:
    output_graph = tx.output
    modules = []
    for graph, prefix in ((fwd, "fwd_body"), (bwd, "bwd_body")):
        try:
            graph.lint()
            module = graph.module(prefix)
        except Exception as error:
            raise Unsupported("Unsupported autograd.Function",
                              f"the {graph.name} does not make a graph module: {type(error).__name__}: {error}") from None
        modules.append(output_graph.add_static_attr(prefix, module))
    result = output_graph.record_call(torch.ops.higher_order.autograd_function_apply, [*modules, *inputs], {
        "non_differentiable_idx": ConstantVariable(non_differentiable),
        "saved_for_backward_idx": ConstantVariable(saved_for_backward)})
    node = result.node if isinstance(result, TensorVariable) else result.items[0].node.args[0]
    node.meta["effect"] = True  # the forward runs whether or not its outputs are used, as eagerly
    return result
