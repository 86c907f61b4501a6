"""torch.compile routed to framegraph (`framegraph.cli.routing.routed`, what `python -m framegraph
run` runs a program in): the call and its arguments reach framegraph, and each torch._dynamo.config
setting framegraph maps changes framegraph's graphs and breaks as it changes torch.compile's, on a
program that the setting changes, set directly and as `config.patch`."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters as torch_counters

import framegraph
from framegraph.cli import routing
from framegraph.cli.routing import routed
from framegraph.counters import counters
from tests.capture.helpers import CountingBackend


def scalar_out(x):
    return x * x.sum().item()


def nonzero(x):
    return torch.nonzero(x) + 1


def by_shape(x):
    return torch.relu(x) * 2


def by_int(x, n):
    return x * n


def by_float(x, f):
    return x * f


def by_text(x, s):
    return x + len(s)


def _calls(setting):
    if setting in ("capture_scalar_outputs", "capture_dynamic_output_shape_ops"):
        fn = scalar_out if setting == "capture_scalar_outputs" else nonzero
        return fn, [(torch.tensor([1.0, 0.0, 2.0]),)]
    if setting in ("automatic_dynamic_shapes", "assume_static_by_default"):
        return by_shape, [(torch.ones(n, 3),) for n in (2, 3, 4)]
    if setting == "specialize_int":
        return by_int, [(torch.ones(3), n) for n in (2, 3, 4)]
    if setting == "specialize_float":
        return by_float, [(torch.ones(3), f) for f in (2.0, 3.0, 4.0)]
    return by_text, [(torch.ones(3), s) for s in ("a", "bb", "ccc", "dddd")]  # the recompile limits


# setting -> the value that changes the program's graphs (torch.compile's default is the other)
SETTINGS = {
    "capture_scalar_outputs": True,
    "capture_dynamic_output_shape_ops": True,
    "automatic_dynamic_shapes": False,
    "assume_static_by_default": False,
    "specialize_int": True,
    "specialize_float": True,
    "recompile_limit": 2,
    "cache_size_limit": 2,
    "accumulated_recompile_limit": 2,
}


def _torch_counts(fn, calls) -> tuple[int, int]:
    torch._dynamo.reset()
    torch_counters.clear()
    backend = CountingBackend()
    compiled = torch.compile(fn, backend=backend)
    outputs = [compiled(*args) for args in calls]
    return backend.graph_count, sum(torch_counters["graph_break"].values()), outputs


def _routed_counts(fn, calls) -> tuple[int, int]:
    framegraph.reset()
    counters.clear()
    backend = CountingBackend()
    with routed(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recompile-limit warning
        compiled = torch.compile(fn, backend=backend)
        assert isinstance(compiled, framegraph.api.OptimizedModule) or "framegraph" in type(compiled).__module__ \
            or getattr(compiled, "__wrapped__", None) is fn
        outputs = [compiled(*args) for args in calls]
    return backend.graph_count, sum(counters["graph_break"].values()), outputs


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_mapped_setting_changes_framegraph_as_it_changes_torch_compile(setting):
    fn, calls = _calls(setting)
    expected = [fn(*args) for args in calls]
    found = {}
    for label, patch in (("default", {}), ("set", {setting: SETTINGS[setting]})):
        with torch._dynamo.config.patch(patch):
            theirs = _torch_counts(fn, calls)
            ours = _routed_counts(fn, calls)
        for outputs in (theirs[2], ours[2]):
            for e, a in zip(expected, outputs):
                torch.testing.assert_close(a, e)
        found[label] = (ours[:2], theirs[:2])
        assert ours[:2] == theirs[:2], (setting, label, found)
    assert found["default"] != found["set"], f"{setting}: the case does not show the setting ({found})"
    torch._dynamo.reset()


def test_the_config_is_framegraph_s_own_again_after_the_run():
    before = {name: getattr(framegraph.config, name) for name in routing.MAPPED.values()}
    with torch._dynamo.config.patch(recompile_limit=3, capture_scalar_outputs=True):
        with routed():
            routing.sync_dynamo_config(before)
            assert framegraph.config.recompile_limit == 3 and framegraph.config.capture_scalar_outputs
    assert {name: getattr(framegraph.config, name) for name in routing.MAPPED.values()} == before
    assert torch.compile is not routing.torch_compile


def test_optimize_ddp_is_copied():
    baseline = {name: getattr(framegraph.config, name) for name in routing.MAPPED.values()}
    with torch._dynamo.config.patch(optimize_ddp=False):
        routing.sync_dynamo_config(baseline)
        assert framegraph.config.optimize_ddp is False
    routing.sync_dynamo_config(baseline)
    assert framegraph.config.optimize_ddp is baseline["optimize_ddp"]


def test_a_setting_without_an_equivalent_is_named_once():
    routing._warned.clear()
    baseline = {name: getattr(framegraph.config, name) for name in routing.MAPPED.values()}
    with torch._dynamo.config.patch(force_parameter_static_shapes=False):
        with pytest.warns(UserWarning, match="force_parameter_static_shapes = False has no framegraph equivalent"):
            routing.sync_dynamo_config(baseline)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            routing.sync_dynamo_config(baseline)  # once


def test_torch_compile_arguments_reach_framegraph():
    def f(x):
        print("break")
        return x + 1

    x = torch.ones(2)
    with routed():
        with pytest.raises(framegraph.exc.Unsupported):
            torch.compile(f, backend="eager", fullgraph=True)(x)
        assert torch.compile(f, disable=True) is f
        with pytest.raises(RuntimeError, match="no backend 'not_a_backend'"):
            torch.compile(f, backend="not_a_backend")
        with pytest.raises(RuntimeError, match="Either mode or options"):
            torch.compile(f, mode="max-autotune", options={"max_autotune": True})
        with pytest.raises(RuntimeError, match="Unexpected optimization option not_an_option"):
            torch.compile(f, options={"not_an_option": 1})
        seen = {}

        def custom(gm, example_inputs, **kwargs):
            seen.update(kwargs)
            return gm.forward
        torch.compile(lambda x: x * 2, backend=custom, options={"a": 1})(x)
        assert seen == {"options": {"a": 1}}
        module = torch.nn.Linear(2, 2)
        module.compile(backend="eager")  # nn.Module.compile goes through torch.compile
        counters.clear()
        torch.testing.assert_close(module(x), torch.nn.functional.linear(x, module.weight, module.bias))
        assert counters["stats"]["unique_graphs"] == 1
        counters.clear()
        torch._dynamo.optimize("eager")(lambda x: x.sin())(x)
        assert counters["stats"]["unique_graphs"] == 1
