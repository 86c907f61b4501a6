"""The C guard program against the Python check function it replaces, and what only it has:
the tensor memo (a remembered tensor skips its device and dispatch-key reads) and the read
and check memos (an unchanged module is not walked again) must still catch every change a
compiled module can see. Op-level tests, run on every Python, are tests/hook/test_guard_program_ops.py."""

from __future__ import annotations

import collections
import copy
import itertools

import pytest
import torch
from torch import nn

import framegraph
from framegraph import _C, config
from framegraph.eval_frame import get_cache_entries
from framegraph.guard_program import OP
from framegraph.guards import GuardKind, GuardSet, TensorSpec, compile_guards, global_state
from framegraph.source import (AttrSource, GlobalSource, ItemSource, IteratorStateSource, LocalSource,
                               TypeSource)

from tests.capture.helpers import CountingBackend, assert_same


class Box:
    def __init__(self, **kw):
        self.__dict__.update(kw)


X, Y, OBJ, D = LocalSource("x"), LocalSource("y"), LocalSource("obj"), LocalSource("d")


def both(guards, f_globals=None):
    """The same guard records compiled both ways."""
    gs = GuardSet()
    for g in guards:
        gs.add(*g)
    with config.patch(c_guards=True):
        program = compile_guards(gs, f_globals or {})
    with config.patch(c_guards=False):
        python = compile_guards(gs, f_globals or {})
    assert type(program.fn).__name__ == "GuardProgram" and type(python.fn).__name__ == "function"
    return program, python


def outcome(fn, f_locals):
    try:
        return bool(fn(f_locals))
    except Exception as error:  # both must raise the same kind of error
        return type(error)


def base_locals():
    t = torch.randn(4, 6)
    return {"x": t, "y": t + 1, "n": 3, "f": 0.5, "s": "a",
            "obj": Box(a=1, b=2.0, flag=True, items=[1, 2], t=torch.zeros(3)),
            "d": {"k": 1, 2: "two"}, "it": iter([1, 2, 3])}


def variants():
    """Locals differing from base_locals along one axis each."""
    yield base_locals()
    for key, value in [("n", 4), ("n", 3.0), ("n", True), ("f", -0.5), ("f", float("nan")),
                       ("s", "b"), ("x", torch.randn(4, 6, dtype=torch.float64)),
                       ("x", torch.randn(6, 4).t()), ("x", torch.randn(4, 6, requires_grad=True)),
                       ("x", nn.Parameter(torch.randn(4, 6))), ("x", torch.randn(4, 6)._neg_view()),
                       ("x", torch.randn(5, 6)), ("d", {"k": 1}), ("d", {2: "two", "k": 1}),
                       ("d", {"k": 1, 2.0: "two"}), ("obj", Box(a=1)), ("obj", 7), ("it", iter([1, 2]))]:
        f_locals = base_locals()
        f_locals[key] = value
        yield f_locals
    f_locals = base_locals()
    f_locals["y"] = f_locals["x"]
    yield f_locals
    f_locals = base_locals()
    f_locals["obj"].a = 2
    f_locals["obj"].__dict__["b"] = -0.0
    yield f_locals
    f_locals = base_locals()
    f_locals["obj"].items.append(3)
    next(f_locals["it"])
    yield f_locals
    yield {}


