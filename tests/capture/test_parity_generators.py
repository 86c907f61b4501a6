"""Generators and iterators at torch.compile's parity: generator functions and expressions
consumed inside the frame (`sum(g(x) for ...)`, `list(gen())`, `yield from`, `send`, `close`,
the value a generator returns), the lazy builtins (`zip`, `map`, `filter`, `enumerate`,
`reversed`), and `iter`/`next` on the builtin iterators, with defaults and StopIteration.

Every case runs eagerly, under framegraph and under torch.compile with counting backends
(`python_parity.check`): equal results, raised exceptions and mutated arguments, and no more
breaks and no fewer captured ops than torch.compile.
"""

import itertools

import torch
import torch._dynamo

from .datadep_cases import parity_params
from .python_parity import check, t


# ---- generator functions consumed in the frame ------------------------------------------------
def squares(xs):
    for x in xs:
        yield x * x


def gen_list(x):
    return list(squares([x, x + 1, x - 1]))


def gen_sum(x):
    return sum(squares([x, 2 * x]))


def gen_for_loop(x):
    out = x
    for y in squares([x, x.sin()]):
        out = out + y
    return out


def gen_tuple_unpack(x):
    a, b = squares((x, x.cos()))
    return a - b


def _count_up(n):
    i = 0
    while i < n:
        yield i
        i += 1


def gen_while_loop(x):
    return [x * i for i in _count_up(4)]


def _with_return(x):
    yield x + 1
    yield x + 2
    return x * 10


def _delegate(x):
    result = yield from _with_return(x)
    yield result


def gen_yield_from_return(x):
    return list(_delegate(x))


def _chain_two(a, b):
    yield from a
    yield from b


def gen_yield_from_lists(x):
    return sum(_chain_two([x, x * 2], (x * 3,)))


def _nested_outer(x):
    yield from _nested_inner(x)
    yield x.exp()


def _nested_inner(x):
    yield x.sin()
    yield from (x + i for i in range(2))


def gen_yield_from_nested(x):
    return torch.stack(list(_nested_outer(x)))


def gen_next_manual(x):
    g = squares([x, x + 1, x + 2])
    a = next(g)
    b = next(g)
    return a + b


def gen_next_default(x):
    g = squares([x])
    a = next(g)
    b = next(g, None)
    return a if b is None else a + b


def gen_next_stopiteration(x):
    g = squares([x])
    next(g)
    try:
        next(g)
    except StopIteration:
        return x + 100
    return x


def _returns_value(x):
    yield x
    return x * 3


def gen_stopiteration_value(x):
    g = _returns_value(x)
    first = next(g)
    try:
        next(g)
    except StopIteration as stop:
        return first + stop.value
    return first


def gen_send(x):
    def acc():
        total = 0
        while True:
            v = yield total
            total = total + v
    g = acc()
    next(g)
    g.send(x)
    out = g.send(x * 2)
    return out


def gen_send_none_first(x):
    def echo():
        received = yield x
        yield received * 2
    g = echo()
    first = g.send(None)
    second = g.send(x + 1)
    return first + second


def gen_close_unstarted(x):
    g = squares([x, x])
    g.close()
    return x + 1


def gen_close_started(x):
    g = squares([x, x, x])
    a = next(g)
    g.close()
    return a + next(g, x)


def gen_zip_two(x, y):
    return [a * b for a, b in zip(squares([x, y]), squares([y, x]))]


def gen_any_early_exit(x):
    log = []
    def probe(v):
        for i in range(4):
            log.append(i)
            yield v + i
    found = any(True for _ in probe(x))
    return x + len(log), found


def gen_with_kwargs(x):
    def scaled(xs, *, factor=2.0):
        for v in xs:
            yield v * factor
    return sum(scaled([x, x + 1], factor=0.5))


def gen_varargs(x):
    def each(*vs):
        for v in vs:
            yield v.relu()
    return list(each(x, -x, x * 2))


