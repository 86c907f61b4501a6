"""torch.autograd.Function subclasses and the cases test_autograd_function.py runs with them.

Each case is `(fn, make_args)` (a module case: `(module class, make_args, {})`); the
break-everywhere fuzzer collects these lists through the test module, which imports them.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable


def leaf(*shape, seed: int = 0, dtype=torch.float32, grad: bool = True) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=generator, dtype=dtype).requires_grad_(grad)


# ---- Functions --------------------------------------------------------------------------------

class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class ScaledGrad(torch.autograd.Function):
    """A backward that is not the forward's derivative (a straight-through style estimator)."""

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


class SinSaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class ExpSavesOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class CustomGelu(torch.autograd.Function):
    """BLOOM's GeLU: the tanh approximation, with its own (approximate) backward, which reads
    `ctx.saved_tensors` as a tuple."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))

    @staticmethod
    def backward(ctx, grad):
        x = ctx.saved_tensors[0]
        tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
        ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
        return ff * grad


class SavesIntermediate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        t = x.tanh()
        ctx.save_for_backward(t, None)
        return t * 2

    @staticmethod
    def backward(ctx, grad):
        t, nothing = ctx.saved_tensors
        assert nothing is None
        return grad * 2 * (1 - t * t)


class ScaleBy(torch.autograd.Function):
    """Non-tensor arguments: a float kept on ctx, a flag the forward branches on."""

    @staticmethod
    def forward(ctx, x, k, negate):
        ctx.k = k
        ctx.negate = negate
        y = x * k
        return -y if negate else y

    @staticmethod
    def backward(ctx, grad):
        g = grad * ctx.k
        return (-g if ctx.negate else g), None, None


class SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * x.cos() - grad_cos * x.sin()


class WithCount(torch.autograd.Function):
    """A tuple output with a Python number in it: its gradient is None."""

    @staticmethod
    def forward(ctx, x):
        return x * 3, 7

    @staticmethod
    def backward(ctx, grad, grad_count):
        assert grad_count is None
        return grad * 3


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = grad * y if ctx.needs_input_grad[0] else None
        gy = grad * x if ctx.needs_input_grad[1] else None
        return gx, gy


class MaxWithIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(dim=-1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        (indices,) = ctx.saved_tensors
        out = grad.new_zeros(ctx.shape)
        return out.scatter(-1, indices.unsqueeze(-1), grad.unsqueeze(-1))


class SquareOnce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


class Identity(torch.autograd.Function):
    """Returns its input: apply hands back an alias (a view), with this backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 5


class FirstRow(torch.autograd.Function):
    """Returns a view of its input."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x[0]

    @staticmethod
    def backward(ctx, grad):
        out = grad.new_zeros(ctx.shape)
        out[0] = grad
        return out


class StashesTensor(torch.autograd.Function):
    """A tensor kept as a ctx attribute instead of with save_for_backward."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.y = y
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.y, grad


class NewStyle(torch.autograd.Function):
    """forward without ctx, and setup_context; `scale` has a default apply fills in."""

    @staticmethod
    def forward(x, scale=2.0):
        return x * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.scale = scale

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class Materialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 4

    @staticmethod
    def backward(ctx, grad):
        return None if grad is None else grad * 4


class ExtraNones(torch.autograd.Function):
    """backward may return more values than inputs when the extra ones are None."""

    @staticmethod
    def forward(ctx, x):
        return x + 1

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


class ReadsListOfTensors(torch.autograd.Function):
    """A tensor reached through a list argument is no input of the Function: no gradient."""

    @staticmethod
    def forward(ctx, x, weights):
        ctx.save_for_backward(weights[0])
        return x * weights[0]

    @staticmethod
    def backward(ctx, grad):
        (w,) = ctx.saved_tensors
        return grad * w, None


class ReadsSize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        return x.sum(dim=0) / n

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.n, *grad.shape) / ctx.n, None


class Scaled(torch.autograd.Function):
    """Overrides apply as a classmethod that ends in super().apply."""

    @classmethod
    def apply(cls, x):
        return super().apply(x * 1.5)

    @staticmethod
    def forward(ctx, x):
        return x.exp()

    @staticmethod
    def backward(ctx, grad):
        return grad * 7


GLOBAL_SCALE = leaf(4, seed=9)


