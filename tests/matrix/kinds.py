"""The kinds of value of the semantics matrix: every kind the translator models, and the kinds
programs define (objects with hooks and descriptors, dataclasses, namedtuples and their
subclasses, enums, metaclass instances, builtin subclasses), each made fresh by a function of
no arguments. The same function makes the value passed as an argument and, inlined, the value
made inside the compiled function.

Tensors are made from seeded generators, so two makes give equal values.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import functools
import math
import types

import numpy as np
import torch


def t(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape)))


# ---- classes of the program ----------------------------------------------------------------------
Point = collections.namedtuple("Point", "a b")


class PointWithNorm(Point):
    def norm(self):
        return self.a + self.b

    @property
    def first(self):
        return self.a


@dataclasses.dataclass
class Record:
    a: int
    b: torch.Tensor
    tags: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class FrozenRecord:
    a: int
    b: float


class Plain:
    kind = "plain"

    def __init__(self):
        self.a = 1
        self.b = [1, 2]

    def scaled(self, k):
        return self.a * k


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1
        self.b = 2.0


class WithProperty:
    def __init__(self):
        self._a = 3

    @property
    def a(self):
        return self._a * 2

    @a.setter
    def a(self, value):
        self._a = value

    @a.deleter
    def a(self):
        self._a = 0


class WithGetattr:
    def __init__(self):
        self.known = 1

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return len(name)


class WithSetattr:
    def __init__(self):
        object.__setattr__(self, "writes", [])
        self.a = 1

    def __setattr__(self, name, value):
        self.writes.append(name)
        object.__setattr__(self, name, value)


class WithGetattribute:
    def __init__(self):
        self.a = 1

    def __getattribute__(self, name):
        if name == "a":
            return object.__getattribute__(self, "a") + 100
        return object.__getattribute__(self, name)


class Container:
    """A sequence and mapping of the program's own: the special methods of the protocols."""

    def __init__(self):
        self.items = [1, 2, 3]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __setitem__(self, i, value):
        self.items[i] = value

    def __delitem__(self, i):
        del self.items[i]

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, value):
        return value in self.items

    def __eq__(self, other):
        return isinstance(other, Container) and self.items == other.items

    def __hash__(self):
        return hash(tuple(self.items))

    def __add__(self, other):
        new = Container()
        new.items = self.items + list(other)
        return new

    def __iadd__(self, other):
        self.items.extend(list(other))
        return self

    def __bool__(self):
        return bool(self.items)

    def __call__(self, *args):
        return len(args) + len(self.items)


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Registered(type):
    names: list = []

    def __new__(mcs, name, bases, namespace):
        cls = super().__new__(mcs, name, bases, namespace)
        mcs.names.append(name)
        return cls


class WithMeta(metaclass=Registered):
    def __init__(self):
        self.a = 2


class MyList(list):
    def total(self):
        return sum(self)


class MyDict(dict):
    def first(self):
        return next(iter(self))


class Pair(tuple):
    def swap(self):
        return Pair((self[1], self[0]))


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(3))
        self.count = 0

    def forward(self, x):
        return x * self.scale


# ---- functions -----------------------------------------------------------------------------------
def double(v):
    return v * 2


def _make_closure():
    offset = 3

    def shifted(v):
        return v + offset
    return shifted


def _generate():
    yield 1
    yield 2
    yield 3


@contextlib.contextmanager
def _managed():
    yield 5


# ---- the kinds -----------------------------------------------------------------------------------
KINDS = {
    "int": lambda: 3,
    "float": lambda: 2.5,
    "bool": lambda: True,
    "complex": lambda: 1 + 2j,
    "str": lambda: "ab",
    "bytes": lambda: b"ab",
    "none": lambda: None,
    "tuple": lambda: (1, 2, 3),
    "tuple_of_tensors": lambda: (t(3), t(3, seed=1)),
    "list": lambda: [1, 2, 3],
    "list_of_tensors": lambda: [t(3), t(3, seed=1)],
    "dict": lambda: {"a": 1, "b": 2},
    "dict_of_tensors": lambda: {"a": t(3), "b": t(3, seed=1)},
    "dict_int_keys": lambda: {1: "x", 2: "y"},
    "set": lambda: {1, 2, 3},
    "frozenset": lambda: frozenset({1, 2}),
    "tensor": lambda: t(3),
    "tensor_0d": lambda: torch.tensor(2.0),
    "int_tensor": lambda: torch.arange(4),
    "size": lambda: torch.Size([2, 3]),
    "dtype": lambda: torch.float32,
    "device": lambda: torch.device("cpu"),
    "slice": lambda: slice(1, 3),
    "range": lambda: range(4),
    "deque": lambda: collections.deque([1, 2, 3]),
    "defaultdict": lambda: collections.defaultdict(list, {"a": [1]}),
    "ordered_dict": lambda: collections.OrderedDict([("a", 1), ("b", 2)]),
    "counter": lambda: collections.Counter("abca"),
    "namedtuple": lambda: Point(1, 2),
    "namedtuple_subclass": lambda: PointWithNorm(1, 2),
    "dataclass": lambda: Record(1, t(3)),
    "frozen_dataclass": lambda: FrozenRecord(1, 2.0),
    "plain_object": Plain,
    "slotted_object": Slotted,
    "property_object": WithProperty,
    "getattr_object": WithGetattr,
    "setattr_object": WithSetattr,
    "getattribute_object": WithGetattribute,
    "protocol_object": Container,
    "enum": lambda: Color.RED,
    "int_enum": lambda: Level.HIGH,
    "metaclass_instance": WithMeta,
    "list_subclass": lambda: MyList([1, 2, 3]),
    "dict_subclass": lambda: MyDict(a=1, b=2),
    "tuple_subclass": lambda: Pair((1, 2)),
    "class": lambda: Plain,
    "module": lambda: math,
    "nn_module": Gate,
    "function": lambda: double,
    "lambda": lambda: (lambda v: v + 1),
    "closure": _make_closure,
    "bound_method": lambda: Plain().scaled,
    "builtin_function": lambda: abs,
    "partial": lambda: functools.partial(pow, 2),
    "generator": _generate,
    "list_iterator": lambda: iter([1, 2, 3]),
    "nullcontext": lambda: contextlib.nullcontext(4),
    "contextmanager": _managed,
    "ndarray": lambda: np.arange(3.0),
    "simple_namespace": lambda: types.SimpleNamespace(a=1, b=2),
}
