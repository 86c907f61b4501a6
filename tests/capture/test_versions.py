"""Bytecode that only 3.12 or 3.13 has, each with a graph break in the middle of it.

Every case is differential (compiled equals eager: results, mutated inputs, eager side
effects, exceptions) with exact graph and break counts, and asserts that the construct it is
about really compiles to the opcode it names on this interpreter; a case whose opcode the
running version does not have is skipped with the version's reason. Three calls: the second
and third must compile nothing (a guard that cannot hold twice would recompile every call).
"""

from __future__ import annotations

import dataclasses
import dis
import sys
import types
from collections.abc import Callable

import pytest
import torch

import framegraph
from framegraph import convert_frame
from framegraph.bytecode import decode
from framegraph.counters import counters

from .helpers import assert_same, clone
from .test_graph_breaks import EVENTS, note, opaque, run_breaks, t

VERSION = sys.version_info[:2]


@framegraph.disable
def opaque_int(n):
    EVENTS.append(("int", n))
    return n + 1


@framegraph.disable
def opaque_pair(x):
    EVENTS.append("pair")
    return x + 1, x - 1


def opcodes(fn: Callable) -> set[str]:
    """The opnames of `fn`'s code and of the code objects it makes (generic scopes...): raw,
    and as framegraph decodes them (3.13's COMPARE_OP with the bool bit is COMPARE_OP; TO_BOOL)."""
    names, todo = set(), [fn.__code__]
    while todo:
        code = todo.pop()
        names |= {i.opname for i in dis.get_instructions(code)} | {i.opname for i in decode(code)}
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def from_source(source: str, name: str) -> Callable:
    """A function written in syntax older interpreters cannot parse (PEP 695 generics)."""
    namespace = {"torch": torch, "note": note, "opaque": opaque, "opaque_int": opaque_int}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


# ---- 3.12: LOAD_SUPER_ATTR -------------------------------------------------------------------
class Scaler:
    offset = 0.5

    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


class Shifted(Scaler):
    def apply(self, x):
        # super().apply is loaded (LOAD_SUPER_ATTR with the method bit), then its argument breaks.
        return super().apply(opaque(x) + 1) - self.k

    def apply_two_arguments(self, x):
        return super(Shifted, self).apply(opaque(x))

    def shifted(self, x):
        y = x * 2
        note()
        return y + super().offset  # a class attribute through super, after the break


class ThroughSuper:
    """Every attribute read runs `super().__getattribute__(name)` (LOAD_SUPER_ATTR), which
    framegraph traces as object.__getattribute__: one graph, no break."""

    def __init__(self, k):
        self.k = k

    def __getattribute__(self, name):
        return super().__getattribute__(name)


def super_method_arguments_break(x, obj):
    return obj.apply(x) * 2


def super_with_two_arguments(x, obj):
    return obj.apply_two_arguments(x) + 1


def super_attribute_after_break(x, obj):
    return obj.shifted(x)


def super_getattribute(x, obj):
    y = x + 1
    return y * obj.k


# ---- 3.12: CALL_INTRINSIC_1 / CALL_INTRINSIC_2 ---------------------------------------------------
def unary_positive_of_break(x):
    return +opaque(x * 2) * 3  # INTRINSIC_UNARY_POSITIVE on what the break returned


def starred_tuple_with_break(x, xs):
    parts = (*xs, opaque(x), x * 2)  # BUILD_LIST; LIST_EXTEND; ...; INTRINSIC_LIST_TO_TUPLE
    return torch.stack(parts).sum(0)


GENERIC = """
def generic_function_with_break(x):
    def scaled[T](value: T, k) -> T:  # the generic scope: INTRINSIC_TYPEVAR, SET_FUNCTION_TYPE_PARAMS
        return value * k
    y = scaled(x, 2)
    note()
    return scaled(y, 3) + 1
"""


def except_star_with_break(x):
    try:
        raise ExceptionGroup("two", [ValueError(1), KeyError(2)])
    except* ValueError:  # INTRINSIC_PREP_RERAISE_STAR; a break inside a handler runs the frame eagerly
        note()
        x = x + 1
    except* KeyError:
        x = x * 2
    return x


# ---- 3.12: END_FOR ------------------------------------------------------------------------------
def nested_loops_with_break(x, n):
    for i in range(n):
        for j in range(2):
            x = x + i * j
            note()
        x = x * 2  # after the inner loop's END_FOR, in a resume function
    return x


