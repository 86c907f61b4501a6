"""Torch semantics a capture must keep: in-place ops that nothing reads, random-number state,
autograd calls, leaves made in the body, saved-tensor hooks, `Tensor.new`, tensor attributes,
Python types as dtypes, and BatchNorm subclasses. Each is compared with eager (and, where the
behaviour is a choice, with torch.compile's). Global switches and dispatch modes are in
test_torch_global_state.py."""

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, check, clone


def t(*shape, requires_grad=False):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape, requires_grad=requires_grad)


def torch_compile_counts(fn, *args):
    """(graphs, graph breaks) torch.compile gives for fn(*args), as the reference."""
    import torch._dynamo
    from torch._dynamo.utils import counters as dynamo_counters

    torch._dynamo.reset()
    dynamo_counters.clear()
    graphs = CountingBackend()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.compile(fn, backend=graphs)(*clone(args))
    breaks = sum(dynamo_counters["graph_break"].values())
    torch._dynamo.reset()
    return graphs.graph_count, breaks


def framegraph_counts(fn, *args):
    """(graphs, graph breaks) of fn(*args) under framegraph, with the result checked against eager."""
    framegraph.reset()
    counters.clear()
    graphs = CountingBackend()
    torch.manual_seed(0)
    expected = fn(*clone(args))
    torch.manual_seed(0)
    assert_same(expected, framegraph.compile(fn, backend=graphs)(*clone(args)))
    assert not counters["fallback"], dict(counters["fallback"])
    return graphs.graph_count, sum(counters["graph_break"].values())


# ---- 1. in-place ops whose result nothing reads -------------------------------------------------
ACTIVATIONS = {
    "nn.ReLU": nn.ReLU(inplace=True),
    "nn.SiLU": nn.SiLU(inplace=True),
    "nn.Hardswish": nn.Hardswish(inplace=True),
    "relu": lambda y: F.relu(y, inplace=True),
    "relu_positional": lambda y: F.relu(y, True),
    "relu6": lambda y: F.relu6(y, inplace=True),
    "hardswish": lambda y: F.hardswish(y, inplace=True),
    "silu": lambda y: F.silu(y, inplace=True),
    "leaky_relu": lambda y: F.leaky_relu(y, 0.1, inplace=True),
    "elu": lambda y: F.elu(y, inplace=True),
    "hardtanh": lambda y: F.hardtanh(y, -0.5, 0.5, inplace=True),
    "celu": lambda y: F.celu(y, inplace=True),
    "selu": lambda y: F.selu(y, inplace=True),
    "rrelu_eval": lambda y: F.rrelu(y, inplace=True),
    "threshold": lambda y: F.threshold(y, 0.2, -1.0, inplace=True),
}


def _result_unused(op):
    def fn(x):
        y = x * 2
        op(y)  # only the mutation matters
        return y + 1
    return fn


def _read_through_other_name(op):
    def fn(x):
        y = x * 2
        alias = y.view(-1)
        z = op(y)
        return alias.sum() + z.sum(), y
    return fn


# (fn, argument factory): the break-everywhere sweep runs these too
ACTIVATION_RESULT_UNUSED = [(_result_unused(op), lambda: (t(4, 8),)) for op in ACTIVATIONS.values()]
ACTIVATION_READ_THROUGH_ALIAS = [(_read_through_other_name(op), lambda: (t(4, 8),)) for op in ACTIVATIONS.values()]


@pytest.mark.parametrize("fn, make_args", ACTIVATION_RESULT_UNUSED, ids=list(ACTIVATIONS))
def test_inplace_activation_result_unused(fn, make_args):
    check(fn, *make_args(), graphs=1)


@pytest.mark.parametrize("fn, make_args", ACTIVATION_READ_THROUGH_ALIAS, ids=list(ACTIVATIONS))
def test_inplace_activation_then_read_through_other_name(fn, make_args):
    check(fn, *make_args(), graphs=1)


def test_inplace_activation_on_input_is_seen_by_caller():
    relu = ACTIVATIONS["nn.ReLU"]

    def fn(x):
        F.silu(x, inplace=True)
        relu(x[1])
        return x.sum()
    check(fn, t(3, 5), graphs=1)


