"""nn.Module: compiled modules keep their API, forward and submodules inline into one graph,
parameters become inputs rooted at the module, hooks run, and modes behave as in eager."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import framegraph
from framegraph.counters import counters

from tests.models import GPT, gpt_inputs
from .helpers import CountingBackend, assert_same


def run(module, *args, backend=None, **kwargs):
    """Calls a compiled copy and the eager original; compares outputs and module state."""
    framegraph.reset()
    counters.clear()
    eager = module
    twin = copy.deepcopy(module)
    counting = CountingBackend()
    compiled = framegraph.compile(twin, backend=backend or counting, fullgraph=True)
    torch.manual_seed(0)
    expected = eager(*args, **kwargs)
    torch.manual_seed(0)
    actual = compiled(*args, **kwargs)
    assert_same(expected, actual)
    for (name, a), (_, b) in zip(eager.state_dict().items(), twin.state_dict().items()):
        assert_same(a, b, f"state {name}")
    assert not counters["fallback"]
    if backend is None and not module.training:
        # The same call again is a cache hit: no new graph.
        graphs = counting.graph_count
        assert_same(eager(*args, **kwargs), compiled(*args, **kwargs))
        assert counting.graph_count == graphs, "a second identical call recompiled"
    return compiled, counting


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.ones(4))
        self.weight = nn.Parameter(torch.randn(4))
        self.factor = 3

    def forward(self, x):
        return x * self.weight * self.factor + self.offset


class Sliced(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(4)])

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = layer(x).relu()
        for layer in self.layers[::2]:
            x = layer(x)
        return self.layers[-1](x) * len(self.layers[1:])


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})

    def forward(self, x):
        x = self.seq(x)
        for layer in self.layers:
            x = layer(x) + x
        x = self.layers[0](x) + self.layers[-1](x)
        outs = [self.heads[key](x) for key in self.heads]
        outs += [head(x) for _, head in self.heads.items()]
        return torch.cat(outs, dim=-1) * len(self.layers)


class NamedIteration(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3, bias=False)

    def forward(self, x):
        total = 0
        for name, p in self.named_parameters():
            total = total + p.sum() * len(name)
        for _, child in self.named_children():
            x = child(x)
        return x + total + sum(b.sum() for b in self.buffers())


class KwargsForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, *, scale=1.0, bias=None):
        y = self.fc(x) * scale
        return y if bias is None else y + bias


class SubclassSuper(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.fc.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
        self.fc.register_forward_hook(lambda module, args, out: out + 1)

    def forward(self, x):
        return self.fc(x)


class HookedWithKwargs(nn.Module):
    """Hooks registered with_kwargs=True (FSDP2 registers its own this way): the pre-hook
    returns new (args, kwargs), the forward hook reads the kwargs."""

    def __init__(self):
        super().__init__()
        self.fc = KwargsForward()
        self.fc.register_forward_pre_hook(lambda module, args, kwargs: None, with_kwargs=True)
        self.fc.register_forward_pre_hook(
            lambda module, args, kwargs: ((args[0] * 2,), {**kwargs, "scale": 3.0}), with_kwargs=True)
        self.fc.register_forward_hook(lambda module, args, kwargs, out: out + kwargs["scale"], with_kwargs=True)

    def forward(self, x):
        return self.fc(x, scale=2.0)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.ln = nn.LayerNorm(4)

    def forward(self, x):
        y = self.drop(F.relu(self.bn(self.conv(x))))
        return self.ln(y.mean(dim=(2, 3)))


MODULES = [
    (MLP, lambda: (torch.randn(2, 8),), {}, 3),
    (WithBuffers, lambda: (torch.randn(4),), {}, 3),
    (Containers, lambda: (torch.randn(2, 4),), {}, 18),
    (NamedIteration, lambda: (torch.randn(2, 3),), {}, 13),
    (KwargsForward, lambda: (torch.randn(2, 4),), {"scale": 2.0}, 2),
    (KwargsForward, lambda: (torch.randn(2, 4),), {"bias": torch.randn(4)}, 3),
    (lambda: SubclassSuper(4, 4), lambda: (torch.randn(2, 4),), {}, 2),
    (Hooked, lambda: (torch.randn(2, 4),), {}, 3),
    (HookedWithKwargs, lambda: (torch.randn(2, 4),), {}, 4),
    (Sliced, lambda: (torch.randn(2, 4),), {}, 10),
]


@pytest.mark.parametrize("make,make_args,kwargs,ops", MODULES, ids=[f"m{i}" for i in range(len(MODULES))])
def test_module_forward_is_one_graph(make, make_args, kwargs, ops):
    torch.manual_seed(0)
    _, counting = run(make().eval(), *make_args(), **kwargs)
    assert counting.graph_count == 1
    assert counting.op_count == ops


@pytest.mark.parametrize("train", [False, True])
def test_dropout_and_batchnorm_follow_the_mode(train):
    torch.manual_seed(0)
    module = Norms().train(train)
    compiled, counting = run(module, torch.randn(2, 3, 5, 5))
    assert counting.graph_count == 1
    twin = compiled._orig_mod
    if train:
        assert int(twin.bn.num_batches_tracked) == 1
    # Flipping the mode is guarded: the next call recompiles and matches eager again.
    module.train(not train)
    compiled.train(not train)
    x = torch.randn(2, 3, 5, 5)
    torch.manual_seed(1)
    expected = module(x)
    torch.manual_seed(1)
    assert_same(expected, compiled(x))
    assert counting.graph_count == 2


def test_batchnorm_running_stats_update_like_eager_with_aot_eager():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).train()
    run(module, torch.randn(2, 3, 6, 6), backend="aot_eager")


def test_compiled_module_keeps_parameters_state_dict_and_attributes():
    module = MLP()
    compiled = framegraph.compile(module, backend="eager")
    assert isinstance(compiled, nn.Module)
    assert [p is q for p, q in zip(compiled.parameters(), module.parameters())] == [True] * 4
    assert compiled.fc1 is module.fc1
    assert set(compiled.state_dict()) == {f"_orig_mod.{k}" for k in module.state_dict()}
    compiled.eval()
    assert not module.training
    compiled.train()
    assert module.training


def test_two_compiled_modules_of_one_class_share_a_graph():
    """Modules of one class compiled one by one with one backend share the cache entry: the
    parameters are graph inputs, so each module's own weights go through the one graph."""
    framegraph.reset()
    counting = CountingBackend()
    first, second = MLP().eval(), MLP().eval()
    c1 = framegraph.compile(first, backend=counting)
    c2 = framegraph.compile(second, backend=counting)
    x = torch.randn(2, 8)
    for _ in range(3):
        assert_same(first(x), c1(x))
        assert_same(second(x), c2(x))
    assert not torch.equal(first(x), second(x))  # the weights differ, the graph is one
    assert counting.graph_count == 1
    assert counters["recompiles"] == {}