def gen_closure_reads(x):
    scale = 3.0
    def g(n):
        for i in range(n):
            yield x * scale + i
    return torch.cat(list(g(3)))


def gen_mutates_list(x):
    out = []
    def producer():
        for i in range(3):
            out.append(i)
            yield x + i
    total = sum(producer())
    return total, out


class _Blocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])

    def outputs(self, h):
        for layer in self.layers:
            h = layer(h)
            yield h


torch.manual_seed(0)
blocks = _Blocks()


def gen_in_module(x):
    return list(blocks.outputs(x))[-1]


def gen_method_hidden_states(x):
    hidden = [h.mean() for h in blocks.outputs(x)]
    return torch.stack(hidden)


def gen_conditional_yield(x):
    def positives(vs):
        for v in vs:
            if v > 0:
                yield v
    return sum(x * v for v in positives([1, -2, 3, -4]))


def gen_enumerate_of_gen(x):
    return [x * i + v for i, v in enumerate(squares([x, x]))]


def gen_dict_from_gen(x):
    def pairs():
        yield "a", x
        yield "b", x * 2
    return dict(pairs())


def gen_max_of_gen(x):
    return max(v for v in [1.0, 5.0, 3.0]) * x


def gen_generator_passed_in_call(x):
    return torch.stack(tuple(squares([x, x + 1])))


def gen_reused_after_exhaust(x):
    g = squares([x])
    first = list(g)
    second = list(g)
    return first, second


def gen_infinite_islice(x):
    def naturals():
        n = 0
        while True:
            yield n
            n += 1
    return [x + i for i in itertools.islice(naturals(), 4)]


def gen_sorted_of_gen(x):
    return sorted(v * 2 for v in (3, 1, 2)), x + 1


def gen_str_join(x):
    return "-".join(str(i) for i in range(3)), x * 2


def gen_with_try_finally_exhausted(x):
    log = []
    def g():
        try:
            yield x
            yield x + 1
        finally:
            log.append("done")
    return list(g()), log


def gen_return_early(x):
    def g(n):
        for i in range(10):
            if i == n:
                return
            yield x + i
    return list(g(2))


# ---- generator expressions -------------------------------------------------------------------
def genexp_sum(x):
    return sum(x * i for i in range(4))


def genexp_sum_start(x):
    return sum((x[i] for i in range(3)), torch.zeros(()))


def genexp_tuple(x):
    return tuple(x + i for i in range(3))


def genexp_filtered(x):
    return sum(x * i for i in range(6) if i % 2)


def genexp_nested(x):
    return sum(x * i * j for i in range(3) for j in range(2))


def genexp_all_any(x):
    shapes_ok = all(d > 0 for d in x.shape)
    any_big = any(d > 10 for d in x.shape)
    return x * 2 if shapes_ok and not any_big else x


def genexp_over_tensor_rows(x):
    return torch.stack([row.sum() for row in x])


def genexp_torch_cat(x):
    return torch.cat(tuple(x * k for k in (1, 2, 3)))


def genexp_next_first(x):
    return next(x * i for i in range(2, 5))


def genexp_next_default(x):
    return next((x * i for i in range(3) if i > 5), x)


def genexp_min_with_key(x):
    return min((x + i for i in range(3)), key=lambda v: -v.sum().shape[0] if v.dim() else 0)


def genexp_over_params(x):
    return x + sum(p.sum() for p in blocks.parameters())


def genexp_over_dict_items(x):
    d = {"a": 1.0, "b": 2.0}
    return sum(x * v for k, v in d.items())


def genexp_zip(x, y):
    return sum(a * b for a, b in zip((x, y), (y, x)))


def genexp_list_of_pairs(x):
    return dict((f"k{i}", x * i) for i in range(3))


def genexp_set(x):
    return set(i % 3 for i in range(7)), x + 1


