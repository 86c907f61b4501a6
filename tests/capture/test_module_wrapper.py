"""Compiled modules behave as the module they wrap (and as torch.compile's wrapper does), and
the trace reads and calls modules exactly as Python and torch do: `__call__` overrides,
attribute precedence, tables whose keys or order the program depends on, identity and type
queries. Each case runs eagerly, under framegraph and, where the wrapper's conventions or the
graph counts are compared, under torch.compile."""

import collections
import copy

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same


def compile_with(frontend: str, fn, backend):
    """`fn` compiled by framegraph or torch.compile, with fresh caches and counters."""
    if frontend == "framegraph":
        framegraph.reset()
        counters.clear()
        return framegraph.compile(fn, backend=backend)
    import torch._dynamo

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return torch.compile(fn, backend=backend)


def break_count(frontend: str) -> int:
    if frontend == "framegraph":
        return sum(counters["graph_break"].values())
    import torch._dynamo

    return sum(torch._dynamo.utils.counters["graph_break"].values())


# ---- 1. the compiled module calls its own hooks, then the module ------------------------------

def test_hooks_on_the_compiled_module_itself_run_like_torch_compile():
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    results = {}
    for frontend in ("framegraph", "torch"):
        torch.manual_seed(0)
        module = nn.Linear(3, 3)
        compiled = compile_with(frontend, module, "eager")
        compiled.register_forward_pre_hook(lambda m, args: (args[0] + 1,))
        handle = compiled.register_forward_hook(lambda m, args, out: out * 2)
        results[frontend] = compiled(x)
        assert_same(module(x + 1) * 2, results[frontend], frontend)
        handle.remove()
        assert_same(module(x + 1), compiled(x), frontend)
    assert_same(results["torch"], results["framegraph"])


# ---- 2. attribute writes on the compiled module reach the module --------------------------------

class Factor(nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = 2.0  # a float: specialised by both frontends, so each value is a graph

    def forward(self, x):
        return x * self.factor if self.training else x - self.factor


def test_attribute_writes_go_to_the_module_and_recompile_like_torch_compile():
    x = torch.randn(4)
    for frontend in ("framegraph", "torch"):
        module = Factor()
        counting = CountingBackend()
        compiled = compile_with(frontend, module, counting)
        assert_same(module(x), compiled(x))
        compiled.factor = 7.0
        assert module.factor == 7.0 and "factor" not in vars(compiled), frontend
        assert_same(module(x), compiled(x))
        assert counting.graph_count == 2, frontend  # the value the trace read changed
        compiled.training = False
        assert module.training is False and compiled.training is False, frontend
        assert_same(module(x), compiled(x))
        module.train()
        assert compiled.training is True, frontend
        del compiled.factor
        assert not hasattr(module, "factor"), frontend
        module.factor = 3.0
        assert_same(module(x), compiled(x))
        if frontend == "framegraph":  # torch.compile makes the float a symbol on its second graph
            assert counting.graph_count == 4, counting.graph_count
        assert break_count(frontend) == 0, frontend


# ---- 3. introspection follows torch.compile's wrapper -------------------------------------------

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("running", torch.zeros(2))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
        self.scale = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return self.lin(x) * self.scale + self.running + self.scratch


def test_introspection_of_the_compiled_module_matches_torch_compile():
    module = Net()
    ours = compile_with("framegraph", module, "eager")
    theirs = compile_with("torch", module, "eager")
    assert repr(ours) == repr(theirs)
    assert set(dir(module)) <= set(dir(ours))
    assert {"lin", "running", "scratch", "scale", "_orig_mod"} <= set(dir(ours)) & set(dir(theirs))
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert all(p is q for p, q in zip(ours.parameters(), module.parameters()))
    assert len(list(ours.parameters())) == len(list(module.parameters()))
    assert ours.lin is module.lin and ours.running is module.running


# ---- 4. the container protocol, on the compiled module and in the trace --------------------------

def empty_list():
    return nn.ModuleList()


def module_list():
    return nn.ModuleList([nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 2)])


def named_sequential():
    return nn.Sequential(collections.OrderedDict([("first", nn.Linear(2, 2)), ("act", nn.Tanh()),
                                                  ("last", nn.Linear(2, 2))]))


def module_dict():
    return nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Tanh()})


CONTAINERS = [empty_list, module_list, named_sequential, module_dict]


@pytest.mark.parametrize("make", CONTAINERS)
def test_a_compiled_container_is_the_container(make):
    torch.manual_seed(0)
    module = make()
    ours = compile_with("framegraph", module, "eager")
    theirs = compile_with("torch", module, "eager")
    assert bool(ours) is bool(module) is bool(theirs)
    assert len(ours) == len(module) == len(theirs)
    assert list(ours) == list(module)
    keys = list(module.keys()) if isinstance(module, nn.ModuleDict) else list(range(-len(module), len(module)))
    for key in keys:
        assert ours[key] is module[key]
    for item in [*keys, *module.children(), nn.ReLU(), "a", "z"]:
        assert (item in ours) == (item in module)
    missing = "z" if isinstance(module, nn.ModuleDict) else len(module)
    expected = _raised(lambda: module[missing])
    with pytest.raises(type(expected)) as error:
        ours[missing]
    assert str(error.value) == str(expected)
    if keys:
        replacement = nn.ReLU()
        ours[keys[0]] = replacement
        assert module[keys[0]] is replacement
        size = len(module)
        del ours[keys[-1]]
        assert len(module) == size - 1


def _raised(fn) -> BaseException:
    try:
        fn()
    except Exception as error:
        return error
    raise AssertionError("expected an exception")
