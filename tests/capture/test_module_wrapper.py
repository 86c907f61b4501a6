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

from .frontends import break_count, compile_with
from .helpers import CountingBackend, assert_same


def run_both(fn, *args):
    """Calls `fn` eagerly and compiled by both frontends on deep copies of `args`; checks the
    results and the state left in the arguments; returns {frontend: (graphs, ops, breaks)}."""
    expected_args = copy.deepcopy(args)
    expected = fn(*expected_args)
    counts = {}
    for frontend in ("framegraph", "torch"):
        counting = CountingBackend()
        actual_args = copy.deepcopy(args)
        actual = compile_with(frontend, fn, counting)(*actual_args)
        assert_same(expected, actual, f"{frontend} result")
        for expected_arg, actual_arg in zip(expected_args, actual_args):
            if isinstance(expected_arg, nn.Module):
                assert [m.training for m in expected_arg.modules()] == [m.training for m in actual_arg.modules()]
                assert_same(expected_arg.state_dict(), actual_arg.state_dict(), f"{frontend} state")
        counts[frontend] = (counting.graph_count, counting.op_count, break_count(frontend))
    assert not counters["fallback"], dict(counters["fallback"])
    return counts


# ---- 1. the compiled module calls the module as `module(*args)` does --------------------------

class Scaled(nn.Module):
    """Overrides __call__ and goes on through Module.__call__."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def __call__(self, x):
        return super().__call__(x) * 5

    def forward(self, x):
        return x * self.w * 3


class Bypass(nn.Module):
    """Overrides __call__ and never reaches forward."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def __call__(self, x):
        return self.lin(x).relu() - 1

    def forward(self, x):
        return x


class OwnCallImpl(nn.Module):
    """Keeps Module.__call__ but overrides the _call_impl it calls."""

    def _call_impl(self, x):
        return self.forward(x) * 2

    def forward(self, x):
        return x + 1


class Holder(nn.Module):
    """The overrides on submodules, called from a traced forward."""

    def __init__(self):
        super().__init__()
        self.scaled, self.bypass, self.own = Scaled(), Bypass(), OwnCallImpl()

    def forward(self, x):
        return self.scaled(x) + self.bypass(x) - self.own(x)


# (module factory, argument factory, forward's keyword arguments): the break-everywhere sweep
# runs these too
CALL_OVERRIDES = [(make, lambda: (torch.randn(2, 3),), {}) for make in (Scaled, Bypass, OwnCallImpl, Holder)]


@pytest.mark.parametrize("make", [case[0] for case in CALL_OVERRIDES])
def test_a_call_override_is_followed_like_torch_compile(make):
    torch.manual_seed(0)
    counts = run_both(lambda m, x: m(x), make(), torch.randn(2, 3))
    assert counts["framegraph"][0] == counts["torch"][0] == 1
    assert counts["framegraph"][2] == counts["torch"][2] == 0
    # The compiled module itself (its own entry frame) follows the override too.
    for frontend in ("framegraph", "torch"):
        torch.manual_seed(0)
        module = make()
        counting = CountingBackend()
        x = torch.randn(2, 3)
        assert_same(module(x), compile_with(frontend, module, counting)(x), frontend)
        assert counting.graph_count == 1 and break_count(frontend) == 0, frontend
    assert counts["framegraph"][1] == counts["torch"][1]


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
        self.factor = 2.0  # a float: a constant of the first graph, a symbol once it has changed

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
        # The second graph took the float as an input (automatic dynamic floats), so the
        # eval-mode graph serves 3.0 too, in both frontends.
        assert counting.graph_count == 3, (frontend, counting.graph_count)
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


def walk_sequence(layers, x):
    if not layers:
        return x - 1
    for layer in layers:
        x = layer(x)
    return layers[-1](x) * len(layers) + (layers[0] in layers) + (layers[-1] in [layers[0]])


def walk_dict(layers, x):
    for key in layers:
        x = layers[key](x)
    for key, layer in layers.items():
        x = layer(x) + len(key)
    return x * len(layers) + int("a" in layers) - int("z" in layers) + len(list(layers.keys()))


def grow(module, layer):
    if isinstance(module, nn.ModuleDict):
        module[f"new{len(module)}"] = layer
    else:
        module.append(layer)


def _module_and_input(make, *shape):
    return lambda: (make(), torch.randn(*shape))


# (fn, argument factory)
CONTAINER_WALKS = [(walk_dict if make is module_dict else walk_sequence, _module_and_input(make, 3, 2))
                   for make in CONTAINERS]


