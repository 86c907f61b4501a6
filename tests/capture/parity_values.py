"""Parity cases of values: attributes set on tensors, functions and namedtuples, writes to
closure cells, objects made in the trace that outlive it, and the protocols in context.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import typing

import torch

from .datadep_cases import floats
from .parity_attributes import Bag, Gain, Slotted, Stats


def x34():
    return (floats(3, 4),)


def _with(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


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


# ---- cases ----------------------------------------------------------------------------------------

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