INPLACE_OPS = {
    "method_relu_": lambda y, o: y.relu_(),
    "method_add_": lambda y, o: y.add_(o, alpha=2),
    "method_clamp_": lambda y, o: y.clamp_(min=0.1),
    "method_copy_": lambda y, o: y.copy_(o),
    "method_index_add_": lambda y, o: y.index_add_(0, torch.tensor([1, 0]), o[:2]),
    "method_iadd": lambda y, o: y.__iadd__(o),
    "method_iand_bool": lambda y, o: (y > 0).__iand__(o > 0),
    "aten_add_overload": lambda y, o: torch.ops.aten.add_.Tensor(y, o),
    "aten_add_packet": lambda y, o: torch.ops.aten.add_(y, o),
    "aten_relu_": lambda y, o: torch.ops.aten.relu_.default(y),
    "torch_relu_": lambda y, o: torch.relu_(y),
    "out_add": lambda y, o: torch.add(o, 1, out=y),
    "out_mul_method_args": lambda y, o: torch.mul(o, o, out=y),
    "out_aten_overload": lambda y, o: torch.ops.aten.sin.out(o, out=y),
    "nn_init": lambda y, o: nn.init.constant_(y, 0.5),
    "setitem": lambda y, o: y.__setitem__(0, 3.0),
}


def _op_result_unused(op):
    def fn(x, other):
        y = x * 2
        op(y, other)
        return y + 1
    return fn


INPLACE_OP_RESULT_UNUSED = [(_op_result_unused(op), lambda: (t(4, 3), t(4, 3))) for op in INPLACE_OPS.values()]


@pytest.mark.parametrize("fn, make_args", INPLACE_OP_RESULT_UNUSED, ids=list(INPLACE_OPS))
def test_inplace_op_result_unused(fn, make_args):
    check(fn, *make_args(), graphs=1)


def test_pure_op_result_unused_is_still_removed():
    def fn(x):
        x.sin()
        F.relu(x, inplace=False)
        torch.add(x, 1)
        return x * 2
    check(fn, t(3), graphs=1, ops=1)  # only the multiplication is left


# A custom operator that writes its argument and returns nothing, and one that writes its
# argument and returns a new tensor no one reads, with fake kernels that do not write at all
# (so only the schema tells).
_LIB = torch.library.Library("fg_semantics", "DEF")
_LIB.define("bump(Tensor(a!) x) -> ()")
_LIB.define("bump_and_copy(Tensor(a!) x) -> Tensor")


def _bump(x):
    x.add_(1)


def _bump_and_copy(x):
    x.add_(1)
    return x.clone()


_LIB.impl("bump", _bump, "CPU")
_LIB.impl("bump_and_copy", _bump_and_copy, "CPU")
torch.library.register_fake("fg_semantics::bump", lambda x: None, lib=_LIB)
torch.library.register_fake("fg_semantics::bump_and_copy", lambda x: torch.empty_like(x), lib=_LIB)


CUSTOM_OP_RESULT_UNUSED = [(_result_unused(call), lambda: (t(5),)) for call in [
    lambda y: torch.ops.fg_semantics.bump(y),
    lambda y: torch.ops.fg_semantics.bump.default(y),
    lambda y: torch.ops.fg_semantics.bump_and_copy(y),
    lambda y: torch.ops.fg_semantics.bump_and_copy.default(y),
]]


@pytest.mark.parametrize("fn, make_args", CUSTOM_OP_RESULT_UNUSED,
                         ids=["bump_packet", "bump_overload", "copy_packet", "copy_overload"])
def test_custom_op_that_mutates_its_argument(fn, make_args):
    check(fn, *make_args(), graphs=1)


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: conv-bn-relu(inplace)-conv-bn, residual add, relu(inplace)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out += identity
        out = self.relu(out)
        return out


# (module factory, argument factory, forward's keyword arguments)
BLOCKS = [
    (lambda: nn.Sequential(BasicBlock(4), BasicBlock(4)), lambda: (t(2, 4, 6, 6),), {}),
    (lambda: nn.Sequential(BasicBlock(4), BasicBlock(4)).eval(), lambda: (t(2, 4, 6, 6),), {}),
]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("make, make_args", [case[:2] for case in BLOCKS], ids=["train", "eval"])
def test_basic_block_with_inplace_relu(backend, make, make_args):
    torch.manual_seed(0)
    eager_block = make()
    compiled_block = copy.deepcopy(eager_block)
    (x,) = make_args()
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(compiled_block, backend=backend)
    for _ in range(2):
        expected, actual = eager_block(x.clone()), compiled(x.clone())
        torch.testing.assert_close(actual, expected)
        expected.square().sum().backward()
        actual.square().sum().backward()
    for (name, p), q in zip(eager_block.named_parameters(), compiled_block.parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=f"grad of {name}")
    for (name, b), c in zip(eager_block.named_buffers(), compiled_block.buffers()):
        torch.testing.assert_close(c, b, msg=f"buffer {name}")
    assert not counters["graph_break"] and not counters["fallback"]


