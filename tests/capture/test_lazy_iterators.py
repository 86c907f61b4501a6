"""Laziness is semantics: map, filter, zip, enumerate, reversed, iter() and generators take
exactly the items eager Python takes, when it takes them, across graph breaks and after the
frame returns. Every case logs its side effects (a traced append to a list argument, which the
ledger replays; `note`, which runs eagerly at a graph break) and must log what eager logs, in
the same order, on every call."""

import functools
import itertools

import pytest

import framegraph
from framegraph.counters import counters

from .test_graph_breaks import note, run_breaks
from .test_python_semantics import check_counts, t

def logged(log, value):
    log.append(value)  # traced: the ledger replays the caller's list after the graph
    return value * 2


def keep_even(log, value):
    log.append(("keep", value))
    return value % 2 == 0


def counting(log, n):
    for i in range(n):
        log.append(("gen", i))
        yield i


def guarded_gen(log, n):
    try:
        for i in range(n):
            yield i
    finally:
        log.append("closed")


# ---- lazy iterators across graph breaks -------------------------------------------------------
def map_loop_with_break(x, log):
    for v in map(functools.partial(logged, log), range(6)):
        x = x + v
        note(v)
        if v >= 4:
            break
    return x


def map_stepped_around_break(x, log):
    m = map(functools.partial(logged, log), range(5))
    a = next(m)
    note()
    b = next(m)
    return x + a + b


def filter_loop_with_break(x, log):
    for v in filter(functools.partial(keep_even, log), range(6)):
        x = x + v
        note()
        if v >= 2:
            break  # eager never asks about 3, 4 and 5
    return x


def zip_of_map_with_break(x, log):
    for a, b in zip(map(functools.partial(logged, log), range(5)), "ab"):
        x = x + a
        note(b)
    return x


def map_returned_after_break(x, log):
    m = map(functools.partial(logged, log), range(4))
    first = next(m)
    note()
    log.append("resumed")  # before the rest of the map runs
    return x + first, list(m)


def live_list_loop_with_break(x):
    xs = [1, 2]
    out = []
    for v in xs:
        note()
        if v == 1:
            xs.append(3)  # the loop sees it, as eagerly
        out.append(v * 1)
    return x + 1, out


def zip_and_reversed_loops_with_break(xs, ys):
    out = []
    for a, b in zip(xs, ys):
        out.append(a * b)
        note()
    for a in reversed(xs):
        out.append(a + 1)
        note()
    return out


def dict_keys_loop_with_break(x, d):
    for key in d:
        x = x + d[key]
        note()
    return x


def dict_items_loop_with_break(x, d):
    for key, value in d.items():
        x = x + value
        note()
        d["b"] = 10  # the loop reads b's value when it gets there, as eagerly
    return x


def generator_crossing_break(x, log):
    x = x * 2
    g = counting(log, 3)  # a real generator crosses the break: the rest runs eagerly
    note()
    return x, list(g)


# (fn, argument factory, graphs, breaks)
ACROSS_BREAKS = [
    (map_loop_with_break, lambda: (t(2), []), 3, 3),
    (map_stepped_around_break, lambda: (t(2), []), 1, 1),
    (filter_loop_with_break, lambda: (t(2), []), 2, 2),
    (zip_of_map_with_break, lambda: (t(2), []), 2, 2),
    (map_returned_after_break, lambda: (t(2), []), 1, 1),
    (live_list_loop_with_break, lambda: (t(2),), 2, 3),  # `v` is dynamic from its second value
    (zip_and_reversed_loops_with_break, lambda: ([t(2), t(2)], (2, 3)), 4, 4),
    (generator_crossing_break, lambda: (t(2), []), 1, 2),  # the break, then list(g) of the real generator
    (dict_keys_loop_with_break, lambda: (t(2), {"a": 1, "b": 2}), 2, 2),
    # The real items iterator crosses the break; the resume function runs eagerly (one break:
    # the split its translation tried is not counted, since it was never made).
    (dict_items_loop_with_break, lambda: (t(2), {"a": 1, "b": 2}), 1, 2),
]