# ---- zip / map / filter / enumerate / reversed -----------------------------------------------
def zip_lists(x, y):
    return [a + b for a, b in zip([x, y], [y, x])]


def zip_uneven(x):
    return list(zip([x, x * 2, x * 3], "ab"))


def zip_strict_ok(x):
    return [a * b for a, b in zip((1, 2), (x, x), strict=True)]


def zip_strict_raises(x):
    try:
        list(zip((1, 2, 3), (x, x), strict=True))
    except ValueError:
        return x - 1
    return x


def zip_unzip(x):
    pairs = [(x, 1), (x * 2, 2)]
    tensors, numbers = zip(*pairs)
    return torch.stack(tensors) * sum(numbers)


def zip_three(x):
    return [a + b * c for a, b, c in zip((x, x), (1, 2), (3.0, 4.0))]


def zip_next(x):
    z = zip([x, x + 1], [2, 3])
    a, k = next(z)
    return a * k


def map_lambda(x):
    return list(map(lambda v: v * 2, [x, x + 1]))


def map_torch_fn(x):
    return torch.stack(list(map(torch.relu, [x, -x])))


def map_two_iterables(x):
    return list(map(lambda a, b: a * b, [x, x], [2, 3]))


def map_builtin(x):
    return sum(map(abs, [-1, 2, -3])) * x


def map_method(x):
    parts = list(map("<{}>".format, ["a", "b"]))
    return x + len(parts), parts


def filter_lambda(x):
    return sum(filter(lambda v: v > 1, [1, 2, 3])) * x


def filter_none(x):
    return list(filter(None, [0, 1, 2, 0])), x + 1


def filter_tensors_by_shape(x, y):
    return list(filter(lambda v: v.dim() == 2, [x, y, x.sum()]))


def enumerate_start(x):
    return [x * i for i, _ in enumerate("abc", start=1)]


def enumerate_tensor(x):
    out = x.new_zeros(x.shape[1:])
    for i, row in enumerate(x):
        out = out + row * i
    return out


def enumerate_next(x):
    e = enumerate([x, x * 2])
    i, v = next(e)
    j, w = next(e)
    return v * i + w * j


def reversed_list(x):
    return [v * 2 for v in reversed([x, x + 1, x + 2])]


def reversed_range(x):
    return [x * i for i in reversed(range(3))]


def reversed_tuple_next(x):
    r = reversed((x, x + 1))
    return next(r) - next(r)


def reversed_modules(x):
    for layer in reversed(blocks.layers):
        x = layer(x)
    return x


def map_of_zip(x):
    return list(map(lambda p: p[0] * p[1], zip([x, x], [1, 2])))


def enumerate_of_zip(x):
    return [(i, a + b) for i, (a, b) in enumerate(zip([x, x], [x, x]))]


def filter_of_map(x):
    return list(filter(lambda v: v > 2, map(lambda i: i * 2, range(4)))), x + 1


def zip_of_enumerate_reversed(x):
    return [x * i * j for (i, _), j in zip(enumerate("ab"), reversed(range(2)))]


def map_called_lazily(x):
    log = []
    def f(v):
        log.append(v)
        return v * 2
    m = map(f, [1, 2, 3])
    first = next(m)
    return x * first, log


# ---- iter / next on builtin iterators --------------------------------------------------------
def iter_list_next(x):
    it = iter([x, x + 1, x + 2])
    next(it)
    return next(it)


def iter_range_next_default(x):
    it = iter(range(2))
    a, b = next(it), next(it)
    c = next(it, 10)
    return x * (a + b + c)


def iter_tuple_exhaust_stop(x):
    it = iter((x,))
    next(it)
    try:
        next(it)
    except StopIteration:
        return x * 2
    return x


def iter_dict_keys(x):
    d = {"w": x, "b": x + 1}
    it = iter(d)
    k = next(it)
    return d[k], k


def iter_dict_values_items(x):
    d = {"w": x, "b": x + 1}
    v = next(iter(d.values()))
    k, w = next(iter(d.items()))
    return v + w, k


