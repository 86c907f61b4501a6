"""Side effects, context managers and exceptions inside the traced region: the caller sees
exactly what eager would (results, mutated inputs, globals, grad mode), in one graph."""

import pytest
import torch

import framegraph
from framegraph.counters import counters

from .asserting import assert_caught, assert_passes
from .helpers import CountingBackend, assert_same, check, clone

COUNTER = 0
LOG = []
STATE = {"calls": 0}


def t(*shape, requires_grad=False):
    torch.manual_seed(len(shape) + sum(shape))
    return torch.randn(*shape, requires_grad=requires_grad)


class Box:
    def __init__(self, value):
        self.value = value
        self.history = []


# ---- side effects ---------------------------------------------------------------------------
def append_to_arg(x, xs):
    xs.append(x * 2)
    return x + 1
def extend_and_pop_arg(x, xs):
    xs.extend([x, x + 1])
    xs.pop(0)
    return len(xs)
def setitem_on_arg(x, xs):
    xs[0] = x * 3
    return xs[0] + 1
def dict_arg_mutation(x, d):
    d["new"] = x.sin()
    d.pop("old")
    d.update(more=x + 1)
    return d["new"] * 2
def attribute_write(x, box):
    box.value = box.value + x
    return box.value * 2
def attribute_read_after_write(x, box):
    box.value = x * 5
    box.extra = box.value + 1
    return box.extra
def nested_object_mutation(x, box):
    box.history.append(x.cos())
    return len(box.history)
def global_write(x):
    global COUNTER
    COUNTER = COUNTER + 1
    return x * COUNTER
def global_container_write(x):
    LOG.append(x + 1)
    STATE["calls"] = STATE["calls"] + 1
    return x
def escaping_new_list(x):
    out = [x, x * 2]
    out.append(x * 3)
    return out
def escaping_new_object(x):
    b = Box(x * 2)
    b.tag = "made inside"
    return b
def escaping_into_global(x):
    global LOG
    LOG = [x * 4]
    return x
def inplace_on_input(x):
    x.mul_(2)
    x[0] = 0.0
    return x.sum()
def aliased_list_mutation(x, xs):
    alias = xs
    alias.append(x)
    return len(xs)


# ---- context managers ------------------------------------------------------------------------
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y, x * 3
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
        z = x * 3
    return y, z
def set_grad_enabled_block(x):
    with torch.set_grad_enabled(False):
        y = x + 1
    return y
def inference_mode_block(x):
    with torch.inference_mode():
        y = x * 2
    return y
