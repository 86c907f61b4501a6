"""Objects of user classes: made while tracing, read and changed through the protocols their
classes define, handed back to the caller, compared with eager and with torch.compile."""

from __future__ import annotations

import abc
import collections
import dataclasses

import pytest
import torch

import framegraph
from framegraph.bytecode import versions
from framegraph.counters import counters

from .helpers import CountingBackend
from .objects import AttributeMapped, parity, same

X = torch.arange(6.0).reshape(2, 3)


def x():
    return X.clone()


# ---- objects made while tracing -----------------------------------------------------------------

class Point:
    def __init__(self, a, b=None):
        self.a = a
        self.b = a * 2 if b is None else b

    def total(self):
        return self.a + self.b


def make_and_return(x):
    p = Point(x, b=x + 1)
    p.c = p.total()
    p.d = 1
    del p.d
    delattr(p, "b")
    return p, hasattr(p, "b"), vars(p), list(p.__dict__.items())


def make_in_a_loop(x):
    points = []
    for i in range(3):
        points.append(Point(x * i))
    return points, sum(p.total() for p in points)


def same_object_twice(x):
    p = Point(x)
    q = p
    return p, q, [p], p is q, Point(x) is p


class Node:
    def __init__(self, value):
        self.value = value
        self.me = self  # the object refers to itself


def refers_to_itself(x):
    n = Node(x + 1)
    return n, n.me.me.value


class Holder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.cache = None

    def forward(self, x):
        self.cache = Point(self.lin(x))  # an object stored onto the caller's module
        return self.cache, self.cache.a.sum()


def stored_on_a_module(module, x):
    out, total = module(x)
    return out is module.cache, out, total


class Counted:
    made = 0

    def __new__(cls, value):
        obj = super().__new__(cls)
        obj.order = cls.made  # a class attribute read while the object is made
        return obj

    def __init__(self, value):
        self.value = value


def python_new(x):
    c = Counted(x)
    return c, c.value * c.order


class Layer(abc.ABC):  # an ABCMeta class, as transformers' cache layers are
    def __init__(self):
        self.keys = None
        self.values = None

    @abc.abstractmethod
    def update(self, k, v): ...


class GrowingLayer(Layer):
    def update(self, k, v):
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys, k], dim=-1)
            self.values = torch.cat([self.values, v], dim=-1)
        return self.keys, self.values


def abc_class(x):
    layer = GrowingLayer()
    layer.update(x, x * 2)
    k, v = layer.update(x + 1, x)
    return layer, k.sum() + v.sum(), isinstance(layer, Layer)


def type_info(x):
    # finfo/iinfo of a constant dtype are values known while tracing
    return x.clamp(min=torch.finfo(x.dtype).min / 2, max=torch.iinfo(torch.int8).max), torch.finfo(x.dtype).eps