def guard_records(f_locals):
    """One record of every kind, traced from base_locals."""
    x, obj, d = f_locals["x"], f_locals["obj"], f_locals["d"]
    it_state = IteratorStateSource(LocalSource("it"), "position")
    return [
        (GuardKind.TYPE_MATCH, LocalSource("obj"), Box),
        (GuardKind.EQUALS_MATCH, LocalSource("n"), 3),
        (GuardKind.EQUALS_MATCH, LocalSource("f"), 0.5),
        (GuardKind.EQUALS_MATCH, LocalSource("s"), "a"),
        (GuardKind.EQUALS_MATCH, AttrSource(OBJ, "a"), 1),
        (GuardKind.EQUALS_MATCH, AttrSource(OBJ, "b"), 2.0),
        (GuardKind.EQUALS_MATCH, AttrSource(OBJ, "flag"), True),
        (GuardKind.LENGTH, AttrSource(OBJ, "items"), (list, 2)),
        (GuardKind.EQUALS_MATCH, ItemSource(AttrSource(OBJ, "items"), 1), 2),
        (GuardKind.DICT_KEYS, D, (dict, list(d))),
        (GuardKind.EQUALS_MATCH, ItemSource(D, "k"), 1),
        (GuardKind.NOT_IN_DICT, OBJ, frozenset({"method", "other"})),
        (GuardKind.HASATTR, OBJ, ("t", True)),
        (GuardKind.ID_MATCH, TypeSource(OBJ), Box),
        (GuardKind.TENSOR_MATCH, X, TensorSpec.of(x)),
        (GuardKind.TENSOR_MATCH, AttrSource(OBJ, "t"), TensorSpec.of(obj.t)),
        (GuardKind.TENSOR_MATCH, Y, TensorSpec.of(f_locals["y"])),
        (GuardKind.DISTINCT, None, (X, Y, AttrSource(OBJ, "t"))),
        (GuardKind.EQUALS_MATCH, it_state, 0),
        (GuardKind.GLOBAL_STATE, None, global_state()),
        (GuardKind.ID_MATCH, GlobalSource("torch"), torch),
    ]


def test_program_and_python_function_agree_on_every_variant():
    program, python = both(guard_records(base_locals()), {"torch": torch})
    results = collections.Counter()
    for f_locals in variants():
        expected = outcome(python.fn, f_locals)
        assert outcome(program.fn, f_locals) == expected, (f_locals, python.failures(f_locals))
        # twice: the second run of a passing tensor goes through the memo
        assert outcome(program.fn, f_locals) == expected
        results[expected] += 1
    # the empty locals make the first read raise: a failed check, never an exception
    assert results[True] == 2 and results[False] >= 19 and set(results) == {True, False}, results


@pytest.mark.parametrize("kind", ["grad", "inference", "default_dtype", "autocast"])
def test_program_sees_global_state_flips(kind):
    program, python = both([(GuardKind.GLOBAL_STATE, None, global_state())])
    flip = {"grad": torch.no_grad, "inference": torch.inference_mode,
            "default_dtype": lambda: _default_dtype(torch.float64),
            "autocast": lambda: torch.autocast("cpu")}[kind]
    assert program.fn({}) and python.fn({})
    with flip():
        assert not program.fn({}) and not python.fn({})
    assert program.fn({})


class _default_dtype:
    def __init__(self, dtype):
        self.dtype = dtype

    def __enter__(self):
        self.saved = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)

    def __exit__(self, *exc):
        torch.set_default_dtype(self.saved)


def test_a_raising_read_fails_the_check_in_both():
    class Prop:
        @property
        def value(self):
            raise RuntimeError("boom")

    program, python = both([(GuardKind.EQUALS_MATCH, AttrSource(LocalSource("p"), "value"), 1)])
    for fn in (program.fn, python.fn):
        assert fn({"p": Prop()}) is False
    assert program.fn.failed_at == 1  # the read, after the local load
    assert program.failures({"p": Prop()}) == ["L['p'].value == 1  (RuntimeError: boom)"]


def test_failed_at_names_the_failing_op():
    program, _ = both([(GuardKind.EQUALS_MATCH, LocalSource("n"), 3),
                       (GuardKind.EQUALS_MATCH, LocalSource("m"), 4)])
    assert program.fn({"n": 3, "m": 4}) and program.fn.failed_at == -1
    assert not program.fn({"n": 3, "m": 5}) and program.fn.failed_at == 3


@pytest.mark.parametrize("ops, n_regs", [
    (((OP["TYPE_IS"], -1, 0, int),), 1),             # reads a register nothing wrote
    (((OP["LOCAL"], 0, -1, "x"), (OP["LOCAL"], 0, -1, "y")), 1),  # writes one twice
    (((OP["LOCAL"], 5, -1, "x"),), 1),               # register out of range
    (((99, 0, -1, "x"),), 1),                        # unknown op
    (((OP["LOCAL"], 0, -1, "x"), (OP["TENSOR"], -1, 0, ("short",))), 1),
    (((OP["LOCAL"], 0, -1, "x"), (OP["DISTINCT"], -1, -1, (0, 3))), 1),
    (("not a tuple",), 0),
])
def test_malformed_programs_are_refused_with_the_op(ops, n_regs):
    with pytest.raises(ValueError, match="malformed op"):
        _C.GuardProgram(ops, n_regs, {})