# ---- 2. random-number state -----------------------------------------------------------------------
def replay_with_rng_state(x):
    state = torch.get_rng_state()
    a = torch.rand(2)
    torch.set_rng_state(state)
    b = torch.rand(2)
    return x + a - b, torch.rand(2)
def seed_in_body(x):
    y = x * 2
    torch.manual_seed(5)
    return y + torch.rand(2)
def fork_rng_block(x):
    with torch.random.fork_rng():
        torch.manual_seed(1)
        a = torch.rand(2)
    return x + a + torch.rand(2)
def random_method_after_state(x):
    state = torch.random.get_rng_state()
    y = x.clone().uniform_()
    torch.random.set_rng_state(state)
    return y - x.clone().uniform_()


RNG_STATE = [(fn, lambda: (t(2),)) for fn in [replay_with_rng_state, seed_in_body, fork_rng_block,
                                                random_method_after_state]]


@pytest.mark.parametrize("fn, make_args", RNG_STATE)
def test_rng_state_in_the_body_matches_eager(fn, make_args):
    """The draws in the body, and the next draw after it, equal eager's on every call."""
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(fn, backend=CountingBackend())
    (x,) = make_args()
    for _ in range(3):
        torch.manual_seed(123)
        expected, expected_next = fn(x.clone()), torch.rand(4)
        torch.manual_seed(123)
        actual, actual_next = compiled(x.clone()), torch.rand(4)
        assert_same(expected, actual)
        assert_same(expected_next, actual_next, "the draw after the call")
    assert not counters["fallback"], dict(counters["fallback"])


def test_rng_state_breaks_like_torch_compile():
    x = t(2)
    ours = framegraph_counts(replay_with_rng_state, x)
    assert ours == torch_compile_counts(replay_with_rng_state, x)


# ---- 3. autograd calls in the body ----------------------------------------------------------------
def backward_in_body(x, w):
    loss = (x * w).sin().sum()
    loss.backward()
    return loss.detach() * 2
def autograd_grad_in_body(x, w):
    loss = (x * w).sin().sum()
    (grad,) = torch.autograd.grad(loss, [w])
    return grad * 2
def autograd_backward_in_body(x, w):
    loss = (x * w).sin().sum()
    torch.autograd.backward([loss])
    return w.grad * 1
def retain_grad_in_body(x, w):
    y = x * w
    y.retain_grad()
    y.sum().backward()
    return y.grad


AUTOGRAD_IN_BODY = [(fn, lambda: (t(4), t(4, requires_grad=True))) for fn in [
    backward_in_body, autograd_grad_in_body, autograd_backward_in_body, retain_grad_in_body]]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn, make_args", AUTOGRAD_IN_BODY)
def test_autograd_in_body_fills_grads_like_eager(fn, make_args, backend):
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(fn, backend=backend)
    for _ in range(2):
        (x, w_eager), (_, w_compiled) = make_args(), make_args()
        expected, actual = fn(x, w_eager), compiled(x, w_compiled)
        assert_same(expected, actual)
        assert_same(w_eager.grad, w_compiled.grad, "w.grad")
    assert not counters["fallback"], dict(counters["fallback"])


@pytest.mark.parametrize("fn", [backward_in_body, autograd_grad_in_body])
def test_autograd_in_body_breaks_like_torch_compile(fn):
    x = t(4)
    ours = framegraph_counts(fn, x, t(4, requires_grad=True))
    assert ours == torch_compile_counts(fn, x, t(4, requires_grad=True))


# ---- 4. leaves made in the body -----------------------------------------------------------------
def leaves_made_in_body(x):
    zeros = torch.zeros(3, requires_grad=True)
    data = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    detached = x.detach().requires_grad_()
    like = x.new_ones(3, requires_grad=True)
    out = (zeros + data * detached * like).sum()
    return out, zeros, data, detached, like