def iter_then_for(x):
    it = iter([x, x * 2, x * 3])
    head = next(it)
    for rest in it:
        head = head + rest
    return head


def iter_list_of_iter(x):
    it = iter([x, x + 1, x + 2])
    next(it)
    return list(it)


def iter_string(x):
    it = iter("xyz")
    return next(it) + next(it), x + 1


def iter_pairwise_idiom(x):
    xs = [x, x * 2, x * 3]
    it = iter(xs)
    return [a - b for a, b in zip(it, it)]


def iter_next_in_while(x):
    it = iter(range(5))
    total = x
    while (v := next(it, None)) is not None:
        total = total + v
    return total


def iter_sentinel_call(x):
    values = [3, 2, 1, 0]
    it = iter(values.pop, 1)
    return [x * v for v in it]


def iter_of_iter_is_same(x):
    it = iter([x])
    return iter(it) is it, next(it) + 1


def iter_tensor(x):
    it = iter(x)
    first = next(it)
    return first * 2


def iter_size(x):
    it = iter(x.shape)
    return x.reshape(next(it), -1)


def next_list_iterator_dunder(x):
    it = iter([x, x + 1])
    return it.__next__() * 3


def iter_stop_in_loop_break(x):
    it = iter([x, x, x])
    count = 0
    while True:
        try:
            x = x + next(it)
            count += 1
        except StopIteration:
            break
    return x, count


# ---- generators: more of what programs do with them -------------------------------------------
def _numbers_then_return(t):
    yield t + 1
    yield t + 2
    return "done"


def gen_returned_unstarted(x):
    return _numbers_then_return(x), x.sin()


def gen_returned_in_zip(x):
    return zip(range(2), _numbers_then_return(x)), x.cos()


def gen_infinite_zip(x):
    def counter(t):
        i = 0
        while True:
            yield t + i
            i += 1
    return list(zip(range(3), counter(x)))


def gen_contains(x):
    g = squares([1, 2, 3])
    found = 4 in g
    rest = list(g)
    return x * len(rest), found


def gen_container_of_pairs(x):
    def pairs(t):
        yield "a", t + 1
        yield "b", t + 2
    return dict(pairs(x)), tuple(pairs(x)), list(pairs(x))


def gen_list_extend(x):
    out = [x]
    out.extend(v * 2 for v in (x, x + 1))
    return out


def gen_pep479_raise_in_body(x):
    def body(t):
        yield t + 1
        raise StopIteration("boom")
    g = body(x)
    next(g)
    try:
        next(g)
    except RuntimeError:
        return x + 1.0
    except StopIteration:
        return x + 2.0
    return x


def gen_pep479_inner_next(x):
    def inner(t):
        yield t + 1

    def outer(t):
        it = inner(t)
        while True:
            yield next(it)
    g = outer(x)
    first = next(g)
    try:
        next(g)
    except RuntimeError:
        return first * 2
    return first


def gen_throw_caught_inside(x):
    def resilient(t):
        while True:
            try:
                yield t
            except ValueError:
                t = t * 10
    g = resilient(x)
    next(g)
    return g.throw(ValueError("again"))


def gen_throw_uncaught(x):
    g = squares([x, x])
    next(g)
    try:
        g.throw(KeyError("k"))
    except KeyError:
        return x - 1
    return x


def gen_throw_into_yield_from(x):
    def inner(t):
        try:
            yield t + 1
            yield t + 2
        except StopIteration:
            return t * 100  # noqa: B901

    def outer(t):
        r = yield from inner(t)
        yield r
    g = outer(x)
    next(g)
    return g.throw(StopIteration("stop"))


def gen_close_runs_finally(x):
    log = []
    def g(t):
        try:
            yield t
            yield t + 1
        finally:
            log.append("closed")
    it = g(x)
    first = next(it)
    it.close()
    return first, log