def test_modules_compiled_with_other_backends_or_classes_keep_their_own_caches():
    framegraph.reset()
    one, other = CountingBackend(), CountingBackend()
    x = torch.randn(2, 8)
    for backend in (one, other):
        assert_same(MLP().eval()(x) * 0, framegraph.compile(MLP().eval(), backend=backend)(x) * 0)
    assert (one.graph_count, other.graph_count) == (1, 1)
    blocks = framegraph.compile(torch.nn.Sequential(torch.nn.Linear(8, 8)), backend=one)
    blocks(x)
    assert one.graph_count == 2 and counters["recompiles"] == {}


def _clamped_when_negative(x):
    if x.sum() < 0:  # a data-dependent branch: a graph break (torch.compile counts it inlined only)
        return x.clamp(min=0)
    return x


def _logged(x):
    print("forward")  # a graph break both count wherever it is
    return x


class _BreaksInside(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return _clamped_when_negative(self.linear(x)) * 2


class _PrintsInside(_BreaksInside):
    def forward(self, x):
        return _logged(self.linear(x)) * 2


@pytest.mark.parametrize("kind", ["print", "branch_positive", "branch_negative"])
def test_a_break_inside_a_compiled_module_is_counted_where_it_splits_the_forward(kind, capsys):
    """framegraph's own frame that calls the module is given up quietly when the module would
    break (the module's frames are picked up as torch.compile picks them up), so the break is
    counted once, in the forward it splits: torch.compile's counts."""
    torch.manual_seed(0)
    module = _PrintsInside() if kind == "print" else _BreaksInside()
    x = torch.randn(2, 4) * (-1 if kind == "branch_negative" else 1)
    expected = module(x)
    counts = _counts_beside_torch(module, x, expected)
    if kind == "print":
        assert counts["framegraph"] == counts["torch"], counts
        assert capsys.readouterr().out == "forward\n" * 5
    else:  # torch.compile does not count a data-dependent branch in the frame it splits
        assert counts["framegraph"][0] == counts["torch"][0] and counts["framegraph"][1] == counts["torch"][1] + 1


def _counts_beside_torch(module, x, expected) -> dict[str, tuple[int, int]]:
    """The module compiled by each frontend and called twice, equal to eager's `expected`:
    (graphs, breaks) of each. framegraph's counters are left as the run left them."""
    import torch._dynamo
    from torch._dynamo.utils import counters as torch_counters

    counts = {}
    for frontend in ("torch", "framegraph"):
        framegraph.reset(), torch._dynamo.reset(), counters.clear(), torch_counters.clear()
        counting = CountingBackend()
        compiled = (framegraph.compile if frontend == "framegraph" else torch.compile)(module, backend=counting)
        for _ in range(2):
            assert_same(expected, compiled(x))
        found = counters if frontend == "framegraph" else torch_counters
        counts[frontend] = (counting.graph_count, sum(found["graph_break"].values()))
    torch._dynamo.reset()
    return counts


class _Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.linear(x))


