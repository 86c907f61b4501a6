"""Library idioms over values and types (see test_library_idioms.py for how each is run):
enums, ABC checks, class-level registries and caches, `copy`, `functools` (wraps, partial,
lru_cache), `torch.finfo`/`iinfo` and function attributes. Where framegraph takes fewer
breaks than torch.compile (a deepcopy of a tensor, a pure lru_cache call), or torch.compile
differs from eager (a mutated lru_cache result), the test says so.
"""

import collections.abc
import copy
import enum
import functools
import types

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .frontends import Counts, library, run, t
from .helpers import CountingBackend, assert_same


# ---- 6. enums, ABCs, class-level registries and caches ------------------------------------------

class Mode(enum.Enum):
    NEAREST = "nearest"
    LINEAR = "linear"

    def scale(self):
        return 2 if self is Mode.LINEAR else 3

    @property
    def short(self):
        return self.value[:3]

    @classmethod
    def default(cls):
        return cls.NEAREST


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 4


class Precision(enum.StrEnum):
    HALF = "fp16"
    FULL = "fp32"


DEFAULT_MODE = Mode.LINEAR


def enum_forward(x, mode, level):
    if mode == Mode.NEAREST:
        x = x + 1
    if mode is DEFAULT_MODE:
        x = x * 2
    names = [m.name for m in Mode] + [m.value for m in Level]
    x = x * mode.scale() + len(mode.short) + (mode in (Mode.LINEAR,)) + (Mode("linear") is mode)
    x = x * level + (level > Level.LOW) + (mode is Mode.default()) + len(Precision.HALF.upper())
    return x * len(names) + len(Mode) + (Mode.LINEAR in Mode), mode, Mode.NEAREST


def test_enum_members_fold_like_torch_compile():
    counts = run(enum_forward, (t(4), Mode.LINEAR, Level.HIGH), (t(4), Mode.LINEAR, Level.HIGH))
    assert counts["framegraph"] == Counts(1, 12, 0)
    assert counts["torch"] == Counts(2, 12, 1)  # torch.compile breaks on str methods of a StrEnum member


def test_another_member_recompiles():
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(enum_forward, backend=backend)
    x = t(4)
    # The last is an int equal to Level.HIGH: another input, guarded by identity.
    for mode, level in ((Mode.LINEAR, Level.HIGH), (Mode.NEAREST, Level.HIGH), (Mode.LINEAR, Level.LOW),
                        (Mode.LINEAR, Level.HIGH), (Mode.LINEAR, 4)):
        assert_same(enum_forward(x, mode, level), compiled(x, mode, level))
    assert backend.graph_count == 4


class Shape(collections.abc.Sized):
    def __len__(self):
        return 3


class Plugin:
    pass


class Registry(collections.abc.Mapping):
    """A user ABC other classes register with."""

    def __getitem__(self, key):
        raise KeyError(key)

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


def abc_checks(x, mapping, sequence, plugin):
    return x * (isinstance(mapping, collections.abc.Mapping) + 2 * isinstance(sequence, collections.abc.Mapping)
                + 4 * isinstance(sequence, collections.abc.Sequence) + 8 * isinstance(Shape(), collections.abc.Sized)
                + 16 * isinstance(plugin, Registry) + 32 * issubclass(Plugin, Registry))


def test_abc_isinstance_folds_like_torch_compile():
    counts = run(abc_checks, (t(4), {"a": 1}, [1, 2], Plugin()), (t(4), {"a": 1}, [1, 2], Plugin()))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)


def test_registering_with_an_abc_after_compiling_recompiles():
    class Late:
        pass

    class Base(collections.abc.Hashable):
        pass

    def check(x, obj):
        return x * 2 if isinstance(obj, Base) and issubclass(Late, Base) else x * 3
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(check, backend=backend)
    x = t(3)
    obj = Late()
    assert_same(check(x, obj), compiled(x, obj))
    Base.register(Late)
    assert_same(check(x, obj), compiled(x, obj))
    assert_same(check(x, obj), compiled(x, obj))
    assert backend.graph_count == 2


