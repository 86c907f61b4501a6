"""The idioms libraries keep their registries with, at torch.compile's parity: dicts keyed by
types and functions (einops' `_type2backend`), sets of names as attributes (peft's
`special_peft_forward_args`), `cls.__subclasses__()` walks, methods called through their
builtin class (`str.isidentifier(name)`, `set.difference(a, b)`), bound methods of frozen
values (`keyword.iskeyword`), and `functools.lru_cache` functions returning objects (einops'
recipes); and what torch-geometric and diffusers pass around: torch.Generator arguments,
torch.Size arithmetic with tuples, namedtuples with a field named `index`. Every case runs eagerly, under framegraph and under torch.compile with counting
backends (`python_parity.check`): equal results, raised exception types and mutated arguments,
and no more breaks and no fewer captured ops than torch.compile.
"""

import functools
import keyword
import typing

import torch

from .datadep_cases import parity_params
from .python_parity import check, t


# ---- dicts keyed by types and functions ------------------------------------------------------
class Backend:
    def scale(self, x):
        return x * 2


class TorchBackend(Backend):
    pass


class NumpyBackend(Backend):
    def scale(self, x):
        return x * 3


_TYPE_TO_BACKEND = {}
_HANDLERS = {torch.relu: "relu", torch.tanh: "tanh"}
_BY_CLASS = {int: 1, float: 2.0, str: "s"}


def _backend_of(x):
    """einops' get_backend: a cache keyed by the tensor's type, filled by walking subclasses."""
    found = _TYPE_TO_BACKEND.get(type(x))
    if found is not None:
        return found
    for backend_cls in Backend.__subclasses__():
        if backend_cls.__name__.startswith("Torch"):
            backend = backend_cls()
            _TYPE_TO_BACKEND[type(x)] = backend
            return backend
    raise RuntimeError("no backend")


def type_keyed_cache_filled_on_first_call(x):
    return _backend_of(x).scale(x)


def type_keyed_cache_read(x):
    _backend_of(x)
    return _backend_of(x).scale(x) + len(_TYPE_TO_BACKEND)


def function_keyed_dict_global(x):
    return x * len(_HANDLERS[torch.relu]), torch.tanh in _HANDLERS, _HANDLERS.get(torch.sigmoid, "none")


def class_keyed_dict_global(x):
    return x + _BY_CLASS[type(1)], _BY_CLASS[float], list(_BY_CLASS)


def type_keyed_dict_argument(x, table):
    total = x
    for kind, value in table.items():
        total = total + value * (kind is int)
    return total, table[float]


def function_keyed_dict_made(x):
    ops = {torch.relu: 1, torch.sigmoid: 2}
    ops[torch.tanh] = 3
    return sum(ops[fn] * fn(x) for fn in ops), list(ops.values())


def object_keyed_dict_mutated(x, table):
    table[torch.exp] = "exp"
    del table[torch.relu]
    return x + len(table)


def subclasses_walk(x):
    names = []
    pending = list(Backend.__subclasses__())
    while pending:
        cls = pending.pop()
        names.append(cls.__name__)
        pending.extend(cls.__subclasses__())
    return x * len(names), sorted(names)


# ---- sets of names -------------------------------------------------------------------------
class Wrapper(torch.nn.Module):
    """peft keeps the names of the forward's own arguments in a set on the model."""

    def __init__(self):
        super().__init__()
        self.special_args = {"adapter_names", "scale"}
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x, **kwargs):
        kept = {k: v for k, v in kwargs.items() if k not in self.special_args}
        scale = kwargs.get("scale", 1.0) if "scale" in self.special_args else 1.0
        return self.linear(x) * scale, sorted(kept)


_WRAPPER = Wrapper()


def set_attribute_of_a_module(x):
    return _WRAPPER(x, scale=2.0, other=1)


def set_argument_read(x, names):
    return x * len(names), "a" in names, sorted(names)


def set_argument_changed(x, names):
    names.add("z")
    names.discard("a")
    return x + len(names)


def frozenset_argument(x, names):
    return x * len(names), "b" in names, names | {"q"}


# ---- methods through their builtin class ---------------------------------------------------
def str_method_from_the_class(x, name):
    ok = str.isidentifier(name) and not keyword.iskeyword(name) and str.isalnum(name[0])
    return x * 2 if ok else x, str.upper(name)


def set_method_from_the_class(x):
    known = {"a", "b", "c"}
    missing = set.difference(known, {"a"})
    both = set.symmetric_difference({"a", "d"}, known)
    return x * len(missing), sorted(missing), sorted(both), frozenset.__contains__(frozenset(known), "b")


