"""The graph-break machinery itself: a break before any instruction, at top level or inside
an inlined callee, hands the stack and the locals on so that the rest runs as in eager.

Most tests force breaks with `config.debug_force_break` before every instruction of one
family (those that push a NULL, store a local, read a local the trace rebound...), one at a
time, and compare results, raised exceptions, mutated inputs and eager side effects with
eager over three calls (the later ones are cache hits). Others reach the same construct
with a real break."""

import contextlib
import time
import traceback

import pytest
import torch

import framegraph
from framegraph.bytecode import decode, prefix_end, versions
from framegraph.counters import counters

from .helpers import CountingBackend, assert_same, check, clone
from .objects import scaler
from .parity_attributes import Recording as Hooked  # its own __setattr__ and __delattr__
from .test_parity_context_managers import Tracker
from .test_graph_breaks import EVENTS, note, t


def _call(fn, args):
    try:
        return fn(*args), None
    except Exception as error:
        return None, error


def run_forced(fn, make_args, points, calls=3, must_fire=True, must_reach=True):
    """Compiles fn breaking before `points` ((code, offset) pairs; none: only its real
    breaks); compares with eager. Without `must_fire`, the frame may instead run eagerly for
    a reason met on the way there (some other graph break); without `must_reach`, the
    points may lie where the program never goes. Returns whether anything broke."""
    framegraph.reset()
    counters.clear()
    EVENTS.clear()
    args = make_args()
    eager_args = clone(args)
    expected, expected_error = _call(fn, eager_args)
    per_call = list(EVENTS)
    with framegraph.config.patch(debug_force_break=frozenset(points)):
        compiled = framegraph.compile(fn, backend=CountingBackend())
        for call in range(calls):
            EVENTS.clear()
            actual_args = clone(args)
            actual, actual_error = _call(compiled, actual_args)
            where = f"call {call}, breaking at {[(c.co_name, o) for c, o in points]}"
            if expected_error is not None or actual_error is not None:
                assert type(actual_error) is type(expected_error), f"{where}: {actual_error!r} != {expected_error!r}"
                assert str(actual_error) == str(expected_error), where
            else:
                assert_same(expected, actual, f"{where}: result")
            assert_same(eager_args, actual_args, f"{where}: mutated inputs")
            assert EVENTS == per_call, f"{where}: eager side effects {EVENTS} != {per_call}"
    assert not counters["fallback"], dict(counters["fallback"])
    forced = [k for k in counters["graph_break"] if k.startswith("Forced graph break")]
    assert forced or not points or not must_fire, f"no forced break fired at {points}: the test did not test anything"
    assert counters["graph_break"] or not must_reach, "nothing broke: the test did not test anything"
    return bool(counters["graph_break"])


def each_offset(code, *opnames):
    """Break points before each instruction of the family in `code`, one at a time."""
    found = sorted({inst.offset for inst in decode(code) if inst.opname in opnames})
    assert found, f"{code.co_name} has no {opnames}: the test would not test anything"
    return [[(code, offset)] for offset in found]


# ---- a break before an instruction that pushes a NULL ---------------------------------------
def calls_globals(x):
    y = torch.relu(x)
    return helper(y) + len([1, 2])
def helper(y):
    return y * 2
def recursive(x, n):
    if n == 0:
        return x
    return recursive(x * 1.5, n - 1)


@pytest.mark.parametrize("fn,make_args", [(calls_globals, lambda: (t(3),)), (recursive, lambda: (t(3), 3))])
def test_a_break_before_a_null_push_never_passes_the_null(fn, make_args):
    for points in each_offset(fn.__code__, "PUSH_NULL"):
        run_forced(fn, make_args, points)


# ---- a break before an instruction that binds or unbinds a local ------------------------------
def stores(x):
    y = x * 2
    flag = bool(y.sum() > 0)
    z = y + 1 if flag else y - 1
    return z, flag
def stores_in_loop(x):
    acc = x
    for i in range(3):
        acc = acc + i
    return acc
def stores_a_cell(x):
    k = 3
    scale = lambda v: v * k
    return scale(x)
def stores_a_rebound_cell(x):
    x = x * 2
    for i in range(2):
        x = x * 2 + i
    return (lambda: x)()
def nested_comprehension(x):
    return [[x * i * j for j in range(2)] for i in range(2)]