def loop_ends_in_resume_function(xs):
    acc = xs[0] * 0
    for v in xs:
        acc = acc + v
        note()
    return acc - 1


# ---- 3.12: inlined comprehensions (PEP 709) -------------------------------------------------
def comprehension_restores_bound_local(xs):
    v = xs[0] * 10  # LOAD_FAST_AND_CLEAR saves it; the cleanup puts it back
    ys = [opaque(v) + 1 for v in xs]
    return v, ys


def comprehension_restores_unbound_local(xs, bind):
    if bind:
        v = 1
    ys = [opaque(v) * 2 for v in xs]  # saves v unbound (a NULL) when bind is false
    return ys, v  # UnboundLocalError when bind is false, as before the comprehension


def nested_comprehensions_with_break(xs):
    return {i: [opaque(v) * i for v in xs] for i in range(2)}


def set_and_dict_comprehension_with_break(x, keys):
    scaled = {k: opaque(x) * len(k) for k in keys}
    # A set being built is handed to the resume function, which adds to it.
    return scaled, {opaque_int(len(k)) for k in keys}


def comprehension_inside_no_grad(xs):
    with torch.no_grad():
        ys = [opaque(v) * 2 for v in xs]
    return ys, torch.is_grad_enabled()


def comprehension_inside_try(xs):
    try:  # a try around it: the cleanup re-raises into this handler, so the frame runs eagerly
        return [opaque(v) for v in xs]
    except RuntimeError:
        return []


# ---- 3.12: RETURN_CONST, BINARY_SLICE, STORE_SLICE ----------------------------------------------
def return_const_after_break(x, out):
    out.append(x * 2)
    note()
    out.append(x + 1)
    return None


def return_const_in_branch(x, flag):
    y = opaque(x)
    if flag:
        return 3
    return y


def slice_bounds_break(x, n):
    return x[opaque_int(n):n + 3] * 2  # BINARY_SLICE, the start computed by a break


def slice_store_break(x, n):
    buf = x.clone()
    buf[1:opaque_int(n)] = x[:n] * 3  # STORE_SLICE
    return buf


def list_slices_with_break(xs, n):
    ys = list(xs)
    ys[:opaque_int(n)] = ys[n:]
    return ys[1:]


# ---- 3.13: TO_BOOL, CALL_KW, superinstructions, SET_FUNCTION_ATTRIBUTE, LOAD_FAST_CHECK ------------
def if_on_tensor_truth(x):
    y = x * 2
    if y.sum():  # TO_BOOL on a tensor: the break splits at the jump after it
        return y + 1
    return y - 1


def or_on_tensors(x, y):
    return (x.sum() > 100) or y  # COPY; TO_BOOL; POP_JUMP_IF_TRUE with the value kept


def while_on_tensor(x):
    x = x.abs()
    while x.sum() < 20:
        x = x * 2
    return x


def keyword_call_with_break(x):
    return torch.clamp(x, min=opaque(x).min() * 0, max=x.max() / 2)  # CALL_KW after the break


def keyword_call_that_breaks(x):
    y = x * 2
    note(y, x)  # a break at the keyword-less call
    return torch.add(y, opaque(x), alpha=3)


def superinstructions_around_break(x):
    a, b = opaque_pair(x)  # UNPACK_SEQUENCE; STORE_FAST_STORE_FAST, in the resume function
    note(a, b)  # LOAD_FAST_LOAD_FAST feeds the breaking call
    return (c := a * b) * c + a  # STORE_FAST_LOAD_FAST (only within one line)


def function_attributes_around_break(x):
    def scaled(y, k=opaque(x).sum(), *, bias: float = 1.0):  # SET_FUNCTION_ATTRIBUTE after the break
        return y * k + bias
    return scaled(x), scaled(x, 2.0, bias=0.5)


def maybe_unbound_after_break(x, flag):
    if flag:
        y = x * 2
    note()
    return y + 1  # LOAD_FAST_CHECK: y may be unbound (UnboundLocalError when flag is false)


@dataclasses.dataclass
class Case:
    fn: Callable
    args: Callable[[], tuple]
    graphs: int
    breaks: int
    ops: frozenset[str]  # raw opnames the construct compiles to
    since: tuple[int, int]
    why: str  # what older versions compile it to
    where: Callable  # the function whose code holds them