@pytest.mark.parametrize("fn, make_args, graphs, breaks", ACROSS_BREAKS)
def test_lazy_iterators_across_breaks(fn, make_args, graphs, breaks):
    run_breaks(fn, make_args(), graphs, breaks)


def test_lazy_iterator_returned_after_a_break_is_still_lazy():
    def fn(x, log):
        m = map(functools.partial(logged, log), range(4))
        first = next(m)
        note()
        return x + first, m

    framegraph.reset()
    counters.clear()
    log: list = []
    rest = framegraph.compile(fn, backend="eager")(t(2), log)[1]
    assert type(rest) is map and log == [0]
    assert list(rest) == [2, 4, 6] and log == [0, 1, 2, 3]
    assert not counters["fallback"] and sum(counters["graph_break"].values()) == 1


def with_log():
    return t(2), []


def tensor_only():
    return (t(2),)


# ---- lazy iterators in one graph --------------------------------------------------------------
def zip_stops_at_shortest(x, log):
    pairs = list(zip(map(functools.partial(logged, log), range(5)), range(2)))  # eager calls logged 3 times
    return x + 1, pairs


def map_of_several(x, log):
    return x + 1, list(map(lambda a, b: logged(log, a + b), range(5), [10, 20]))


def any_all_short_circuit(x, log):
    found = any(logged(log, v) > 2 for v in range(10))
    every = all(logged(log, v) < 4 for v in range(10, 20))
    return x + 1, found, every


def next_and_default(x, log):
    m = map(functools.partial(logged, log), [1])
    first = next(m)
    return x + first, next(m, "done"), next(iter([]), None)


def stop_iteration_is_catchable(x):
    it = iter((1,))
    next(it)
    try:
        next(it)
    except StopIteration:
        return x + 1
    return x


def enumerate_filter_reversed(x, log):
    evens = filter(functools.partial(keep_even, log), range(5))
    pairs = list(enumerate(evens, 10))
    return x + 1, pairs, list(reversed((1, 2, 3))), list(filter(None, [0, 1, 2]))


def dict_changed_while_iterated(x):
    d = {"a": 1}
    try:
        for key in d:
            d[key + "b"] = 2
    except RuntimeError as error:
        return x + 1, error.args
    return x, ()


def membership_consumes_an_iterator(x):
    it = iter([1, 2, 3, 4])
    found = 2 in it
    return x + 1, found, list(it)


def unpacking_steps_an_iterator(x, log):
    a, b = map(functools.partial(logged, log), [1, 2])
    out = [a, b]
    for source in (counting(log, 3), counting(log, 1)):
        try:
            c, d = source
            out.append((c, d))
        except ValueError as error:
            out.append(error.args)
    return x + 1, out


def itertools_take_what_they_need(x, log):
    head = list(itertools.islice(counting(log, 100), 1, 4, 2))
    longest = list(itertools.zip_longest(counting(log, 2), "abc", fillvalue=0))
    return x + 1, head, longest


# (fn, argument factory, ops)
IN_ONE_GRAPH = [
    (zip_stops_at_shortest, with_log, 1),
    (map_of_several, with_log, 1),
    (any_all_short_circuit, with_log, 1),
    (next_and_default, with_log, 1),
    (stop_iteration_is_catchable, tensor_only, 1),
    (enumerate_filter_reversed, with_log, 1),
    (dict_changed_while_iterated, tensor_only, 1),
    (membership_consumes_an_iterator, tensor_only, 1),
    (unpacking_steps_an_iterator, with_log, 1),
    (itertools_take_what_they_need, with_log, 1),
]


@pytest.mark.parametrize("fn, make_args, ops", IN_ONE_GRAPH)
def test_lazy_iterators_in_one_graph(fn, make_args, ops):
    check_counts(fn, *make_args(), graphs=1, ops=ops)