# for the break-everywhere sweep
LEAVES = [(leaves_made_in_body, lambda: (t(3),))]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_leaves_made_in_body_are_leaves_that_get_grads(backend):
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(leaves_made_in_body, backend=backend)
    for _ in range(2):
        x = t(3)
        expected, actual = leaves_made_in_body(x), compiled(x.clone())
        expected[0].backward()
        actual[0].backward()
        for i, (e, a) in enumerate(zip(expected[1:], actual[1:])):
            assert (a.requires_grad, a.is_leaf) == (e.requires_grad, e.is_leaf), f"leaf {i}"
            assert_same(e.detach(), a.detach(), f"leaf {i}")
            assert_same(e.grad, a.grad, f"leaf {i}.grad")
    assert not counters["fallback"], dict(counters["fallback"])


# ---- 5. saved-tensor hooks -----------------------------------------------------------------------
CALLS: list = []


def pack(t):
    CALLS.append("pack")
    return t


def unpack(t):
    CALLS.append("unpack")
    return t


def saves_tensors(x):
    return (x * x).sin().sum()


def saves_tensors_under_hooks(x):
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return (x * x).sin().sum()


def _hook_calls(fn, x, outside: bool) -> list:
    CALLS.clear()
    if outside:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = fn(x)
    else:
        out = fn(x)
    out.backward()
    return list(CALLS)


SAVED_TENSOR_HOOKS = [(saves_tensors_under_hooks, lambda: (t(5, requires_grad=True),))]  # for the sweep


