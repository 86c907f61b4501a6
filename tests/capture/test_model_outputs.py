"""What model libraries build around their tensors, written the way transformers writes it: an
output class that is an OrderedDict and a dataclass, a config whose `__getattribute__` maps
names, per-layer config views, and a key/value cache made inside the forward, all checked
against eager and torch.compile. The last tests use transformers itself."""

from __future__ import annotations

import collections
import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, fields

import pytest
import torch

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend
from .objects import parity, same


# ---- an output class: OrderedDict + @dataclass, with a metaclass ------------------------------------

def _rename_old_names(kwargs):
    if "past" in kwargs:
        kwargs["cache"] = kwargs.pop("past")


class _RenamingMeta(type):
    """Wraps the `__init__` that @dataclass sets on the class, as transformers' does."""

    def __setattr__(cls, name, value):
        if name == "__init__":
            init = value

            @functools.wraps(init)
            def __init__(self, *args, **kwargs):
                _rename_old_names(kwargs)
                init(self, *args, **kwargs)

            value = __init__
        super().__setattr__(name, value)


class Output(collections.OrderedDict, metaclass=_RenamingMeta):
    def __post_init__(self):
        class_fields = fields(self)
        if not len(class_fields):
            raise ValueError(f"{self.__class__.__name__} has no fields.")
        if not all(field.default is None for field in class_fields[1:]):
            raise ValueError(f"{self.__class__.__name__} should not have more than one required field.")
        first = getattr(self, class_fields[0].name)
        others_none = all(self.__dict__.get(field.name) is None for field in class_fields[1:])
        if others_none and not isinstance(first, torch.Tensor) and first is not None:
            self[class_fields[0].name] = first
        else:
            for field in class_fields:
                value = self.__dict__.get(field.name)
                if value is not None:
                    self[field.name] = value

    def __delitem__(self, *args, **kwargs):
        raise Exception(f"You cannot use ``__delitem__`` on a {self.__class__.__name__} instance.")

    def pop(self, *args, **kwargs):
        raise Exception(f"You cannot use ``pop`` on a {self.__class__.__name__} instance.")

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in {field.name for field in fields(self)} and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())

    def __contains__(self, key):
        return super().__contains__(key)

    def get(self, key, default=None):
        return super().get(key, default)


@dataclass
class ModelOut(Output):
    last_hidden_state: torch.Tensor = None
    cache: object = None
    hidden_states: tuple = None
    attentions: tuple = None


def build_output(x):
    return ModelOut(last_hidden_state=x * 2, past=(x, x + 1), hidden_states=(x,))


def output_indexed_by_the_caller(x):
    out = build_output(x)
    return (out, out[0], out["cache"], out[1:], out.to_tuple(), out.last_hidden_state + 1, out.attentions,
            "cache" in out, out.get("attentions", 3), len(out), list(out.keys()), isinstance(out, dict))


def test_output_class():
    parity(output_indexed_by_the_caller, lambda: (torch.arange(4.0),), 1, 0)


# ---- a config: __getattribute__ with an attribute map, and per-layer views -------------------------

@dataclass
class LayerSettings:
    window: int = None


class _PerLayerView(Sequence):
    def __init__(self, config):
        self._config = config

    def __len__(self):
        return self._config.num_layers

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        if index < 0 or index >= len(self):
            raise IndexError("list index out of range")
        return self._config.layer_settings.get(index, self._config)


class Config:
    attribute_map = {"hidden_size": "n_embd", "num_layers": "n_layer"}

    def __init__(self, n_embd=4, n_layer=2, window=None):
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.layer_settings = {} if window is None else {1: LayerSettings(window)}

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    @property
    def per_layer(self):
        return _PerLayerView(self)


# ---- a key/value cache made inside the forward ----------------------------------------------------

class CacheLayer:
    def __init__(self, window=None):
        self.keys = None
        self.values = None
        self.window = window

    def update(self, k, v):
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys, k], dim=-2)
            self.values = torch.cat([self.values, v], dim=-2)
        if self.window is not None:
            return self.keys[..., -self.window:, :], self.values[..., -self.window:, :]
        return self.keys, self.values


LAYER_TYPES = {"full": CacheLayer, "sliding": CacheLayer}


class Cache:
    def __init__(self, config):
        kinds, kwargs = [], []
        for settings in config.per_layer:  # Sequence.__iter__ stops at the IndexError
            window = getattr(settings, "window", None)
            kinds.append("sliding" if window is not None else "full")
            kwargs.append({"window": window} if window is not None else {})
        self.layers = [LAYER_TYPES[kind](**kw) for kind, kw in zip(kinds, kwargs)]

    def update(self, k, v, layer_idx):
        return self.layers[layer_idx].update(k, v)

    def seq_length(self):
        return 0 if self.layers[0].keys is None else self.layers[0].keys.shape[-2]


