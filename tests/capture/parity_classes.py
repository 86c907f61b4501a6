"""Parity cases of classes: `__new__`, metaclasses, `__init_subclass__`, `__class__` assignment,
`super()` through multiple inheritance, and reflected and in-place operators.
"""

from __future__ import annotations

import torch

from .datadep_cases import floats


def x34():
    return (floats(3, 4),)


def x4():
    return (floats(4, seed=1),)


def _with(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


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


# ---- cases ----------------------------------------------------------------------------------------

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