class ReadsGlobal(torch.autograd.Function):
    """Forward and backward read a global tensor that requires grad: it gets no gradient."""

    @staticmethod
    def forward(ctx, x):
        return x * GLOBAL_SCALE

    @staticmethod
    def backward(ctx, grad):
        return grad * GLOBAL_SCALE * 2


class Outer(torch.autograd.Function):
    """A Function whose forward and backward apply another: there grad mode is off, so the
    inner one is inlined."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Double.apply(x.sin()) + torch.is_grad_enabled()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return SinSaved.apply(grad * x.cos()) * 2


CALLS: list = []


class Logged(torch.autograd.Function):
    """A forward that records its call in a global list (replayed after the graph)."""

    @staticmethod
    def forward(ctx, x):
        CALLS.append("forward")
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class GeluModule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        with torch.no_grad():
            self.linear.weight.copy_(leaf(4, 4, seed=3, grad=False))
            self.linear.bias.copy_(leaf(4, seed=4, grad=False))

    def forward(self, x):
        return CustomGelu.apply(self.linear(x)) + x


double_op = Double.apply  # a bound apply kept in a global


# ---- cases ------------------------------------------------------------------------------------

def double(x):
    return Double.apply(x) + 1


def scaled_grad(x):
    return ScaledGrad.apply(x * 2)


def sin_saved(x):
    return SinSaved.apply(x).sum(dim=0)


def exp_saves_output(x):
    return ExpSavesOutput.apply(x)


def custom_gelu(x):
    return CustomGelu.apply(x)


def saves_intermediate(x):
    return SavesIntermediate.apply(x)


def scale_by(x):
    return ScaleBy.apply(x, 2.5, False), ScaleBy.apply(x, 0.5, True)


def sin_cos(x):
    s, c = SinCos.apply(x)
    return s * 2 + c


def with_count(x):
    y, count = WithCount.apply(x)
    return y * count


def mul_both(x, y):
    return Mul.apply(x, y)


def mul_one_needs_grad(x, y):
    return Mul.apply(x, y)


def max_with_index(x):
    values, indices = MaxWithIndex.apply(x)
    return values, indices


def square_once(x):
    return SquareOnce.apply(x)


def under_no_grad(x):
    with torch.no_grad():
        y = SinSaved.apply(x)
    return y + x


def identity_returns_alias(x):
    y = Identity.apply(x)
    return y * 1.0, y.requires_grad


def identity_under_no_grad(x):
    with torch.no_grad():
        y = Identity.apply(x)
    return y, y.requires_grad


def first_row(x):
    return FirstRow.apply(x) * 2


def stashes_tensor(x, y):
    return StashesTensor.apply(x, y)


def new_style(x):
    return NewStyle.apply(x) + NewStyle.apply(x, 3.0)


def keyword_argument(x, y):
    return Mul.apply(x, y=y)


def materialize_false(x):
    return Materialize.apply(x)


def extra_nones(x):
    return ExtraNones.apply(x)


def list_argument(x, weights):
    return ReadsListOfTensors.apply(x, weights)


def size_argument(x):
    return ReadsSize.apply(x, x.shape[0])


def chained(x):
    return SinSaved.apply(Double.apply(x)) * ExpSavesOutput.apply(x)


def in_a_loop(x):
    for _ in range(3):
        x = CustomGelu.apply(x)
    return x


def bound_apply_global(x):
    return double_op(x)


def super_apply(x):
    return Scaled.apply(x)


def no_input_requires_grad(x):
    y = SinSaved.apply(x)
    return y, y.requires_grad


def reads_global(x):
    return ReadsGlobal.apply(x)


def float64_inputs(x):
    return CustomGelu.apply(x) * 2


def nested_functions(x):
    return Outer.apply(x)


def logged(x):
    before = len(CALLS)
    y = Logged.apply(x)
    return y, len(CALLS) - before


CASES = [
    (double, lambda: (leaf(4),)),
    (scaled_grad, lambda: (leaf(4),)),
    (sin_saved, lambda: (leaf(3, 4),)),
    (exp_saves_output, lambda: (leaf(5),)),
    (custom_gelu, lambda: (leaf(2, 8),)),
    (saves_intermediate, lambda: (leaf(6),)),
    (scale_by, lambda: (leaf(4),)),
    (sin_cos, lambda: (leaf(4),)),
    (with_count, lambda: (leaf(4),)),
    (mul_both, lambda: (leaf(3), leaf(3, seed=1))),
    (mul_one_needs_grad, lambda: (leaf(3), leaf(3, seed=1, grad=False))),
    (max_with_index, lambda: (leaf(3, 5),)),
    (square_once, lambda: (leaf(4),)),
    (under_no_grad, lambda: (leaf(4),)),
    (identity_returns_alias, lambda: (leaf(4),)),
    (identity_under_no_grad, lambda: (leaf(4),)),
    (first_row, lambda: (leaf(3, 4),)),
    (stashes_tensor, lambda: (leaf(4), leaf(4, seed=2))),
    (new_style, lambda: (leaf(4),)),
    (keyword_argument, lambda: (leaf(3), leaf(3, seed=1))),
    (materialize_false, lambda: (leaf(4),)),
    (extra_nones, lambda: (leaf(4),)),
    (list_argument, lambda: (leaf(4), [leaf(4, seed=5)])),
    (size_argument, lambda: (leaf(3, 4),)),
    (chained, lambda: (leaf(4),)),
    (in_a_loop, lambda: (leaf(2, 4),)),
    (bound_apply_global, lambda: (leaf(4),)),
    (super_apply, lambda: (leaf(4),)),
    (no_input_requires_grad, lambda: (leaf(4, grad=False),)),
    (reads_global, lambda: (leaf(4),)),
    (GeluModule, lambda: (leaf(2, 4),), {}),  # a module whose forward applies a Function
    (float64_inputs, lambda: (leaf(2, 3, dtype=torch.float64),)),
    (nested_functions, lambda: (leaf(4),)),
    (logged, lambda: (leaf(4),)),
]


# ---- refused: the apply runs eagerly at a typed break --------------------------------------

class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        x.mul_(2)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class DataDependentBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 if x.sum().item() > 0 else grad * -2


class ListOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return [x * 2, x * 3]

    @staticmethod
    def backward(ctx, a, b):
        return a


class Materialize2(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, a, b):
        return (a if a is not None else 0) + (b if b is not None else 0)


KEPT: list = []


class KeepsIntermediate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        t = x * 2
        KEPT.append(t)
        return t + 1

    @staticmethod
    def backward(ctx, grad):
        return grad


class WritesInput(torch.autograd.Function):
    """Changes its input in place without mark_dirty."""

    @staticmethod
    def forward(ctx, x, stats):
        stats.add_(x.detach().mean())  # a running statistic the forward keeps
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None


class WritesGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        grad.mul_(2)
        return grad


class InferenceOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.exp()


def writes_input(x, stats):
    return WritesInput.apply(x, stats)


def writes_gradient(x):
    return WritesGradient.apply(x)


def inference_only(x):
    return InferenceOnly.apply(x).detach() + 1


def dirty(x):
    return Dirty.apply(x * 1.0)


def data_dependent_backward(x):
    return DataDependentBackward.apply(x) + 1


def list_output(x):
    return ListOutput.apply(x)[0] + 1


def materialize_two_outputs(x):
    a, b = Materialize2.apply(x)
    return a


def same_tensor_twice(x):
    return Mul.apply(x, x)


def keeps_intermediate(x):
    KEPT.clear()
    y = KeepsIntermediate.apply(x)
    return y, KEPT[0]


# (fn, make_args, the break's reason as framegraph reports it)
REFUSED = [
    (dirty, lambda: (leaf(4),), "ctx.mark_dirty"),
    (data_dependent_backward, lambda: (leaf(4),), "Tensor.item"),
    (list_output, lambda: (leaf(4),), "returns no tensor (or a list)"),
    (materialize_two_outputs, lambda: (leaf(4),), "set_materialize_grads(False) with several outputs"),
    (same_tensor_twice, lambda: (leaf(4),), "given one tensor twice"),
    (writes_input, lambda: (leaf(4), torch.zeros(())), "writes to a tensor it did not make"),
    (writes_gradient, lambda: (leaf(4),), "writes to a tensor it did not make"),
    (inference_only, lambda: (leaf(4),), "backward raises"),
    (keeps_intermediate, lambda: (leaf(4),), "escaped"),
]


DYNAMIC = [
    (size_argument, lambda: (leaf(3, 4),)),
    (custom_gelu, lambda: (leaf(3, 4),)),
    (max_with_index, lambda: (leaf(3, 4),)),
]