def case(fn, args, graphs, breaks, ops, since, why, where=None):
    return Case(fn, args, graphs, breaks, frozenset(ops), since, why, where or fn)


# A break inside a comprehension: on 3.12+ it resumes inside the comprehension.
CASES = [
    case(super_method_arguments_break, lambda: (t(3), Shifted(2.0)), 2, 2, ["LOAD_SUPER_ATTR"], (3, 12),
         "3.11 calls super() and loads the method with LOAD_METHOD", Shifted.apply),
    case(super_with_two_arguments, lambda: (t(3), Shifted(3.0)), 2, 2, ["LOAD_SUPER_ATTR"], (3, 12),
         "3.11 calls super(cls, self) and loads the method with LOAD_METHOD", Shifted.apply_two_arguments),
    case(super_attribute_after_break, lambda: (t(3), Shifted(1.0)), 2, 3, ["LOAD_SUPER_ATTR"], (3, 12),
         "3.11 calls super() and reads the attribute with LOAD_ATTR", Shifted.shifted),
    case(super_getattribute, lambda: (t(3), ThroughSuper(2.0)), 1, 0, ["LOAD_SUPER_ATTR"], (3, 12),
         "3.11 calls super() and loads the method with LOAD_METHOD", ThroughSuper.__getattribute__),
    case(unary_positive_of_break, lambda: (t(3),), 2, 1, ["CALL_INTRINSIC_1"], (3, 12),
         "3.11 has UNARY_POSITIVE"),
    case(starred_tuple_with_break, lambda: (t(3), [t(3), t(3) * 2]), 1, 1, ["CALL_INTRINSIC_1"], (3, 12),
         "3.11 has LIST_TO_TUPLE"),
    case(except_star_with_break, lambda: (t(3),), 0, 1, ["CALL_INTRINSIC_2"], (3, 12),
         "3.11 has PREP_RERAISE_STAR"),
    case(nested_loops_with_break, lambda: (t(3), 2), 5, 4, ["END_FOR"], (3, 12),
         "3.11's FOR_ITER pops the iterator itself"),
    case(loop_ends_in_resume_function, lambda: ([t(3), t(3), t(3)],), 4, 3, ["END_FOR"], (3, 12),
         "3.11's FOR_ITER pops the iterator itself"),
    case(comprehension_restores_bound_local, lambda: ([t(2), t(2)],), 3, 2, ["LOAD_FAST_AND_CLEAR"], (3, 12),
         "3.11 runs a comprehension as a function of its own"),
    case(comprehension_restores_unbound_local, lambda: ([t(2), t(2)], False), 2, 3, ["LOAD_FAST_AND_CLEAR"],
         (3, 12), "3.11 runs a comprehension as a function of its own"),
    case(comprehension_restores_unbound_local, lambda: ([t(2), t(2)], True), 2, 2, ["LOAD_FAST_AND_CLEAR"],
         (3, 12), "3.11 runs a comprehension as a function of its own"),
    case(nested_comprehensions_with_break, lambda: ([t(2), t(2)],), 4, 4, ["LOAD_FAST_AND_CLEAR"], (3, 12),
         "3.11 runs a comprehension as a function of its own"),
    case(set_and_dict_comprehension_with_break, lambda: (t(2), ["ab", "c"]), 2, 4, ["LOAD_FAST_AND_CLEAR"], (3, 12),
         "3.11 runs a comprehension as a function of its own"),
    # no_grad's switches before the comprehension are one call in the generated code, not a graph
    case(comprehension_inside_no_grad, lambda: ([t(2, requires_grad=True), t(2, requires_grad=True)],), 2, 2,
         ["LOAD_FAST_AND_CLEAR"], (3, 12), "3.11 runs a comprehension as a function of its own"),
    case(comprehension_inside_try, lambda: ([t(2), t(2)],), 0, 1, ["LOAD_FAST_AND_CLEAR"], (3, 12),
         "3.11 runs a comprehension as a function of its own"),
    case(return_const_after_break, lambda: (t(3), []), 2, 1, ["RETURN_CONST"], (3, 12),
         "3.11 has LOAD_CONST; RETURN_VALUE"),
    case(return_const_in_branch, lambda: (t(3), True), 0, 1, ["RETURN_CONST"], (3, 12),
         "3.11 has LOAD_CONST; RETURN_VALUE"),
    case(slice_bounds_break, lambda: (t(8), 2), 1, 1, ["BINARY_SLICE"], (3, 12),
         "3.11 builds a slice and subscripts with it"),
    case(slice_store_break, lambda: (t(8), 3), 2, 1, ["STORE_SLICE"], (3, 12),
         "3.11 builds a slice and stores with STORE_SUBSCR"),
    case(list_slices_with_break, lambda: ([1, 2, 3, 4], 2), 0, 1, ["STORE_SLICE", "BINARY_SLICE"], (3, 12),
         "3.11 builds slices and uses STORE_SUBSCR / BINARY_SUBSCR"),
    case(if_on_tensor_truth, lambda: (t(4),), 2, 1, ["TO_BOOL"], (3, 13),
         "3.11 and 3.12 jump on the value itself"),
    case(or_on_tensors, lambda: (t(4), t(4)), 1, 1, ["TO_BOOL"], (3, 13),
         "3.11 has JUMP_IF_TRUE_OR_POP, 3.12 jumps on the value itself"),
    case(while_on_tensor, lambda: (t(4),), 2, 2, ["TO_BOOL"], (3, 13),
         "3.11 and 3.12 jump on the value itself"),
    case(keyword_call_with_break, lambda: (t(4),), 1, 1, ["CALL_KW"], (3, 13), "3.11 and 3.12 have KW_NAMES"),
    case(keyword_call_that_breaks, lambda: (t(4),), 2, 2, ["CALL_KW"], (3, 13), "3.11 and 3.12 have KW_NAMES"),
    case(superinstructions_around_break, lambda: (t(4),), 1, 2,
         ["STORE_FAST_STORE_FAST", "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST"], (3, 13),
         "3.11 and 3.12 have separate LOAD_FAST / STORE_FAST"),
    case(function_attributes_around_break, lambda: (t(4),), 1, 1, ["SET_FUNCTION_ATTRIBUTE"], (3, 13),
         "3.11 and 3.12 give MAKE_FUNCTION flags"),
    case(maybe_unbound_after_break, lambda: (t(4), True), 2, 1, ["LOAD_FAST_CHECK"], (3, 12),
         "3.11's LOAD_FAST checks for an unbound local itself"),
    case(maybe_unbound_after_break, lambda: (t(4), False), 0, 2, ["LOAD_FAST_CHECK"], (3, 12),
         "3.11's LOAD_FAST checks for an unbound local itself"),
]
if VERSION >= (3, 12):
    # Type parameters are not traced: the generic scope breaks at INTRINSIC_TYPEVAR and its
    # resume function, handed a TypeVar, runs eagerly (two of each: the caller's call, then the scope).
    CASES.append(case(from_source(GENERIC, "generic_function_with_break"), lambda: (t(3),), 2, 4,
                      ["CALL_INTRINSIC_2"], (3, 12), "3.11 has no generic functions"))