def test_registering_an_unrelated_class_with_an_abc_does_not_recompile():
    """A module imported lazily (networkx, on torch's first unbacked symbol) registers its own
    classes with collections.abc; answers about other classes stand, and so do the entries."""
    class Other:
        pass

    def check(x, obj):
        return x * 2 if isinstance(obj, collections.abc.Mapping) else x * 3
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    compiled = framegraph.compile(check, backend=backend)
    x = t(3)
    for obj in ({}, [], {}, []):
        assert_same(check(x, obj), compiled(x, obj))
        collections.abc.Mapping.register(type("Registered", (Other,), {}))
    assert backend.graph_count == 2 and not counters["recompiles"].get("check", 0) > 1


class Interface(collections.abc.MutableMapping):
    """transformers' AttentionInterface: a registry read with `get` and `in`, whose methods
    come from collections.abc."""

    _global = {"relu": torch.relu, "tanh": torch.tanh}

    def __init__(self):
        self._local = {}

    def __getitem__(self, key):
        return self._local[key] if key in self._local else self._global[key]

    def __setitem__(self, key, value):
        self._local[key] = value

    def __delitem__(self, key):
        del self._local[key]

    def __iter__(self):
        return iter({**self._global, **self._local})

    def __len__(self):
        return len(self._global) + len(self._local)


INTERFACE = Interface()


def mapping_mixins(x, name):
    return INTERFACE.get(name, torch.sigmoid)(x) + ("tanh" in INTERFACE) + isinstance(INTERFACE, collections.abc.Mapping)


def test_mapping_mixin_methods_are_traced_like_torch_compile():
    counts = run(mapping_mixins, (t(4), "relu"), (t(4), "relu"))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 3, 0)


class Activation:
    registry = {}

    def __init_subclass__(cls, name=None, **kwargs):
        super().__init_subclass__(**kwargs)
        Activation.registry[name] = cls

    @classmethod
    def create(cls, name):
        return cls.registry[name]()


class Relu(Activation, name="relu"):
    def __call__(self, x):
        return torch.relu(x)


class Tanh(Activation, name="tanh"):
    def __call__(self, x):
        return torch.tanh(x)


def registered(x, name):
    return Activation.create(name)(x) + len(Activation.registry)


def test_a_registry_filled_by_init_subclass_is_read_and_guarded():
    counts = run(registered, (t(4), "relu"), (t(4), "relu"))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 2, 0)
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(registered, backend=backend)
    x = t(4)
    assert_same(registered(x, "tanh"), compiled(x, "tanh"))

    class Sigmoid(Activation, name="sigmoid"):
        def __call__(self, x):
            return torch.sigmoid(x)
    try:
        for name in ("tanh", "sigmoid"):
            assert_same(registered(x, name), compiled(x, name))
    finally:
        del Activation.registry["sigmoid"]
    assert backend.graph_count == 3  # a new class in the registry changes its keys


class Rotary(nn.Module):
    """A class-level cache filled lazily on first use (rotary tables, masks)."""

    _tables = {}

    def table(self, n):
        if n not in Rotary._tables:
            Rotary._tables[n] = torch.arange(n, dtype=torch.float32).cos()
        return Rotary._tables[n]

    def forward(self, x):
        return x * self.table(x.shape[-1])


def test_a_class_level_cache_is_filled_once_and_then_read():
    counts = run(Rotary(), (t(2, 4),), (t(2, 4),), before_each=Rotary._tables.clear)
    # The fill is replayed after the first graph; the second call reads the stored table
    # (a graph input: the guard on the cache's keys sends it to a second graph).
    assert counts["framegraph"] == counts["torch"] == Counts(2, 4, 0)
    assert list(Rotary._tables) == [4]
    table = Rotary._tables[4]
    assert_same(torch.arange(4, dtype=torch.float32).cos(), table)
    framegraph.compile(Rotary(), backend=CountingBackend())(t(2, 4))
    assert Rotary._tables[4] is table


# ---- 7. copy ----------------------------------------------------------------------------------------

class Config:
    def __init__(self):
        self.hidden = 4
        self.dropouts = [0.1, 0.2]
        self.name = "cfg"