class _Looped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(_Scaled() for _ in range(3))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class _OneByOne(_Looped):
    def forward(self, x):
        x = self.blocks[0](x) * 2
        return self.blocks[2](self.blocks[1](x)) + 1


def _doubled_input(module, args):
    return (args[0] * 2,)


@pytest.mark.parametrize("kind", ["loop", "one_by_one"])
def test_hooks_a_package_runs_eagerly_are_called_outside_the_graph(kind, monkeypatch):
    """A hook a capability package marks as eager (framegraph.distributed marks FSDP2's) is
    never traced: torch.compile's counts with the same hook under torch._dynamo.disable. A
    forward calling hooked modules in a loop runs eagerly and each module's forward compiles
    (no break); called one by one, the forward is split at each call."""
    import torch._dynamo

    from framegraph.variables import handled_callables

    hook = torch._dynamo.disable(_doubled_input)
    monkeypatch.setattr(handled_callables, "_EAGER_HOOK_TESTS", [lambda h: h is hook])
    torch.manual_seed(0)
    module = _Looped() if kind == "loop" else _OneByOne()
    for block in module.blocks:
        block.register_forward_pre_hook(hook)
    x = torch.randn(2, 4)
    expected = module(x)
    counts = _counts_beside_torch(module, x, expected)
    eager_frames = sum(counters["eager_frames"].values())
    assert counts["framegraph"] == counts["torch"], counts
    assert counts["framegraph"][1] == (0 if kind == "loop" else 3), counts
    assert eager_frames == (kind == "loop")  # the forward with the loop, once


def test_a_new_hook_recompiles():
    torch.manual_seed(0)
    module = MLP()
    compiled, counting = run(module, torch.randn(2, 8))
    handle = compiled._orig_mod.fc1.register_forward_hook(lambda m, a, out: out * 0)
    x = torch.randn(2, 8)
    assert_same(compiled._orig_mod(x), compiled(x))
    assert counting.graph_count == 2
    handle.remove()


