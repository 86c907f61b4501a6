"""Capture core: one graph per function, differential against eager, with exact counts.

Each case is (function, argument factory, expected graph count, expected op count). For every
case `check` compares the compiled result, the mutated inputs and any exception with eager,
and asserts the counts with a counting backend. `test_changed_input_recompiles` then feeds
each case inputs that differ in dtype, shape, requires_grad and grad mode, and asserts a new
graph is compiled (never a stale reuse) whose result again matches eager.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import float64

import framegraph
from framegraph.counters import counters

from .helpers import check, clone, assert_same

SCALE = 3


def t(*shape, dtype=torch.float32, requires_grad=False):
    torch.manual_seed(sum(shape) + len(shape))
    return torch.randn(*shape, dtype=dtype, requires_grad=requires_grad)


# ---- the functions under test (module level: user code, as the hook sees it) --------------

def seed_f(x):
    y = torch.sin(x)
    return y + 1


def three_ops(x):
    return torch.sin(x) * 2 + 1


def add(x, y): return x + y
def sub(x, y): return x - y
def mul(x, y): return x * y
def div(x, y): return x / y
def floordiv(x, y): return x // y
def mod(x, y): return x % y
def power(x): return x ** 2
def rpow(x): return 2 ** x
def matmul(x, y): return x @ y
def neg(x): return -x
def pos(x): return +x
def builtin_abs(x): return abs(x)
def invert(m): return ~m
def bit_and(a, b): return a & b
def bit_or(a, b): return a | b
def bit_xor(a, b): return a ^ b
def lt(x, y): return x < y
def le(x, y): return x <= y
def eq(x, y): return x == y
def ne(x, y): return x != y
def gt(x, y): return x > y
def ge(x, y): return x >= y
def scalar_left(x): return 1.5 - x
def chain(x, y): return (x + y) * (x - y) / 2


def inplace_method(x):
    x.add_(1)
    return x


def inplace_operator(x):
    x += 1
    x *= 2
    return x


def inplace_chain(x):
    return x.mul_(2).add_(1)


def inplace_then_read(x, y):
    x.add_(y)
    return x * 2


def inplace_identity(x):
    y = x.add_(1)
    return y is x


def relu(x): return x.relu()
def method_sum(x): return x.sum()
def method_mean_dim(x): return x.mean(dim=0)
def view(x): return x.view(-1)
def reshape(x): return x.reshape(2, -1)
def transpose(x): return x.transpose(0, 1)
def permute(x): return x.permute(1, 0)
def contiguous(x): return x.t().contiguous()
def unsqueeze(x): return x.unsqueeze(0)
def squeeze(x): return x.unsqueeze(1).squeeze(1)
def to_float(x): return x.float()
def to_dtype(x): return x.to(torch.float64)
def clone_detach(x): return x.clone().detach()
def exp_log(x): return x.exp().log()
def softmax_method(x): return x.softmax(-1)
def max_dim(x): return x.max(dim=0)
def max_values(x): return x.max(dim=0)[0]
def split(x): return x.split(2)
def chunk_unpack(x):
    a, b = x.chunk(2)
    return a * b


def f_relu(x): return F.relu(x)
def f_gelu(x): return F.gelu(x)
def f_softmax(x): return F.softmax(x, dim=-1)
def f_linear(x, w, b): return F.linear(x, w, b)
def f_layer_norm(x): return F.layer_norm(x, (x.shape[-1],))
def f_dropout_eval(x): return F.dropout(x, p=0.5, training=False)
def f_mse(x, y): return F.mse_loss(x, y)


def cat(x, y): return torch.cat([x, y])
def stack(x, y): return torch.stack((x, y), dim=1)
def where(x, y): return torch.where(x > 0, x, y)
def torch_matmul(x, y): return torch.matmul(x, y)
def factory_zeros(x): return torch.zeros(3) + x
def ones_like(x): return torch.ones_like(x) * x
def arange(x): return torch.arange(4) + x
def full(x): return torch.full((2, 2), 3.0) * x
def sum_keepdim(x): return torch.sum(x, dim=0, keepdim=True)
def clamp_kw(x): return torch.clamp(x, min=-0.5, max=0.5)


def shape_scale(x): return x.shape[0] * x
def size_method(x): return x * x.size(1)
def dim_method(x): return x * x.dim()
def ndim_attr(x): return x + x.ndim
def dtype_attr(x, y): return y.to(x.dtype) + x
def device_attr(x): return torch.zeros(2, device=x.device) + x
def transpose_attr(x): return x.T @ x
def numel(x): return x / x.numel()
def len_tensor(x): return x * len(x)
def shape_unpack(x):
    rows, cols = x.shape
    return x.reshape(cols, rows)


def index_int(x): return x[0]
def index_slice(x): return x[1:3]
def index_column(x): return x[:, 0]
def index_none(x): return x[None]
def index_ellipsis(x): return x[..., 1]
def index_tensor(x, i): return x[i]
def index_mixed(x): return x[0, 1:2, None]
def index_negative_step(x): return x[::2]
def setitem(x):
    x[0] = 1.0
    return x
def setitem_slice(x, y):
    x[1:3] = y
    return x


def dtype_constant(x): return torch.zeros(2, dtype=torch.float64) + x.to(float64)
def folded_scalars(x):
    a = 2
    b = a * 3 + 1
    return x * b
def constant_arg(x, n): return x * n
def float_arg(x, s): return x + s
def bool_arg(x, flag):
    if flag:
        return x + 1
    return x - 1
def string_arg(x, mode):
    if mode == "double":
        return x * 2
    return x
def none_arg(x, bias):
    if bias is None:
        return x
    return x + bias
def global_constant(x): return x * SCALE
def loop_range(x):
    for i in range(3):
        x = x + i
    return x
def while_constant(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x
def fstring_len(x, n):
    s = f"{n}-{n * 2:03d}"
    return x * len(s)


def tuple_in(pair): return pair[0] + pair[1]
def tuple_out(x, y): return x + 1, y * 2
def list_out(x, y): return [x.sin(), y.cos()]
def dict_in(d): return d["a"] * d["b"]
def dict_out(x, y): return {"sum": x + y, "diff": x - y}
def nested_out(x, y): return (x + 1, [y * 2, {"k": x - y, "n": 3}])
def passthrough(x, y): return x, y
def mixed_passthrough(x): return x, x + 1, "tag"
def unpack_tuple(pair):
    a, b = pair
    return a * b
def star_unpack(xs):
    first, *rest = xs
    return first + rest[0] + rest[1]
def list_build(x):
    out = [x]
    out.append(x * 2)
    return out[0] + out[1]
def tuple_concat(x, y): return (x,) + (y, x * 2)
def kwargs_dict(x, **kw): return x * kw["scale"]
def varargs(*xs): return xs[0] + xs[1]
def default_arg(x, alpha=0.5): return x * alpha
def keyword_only(x, *, beta): return x + beta
def return_constant(x): return 3
def return_input(x): return x
def requires_grad_sin(x): return torch.sin(x) * 2
def is_tensor_fold(x, n):
    return x * 2 if torch.is_tensor(x) and not torch.is_tensor(n) else x
def isinstance_fold(x):
    return x + 1 if isinstance(x, torch.Tensor) else x
def grad_enabled_fold(x):
    return x * 2 if torch.is_grad_enabled() else x * 3


def closure_maker(k):
    def f(x):
        return x * k
    return f


CASES = [
    # (function, argument factory, graphs, ops)
    (seed_f, lambda: (t(4),), 1, 2),
    (three_ops, lambda: (t(4),), 1, 3),
    (add, lambda: (t(3, 4), t(3, 4)), 1, 1),
    (sub, lambda: (t(3, 4), t(4)), 1, 1),
    (mul, lambda: (t(3, 4), 2.5), 1, 1),
    (div, lambda: (t(3, 4), t(3, 4)), 1, 1),
    (floordiv, lambda: (t(5) * 10, 3), 1, 1),
    (mod, lambda: (t(5) * 10, 3), 1, 1),
    (power, lambda: (t(5),), 1, 1),
    (rpow, lambda: (t(5),), 1, 1),
    (matmul, lambda: (t(3, 4), t(4, 5)), 1, 1),
    (neg, lambda: (t(3),), 1, 1),
    (pos, lambda: (t(3),), 0, 0),  # +x is x itself: nothing to compute
    (builtin_abs, lambda: (t(3),), 1, 1),
    (invert, lambda: (t(6) > 0,), 1, 1),
    (bit_and, lambda: (t(6) > 0, t(6, ) < 0.5), 1, 1),
    (bit_or, lambda: (t(6) > 0, t(6) < 0.5), 1, 1),
    (bit_xor, lambda: (t(6) > 0, t(6) < 0.5), 1, 1),
    (lt, lambda: (t(4), t(4)), 1, 1),
    (le, lambda: (t(4), 0.0), 1, 1),
    (eq, lambda: (t(4), t(4)), 1, 1),
    (ne, lambda: (t(4), t(4)), 1, 1),
    (gt, lambda: (t(4), 0.1), 1, 1),
    (ge, lambda: (t(4), t(4)), 1, 1),
    (scalar_left, lambda: (t(4),), 1, 1),
    (chain, lambda: (t(4), t(4)), 1, 4),
    (inplace_method, lambda: (t(4),), 1, 1),
    (inplace_operator, lambda: (t(4),), 1, 2),
    (inplace_chain, lambda: (t(4),), 1, 2),
    (inplace_then_read, lambda: (t(4), t(4)), 1, 2),
    (inplace_identity, lambda: (t(4),), 1, 1),
    (relu, lambda: (t(3, 4),), 1, 1),
    (method_sum, lambda: (t(3, 4),), 1, 1),
    (method_mean_dim, lambda: (t(3, 4),), 1, 1),
    (view, lambda: (t(3, 4),), 1, 1),
    (reshape, lambda: (t(3, 4),), 1, 1),
    (transpose, lambda: (t(3, 4),), 1, 1),
    (permute, lambda: (t(3, 4),), 1, 1),
    (contiguous, lambda: (t(3, 4),), 1, 2),
    (unsqueeze, lambda: (t(3, 4),), 1, 1),
    (squeeze, lambda: (t(3, 4),), 1, 2),
    (to_float, lambda: (t(3, dtype=torch.float64),), 1, 1),
    (to_dtype, lambda: (t(3),), 1, 1),
    (clone_detach, lambda: (t(3, requires_grad=True),), 1, 2),
    (exp_log, lambda: (t(3).abs() + 0.1,), 1, 2),
    (softmax_method, lambda: (t(3, 4),), 1, 1),
    (max_dim, lambda: (t(3, 4),), 1, 3),
    (max_values, lambda: (t(3, 4),), 1, 2),
    (split, lambda: (t(5, 2),), 1, 4),
    (chunk_unpack, lambda: (t(4, 2),), 1, 4),
    (f_relu, lambda: (t(3, 4),), 1, 1),
    (f_gelu, lambda: (t(3, 4),), 1, 1),
    (f_softmax, lambda: (t(3, 4),), 1, 1),
    (f_linear, lambda: (t(2, 4), t(3, 4), t(3)), 1, 1),
    (f_layer_norm, lambda: (t(2, 4),), 1, 1),
    (f_dropout_eval, lambda: (t(2, 4),), 1, 1),
    (f_mse, lambda: (t(2, 4), t(2, 4)), 1, 1),
    (cat, lambda: (t(2, 3), t(4, 3)), 1, 1),
    (stack, lambda: (t(2, 3), t(2, 3)), 1, 1),
    (where, lambda: (t(5), t(5)), 1, 2),
    (torch_matmul, lambda: (t(2, 3), t(3, 2)), 1, 1),
    (factory_zeros, lambda: (t(3),), 1, 2),
    (ones_like, lambda: (t(3),), 1, 2),
    (arange, lambda: (t(4),), 1, 2),
    (full, lambda: (t(2, 2),), 1, 2),
    (sum_keepdim, lambda: (t(3, 4),), 1, 1),
    (clamp_kw, lambda: (t(6),), 1, 1),
    (shape_scale, lambda: (t(3, 4),), 1, 1),
    (size_method, lambda: (t(3, 4),), 1, 1),
    (dim_method, lambda: (t(3, 4),), 1, 1),
    (ndim_attr, lambda: (t(3, 4),), 1, 1),
    (dtype_attr, lambda: (t(3), t(3, dtype=torch.float64)), 1, 2),
    (device_attr, lambda: (t(2),), 1, 2),
    (transpose_attr, lambda: (t(3, 4),), 1, 2),
    (numel, lambda: (t(3, 4),), 1, 1),
    (len_tensor, lambda: (t(3, 4),), 1, 1),
    (shape_unpack, lambda: (t(3, 4),), 1, 1),
    (index_int, lambda: (t(3, 4),), 1, 1),
    (index_slice, lambda: (t(5, 2),), 1, 1),
    (index_column, lambda: (t(3, 4),), 1, 1),
    (index_none, lambda: (t(3),), 1, 1),
    (index_ellipsis, lambda: (t(2, 3, 4),), 1, 1),
    (index_tensor, lambda: (t(5, 2), torch.tensor([0, 3, 3])), 1, 1),
    (index_mixed, lambda: (t(3, 4, 5),), 1, 1),
    (index_negative_step, lambda: (t(7),), 1, 1),
    (setitem, lambda: (t(3, 2),), 1, 1),
    (setitem_slice, lambda: (t(5), t(2)), 1, 1),
    (dtype_constant, lambda: (t(2),), 1, 3),
    (folded_scalars, lambda: (t(3),), 1, 1),
    (constant_arg, lambda: (t(3), 3), 1, 1),
    (float_arg, lambda: (t(3), 0.25), 1, 1),
    (bool_arg, lambda: (t(3), True), 1, 1),
    (string_arg, lambda: (t(3), "double"), 1, 1),
    (none_arg, lambda: (t(3), None), 0, 0),
    (none_arg, lambda: (t(3), t(3)), 1, 1),
    (global_constant, lambda: (t(3),), 1, 1),
    (loop_range, lambda: (t(3),), 1, 3),
    (while_constant, lambda: (t(3),), 1, 3),
    (fstring_len, lambda: (t(3), 7), 1, 1),
    (tuple_in, lambda: ((t(3), t(3)),), 1, 1),
    (tuple_out, lambda: (t(3), t(3)), 1, 2),
    (list_out, lambda: (t(3), t(3)), 1, 2),
    (dict_in, lambda: ({"a": t(3), "b": t(3)},), 1, 1),
    (dict_out, lambda: (t(3), t(3)), 1, 2),
    (nested_out, lambda: (t(3), t(3)), 1, 3),
    (passthrough, lambda: (t(3), t(3)), 0, 0),
    (mixed_passthrough, lambda: (t(3),), 1, 1),
    (unpack_tuple, lambda: ((t(3), t(3)),), 1, 1),
    (star_unpack, lambda: ([t(3), t(3), t(3)],), 1, 2),
    (list_build, lambda: (t(3),), 1, 2),
    (tuple_concat, lambda: (t(3), t(3)), 1, 1),
    (varargs, lambda: (t(3), t(3)), 1, 1),
    (default_arg, lambda: (t(3),), 1, 1),
    (return_constant, lambda: (t(3),), 0, 0),
    (return_input, lambda: (t(3),), 0, 0),
    (requires_grad_sin, lambda: (t(3, requires_grad=True),), 1, 2),
    (is_tensor_fold, lambda: (t(3), 2), 1, 1),
    (isinstance_fold, lambda: (t(3),), 1, 1),
    (grad_enabled_fold, lambda: (t(3),), 1, 1),
]


def _id(case):
    return case[0].__name__


@pytest.mark.parametrize("fn,make_args,graphs,ops", CASES, ids=[_id(c) for c in CASES])
def test_matches_eager_with_exact_counts(fn, make_args, graphs, ops):
    check(fn, *make_args(), graphs=graphs, ops=ops)


def _variants(args):
    """Inputs that must not reuse the first graph: each changes one fact a guard covers."""
    first = next((i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()), None)
    if first is None:
        return []
    x = args[first]

    def replace(value):
        return args[:first] + (value,) + args[first + 1:]

    other = torch.float32 if x.dtype == torch.float64 else torch.float64
    variants = [("dtype", replace(x.detach().to(other).requires_grad_(x.requires_grad)))]
    if x.dim() >= 1:
        grown = torch.cat([x.detach(), x.detach()[:1]]).requires_grad_(x.requires_grad)
        variants.append(("shape", replace(grown)))
    variants.append(("requires_grad", replace(x.detach().clone().requires_grad_(not x.requires_grad))))
    return variants


RECOMPILE_CASES = [c for c in CASES if c[2] == 1 and _variants(c[1]())]


@pytest.mark.parametrize("fn,make_args,graphs,ops", RECOMPILE_CASES, ids=[_id(c) for c in RECOMPILE_CASES])
def test_changed_input_recompiles(fn, make_args, graphs, ops):
    from framegraph.eval_frame import get_cache_entries

    args = make_args()
    check(fn, *args, graphs=1)
    compiled = check.compiled
    entries = 1
    for what, changed in _variants(args):
        try:
            expected = fn(*clone(changed))
        except Exception:
            continue  # the changed input is invalid for this function (e.g. mixed dtypes)
        actual = compiled(*clone(changed))
        entries += 1
        assert len(get_cache_entries(fn.__code__)) == entries, f"changing {what} did not recompile"
        assert_same(expected, actual)
    with torch.no_grad():
        expected = fn(*clone(args))
        actual = compiled(*clone(args))
    assert len(get_cache_entries(fn.__code__)) == entries + 1, "changing grad mode did not recompile"
    assert_same(expected, actual)


def test_same_input_reuses_the_graph():
    check(three_ops, t(4))
    for _ in range(5):
        check.compiled(t(4))
    assert check.backend.graph_count == 1
    assert dict(counters["stats"]) == {"calls_captured": 3, "unique_graphs": 1}


def test_constant_argument_is_guarded():
    check(constant_arg, t(3), 3)
    assert_same(constant_arg(t(3), 4), check.compiled(t(3), 4))
    assert_same(constant_arg(t(3), 3), check.compiled(t(3), 3))
    assert check.backend.graph_count == 2


def test_global_constant_is_guarded():
    global SCALE
    check(global_constant, t(3))
    SCALE = 5
    try:
        assert_same(global_constant(t(3)), check.compiled(t(3)))
        assert check.backend.graph_count == 2
    finally:
        SCALE = 3


def test_aliased_inputs_are_guarded():
    x = t(4)
    check(add, x, x, graphs=1)
    y, z = t(4), t(4)
    assert_same(add(y, z), check.compiled(y, z))
    assert check.backend.graph_count == 2


def test_closures_from_one_def_share_a_cache_entry():
    framegraph.reset()
    counters.clear()
    from .helpers import CountingBackend

    backend = CountingBackend()
    f1, f2, f3 = closure_maker(2.0), closure_maker(2.0), closure_maker(3.0)
    c1, c2, c3 = (framegraph.compile(f, backend=backend) for f in (f1, f2, f3))
    x = t(3)
    assert_same(f1(x), c1(x))
    assert_same(f2(x), c2(x))
    assert backend.graph_count == 1, "equal captured values must share the entry"
    assert_same(f3(x), c3(x))
    assert backend.graph_count == 2, "a different captured value must be guarded"
    from framegraph.eval_frame import get_cache_entries
    assert len(get_cache_entries(f1.__code__)) == 2


def test_user_exception_keeps_type_message_and_traceback():
    def raises(x):
        y = x * 2
        raise ValueError(f"bad value {y.shape}")

    compiled = framegraph.compile(raises, backend="eager")
    with pytest.raises(ValueError, match=r"bad value torch.Size\(\[3\]\)") as info:
        compiled(t(3))
    frames = [tb.name for tb in info.traceback]
    assert "raises" in frames


def _user_lines(error: BaseException, fn) -> list[tuple[str, str]]:
    """(frame name, source line) of the traceback's frames in `fn`'s file, outermost first."""
    import traceback

    path = fn.__code__.co_filename
    return [(f.name, f.line) for f in traceback.extract_tb(error.__traceback__) if f.filename == path][1:]


def raises_in_graph(x, w):
    y = x + 1
    z = y @ w
    return z * 2


def raises_after_break(x):
    y = x * 2
    print("a break")
    if x.dim() > 5:
        pass
    raise ValueError("bad")


def raises_in_resumed_callee(x):
    y = helper_that_breaks_then_raises(x)
    return y


def helper_that_breaks_then_raises(x):
    y = x + 1
    print("a break")
    raise KeyError("late")


@pytest.mark.parametrize("fn, args", [
    (raises_in_graph, lambda: (t(2, 3), t(4, 5))),
    (raises_after_break, lambda: (t(2),)),
    (raises_in_resumed_callee, lambda: (t(2),)),
])
def test_a_traceback_shows_the_statements_eager_shows(fn, args):
    """Each user frame of the traceback is at a statement eager's traceback has at that
    depth, never at a `def`: the frame that handed over to a resume function shows the
    statement that broke, the resume function the statement that raised."""
    framegraph.reset()
    with pytest.raises(Exception) as eager:
        fn(*args())
    compiled = framegraph.compile(fn, backend="eager")
    with pytest.raises(Exception) as ours:
        compiled(*args())
    assert type(ours.value) is type(eager.value)
    theirs, mine = _user_lines(eager.value, fn), _user_lines(ours.value, fn)
    assert all(not line.startswith("def ") for _, line in mine), mine
    assert mine[-1][1] == theirs[-1][1]  # where it was raised (in a resume function, named so)
    assert {line for _, line in mine} <= {line for _, line in theirs} | {'print("a break")'}, mine


def test_runtime_error_from_a_bad_shape_is_the_eager_error():
    framegraph.reset()
    compiled = framegraph.compile(matmul, backend="eager")
    with pytest.raises(RuntimeError) as compiled_error:
        compiled(t(2, 3), t(2, 3))
    with pytest.raises(RuntimeError) as eager_error:
        matmul(t(2, 3), t(2, 3))
    assert str(compiled_error.value) == str(eager_error.value)


def test_kwargs_and_keyword_only():
    compiled = framegraph.compile(kwargs_dict, backend="eager")
    assert_same(kwargs_dict(t(3), scale=2.0), compiled(t(3), scale=2.0))
    compiled = framegraph.compile(keyword_only, backend="eager")
    assert_same(keyword_only(t(3), beta=t(3)), compiled(t(3), beta=t(3)))
