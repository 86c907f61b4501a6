"""`flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
return_lse=False, kernel_options=None, *, return_aux=None)` (torch.nn.attention.flex_attention),
as torch.compile emits it: one `torch.ops.higher_order.flex_attention` node

    flex_attention(q, k, v, score_mod_graph, block_mask_tuple, scale, kernel_options,
                   score_mod_other_buffers, mask_mod_other_buffers) -> (out, lse, max_scores)

`score_mod(score, b, h, q_idx, kv_idx)` and the block mask's `mask_mod(b, h, q_idx, kv_idx)` are
traced into graphs of their own on 0-d tensors (the score in the query's dtype, the indices
int32), which the operator applies to every element. The tensors they read from outside (a
bias table indexed by `q_idx - kv_idx`, document ids) are lifted: they become the operator's
`*_other_buffers`, so their gradients flow. The block mask's tensors are read from the
BlockMask the program passes (each a graph input, guarded) through its `as_tuple()`, whose last
item, the mask_mod, is replaced by its graph; without one, the mask that covers everything
(torch's `_create_empty_block_mask`) enters the graph as constants.

Eager flex_attention checks its arguments before it calls the operator; the same checks run
here on the example tensors, and any that fails leaves the call to run eagerly at a graph
break, where it raises as it would without framegraph. Options must be constants.
"""

from __future__ import annotations

import inspect
import math

import torch
import torch.nn.attention.flex_attention as flex
import torch.utils._pytree as pytree
from torch._higher_order_ops.flex_attention import flex_attention as flex_attention_op

from ..exc import Unsupported
from ..variables.base import VariableTracker
from ..variables.constant import ConstantVariable
from ..variables.containers import NamedTupleVariable, TupleVariable
from ..variables.tensor import SymNodeVariable, TensorVariable
from ..variables.user_functions import UserFunctionVariable
from . import speculate as spec
from .speculate import GB_TYPE

_SIGNATURE = inspect.signature(flex.flex_attention)
_OPTIONS = ("scale", "enable_gqa", "return_lse", "kernel_options", "return_aux")
# torch's own argument checks, run on the example tensors (those this torch has).
_VALIDATORS = [getattr(flex, name) for name in ("_validate_no_nested_tensors", "_validate_embed_dim",
                                                "_validate_device") if hasattr(flex, name)]
_EVERYWHERE = getattr(flex, "_LARGE_SPARSE_BLOCK_SIZE", None)  # the block size of the mask that covers everything
_EXPLANATION = ("flex_attention could not be captured as torch's flex_attention operator with these "
                "arguments, so it runs eagerly (where it raises if its arguments are wrong).")
_HINTS = ("Pass constant options (scale, enable_gqa, return_lse, kernel_options), a BlockMask made by "
          "create_block_mask, and a score_mod/mask_mod that only computes on its arguments and on "
          "tensors, without side effects or graph breaks.",)


def _refuse(reason: str) -> Unsupported:
    return Unsupported(GB_TYPE, f"flex_attention: {reason}", _EXPLANATION, _HINTS)


