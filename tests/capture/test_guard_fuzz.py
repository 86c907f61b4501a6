"""Guard soundness fuzz: one compiled function per target is called again and again with inputs
varied along every axis a guard must catch (dtype, shape, strides and contiguity,
requires_grad and grad mode, int/float/bool/str values, list length, dict keys, aliasing,
attributes of modules and plain objects, globals). The cache persists across hypothesis
examples, so every call is either a fresh compile or a cache hit whose guards claimed the
entry still applies; every call must equal eager, results and mutated inputs alike. A stale
cache hit is the worst bug this project can have.

Inputs are rebuilt from a recipe for each call (eager and compiled each get their own), so
strides, storage offsets, leaf-ness and aliasing survive exactly, which `helpers.clone` cannot
promise for expanded or sliced tensors.

Stale hits this fuzz found (and that are fixed) are pinned at the end of the file as
regression tests (`test_stale_hit_regression`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import framegraph
from framegraph.counters import counters
from framegraph.eval_frame import get_cache_entries

from .helpers import assert_same

FUZZ_LIMITS = dict(recompile_limit=10_000, accumulated_recompile_limit=100_000)


def fuzz_settings(n: int) -> settings:
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


# ---- tensor recipes -------------------------------------------------------------------------

FLOAT_DTYPES = (torch.float32, torch.float64)
ALL_DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool)
LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "offset")


@dataclasses.dataclass(frozen=True)
class TensorRecipe:
    """How to build one input tensor: each call gets a fresh, identical one."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    layout: str
    requires_grad: bool = False
    nonleaf: bool = False  # a view/product of a leaf that requires grad, not a leaf itself
    seed: int = 0

    def build(self, leaves: list[torch.Tensor]) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed)
        shape, rank = list(self.shape), len(self.shape)

        def values(size) -> torch.Tensor:
            n = 1
            for s in size:
                n *= s
            if self.dtype.is_floating_point:
                flat = torch.randn(n, generator=g, dtype=self.dtype)
            elif self.dtype is torch.bool:
                flat = torch.randint(0, 2, (n,), generator=g).bool()
            else:
                flat = torch.randint(-3, 4, (n,), generator=g, dtype=self.dtype)
            return flat.reshape(size)

        layout = self.layout
        if layout == "transposed" and rank >= 2:
            swapped = shape[:-2] + [shape[-1], shape[-2]]
            t = values(swapped).transpose(-1, -2)
        elif layout == "strided" and rank >= 1:
            t = values([2 * shape[0]] + shape[1:])[::2]
        elif layout == "expanded" and rank >= 1:
            t = values([1] + shape[1:]).expand(shape)
        elif layout == "offset":
            n = 1
            for s in shape:
                n *= s
            t = values([n + 2])[2:].view(shape)
        else:
            t = values(shape)
        if self.requires_grad:
            t = t.detach().requires_grad_()  # a leaf that keeps the view's strides
            leaves.append(t)
            if self.nonleaf:
                t = t * 1 if self.layout != "expanded" else t.expand(self.shape)
        return t


@st.composite
def tensor_recipes(draw, dtypes=ALL_DTYPES, min_rank=0, max_rank=3, max_size=4,
                   shape=None, grad=True) -> TensorRecipe:
    dtype = draw(st.sampled_from(dtypes))
    if shape is None:
        rank = draw(st.integers(min_rank, max_rank))
        shape = tuple(draw(st.lists(st.integers(0, max_size), min_size=rank, max_size=rank)))
    layout = draw(st.sampled_from(LAYOUTS))
    requires_grad = grad and dtype.is_floating_point and draw(st.booleans())
    nonleaf = requires_grad and draw(st.booleans())
    return TensorRecipe(dtype, tuple(shape), layout, requires_grad, nonleaf, draw(st.integers(0, 3)))


# Floats include -0.0 (it must not reuse 0.0's entry), NaN (never equal to itself, so it must
# recompile rather than reuse) and infinities.
floats = st.floats(-4, 4, allow_nan=False, allow_infinity=False, width=32) | \
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 0.5, 2.0, -0.0])
numbers = st.integers(-3, 4) | floats | st.booleans()
strings = st.sampled_from(["sum", "mean", "neg", "", "Sum", "sum ", "max", "ñ", "a", "b"])


# ---- the differential step ------------------------------------------------------------------

def _call(fn: Callable, args: tuple) -> tuple[Any, BaseException | None]:
    try:
        return fn(*args), None
    except Exception as error:  # the user's exception is part of what must match
        return None, error


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _backward(result: Any, leaves: list[torch.Tensor]) -> list[Any]:
    """Backpropagates through every output that needs grad; the leaves' grads to compare."""
    outs = [t for t in _tensors(result) if t.requires_grad and t.dtype.is_floating_point]
    if outs and leaves:
        torch.autograd.backward([t.sum() for t in outs])
    return [leaf.grad for leaf in leaves]