class Block(torch.nn.Module):
    def __init__(self, config, idx):
        super().__init__()
        self.idx = idx
        self.proj = torch.nn.Linear(config.hidden_size, 2 * config.hidden_size)

    def forward(self, h, cache):
        k, v = self.proj(h).chunk(2, dim=-1)
        k, v = cache.update(k, v, self.idx)
        return h + torch.softmax(h @ k.transpose(-1, -2), dim=-1) @ v


class Model(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.blocks = torch.nn.ModuleList([Block(config, i) for i in range(config.num_layers)])

    def forward(self, h, cache=None):
        if cache is None:
            cache = Cache(self.config)
        start = cache.seq_length()
        hidden = ()
        for block in self.blocks:
            hidden = hidden + (h,)
            h = block(h, cache)
        return ModelOut(last_hidden_state=h, cache=cache, hidden_states=hidden), start


def _model(window):
    torch.manual_seed(0)
    return Model(Config(window=window))


@pytest.mark.parametrize("window", [None, 2])
def test_cache_made_in_the_forward_and_returned(window):
    model = _model(window)
    parity(lambda h: model(h), lambda: (torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(1)),), 1, 0)


def test_cache_handed_back_in():
    """The cache the first call returned is the input of the second: it is mutated in place
    (its layers' lists of tensors grow) and returned again."""
    model = _model(None)
    h = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(1))

    def step(h, cache):
        out, start = model(h, cache)
        return out, start, out.cache is cache

    def make():
        first, _ = model(h)
        return h[:, :1] + 1, first.cache

    parity(step, make, 1, 0)


def test_config_views():
    def read(x, config):
        sizes = [getattr(settings, "window", None) for settings in config.per_layer]
        return x * config.hidden_size + config.num_layers, sizes, len(config.per_layer), config.per_layer[-1].window

    parity(read, lambda: (torch.ones(2), Config(window=3)), 1, 0)


# ---- transformers itself ------------------------------------------------------------------------

def _transformers():
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    from tests.models import zoo  # noqa: F401  (torchvision's schemas first, see zoo.py)
    import transformers

    return transformers


def _check_against_eager_and_torch(fn, make_args, calls=2):
    """framegraph and torch.compile against eager; framegraph's (graphs, break reasons)."""
    import torch._dynamo

    expected = fn(*make_args())
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    compiled = framegraph.compile(fn, backend=counting)
    for call in range(calls):
        same(expected, compiled(*make_args()), f"call {call}")
    assert not counters["fallback"], dict(counters["fallback"])
    reasons = dict(counters["graph_break"])
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch_counting = CountingBackend()
    same(expected, torch.compile(fn, backend=torch_counting)(*make_args()), "torch.compile")
    assert torch_counting.graph_count == 1 and not torch._dynamo.utils.counters["graph_break"]
    torch._dynamo.reset()
    return counting.graph_count, reasons


def _only_import_breaks(graphs: int, reasons: dict) -> None:
    """One graph and no break, as torch.compile; except that ModelOutput.__post_init__
    imports torch inside a function and IMPORT_NAME is not modelled on this branch."""
    assert all("IMPORT_NAME" in reason for reason in reasons), reasons
    if not reasons:
        assert graphs == 1


def test_transformers_output():
    _transformers()
    from transformers.modeling_outputs import BaseModelOutputWithPast

    def forward(x):
        out = BaseModelOutputWithPast(last_hidden_state=x * 2, hidden_states=(x, x + 1))
        return out, out[0], out["hidden_states"], out[1:], out.to_tuple(), out.cache, "cache" in out

    _only_import_breaks(*_check_against_eager_and_torch(forward, lambda: (torch.arange(3.0),)))


def test_transformers_config():
    transformers = _transformers()
    config = transformers.GPT2Config(n_embd=8, n_layer=2, n_head=2)

    def forward(x, config):
        h = x * config.hidden_size + config.num_hidden_layers  # attribute_map names
        if config.n_head == 2 and getattr(config, "no_such_setting", None) is None:
            h = h + config.layer_norm_epsilon
        return h, config.get_text_config(decoder=True) is config, hasattr(config, "use_cache")

    graphs, reasons = _check_against_eager_and_torch(forward, lambda: (torch.arange(3.0), config))
    assert (graphs, reasons) == (1, {})