def dict_method_from_the_class(x):
    d = {"a": x, "b": x + 1}
    return dict.get(d, "a") * 2, dict.get(d, "z", 0), list(dict.keys(d))


# ---- lru_cache returning objects -----------------------------------------------------------
class Recipe:
    def __init__(self, pattern):
        self.pattern = pattern
        self.axes = tuple(pattern.split())


@functools.lru_cache(maxsize=16)
def _recipe(pattern):
    return Recipe(pattern)


def lru_cache_returns_the_cached_object(x):
    recipe = _recipe("b c h")
    again = _recipe("b c h")
    return x * len(recipe.axes), recipe is again, recipe.pattern


def lru_cache_object_argument(x):
    recipe = _recipe("a b")
    return _scaled(recipe, 2) * x


@functools.lru_cache(maxsize=16)
def _scaled(recipe, k):
    return len(recipe.axes) * k


# ---- profiler regions -----------------------------------------------------------------------
def record_function_region(x):
    with torch.autograd.profiler.record_function("forward"):
        y = x * 2
        with torch.profiler.record_function("inner") as region:
            z = y + 1
    return z, region is not None


def record_function_across_a_break(x):
    with torch.autograd.profiler.record_function("step"):
        y = x * 2
        torch._dynamo.graph_break()
        z = y + 1
    return z


# ---- torch.Generator arguments, torch.Size arithmetic, namedtuple fields named like methods ---
def generator_passed_to_random_ops(x, generator):
    y = x * 2
    noise = torch.randn(3, generator=generator)
    return y + noise, torch.rand(2, generator=generator) + y.sum()


def generator_device_read(x, generator):
    device = generator.device if generator is not None else x.device
    return (x + 1 if device.type == "cpu" else x - 1), device


def size_arithmetic(x, n):
    size = x.shape
    target = size[:0] + (n,) + size[1:]  # torch_geometric's scatter
    return x.new_zeros(target), (2,) + size, size * 2, 2 * size[1:], size + torch.Size([5]), x.view(size[:1] + (-1,))


class Collected(typing.NamedTuple):
    """torch_geometric's CollectArgs: fields named like tuple's methods shadow them."""

    x: torch.Tensor
    index: torch.Tensor
    count: int


def namedtuple_fields_named_index_and_count(x, i):
    args = Collected(x, i, 3)
    return args.x[args.index] * args.count, args.index + 1, len(args), args[1] * 2


CASES = [
    (type_keyed_cache_filled_on_first_call, lambda: (_TYPE_TO_BACKEND.clear(), t(3))[1:]),
    (type_keyed_cache_read, lambda: (t(3),)),
    (function_keyed_dict_global, lambda: (t(3),)),
    (class_keyed_dict_global, lambda: (t(3),)),
    (type_keyed_dict_argument, lambda: (t(3), {int: 2.0, float: 3.0, str: 1.0})),
    (function_keyed_dict_made, lambda: (t(3),)),
    (object_keyed_dict_mutated, lambda: (t(3), {torch.relu: "relu", torch.tanh: "tanh"})),
    (subclasses_walk, lambda: (t(3),)),
    (set_attribute_of_a_module, lambda: (t(2, 3),)),
    (set_argument_read, lambda: (t(3), {"a", "b", "c"})),
    (set_argument_changed, lambda: (t(3), {"a", "b"})),
    (frozenset_argument, lambda: (t(3), frozenset({"a", "b"}))),
    (str_method_from_the_class, lambda: (t(3), "axis")),
    (set_method_from_the_class, lambda: (t(3),)),
    (dict_method_from_the_class, lambda: (t(3),)),
    (lru_cache_returns_the_cached_object, lambda: (t(3),)),
    (lru_cache_object_argument, lambda: (t(3),)),
    (record_function_region, lambda: (t(3),)),
    (record_function_across_a_break, lambda: (t(3),)),
    (generator_passed_to_random_ops, lambda: (t(3), torch.Generator().manual_seed(7))),
    (generator_device_read, lambda: (t(3), torch.Generator().manual_seed(7))),
    (size_arithmetic, lambda: (t(3, 4), 5)),
    (namedtuple_fields_named_index_and_count, lambda: (t(5), torch.tensor([0, 3]))),
]

# Where framegraph falls short of torch.compile, and why (strict xfails).
SHORT = {}


@parity_params(CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check(fn, make_args)