def deletes(x):
    y = x + 1
    z = y * 2
    del y
    return z


STORES = [(stores, lambda: (t(3),)), (stores_in_loop, lambda: (t(3),)), (stores_a_cell, lambda: (t(3),)),
          (stores_a_rebound_cell, lambda: (t(3),)), (deletes, lambda: (t(3),))]


@pytest.mark.parametrize("fn,make_args", STORES, ids=[c[0].__name__ for c in STORES])
def test_a_break_before_a_store_hands_on_what_it_bound(fn, make_args):
    for points in each_offset(fn.__code__, "STORE_FAST", "STORE_DEREF", "DELETE_FAST"):
        run_forced(fn, make_args, points)


def test_a_break_before_a_store_inside_comprehensions():
    if versions.INLINED_COMPREHENSIONS:  # 3.12+: both run inline in the function's own code
        codes = [nested_comprehension.__code__]
    else:
        outer = next(c for c in nested_comprehension.__code__.co_consts if hasattr(c, "co_code"))
        codes = [outer, next(c for c in outer.co_consts if hasattr(c, "co_code"))]
    for code in codes:
        # Not the stores of the comprehensions' cleanup handlers (after the return): no
        # exception reaches them here, so a break there never fires.
        end = next(inst.offset for inst in decode(code) if inst.opname == "RETURN_VALUE")
        for points in each_offset(code, "STORE_FAST", "STORE_DEREF"):
            if points[0][1] < end:
                run_forced(nested_comprehension, lambda: (t(3),), points)


# ---- a break before a read of a local the trace rebound or deleted ----------------------------
def reads_rebound(x):
    x = x * 2
    y = x + 1
    note()
    return y * x
def reads_after_delete(x):
    y = x * 2
    del x
    return y + x


READS = [(reads_rebound, lambda: (t(3),)), (reads_after_delete, lambda: (t(3),))]


@pytest.mark.parametrize("fn,make_args", READS, ids=[c[0].__name__ for c in READS])
def test_a_break_before_a_read_sees_the_traced_value(fn, make_args):
    for points in each_offset(fn.__code__, "LOAD_FAST", "LOAD_DEREF"):
        run_forced(fn, make_args, points)


def test_reading_a_deleted_local_raises_as_in_eager():
    """A real break: reading a deleted local cannot be traced, and the instruction that runs
    eagerly must see the local as deleted, not as the frame's entry value."""
    def deleted_argument(x):
        y = x * 2
        del x
        return y + x

    def deleted_after_rebinding(x):
        x = x * 2
        y = x + 1
        del x
        return y - x

    for fn in (deleted_argument, deleted_after_rebinding):
        check(fn, t(3), graphs=1)
        assert sum(counters["graph_break"].values()) == 1


# ---- an object made while tracing is one object wherever the break hands it on ----------------
@framegraph.disable
def opaque(x):
    EVENTS.append("opaque")
    return x + 0.5


class Obj:
    pass


def list_alias(x):
    out = [x]
    out.append(opaque(x))          # the break's stack holds out.append, the locals hold out
    return out[0] + out[1]
def dict_alias(x):
    d = {"a": x}
    d.update(b=opaque(x))
    return d["a"] + d["b"]
def object_alias(x):
    o = Obj()
    o.items = [x]
    o.items.append(opaque(x))
    return len(o.items), o.items[1]
def iterator_alias(xs):
    it = iter(xs)
    first = next(it)
    return first * next(it) + next(it, 7)
def returned_twice(x):
    a = [x]
    b = {"k": a}
    return a, a, b


ALIASES = [(list_alias, lambda: (t(3),)), (dict_alias, lambda: (t(3),)), (object_alias, lambda: (t(3),))]


@pytest.mark.parametrize("fn,make_args", ALIASES, ids=[c[0].__name__ for c in ALIASES])
def test_a_new_object_the_break_hands_on_twice_stays_one_object(fn, make_args):
    check(fn, *make_args(), graphs=None)
    assert any("opaque" in reason for reason in counters["graph_break"]), "the test must break at opaque"
    for points in each_offset(fn.__code__, "LOAD_FAST", "LOAD_METHOD", "CALL"):
        run_forced(fn, make_args, points)