def same(expected: Any, actual: Any, path: str = "result") -> None:
    """helpers.assert_same, except that a float NaN equals a float NaN."""
    if isinstance(expected, float) and expected != expected:
        assert type(actual) is float and actual != actual, f"{path}: {actual!r} != nan"
    elif type(expected) in (list, tuple) and type(actual) is type(expected):
        assert len(expected) == len(actual), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            same(e, a, f"{path}[{i}]")
    elif type(expected) is dict and type(actual) is dict:
        assert list(expected) == list(actual), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            same(expected[k], actual[k], f"{path}[{k!r}]")
    elif isinstance(expected, Config) and type(actual) is type(expected):
        same(vars(expected), vars(actual), f"{path}.__dict__")
    else:
        assert_same(expected, actual, path)


def differential(fn: Callable, compiled: Callable, make_args: Callable[[list], tuple],
                 grad: bool = False) -> None:
    """Fresh inputs for each side; compiled must equal eager (result or exception type,
    mutated inputs, and with `grad` the leaves' gradients)."""
    eager_leaves: list[torch.Tensor] = []
    compiled_leaves: list[torch.Tensor] = []
    eager_args, compiled_args = make_args(eager_leaves), make_args(compiled_leaves)
    expected, expected_error = _call(fn, eager_args)
    actual, actual_error = _call(compiled, compiled_args)
    if expected_error is not None or actual_error is not None:
        assert type(actual_error) is type(expected_error), \
            f"compiled raised {actual_error!r}, eager raised {expected_error!r}"
    else:
        same(expected, actual)
        if grad:
            expected_grads = _backward(expected, eager_leaves)
            actual_grads = _backward(actual, compiled_leaves)
            same(expected_grads, actual_grads, "grads")
    same(eager_args, compiled_args, "mutated inputs")


@pytest.fixture
def fresh():
    """A clean cache, counters and generous limits; no internal errors may fall back."""
    framegraph.reset()
    counters.clear()
    with framegraph.config.patch(**FUZZ_LIMITS), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
    assert not counters["fallback"], f"framegraph fell back: {dict(counters['fallback'])}"
    framegraph.reset()


# ---- 1. dtype, shape, strides, contiguity ---------------------------------------------------

def tensor_meta(x):
    if x.dim() == 2:
        y = x.t().contiguous()
    elif x.dim() == 3 and x.is_contiguous():
        y = x.transpose(0, 2)
    else:
        y = x
    s = sum(x.stride()) + x.dim() * 10 + x.numel()
    if x.is_contiguous():
        out = y * 2 + s
    elif x.dtype == torch.bool:
        out = y.logical_not()
    else:
        out = y - s
    if x.is_floating_point():
        out = out / x.element_size()
    head = x.shape[0] if x.dim() else -1
    return out, x.shape, x.stride(), head, x.dtype, x.is_contiguous()


def test_fuzz_tensor_metadata(fresh):
    compiled = framegraph.compile(tensor_meta, backend="eager")

    @fuzz_settings(500)
    @given(tensor_recipes())
    def run(recipe):
        differential(tensor_meta, compiled, lambda leaves: (recipe.build(leaves),), grad=True)

    run()
    assert counters["stats"]["unique_graphs"] > 20  # the axes really produced many entries


def tensor_pair(x, y, inplace):
    if inplace:
        x.mul_(2)
    z = x + y
    return z, z.dtype, z.shape, z.is_contiguous()


def test_fuzz_tensor_pairs_broadcast_alias_mutation(fresh):
    """Two tensors: promotion, broadcasting (or its error), in-place mutation (or its error on
    leaves that need grad, expanded tensors and bool), and the same tensor passed twice."""
    compiled = framegraph.compile(tensor_pair, backend="eager")

    @fuzz_settings(350)
    @given(tensor_recipes(max_rank=2, max_size=3), tensor_recipes(max_rank=2, max_size=3),
           st.booleans(), st.booleans())
    def run(rx, ry, same, inplace):
        def make(leaves):
            x = rx.build(leaves)
            return (x, x if same else ry.build(leaves), inplace)

        differential(tensor_pair, compiled, make, grad=not inplace)

    run()


# ---- 2. requires_grad and grad mode ---------------------------------------------------------