def gen_close_catches_generator_exit(x):
    log = []
    def g(t):
        try:
            yield t
        except GeneratorExit:
            log.append("exit")
            raise
    it = g(x)
    next(it)
    it.close()
    return x + len(log), log


def gen_send_running_total(x):
    def averager():
        total, count = 0.0, 0
        average = None
        while True:
            value = yield average
            total += value
            count += 1
            average = total / count
    avg = averager()
    next(avg)
    avg.send(2.0)
    return x * avg.send(4.0)


def gen_yield_from_return_send(x):
    def inner():
        received = yield "ready"
        return received * 2

    def outer():
        result = yield from inner()
        yield result
    g = outer()
    next(g)
    return x + g.send(5)


def gen_generator_of_generators(x):
    def rows(t):
        for i in range(2):
            yield (t * i + j for j in range(2))
    return [list(row) for row in rows(x)]


def gen_recursive_flatten(x):
    def flatten(items):
        for item in items:
            if isinstance(item, (list, tuple)):
                yield from flatten(item)
            else:
                yield item
    return torch.stack(list(flatten([x, [x + 1, (x + 2, [x + 3])]])))


def gen_stateful_window(x):
    def windows(seq, n):
        buf = []
        for item in seq:
            buf.append(item)
            if len(buf) == n:
                yield tuple(buf)
                buf.pop(0)
    return [a + b for a, b in windows([x, x * 2, x * 3], 2)]


def gen_in_method_of_module_hooks(x):
    return torch.stack([h.sum() for h in blocks.outputs(x) if h.dim() == 2])


def gen_early_break_with_finally_exhausted_later(x):
    log = []
    def g(t):
        try:
            for i in range(3):
                yield t * i
        finally:
            log.append("end")
    it = g(x)
    head = next(it)
    tail = list(it)
    return head, tail, log


def gen_next_default_after_return(x):
    g = _numbers_then_return(x)
    values = [next(g, None) for _ in range(4)]
    return values


def gen_lazy_reads_mutation(x):
    scale = [1.0]
    def scaled(t):
        for _ in range(3):
            yield t * scale[0]
    g = scaled(x)
    a = next(g)
    scale[0] = 5.0
    b = next(g)
    return a, b


def gen_any_all_with_tensors_shape(x, y):
    same = all(a.shape == b.shape for a, b in zip((x, y), (y, x)))
    return x + y if same else x


def gen_sum_of_module_outputs(x):
    return sum(layer(x).sum() for layer in blocks.layers)


def gen_max_of_filtered(x):
    sizes = {"a": 3, "b": 7, "c": 5}
    best = max(sizes[k] for k in sizes if k != "b")
    return x * best, best


def gen_enumerate_generator_start(x):
    return [x * i for i, _ in enumerate(_count_up(3), 1)]


def gen_filter_generator(x):
    return list(filter(lambda v: v % 2 == 0, _count_up(6))), x * 2


def gen_map_over_generator(x):
    return list(map(lambda i: x * i, _count_up(3)))


def gen_yield_expression_value_ignored(x):
    def g(t):
        got = yield t
        yield got
    it = g(x)
    return next(it), next(it)


def gen_generator_expression_closure_over_loop(x):
    gens = [(x * i for _ in range(2)) for i in range(3)]
    return [list(g) for g in gens]


def _trig(t):
    yield t.sin()
    yield t.cos()
    yield t.tan()


def _opaque(t):
    torch._dynamo.graph_break()
    return t


def gen_returned_advanced(x):
    g = _trig(x)
    first = next(g)
    return first * 2, g


def gen_live_across_break(x):
    g = _trig(x)
    head = next(g)
    _opaque(x)
    return head, list(g)


def gen_unstarted_across_break(x):
    g = _trig(x)
    _opaque(x)
    return list(g)


def gen_stepped_on_both_sides_of_break(x):
    g = _count_up(5)
    a = next(g)
    y = _opaque(x * a)
    b = next(g)
    return y + b