def test_an_iterator_the_break_hands_on_twice_stays_one_iterator():
    for points in each_offset(iterator_alias.__code__, "LOAD_FAST", "CALL"):
        run_forced(iterator_alias, lambda: ([t(3), t(3), t(3)],), points)


def test_a_returned_object_keeps_its_aliases():
    framegraph.reset()
    a, a_again, b = framegraph.compile(returned_twice, backend="eager")(t(3))
    assert a is a_again and b["k"] is a


# ---- a break while a closure is being made -----------------------------------------------------
# 3.13 loads a cell for a closure with LOAD_FAST (3.11, 3.12: LOAD_CLOSURE) and finishes a function
# after MAKE_FUNCTION with SET_FUNCTION_ATTRIBUTE; split there, the function made would close
# over the first half's cell (the resume function stores to its own), or be a real function
# the trace cannot finish. Such a point makes the frame run eagerly.
def recursive_closure(x):
    def power(v, n):
        if n == 0:
            return v
        return power(v * 2, n - 1)
    return power(x, 2)
def closure_with_defaults(x):
    scale = 3.0
    def accumulate(v, acc=None, *, k=2.0):
        acc = [] if acc is None else acc
        acc.append(v * k * scale)
        return acc
    return accumulate(x, accumulate(x * 2))


@pytest.mark.parametrize("fn", [recursive_closure, closure_with_defaults])
def test_a_break_while_a_closure_is_made_keeps_its_cells(fn):
    names = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_CLOSURE", "BUILD_TUPLE", "LOAD_CONST", "MAKE_FUNCTION",
             "SET_FUNCTION_ATTRIBUTE", "STORE_DEREF", "LOAD_DEREF")
    for points in each_offset(fn.__code__, *names):
        # A cell made while tracing cannot be handed on: a point where one is on the stack
        # makes the frame run eagerly when the break is compiled, before it fires.
        run_forced(fn, lambda: (t(3),), points, must_fire=False)


# ---- a function of another module made before a break -------------------------------------------
# Rebuilt after the graph, it keeps its own module's globals (MAKE_FUNCTION would give it the
# compiled frame's, where its global names are not defined).
def context_manager_made_before_a_break(x):
    @contextlib.contextmanager
    def pair(t):
        yield t * 2, t * 3
    note(x)
    with pair(x) as (a, b):
        y = a + b
    return y


def foreign_closure_across_a_break(x):
    scale = scaler(2.0)
    note(x)
    return scale(x), scale


@pytest.mark.parametrize("fn", [context_manager_made_before_a_break, foreign_closure_across_a_break])
def test_a_function_of_another_module_keeps_its_globals_across_a_break(fn):
    run_forced(fn, lambda: (t(3),), [])
    for points in each_offset(fn.__code__, "LOAD_FAST", "CALL", "STORE_FAST"):
        run_forced(fn, lambda: (t(3),), points, must_fire=False)


# ---- an attribute the trace sets and deletes again on an object that exists after the graph ------
# The replay must leave the attribute absent whether or not the object had it before the call
# (deleting it again would raise AttributeError when it never had it).
class Plain:
    pass


def set_then_delete(x, obj):
    obj.a = x + 1
    obj.b = obj.a * 2
    del obj.a
    return obj.b, hasattr(obj, "a")


def made_then_set_then_deleted(x):
    obj = Hooked()
    note(x)  # obj exists before the graph that sets and deletes `a`
    obj.a = x + 1
    obj.b = obj.a * 2
    del obj.a
    return obj.b, obj.history, hasattr(obj, "a")


def _with_a(cls):
    obj = cls()
    object.__setattr__(obj, "a", 0)
    return obj


@pytest.mark.parametrize("make_obj", [Plain, Hooked, lambda: _with_a(Plain), lambda: _with_a(Hooked)],
                         ids=["plain", "hooked", "plain_had_it", "hooked_had_it"])
def test_an_attribute_set_and_deleted_in_the_trace_is_absent_after_it(make_obj):
    check(set_then_delete, t(3), make_obj())
    run_forced(made_then_set_then_deleted, lambda: (t(3),), [])


# ---- a break while an object's __dict__ is held ------------------------------------------------
# Handed on, the dict would be an input of the resume function of its own, whose writes the
# object's attribute reads there would not see; such a point makes the frame run eagerly.
def writes_through_instance_dict(x):
    bag = Plain()
    bag.g = 1.0
    bag.__dict__["g"] = x.max()
    d = bag.__dict__
    d["extra"] = 4
    popped = bag.__dict__.pop("extra")
    return x * bag.g + popped, list(vars(bag))