@pytest.mark.parametrize("make", CONTAINERS)
def test_containers_in_the_trace_and_their_growth(make):
    torch.manual_seed(0)
    fn = walk_dict if make is module_dict else walk_sequence
    module, x = make(), torch.randn(3, 2)
    counts = run_both(fn, module, x)
    assert counts["framegraph"][0] == counts["torch"][0] == 1
    assert counts["framegraph"][2] == 0
    # Growing the container changes what the trace iterated and measured: it recompiles.
    counting = CountingBackend()
    compiled = compile_with("framegraph", fn, counting)
    twin = copy.deepcopy(module)
    assert_same(fn(module, x), compiled(twin, x))
    for _ in range(2):
        layer = nn.Linear(2, 2)
        grow(module, layer)
        grow(twin, copy.deepcopy(layer))
        assert_same(fn(module, x), compiled(twin, x))
    assert counting.graph_count == 3 and break_count("framegraph") == 0


def float_index(layers, x):
    return layers[1.0](x)


def out_of_range(layers, x):
    return layers[-5](x)


def list_key(layers, x):
    return layers[["a"]](x)


@pytest.mark.parametrize("make", [module_list, named_sequential, module_dict])
@pytest.mark.parametrize("index", [float_index, out_of_range, list_key])
def test_a_bad_index_raises_what_eager_raises(make, index):
    framegraph.reset()
    counters.clear()
    expected = _raised(lambda: index(make(), torch.randn(2)))
    with pytest.raises(type(expected)) as error:
        framegraph.compile(index, backend="eager")(make(), torch.randn(2))
    assert str(error.value) == str(expected)
    assert not counters["fallback"], dict(counters["fallback"])


# ---- 5. attribute precedence: object.__getattribute__, then Module.__getattr__ -------------------

class MethodOverSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self._modules["act"] = nn.ReLU()  # behind the class's back: the method still wins

    def act(self, x):
        return x * 10

    def forward(self, x):
        return self.act(x)


class ClassAttributeOverTables(nn.Module):
    scale, shift, block = 3.0, 0.5, 2

    def __init__(self):
        super().__init__()
        self._buffers["scale"] = torch.full((2,), 7.0)
        self._parameters["shift"] = nn.Parameter(torch.full((2,), 4.0))
        self._modules["block"] = nn.Identity()

    def forward(self, x):
        return x * self.scale + self.shift * self.block


class PropertyOverInstanceDictOverParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self._parameters["p"] = nn.Parameter(torch.ones(2))
        self.__dict__["p"] = torch.full((2,), 4.0)
        self._parameters["q"] = nn.Parameter(torch.ones(2))
        self.__dict__["q"] = torch.full((2,), 5.0)

    @property
    def p(self):
        return torch.full((2,), 9.0)

    def forward(self, x):
        return x * self.p + self.q


class TablesInOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self._parameters["t"] = nn.Parameter(torch.full((2,), 2.0))
        self._buffers["t"] = torch.full((2,), 3.0)
        self._buffers["u"] = torch.full((2,), 4.0)
        self._modules["u"] = nn.Identity()

    def forward(self, x):
        return x * self.t + self.u


PRECEDENCE = [(make, lambda: (-torch.ones(2),), {}) for make in (
    MethodOverSubmodule, ClassAttributeOverTables, PropertyOverInstanceDictOverParameter, TablesInOrder)]


@pytest.mark.parametrize("make", [case[0] for case in PRECEDENCE])
def test_attribute_precedence_is_pythons(make):
    counts = run_both(lambda m, x: m(x), make(), -torch.ones(2))
    assert counts["framegraph"][0] == 1 and counts["framegraph"][2] == 0


class Lookups(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.full((2,), 3.0))
        self.sub = nn.Linear(2, 2)
        self.register_module("gate", None)

    def forward(self, x):
        y = self.sub(x) * self.buf
        gate = self.gate
        return y if gate is None else y * gate


def shadow_with_instance_attribute(m):
    m.__dict__["buf"] = torch.full((2,), 5.0)


def parameter_before_the_buffer(m):
    m._parameters["buf"] = nn.Parameter(torch.full((2,), 6.0))


def buffer_before_the_submodule(m):
    m._buffers["gate"] = torch.full((2,), 7.0)


def class_attribute_of_that_name(m):
    type(m).buf = 1.5


@pytest.mark.parametrize("change", [shadow_with_instance_attribute, parameter_before_the_buffer,
                                    buffer_before_the_submodule, class_attribute_of_that_name])
def test_a_change_of_what_an_attribute_resolves_to_recompiles(change):
    torch.manual_seed(0)
    module, x = type("Fresh", (Lookups,), {})(), torch.randn(2)  # a class of its own to change
    counting = CountingBackend()
    compiled = compile_with("framegraph", lambda m, x: m(x), counting)
    assert_same(module(x), compiled(module, x))
    change(module)
    assert_same(module(x), compiled(module, x))
    assert counting.graph_count == 2 and break_count("framegraph") == 0


# ---- 6. the order of a module's tables is guarded where the trace iterated it -------------------

class OrderDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.full((2,), 2.0))
        self.b = nn.Parameter(torch.full((2,), 3.0))
        self.register_buffer("c", torch.full((2,), 4.0))
        self.register_buffer("long_name", torch.full((2,), 5.0))
        self.first, self.second = nn.Linear(2, 2), nn.Tanh()

    def forward(self, x):
        for p in self.parameters(recurse=False):
            x = x * p + 1
        for name, b in self.named_buffers():
            x = x * b - len(name)
        for child in self.children():
            x = child(x)
        return x


def reversed_table(module, store):
    setattr(module, store, dict(reversed(list(getattr(module, store).items()))))


def test_reordering_a_table_the_trace_iterated_recompiles_like_torch_compile():
    torch.manual_seed(0)
    x = torch.randn(2)
    graphs = {}
    for frontend in ("framegraph", "torch"):
        module = OrderDependent()
        counting = CountingBackend()
        compiled = compile_with(frontend, module, counting)
        assert_same(module(x), compiled(x))
        for store in ("_parameters", "_buffers", "_modules"):
            reversed_table(module, store)
            assert_same(module(x), compiled(x), f"{frontend}, {store} reversed")
        graphs[frontend] = counting.graph_count
        assert break_count(frontend) == 0
    assert graphs["framegraph"] == graphs["torch"] == 4


def reads_state(x):
    if torch.backends.mha.get_fastpath_enabled():
        x = x + 1
    if torch.autograd._profiler_enabled():
        x = x - 1
    return x


def test_explain_lists_a_guard_for_each_piece_of_state_the_trace_read():
    """Table orders, process-wide switches and module globals read by the trace are listed;
    a switch no guard covers (the profiler's) is a break, listed with its reason."""
    torch.manual_seed(0)
    out = framegraph.explain(OrderDependent())(torch.randn(2))
    guards = [g for entry in out.out_guards for g in entry]
    for table, keys in (("_parameters", ["a", "b"]), ("_buffers", ["c", "long_name"]),
                        ("_modules", ["first", "second"])):
        assert f"list(L['module']._{table[1:]}.keys()) == {keys!r}" in guards, table
    assert "___check_global_state()" in guards
    out = framegraph.explain(reads_state)(torch.randn(2))
    guards = [g for entry in out.out_guards for g in entry]
    assert any("['torch.backends.mha']._is_fastpath_enabled is True" in g for g in guards), guards
    assert len(out.break_reasons) == 1 and "_profiler_enabled" in out.break_reasons[0].reason


# ---- 7. identity, type and mode queries on modules ----------------------------------------------

class Mixin:
    pass


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.norm = nn.LayerNorm(2)

    def forward(self, x):
        return self.norm(self.lin(x))


class Block(Layer, Mixin):
    pass


class Custom(Layer):
    def forward(self, x):
        return self.lin(x) * 2


def name_in_modules(m, x):
    return x * ("lin" in m._modules) - int("nope" in m._modules)


def module_in_list(m, x):
    return x * (m.lin in [m.norm, m.lin]) + (m.norm in [m.lin]) + (m.lin not in (m.norm,))


def forward_is_the_base_one(m, x):
    return m(x) if type(m).forward is Layer.forward else x + 1


def bound_forward_is(m, x):
    return x * (m.forward.__func__ is Layer.forward) + (m.lin.forward.__func__ is nn.Linear.forward)


def identities(m, x):
    seen = {id(m): 1, id(m.lin): 2}
    same = m.lin is m.lin
    different = m.lin is not m.norm
    return x * seen[id(m.lin)] + same + different + (m.lin is None)


def class_of(m, x):
    return x * (m.__class__ is Block) + len(m.__class__.__name__) + len(type(m).__name__)


def instance_checks(m, x):
    return x * isinstance(m, Mixin) + isinstance(m.lin, Mixin) + isinstance(m, Layer)


def mode_flips(m, x):
    was = m.training
    m.train(not was)
    out = x * m.lin.training + m.training
    m.train(was)
    return out + m.norm.training


def attribute_defaults(m, x):
    return x * getattr(m, "missing", 3) + getattr(m.lin, "bias") + (getattr(m, "norm", None) is not None)


QUERIES = [name_in_modules, module_in_list, forward_is_the_base_one, bound_forward_is, identities,
           class_of, instance_checks, mode_flips, attribute_defaults]


# (fn, argument factory)
MODULE_QUERIES = [(query, _module_and_input(make, 2)) for make in (Block, Custom) for query in QUERIES]


@pytest.mark.parametrize("query, make_args", MODULE_QUERIES,
                         ids=[f"{query.__name__}-{make.__name__}" for make in (Block, Custom) for query in QUERIES])
def test_module_queries_stay_in_one_graph_like_torch_compile(query, make_args):
    torch.manual_seed(0)
    counts = run_both(query, *make_args())
    assert counts["framegraph"][0] == counts["torch"][0] == 1
    assert counts["framegraph"][2] == counts["torch"][2] == 0
    assert counts["framegraph"][1] == counts["torch"][1]