@pytest.mark.parametrize("outside", [True, False], ids=["around_the_call", "in_the_body"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_saved_tensor_hooks_run_once_per_saved_tensor(backend, outside):
    """Compiling runs no hook: the compiling call makes the calls a cached call makes, and with
    the eager backend (which saves what eager saves) the calls eager makes."""
    fn = saves_tensors if outside else saves_tensors_under_hooks
    x = t(5, requires_grad=True)
    expected = _hook_calls(fn, x, outside)
    framegraph.reset()
    compiled = framegraph.compile(fn, backend=backend)
    first = _hook_calls(compiled, x, outside)
    cached = _hook_calls(compiled, x, outside)
    assert first == cached
    if backend == "eager":
        assert first == expected


# ---- 6. Tensor.new -------------------------------------------------------------------------------
NEW_CALLS = {
    "sizes": lambda x: x.new(2, 3).fill_(1.5),
    "one_size": lambda x: x.new(4).zero_(),
    "torch_size": lambda x: x.new(torch.Size([2])).fill_(2),
    "shape_of_input": lambda x: x.new(x.shape).fill_(3),
    "empty_size": lambda x: x.new(torch.Size([])).fill_(4),
    "data_list": lambda x: x.new([1, 2, 3]),
    "data_tuple": lambda x: x.new((1.5, 2.5)),
    "nothing": lambda x: x.new(),
    "new_empty": lambda x: x.new_empty(2, 2).fill_(5),
    "new_zeros_size": lambda x: x.new_zeros(torch.Size([3])),
    "new_full": lambda x: x.new_full((2,), 7),
    "new_tensor": lambda x: x.new_tensor([[1, 2]]),
}


def _ones(dtype):
    return lambda: (torch.ones(3, 2, dtype=dtype),)


def _on_a_product(call):
    return lambda x: call(x * 1)


TENSOR_NEW = [(_on_a_product(call), _ones(dtype)) for dtype in (torch.float64, torch.int32)
              for call in NEW_CALLS.values()]


@pytest.mark.parametrize("fn, make_args", TENSOR_NEW,
                         ids=[f"{name}-{dtype}" for dtype in ("float64", "int32") for name in NEW_CALLS])
def test_tensor_new_like_eager(fn, make_args):
    check(fn, *make_args(), graphs=1)


# ---- 7. attributes a program set on a tensor --------------------------------------------------------
def branch_on_tensor_attribute(x):
    return x + 1 if hasattr(x, "tag") else x - 1


def getattr_with_default(x):
    return x * 2 + getattr(x, "scale", 0)


def _tagged(value):
    x = t(3)
    x.tag = x.scale = value
    return x


TENSOR_ATTRIBUTES = [(fn, make) for fn in (branch_on_tensor_attribute, getattr_with_default)
                     for make in (lambda: (_tagged(5),), lambda: (t(3),))]


@pytest.mark.parametrize("fn", [branch_on_tensor_attribute, getattr_with_default])
@pytest.mark.parametrize("first_tagged", [False, True], ids=["absent_then_present", "present_then_absent"])
def test_hasattr_on_tensor_is_guarded(fn, first_tagged):
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(fn, backend=CountingBackend())
    calls = [_tagged(5), t(3)] if first_tagged else [t(3), _tagged(5)]
    for x in calls + calls:
        assert_same(fn(x), compiled(x))
    assert not counters["fallback"], dict(counters["fallback"])


def test_hasattr_of_tensor_class_attribute_needs_no_guard():
    def fn(x):
        return x + 1 if hasattr(x, "shape") and not hasattr(x * 2, "tag") else x - 1
    check(fn, t(3), graphs=1)


# ---- 8. Python types where torch takes a dtype ------------------------------------------------------
PYTHON_TYPE_DTYPES = {
    "to_bool": lambda x: (x * 2).to(bool),
    "to_float": lambda x: (x * 2).to(float),
    "to_int": lambda x: (x * 2).to(int),
    "to_complex": lambda x: (x * 2).to(complex),
    "to_dtype_keyword": lambda x: (x * 2).to(dtype=float),
    "type_torch_dtype": lambda x: (x * 2).type(torch.float64),
    "zeros_dtype": lambda x: x + torch.zeros(3, dtype=int),
    "full_dtype": lambda x: torch.full((3,), 1, dtype=bool) & (x > 0),
    "new_ones_dtype": lambda x: x.new_ones(3, dtype=float) * x,
    "sum_dtype": lambda x: (x * 2).sum(dtype=float),
}


PYTHON_TYPES_AS_DTYPES = [(fn, lambda: (torch.tensor([0.5, -1.5, 2.0]),)) for fn in PYTHON_TYPE_DTYPES.values()]


@pytest.mark.parametrize("fn, make_args", PYTHON_TYPES_AS_DTYPES, ids=list(PYTHON_TYPE_DTYPES))
def test_python_type_as_dtype(fn, make_args):
    check(fn, *make_args(), graphs=1)


# ---- 9. BatchNorm subclasses -------------------------------------------------------------------------
class ScaledBatchNorm(nn.BatchNorm2d):
    def forward(self, x):
        return super().forward(x) * 2


class BatchNormAct(nn.BatchNorm2d):
    """timm's BatchNormAct2d shape: the normalisation, then an in-place activation."""

    def __init__(self, channels):
        super().__init__(channels)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        x = super().forward(x)
        return self.act(x)


class EvalScaledBatchNorm(nn.BatchNorm2d):
    def forward(self, x):
        out = super(EvalScaledBatchNorm, self).forward(x)
        if not self.training:
            F.relu(out, inplace=True)
        return out


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("modes", ["train", "eval", "train_eval", "eval_train"])
@pytest.mark.parametrize("cls", [ScaledBatchNorm, BatchNormAct, EvalScaledBatchNorm])
def test_batchnorm_subclass_calling_super_forward(cls, modes, backend):
    torch.manual_seed(0)
    eager_bn = cls(3)
    with torch.no_grad():
        eager_bn.running_mean.uniform_(-1, 1)
        eager_bn.running_var.uniform_(0.5, 2)
        eager_bn.weight.uniform_(0.5, 2)
        eager_bn.bias.uniform_(-1, 1)
    compiled_bn = copy.deepcopy(eager_bn)
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(compiled_bn, backend=backend)
    for mode in modes.split("_") * 2:
        eager_bn.train(mode == "train")
        compiled.train(mode == "train")
        x = torch.randn(2, 3, 4, 4)
        torch.testing.assert_close(compiled(x), eager_bn(x))
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            torch.testing.assert_close(getattr(compiled_bn, name), getattr(eager_bn, name), msg=name)
    assert not counters["graph_break"] and not counters["fallback"]


def _made(cls, training: bool):
    return lambda: cls(3).train(training)


# (module factory, argument factory, forward's keyword arguments), for the break-everywhere sweep
BATCHNORM_SUBCLASSES = [(_made(cls, training), lambda: (torch.randn(2, 3, 4, 4),), {})
                        for cls in (ScaledBatchNorm, BatchNormAct, EvalScaledBatchNorm) for training in (True, False)]