def gen_no_grad_inside_body(x):
    def frozen(t):
        with torch.no_grad():
            yield t * 2
        yield t * 3
    a, b = frozen(x)
    return a.requires_grad, b.requires_grad, a + b


def gen_yield_from_range_and_dict(x):
    def walk(d):
        yield from range(2)
        yield from d
        yield from d.values()
    return list(walk({"a": 1, "b": 2})), x + 1


def gen_try_finally_return_value(x):
    log = []
    def g(t):
        try:
            yield t
            return t * 5
        finally:
            log.append("finally")
    it = g(x)
    next(it)
    try:
        next(it)
    except StopIteration as stop:
        return stop.value, log


def gen_exception_inside_caught_inside(x):
    def g(t):
        for k in (1, 0, 2):
            try:
                yield t / (1 / k)
            except ZeroDivisionError:
                yield t
    return list(g(x))


def gen_sum_of_nested_generator_calls(x):
    def inner(t, n):
        for i in range(n):
            yield t * i

    def outer(t):
        for n in range(1, 3):
            yield sum(inner(t, n))
    return list(outer(x))


def gen_generator_state_between_consumers(x):
    g = _count_up(6)
    firsts = [next(g) for _ in range(2)]
    rest = [v * x for v in g]
    return firsts, rest


def gen_zip_generator_and_list_stops(x):
    log = []
    def g():
        for i in range(5):
            log.append(i)
            yield i
    pairs = list(zip(["a", "b"], g()))
    return x * len(pairs), log


def gen_any_short_circuit_side_effects(x):
    log = []
    def checks():
        for v in (x.sum(), x.mean()):
            log.append(v * 2)
            yield v.shape == ()
    return any(checks()), log