def test_gpt_compiles_to_exactly_one_graph_on_every_backend():
    torch.manual_seed(0)
    model = GPT(layers=2).eval()
    idx = gpt_inputs(model)
    for backend in ("eager", "aot_eager", "inductor"):
        framegraph.reset()
        counters.clear()
        compiled = framegraph.compile(copy.deepcopy(model), backend=backend, fullgraph=True)
        assert_same(model(idx, temperature=0.7), compiled(idx, temperature=0.7))
        assert counters["stats"]["unique_graphs"] == 1, backend


def test_gpt_gradients_match_eager_with_aot_eager():
    torch.manual_seed(0)
    model = GPT(layers=2)
    twin = copy.deepcopy(model)
    idx = gpt_inputs(model)
    F.cross_entropy(model(idx).flatten(0, 1), idx.flatten()).backward()
    compiled = framegraph.compile(twin, backend="aot_eager", fullgraph=True)
    F.cross_entropy(compiled(idx).flatten(0, 1), idx.flatten()).backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=name)
    assert twin.head.weight is twin.tok.weight, "the tied head stays tied"


def test_gpt_guards_are_each_needed(capfd):
    """Every guard printed for the LM protects something the trace used: a changed value
    of any kind it names makes the next call recompile (spot-checked per kind)."""
    torch.manual_seed(0)
    model = GPT(layers=2).eval()
    idx = gpt_inputs(model)
    framegraph.reset()
    framegraph.set_logs("guards")
    try:
        compiled = framegraph.compile(model, backend="eager", fullgraph=True)
        compiled(idx)
    finally:
        framegraph.set_logs()
    guards = [line for line in capfd.readouterr().err.splitlines() if "] - " in line]
    kinds = {"check_tensor", "training", "forward_pre_hooks", "forward is", "heads"}
    assert guards and all(any(k in g for g in guards) for k in kinds), guards[:5]
    model.blocks[0].attn.heads = 2  # a guarded attribute
    compiled(idx)
    assert counters["stats"]["unique_graphs"] >= 2


def test_graph_call_reads_each_shared_module_once():
    """The replacement code loads parameters through temporaries: `_modules['blocks']` and
    each block are read once, not once per parameter below them, and the results still
    match eager on the next (cached) call."""
    import dis

    from framegraph.eval_frame import get_cache_entries

    model = GPT(layers=2).eval()
    compiled, counting = run(model, gpt_inputs(model))
    code = get_cache_entries(compiled._call.__wrapped__.__code__)[0].code
    reads = [i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_ATTR", "LOAD_METHOD")]
    modules = [m for m in model.modules() if m is not model]
    # one `_modules` read per module that has children, at most one `_parameters` per
    # module that owns some (a tied weight is reached once): never one per parameter.
    assert reads.count("_modules") == sum(1 for m in [model, *modules] if m._modules)
    assert reads.count("_parameters") <= sum(1 for m in modules if m._parameters)
    assert reads.count("_parameters") < len(list(model.parameters()))
    assert counting.graph_count == 1


def test_parameters_of_a_compiled_module_can_still_be_swapped():
    """The fake mode's memos hold weak references to the real tensors they converted;
    `swap_tensors` (and `module.to()` under swap_module_params_on_conversion) refuses a tensor
    with weak references, so a compiled module must not leave any behind."""
    import weakref

    model = MLP()
    compiled, counting = run(model, torch.randn(2, 8))
    assert not any(weakref.getweakrefs(p) for p in compiled.parameters())
    torch.utils.swap_tensors(compiled.fc1.weight, nn.Parameter(torch.ones(16, 8)))
    x = torch.randn(2, 8)
    assert_same(model.fc2(F.relu(F.linear(x, torch.ones(16, 8), model.fc1.bias))), compiled(x))