def test_a_break_while_an_instance_dict_is_held_keeps_it_one_with_the_object():
    fn = writes_through_instance_dict
    for points in each_offset(fn.__code__, "LOAD_ATTR", "LOAD_METHOD", "STORE_SUBSCR", "STORE_FAST", "LOAD_FAST",
                              "LOAD_CONST", "CALL"):
        run_forced(fn, lambda: (t(3),), points, must_fire=False)


# ---- a grad-mode manager made eagerly and entered in the trace ---------------------------------
# Not entered yet, a real no_grad/enable_grad object has no `prev` (its __enter__ records it).
make_managers = framegraph.disable(lambda: (torch.no_grad(), torch.enable_grad()))  # a break


def enters_managers_made_eagerly(x):
    off, on = make_managers()
    with off:
        y = x * 2
        with on:
            z = x * 3
    return y, z, y.requires_grad, z.requires_grad


def test_a_grad_mode_manager_not_yet_entered_is_received():
    run_forced(enters_managers_made_eagerly, lambda: (t(3, requires_grad=True),), [])


# ---- an exception raised by the instruction a break runs eagerly, inside a `with` block ---------
# The compiled frame runs that instruction outside the original's exception table; its
# exception must still reach the block's handler (a resume function starting there): the
# manager's __exit__ sees it, `suppress` swallows it, a grad-mode block restores the mode,
# a try around the block catches it, and a loop around the block goes on.
def raises_at_a_break_inside_suppress(x):
    with contextlib.suppress(ValueError):
        x = x + 1
        time.strptime("not a year", "%Y")  # a break (time is not traced), raising ValueError
        x = x * 100
    return x + 1


def raises_at_a_break_inside_no_grad(x):
    with torch.no_grad():
        y = x * 2
        time.strptime("not a year", "%Y")
    return y


def raises_at_a_break_inside_no_grad_inside_try(x):
    try:
        with torch.no_grad():
            x = x * 2
            time.strptime("not a year", "%Y")
    except ValueError:
        x = x + 1
    return x


def test_an_exception_at_a_break_inside_suppress_is_suppressed():
    check(raises_at_a_break_inside_suppress, t(3), graphs=None)


def test_an_exception_at_a_break_inside_no_grad_is_caught_around_it():
    check(raises_at_a_break_inside_no_grad_inside_try, t(3, requires_grad=True), graphs=None)


def test_an_exception_at_a_break_inside_no_grad_restores_grad_mode():
    framegraph.reset()
    compiled = framegraph.compile(raises_at_a_break_inside_no_grad, backend="eager")
    try:
        with pytest.raises(ValueError):
            compiled(t(3, requires_grad=True))
        assert torch.is_grad_enabled(), "grad mode left off after the exception"
    finally:
        torch.set_grad_enabled(True)


class Recorder(Tracker):
    """A manager of our own: logs what its __exit__ sees, swallows ValueError only."""

    def __exit__(self, kind, value, tb):
        super().__exit__(kind, value, tb)
        return kind is ValueError


def suppressed_in_a_loop(x):
    for i in range(3):
        with contextlib.suppress(ZeroDivisionError):
            x = x + 1 / (i - 1)  # raises at i == 1; the loop goes on
            x = x * 2
    return x
def user_manager_inside_no_grad(x, log):
    with torch.no_grad():
        with Recorder(log):
            y = x * 2
            log.append(int("not a number"))
        y = y + 1
    return y, torch.is_grad_enabled()
def user_manager_at_a_real_break(x, log):
    with torch.no_grad():
        with Recorder(log):
            y = x * 2
            log.append(time.strptime("not a year", "%Y"))  # a break (time is not traced)
        y = y + 1
    return y, torch.is_grad_enabled()
def user_manager_lets_it_through(x, log):
    with Recorder(log):
        y = x * 2
        log.append({}["missing"])
    return y
def comprehension_inside_suppress(x):
    s = x
    with contextlib.suppress(ValueError):
        x = x + sum([int(s) for s in ["1", "no"]])  # 3.12+ inlines it: its cleanup puts s back
    return x * 2, s
