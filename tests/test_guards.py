"""Guards compile into one check that accepts exactly what the trace relied on: every test
here runs against the C guard program and against the generated Python function."""

import pytest
import torch

from framegraph import config

from framegraph.guards import GuardKind, GuardSet, TensorSpec, compile_guards, global_state
from framegraph.source import AttrSource, GlobalSource, ItemSource, LocalSource

X, N = LocalSource("x"), LocalSource("n")


@pytest.fixture(autouse=True, params=[True, False], ids=["c_program", "python_function"])
def guard_implementation(request):
    with config.patch(c_guards=request.param):
        yield request.param


def check(*guards, f_globals=None):
    gs = GuardSet()
    for g in guards:
        gs.add(*g)
    return compile_guards(gs, f_globals or {})


def test_source_names_read_like_python():
    src = ItemSource(AttrSource(GlobalSource("model"), "layers"), 0)
    assert src.name == "G['model'].layers[0]"
    assert src.root == GlobalSource("model")
    assert AttrSource(X, "not valid").name == "getattr(L['x'], 'not valid')"


@pytest.mark.parametrize("changed", [
    torch.randn(4, 6, dtype=torch.float64),        # dtype
    torch.randn(4, 7),                             # size
    torch.randn(6, 4).t(),                         # strides
    torch.randn(4, 6, requires_grad=True),         # requires_grad
    torch.nn.Parameter(torch.randn(4, 6)),         # exact type
    torch.randn(4, 6)._neg_view(),                 # dispatch keys
    torch.randn(4, 6, 1),                          # rank
])
def test_tensor_match_rejects_each_changed_fact(changed):
    fn = check((GuardKind.TENSOR_MATCH, X, TensorSpec.of(torch.randn(4, 6))))
    assert fn({"x": torch.randn(4, 6)})
    assert fn({"x": torch.randn(10, 6)[2:6]}), "storage offset is not part of the match"
    assert not fn({"x": changed})
    assert fn.failures({"x": changed}) == fn.texts


@pytest.mark.parametrize("shape, strides, accepted", [
    ((4, 1, 3), (3, 3, 1), True),
    ((4, 1, 3), (3, 7, 1), False),  # contiguous too (torch ignores a size-1 stride), yet not equal
    ((4, 4), (1, 4), False),        # a square transpose: same sizes, other strides
    ((0, 3), (3, 1), True),
    ((0, 3), (1, 1), False),        # an empty tensor is contiguous whatever its strides
    ((), (), True),
])
def test_tensor_match_compares_strides_exactly(shape, strides, accepted):
    expected = torch.empty(shape)
    fn = check((GuardKind.TENSOR_MATCH, X, TensorSpec.of(expected)))
    assert fn({"x": expected})
    actual = torch.empty(64).as_strided(shape, strides)
    assert bool(fn({"x": actual})) is accepted
    param = torch.nn.Parameter(torch.empty(shape))
    assert not fn({"x": param})  # the type is part of the match, on the fast path too


def test_tensor_match_with_a_dynamic_dim_accepts_any_size_there():
    fn = check((GuardKind.TENSOR_MATCH, X, TensorSpec.of(torch.randn(4, 6), dynamic_dims=[0])))
    assert fn({"x": torch.randn(9, 6)})
    assert not fn({"x": torch.randn(9, 5)})
    assert "size=[?, 6]" in fn.texts[0]


def test_equals_match_distinguishes_types_and_values():
    fn = check((GuardKind.EQUALS_MATCH, N, 3))
    assert fn({"n": 3})
    assert not fn({"n": 4}) and not fn({"n": 3.0}) and not fn({"n": True})
    assert fn.failures({"n": 4}) == ["L['n'] == 3"]
    assert check((GuardKind.EQUALS_MATCH, N, None))({"n": None})
    assert not check((GuardKind.EQUALS_MATCH, N, False))({"n": 0})


def test_id_match_holds_its_object_weakly():
    class Thing:
        pass
    obj = Thing()
    f_globals = {"obj": obj}
    fn = check((GuardKind.ID_MATCH, GlobalSource("obj"), obj), f_globals=f_globals)
    assert fn({})
    f_globals["obj"] = Thing()
    assert not fn({})
    import weakref
    ref = weakref.ref(obj)
    del obj, f_globals["obj"]
    assert ref() is None, "the guard must not keep the object alive"


def test_length_and_type_guards():
    fn = check((GuardKind.TYPE_MATCH, X, list), (GuardKind.LENGTH, X, (list, 2)))
    assert fn({"x": [1, 2]})
    assert not fn({"x": (1, 2)}) and not fn({"x": [1]})


def test_guards_dedupe_in_first_met_order():
    gs = GuardSet()
    gs.add(GuardKind.TYPE_MATCH, X, list, "a.py:1")
    gs.add(GuardKind.LENGTH, X, (list, 1), "a.py:2")
    gs.add(GuardKind.TYPE_MATCH, X, list, "a.py:3")
    assert [g.user_line for g in gs] == ["a.py:1", "a.py:2"]


def test_global_state_names_what_changed():
    fn = check((GuardKind.GLOBAL_STATE, None, global_state()))
    assert fn({})
    with torch.no_grad():
        assert not fn({})
        assert fn.failures({}) == ["___check_global_state() (grad_mode True -> False)"]
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert "default_dtype" in fn.failures({})[0]
    finally:
        torch.set_default_dtype(old)
    with torch.autocast("cpu"):
        assert not fn({})
    torch.use_deterministic_algorithms(True)
    try:
        assert not fn({})
    finally:
        torch.use_deterministic_algorithms(False)


def test_describe_prints_one_guard_per_line_with_user_line():
    fn = check((GuardKind.EQUALS_MATCH, N, 3, "demo.py:3 in f"), (GuardKind.TYPE_MATCH, X, list, ""))
    lines = fn.describe().splitlines()
    assert lines[0].startswith("- L['n'] == 3") and lines[0].endswith("# demo.py:3 in f")
    assert lines[1] == "- type(L['x']) is list"


def test_a_failing_read_is_reported_not_raised():
    fn = check((GuardKind.TYPE_MATCH, X, list), (GuardKind.EQUALS_MATCH, AttrSource(X, "n"), 1))
    failures = fn.failures({"x": [1]})
    assert failures[0].startswith("L['x'].n == 1  (AttributeError")