def test_iterators_come_back_as_their_real_type():
    def fn(x, log):
        m = map(functools.partial(logged, log), [1, 2, 3])
        next(m)
        return (x + 1, m, filter(None, [0, 1, 2]), zip([1, 2], "ab"), enumerate([3, 4], 1),
                reversed([1, 2]), iter((5, 6)), iter([7, 8]), iter(range(3)), iter({"k": 1}),
                counting(log, 2), itertools.chain([1], (2,)), itertools.islice(range(9), 1, 7, 2))

    framegraph.reset()
    counters.clear()
    expected_log, actual_log = [], []
    expected, actual = fn(t(2), expected_log), framegraph.compile(fn, backend="eager")(t(2), actual_log)
    assert not counters["fallback"] and not counters["graph_break"]
    assert [type(v) for v in actual] == [type(v) for v in expected]
    assert actual_log == expected_log == [1]  # nothing but the one step was taken
    for e, a in zip(expected[1:], actual[1:]):
        assert list(a) == list(e)
    assert actual_log == expected_log


# ---- generators run step by step --------------------------------------------------------------
def extend_from_generator_reading_the_list(x):
    y = [1]
    y.extend(y[-1] + z for z in range(3))
    w = [0]
    w += (len(w) for _ in range(3))
    v = [5]
    v.extend(v[i] * 2 for i in range(2))
    return x + 1, y, w, v


def consumer_and_body_interleave(x, log):
    total = sum(logged(log, v) for v in counting(log, 3))
    out = []
    for v in counting(log, 2):
        log.append(("body", v))
        out.append(x * v)
    return x + total, out


def zip_stops_a_generator(x, log):
    return x + 1, list(zip(counting(log, 5), range(2)))


def next_on_a_generator(x, log):
    g = counting(log, 10)
    a, b = next(g), next(g)
    return x + a + b


def generator_reads_state_the_consumer_changes(x):
    state = {"n": 0}

    def reader():
        for _ in range(3):
            yield state["n"]

    out = []
    for value in reader():
        out.append(value)
        state["n"] += 1
    return x + 1, out


def generator_exception_reaches_consumer(x):
    def failing():
        yield 1
        raise KeyError("inside")

    got = []
    try:
        for value in failing():
            got.append(value)
    except KeyError as error:
        got.append(error.args)
    return x + 1, got


def stop_iteration_inside_a_generator(x):
    def leaky():
        it = iter(())
        yield next(it)  # PEP 479: the consumer gets RuntimeError, not the end of the generator

    try:
        return x + 1, list(leaky())
    except RuntimeError as error:
        return x + 2, error.args, type(error.__cause__)


# (fn, argument factory, ops)
STEP_BY_STEP = [
    (extend_from_generator_reading_the_list, tensor_only, 1),
    (stop_iteration_inside_a_generator, tensor_only, 1),
    (consumer_and_body_interleave, with_log, 3),
    (zip_stops_a_generator, with_log, 1),
    (next_on_a_generator, with_log, 2),
    (generator_reads_state_the_consumer_changes, tensor_only, 1),
    (generator_exception_reaches_consumer, tensor_only, 1),
]


@pytest.mark.parametrize("fn, make_args, ops", STEP_BY_STEP)
def test_generators_run_step_by_step(fn, make_args, ops):
    # torch.compile is no reference for the leaky generator: on 3.11 it returns x + 1 where
    # eager raises, and on 3.12+ its graph keeps the abandoned x + 1 (two ops).
    check_counts(fn, *make_args(), graphs=1, ops=ops, like_torch=fn is not stop_iteration_inside_a_generator)


def test_generator_suspended_inside_try_is_not_traced():
    # Eagerly its `finally` runs when the last reference goes (here, right after next()).
    def fn(x, log):
        first = next(guarded_gen(log, 3))
        log.append("after")
        return x + first

    check_counts(fn, t(2), [], graphs=1, ops=1, breaks=1, like_torch=False)
    assert any("yields inside a try" in reason for reason in counters["graph_break"]), dict(counters["graph_break"])


def test_started_generator_outliving_the_frame_runs_eagerly():
    def fn(x, log):
        g = counting(log, 3)
        next(g)
        return x + 1, g

    framegraph.reset()
    counters.clear()
    log: list = []
    result = framegraph.compile(fn, backend="eager")(t(2), log)
    assert list(result[1]) == [1, 2] and log == [("gen", i) for i in range(3)] and not counters["fallback"]
    assert any("outlives the graph" in reason for reason in counters["graph_break"])