GENERATOR_CASES = [
    (gen_list, lambda: (t(3),)),
    (gen_sum, lambda: (t(3),)),
    (gen_for_loop, lambda: (t(4),)),
    (gen_tuple_unpack, lambda: (t(2),)),
    (gen_while_loop, lambda: (t(3),)),
    (gen_yield_from_return, lambda: (t(3),)),
    (gen_yield_from_lists, lambda: (t(3),)),
    (gen_yield_from_nested, lambda: (t(3),)),
    (gen_next_manual, lambda: (t(3),)),
    (gen_next_default, lambda: (t(3),)),
    (gen_next_stopiteration, lambda: (t(3),)),
    (gen_stopiteration_value, lambda: (t(3),)),
    (gen_send, lambda: (t(3),)),
    (gen_send_none_first, lambda: (t(3),)),
    (gen_close_unstarted, lambda: (t(3),)),
    (gen_close_started, lambda: (t(3),)),
    (gen_zip_two, lambda: (t(3), t(3))),
    (gen_any_early_exit, lambda: (t(3),)),
    (gen_with_kwargs, lambda: (t(3),)),
    (gen_varargs, lambda: (t(3),)),
    (gen_closure_reads, lambda: (t(3),)),
    (gen_mutates_list, lambda: (t(3),)),
    (gen_in_module, lambda: (t(2, 4),)),
    (gen_method_hidden_states, lambda: (t(2, 4),)),
    (gen_conditional_yield, lambda: (t(3),)),
    (gen_enumerate_of_gen, lambda: (t(3),)),
    (gen_dict_from_gen, lambda: (t(3),)),
    (gen_max_of_gen, lambda: (t(3),)),
    (gen_generator_passed_in_call, lambda: (t(3),)),
    (gen_reused_after_exhaust, lambda: (t(3),)),
    (gen_infinite_islice, lambda: (t(3),)),
    (gen_sorted_of_gen, lambda: (t(3),)),
    (gen_str_join, lambda: (t(3),)),
    (gen_with_try_finally_exhausted, lambda: (t(3),)),
    (gen_return_early, lambda: (t(3),)),
    (gen_returned_unstarted, lambda: (t(3),)),
    (gen_returned_in_zip, lambda: (t(3),)),
    (gen_infinite_zip, lambda: (t(3),)),
    (gen_contains, lambda: (t(3),)),
    (gen_container_of_pairs, lambda: (t(3),)),
    (gen_list_extend, lambda: (t(3),)),
    (gen_pep479_raise_in_body, lambda: (t(3),)),
    (gen_pep479_inner_next, lambda: (t(3),)),
    (gen_throw_caught_inside, lambda: (t(3),)),
    (gen_throw_uncaught, lambda: (t(3),)),
    (gen_throw_into_yield_from, lambda: (t(3),)),
    (gen_close_runs_finally, lambda: (t(3),)),
    (gen_close_catches_generator_exit, lambda: (t(3),)),
    (gen_send_running_total, lambda: (t(3),)),
    (gen_yield_from_return_send, lambda: (t(3),)),
    (gen_generator_of_generators, lambda: (t(3),)),
    (gen_recursive_flatten, lambda: (t(3),)),
    (gen_stateful_window, lambda: (t(3),)),
    (gen_in_method_of_module_hooks, lambda: (t(2, 4),)),
    (gen_early_break_with_finally_exhausted_later, lambda: (t(3),)),
    (gen_next_default_after_return, lambda: (t(3),)),
    (gen_lazy_reads_mutation, lambda: (t(3),)),
    (gen_any_all_with_tensors_shape, lambda: (t(3), t(3))),
    (gen_sum_of_module_outputs, lambda: (t(2, 4),)),
    (gen_max_of_filtered, lambda: (t(3),)),
    (gen_enumerate_generator_start, lambda: (t(3),)),
    (gen_filter_generator, lambda: (t(3),)),
    (gen_map_over_generator, lambda: (t(3),)),
    (gen_yield_expression_value_ignored, lambda: (t(3),)),
    (gen_generator_expression_closure_over_loop, lambda: (t(3),)),
    (gen_no_grad_inside_body, lambda: (t(3).requires_grad_(),)),
    (gen_yield_from_range_and_dict, lambda: (t(3),)),
    (gen_try_finally_return_value, lambda: (t(3),)),
    (gen_exception_inside_caught_inside, lambda: (t(3),)),
    (gen_sum_of_nested_generator_calls, lambda: (t(3),)),
    (gen_generator_state_between_consumers, lambda: (t(3),)),
    (gen_zip_generator_and_list_stops, lambda: (t(3),)),
    (gen_any_short_circuit_side_effects, lambda: (t(3),)),
    (gen_returned_advanced, lambda: (t(3),)),
    (gen_live_across_break, lambda: (t(3),)),
    (gen_unstarted_across_break, lambda: (t(3),)),
    (gen_stepped_on_both_sides_of_break, lambda: (t(3),)),
]

GENEXP_CASES = [
    (genexp_sum, lambda: (t(3),)),
    (genexp_sum_start, lambda: (t(3),)),
    (genexp_tuple, lambda: (t(3),)),
    (genexp_filtered, lambda: (t(3),)),
    (genexp_nested, lambda: (t(3),)),
    (genexp_all_any, lambda: (t(3, 2),)),
    (genexp_over_tensor_rows, lambda: (t(4, 3),)),
    (genexp_torch_cat, lambda: (t(3),)),
    (genexp_next_first, lambda: (t(3),)),
    (genexp_next_default, lambda: (t(3),)),
    (genexp_min_with_key, lambda: (t(3),)),
    (genexp_over_params, lambda: (t(3),)),
    (genexp_over_dict_items, lambda: (t(3),)),
    (genexp_zip, lambda: (t(3), t(3))),
    (genexp_list_of_pairs, lambda: (t(3),)),
    (genexp_set, lambda: (t(3),)),
]