def test_a_program_takes_one_dict():
    program = _C.GuardProgram(((OP["LOCAL"], 0, -1, "x"),), 1, None)
    assert program({"x": 1})
    with pytest.raises(TypeError, match="one dict"):
        program([1])
    assert program({}) is False  # a missing local fails the check
    with pytest.raises(ValueError, match="malformed op"):
        _C.GuardProgram(((OP["GLOBAL"], 0, -1, "x"),), 1, None)  # no globals to read


def test_many_registers():
    n = 300
    ops = tuple((OP["LOCAL"], i, -1, f"v{i}") for i in range(n)) + ((OP["DISTINCT"], -1, -1, tuple(range(n))),)
    program = _C.GuardProgram(ops, n, None)
    values = {f"v{i}": object() for i in range(n)}
    assert program(values)
    values["v299"] = values["v0"]
    assert not program(values)


# ---- the tensor memo, through compiled modules -------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x):
        return self.fc(x) * self.scale


def _mutations():
    """(mutation, whether the compiled module must recompile after it)"""
    def requires_grad_off(m):
        m.fc.weight.requires_grad_(False)

    def transpose_in_place(m):
        with torch.no_grad():
            m.fc.weight.t_()

    def resize_buffer(m):
        m.scale.resize_(1)

    def data_to_double(m):
        m.double()

    def same_facts_new_data(m):
        m.fc.weight.data = torch.arange(16.0).reshape(4, 4)

    def swap_tensors(m):
        torch.utils.swap_tensors(m.fc.weight, nn.Parameter(torch.ones(4, 4, dtype=torch.float64)))

    def buffer_becomes_inference(m):
        with torch.inference_mode():
            m.scale.data = torch.full((4,), 3.0)

    def buffer_becomes_negative_view(m):
        m.scale.data = torch.full((4,), 3.0)._neg_view()

    def data_becomes_its_own_transpose(m):
        # same storage, same data pointer, same _version: only the strides tell
        m.fc.weight.data = m.fc.weight.data.t()

    def data_becomes_its_own_reinterpretation(m):
        m.scale.data = m.scale.data.view(torch.int32)  # a buffer: a parameter must stay float

    return [(requires_grad_off, True), (transpose_in_place, True), (resize_buffer, True),
            (data_to_double, True), (same_facts_new_data, False), (swap_tensors, True),
            (buffer_becomes_inference, True), (buffer_becomes_negative_view, True),
            (data_becomes_its_own_transpose, True), (data_becomes_its_own_reinterpretation, True)]


@pytest.mark.parametrize("mutate, recompiles", _mutations(), ids=lambda v: getattr(v, "__name__", ""))
def test_in_place_tensor_changes_recompile_or_match_eager(mutate, recompiles):
    torch.manual_seed(0)
    eager = Net()
    twin = copy.deepcopy(eager)
    counting = CountingBackend()
    compiled = framegraph.compile(twin, backend=counting)
    x = torch.randn(2, 4)
    for _ in range(3):  # the third call is a memo hit on every parameter
        assert_same(eager(x), compiled(x))
    assert counting.graph_count == 1
    mutate(eager)
    mutate(twin)
    x = x.to(eager.fc.weight.dtype)
    try:
        expected = eager(x)
    except Exception as error:
        with pytest.raises(type(error)):
            compiled(x)
        return
    assert_same(expected, compiled(x))
    assert counting.graph_count == 1 + recompiles
    assert_same(eager(x), compiled(x))
    assert counting.graph_count == 1 + recompiles


def test_the_memo_keeps_no_tensor_alive():
    """The compiled function outlives the model it was called with; the model's weights must
    not (the cache entry stays on `run`'s code object)."""
    import gc
    import weakref

    def run(box, x):
        return box.model(x)

    compiled = framegraph.compile(run, backend="eager")
    box = Box(model=Net())
    for _ in range(3):
        compiled(box, torch.randn(2, 4))
    assert get_cache_entries(run.__code__)
    weights = [weakref.ref(p) for p in box.model.parameters()]
    box.model = None
    gc.collect()
    assert all(w() is None for w in weights), "a dropped model's parameters are still alive"