def grad_target(x, w, scale):
    y = x * w
    if y.requires_grad:
        y = y.sin() * scale
    else:
        y = y.cos() + scale
    return y, y.requires_grad, x.requires_grad, w.requires_grad, torch.is_grad_enabled()


def test_fuzz_requires_grad(fresh):
    compiled = framegraph.compile(grad_target, backend="eager")
    vectors = tensor_recipes(dtypes=FLOAT_DTYPES, shape=(3,))

    @fuzz_settings(300)
    @given(vectors, vectors, st.sampled_from([1, 2.5, -1.0]), st.booleans())
    def run(rx, rw, scale, grad_mode):
        with torch.set_grad_enabled(grad_mode):
            differential(grad_target, compiled, lambda leaves: (rx.build(leaves), rw.build(leaves), scale),
                         grad=grad_mode)

    run()


# ---- 3. int, float, bool and str values in arithmetic and control flow ----------------------

def scalars(x, n, s, flag, mode):
    out = x
    for i in range(n):
        out = out + i * s
    if flag:
        out = out * 2
    if mode == "sum":
        return out.sum(), mode
    elif mode == "mean":
        return out.mean(), n
    elif mode.startswith("n"):
        return -out, type(s).__name__
    return out * n - s, f"{mode}-{n}-{flag}", n + 1, s * 2


def test_fuzz_scalars(fresh):
    compiled = framegraph.compile(scalars, backend="eager")

    @fuzz_settings(500)
    @given(tensor_recipes(dtypes=(torch.float32, torch.int64), max_rank=2, max_size=3, grad=False),
           st.integers(-1, 4) | st.booleans(), numbers,
           st.booleans() | st.none() | st.integers(0, 2) | st.sampled_from(["", "x"]), strings)
    def run(rx, n, s, flag, mode):
        differential(scalars, compiled, lambda leaves: (rx.build(leaves), n, s, flag, mode))

    run()


# ---- 4. list length, dict keys, container mutation ------------------------------------------

def containers(x, xs, d, mutate, mutate_dict):
    total = x
    for i, v in enumerate(xs):
        total = total + v * (i + 1)
    for k in d:
        if isinstance(k, str):
            total = total * d[k]
        else:
            total = total + d[k] + k
    if mutate:
        xs.append(len(d))
    if mutate_dict:
        d["seen"] = len(xs)
    return total, len(xs), list(d), len(d)


# Keys mix str, int and bool: {True: v} must not reuse an entry traced with {1: v}.
dict_keys = st.sampled_from(["a", "b", "seen", "z"]) | st.integers(-1, 2) | st.booleans()


def test_fuzz_containers(fresh):
    compiled = framegraph.compile(containers, backend="eager")
    elem = tensor_recipes(dtypes=FLOAT_DTYPES, max_rank=1, max_size=2, grad=False)
    item = st.one_of(elem, st.integers(-2, 3), floats)

    @fuzz_settings(400)
    @given(elem, st.lists(item, max_size=4), st.lists(st.integers(0, 3), max_size=4),
           st.dictionaries(dict_keys, st.one_of(elem, st.integers(-2, 3), floats), max_size=3),
           st.booleans())
    def run(rx, items, alias_picks, dspec, mutate):
        def make(leaves):
            built = [i.build(leaves) if isinstance(i, TensorRecipe) else i for i in items]
            for j in alias_picks:  # the same object twice in the list
                if built:
                    built.append(built[j % len(built)])
            d = {k: v.build(leaves) if isinstance(v, TensorRecipe) else v for k, v in dspec.items()}
            return (rx.build(leaves), built, d, mutate, mutate)

        differential(containers, compiled, make)

    run()


# ---- 5. attributes of nn.Modules ------------------------------------------------------------

class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))
        self.register_buffer("shift", torch.zeros(3))
        self.scale = 1.0
        self.mode = "mul"
        self.use_shift = True
        self.steps = 0

    def forward(self, x):
        y = x * self.weight if self.mode == "mul" else x + self.weight
        y = y * self.scale
        if self.use_shift:
            y = y + self.shift
        if self.training:
            self.steps = self.steps + 1
            y = y + self.steps
        return y, self.mode


