"""Guard subtree skips (framegraph/_C/guard_memo.c): after a few cache hits, a compiled
module's guard program jumps over the whole subtree of checks on the module, on the strength
of the dict versions and class tags it rests on. Every change a guard protected against must
still be caught: each mutation below is made deep in an armed subtree, to an eager model and
its compiled twin alike, and the twin must give eager's results and recompile exactly as many
times as the change requires (0 when the change does not touch what the graph assumed: the
skip then re-arms).

`MODELS` are also break-everywhere fuzz cases (module factory, argument factory, kwargs).
`MUTATIONS` are named scenarios, not fuzz cases."""

from __future__ import annotations

import copy
import gc
import weakref

import pytest
import torch
from torch import nn

import framegraph
from framegraph.counters import counters
from framegraph.eval_frame import get_cache_entries

from .helpers import CountingBackend, assert_same


def scale_by(x, factor=2.0):
    return x * factor


OFFSET = 0.5  # a global the forward reads


class Options:
    def __init__(self):
        self.shift = 1.0


class Block(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.act = nn.ReLU()
        self.fc = nn.Linear(channels, channels)
        self.register_buffer("gain", torch.linspace(0.5, 1.5, channels))
        self.mix = 0.5
        self.sizes = [channels, 1]        # a list: no version, checked at every call
        self.config = {"residual": True}  # a dict: its version covers it
        self.opts = Options()             # a plain object: its __dict__'s version covers it

    def forward(self, x):
        y = self.act(self.bn(self.conv(x)))
        if self.config["residual"]:
            y = y + x * self.mix
        y = y * self.gain.view(1, -1, 1, 1)
        z = self.fc(y.mean(dim=(2, 3))).view(-1, self.sizes[0], 1, 1) * self.sizes[1]
        return scale_by(y + z) + OFFSET + self.opts.shift


class NestedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


def images():
    return (torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(0)),)


MODELS = [(NestedNet, images, {})]


# ---- the mutations --------------------------------------------------------------------------

def replace_submodule_alike(m):
    m.blocks[1].conv = nn.Conv2d(8, 8, 3, padding=1)  # new weights, same facts: same graph


def replace_submodule_other_kernel(m):
    m.blocks[1].conv = nn.Conv2d(8, 8, 5, padding=2)


def replace_submodule_other_class(m):
    m.blocks[1].act = nn.GELU()


def parameter_shape(m):
    m.head.weight = nn.Parameter(torch.randn(6, 8))
    m.head.bias = nn.Parameter(torch.randn(6))


def parameter_strides(m):
    m.blocks[1].fc.weight = nn.Parameter(torch.randn(8, 8).t())


def parameter_dtype(m):
    m.blocks[1].gain = m.blocks[1].gain.half()


def parameter_requires_grad(m):
    m.blocks[1].fc.weight.requires_grad_(False)


def parameter_data_transposed(m):
    m.blocks[1].fc.weight.data = m.blocks[1].fc.weight.data.t()


def parameter_transposed_in_place(m):
    with torch.no_grad():
        m.blocks[1].fc.weight.t_()


def training_mode(m):
    m.blocks[1].bn.train()


def hyperparameter_eps(m):
    m.blocks[1].bn.eps = 0.5


def hyperparameter_tuple(m):
    m.blocks[1].conv.padding = (2, 2)
    m.blocks[1].conv.kernel_size = (5, 5)
    m.blocks[1].conv.weight = nn.Parameter(torch.randn(8, 8, 5, 5) * 0.1)


def float_attribute(m):
    m.blocks[1].mix = 2.0


def forward_hook(m):
    m.blocks[1].fc.register_forward_hook(lambda module, args, out: out * 3)


def forward_pre_hook(m):
    m.blocks[1].bn.register_forward_pre_hook(lambda module, args: (args[0] + 1,))


def instance_forward(m):
    m.blocks[1].act.forward = lambda x: x * 10


def class_method(m):
    Block.forward = _other_block_forward


def _other_block_forward(self, x):
    return x * 2


def class_attribute_shadows(m):
    Block.mix = property(lambda self: 4.0)


def function_default(m):
    scale_by.__defaults__ = (3.0,)


def function_code(m):
    scale_by.__code__ = (lambda x, factor=2.0: x - factor).__code__


def global_constant(m):
    global OFFSET
    OFFSET = 1.5


def list_in_place(m):
    m.blocks[1].sizes[1] = 3


def dict_in_place(m):
    m.blocks[1].config["residual"] = False


def plain_object_attribute(m):
    m.blocks[1].opts.shift = -1.0


def _store_shift(opts, value):
    opts.shift = value