@pytest.mark.parametrize("fn,make_args,graphs,breaks", [
    (make_and_return, lambda: (x(),), 1, 0),
    (type_info, lambda: (x(),), 1, 0),
    (make_in_a_loop, lambda: (x(),), 1, 0),
    (same_object_twice, lambda: (x(),), 1, 0),
    (refers_to_itself, lambda: (x(),), 1, 0),
    (python_new, lambda: (x(),), 1, 0),
    (abc_class, lambda: (x(),), 1, 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_objects_made_while_tracing(fn, make_args, graphs, breaks):
    parity(fn, make_args, graphs, breaks)


def test_an_object_stored_onto_a_module_is_the_one_returned():
    torch.manual_seed(0)
    module = Holder()
    parity(stored_on_a_module, lambda: (module, x()), 1, 0)
    assert module.cache is not None


# ---- attribute protocols of existing objects --------------------------------------------------

class Config(AttributeMapped):
    attribute_map = {"hidden": "n_embd", "layers": "n_layer"}

    def __init__(self, n_embd, n_layer):
        self.n_embd = n_embd
        self.n_layer = n_layer


def config_reads(x, config):
    y = x * config.hidden + config.n_layer
    if getattr(config, "missing", None) is None and hasattr(config, "layers"):
        y = y + config.__dict__.get("n_embd", 0)
    return y


def config_writes(x, config):
    config.layers = config.layers + 1  # stored as n_layer, through the class's __setattr__
    return x * config.n_layer


class Lazy:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("w_"):
            return int(name[2:])
        raise AttributeError(name)


def getattr_fallback(x, obj):
    return x * obj.w_3 + getattr(obj, "nothing", 2) + len(obj.calls)


class Logged:
    def __init__(self):
        object.__setattr__(self, "log", [])

    def __setattr__(self, name, value):
        self.log.append(name)  # a change the override makes besides the store
        object.__setattr__(self, name, value)


def setattr_override_on_an_existing_object(x, obj):
    obj.scale = x.sum()
    obj.bias = 2
    return x * obj.scale + obj.bias


@pytest.mark.parametrize("fn,make_args,graphs,breaks", [
    (config_reads, lambda: (x(), Config(4, 2)), 1, 0),
    (config_writes, lambda: (x(), Config(4, 2)), 1, 0),
    (getattr_fallback, lambda: (x(), Lazy()), 1, 0),
    (setattr_override_on_an_existing_object, lambda: (x(), Logged()), 1, 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_attribute_protocols_of_existing_objects(fn, make_args, graphs, breaks):
    parity(fn, make_args, graphs, breaks)


def test_setattr_override_runs_once():
    """The trace ran the override; the replay stores with object.__setattr__, so the
    override's own change (the log) is not made twice."""
    obj = Logged()
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    framegraph.compile(setattr_override_on_an_existing_object, backend=counting)(x(), obj)
    assert counting.graph_count == 1 and not counters["graph_break"]
    assert obj.log == ["scale", "bias"]


def test_config_reads_are_guarded():
    compiled = parity(config_reads, lambda: (x(), Config(4, 2)), 1, 0)
    changed = Config(5, 2)
    same(config_reads(x(), changed), compiled(x(), changed))
    assert counters["recompiles"]


# ---- dataclasses --------------------------------------------------------------------------------

@dataclasses.dataclass
class Options:
    scale: float
    names: list = dataclasses.field(default_factory=list)
    bias: float = 0.0


@dataclasses.dataclass(frozen=True)
class Frozen:
    weight: torch.Tensor
    step: int = 1


def dataclass_functions(x):
    opts = Options(2.0)
    opts.names.append("a")
    moved = dataclasses.replace(opts, bias=1.0)
    names = [f.name for f in dataclasses.fields(moved)]
    frozen = Frozen(x * 2)
    return (x * moved.scale + moved.bias, names, dataclasses.is_dataclass(frozen), dataclasses.astuple(opts),
            dataclasses.asdict(moved), frozen, opts == moved, opts == Options(2.0, ["a"]))


def test_dataclasses():
    parity(dataclass_functions, lambda: (x(),), 1, 0)


# ---- dict, OrderedDict and list subclasses -------------------------------------------------------

class Record(collections.OrderedDict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __missing__(self, key):
        return len(self)


def ordered_dict_subclass(x):
    r = Record(first=x)
    r["second"] = x + 1
    r["third"] = x * 3
    r.move_to_end("first")
    r.move_to_end("third", last=False)
    ordered = list(r.keys()), [k for k, _ in r.items()], list(r)
    return (r, ordered, r.second, "first" in r, r.get("nothing", 7), len(r),
            sum(r.values()), r == Record(third=r["third"], second=r["second"], first=r["first"]))


class Counter(dict):
    def __missing__(self, key):
        return 0


def dict_subclass_input(x, counts):
    counts["a"] = counts["a"] + 1  # __missing__ answers the first read
    counts.update(b=x.sum())
    return x * counts["a"], counts.pop("z", None)


class Stack(list):
    def peek(self):
        return self[-1]


def list_subclass(x, existing):
    s = Stack([x])
    s.append(x + 1)
    existing.append(s.peek())
    return s, len(existing), existing[0] * 2


@pytest.mark.parametrize("fn,make_args,graphs,breaks", [
    (dict_subclass_input, lambda: (x(), Counter(c=1)), 1, 0),
    (list_subclass, lambda: (x(), Stack([x() - 1])), 1, 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_container_subclasses(fn, make_args, graphs, breaks):
    parity(fn, make_args, graphs, breaks)


def test_ordered_dict_subclass():
    # OrderedDict.__init__ stores each item through the subclass's __setitem__, which here
    # also sets an attribute; torch.compile 2.13 stores them directly (the attribute
    # `first` is missing from the object it returns).
    parity(ordered_dict_subclass, lambda: (x(),), 1, 0, torch_wrong="OrderedDict.__init__ skips __setitem__")


AUDIT = []


class Audited(dict):
    def __setitem__(self, key, value):
        AUDIT.append(key)  # a change the override makes besides the store
        super().__setitem__(key, value)


def audited_store(x, d):
    d["k"] = x * 2
    return d["k"]


def test_dict_subclass_override_runs_once():
    """The trace ran the override; the replay refills the storage with dict's own methods."""
    AUDIT.clear()
    d = Audited(k=1)
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    framegraph.compile(audited_store, backend=counting)(x(), d)
    assert counting.graph_count == 1 and not counters["graph_break"]
    assert AUDIT == ["k"]
    assert list(d) == ["k"] and torch.equal(d["k"], x() * 2)


# ---- operators and truth ------------------------------------------------------------------------

class Money:
    def __init__(self, amount):
        self.amount = amount

    def __add__(self, other):
        if isinstance(other, Money):
            return Money(self.amount + other.amount)
        return NotImplemented

    def __radd__(self, other):
        return Money(self.amount + other)

    def __eq__(self, other):
        return isinstance(other, Money) and self.amount == other.amount

    def __len__(self):
        return self.amount


def operators(x):
    a, b = Money(2), Money(3)
    c = a + b
    d = 1 + a
    total = 0
    total += x * c.amount  # a number's += is its +
    return total + d.amount, a == Money(2), a != b, a == 2, bool(Money(0)), not Money(1)


def test_operators():
    parity(operators, lambda: (x(),), 1, 0)


# ---- dict iterators and views handed on at a graph break ------------------------------------------

def opaque(value):
    print(end="")  # a graph break under both compilers
    return value


# 3.11: the comprehension's own frame compiles (2 graphs, 4 breaks); 3.12+ inline it
# (PEP 709), so it runs eagerly with the frame (the break and the whole frame: 0 graphs, 2).
COMPREHENSION_COUNTS = (0, 2) if versions.INLINED_COMPREHENSIONS else (2, 4)


def comprehension_run_eagerly(d, x):
    try:
        # A break inside a try block runs this frame eagerly; on 3.11 the comprehension's own
        # frame is then compiled with the real dict_keyiterator as its `.0`.
        scaled = {k: opaque(d[k]) * 2 for k in d}
    finally:
        pass
    return scaled, x + 1


def iterator_across_a_break(it, x):
    first = next(it)
    opaque(None)  # the resume function receives the key iterator, advanced by one
    return first, next(it), x + 1


def values_iterator_across_a_break(it, d, x):
    first = next(it)
    opaque(None)
    d["c"] = x  # a dict's values iterator reads the value when it gets there
    return first, list(it), x + 1


def keys_iterator_after_a_change(it, d, x):
    opaque(None)
    del d["a"]
    d["z"] = x  # same size, other keys: the iterator's keys read ahead would be stale
    return list(it), x + 1


def keys_view_across_a_break(d, x):
    keys = d.keys()
    opaque(None)
    d["z"] = x  # the view shows it
    return x + len(keys), list(keys)


def three(x):
    return {"a": x, "b": x + 1, "c": x + 2}


# framegraph counts the break in the frame of `opaque` (compiled when it runs eagerly) too.
# Only dict key iterators are traced as inputs, and only while the trace changes no dict;
# values and items iterators and views run eagerly.
@pytest.mark.parametrize("fn,make_args,graphs,breaks,torch_counts", [
    (iterator_across_a_break, lambda: (iter({"a": 1, "b": 2, "c": 3}), x()), 1, 2, (1, 3)),
    (comprehension_run_eagerly, lambda: ({"a": x(), "b": x() + 1}, x()), *COMPREHENSION_COUNTS, (0, 1)),
    (values_iterator_across_a_break, lambda: (lambda d: (iter(d.values()), d, x()))(three(x())), 0, 2, (1, 3)),
    (keys_iterator_after_a_change, lambda: (lambda d: (iter(d), d, x()))(three(x())), 1, 3, (1, 2)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_dict_iterators_as_inputs(fn, make_args, graphs, breaks, torch_counts):
    parity(fn, make_args, graphs, breaks, torch_counts)


def test_a_dict_view_across_a_break_shows_later_changes():
    # torch.compile 2.13 hands the resume function a view whose length misses the new key.
    # framegraph: the break in keys_view_across_a_break and in opaque, then the resume function
    # runs eagerly for its dict_keys input (one break: its whole frame).
    parity(keys_view_across_a_break, lambda: (three(x()), x()), 0, 3, (1, 1), torch_wrong="a stale view")


# ---- objects made before a graph break, used after it ---------------------------------------------

def objects_across_a_break(x):
    p = Point(x)
    r = Record(a=x)
    s = Stack([x])
    opaque(None)  # the three are rebuilt for the resume function, which changes them
    p.a = p.a + 1
    r["b"] = r["a"] * 2
    r.move_to_end("a")
    s.append(s[0] - 1)
    return p, r, s, r.b


def test_objects_made_before_a_break():
    # torch.compile 2.13 rebuilds `r` without the attribute OrderedDict.__init__'s call of
    # Record.__setitem__ sets (see test_ordered_dict_subclass).
    parity(objects_across_a_break, lambda: (x(),), 2, 2, (1, 1), torch_wrong="OrderedDict.__init__ skips __setitem__")


# ---- the ledger loads every new value before it changes anything -----------------------------------

class Box:
    pass


def one_tensor_two_names(a, b):
    a.t = a.t + 1  # replayed before b.v, which is the same tensor read through b
    b.v = b.t
    return a.t


def two_boxes_sharing_a_tensor():
    shared = x()
    a, b = Box(), Box()
    a.t = b.t = shared
    return a, b


def test_replay_reads_before_it_writes():
    parity(one_tensor_two_names, two_boxes_sharing_a_tensor, 1, 0)


def view_of_a_subclass(x):
    r = Record(a=x)
    keys = r.keys()
    r["b"] = x + 1
    return r, keys, list(keys)


def test_a_view_of_a_dict_subclass_stays_live():
    framegraph.reset()
    counting = CountingBackend()
    r, keys, listed = framegraph.compile(view_of_a_subclass, backend=counting)(x())
    assert counting.graph_count == 1 and not counters["graph_break"]
    assert type(keys) is type(collections.OrderedDict().keys()) and listed == ["a", "b"]
    r["c"] = 3
    assert list(keys) == ["a", "b", "c"]  # a view of the object returned, as eagerly


# ---- guards: what the trace relied on about an object ------------------------------------------

class Defaults(Config):
    dropout = 0.5  # a class default an instance may shadow


def reads_a_class_default(x, config):
    return x * config.dropout + config.hidden


def test_an_instance_attribute_that_later_shadows_a_class_attribute_recompiles():
    compiled = parity(reads_a_class_default, lambda: (x(), Defaults(4, 2)), 1, 0)
    shadowed = Defaults(4, 2)
    object.__setattr__(shadowed, "dropout", 2.0)
    same(reads_a_class_default(x(), shadowed), compiled(x(), shadowed))
    renamed = Defaults(4, 2)
    Defaults.attribute_map = {"hidden": "n_layer"}  # the class's map is read (and guarded) too
    try:
        same(reads_a_class_default(x(), renamed), compiled(x(), renamed))
    finally:
        del Defaults.attribute_map
    assert counters["recompiles"]["reads_a_class_default"] == 2


class Interned:
    """A __new__ that takes the arguments, with object's __init__ (which then accepts them)."""

    def __new__(cls, value, scale=1):
        obj = object.__new__(cls)
        obj.value = value * scale
        return obj


def new_with_arguments(x):
    return Interned(x, scale=3).value + 1


def test_a_python_new_with_objects_init():
    parity(new_with_arguments, lambda: (x(),), 1, 0)


class Doubling(dict):
    def __getitem__(self, key):
        return dict.__getitem__(self, key) * 2


class Plain(dict):
    pass


def updates_read_as_cpython_reads(x):
    # dict.update merges a dict whose iteration is dict's straight from its storage;
    # OrderedDict's update (and __init__) read any other mapping with keys() and [].
    source = Doubling(a=x, b=x + 1)
    merged, ordered = Plain(), Record(source)
    merged.update(source)
    ordered.update(Doubling(c=x))
    return merged, ordered


def test_update_reads_the_argument_as_cpython_does():
    parity(updates_read_as_cpython_reads, lambda: (x(),), 1, 0, torch_wrong="OrderedDict.__init__ skips __setitem__")


class Traced(collections.OrderedDict):
    """Logs which of its special methods OrderedDict's own methods call."""

    def __init__(self, *args, **kwargs):
        self.calls = []
        super().__init__(*args, **kwargs)

    def __getitem__(self, key):
        self.calls.append(("get", key))
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self.calls.append(("set", key))
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self.calls.append(("del", key))
        super().__delitem__(key)

    def __contains__(self, key):
        self.calls.append(("in", key))
        return super().__contains__(key)


def ordered_dict_methods_and_the_protocol(x):
    t = Traced(a=x, b=x + 1, c=x + 2)
    t.pop("a")
    t.pop("zz", None)
    t.setdefault("b", x)
    t.setdefault("d", x * 4)
    t.popitem(last=False)
    t |= {"e": x}
    t.update(f=x)
    return t, t.calls


def test_which_ordered_dict_methods_call_the_subclass():
    parity(ordered_dict_methods_and_the_protocol, lambda: (x(),), 1, 0,
           torch_wrong="OrderedDict.__init__ skips __setitem__")


class Indexed:
    """Iterated by Python's old sequence protocol: __getitem__ until IndexError."""

    def __init__(self, *values):
        self.values = values

    def __getitem__(self, index):
        if index >= len(self.values):
            raise IndexError(index)
        return self.values[index] * 2


def iterated_by_index(x):
    seq = Indexed(x, x + 1)
    total = 0
    for item in seq:
        total = total + item
    return total, list(seq), 4 in Indexed(1, 2), 3 in Indexed(1, 2)


def test_the_old_sequence_protocol():
    parity(iterated_by_index, lambda: (x(),), 1, 0)


# ---- == and != of objects that compare by identity ----------------------------------------------

def _default_hook(x):
    return x


def _other_hook(x):
    return x * 2


class _Hooks:
    def setup(self):
        pass


def hook_is_overridden(x, hook):
    # torch.autograd.Function.apply asks `fn != _SingleLevelFunction.setup_context` this way
    if hook != _default_hook:
        return hook(x) + 1
    return x - 1, hook == _default_hook, _Hooks.setup == _Hooks.setup, _Hooks.setup != _default_hook


@pytest.mark.parametrize("hook", [_default_hook, _other_hook], ids=["same", "other"])
def test_functions_compare_by_identity(hook):
    parity(hook_is_overridden, lambda: (x(), hook), 1, 0)


# ---- objects with __slots__ only ---------------------------------------------------------------

class Slotted:
    __slots__ = ("scale", "calls")

    def __init__(self, scale):
        self.scale = scale
        self.calls = 0


def use_slotted(x, slotted):
    slotted.calls += 1
    return x * slotted.scale + slotted.calls


def reads_a_field(field):
    # a validator closing over a dataclasses.Field, as huggingface_hub's are
    def read(x):
        return x * len(field.name), field.type, field.default
    return read


@dataclasses.dataclass
class _Sized:
    size: int = 2


def test_objects_with_only_slots():
    parity(use_slotted, lambda: (x(), Slotted(3.0)), 1, 0)
    parity(reads_a_field(dataclasses.fields(_Sized)[0]), lambda: (x(),), 1, 0)


# ---- modules made while tracing -----------------------------------------------------------------

class Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, h):
        return h * self.factor


def loss_made_in_forward(logits, labels):
    # transformers' heads: `loss_fct = CrossEntropyLoss(); loss = loss_fct(logits, labels)`
    loss_fct = torch.nn.CrossEntropyLoss(ignore_index=-100)
    mse = torch.nn.MSELoss(reduction="sum")
    return loss_fct(logits, labels) + mse(logits, logits * 0.5)


def module_made_in_forward(logits, labels):
    return Scale(2.0)(logits).sum() + labels.sum()


def module_returned(logits, labels):
    scale = Scale(3.0)
    return scale(logits), scale, labels


def logits_and_labels():
    generator = torch.Generator().manual_seed(0)
    return torch.randn(4, 5, generator=generator), torch.tensor([1, 2, -100, 4])


@pytest.fixture
def module_init_as_torch_defines_it():
    """torch.compile replaces nn.Module.__init__, on first use, with a wrapper that tags every
    new module (torch._dynamo's code, which framegraph runs as is: a module made while tracing
    then breaks). The framegraph runs here see torch's own __init__."""
    current = torch.nn.Module.__init__
    original = current
    if current.__qualname__.endswith("patched_init"):
        cells = dict(zip(current.__code__.co_freevars, current.__closure__))
        original = cells["init"].cell_contents
    torch.nn.Module.__init__ = original
    yield
    if torch.nn.Module.__init__ is original:  # else torch.compile patched it in the test
        torch.nn.Module.__init__ = current


MODULE_CASES = [(loss_made_in_forward, logits_and_labels), (module_made_in_forward, logits_and_labels)]


@pytest.mark.parametrize("fn,make_args", [*MODULE_CASES, (module_returned, logits_and_labels)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_modules_made_while_tracing(fn, make_args, module_init_as_torch_defines_it):
    parity(fn, make_args, 1, 0)


class WithParameter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(5))  # Module.__setattr__ files it: not modelled


def module_with_a_parameter_made_in_forward(logits, labels):
    return (logits * WithParameter().weight).sum() + labels.sum()


def test_a_module_with_parameters_made_while_tracing_breaks(module_init_as_torch_defines_it):
    parity(module_with_a_parameter_made_in_forward, logits_and_labels, 2, 2, torch_counts=(1, 2))


def reads_module_dict(x, module):
    # torch's register_buffer and transformers' helpers ask `name in self.__dict__`
    state = module.__dict__
    return x * module.factor if "_buffers" in state and "missing" not in state else x, state.get("training")


def test_the_instance_dict_of_an_existing_module():
    parity(reads_module_dict, lambda: (x(), Scale(2.0)), 1, 0)