def copies_containers(x, items, table):
    shallow, deep = copy.copy(items), copy.deepcopy(items)
    shallow.append(x)
    deep[0].append(3)  # deep[0] is a new list: items[0] is untouched
    mapping = copy.copy(table)
    mapping["new"] = len(deep[0])
    both = copy.deepcopy((items, items, (1, "a")))
    both[0].append(4)  # the copy keeps the sharing: both[1] is the same new list
    return x * len(shallow) + len(mapping) + len(both[1]) + len(copy.copy(both)), items, table


def copies_config(x, config):
    clone_of = copy.copy(config)
    clone_of.hidden = 8
    deep = copy.deepcopy(config)
    deep.dropouts.append(0.3)
    return x * clone_of.hidden + len(deep.dropouts) + len(config.dropouts) + config.hidden, deep.name


@pytest.mark.parametrize("fn, args", [
    (copies_containers, lambda: (t(4), [[1, 2], "a"], {"k": 1})),
    (copies_config, lambda: (t(4), Config())),
])
def test_copies_of_containers_and_configs_like_torch_compile(fn, args):
    counts = run(fn, args(), args())
    assert counts["framegraph"] == Counts(1, 4, 0)
    # torch.compile recompiles for the second call's new objects, and breaks on dict.copy
    # (which copy.copy calls) and on a list's copy.
    assert counts["torch"] == (Counts(2, 8, 0) if fn is copies_config else Counts(2, 8, 3))


def deepcopies_tensors(x, tensors):
    made = {"a": x * 2, "b": [x + 1, x - 1]}
    copied = copy.deepcopy(made)
    copied["a"].add_(1)  # the copy's own storage: `made` is unchanged
    again = copy.deepcopy(tensors)
    again[0].mul_(2)
    return made["a"] + copied["a"] + copied["b"][1] + again[0] + tensors[0]


def test_deepcopy_of_tensors_is_a_clone_where_indistinguishable():
    counts = run(deepcopies_tensors, (t(4), [t(4), t(2)]), (t(4), [t(4), t(2)]))
    assert counts["framegraph"] == Counts(1, 11, 0)  # 14, less the copies nothing reads
    assert counts["torch"] == Counts(3, 9, 2)  # torch.compile breaks on every deepcopy of a tensor


def deepcopy_view(x):
    view = x[1:]
    return copy.deepcopy(view).storage_offset(), copy.deepcopy([x, x])


def deepcopy_sharing(x):
    y = x * 2
    pair = copy.deepcopy([y, y.view(2, 2)])
    pair[1].add_(1)  # the copies share a storage, as the originals did
    return pair[0]


def deepcopy_leaves(tensors):
    again = copy.deepcopy(tensors)
    return again[0] * 2, again[0].requires_grad, again[0].is_leaf


def deepcopy_non_leaf(x):
    return copy.deepcopy(x * 2)


@pytest.mark.parametrize("fn, args, ours, theirs", [
    # A view: deepcopy keeps its offset into a copy of the whole storage. [x, x] copies x once.
    (deepcopy_view, lambda: (t(4),), Counts(2, 2, 1), Counts(1, 1, 3)),
    (deepcopy_sharing, lambda: (t(4),), Counts(2, 3, 1), Counts(2, 3, 1)),
    (deepcopy_leaves, lambda: ([t(4).requires_grad_(), t(2)],), Counts(1, 1, 1), Counts(1, 2, 1)),
])
def test_deepcopy_breaks_where_a_clone_would_differ(fn, args, ours, theirs):
    counts = run(fn, args(), args())
    assert counts["framegraph"] == ours
    assert counts["torch"] == theirs


def test_deepcopy_of_a_non_leaf_raises_as_eagerly():
    x = t(3).requires_grad_()
    with pytest.raises(RuntimeError, match="graph leaves") as eager:
        deepcopy_non_leaf(x)
    framegraph.reset()
    with pytest.raises(RuntimeError, match="graph leaves") as compiled:
        framegraph.compile(deepcopy_non_leaf, backend=CountingBackend())(x)
    assert str(compiled.value) == str(eager.value)


# ---- 8. functools -----------------------------------------------------------------------------------