def call_flex_attention(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    try:
        bound = _SIGNATURE.bind(*args, **kwargs).arguments
    except TypeError as error:
        raise _refuse(f"called with arguments it does not take ({error}; eager raises)") from None
    q, k, v = (bound[name] for name in ("query", "key", "value"))
    if not all(isinstance(t, TensorVariable) for t in (q, k, v)):
        raise _refuse("query, key and value must be tensors")
    options = {name: _constant(bound, name) for name in _OPTIONS}
    block_mask = bound.get("block_mask", ConstantVariable(None))
    mask = _Mask.of_none(tx, q) if _is_none(block_mask) else _Mask.of(tx, block_mask)
    fq, fk, fv = q.example, k.example, v.example
    _check_like_eager(fq, fk, fv, mask, options)
    scale = options["scale"] if options["scale"] is not None else 1.0 / math.sqrt(fq.size(-1))
    try:
        kernel_options = flex._apply_kernel_options(fq, fk, fv, options["return_lse"], options["kernel_options"],
                                                    options["return_aux"])
    except Exception as error:
        raise _refuse(f"kernel_options refused ({type(error).__name__}: {error}; eager raises)") from None

    score_mod = bound.get("score_mod", ConstantVariable(None))
    if _is_none(score_mod):
        score_mod = UserFunctionVariable(flex._identity)
    score_examples = [("score", _scalar(tx, fq, fq.dtype, fq.requires_grad)), *_indices(tx, fq)]
    score_body = _trace(tx, score_mod, score_examples, "score_mod of flex_attention", boolean=False)
    mask_body = _trace(tx, mask.mask_mod, _indices(tx, fq), "mask_mod of flex_attention's block mask", boolean=True)
    score_graph = spec.graph_module(tx, score_body, "score_mod")
    mask_graph = spec.graph_module(tx, mask_body, "mask_fn")
    result = tx.output.record_call(flex_attention_op, [
        q, k, v, score_graph, TupleVariable([*mask.items, mask_graph]), ConstantVariable(scale),
        ConstantVariable(kernel_options),
        TupleVariable(spec.lifted_values(score_body)),
        TupleVariable(spec.lifted_values(mask_body))], {})
    out, lse, max_scores = result.items
    return _finalize(tx, out, lse, max_scores, options, log2_stats=kernel_options.get("BACKEND") != "FLASH")


def _constant(bound: dict, name: str):
    value = bound.get(name)
    if value is None:
        return _SIGNATURE.parameters[name].default
    if not value.is_python_constant():
        raise _refuse(f"{name}={value} is not a constant")
    return value.as_python_constant()


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


class _Mask:
    """The block mask: its `as_tuple()` without the mask_mod (`items`), and the mask_mod."""

    def __init__(self, items: list[VariableTracker], mask_mod: VariableTracker, seq_lengths: tuple,
                 block_size: tuple, batch: int, device: torch.device, given: bool) -> None:
        self.items, self.mask_mod = items, mask_mod
        self.seq_lengths, self.block_size, self.batch, self.device = seq_lengths, block_size, batch, device
        self.given = given  # the program passed it

    @classmethod
    def of(cls, tx, block_mask: VariableTracker) -> _Mask:
        if block_mask.python_type() is not flex.BlockMask:
            raise _refuse(f"block_mask is {block_mask}, not a BlockMask")
        whole = block_mask.var_getattr(tx, "as_tuple").call_function(tx, [], {})
        if type(whole) is not TupleVariable or not whole.items:
            raise _refuse("the BlockMask's as_tuple() is not a tuple")
        *items, mask_mod = whole.items
        for item in items:
            if not isinstance(item, (TensorVariable, SymNodeVariable)) and not item.is_python_constant():
                raise _refuse(f"the BlockMask holds {item}, neither a tensor nor a number")
        if getattr(mask_mod, "fn", None) is getattr(flex, "_sliced_mask_mod_error", ()):
            raise _refuse("the BlockMask was sliced, so it has no mask_mod (eager raises)")
        kv_num_blocks = block_mask.var_getattr(tx, "kv_num_blocks")
        if not isinstance(kv_num_blocks, TensorVariable):
            raise _refuse("the BlockMask's kv_num_blocks is not a tensor")
        return cls(items, mask_mod, _attr_constant(tx, block_mask, "seq_lengths"),
                   _attr_constant(tx, block_mask, "BLOCK_SIZE"), kv_num_blocks.example.size(0),
                   kv_num_blocks.example.device, given=True)

    @classmethod
    def of_none(cls, tx, query: TensorVariable) -> _Mask:
        """torch's mask for no block mask, made on the query's device; its tensors (a few
        int32 elements) enter the graph as constants."""
        placeholder = torch.empty(0, device=query.example.device)
        made = flex._create_empty_block_mask(placeholder, placeholder)
        *values, mask_mod = made.as_tuple()
        items = [_constant_tensor(tx, value) if isinstance(value, torch.Tensor) else ConstantVariable(value)
                 for value in values]
        return cls(items, UserFunctionVariable(mask_mod), tuple(made.seq_lengths), tuple(made.BLOCK_SIZE),
                   made.kv_num_blocks.size(0), made.kv_num_blocks.device, given=False)


def _attr_constant(tx, obj: VariableTracker, name: str) -> tuple:
    """A pair of numbers the BlockMask holds: constants, or sizes made dynamic by a recompile."""
    value = obj.var_getattr(tx, name)
    if type(value) is not TupleVariable:
        raise _refuse(f"the BlockMask's {name} is {value}, not a tuple")
    numbers = []
    for item in value.items:
        if isinstance(item, SymNodeVariable):
            numbers.append(item.value)
        elif item.is_python_constant():
            numbers.append(item.as_python_constant())
        else:
            raise _refuse(f"the BlockMask's {name} holds {item}, not a number")
    return tuple(numbers)


def _constant_tensor(tx, value: torch.Tensor) -> VariableTracker:
    return tx.output.record_call(torch.tensor, [ConstantVariable(value.tolist())],
                                 {"dtype": ConstantVariable(value.dtype), "device": ConstantVariable(value.device)})


def _check_like_eager(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: _Mask, options: dict) -> None:
    """What eager flex_attention refuses before it calls the operator, refused here too: the
    call then runs eagerly, and raises there."""
    try:
        for validate in _VALIDATORS:
            validate(q, k, v)
        flex._validate_sdpa_input(q, k, v, allow_lowp_kv=True)
        laid_out = flex._enforce_mem_layouts(q, k, v)
    except Exception as error:
        raise _refuse(f"{type(error).__name__}: {error} (eager raises)") from None
    if any(new is not old for new, old in zip(laid_out, (q, k, v))):
        raise _refuse("query, key or value would be copied to another memory layout (fp8)")
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise _refuse("query, key and value must be 4-D (eager raises)")
    # The kernel is specialised to the number of heads and the head size (torch.compile marks
    # them static): a symbolic one becomes its value, guarded.
    for t in (q, k, v):
        int(t.size(-3)), int(t.size(-1))
    heads_q, heads_kv = q.size(-3), k.size(-3)
    if (heads_q != heads_kv and not options["enable_gqa"]) or heads_q % heads_kv:
        raise _refuse(f"{heads_q} query heads and {heads_kv} key/value heads (eager raises)")
    if q.size(0) != k.size(0) and (not mask.given or mask.batch != q.size(0)):
        raise _refuse("query and key/value of different batch sizes, not matched by the block mask (eager raises)")
    if mask.block_size != (_EVERYWHERE, _EVERYWHERE) and (q.size(-2), k.size(-2)) != mask.seq_lengths[-2:]:
        raise _refuse(f"a block mask made for lengths {mask.seq_lengths} used for {q.size(-2)} and "
                      f"{k.size(-2)} (eager raises)")
    if mask.device != q.device:
        raise _refuse("the block mask is on another device than the query (eager raises)")
    if options["return_lse"] and options["return_aux"] is not None:
        raise _refuse("both return_lse and return_aux (eager raises)")


def _scalar(tx, like: torch.Tensor, dtype: torch.dtype, requires_grad: bool = False) -> torch.Tensor:
    with tx.output.fake_mode:
        return torch.empty((), dtype=dtype, device=like.device, requires_grad=requires_grad)


def _indices(tx, query: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    return [(name, _scalar(tx, query, torch.int32)) for name in ("b", "h", "q_idx", "kv_idx")]


def _trace(tx, fn: VariableTracker, examples: list, name: str, boolean: bool) -> spec.Body:
    """`fn` traced on the operator's 0-d arguments; it returns one 0-d tensor (a boolean one
    for a mask_mod), which may be its own score unchanged."""
    with _IndexWithTensors():
        body = spec.speculate_on(tx, fn, examples, name)
    result = body.leaves[0] if len(body.leaves) == 1 else None
    if not isinstance(result, TensorVariable) or result.example.dim() != 0 \
            or (boolean and result.example.dtype is not torch.bool):
        kind = "a 0-d boolean tensor" if boolean else "a 0-d tensor"
        raise _refuse(f"the {name} returns {body.result}, not {kind}")
    spec.close(body, [result.node], single=True, may_return_inputs=True)
    return body


class _IndexWithTensors(torch.overrides.TorchFunctionMode):
    """Indexing as the operator does when it runs a body: `table[q_idx - kv_idx]` with a 0-d
    index tensor is an index op (the operator runs the body on batches of indices), not a read
    of the index as a Python int, which would be data-dependent here. Only the example values
    see this mode; the body's graph records the indexing as written."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__getitem__:
            indices = pytree.tree_leaves(args[1])
            if all(isinstance(i, (torch.Tensor, int)) for i in indices):
                table = args[0]
                return torch.ops.aten.index(table, [
                    i if isinstance(i, torch.Tensor) else torch.tensor(i, dtype=torch.int64, device=table.device)
                    for i in indices])
        return func(*args, **(kwargs or {}))


def _finalize(tx, out: VariableTracker, lse: TensorVariable, max_scores: TensorVariable, options: dict,
              log2_stats: bool) -> VariableTracker:
    """The operator's outputs as flex_attention returns them: the statistics asked for, in
    natural-log units (the operator gives them in base 2 unless the backend is FLASH)."""
    aux = options["return_aux"]
    want_lse = options["return_lse"] or (aux is not None and aux.lse)
    want_max = aux is not None and aux.max_scores

    def stat(value: TensorVariable, wanted: bool) -> VariableTracker:
        if not wanted or value.example.numel() == 0:
            return ConstantVariable(None)
        if log2_stats:
            return tx.output.record_call(torch.mul, [value, ConstantVariable(math.log(2.0))], {})
        return value
    if aux is not None:
        return TupleVariable([out, NamedTupleVariable([stat(lse, want_lse), stat(max_scores, want_max)],
                                                      flex.AuxOutput)])
    if want_lse:
        return TupleVariable([out, stat(lse, True)])
    return out