def test_fuzz_module_attributes(fresh):
    module = Scaler()
    compiled = framegraph.compile(module, backend="eager")

    @fuzz_settings(300)
    @given(st.integers(-2, 3) | floats, st.sampled_from(["mul", "add"]), st.booleans(), st.booleans(),
           st.integers(0, 3), st.sampled_from([(3,), (1,), (2, 3)]), st.sampled_from(FLOAT_DTYPES),
           st.booleans(), st.sampled_from([(3,), (1,)]))
    def run(scale, mode, use_shift, training, steps, wshape, wdtype, wgrad, shift_shape):
        module.scale, module.mode, module.use_shift = scale, mode, use_shift
        module.train(training)
        weight = torch.arange(1.0, 1.0 + torch.Size(wshape).numel(), dtype=wdtype).reshape(wshape)
        module.weight = nn.Parameter(weight, requires_grad=wgrad)
        module.shift = torch.full(shift_shape, 0.5)
        x = torch.linspace(-1, 1, 3)
        module.steps = steps
        expected, expected_error = _call(module, (x.clone(),))
        eager_steps = module.steps
        module.steps = steps
        actual, actual_error = _call(compiled, (x.clone(),))
        assert type(actual_error) is type(expected_error), f"{actual_error!r} vs {expected_error!r}"
        if expected_error is None:
            same(expected, actual)
        assert module.steps == eager_steps, "module state after the call"

    run()


# ---- 6. attributes of plain objects (instance and class) ------------------------------------

class Config:
    kind = "plain"

    def __init__(self, alpha, beta, enabled, name):
        self.alpha, self.beta, self.enabled, self.name = alpha, beta, enabled, name
        self.calls = 0


class SubConfig(Config):
    kind = "sub"


def object_target(x, cfg):
    y = x * cfg.alpha
    if cfg.enabled:
        y = y + cfg.beta
    if hasattr(cfg, "extra"):
        y = y - cfg.extra
    if cfg.name.startswith("a"):
        y = -y
    cfg.calls = cfg.calls + 1
    return y, cfg.kind, cfg.name


def test_fuzz_object_attributes(fresh):
    compiled = framegraph.compile(object_target, backend="eager")
    beta = st.one_of(numbers, tensor_recipes(dtypes=FLOAT_DTYPES, shape=(2,), grad=False))

    @fuzz_settings(250)
    @given(numbers, beta, st.booleans() | st.integers(0, 1), st.sampled_from(["a", "b", "ab"]),
           st.sampled_from([Config, SubConfig]), st.sampled_from(["plain", "other", "sub"]),
           st.none() | st.integers(0, 2) | floats)
    def run(alpha, beta, enabled, name, cls, kind, extra):
        Config.kind = kind

        def make(leaves):
            b = beta.build(leaves) if isinstance(beta, TensorRecipe) else beta
            cfg = cls(alpha, b, enabled, name)
            if extra is not None:
                cfg.extra = extra
            return (torch.ones(2), cfg)

        differential(object_target, compiled, make)

    try:
        run()
    finally:
        Config.kind = "plain"


# ---- 7. module-level globals, mutated between calls -----------------------------------------

def _double(t):
    return t * 2


def _triple(t):
    return t * 3


G_SCALE = 1.0
G_MODE = "add"
G_WEIGHT = torch.ones(3)
G_OPTS = {"a": 1}
G_FLAG = False
G_ACT = torch.relu


def globals_target(x):
    y = x * G_SCALE
    y = y + G_WEIGHT if G_MODE == "add" else y * G_WEIGHT
    for k in G_OPTS:
        y = y + G_OPTS[k]
    if G_FLAG:
        y = -y
    return G_ACT(y), G_MODE, len(G_OPTS)


def test_fuzz_globals(fresh):
    compiled = framegraph.compile(globals_target, backend="eager")
    saved = {k: v for k, v in globals().items() if k.startswith("G_")}

    @fuzz_settings(300)
    @given(numbers, st.sampled_from(["add", "mul", "sub"]), st.sampled_from([(3,), (1,), (2, 3), (2,)]),
           st.sampled_from([torch.float32, torch.float64, torch.int64]),
           st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(-1, 2) | floats, max_size=3),
           st.booleans() | st.sampled_from([0, 1, "", "y"]),
           st.sampled_from([torch.relu, torch.sigmoid, _double, _triple]))
    def run(scale, mode, wshape, wdtype, opts, flag, act):
        weight = torch.arange(torch.Size(wshape).numel(), dtype=wdtype).reshape(wshape)
        globals().update(G_SCALE=scale, G_MODE=mode, G_WEIGHT=weight, G_OPTS=opts, G_FLAG=flag, G_ACT=act)
        differential(globals_target, compiled, lambda leaves: (torch.linspace(-1, 1, 3),))

    try:
        run()
    finally:
        globals().update(saved)


# ---- 8. interleaving, bounded cache, the recompile limit ------------------------------------

def interleaved(x, n):
    out = x
    for _ in range(n):
        out = out * 2 + 1
    return out, out.dtype