def plain_object_attribute_specialised(m):
    for _ in range(64):  # warm: 3.13 then stores straight into the object's inline values
        _store_shift(Options(), 0.0)
    _store_shift(m.blocks[1].opts, -1.0)


def plain_object_dict_item(m):
    vars(m.blocks[1].opts)["shift"] = -1.0


def plain_object_attribute_deleted(m):
    del m.blocks[1].opts.shift
    m.blocks[1].opts.shift = -1.0


def plain_object_replaced(m):
    m.blocks[1].opts = Options()  # same facts: no recompile


def class_reassigned(m):
    m.blocks[1].act.__class__ = nn.Tanh


def submodule_order(m):
    m.blocks._modules = dict(reversed(m.blocks._modules.items()))


def unrelated_attribute(m):
    m.blocks[1].note = "seen"  # the module's __dict__ changes, nothing the graph read does


def buffer_replaced_alike(m):
    m.blocks[1].gain = torch.linspace(1.0, 2.0, 8)  # new values, same facts


def parameter_replaced_alike(m):
    m.head.weight = nn.Parameter(torch.randn(4, 8))


def submodule_deleted(m):
    del m.blocks[1].bn
    m.blocks[1].bn = nn.Identity()


# (name, mutation, recompiles[, whether the module's whole subtree can be skipped afterwards:
# not over a hook table with entries, whose order an OrderedDict can change with no version,
# nor over a property, computed at every read)]
MUTATIONS = [
    ("replace_submodule_alike", replace_submodule_alike, 0),
    ("replace_submodule_other_kernel", replace_submodule_other_kernel, 1),
    ("replace_submodule_other_class", replace_submodule_other_class, 1),
    ("parameter_shape", parameter_shape, 1),
    ("parameter_strides", parameter_strides, 1),
    ("parameter_dtype", parameter_dtype, 1),
    ("parameter_requires_grad", parameter_requires_grad, 1),
    ("parameter_data_transposed", parameter_data_transposed, 1),
    ("parameter_transposed_in_place", parameter_transposed_in_place, 1),
    ("training_mode", training_mode, 1),
    ("hyperparameter_eps", hyperparameter_eps, 1),
    ("hyperparameter_tuple", hyperparameter_tuple, 1),
    ("float_attribute", float_attribute, 1),
    ("forward_hook", forward_hook, 1, False),
    ("forward_pre_hook", forward_pre_hook, 1, False),
    ("instance_forward", instance_forward, 1),
    ("class_method", class_method, 1),
    ("class_attribute_shadows", class_attribute_shadows, 1, False),
    ("function_default", function_default, 1),
    ("function_code", function_code, 1),
    ("global_constant", global_constant, 1),
    ("list_in_place", list_in_place, 1),
    ("dict_in_place", dict_in_place, 1),
    ("plain_object_attribute", plain_object_attribute, 1),
    ("plain_object_attribute_specialised", plain_object_attribute_specialised, 1),
    ("plain_object_dict_item", plain_object_dict_item, 1),
    ("plain_object_attribute_deleted", plain_object_attribute_deleted, 1),
    ("plain_object_replaced", plain_object_replaced, 0),
    ("class_reassigned", class_reassigned, 1),
    ("submodule_order", submodule_order, 1),
    ("unrelated_attribute", unrelated_attribute, 0),
    ("buffer_replaced_alike", buffer_replaced_alike, 0),
    ("parameter_replaced_alike", parameter_replaced_alike, 0),
    ("submodule_deleted", submodule_deleted, 1),
]


@pytest.fixture
def restored():
    """Class, function and global state the mutations touch, put back afterwards."""
    global OFFSET
    saved = (dict(Block.__dict__), scale_by.__defaults__, scale_by.__code__, OFFSET)
    framegraph.reset()
    counters.clear()
    yield
    for name in ("forward", "mix"):
        if name in saved[0]:
            setattr(Block, name, saved[0][name])
        elif name in Block.__dict__:
            delattr(Block, name)
    scale_by.__defaults__, scale_by.__code__, OFFSET = saved[1], saved[2], saved[3]
    framegraph.reset()


def entry_program(compiled):
    """The guard program of the module's cache entry (compiled `module_call`)."""
    entries = get_cache_entries(compiled._call.__wrapped__.__code__)
    assert entries, "no cache entry"
    return entries[0].check_fn


def top_skips(program):
    skips = program.skips
    return [s for s in skips if not any(o[0] < s[0] and s[1] <= o[1] for o in skips)]


def assert_armed(program):
    top = top_skips(program)
    assert top and all(armed for _, _, armed, _ in top), f"top-level SKIPs not armed: {top}"


