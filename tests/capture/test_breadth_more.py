"""More breadth: realistic combinations of the constructs ordinary model code uses."""

import collections
import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from .helpers import check

Pair = collections.namedtuple("Pair", "left right")


@dataclasses.dataclass
class Spec:
    hidden: int
    act: str = "relu"
    dropout: float = 0.0

    def activation(self, x):
        return F.relu(x) if self.act == "relu" else F.gelu(x)


def t(*shape):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape)


ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}


def pick_activation(x, name): return ACTIVATIONS[name](x)
def config_driven(x, spec): return spec.activation(x) * spec.hidden
def kwargs_forwarding(x, **options):
    def inner(v, scale=1.0, shift=0.0):
        return v * scale + shift
    return inner(x, **options)
def kwargs_forwarding_explicit(x):
    return kwargs_forwarding(x, scale=2.0, shift=x)
def reduce_like(xs):
    total = xs[0]
    for v in xs[1:]:
        total = total * v
    return total
def chunked_processing(x):
    return torch.cat([c * (i + 1) for i, c in enumerate(x.chunk(3))])
def shape_arithmetic(x):
    b, n = x.shape
    return x.reshape(b * n // 2, 2).sum(-1).view(b, n // 2)
def head_split(x, heads):
    b, s, d = x.size()
    return x.view(b, s, heads, d // heads).transpose(1, 2).contiguous()
def masked_fill_constant(x):
    return x.masked_fill(x < 0, float("-inf")).softmax(-1)
def scaled_attention(q, k, v):
    w = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    return F.softmax(w, dim=-1) @ v
def residual_chain(x, ws):
    for w in ws:
        x = x + torch.tanh(x @ w)
    return x
def pair_swap(p): return Pair(p.right, p.left)
def pair_rebuild(p): return Pair(p.left * 2, right=p.right)
def nested_dict_output(x):
    return {"stats": {"mean": x.mean(), "std": x.std()}, "shape": tuple(x.shape)}
def list_of_pairs(xs): return [(i, v.sum()) for i, v in enumerate(xs)]
def string_keys(x):
    d = {}
    for name in ("a", "b", "c"):
        d[name.upper()] = x * len(name + "!")
    return d
def early_return(x, flag):
    if flag:
        return x * 2
    y = x + 1
    return y * y
def loop_with_break(x):
    for i in range(10):
        if i == 3:
            break
        x = x + i
    return x
def loop_with_continue(x):
    for i in range(5):
        if i % 2:
            continue
        x = x * 1.5
    return x
def nested_loops(x):
    for i in range(2):
        for j in range(2):
            x = x + i * j
    return x
def while_with_counter(x):
    n = 0
    while n < 4:
        x = x - 0.1
        n += 1
    return x, n
def ternary_chain(x, mode):
    return x * 2 if mode == "a" else x * 3 if mode == "b" else x
def and_or_constants(x, a, b):
    return x * (a and b) + x * (a or b) + x * (not a)
def chained_comparison(x, n):
    return x * (0 < n < 10) + x * (n == 3 != 4)
def tensor_is_none_checks(x, mask=None, bias=None):
    if mask is not None:
        x = x * mask
    if bias is None:
        bias = 0.0
    return x + bias
def isinstance_dispatch(value):
    if isinstance(value, (list, tuple)):
        return sum(value)
    if isinstance(value, dict):
        return sum(value.values())
    return value * 2
def dtype_logic(x):
    if x.dtype == torch.float32:
        return x.double()
    return x.float()
def device_logic(x):
    return x.to(x.device) + torch.ones(x.shape, device=x.device, dtype=x.dtype)
def requires_grad_logic(x):
    return x * 2 if x.requires_grad else x * 3
def enumerate_zip_unpack(xs, ys):
    return [i * a + b for i, (a, b) in enumerate(zip(xs, ys))]
def dict_get_default_tensor(x, opts):
    return x * opts.get("scale", 1.0) + opts.get("shift", x)
def default_mutable_container(x, acc=None):
    acc = [] if acc is None else acc
    acc.append(x)
    return acc
def min_max_of_shapes(x, y):
    return x[: min(x.shape[0], y.shape[0])] + y[: max(1, min(x.shape[0], y.shape[0]))]
def sorted_dict_items(d):
    return [v * 2 for _, v in sorted(d.items())]
def format_names(x, layers):
    names = [f"layer_{i:02d}" for i in range(layers)]
    return {name: x * (i + 1) for i, name in enumerate(names)}
def math_on_shapes(x):
    return x * math.log2(x.numel()) + math.ceil(x.shape[0] / 2)
def int_float_mix(x):
    return x * (3 // 2) + x * (3 / 2) + x * (2 ** -1) + x * (-7 % 3)
def bitwise_constants(x):
    return x * ((6 & 3) | (1 << 2) ^ 1)
def abs_neg_pos(x): return abs(-x) + (-(+x))
def tuple_of_tensor_methods(x): return x.max(), x.min(), x.argmax(), x.norm()
def inplace_on_intermediate(x):
    y = x * 2
    y.add_(1)
    y.clamp_(min=0)
    return y
def view_mutation(x):
    y = x.clone()
    y[:, 0].mul_(10)
    return y
def where_with_scalars(x): return torch.where(x > 0, 1.0, -1.0) * x


CASES = [
    (pick_activation, lambda: (t(4), "tanh"), 1),
    (config_driven, lambda: (t(4), Spec(3, "gelu")), 2),
    (kwargs_forwarding, lambda: (t(4),), 2),
    (kwargs_forwarding_explicit, lambda: (t(4),), 2),
    (reduce_like, lambda: ([t(3), t(3), t(3)],), 2),
    (chunked_processing, lambda: (t(6),), 8),
    (shape_arithmetic, lambda: (t(2, 4),), 3),
    (head_split, lambda: (t(2, 3, 8), 2), 3),
    (masked_fill_constant, lambda: (t(3, 4),), 3),
    (scaled_attention, lambda: (t(2, 3, 4), t(2, 3, 4), t(2, 3, 4)), 5),
    (residual_chain, lambda: (t(2, 3), [t(3, 3), t(3, 3)]), 6),
    (pair_swap, lambda: (Pair(t(3), t(3)),), 0),
    (pair_rebuild, lambda: (Pair(t(3), t(3)),), 1),
    (nested_dict_output, lambda: (t(3, 2),), 2),
    (list_of_pairs, lambda: ([t(3), t(2)],), 2),
    (string_keys, lambda: (t(3),), 3),
    (early_return, lambda: (t(3), True), 1),
    (early_return, lambda: (t(3), False), 2),
    (loop_with_break, lambda: (t(3),), 3),
    (loop_with_continue, lambda: (t(3),), 3),
    (nested_loops, lambda: (t(3),), 4),
    (while_with_counter, lambda: (t(3),), 4),
    (ternary_chain, lambda: (t(3), "b"), 1),
    (and_or_constants, lambda: (t(3), 2, 0), 5),
    (chained_comparison, lambda: (t(3), 3), 3),
    (tensor_is_none_checks, lambda: (t(3),), 1),
    (tensor_is_none_checks, lambda: (t(3), t(3), t(3)), 2),
    (isinstance_dispatch, lambda: ([t(2), t(2)],), 2),
    (isinstance_dispatch, lambda: ({"a": t(2)},), 1),
    (isinstance_dispatch, lambda: (t(2),), 1),
    (dtype_logic, lambda: (t(3),), 1),
    (device_logic, lambda: (t(3),), 2),  # x.to(x.device) is x itself
    (requires_grad_logic, lambda: (t(3),), 1),
    (enumerate_zip_unpack, lambda: ([t(2), t(2)], [t(2), t(2)]), 4),
    (dict_get_default_tensor, lambda: (t(3), {"scale": 2.0}), 2),
    (default_mutable_container, lambda: (t(3),), 0),
    (min_max_of_shapes, lambda: (t(5), t(3)), 3),
    (sorted_dict_items, lambda: ({"b": t(2), "a": t(2)},), 2),
    (format_names, lambda: (t(2), 3), 3),
    (math_on_shapes, lambda: (t(8),), 2),
    (int_float_mix, lambda: (t(3),), 7),
    (bitwise_constants, lambda: (t(3),), 1),
    (abs_neg_pos, lambda: (t(3),), 4),  # +x is x itself
    (tuple_of_tensor_methods, lambda: (t(5),), 4),
    (inplace_on_intermediate, lambda: (t(3),), 3),
    (view_mutation, lambda: (t(2, 3),), 3),
    (where_with_scalars, lambda: (t(4),), 3),
]


@pytest.mark.parametrize("fn,make_args,ops", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_more_breadth_matches_eager(fn, make_args, ops):
    check(fn, *make_args(), graphs=1 if ops else 0, ops=ops, fullgraph=True)