def run_compiling_once(fn, args, graphs, breaks):
    """run_breaks (three calls equal eager, exact counts), plus: nothing compiles after the
    first call. Eager exceptions must be raised alike."""
    compiles: list[str] = []
    observer = lambda code, check, timings: compiles.append(code.co_qualname)  # noqa: E731
    convert_frame.compile_observers.append(observer)
    try:
        try:
            fn(*clone(args))
        except Exception as error:
            framegraph.reset()
            counters.clear()
            compiled = framegraph.compile(fn, backend="eager")
            for _ in range(3):
                with pytest.raises(type(error), match=str(error)):
                    compiled(*clone(args))
            assert sum(counters["graph_break"].values()) == breaks, dict(counters["graph_break"])
            return
        compiled = run_breaks(fn, args, graphs, breaks, calls=1)
        first = len(compiles)
        for _ in range(2):
            EVENTS.clear()
            expected = fn(*clone(args))
            expected_events = list(EVENTS)
            EVENTS.clear()
            assert_same(expected, compiled(*clone(args)))
            assert EVENTS == expected_events
        assert compiles[first:] == [], f"later calls compiled {compiles[first:]}"
    finally:
        convert_frame.compile_observers.remove(observer)


@pytest.mark.parametrize("c", CASES, ids=[f"{c.fn.__name__}-{i}" for i, c in enumerate(CASES)])
def test_break_in_the_middle_of_version_bytecode(c: Case):
    if VERSION < c.since:
        pytest.skip(f"{'/'.join(sorted(c.ops))}: {c.since[0]}.{c.since[1]}+ bytecode ({c.why})")
    assert c.ops <= opcodes(c.where), f"{c.where.__qualname__} compiles to {sorted(opcodes(c.where))}"
    run_compiling_once(c.fn, c.args(), c.graphs, c.breaks)


