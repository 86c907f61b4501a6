"""Which recorded nodes dead-code removal may drop: those whose dropping cannot be observed
(no mutation, no global state, no random numbers eager would draw). Dropping an in-place
activation (`F.relu(x, inplace=True)`) made every CNN with one give wrong numbers, so the rules
read each op's schema, its `inplace=` argument and torch's naming convention.
"""

from __future__ import annotations

import operator

import torch
import torch.fx

from .schemas import effects_of, inplace_requested

CALL_OPS = ("call_function", "call_method", "call_module")


def remove_dead_code(graph: torch.fx.Graph) -> None:
    for node in reversed(list(graph.nodes)):
        if node.op in CALL_OPS and not node.users and is_pure(node):
            graph.erase_node(node)
        elif node.op == "get_attr" and not node.users:
            graph.erase_node(node)  # the body of an autograd.Function whose call was dropped


_RANDOM = frozenset({"dropout", "dropout_", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
                     "dropout1d", "dropout2d", "dropout3d", "rand", "randn", "randint", "randperm",
                     "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial", "normal",
                     "poisson", "rrelu", "gumbel_softmax", "uniform", "exponential", "geometric",
                     "cauchy", "log_normal"})


def is_pure(node: torch.fx.Node) -> bool:
    target = node.target
    if node.meta.get("effect") or node.op == "call_module":
        return False
    if node.op == "call_function" and (target in STATEFUL_FUNCTIONS or target in _STATEFUL_CALLS):
        return False
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if name in _RANDOM or name in _INPLACE_DUNDERS:
        return False
    effects = effects_of(target)
    if effects.writes_positional or effects.random:
        return False
    if any(node.kwargs.get(k) is not None for k in effects.written_keywords):
        return False  # `out=`
    if effects.has_inplace_parameter and inplace_requested(target, node.args, node.kwargs):
        return False
    if effects.schemaless and name.endswith("_"):
        return False  # a Python function that updates in place by torch's naming convention (nn.init)
    return not node.is_impure()


# Functions that change global state when the graph runs and return a handle, not a tensor.
STATEFUL_FUNCTIONS = frozenset({
    torch.autograd.grad_mode._enter_inference_mode, torch.amp.autocast_mode._enter_autocast,
})
_INPLACE_OPERATORS = (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior,
                      operator.ixor, operator.ilshift, operator.irshift)
# Tensor methods that update in place by Python's operator protocol (some have no ATen schema).
_INPLACE_DUNDERS = frozenset(f"__{fn.__name__}__" for fn in _INPLACE_OPERATORS)
# Calls kept for their effect even when nothing reads their result.
_STATEFUL_CALLS = frozenset({
    torch._C._set_grad_enabled, torch.autograd.grad_mode._exit_inference_mode,
    torch.amp.autocast_mode._exit_autocast, operator.setitem, *_INPLACE_OPERATORS,
})