def timed(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs) * 1.0
    return wrapper


class Decorated(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = functools.partial(torch.nn.functional.leaky_relu, negative_slope=0.2)

    @timed
    def forward(self, x):
        return self.act(self.lin(x)) + len(self.forward.__name__) + len(self.forward.__wrapped__.__name__)


def test_wraps_decorated_forward_and_partial_like_torch_compile():
    counts = run(Decorated(), (t(2, 4),), (t(2, 4),))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 5, 0)


@functools.lru_cache(maxsize=None)
def head_dim(hidden, heads):
    return hidden // heads, ("q", "k", "v")


@functools.cache
def big_table(n):
    return torch.arange(n).float()  # one tensor shared by every call (a cached object)


EVENTS = []


@functools.lru_cache(maxsize=8)
def noisy(n):
    EVENTS.append(n)
    return n + 1


def uses_caches(x):
    dim, names = head_dim(8, 2)
    table = big_table(4)
    table.add_(1)  # mutates the cached tensor: the next call sees it
    return x * dim + len(names) + table + noisy(3) + noisy(4)


def reset_caches():
    for fn in (head_dim, big_table, noisy):
        fn.cache_clear()
    EVENTS.clear()


def test_lru_cache_calls_behave_as_eager():
    marks = []

    def before():
        marks.append((list(EVENTS), noisy.cache_info().currsize, head_dim.cache_info().currsize))
        reset_caches()
    # torch.compile ignores the cache: the cached tensor it returns is a new one every call,
    # so the in-place update does not accumulate as it does eagerly.
    counts = run(uses_caches, (t(4),), (t(4),), (t(4),), before_each=before, torch_matches_eager=False)
    before()
    eager, _, ours = marks[1], marks[2], marks[3]
    assert eager == ours == ([3, 4], 2, 1)  # each body ran once per new argument; the caches filled
    # head_dim folds; big_table makes a tensor and noisy has an effect: each of their calls is a
    # break, where the real wrapper runs (and compiles the wrapped function's frame on a miss).
    assert counts["framegraph"] == Counts(5, 9, 3)


def test_an_lru_cache_call_returns_what_the_cache_holds_when_state_changes():
    settings = {"scale": 2}

    @functools.lru_cache(None)
    def configured(n):
        return n * settings["scale"]

    def forward(x):
        return x * configured(3)
    counts = run(forward, (t(4),), (t(4),), before_each=configured.cache_clear)
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)
    framegraph.reset()
    counters.clear()
    configured.cache_clear()
    backend = CountingBackend()
    compiled = framegraph.compile(forward, backend=backend)
    x = t(4)
    assert_same(x * 6, compiled(x))
    settings["scale"] = 5  # eagerly the cache still answers 6
    assert_same(forward(x), compiled(x))
    assert_same(x * 6, compiled(x))
    configured.cache_clear()  # now a new call computes 15
    assert_same(forward(x), compiled(x))
    assert_same(x * 15, compiled(x))
    # The stale cached answer is a break (the real wrapper answers), not a folded constant.
    assert sum(counters["graph_break"].values()) == 1


class Scaled(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    @functools.lru_cache(maxsize=None)
    def scale(self, n):  # cached per (module, n): eager returns the first answer for each
        return n * self.factor

    def forward(self, x):
        return x * self.scale(3)


def test_an_lru_cache_method_runs_eagerly_with_its_cache():
    module = Scaled(2)
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(module, backend=CountingBackend())
    x = t(4)
    assert_same(x * 6, compiled(x))
    module.factor = 5  # the cache still holds 6 for (module, 3)
    assert_same(module(x), compiled(x))
    assert_same(x * 6, compiled(x))
    # Each compile breaks at the call, whose arguments hold self (the new factor recompiles).
    assert counters["graph_break"] and all("lru_cache function Scaled.scale" in r for r in counters["graph_break"])


PROBES = []


def assume_constant(fn):
    """torch._dynamo.assume_constant_result, spelled as transformers spells it."""
    fn._dynamo_marked_constant = True
    return fn


@functools.lru_cache
@assume_constant
def torch_at_least(major):
    PROBES.append(major)
    return int(torch.__version__.split(".")[0]) >= major


def version_gated(x):
    return x * 2 if torch_at_least(2) else x * 3


def test_a_cached_probe_marked_constant_is_called_through_its_cache():
    marks = []

    def before():
        marks.append(list(PROBES))
        PROBES.clear()
        torch_at_least.cache_clear()
    counts = run(version_gated, (t(4),), (t(4),), before_each=before)
    before()
    assert marks[1:] == [[2], [2], [2]]  # eager, torch.compile, framegraph: the probe ran once each
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)
    import_utils = library("transformers.utils.import_utils")

    def real(x):
        return x * 2 if import_utils.is_torch_greater_or_equal("2.0") else x
    counts = run(real, (t(4),))
    assert counts["framegraph"] == counts["torch"] == Counts(1, 1, 0)