# ---- 3.13: frame-local proxies (PEP 667) ------------------------------------------------------
# On 3.13 a frame's f_locals is a write-through view of its locals; before, a snapshot read
# back into them nowhere. Split at a break, the frame object would be the first half's, whose
# locals are not the function's, so a frame that reads its own frame object runs eagerly.
def frame_locals_written(x):
    y = x * 2
    frame = sys._getframe()
    note()
    frame.f_locals["y"] = x * 3  # 3.13: y is now x * 3
    return y + 1


def frame_locals_read_after_break(x):
    y = x * 2
    frame = sys._getframe()
    note()
    return frame.f_locals["y"] + 1


def frame_locals_view_kept(x):
    y = x * 2
    view = sys._getframe().f_locals
    note()
    view["y"] = x * 5  # 3.13: the view writes through
    return y + 1


def _callers_y():
    return sys._getframe(1).f_locals["y"]


def frame_locals_read_by_a_callee(x):
    y = x * 2
    z = _callers_y()  # the frame getter is called by an inlined callee
    note()
    return z + y


@pytest.mark.parametrize("fn, breaks", [
    (frame_locals_written, 1), (frame_locals_read_after_break, 1), (frame_locals_view_kept, 1),
    (frame_locals_read_by_a_callee, 2),  # then the callee, compiled as a frame of its own
])
def test_a_frame_that_reads_its_own_frame_object_runs_eagerly(fn, breaks):
    run_compiling_once(fn, (t(3),), 0, breaks)
    assert list(counters["graph_break"]) == [next(iter(counters["graph_break"]))]
    assert next(iter(counters["graph_break"])).startswith("Frame introspection")


# ---- runtime differences of 3.12 and 3.13 that a break exposes, checked on every version ------
def range_iterator_across_break(x):
    it = iter(range(2, 7))
    first = next(it)
    note()
    return x * first + next(it), list(it)  # 3.12+ reduce a range iterator to the rest


@framegraph.disable
def drain(it):
    EVENTS.append(list(it))


def exhausted_list_iterator_across_break(x, xs):
    it = iter(xs)
    drain(it)  # eagerly: exhausted, it lets go of its list and reduces to (iter, ([],))
    return x + 1, list(it)


def exhausted_reversed_across_break(x, xs):
    it = reversed(xs)
    drain(it)  # exhausted: (iter, ([],)), or on 3.13 (reversed, ([],))
    return x + 1, list(it)


@pytest.mark.parametrize("fn, args, graphs", [
    (range_iterator_across_break, lambda: (t(3),), 1),
    (exhausted_list_iterator_across_break, lambda: (t(3), [1, 2]), 1),
    (exhausted_reversed_across_break, lambda: (t(3), [1, 2]), 1),
])
def test_iterators_handed_on_at_a_break(fn, args, graphs):
    run_compiling_once(fn, args(), graphs, 1)


class Impostor:
    """Not a bound method, though it has a `__func__` and a `__self__` like one."""

    def __init__(self, func, obj):
        self.__func__, self.__self__ = func, obj

    def __call__(self, x):
        return x - 100


def call_handed_method(x, method):
    y = x + 1
    note()
    return method(y)


def test_a_bound_method_is_type_checked_before_its_parts():
    obj = Scaler(2.0)
    framegraph.reset()
    compiled = framegraph.compile(call_handed_method, backend="eager")
    x = t(3)
    assert_same(call_handed_method(x, obj.apply), compiled(x, obj.apply))
    impostor = Impostor(Scaler.apply, obj)
    assert_same(call_handed_method(x, impostor), compiled(x, impostor))


def test_a_method_wrapper_argument_is_guarded_by_what_it_wraps():
    # A method-wrapper is a new object at every read: each call hands a new one.
    run_compiling_once(call_handed_method, (t(3), Scaler(2.0).__eq__), 1, 2)
    compiled = framegraph.compile(call_handed_method, backend="eager")
    obj = Scaler(2.0)
    assert_same(call_handed_method(t(3), obj.__ne__), compiled(t(3), obj.__ne__))