def test_a_remembered_parameter_replaced_by_another_is_checked_in_full():
    class Holder:
        def __init__(self, t):
            self._parameters = {"w": t}

    source = ItemSource(AttrSource(OBJ, "_parameters"), "w")
    program, python = both([(GuardKind.TENSOR_MATCH, source, TensorSpec.of(torch.randn(2, 2)))])
    holder = Holder(torch.randn(2, 2))
    assert program.fn({"obj": holder}) and program.fn({"obj": holder})  # remembered
    holder._parameters["w"] = torch.randn(2, 2)._neg_view()
    assert not program.fn({"obj": holder}) and not python.fn({"obj": holder})
    with torch.inference_mode():
        holder._parameters["w"] = torch.randn(2, 2)
    assert not program.fn({"obj": holder}) and not python.fn({"obj": holder})


def test_complex_conjugate_view_is_caught_though_it_shares_data():
    torch.manual_seed(0)
    w = torch.randn(3, dtype=torch.complex64)

    def f(x):
        return x * w

    counting = CountingBackend()
    compiled = framegraph.compile(f, backend=counting)
    x = torch.randn(3, dtype=torch.complex64)
    for _ in range(3):
        assert_same(f(x), compiled(x))
    w.data = w.data.conj()
    assert_same(f(x), compiled(x))
    assert counting.graph_count == 2


def test_a_new_tensor_at_the_same_place_is_checked_in_full():
    """The memo holds a weak reference: a dead tensor's successor is never taken for it."""
    program, _ = both([(GuardKind.TENSOR_MATCH, X, TensorSpec.of(torch.randn(2, 2)))])
    for _ in range(50):
        assert program.fn({"x": torch.randn(2, 2)})
        assert not program.fn({"x": torch.randn(2, 2)._neg_view()})


def test_guard_check_of_a_compiled_gpt_is_the_c_program():
    from tests.models import GPT, gpt_inputs

    model = GPT(layers=2).eval()
    compiled = framegraph.compile(model, backend="eager")
    compiled(gpt_inputs(model))
    entry = get_cache_entries(compiled._call.__wrapped__.__code__)[0]
    assert type(entry.check_fn).__name__ == "GuardProgram"
    assert entry.check_fn.check.guards  # the records stay reachable for explain and logs
    f_locals = {"module": model, "args": (gpt_inputs(model),), "kwargs": {}}
    assert entry.check_fn(f_locals) and entry.check_fn(f_locals)
    with config.patch(c_guards=False):
        python = compile_guards(entry.check_fn.check.guards, compiled._call.__wrapped__.__globals__)
    assert python.fn(f_locals)
    for value in itertools.islice(model.parameters(), 3):
        value.requires_grad_(False)
        assert not entry.check_fn(f_locals) and not python.fn(f_locals)
        value.requires_grad_(True)
        assert entry.check_fn(f_locals)


def test_tensor_checks_leak_no_reference():
    import gc
    import sys

    class Sub(torch.Tensor):
        pass

    class Holder:
        def __init__(self, t):
            self._parameters = {"w": t}

    source = ItemSource(AttrSource(OBJ, "_parameters"), "w")
    for make in (lambda: nn.Parameter(torch.randn(2, 3)), lambda: torch.randn(2, 3).as_subclass(Sub)):
        t = make()
        program, _ = both([(GuardKind.TENSOR_MATCH, source, TensorSpec.of(t))])
        other = torch.randn(3, 2)
        watched = [t, other, t.dtype, torch.float32]

        def run(times):
            for _ in range(times):
                assert program.fn({"obj": Holder(t)})
                assert not program.fn({"obj": Holder(other)})
            return [sys.getrefcount(o) for o in watched]

        run(2)  # the interpreter's own first-run changes are not ours
        gc.collect()
        assert run(1) == run(200)


# ---- tensors read through torch's C shim ----------------------------------------------------


