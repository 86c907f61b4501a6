"""Parity cases of attribute protocols on user objects: descriptors (Python `__get__`/`__set__`,
properties, cached_property), `__getattr__`/`__getattribute__`/`__setattr__`/`__delattr__`,
instance `__dict__` reads and writes, and `__slots__`.
"""

from __future__ import annotations

import functools

import torch

from .datadep_cases import floats


def x34():
    return (floats(3, 4),)


def _with(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


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


class SlottedStats:
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    @functools.cached_property
    def doubled(self):  # no __dict__ to cache it in: TypeError, as eagerly
        return self.data * 2


def cached_property_without_a_dict(x):
    try:
        return SlottedStats(x).doubled
    except TypeError:
        return x - 1


class Unnamed:
    pass


Unnamed.value = functools.cached_property(lambda self: 1.0)  # assigned after the class: no __set_name__


def cached_property_without_set_name(x):
    try:
        return x + Unnamed().value
    except TypeError:
        return x - 1


SHARED_STATS = Stats(floats(3, 4, seed=5))


def cached_property_cached_by_an_earlier_call(x, s):
    # Every call gets the same object: the first computes and stores the value, later calls
    # find it in the object's __dict__ (a different graph, guarded by that dict's keys).
    return s.normalised * x, s.computed


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


# ---- cases ----------------------------------------------------------------------------------------

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
    (cached_property_without_a_dict, x34),
    (cached_property_without_set_name, x34),
    (cached_property_cached_by_an_earlier_call, _with(lambda: SHARED_STATS)),
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

SLOTS = [
    (slots_on_an_input, _with(lambda: Slotted(2.0, floats(4)))),
    (slots_written_on_an_input, _with(lambda: Slotted(2.0, 1.0))),
    (slots_on_a_new_object, x34),
    (slots_refuse_new_names, _with(lambda: Slotted(1, 2))),
    (slots_inherited, _with(lambda: SlottedChild(3.0, 1.0))),
    (slots_with_a_dict, _with(lambda: SlotsAndDict(2.0))),
    (unset_slot_raises, x34),
]