# ---- 9. torch.finfo / iinfo -----------------------------------------------------------------------

def masks(x, scores):
    minimum = torch.finfo(scores.dtype).min
    masked = scores.masked_fill(x < 0, minimum)
    return masked.softmax(-1) + torch.finfo(x.dtype).eps + torch.iinfo(torch.int32).max * 0, torch.get_default_dtype()


def test_finfo_and_iinfo_fold_like_torch_compile():
    counts = run(masks, (t(4), t(4)), (t(4), t(4).half()))
    assert counts["framegraph"] == counts["torch"] == Counts(2, 10, 0)


@framegraph.disable
def _opaque(value):
    return value


def finfo_across_a_break(x):
    info = torch.finfo(x.dtype)
    _opaque(x)
    return x.clamp(min=info.min, max=info.max) * info.eps


def test_a_finfo_handed_to_a_resume_function_is_guarded_by_its_dtype():
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    compiled = framegraph.compile(finfo_across_a_break, backend=backend)
    for x in (t(3), t(3).double(), t(3)):
        assert_same(finfo_across_a_break(x), compiled(x))
    assert not counters["fallback"]
    assert sum(counters["graph_break"].values()) == 2  # at _opaque, once per dtype
    assert backend.graph_count == 2  # the part after the break, per dtype


def test_the_default_dtype_is_guarded():
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(lambda x: x.to(torch.get_default_dtype()) * 2, backend=backend)
    x = t(3).half()
    previous = torch.get_default_dtype()
    try:
        for dtype in (torch.float32, torch.float64, torch.float32):
            torch.set_default_dtype(dtype)
            assert compiled(x).dtype is dtype
    finally:
        torch.set_default_dtype(previous)
    assert backend.graph_count == 2


# ---- 10. function attributes ------------------------------------------------------------------------

def log_usage(obj):
    """torchvision's _log_api_usage_once."""
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, types.FunctionType):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def described(x, fn):
    log_usage(fn)
    log_usage(described)
    return x * (len(fn.__name__) + len(fn.__qualname__) + len(type(fn).__name__) + len(fn.__class__.__name__)
                + fn.__code__.co_argcount)


def renamed(fn, name):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


@timed
def decorated_helper(self, x, scale=2.0):
    return x * scale


def test_function_attributes_like_torch_compile():
    counts = run(described, (t(4), decorated_helper), (t(4), decorated_helper))
    assert counts["framegraph"] == Counts(1, 1, 0)
    assert counts["torch"] == Counts(2, 2, 0)  # torch.compile compiles the second call again


def test_names_of_two_closures_of_one_def_are_guarded():
    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(described, backend=backend)
    x = t(3)
    for fn in (renamed(torch.relu, "a"), renamed(torch.relu, "abc"), renamed(torch.relu, "a")):
        assert_same(described(x, fn), compiled(x, fn))
    assert backend.graph_count == 2


def test_real_torchvision_box_area():
    boxes = library("torchvision.ops.boxes")

    def area(b):
        return boxes.box_area(b) * 2
    counts = run(area, (t(3, 4).abs().cumsum(-1),))
    # torch.compile records the usage logger as a node; framegraph calls it while tracing.
    assert counts["framegraph"] == Counts(1, 8, 0)
    assert counts["torch"] == Counts(1, 9, 0)