LAZY_BUILTIN_CASES = [
    (zip_lists, lambda: (t(3), t(3))),
    (zip_uneven, lambda: (t(3),)),
    (zip_strict_ok, lambda: (t(3),)),
    (zip_strict_raises, lambda: (t(3),)),
    (zip_unzip, lambda: (t(3),)),
    (zip_three, lambda: (t(3),)),
    (zip_next, lambda: (t(3),)),
    (map_lambda, lambda: (t(3),)),
    (map_torch_fn, lambda: (t(3),)),
    (map_two_iterables, lambda: (t(3),)),
    (map_builtin, lambda: (t(3),)),
    (map_method, lambda: (t(3),)),
    (filter_lambda, lambda: (t(3),)),
    (filter_none, lambda: (t(3),)),
    (filter_tensors_by_shape, lambda: (t(3, 3), t(3))),
    (enumerate_start, lambda: (t(3),)),
    (enumerate_tensor, lambda: (t(3, 2),)),
    (enumerate_next, lambda: (t(3),)),
    (reversed_list, lambda: (t(3),)),
    (reversed_range, lambda: (t(3),)),
    (reversed_tuple_next, lambda: (t(3),)),
    (reversed_modules, lambda: (t(2, 4),)),
    (map_of_zip, lambda: (t(3),)),
    (enumerate_of_zip, lambda: (t(3),)),
    (filter_of_map, lambda: (t(3),)),
    (zip_of_enumerate_reversed, lambda: (t(3),)),
    (map_called_lazily, lambda: (t(3),)),
]

ITER_NEXT_CASES = [
    (iter_list_next, lambda: (t(3),)),
    (iter_range_next_default, lambda: (t(3),)),
    (iter_tuple_exhaust_stop, lambda: (t(3),)),
    (iter_dict_keys, lambda: (t(3),)),
    (iter_dict_values_items, lambda: (t(3),)),
    (iter_then_for, lambda: (t(3),)),
    (iter_list_of_iter, lambda: (t(3),)),
    (iter_string, lambda: (t(3),)),
    (iter_pairwise_idiom, lambda: (t(3),)),
    (iter_next_in_while, lambda: (t(3),)),
    (iter_sentinel_call, lambda: (t(3),)),
    (iter_of_iter_is_same, lambda: (t(3),)),
    (iter_tensor, lambda: (t(3, 2),)),
    (iter_size, lambda: (t(3, 2),)),
    (next_list_iterator_dunder, lambda: (t(3),)),
    (iter_stop_in_loop_break, lambda: (t(3),)),
]

# Where framegraph falls short of torch.compile, and why (strict xfails). (A generator returned
# itself, gen_returned_unstarted and gen_returned_advanced, torch.compile hands back as a
# tuple_iterator: its result differs from eager's, so those cases only check framegraph's.)
_MATERIALISED = ("torch.compile runs a generator that leaves the frame to its end inside the graph and returns "
                 "an iterator over the items it computed then (more ops); eagerly the items are computed when "
                 "consumed, reading the state of that time, and framegraph keeps them lazy as eager does")
_STARTED = ("a generator started in the graph and still used after it (returned, or live across a break) "
            "has a suspended frame that generated code cannot rebuild: framegraph breaks where it was first "
            "run and runs it eagerly from there; torch.compile computes its remaining items at that point and "
            "hands on a new generator over them")
_RECEIVED = ("the generator reaches the resume function as a real generator object, whose frame framegraph "
             "does not trace into (stepping it in the trace would leave the real one behind): stepping it is "
             "a break; torch.compile re-inlines it as the call that made it")
SHORT = {
    "gen_returned_in_zip": _MATERIALISED,
    "gen_live_across_break": _STARTED,
    "gen_stepped_on_both_sides_of_break": _STARTED,
    "gen_unstarted_across_break": _RECEIVED,
}


@parity_params(GENERATOR_CASES + GENEXP_CASES + LAZY_BUILTIN_CASES + ITER_NEXT_CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check(fn, make_args)