def test_interleaved_variants_reuse_bounded_entries(fresh):
    compiled = framegraph.compile(interleaved, backend="eager")
    variants = [(dtype, n) for dtype in FLOAT_DTYPES for n in (2, 3)]
    for step in range(200):
        dtype, n = variants[step % len(variants)] if step % 3 else variants[(step // 3) % len(variants)]
        differential(interleaved, compiled, lambda leaves: (torch.arange(4, dtype=dtype), n))
        assert len(get_cache_entries(interleaved.__code__)) <= len(variants)
    assert counters["stats"]["unique_graphs"] == len(variants)
    assert len(get_cache_entries(interleaved.__code__)) == len(variants)


def test_fuzz_past_recompile_limit_runs_eagerly():
    """With a tiny limit most variants run eagerly; entries made before must still only be
    reused where their guards hold."""
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(scalars, backend="eager")

    @fuzz_settings(150)
    @given(tensor_recipes(dtypes=(torch.float32,), max_rank=1, max_size=2, grad=False),
           st.integers(0, 3), numbers, st.booleans(), strings)
    def run(rx, n, s, flag, mode):
        differential(scalars, compiled, lambda leaves: (rx.build(leaves), n, s, flag, mode))

    try:
        with framegraph.config.patch(recompile_limit=3), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            run()
        assert len(get_cache_entries(scalars.__code__)) <= 3
        assert not counters["fallback"]
    finally:
        framegraph.reset()


# ---- stale cache hits this fuzz found, kept as regression tests ---------------------------

class _ClassScale:
    factor = 2.0


def _shadowed_object():
    obj = _ClassScale()
    obj.factor = 5.0  # an instance attribute now hides the class attribute the trace read
    return obj


class _ModuleClassScale(nn.Module):
    scale = 2.0

    def forward(self, x):
        return x * self.scale


def _neg_zero(x, s):
    return x / s


def _is_leaf(x):
    return x * 2 if x.is_leaf else x * 3


def _storage_offset(x):
    return x + x.storage_offset()


def _key_names(x, d):
    return x, [str(k) for k in d]


def _object_factor(x, obj):
    return x * obj.factor


def _leaf():
    return torch.ones(2, requires_grad=True)


KNOWN_STALE = {
    # first call compiles with A, second call with B must not reuse A's entry
    "neg_zero_float": (
        _neg_zero, lambda: (torch.ones(2), 0.0), lambda: (torch.ones(2), -0.0),
        "EQUALS guard `x == 0.0` accepts -0.0 (guards.py:_Emitter.render, EQUALS_MATCH)"),
    "is_leaf": (
        _is_leaf, lambda: (_leaf(),), lambda: (_leaf() * 1,),
        "Tensor.is_leaf folds to a constant (variables/tensor.py _METADATA_ATTRS) but "
        "TENSOR_MATCH does not check it (guards.py:_Emitter._tensor)"),
    "storage_offset": (
        _storage_offset, lambda: (torch.zeros(4)[1:3],), lambda: (torch.zeros(4)[2:4],),
        "x.storage_offset() is baked into the graph but TENSOR_MATCH does not check the "
        "storage offset (guards.py:_Emitter._tensor)"),
    "dict_key_true_vs_1": (
        _key_names, lambda: (torch.ones(1), {1: 0}), lambda: (torch.ones(1), {True: 0}),
        "DICT_KEYS guard `list(d) == [1]` accepts [True] (guards.py:_Emitter.render, DICT_KEYS; "
        "the key types are not checked)"),
    "class_attr_shadowed": (
        _object_factor, lambda: (torch.ones(2), _ClassScale()), lambda: (torch.ones(2), _shadowed_object()),
        "a class attribute read records no guard that the instance __dict__ lacks the name "
        "(variables/user_objects.py UserDefinedObjectVariable.var_getattr/_instance_attribute)"),
}


@pytest.mark.parametrize("case", list(KNOWN_STALE))
def test_stale_hit_regression(fresh, case):
    fn, first, second, _ = KNOWN_STALE[case]
    compiled = framegraph.compile(fn, backend="eager")
    differential(fn, compiled, lambda leaves: first())
    differential(fn, compiled, lambda leaves: second())


def test_stale_hit_regression_module_class_attr_shadowed(fresh):
    module = _ModuleClassScale()
    compiled = framegraph.compile(module, backend="eager")
    x = torch.ones(2)
    assert_same(module(x), compiled(x))
    module.scale = 7.0
    assert_same(module(x), compiled(x))


def _dict_store(x, d):
    d["seen"] = 1
    return x * d["a"]


def test_dict_mutation_replay_regression(fresh):
    compiled = framegraph.compile(_dict_store, backend="eager")
    differential(_dict_store, compiled, lambda leaves: (torch.ones(2), {"a": 2}))