def autocast_block(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    return y, (x @ w).dtype
@torch.no_grad()
def decorated_no_grad(x):
    return x * 2
def call_decorated(x):
    return decorated_no_grad(x) + x
class Recorder:
    def __init__(self):
        self.events = []
    def __enter__(self):
        self.events.append("enter")
        return self
    def __exit__(self, *exc):
        self.events.append("exit")
        return False
def user_context_manager(x, rec):
    with rec as r:
        y = x * len(r.events)
    return y
def grad_mode_is_restored(x):
    with torch.no_grad():
        a = torch.is_grad_enabled()
    return x * (a + 2 * torch.is_grad_enabled())


# ---- exceptions ------------------------------------------------------------------------------
class TooBig(ValueError):
    pass


def _checked(x, n):
    if n > 2:
        raise TooBig("too big", n)
    return x * n


def caught_in_same_frame(x):
    try:
        raise KeyError("k")
    except KeyError as error:
        return x * len(error.args)
def caught_from_callee(x):
    out = []
    for n in range(4):
        try:
            out.append(_checked(x, n))
        except TooBig as error:
            out.append(x - error.args[1])
    return out
def finally_runs(x):
    log = []
    try:
        y = x + 1
    finally:
        log.append("finally")
    return y, len(log)
def except_else(x):
    try:
        y = x * 2
    except RuntimeError:
        y = x
    else:
        y = y + 1
    return y
def reraise_caught(x):
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise
    except ValueError:
        return x + 10
def exception_in_with_exits_manager(x, rec):
    try:
        with rec:
            raise TooBig("inside")
    except TooBig:
        pass
    return x * len(rec.events)


SIDE_EFFECT_CASES = [
    (append_to_arg, lambda: (t(3), [1]), 2),
    (extend_and_pop_arg, lambda: (t(3), [1]), 1),
    (setitem_on_arg, lambda: (t(3), [1, 2]), 2),
    (dict_arg_mutation, lambda: (t(3), {"old": 1}), 3),
    (attribute_write, lambda: (t(3), Box(t(3))), 2),
    (attribute_read_after_write, lambda: (t(3), Box(1.0)), 2),
    (nested_object_mutation, lambda: (t(3), Box(1.0)), 1),
    (escaping_new_list, lambda: (t(3),), 2),
    (escaping_new_object, lambda: (t(3),), 1),
    (inplace_on_input, lambda: (t(3),), 3),
    (aliased_list_mutation, lambda: (t(3), [1]), 0),
]
CONTEXT_CASES = [
    (no_grad_block, lambda: (t(3, requires_grad=True),), 4),
    (enable_grad_inside_no_grad, lambda: (t(3, requires_grad=True),), 6),
    (set_grad_enabled_block, lambda: (t(3, requires_grad=True),), 3),
    (inference_mode_block, lambda: (t(3),), 3),
    (autocast_block, lambda: (t(2, 3), t(3, 2)), 3),  # the matmul read only for .dtype is dropped
    (call_decorated, lambda: (t(3, requires_grad=True),), 4),
    (grad_mode_is_restored, lambda: (t(3),), 3),
]
EXCEPTION_CASES = [
    (caught_in_same_frame, lambda: (t(3),), 1),
    (caught_from_callee, lambda: (t(3),), 4),
    (finally_runs, lambda: (t(3),), 1),
    (except_else, lambda: (t(3),), 2),
    (assert_caught, lambda: (t(3),), 1),
    (assert_passes, lambda: (t(3),), 1),
    (reraise_caught, lambda: (t(3),), 1),
]
CASES = SIDE_EFFECT_CASES + CONTEXT_CASES + EXCEPTION_CASES


@pytest.mark.parametrize("fn,make_args,ops", CASES, ids=[c[0].__name__ for c in CASES])
def test_effects_match_eager(fn, make_args, ops):
    check(fn, *make_args(), graphs=1 if ops else 0, ops=ops, fullgraph=True)


def _compare_with_globals(fn, *args):
    """Runs eagerly, snapshots the module globals it touches, resets, runs compiled."""
    global COUNTER, LOG, STATE
    COUNTER, LOG, STATE = 0, [], {"calls": 0}
    expected = fn(*clone(args))
    eager_globals = (COUNTER, list(LOG), dict(STATE))
    COUNTER, LOG, STATE = 0, [], {"calls": 0}
    framegraph.reset()
    counters.clear()
    actual = framegraph.compile(fn, backend="eager", fullgraph=True)(*clone(args))
    assert_same(expected, actual)
    assert_same(eager_globals, (COUNTER, list(LOG), dict(STATE)), "globals")
    assert counters["stats"]["unique_graphs"] == 1


@pytest.mark.parametrize("fn", [global_write, global_container_write, escaping_into_global])
def test_global_side_effects_match_eager(fn):
    _compare_with_globals(fn, t(3))


def test_new_object_escapes_with_its_attributes():
    check(escaping_new_object, t(3), ops=1, fullgraph=True)
    box = check.compiled(t(3))
    assert type(box) is Box and box.tag == "made inside" and box.history == []


@pytest.mark.parametrize("fn", [user_context_manager, exception_in_with_exits_manager])
def test_user_context_managers_run_enter_and_exit(fn):
    eager_rec, compiled_rec = Recorder(), Recorder()
    expected = fn(t(3), eager_rec)
    framegraph.reset()
    counters.clear()
    actual = framegraph.compile(fn, backend="eager", fullgraph=True)(t(3), compiled_rec)
    assert_same(expected, actual)
    assert eager_rec.events == compiled_rec.events
    assert counters["stats"]["unique_graphs"] == 1


def test_grad_mode_inside_the_graph_with_aot_eager():
    x = t(3, requires_grad=True)
    y, z = framegraph.compile(no_grad_block, backend="aot_eager", fullgraph=True)(x)
    assert not y.requires_grad and z.requires_grad
    z.sum().backward()
    assert_same(torch.full((3,), 3.0), x.grad)
    assert torch.is_grad_enabled()


def test_uncaught_exception_runs_eagerly_and_reaches_the_caller():
    def raises(x):
        return _checked(x, 7)

    framegraph.reset()
    backend = CountingBackend()
    with pytest.raises(TooBig, match="too big"):
        framegraph.compile(raises, backend=backend)(t(3))
    assert backend.graph_count == 0
