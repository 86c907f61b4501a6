"""User-object protocols at torch.compile's parity: descriptors, attribute hooks, `__dict__`,
`__new__` and metaclasses, `__class__` assignment, `super()` through multiple inheritance,
`__slots__`, reflected and in-place operators, attributes on tensors, functions and
namedtuples, writes to enclosing cells, and objects made in the trace that outlive it.

Every case runs eagerly, under framegraph and under torch.compile with counting backends, on
two fresh sets of arguments: results, raised exception types and what the call leaves in its
arguments equal eager's (compared as object graphs), and framegraph has no more breaks and
no fewer captured ops than torch.compile (`assert_parity`).
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import functools
import typing

import torch

from .datadep_cases import floats, parity_params, assert_parity

# ---- descriptors --------------------------------------------------------------------------------


class Positive:
    """A data descriptor that validates and stores in the instance `__dict__` under a private name."""

    def __set_name__(self, owner, name):
        self.private = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(obj, self.private)

    def __set__(self, obj, value):
        if value <= 0:
            raise ValueError("must be positive")
        setattr(obj, self.private, value)


class Scaled:
    """A non-data descriptor: a computed value, shadowed by an instance attribute of the same name."""

    def __init__(self, factor):
        self.factor = factor

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.factor
        return obj.base * self.factor


class Layer:
    temperature = Positive()
    double = Scaled(2)

    def __init__(self, base, temperature=1.0):
        self.base = base
        self.temperature = temperature


def data_descriptor_on_a_new_object(x):
    layer = Layer(3, 2.0)
    return x / layer.temperature + layer.double


def data_descriptor_set_on_an_input(x, layer):
    layer.temperature = layer.temperature * 2
    return x * layer.temperature, layer.double


def data_descriptor_rejects(x):
    layer = Layer(1)
    try:
        layer.temperature = -1.0
    except ValueError:
        return x - 1
    return x + 1


def non_data_descriptor_shadowed(x):
    layer = Layer(4)
    before = layer.double
    layer.double = 100  # an instance attribute now hides the descriptor
    return x * before + layer.double


def descriptor_read_on_the_class(x):
    return x * Layer.double + len(type(Layer.temperature).__name__)


class Celsius:
    def __init__(self, degrees):
        self._degrees = degrees

    @property
    def degrees(self):
        return self._degrees

    @degrees.setter
    def degrees(self, value):
        self._degrees = value

    @degrees.deleter
    def degrees(self):
        del self._degrees

    @property
    def fahrenheit(self):
        return self._degrees * 9 / 5 + 32


def property_setter_on_a_new_object(x):
    c = Celsius(x.sum())
    c.degrees = c.degrees + 1
    return c.fahrenheit * x


def property_setter_on_an_input(x, c):
    c.degrees = x.mean()
    return x - c.degrees, c.fahrenheit


def property_deleter(x):
    c = Celsius(x)
    del c.degrees
    return hasattr(c, "_degrees"), x * 2


def read_only_property_raises(x):
    c = Celsius(x)
    try:
        c.fahrenheit = 3
    except AttributeError:
        return x + 1
    return x


class Stats:
    def __init__(self, data):
        self.data = data
        self.computed = 0

    @functools.cached_property
    def normalised(self):
        self.computed += 1
        return (self.data - self.data.mean()) / (self.data.std() + 1e-5)


def cached_property_on_a_new_object(x):
    s = Stats(x)
    return s.normalised + s.normalised, s.computed


def cached_property_on_an_input(x, s):
    return s.normalised * x, s.computed


def cached_property_invalidated(x):
    s = Stats(x)
    a = s.normalised
    del s.normalised
    s.data = x * 2
    return a, s.normalised, s.computed


class Gain:
    def __init__(self, g):
        self.g = g

    @property
    def twice(self):
        return self.g * 2

    def apply(self, x):
        return x * self.twice


def property_calls_through_method(x):
    return Gain(1.5).apply(x)


class WithClassProperty:
    scale = 3.0

    @classmethod
    def make(cls, value):
        return cls(value)

    @staticmethod
    def combine(a, b):
        return a * b

    def __init__(self, value):
        self.value = value


def classmethod_constructor_and_staticmethod(x):
    obj = WithClassProperty.make(x)
    return WithClassProperty.combine(obj.value, obj.scale) + type(obj).combine(1, 2)


class Registry:
    """A descriptor whose `__get__` binds like a method would, but in Python."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return functools.partial(self.fn, obj)


class UsesRegistry:
    def __init__(self, w):
        self.w = w

    @Registry
    def forward(self, x):
        return x * self.w


def python_get_returning_a_partial(x):
    return UsesRegistry(2.0).forward(x)


# ---- attribute hooks ----------------------------------------------------------------------------