def _tensor_zoo():
    """Tensors differing in one fact each, and ones whose sizes or strides the shim cannot read."""
    base = torch.randn(4, 6)
    yield from [base, torch.randn(4, 6, dtype=torch.float64), torch.randn(4, 6).to(torch.bfloat16),
                torch.zeros(4, 6, dtype=torch.bool), torch.zeros(4, 6, dtype=torch.int64), torch.randn(6, 4).t(),
                torch.randn(4, 7)[:, :6], torch.randn(4, 6, requires_grad=True), torch.randn(1, 6),
                torch.randn(4, 1), torch.randn(4, 1).expand(4, 6), torch.randn(24), torch.randn(2, 2, 6),
                torch.randn(0, 6), torch.tensor(1.5), torch.randn(4, 6).to_sparse(),
                torch.randn(2, 3, 4, 6).to(memory_format=torch.channels_last),
                torch.randn(2, 3, 4, 6), nn.Parameter(torch.randn(4, 6)),
                torch.randn(4, 6, dtype=torch.complex64), torch.randn(4, 6)._neg_view(),
                torch.empty(4, 6, device="meta"), torch.empty(4, 6, dtype=torch.float64, device="meta")]


def test_the_shim_reads_tensors_on_this_torch():
    from framegraph import guard_program

    program, _ = both([(GuardKind.TENSOR_MATCH, X, TensorSpec.of(torch.randn(2, 2)))])
    assert program.fn({"x": torch.randn(2, 2)})
    assert guard_program._shim_ready, "torch 2.13's aoti_torch getters were not found"
    numbers = [_C.tensor_shim_numbers(torch.empty(0, dtype=d))
               for d in (torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16)]
    assert len({dtype for dtype, _, _ in numbers}) == 5 and {n[1:] for n in numbers} == {(0, -1)}
    assert _C.tensor_shim_numbers(torch.empty(0, device="meta"))[1:] != numbers[0][1:]
    assert _C.tensor_shim_numbers(7) is None
    # The device is compared through the shim: the spec's facts carry its numbers.
    assert guard_program._shim_facts(TensorSpec.of(torch.randn(2, 2)))[3:] == (0, -1)
    meta = torch.empty(2, 2, device="meta")
    assert guard_program._shim_facts(TensorSpec.of(meta))[3:] == _C.tensor_shim_numbers(meta)[1:] != (0, -1)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_every_tensor_against_every_spec_agrees_with_python_and_prints_nothing(capfd):
    zoo = list(_tensor_zoo())
    nested = torch.nested.nested_tensor([torch.randn(2, 6), torch.randn(3, 6)])  # has no sizes to trace
    for traced in zoo:
        program, python = both([(GuardKind.TENSOR_MATCH, X, TensorSpec.of(traced))])
        for other in [*zoo, nested]:
            expected = outcome(python.fn, {"x": other})
            for _ in range(2):
                assert outcome(program.fn, {"x": other}) == expected, (traced, other)
        assert program.fn({"x": traced}) is True
    assert capfd.readouterr() == ("", "")


def test_dynamic_dimensions_match_any_size_through_the_shim():
    spec = TensorSpec.of(torch.randn(4, 6), dynamic_dims=[0])
    assert spec.sizes == (None, 6) and spec.strides == (None, None)
    program, python = both([(GuardKind.TENSOR_MATCH, X, spec)])
    for other, passes in [(torch.randn(9, 6), True), (torch.randn(1, 6), True), (torch.randn(9, 5), False),
                          (torch.randn(9, 7)[:, :6], True), (torch.randn(2, 9, 6), False)]:
        assert program.fn({"x": other}) is passes is python.fn({"x": other}), other.shape


def test_a_batched_tensor_under_vmap_is_checked_like_python(capfd):
    program, python = both([(GuardKind.TENSOR_MATCH, X, TensorSpec.of(torch.randn(6)))])
    seen = []

    def inner(row):
        seen.append((outcome(program.fn, {"x": row}), outcome(python.fn, {"x": row})))
        return row * 2

    torch.func.vmap(inner)(torch.randn(4, 6))
    assert seen and all(a == b for a, b in seen), seen
    assert capfd.readouterr().err == ""