@pytest.mark.parametrize("name, mutate, recompiles, rearms", [m + (True,) * (4 - len(m)) for m in MUTATIONS],
                         ids=[m[0] for m in MUTATIONS])
def test_a_change_under_an_armed_skip_is_caught(restored, name, mutate, recompiles, rearms):
    torch.manual_seed(0)
    eager = NestedNet().eval()
    twin = copy.deepcopy(eager)
    counting = CountingBackend()
    compiled = framegraph.compile(twin, backend=counting)
    (x,) = images()
    for _ in range(3):  # the program arms at the second call and jumps at the third
        assert_same(eager(x), compiled(x))
    assert counting.graph_count == 1
    program = entry_program(compiled)
    assert_armed(program)
    torch.manual_seed(1)
    mutate(eager)
    torch.manual_seed(1)
    mutate(twin)
    for _ in range(3):
        assert_same(eager(x), compiled(x))
    assert counting.graph_count == 1 + recompiles, f"{name}: {counting.graph_count - 1} recompiles"
    if rearms:
        assert_armed(entry_program(compiled))  # whichever entry now hits has armed again


def test_the_memo_leaves_objects_as_they_were(restored):
    """On 3.13 a memo moves an object's inline values into its own __dict__: the same dict
    object, with the same items in the same order."""
    model = NestedNet().eval()
    objects = [m for m in model.modules()] + [block.opts for block in model.blocks]
    dicts = [(vars(o), list(vars(o).items())) for o in objects]
    compiled = framegraph.compile(model, backend="eager")
    (x,) = images()
    for _ in range(3):
        assert_same(model(x), compiled(x))
    assert_armed(entry_program(compiled))
    for o, (d, items) in zip(objects, dicts):
        assert vars(o) is d and list(d.items()) == items


def test_the_models_match_eager_and_torch_compile_graph_counts(restored):
    for make, make_args, kwargs in MODELS:
        torch.manual_seed(0)
        model = make().eval()
        counting = CountingBackend()
        compiled = framegraph.compile(model, backend=counting)
        for _ in range(3):
            assert_same(model(*make_args(), **kwargs), compiled(*make_args(), **kwargs))
        torch._dynamo.reset()
        reference = CountingBackend()
        torch.compile(model, backend=reference)(*make_args(), **kwargs)
        assert counting.graph_count == reference.graph_count == 1


class Scaled(nn.Module):
    def __init__(self, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(4, eps=eps)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.norm(x))


def test_a_new_module_at_a_dead_ones_address_is_checked_in_full(restored):
    """The skip's root is compared by address: a module freed and another made in its place
    (same class, other eps) must be told apart by its own __dict__'s version."""
    def run(model, x):
        return model(x)

    counting = CountingBackend()
    compiled = framegraph.compile(run, backend=counting)
    x = torch.randn(2, 4)
    addresses, reused = set(), 0
    for i in range(40):
        torch.manual_seed(i)
        model = Scaled(eps=0.5 if i % 3 == 0 else 1e-5)
        reused += id(model) in addresses
        addresses.add(id(model))
        for _ in range(3):
            assert_same(model(x), compiled(model, x))
        del model  # freed by its last reference (no cycle): the next is often made in its place
    assert counting.graph_count == 2  # one graph per eps, every other model a hit
    assert reused, "no model was made at a dead one's address: the test did not test anything"


def test_an_armed_skip_keeps_no_model_alive(restored):
    def run(box, x):
        return box["model"](x)

    compiled = framegraph.compile(run, backend="eager")
    box = {"model": NestedNet().eval()}
    for _ in range(3):
        compiled(box, images()[0])
    assert get_cache_entries(run.__code__)
    refs = [weakref.ref(box["model"])] + [weakref.ref(p) for p in box["model"].parameters()]
    box["model"] = None
    gc.collect()
    assert all(r() is None for r in refs), "a dropped model is still alive"


def test_a_skip_over_a_subtree_that_changes_every_call_backs_off(restored):
    """A module that sets an attribute in every forward changes its __dict__ each call: its
    SKIP fails each time, and must stop re-arming (which would cost a walk per call)."""
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = NestedNet()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.inner(x)

    eager = Counting().eval()
    twin = copy.deepcopy(eager)
    compiled = framegraph.compile(twin, backend="eager")
    (x,) = images()
    for _ in range(20):
        assert_same(eager(x), compiled(x))
    assert twin.calls == eager.calls == 20
    program = entry_program(compiled)
    top = top_skips(program)
    assert not all(armed for _, _, armed, _ in top)
    assert any(armed for _, _, armed, _ in program.skips), "the inner module's SKIPs still arm"