class Delegate:
    """Forwards unknown attributes to the tensor it wraps."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __getattr__(self, name):
        if name.startswith("__") or name == "tensor":  # copying an object asks before `tensor` is set
            raise AttributeError(name)
        return getattr(self.tensor, name)


def getattr_delegates_to_a_tensor(x):
    d = Delegate(x)
    return d.shape[0] * d.sum() + d.tensor


def getattr_delegate_input(x, d):
    return d.mean() + x, d.dtype == x.dtype


class Defaults:
    def __init__(self, **given):
        self.given = given

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        given = self.__dict__["given"]
        if name in given:
            return given[name]
        raise AttributeError(f"no option {name}")


def getattr_with_defaults(x):
    options = Defaults(scale=2.0, shift=1)
    scale = getattr(options, "scale", 1.0)
    missing = getattr(options, "missing", -1)
    return x * scale + options.shift + missing, hasattr(options, "nope")


class Traced:
    """A `__getattribute__` that counts every attribute read."""

    def __init__(self, w):
        object.__setattr__(self, "reads", [])
        self.w = w

    def __getattribute__(self, name):
        object.__getattribute__(self, "reads").append(name)
        return object.__getattribute__(self, name)


def getattribute_counts_reads(x):
    t = Traced(x * 2)
    y = t.w + t.w
    return y, list(object.__getattribute__(t, "reads"))


class Aliased:
    aliases = {"weight": "w", "bias": "b"}

    def __init__(self, w, b):
        self.w, self.b = w, b

    def __getattribute__(self, name):
        aliases = object.__getattribute__(self, "aliases")
        return object.__getattribute__(self, aliases.get(name, name))


def getattribute_aliases(x):
    a = Aliased(x, 1.0)
    return a.weight * 2 + a.bias


def getattribute_aliases_input(x, a):
    return x @ a.weight.T + a.bias


class Frozen:
    def __init__(self, **values):
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{name} is frozen")

    def __delattr__(self, name):
        raise AttributeError(f"{name} is frozen")


def setattr_refuses(x):
    f = Frozen(scale=x.sum())
    try:
        f.scale = 1
    except AttributeError:
        pass
    try:
        del f.scale
    except AttributeError:
        pass
    return x * f.scale


class Recording:
    def __init__(self):
        object.__setattr__(self, "history", [])

    def __setattr__(self, name, value):
        self.history.append(name)
        super().__setattr__(name, value)

    def __delattr__(self, name):
        self.history.append("-" + name)
        super().__delattr__(name)


def setattr_and_delattr_record(x):
    r = Recording()
    r.a = x + 1
    r.b = r.a * 2
    del r.a
    return r.b, r.history, hasattr(r, "a")


def setattr_on_an_input_records(x, r):
    r.total = x.sum()
    r.count = 3
    return x / r.count + r.total


class Clamped:
    def __setattr__(self, name, value):
        if isinstance(value, (int, float)):
            value = max(0, min(value, 10))
        object.__setattr__(self, name, value)


def setattr_transforms_values(x):
    c = Clamped()
    c.lo = -5
    c.hi = 50
    c.t = x
    return c.t.clamp(c.lo, c.hi), c.__dict__


def delattr_builtin_and_hasattr(x):
    obj = Gain(2.0)
    obj.extra = x
    delattr(obj, "extra")
    setattr(obj, "more", x * 3)
    return obj.more + obj.g, hasattr(obj, "extra"), getattr(obj, "extra", None)


class Lazy:
    def __init__(self, factor):
        self.factor = factor

    def __getattr__(self, name):
        if name.startswith("times_"):
            value = int(name[len("times_"):]) * self.factor
            setattr(self, name, value)  # cached as an instance attribute for next time
            return value
        raise AttributeError(name)


def getattr_caches_on_the_instance(x):
    lazy = Lazy(2)
    a = lazy.times_3
    b = lazy.times_3
    return x * (a + b), sorted(vars(lazy))


# ---- __dict__ -----------------------------------------------------------------------------------


class Bag:
    def __init__(self, **items):
        self.__dict__.update(items)


def dict_update_in_init(x):
    bag = Bag(w=x, scale=3)
    return bag.w * bag.scale, vars(bag)


def dict_reads(x, bag):
    total = x
    for name, value in bag.__dict__.items():
        if isinstance(value, torch.Tensor):
            total = total + value
    return total, list(bag.__dict__), "w" in bag.__dict__


def dict_write_by_key(x):
    g = Gain(1.0)
    g.__dict__["g"] = x.max()
    g.__dict__["extra"] = 4
    return g.apply(x) + g.extra


def dict_write_on_an_input(x, g):
    g.__dict__["g"] = 3.0
    g.__dict__["note"] = "set"
    return g.apply(x)


def vars_of_a_new_object(x):
    g = Gain(x)
    g.h = x + 1
    return {k: v * 2 for k, v in vars(g).items()}


def dict_get_and_pop(x):
    bag = Bag(a=x, b=2)
    a = bag.__dict__.get("a")
    c = bag.__dict__.get("c", 5)
    b = bag.__dict__.pop("b")
    return a * b + c, list(vars(bag))


def dict_copy_is_a_snapshot(x):
    bag = Bag(a=x)
    snap = bag.__dict__.copy()
    bag.a = x * 10
    return snap["a"] + bag.a, len(snap)


def setattr_by_name_in_a_loop(x):
    bag = Bag()
    for i, name in enumerate(("first", "second", "third")):
        setattr(bag, name, x * i)
    return bag.first + bag.second + bag.third, sorted(bag.__dict__)


# ---- __new__, metaclasses, __init_subclass__ ----------------------------------------------------


class Interned:
    """A `__new__` that picks a subclass from its argument."""

    def __new__(cls, kind, value):
        target = {"double": Doubled, "half": Halved}.get(kind, cls)
        obj = super().__new__(target)
        obj.kind = kind
        return obj

    def __init__(self, kind, value):
        self.value = value

    def apply(self, x):
        return x + self.value


class Doubled(Interned):
    def apply(self, x):
        return x * 2 + self.value


class Halved(Interned):
    def apply(self, x):
        return x / 2 + self.value


def new_picks_a_subclass(x):
    return [Interned(k, 1).apply(x) for k in ("double", "half", "other")]


class Pair(tuple):
    def __new__(cls, a, b):
        return super().__new__(cls, (a, b))

    def total(self):
        return self[0] + self[1]


def tuple_subclass_new(x):
    p = Pair(x, x * 2)
    return p.total(), len(p)


class NotSelf:
    def __new__(cls, value):
        return value * 2  # not an instance: __init__ does not run

    def __init__(self, value):
        raise RuntimeError("not reached")


def new_returns_something_else(x):
    return NotSelf(x) + 1


class Counted:
    made = 0

    def __new__(cls, *args):
        obj = object.__new__(cls)
        obj.serial = len(args)
        return obj

    def __init__(self, a, b=None):
        self.a = a


def new_and_init_both_run(x):
    c = Counted(x, 1)
    return c.a * c.serial, type(c).__name__


class Registered:
    registry: dict = {}

    def __init_subclass__(cls, key=None, **kwargs):
        super().__init_subclass__(**kwargs)
        Registered.registry[key or cls.__name__.lower()] = cls

    def __init__(self, scale):
        self.scale = scale


class Relu(Registered, key="relu"):
    def __call__(self, x):
        return torch.relu(x) * self.scale


class Tanh(Registered):
    def __call__(self, x):
        return torch.tanh(x) * self.scale


def init_subclass_registry(x):
    out = x
    for key in ("relu", "tanh"):
        out = Registered.registry[key](2.0)(out)
    return out, sorted(Registered.registry)


class Meta(type):
    def describe(cls):
        return cls.__name__ + "!"

    @property
    def size(cls):
        return len(cls.__name__)


class WithMeta(metaclass=Meta):
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return x * self.w


def metaclass_methods_on_the_class(x):
    obj = WithMeta(2.0)
    return obj.forward(x), WithMeta.describe(), type(obj).__name__


def metaclass_property(x):
    return x * WithMeta.size


class Counting(type):
    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        obj.via_meta = True
        return obj


class MadeByMeta(metaclass=Counting):
    def __init__(self, w):
        self.w = w


def metaclass_call(x):
    m = MadeByMeta(x)
    return m.w + 1, m.via_meta


class Attrs(type):
    def __getattr__(cls, name):
        if name.startswith("const_"):
            return int(name[6:])
        raise AttributeError(name)


class WithAttrsMeta(metaclass=Attrs):
    pass


def metaclass_getattr(x):
    return x * WithAttrsMeta.const_3


def isinstance_and_issubclass_of_new_objects(x):
    objs = [Interned("double", 0), Halved("half", 0), Relu(1.0)]
    flags = [(isinstance(o, Interned), isinstance(o, Registered), type(o) is Halved) for o in objs]
    return x + len(flags), flags, issubclass(Relu, Registered)


# ---- __class__ assignment -----------------------------------------------------------------------


class Eager:
    def __init__(self, w):
        self.w = w

    def run(self, x):
        return x * self.w


class Fused(Eager):
    def run(self, x):
        return torch.addcmul(x, x, x, value=self.w)


def class_assignment_switches_methods(x):
    m = Eager(2.0)
    a = m.run(x)
    m.__class__ = Fused
    return a, m.run(x), type(m).__name__


def class_assignment_on_an_input(x, m):
    m.__class__ = Fused
    return m.run(x)


def class_assignment_back_and_forth(x):
    m = Eager(0.5)
    outs = []
    for cls in (Fused, Eager, Fused):
        m.__class__ = cls
        outs.append(m.run(x))
    return outs, isinstance(m, Fused)


# ---- super() with multiple inheritance ----------------------------------------------------------


class Base:
    def __init__(self):
        self.trail = ["Base"]

    def transform(self, x):
        return x + 1


class Left(Base):
    def __init__(self):
        super().__init__()
        self.trail.append("Left")

    def transform(self, x):
        return super().transform(x) * 2


class Right(Base):
    def __init__(self):
        super().__init__()
        self.trail.append("Right")

    def transform(self, x):
        return super().transform(x) - 3


class Diamond(Left, Right):
    def __init__(self):
        super().__init__()
        self.trail.append("Diamond")

    def transform(self, x):
        return super().transform(x).sin()


def diamond_super_chain(x):
    d = Diamond()
    return d.transform(x), d.trail, [c.__name__ for c in type(d).__mro__]


def diamond_on_an_input(x, d):
    return d.transform(x)


def super_with_explicit_arguments(x):
    d = Diamond()
    return super(Left, d).transform(x), super(Diamond, d).transform(x)


class Mixin:
    def forward(self, x):
        return self.post(super().forward(x))

    def post(self, y):
        return y * 10


class Core:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return x @ self.w


class Mixed(Mixin, Core):
    pass


def mixin_super_reaches_the_core(x, w):
    return Mixed(w).forward(x)


class KwBase:
    def __init__(self, *, width, **kwargs):
        super().__init__(**kwargs)
        self.width = width


class KwDepth:
    def __init__(self, *, depth, **kwargs):
        super().__init__(**kwargs)
        self.depth = depth


class KwBoth(KwBase, KwDepth):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.area = self.width * self.depth


def cooperative_init_with_kwargs(x):
    k = KwBoth(width=2, depth=3)
    return x * k.area, vars(k)


class PropertyBase:
    @property
    def scale(self):
        return 2.0


class PropertyChild(PropertyBase):
    @property
    def scale(self):
        return super().scale + 1


def super_reads_a_property(x):
    return x * PropertyChild().scale


class ClassMethodBase:
    @classmethod
    def build(cls, x):
        return x + 1


class ClassMethodChild(ClassMethodBase):
    @classmethod
    def build(cls, x):
        return super().build(x) * 2


def super_in_a_classmethod(x):
    return ClassMethodChild.build(x)


# ---- __slots__ ----------------------------------------------------------------------------------


class Slotted:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w = w
        self.b = b

    def apply(self, x):
        return x * self.w + self.b


def slots_on_an_input(x, s):
    return s.apply(x)


def slots_written_on_an_input(x, s):
    s.b = s.b + 1
    return s.apply(x)


def slots_on_a_new_object(x):
    s = Slotted(x.sum(), 2)
    return s.apply(x)


def slots_refuse_new_names(x, s):
    try:
        s.other = 1
    except AttributeError:
        return x - 1
    return x + 1


class SlottedChild(Slotted):
    __slots__ = ("extra",)


def slots_inherited(x, s):
    s.extra = x.mean()
    return s.apply(x) + s.extra


class SlotsAndDict:
    __slots__ = ("w", "__dict__")

    def __init__(self, w):
        self.w = w
        self.note = "free"


def slots_with_a_dict(x, s):
    s.more = x
    return s.w * s.more, s.note


def unset_slot_raises(x):
    s = Slotted.__new__(Slotted)
    try:
        return s.w
    except AttributeError:
        return x * 2


# ---- operators ----------------------------------------------------------------------------------


class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(self.data + other.data)
        if isinstance(other, (int, float, torch.Tensor)):
            return Vec(self.data + other)
        return NotImplemented

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        return Vec(self.data - (other.data if isinstance(other, Vec) else other))

    def __rsub__(self, other):
        return Vec(other - self.data)

    def __mul__(self, other):
        return Vec(self.data * other)

    def __rmul__(self, other):
        return Vec(other * self.data)

    def __truediv__(self, other):
        return Vec(self.data / other)

    def __rtruediv__(self, other):
        return Vec(other / self.data)

    def __matmul__(self, other):
        return self.data @ other.data

    def __neg__(self):
        return Vec(-self.data)

    def __abs__(self):
        return Vec(self.data.abs())

    def __eq__(self, other):  # by shape: comparing the data would need its values
        return isinstance(other, Vec) and self.data.shape == other.data.shape

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        return self.data[index]

    def __iter__(self):
        return iter(self.data.unbind(0))

    def __contains__(self, value):
        return value in range(self.data.shape[0])


class Accumulator(Vec):
    def __iadd__(self, other):
        self.data = self.data + (other.data if isinstance(other, Vec) else other)
        return self

    def __imul__(self, other):
        self.data.mul_(other)
        return self


def reflected_add_and_sub(x):
    v = Vec(x)
    return (1 + v).data, (2.5 - v).data, (v - 1).data, (sum([v, v], 0)).data


def reflected_mul_and_div(x):
    v = Vec(x)
    return (3 * v).data, (1 / (v + 2)).data, (v * 2 / 4).data


def reflected_with_a_tensor_on_the_left_is_not_reached(x):
    v = Vec(x)
    return (v + x).data, (v * x).data


def inplace_operator_defined(x):
    acc = Accumulator(torch.zeros_like(x))
    for i in range(3):
        acc += x * i
    return acc.data


def inplace_mutating_a_tensor(x):
    acc = Accumulator(x.clone())
    acc *= 3
    return acc.data


def inplace_falls_back_to_binary(x):
    v = Vec(x)
    w = v
    v += 1  # no __iadd__: rebinds v, w is unchanged
    v -= 2
    v *= 3
    return v.data, w.data, v is w


def inplace_on_an_input(x, acc):
    acc += x
    return acc.data.sum()


def unary_and_matmul(x):
    v = Vec(x)
    return (-v).data, abs(-v).data, v @ Vec(x.T)


def equality_and_membership(x):
    a, b = Vec(x), Vec(x.clone())
    return a == b, a != Vec(x[1:] + 1), 2 in a, 7 in a, len(a), a[0] + a[-1]


def iterate_and_unpack(x):
    v = Vec(x)
    first, *rest = v
    return first * 2, len(rest), [row.sum() for row in v]


class Ordered:
    def __init__(self, key, payload):
        self.key, self.payload = key, payload

    def __lt__(self, other):
        return self.key < other.key

    def __repr__(self):
        return f"Ordered({self.key})"


def sorted_by_lt(x):
    items = [Ordered(k, x * k) for k in (3, 1, 2)]
    ordered = sorted(items)
    return [o.payload for o in ordered], min(items).key, max(items).key


class Callable_:
    def __init__(self, w):
        self.w = w
        self.calls = 0

    def __call__(self, x, *, shift=0):
        self.calls += 1
        return x * self.w + shift


def callable_object(x):
    f = Callable_(2.0)
    return f(x) + f(x, shift=1), f.calls


def callable_object_input(x, f):
    return f(f(x)), f.calls


class Comparable:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return self.v == getattr(other, "v", other)

    def __hash__(self):
        return hash(self.v)

    def __ge__(self, other):
        return self.v >= other.v


def reflected_comparisons(x):
    a, b = Comparable(1), Comparable(2)
    return x * (b >= a) + x * (a <= b), 1 == a, a == 1, a != Comparable(2)


def set_of_hashable_objects(x):
    a, b = Comparable(1), Comparable(2)
    unique = {a, Comparable(1), b}
    return x * len(unique), hash(a) == hash(Comparable(1))


class Bits:
    def __init__(self, n):
        self.n = n

    def __and__(self, o):
        return Bits(self.n & o.n)

    def __or__(self, o):
        return Bits(self.n | o.n)

    def __ror__(self, o):
        return Bits(o | self.n)

    def __lshift__(self, k):
        return Bits(self.n << k)

    def __invert__(self):
        return Bits(~self.n)

    def __index__(self):
        return self.n


def bitwise_operators(x):
    a = (Bits(6) & Bits(3)) | Bits(8)
    b = 1 | Bits(4)
    c = ~(a << 1)
    return x[: b.n], a.n, c.n, [0, 1, 2, 3][Bits(2)]


class Power:
    def __init__(self, e):
        self.e = e

    def __rpow__(self, base):
        return base ** self.e

    def __pow__(self, other):
        return Power(self.e * other)

    def __mod__(self, m):
        return Power(self.e % m)

    def __floordiv__(self, d):
        return Power(self.e // d)


def reflected_pow(x):
    p = Power(2)
    return x ** p.e + 2 ** p, (p ** 3).e, (p % 3).e, (Power(9) // 2).e


# ---- attributes on tensors, functions and namedtuples ------------------------------------------


def attribute_on_a_new_tensor(x):
    y = x * 2
    y.tag = "doubled"
    return y + 1, y.tag


def attribute_on_an_input_tensor(x):
    x.seen = True
    return x.sum(), x.seen


def read_attribute_of_an_input_tensor(x):
    return x * getattr(x, "scale", 1.0)


def _scaled_input():
    t = floats(3, 4)
    t.scale = 3.0
    return (t,)


def helper_with_state(x):
    return x + 1


helper_with_state.calls = 0


def attribute_on_a_function(x):
    helper_with_state.calls = 0
    helper_with_state.calls += 1
    return helper_with_state(x) * helper_with_state.calls


def attribute_on_a_nested_function(x):
    def inner(y):
        return y * inner.scale

    inner.scale = 4
    return inner(x), inner.scale


def function_dunder_attributes(x):
    return x * len(helper_with_state.__name__), helper_with_state.__qualname__, helper_with_state.__module__


Point = collections.namedtuple("Point", ["x", "y"])


class Box(typing.NamedTuple):
    lo: torch.Tensor
    hi: torch.Tensor
    label: str = "box"

    def width(self):
        return self.hi - self.lo

    @property
    def center(self):
        return (self.lo + self.hi) / 2


def namedtuple_made_and_read(x):
    p = Point(x, x * 2)
    q = p._replace(y=p.y + 1)
    return q, p.x + q.y, q._asdict(), Point._fields


def namedtuple_input_fields(x, box):
    return box.width() * x + box.center, box.label, box._fields


def typed_namedtuple_defaults(x):
    b = Box(x, x + 2)
    return b, b.width().sum(), b.label, b[2], len(b)


def namedtuple_unpack_and_make(x):
    lo, hi, _ = Box(x - 1, x + 1)
    made = Box._make([lo * 2, hi * 2, "made"])
    return made.center, made.label


def namedtuple_attribute_on_class(x):
    return x + len(Box._field_defaults), Box.__name__, Point(1, 2) == (1, 2)


# ---- writes to enclosing cells -----------------------------------------------------------------


def nonlocal_counter(x):
    count = 0

    def bump(y):
        nonlocal count
        count += 1
        return y * count

    a = bump(x)
    b = bump(a)
    return b, count


def nonlocal_accumulates_tensors(x):
    total = torch.zeros_like(x)

    def add(y):
        nonlocal total
        total = total + y

    for i in range(3):
        add(x * i)
    return total


def closure_reads_updated_cell(x):
    scale = 1.0

    def apply(y):
        return y * scale

    first = apply(x)
    scale = 3.0
    return first, apply(x)


def make_counter():
    count = [0]
    value = 0

    def bump():
        nonlocal value
        value += 1
        count[0] += 1
        return value

    def reset():
        nonlocal value
        value = 0
        count[0] = 0

    return bump, reset


BUMP, RESET = make_counter()


def write_a_cell_of_a_global_closure(x):
    RESET()
    return x * BUMP() + BUMP()


def nested_nonlocal_two_levels(x):
    level = 0

    def outer():
        def inner():
            nonlocal level
            level += 2

        inner()
        return level

    return x * outer(), level


# ---- objects made in the trace that outlive it --------------------------------------------------


class Cache:
    def __init__(self):
        self.keys = []
        self.values = []

    def update(self, k, v):
        self.keys.append(k)
        self.values.append(v)
        return torch.cat(self.keys, 0), torch.cat(self.values, 0)


def new_object_returned(x):
    cache = Cache()
    k, v = cache.update(x, x * 2)
    return cache, k.sum() + v.sum()


def new_object_stored_in_a_list(x, out):
    out.append(Gain(x.mean()))
    return out[-1].apply(x)


def new_object_stored_in_a_dict(x, d):
    d["stats"] = Stats(x)
    d["gain"] = Gain(2)
    return d["gain"].apply(x)


def new_object_stored_on_an_input(x, holder):
    holder.cache = Cache()
    holder.cache.update(x, x)
    return x + 1


def new_objects_that_refer_to_each_other(x):
    a, b = Bag(v=x), Bag(v=x + 1)
    a.peer, b.peer = b, a
    return a, b.peer.v


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    loss: typing.Optional[torch.Tensor] = None
    extra: list = dataclasses.field(default_factory=list)


def dataclass_made_and_returned(x):
    out = Output(x.softmax(-1))
    out.loss = -out.logits.log().mean()
    out.extra.append(out.loss.detach())
    return out


def dataclass_replace_and_fields(x):
    out = Output(x)
    other = dataclasses.replace(out, loss=x.sum())
    return other, [f.name for f in dataclasses.fields(other)]


def list_of_new_objects(x):
    return [Slotted(x * i, i) for i in range(3)]


class Holder:
    def __init__(self):
        self.cache = None


# ---- more protocols in context ------------------------------------------------------------------


class Linear2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(4, 4) * 0.5)

    @property
    def weight_t(self):
        return self.weight.t()

    def forward(self, x):
        return x @ self.weight_t


def module_property_in_forward(x, m):
    return m(x) + m.weight_t.sum()


def property_made_by_call(x):
    class_ = Gain

    def get_half(self):
        return self.g / 2

    half = property(get_half)
    return x * half.fget(class_(4.0)), isinstance(half, property)


class OwnerValue:
    """A descriptor whose value depends on the class it is read through."""

    def __get__(self, obj, owner):
        return len(owner.__name__)


class ShortName:
    size = OwnerValue()


class LongerName(ShortName):
    pass


def descriptor_sees_the_owner(x):
    return x * ShortName().size + LongerName().size + LongerName.size


def delete_an_attribute_of_an_input(x, bag):
    del bag.w
    return x * 2, hasattr(bag, "w"), sorted(vars(bag))


def delete_then_set_again(x, bag):
    del bag.w
    bag.w = x + 1
    return bag.w * 2


def delete_a_missing_attribute_raises(x, bag):
    try:
        del bag.nothing
    except AttributeError:
        return x - 1
    return x


@dataclasses.dataclass(frozen=True)
class FrozenSpec:
    width: int
    scale: float = 1.0


def frozen_dataclass_refuses_writes(x):
    spec = FrozenSpec(3)
    try:
        spec.width = 4
    except dataclasses.FrozenInstanceError:
        pass
    return x[:, : spec.width] * spec.scale, spec


def frozen_dataclass_input(x, spec):
    return x[:, : spec.width] * spec.scale, dataclasses.replace(spec, scale=2.0)


def getattr_with_names_from_a_list(x, bag):
    total = x
    for name in ("w", "b", "missing"):
        value = getattr(bag, name, None)
        if value is not None:
            total = total + value
    return total


class Singleton:
    _instance = None

    def __new__(cls, scale):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __init__(self, scale):
        self.scale = scale


def new_returns_a_cached_instance(x):
    a = Singleton(2.0)
    return x * a.scale, a is Singleton(3.0)


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...

    def scaled(self, x):
        return x * self.area()


class Square(Shape):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side ** 2


def abstract_class_refuses_instances(x):
    try:
        Shape()
    except TypeError:
        pass
    return Square(3).scaled(x), isinstance(Square(1), Shape)


class Plugin:
    kinds: dict = {}

    def __init_subclass__(cls, /, kind, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.kind = kind
        Plugin.kinds[kind] = cls


class Doubler(Plugin, kind="double"):
    def run(self, x):
        return x * 2


class Negator(Plugin, kind="negate"):
    def run(self, x):
        return -x


def init_subclass_sets_class_attributes(x):
    out = x
    for kind in ("double", "negate", "double"):
        out = Plugin.kinds[kind]().run(out)
    return out, Doubler.kind, sorted(Plugin.kinds)


class Residual:
    def forward(self, x):
        return x + super().forward(x)


class Scale:
    def __init__(self, s):
        self.s = s

    def forward(self, x):
        return x * self.s


class ResidualScale(Residual, Scale):
    pass


def mixin_before_base(x):
    return ResidualScale(3.0).forward(x)


class LoggedBase:
    def __init__(self):
        self.log = []

    def step(self, x):
        self.log.append(type(self).__name__)
        return x + 1


class LoggedChild(LoggedBase):
    def step(self, x):
        y = super().step(x)
        self.log.append("child")
        return super(LoggedChild, self).step(y) * 2


def super_called_twice(x):
    obj = LoggedChild()
    return obj.step(x), obj.log


class SetterBase:
    def __init__(self):
        self._v = 0

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value


class SetterChild(SetterBase):
    @SetterBase.v.setter
    def v(self, value):
        SetterBase.v.fset(self, value * 10)


def inherited_property_with_a_new_setter(x):
    obj = SetterChild()
    obj.v = 2
    return x * obj.v


class PointSlots:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    @property
    def norm(self):
        return (self.x ** 2 + self.y ** 2).sqrt()


def slots_with_a_property(x):
    p = PointSlots(x, x + 1)
    p.y = p.y * 2
    return p.norm, p


@dataclasses.dataclass(slots=True)
class SlottedRecord:
    value: torch.Tensor
    count: int = 0


def slotted_dataclass(x):
    r = SlottedRecord(x)
    r.count += 2
    return r.value * r.count, r


class Grid:
    def __init__(self, rows):
        self.rows = rows

    def __getitem__(self, key):
        i, j = key
        return self.rows[i][j]

    def __setitem__(self, key, value):
        i, j = key
        self.rows[i][j] = value

    def __delitem__(self, key):
        i, j = key
        self.rows[i][j] = None


def getitem_with_tuple_keys(x):
    g = Grid([[x, x + 1], [x + 2, None]])
    g[1, 1] = g[0, 0] * g[0, 1]
    del g[1, 0]
    return g[1, 1], g.rows[1][0] is None


class Index:
    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n


def index_protocol(x):
    i = Index(2)
    return x[i], list(range(Index(3))), [10, 20, 30][Index(1)], x[: Index(1)]


class Fallback:
    def __init__(self, v):
        self.v = v

    def __iadd__(self, other):
        return NotImplemented

    def __add__(self, other):
        return Fallback(self.v + other)


def iadd_not_implemented_falls_back(x):
    f = Fallback(x)
    g = f
    f += 1
    return f.v, g.v, f is g


class Unhashable:
    __hash__ = None

    def __init__(self, v):
        self.v = v


def unhashable_object_as_a_key(x):
    try:
        {Unhashable(1): 1}
    except TypeError:
        return x + 1
    return x


class Pretty:
    def __init__(self, name, n):
        self.name, self.n = name, n

    def __repr__(self):
        return f"Pretty({self.name!r}, {self.n})"

    def __str__(self):
        return f"{self.name}:{self.n}"

    def __format__(self, spec):
        return f"<{self.name}>" if spec == "short" else str(self)


def str_repr_and_format_of_objects(x):
    p = Pretty("layer", 3)
    return x * p.n, str(p), repr(p), f"{p}", f"{p:short}", f"{p!r}"


def make_ema():
    state = None

    def update(value):
        nonlocal state
        state = value if state is None else state * 0.9 + value * 0.1
        return state

    def reset():
        nonlocal state
        state = None

    return update, reset


EMA_UPDATE, EMA_RESET = make_ema()


def tensor_in_a_cell_of_a_global_closure(x):
    EMA_RESET()
    EMA_UPDATE(x)
    return EMA_UPDATE(x * 3) + 1


_REGISTRY: dict = {}


def object_stored_in_a_global_dict(x):
    _REGISTRY.clear()
    _REGISTRY["last"] = Gain(x.mean())
    return _REGISTRY["last"].apply(x)


def object_stored_on_a_module(x, m):
    m.cache = Cache()
    m.cache.update(x, x * 2)
    return m(x)


def list_of_dataclasses_returned(x):
    return [Output(row, row.sum()) for row in x.unbind(0)]


class Tagged(typing.NamedTuple):
    value: torch.Tensor
    tag: str


class TaggedWithDict(collections.namedtuple("TaggedBase", "value tag")):
    def doubled(self):
        return self.value * 2


def namedtuple_subclass_with_attributes(x):
    t = TaggedWithDict(x, "t")
    t.note = "extra"
    return t.doubled(), t, t.note


def attribute_on_tensors_in_a_list(x):
    parts = list(x.unbind(0))
    for i, p in enumerate(parts):
        p.position = i
    return [p * p.position for p in parts], parts


def dynamic_class_attribute_read(x):
    cls = Doubler if x.shape[0] == 3 else Negator
    return cls().run(x), cls.kind


# ---- cases --------------------------------------------------------------------------------------


def x34():
    return (floats(3, 4),)


def x4():
    return (floats(4, seed=1),)


def _with(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


DESCRIPTORS = [
    (data_descriptor_on_a_new_object, x34),
    (data_descriptor_set_on_an_input, _with(lambda: Layer(2, 0.5))),
    (data_descriptor_rejects, x34),
    (non_data_descriptor_shadowed, x34),
    (descriptor_read_on_the_class, x34),
    (property_setter_on_a_new_object, x34),
    (property_setter_on_an_input, _with(lambda: Celsius(1.0))),
    (property_deleter, x34),
    (read_only_property_raises, x34),
    (cached_property_on_a_new_object, x34),
    (cached_property_on_an_input, _with(lambda: Stats(floats(3, 4, seed=2)))),
    (cached_property_invalidated, x34),
    (property_calls_through_method, x34),
    (classmethod_constructor_and_staticmethod, x34),
    (python_get_returning_a_partial, x34),
]

ATTRIBUTE_HOOKS = [
    (getattr_delegates_to_a_tensor, x34),
    (getattr_delegate_input, _with(lambda: Delegate(floats(3, 4, seed=3)))),
    (getattr_with_defaults, x34),
    (getattribute_counts_reads, x34),
    (getattribute_aliases, x34),
    (getattribute_aliases_input, lambda: (floats(3, 4), Aliased(floats(2, 4), 0.5))),
    (setattr_refuses, x34),
    (setattr_and_delattr_record, x34),
    (setattr_on_an_input_records, _with(Recording)),
    (setattr_transforms_values, x34),
    (delattr_builtin_and_hasattr, x34),
    (getattr_caches_on_the_instance, x34),
]

INSTANCE_DICTS = [
    (dict_update_in_init, x34),
    (dict_reads, _with(lambda: Bag(w=floats(3, 4, seed=4), n=2, b=floats(4)))),
    (dict_write_by_key, x34),
    (dict_write_on_an_input, _with(lambda: Gain(1.0))),
    (vars_of_a_new_object, x34),
    (dict_get_and_pop, x34),
    (dict_copy_is_a_snapshot, x34),
    (setattr_by_name_in_a_loop, x34),
]

CLASS_MAKING = [
    (new_picks_a_subclass, x34),
    (tuple_subclass_new, x34),
    (new_returns_something_else, x34),
    (new_and_init_both_run, x34),
    (init_subclass_registry, x34),
    (metaclass_methods_on_the_class, x34),
    (metaclass_property, x34),
    (metaclass_call, x34),
    (metaclass_getattr, x34),
    (isinstance_and_issubclass_of_new_objects, x34),
    (class_assignment_switches_methods, x34),
    (class_assignment_on_an_input, _with(lambda: Eager(1.5))),
    (class_assignment_back_and_forth, x34),
]

SUPER = [
    (diamond_super_chain, x34),
    (diamond_on_an_input, _with(Diamond)),
    (super_with_explicit_arguments, x34),
    (mixin_super_reaches_the_core, lambda: (floats(3, 4), floats(4, 2, seed=5))),
    (cooperative_init_with_kwargs, x34),
    (super_reads_a_property, x34),
    (super_in_a_classmethod, x34),
]

SLOTS = [
    (slots_on_an_input, _with(lambda: Slotted(2.0, floats(4)))),
    (slots_written_on_an_input, _with(lambda: Slotted(2.0, 1.0))),
    (slots_on_a_new_object, x34),
    (slots_refuse_new_names, _with(lambda: Slotted(1, 2))),
    (slots_inherited, _with(lambda: SlottedChild(3.0, 1.0))),
    (slots_with_a_dict, _with(lambda: SlotsAndDict(2.0))),
    (unset_slot_raises, x34),
]

OPERATORS = [
    (reflected_add_and_sub, x34),
    (reflected_mul_and_div, x34),
    (reflected_with_a_tensor_on_the_left_is_not_reached, x34),
    (inplace_operator_defined, x34),
    (inplace_mutating_a_tensor, x34),
    (inplace_falls_back_to_binary, x34),
    (inplace_on_an_input, _with(lambda: Accumulator(floats(3, 4, seed=6)))),
    (unary_and_matmul, x34),
    (equality_and_membership, x34),
    (iterate_and_unpack, x34),
    (sorted_by_lt, x34),
    (callable_object, x34),
    (callable_object_input, _with(lambda: Callable_(0.5))),
    (reflected_comparisons, x34),
    (set_of_hashable_objects, x34),
    (bitwise_operators, x4),
    (reflected_pow, x34),
]

FOREIGN_ATTRIBUTES = [
    (attribute_on_a_new_tensor, x34),
    (attribute_on_an_input_tensor, x34),
    (read_attribute_of_an_input_tensor, _scaled_input),
    (attribute_on_a_function, x34),
    (attribute_on_a_nested_function, x34),
    (function_dunder_attributes, x34),
    (namedtuple_made_and_read, x34),
    (namedtuple_input_fields, _with(lambda: Box(floats(4), floats(4, seed=7) + 3, "given"))),
    (typed_namedtuple_defaults, x34),
    (namedtuple_unpack_and_make, x34),
    (namedtuple_attribute_on_class, x34),
]

CELLS = [
    (nonlocal_counter, x34),
    (nonlocal_accumulates_tensors, x34),
    (closure_reads_updated_cell, x34),
    (write_a_cell_of_a_global_closure, x34),
    (nested_nonlocal_two_levels, x34),
]

ESCAPING = [
    (new_object_returned, x34),
    (new_object_stored_in_a_list, _with(list)),
    (new_object_stored_in_a_dict, _with(dict)),
    (new_object_stored_on_an_input, _with(Holder)),
    (new_objects_that_refer_to_each_other, x34),
    (dataclass_made_and_returned, x34),
    (dataclass_replace_and_fields, x34),
    (list_of_new_objects, x34),
]

IN_CONTEXT = [
    (module_property_in_forward, _with(Linear2)),
    (property_made_by_call, x34),
    (descriptor_sees_the_owner, x34),
    (delete_an_attribute_of_an_input, _with(lambda: Bag(w=floats(4), n=2))),
    (delete_then_set_again, _with(lambda: Bag(w=floats(4), n=2))),
    (delete_a_missing_attribute_raises, _with(lambda: Bag(w=floats(4)))),
    (frozen_dataclass_refuses_writes, x34),
    (frozen_dataclass_input, _with(lambda: FrozenSpec(2, 0.5))),
    (getattr_with_names_from_a_list, _with(lambda: Bag(w=floats(4), b=1.0))),
    (new_returns_a_cached_instance, x34),
    (abstract_class_refuses_instances, x34),
    (init_subclass_sets_class_attributes, x34),
    (mixin_before_base, x34),
    (super_called_twice, x34),
    (inherited_property_with_a_new_setter, x34),
    (slots_with_a_property, x34),
    (slotted_dataclass, x34),
    (getitem_with_tuple_keys, x34),
    (index_protocol, x34),
    (iadd_not_implemented_falls_back, x34),
    (unhashable_object_as_a_key, x34),
    (str_repr_and_format_of_objects, x34),
    (tensor_in_a_cell_of_a_global_closure, x34),
    (object_stored_in_a_global_dict, x34),
    (object_stored_on_a_module, lambda: (floats(3, 4), Linear2())),
    (list_of_dataclasses_returned, x34),
    (namedtuple_subclass_with_attributes, x34),
    (attribute_on_tensors_in_a_list, x34),
    (dynamic_class_attribute_read, x34),
]

ALL = [*DESCRIPTORS, *ATTRIBUTE_HOOKS, *INSTANCE_DICTS, *CLASS_MAKING, *SUPER, *SLOTS, *OPERATORS,
       *FOREIGN_ATTRIBUTES, *CELLS, *ESCAPING, *IN_CONTEXT]

# Cases where framegraph cannot reach torch.compile's counts, with the reason.
SHORT_OF_TORCH: dict[str, str] = {
    "set_of_hashable_objects": "a set of user objects: framegraph's sets hold constants only (an object's "
                               "own __hash__ and __eq__ decide membership), so building it is a graph break",
}


@parity_params(ALL, SHORT_OF_TORCH)
def test_protocols_at_torch_parity(fn, make_args):
    assert_parity(fn, make_args)