# ---- the read memo, through compiled modules: every change after a few hits is seen --------


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.scale = 2.0

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


def _module_changes():
    def new_submodule(m):
        m.fc = nn.Linear(4, 4)

    def hyperparameter(m):
        m.norm.eps = 0.5

    def plain_attribute(m):
        m.scale = 3.0

    def forward_hook(m):
        m.fc.register_forward_hook(lambda mod, args, out: out + 1)

    def instance_forward(m):
        m.norm.forward = lambda x: x * 10

    def class_attribute(m):
        Block.scale = property(lambda self: 4.0)

    def replaced_parameter(m):
        m.fc.weight = nn.Parameter(torch.ones(4, 4))

    def train_mode(m):
        m.train()

    return [new_submodule, hyperparameter, plain_attribute, forward_hook, instance_forward,
            class_attribute, replaced_parameter, train_mode]


@pytest.mark.parametrize("change", _module_changes(), ids=lambda f: f.__name__)
def test_module_changes_after_cached_hits_match_eager(change):
    saved = Block.__dict__.get("scale")
    try:
        torch.manual_seed(0)
        eager = Block().eval()
        twin = copy.deepcopy(eager)
        compiled = framegraph.compile(twin, backend="eager")
        x = torch.randn(2, 4)
        for _ in range(3):
            assert_same(eager(x), compiled(x))
        torch.manual_seed(1)
        change(eager)
        torch.manual_seed(1)
        change(twin)
        for _ in range(2):
            assert_same(eager(x), compiled(x))
    finally:
        if saved is None and "scale" in Block.__dict__:
            del Block.scale


# ---- a plan: the layout lower() chose, made again from guards laid out the same way ----------


def _ops_made(lowering):
    """The ops tuple `lowering()` hands to _C.GuardProgram, with each Python piece by its code."""
    import unittest.mock

    from framegraph import guard_program

    made = []
    real = guard_program._C.GuardProgram

    def recording(ops, n_regs, f_globals):
        made.append((tuple(tuple(_by_code(a) for a in op) for op in ops), n_regs))
        return real(ops, n_regs, f_globals)

    with unittest.mock.patch.object(guard_program._C, "GuardProgram", recording):
        check = lowering()
    return made[-1], check


def _by_code(value):
    if callable(value) and hasattr(value, "__code__"):
        code = value.__code__
        return ("fn", code.co_code, code.co_consts, code.co_names)
    return value


def test_a_plan_makes_the_program_lower_made():
    from tests.models import GPT, gpt_inputs

    model = GPT(layers=2).eval()

    def run(model, x, y, also_y, items, numbers):
        # a module tree, tensors, the same tensor twice (an alias check over two registers),
        # a list, and an iterator the caller passed (read through Python)
        return model(x) + y.sum() * also_y.mean() + len(items) + next(numbers)

    compiled = framegraph.compile(run, backend="eager")
    x, y = gpt_inputs(model), torch.randn(3)
    compiled(model, x, y, y, [1.0, 2.0], iter([1, 2, 3]))
    check = get_cache_entries(run.__code__)[0].check_fn.check
    f_globals = run.__globals__
    (ops, n_regs), first = _ops_made(lambda: compile_guards(check.guards, f_globals))
    kinds = collections.Counter(item[0] for item in first.plan[0] if isinstance(item[0], str))
    assert kinds["C"] and kinds["G"] > 100, kinds
    assert any(item[0] == "G" and len(item[2]) > 1 for item in first.plan[0]), "no check over two registers"
    (again, n_again), second = _ops_made(lambda: compile_guards(check.guards, f_globals, plan=first.plan))
    assert (again, n_again) == (ops, n_regs)
    f_locals = lambda: {"model": model, "x": x, "y": y, "also_y": y, "items": [1.0, 2.0], "numbers": iter([1, 2, 3])}
    assert first.fn(f_locals()) and second.fn(f_locals())
    assert not first.fn({**f_locals(), "also_y": y.clone()}) and not second.fn({**f_locals(), "also_y": y.clone()})
    model.blocks[1].ln1.eps = 0.5
    assert not first.fn(f_locals()) and not second.fn(f_locals())