def ambiguous_truth_inside_suppress(x):
    with contextlib.suppress(RuntimeError):
        if x > 0:  # a break at the jump; bool() of three values raises
            x = x + 1
        x = x * 3
    return x * 2


def every_offset(fn):
    """Break points before every instruction of `fn`'s body (after its RESUME), one at a time."""
    instructions = decode(fn.__code__)
    return [[(fn.__code__, inst.offset)] for inst in instructions[prefix_end(instructions):]]


RAISING_IN_BLOCKS = [
    (suppressed_in_a_loop, lambda: (t(3),)),
    (user_manager_inside_no_grad, lambda: (t(3, requires_grad=True), [])),
    (user_manager_lets_it_through, lambda: (t(3), [])),
    (comprehension_inside_suppress, lambda: (t(3),)),
    (ambiguous_truth_inside_suppress, lambda: (t(3),)),
]


@pytest.mark.parametrize("fn,make_args", RAISING_IN_BLOCKS, ids=[fn.__name__ for fn, _ in RAISING_IN_BLOCKS])
def test_an_exception_at_a_forced_break_reaches_the_handler_of_its_block(fn, make_args):
    points = every_offset(fn)
    reached = 0
    for point in points:
        reached += run_forced(fn, make_args, point, must_fire=False, must_reach=False)
        assert torch.is_grad_enabled(), f"grad mode left off, breaking at {point}"
    assert reached > len(points) // 2, f"only {reached} of {len(points)} points were reached"


def test_an_exception_at_a_real_break_reaches_a_user_manager():
    check(user_manager_at_a_real_break, t(3, requires_grad=True), [], graphs=None)
    assert counters["graph_break"], "nothing broke: the test did not test anything"


def test_an_exception_let_through_a_block_shows_its_frame_once():
    def frames_of(error, fn):
        return [(f.name, f.lineno) for f in traceback.extract_tb(error.__traceback__) if f.name == fn.__name__]

    fn = raises_at_a_break_inside_no_grad
    with pytest.raises(ValueError) as eager:
        fn(t(3))
    framegraph.reset()
    with pytest.raises(ValueError) as ours:
        framegraph.compile(fn, backend="eager")(t(3))
    assert frames_of(ours.value, fn) == frames_of(eager.value, fn)


def test_explain_says_why_the_handling_of_such_an_exception_runs_eagerly():
    framegraph.reset()
    out = framegraph.explain(raises_at_a_break_inside_suppress)(t(3))
    handled = [r for r in out.break_reasons if r.gb_type == "Unsupported exception handling"]
    assert len(handled) == 1, [str(r) for r in out.break_reasons]
    assert "ValueError" in handled[0].reason and "move the call that raises out" in str(out)


# ---- a grad-mode manager made in the trace, entered, and still held at a break --------------------
# Its `__exit__` on the stack and the local naming it must be one real manager, in the state
# its methods read: a break inside its exit sequence used to hand on a stand-in that could
# only be left, so entering the manager again raised.
def grad_manager_reentered(x, make):
    ctx = make()
    with ctx:
        a = x * 2
    note()
    with ctx:
        b = x * 3
    return a.requires_grad, b.requires_grad, a + b, torch.is_grad_enabled()


@pytest.mark.parametrize("make", [torch.no_grad, torch.enable_grad, lambda: torch.set_grad_enabled(False)],
                         ids=["no_grad", "enable_grad", "set_grad_enabled"])
def test_a_grad_mode_manager_held_at_a_break_can_be_entered_again(make):
    points = every_offset(grad_manager_reentered)
    reached = 0
    for point in points:
        reached += run_forced(grad_manager_reentered, lambda: (t(3, requires_grad=True), make), point,
                              must_fire=False, must_reach=False)
        assert torch.is_grad_enabled(), f"grad mode left off, breaking at {point}"
    assert reached > len(points) // 2, f"only {reached} of {len(points)} points were reached"


# ---- a break inside a block whose mode tracing really entered ---------------------------------
def inference_block(x):
    with torch.inference_mode():
        y = x * 2
        note()
    return y
