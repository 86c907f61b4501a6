"""Objects the way transformers' configs are, compared with eager and torch.compile
(tests/capture/objects.py): copies of objects whose classes hook attribute access
(`PreTrainedConfig.get_text_config` deep-copies the config in a forward, reads its
`to_dict()`, itself a deep copy of `__dict__`, and renames attributes on the copy), and
huggingface_hub's strict dataclasses, whose `__setattr__` validates the value against the
field's annotation."""

from __future__ import annotations

import copy
import dataclasses
import typing

import pytest
import torch

from .objects import AttributeMapped, framegraph_runs, parity


def x():
    return torch.randn(3, generator=torch.Generator().manual_seed(0))


class MappedConfig(AttributeMapped):
    """Reads and writes go through `attribute_map`, with super() in both hooks (as
    PreTrainedConfig does)."""

    attribute_map = {"layers": "num_layers"}

    def __init__(self, num_layers, decoder_layers, scale):
        self.num_layers = num_layers
        self.decoder_layers = decoder_layers
        self.scale = scale
        self.sizes = [num_layers, decoder_layers]

    def __eq__(self, other):  # for the break-everywhere fuzz, which compares results with ==
        return type(self) is type(other) and vars(self) == vars(other)


def decoder_view(x, config):
    # get_text_config(decoder=True) on a flat encoder-decoder config
    copied = copy.deepcopy(config)
    for key in copy.deepcopy(copied.__dict__):
        if key.startswith("decoder"):
            value = getattr(copied, key)
            delattr(copied, key)
            setattr(copied, "layers", value)
    copied.sizes.append(copied.layers)
    return x * copied.layers * copied.scale, copied, config


def shallow_and_deep(x, config):
    shallow = copy.copy(config)
    shallow.scale = 5.0
    deep = copy.deepcopy(config)
    deep.sizes.append(9)
    return x * shallow.scale + len(deep.sizes), shallow, deep, config


def copy_of_a_copy(x, config):
    first = copy.deepcopy(config)
    first.layers = 7
    second = copy.deepcopy(first)  # an object made while tracing: its hooks run in the trace
    return x + second.layers + second.num_layers, first, second


def instance_dict_copy(x, config):
    state = copy.deepcopy(vars(config))
    state["sizes"].append(4)
    return x * state["scale"], state, config


def x_and_config():
    return x(), MappedConfig(2, 3, 0.5)


COPY_CASES = [(decoder_view, x_and_config), (shallow_and_deep, x_and_config), (copy_of_a_copy, x_and_config),
              (instance_dict_copy, x_and_config)]


@pytest.mark.parametrize("fn,make_args", COPY_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_copies_of_objects_with_attribute_hooks(fn, make_args):
    parity(fn, make_args, 1, 0)


class DeepcopyHook(MappedConfig):
    """Its lookup answers for __deepcopy__: the copy module would call that instead."""

    def __getattribute__(self, key):
        if key == "__deepcopy__":
            return lambda memo: MappedConfig(1, 1, 1.0)
        return super().__getattribute__(key)


def test_a_lookup_hook_that_answers_for_deepcopy_is_left_to_the_copy_module():
    def fn(x, config):
        copied = copy.deepcopy(config)
        return x * copied.scale, copied

    framegraph_runs(fn, lambda: (x(), DeepcopyHook(2, 3, 0.5)), 1, 1)  # torch.compile recurses without end here


# ---- huggingface_hub's strict dataclasses --------------------------------------------------------

def _strict_config():
    strict = pytest.importorskip("huggingface_hub.dataclasses").strict

    @strict
    @dataclasses.dataclass
    class StrictConfig:
        hidden: int = 4
        name: str = "tiny"

    return StrictConfig


def test_a_strict_dataclass_setattr_is_traced():
    """Setting an attribute no validator checks, as get_text_config does on its copy."""
    cls = _strict_config()

    def fn(x, config):
        config.extra = 3
        copied = copy.deepcopy(config)
        copied.renamed = config.hidden
        return x * copied.renamed + config.extra, copied

    framegraph_runs(fn, lambda: (x(), cls()), 1, 0)


def test_a_strict_dataclass_validates_what_is_stored():
    """A field with a validator: the annotation is read from the dataclass Field (a __slots__
    object) and the value checked against it."""
    cls = _strict_config()

    def fn(x, config):
        config.hidden = config.hidden * 2
        config.name = "wide"
        return x * config.hidden, config

    framegraph_runs(fn, lambda: (x(), cls()), 1, 0)


# ---- annotations ---------------------------------------------------------------------------------

def describe(x, annotation):
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if int in args or annotation is int:
        return x + 1, origin, args
    return x - 1, origin, args


@pytest.mark.parametrize("annotation", [int, typing.Optional[int], int | None, list[int], typing.Dict[str, int]],
                         ids=["int", "Optional", "union", "list", "Dict"])
def test_annotations_are_constants(annotation):
    parity(describe, lambda: (x(), annotation), 1, 0)