def autocast_block(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x.T
        note()
    return y


@pytest.mark.parametrize("fn", [inference_block, autocast_block])
def test_a_break_in_a_mode_block_leaves_torch_state_as_it_was(fn):
    check(fn, t(3, 3), graphs=0)  # no split inside such a block: the frame runs eagerly
    assert not torch.is_inference_mode_enabled() and not torch.is_autocast_enabled("cpu")
    assert_same(torch.ones(2) * 2, torch.full((2,), 2.0))  # dispatch works as before


# ---- the setting itself -------------------------------------------------------------------------
def loop(x):
    for i in range(3):
        x = x * 2 + i
    return x


def test_a_forced_break_fires_again_in_the_resume_functions_of_its_function():
    """Like an unsupported instruction, a forced break in a loop breaks on every trip, in the
    resume function too; the trips share one resume function, so later calls only hit."""
    add = next(inst.offset for inst in decode(loop.__code__) if inst.opname == "BINARY_OP")
    for spec in ({(loop.__code__, add)}, {("loop", add)}, lambda code, offset: code is loop.__code__ and offset == add):
        framegraph.reset()
        counters.clear()
        backend = CountingBackend()
        with framegraph.config.patch(debug_force_break=spec):
            compiled = framegraph.compile(loop, backend=backend)
            assert_same(loop(t(3)), compiled(t(3)))
            graphs = backend.graph_count
            forced = sum(n for k, n in counters["graph_break"].items() if k.startswith("Forced graph break"))
            assert forced == 3, dict(counters["graph_break"])  # once per trip round the loop
            for _ in range(2):
                assert_same(loop(t(3)), compiled(t(3)))
            assert backend.graph_count == graphs


@pytest.mark.parametrize("bad", [{("loop", "8")}, {(loop, 8)}, [(loop.__code__,)], 3])
def test_a_malformed_setting_is_refused(bad):
    with pytest.raises(TypeError, match="debug_force_break"):
        framegraph.config.debug_force_break = bad
    assert framegraph.config.debug_force_break is None


# ---- an iterator a loop runs and a local names -------------------------------------------------
def loop_and_next(x, xs):
    it = iter(xs)
    out = []
    for a in it:
        note()                     # each trip breaks, with `it` on the stack and in a local
        out.append(a * next(it, x))
    return out


def test_an_iterator_a_loop_runs_and_a_local_names_advances_once():
    run_forced(loop_and_next, lambda: (t(1), [t(1) * i for i in range(5)]), [])


def test_an_exhausted_iterator_argument_is_traced_as_empty_and_guarded_so():
    def drain(x, it):
        return x * len(list(it))

    def exhausted():
        it = iter([1])
        list(it)  # run to StopIteration: it lets go of its list
        return it

    framegraph.reset()
    backend = CountingBackend()
    compiled = framegraph.compile(drain, backend=backend)
    assert_same(compiled(t(2), exhausted()), drain(t(2), exhausted()))
    assert_same(compiled(t(2), exhausted()), drain(t(2), exhausted()))  # a cache hit
    assert backend.graph_count == 1
    assert_same(compiled(t(2), iter([1, 2])), drain(t(2), iter([1, 2])))  # not exhausted: recompiled
    assert backend.graph_count == 2


# ---- an object whose __getattribute__ watches every read ----------------------------------------
# framegraph's own look at it (what kind of value is this?) must not show among its reads: an
# isinstance() that fails asks the object for __class__ through that __getattribute__.
def reads_a_watched_object(x, watched):
    y = x * watched.w
    note()
    return y + watched.w, list(object.__getattribute__(watched, "reads"))


def test_an_object_watching_its_reads_sees_only_the_programs():
    from .parity_attributes import Traced

    expected = reads_a_watched_object(t(3), Traced(t(3)))
    assert expected[1] == ["w", "w"]
    fired = 0
    for points in [[], *every_offset(reads_a_watched_object)]:
        framegraph.reset()
        counters.clear()
        with framegraph.config.patch(debug_force_break=frozenset(points)):
            compiled = framegraph.compile(reads_a_watched_object, backend="eager")
            for call in range(3):  # fresh objects: a copy would read the original's attributes
                assert_same(expected, compiled(t(3), Traced(t(3))), f"call {call}, breaking at {points}")
        fired += any(k.startswith("Forced graph break") for k in counters["graph_break"])
        assert not counters["fallback"], dict(counters["fallback"])
    assert fired, "no forced break fired: the test did not test anything"
