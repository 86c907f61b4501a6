"""Other Python at torch.compile's parity: `import` statements inside the compiled function,
`global` and `nonlocal` writes, closures and lambdas created in the trace (called, stored and
returned), and the breaks programs ask for: `torch._dynamo.graph_break()`, callees marked with
`torch.compiler.disable` (or `torch._dynamo.disable`), and `framegraph.graph_break()`.

Every case runs eagerly, under framegraph and under torch.compile with counting backends
(`python_parity.check`): equal results, raised exception types and mutated arguments, and no
more breaks and no fewer captured ops than torch.compile.
"""

import functools

import pytest
import torch
import torch._dynamo

import framegraph
from framegraph.counters import counters

from .datadep_cases import compare, parity_params
from .python_parity import check, t

COUNTER = 0
SCALE = 2.0
CACHE = {}
HISTORY = []


# ---- imports inside the function --------------------------------------------------------------
def import_math(x):
    import math
    return x * math.pi


def import_from(x):
    from math import sqrt
    return x * sqrt(2.0)


def import_as(x):
    import torch.nn.functional as F
    return F.relu(x)


def import_from_torch_nn(x):
    from torch.nn import functional
    return functional.gelu(x)


def import_submodule_attr(x):
    import torch.nn.functional
    return torch.nn.functional.softmax(x, -1)


def import_in_callee(x):
    def helper(v):
        import operator
        return operator.mul(v, 3)
    return helper(x)


def import_functools_partial(x):
    from functools import partial
    mul = partial(torch.mul, other=2.0)
    return mul(x)


def import_inside_loop(x):
    for _ in range(2):
        import math
        x = x * math.e
    return x


def import_itertools_use(x):
    import itertools
    return [a * b for a, b in itertools.product([x], [1, 2])]


def import_collections_namedtuple_use(x):
    from collections import OrderedDict
    d = OrderedDict(a=x, b=x + 1)
    return d["b"] - d["a"]


def import_typing(x):
    from typing import Optional
    def f(v: Optional[torch.Tensor]):
        return v * 2
    return f(x)


def import_from_stdlib_modules_with_getattr(x):
    # io (3.11) and ast, typing (3.13) have a module __getattr__, which the import asks for
    # __path__ (are they packages?): the standard library's own is run while tracing.
    from io import SEEK_END
    from ast import PyCF_ONLY_AST
    from typing import Optional
    return x * SEEK_END + PyCF_ONLY_AST, Optional[int] == Optional[int]


# ---- global writes ----------------------------------------------------------------------------
def global_counter(x):
    global COUNTER
    COUNTER += 1
    return x + 1


def global_rebind_scale(x):
    global SCALE
    old = SCALE
    SCALE = old * 2  # a temporary override, undone before returning
    y = x * SCALE
    SCALE = old
    return y


def global_store_tensor(x):
    global LAST
    LAST = x * 2
    return LAST + 1


def global_dict_mutation(x):
    CACHE["last"] = x.sum()
    return x * 2


def global_list_append(x):
    HISTORY.append(x.mean())
    return x - 1


def global_write_in_callee(x):
    def bump():
        global COUNTER
        COUNTER = COUNTER + 10
    bump()
    return x * 2


def global_read_after_write(x):
    global SCALE
    SCALE = 2.0
    return x * SCALE


def global_del(x):
    global TEMP
    TEMP = 1
    del TEMP
    return x + 1


# ---- nonlocal writes --------------------------------------------------------------------------
def nonlocal_counter(x):
    count = 0
    def bump():
        nonlocal count
        count += 1
    bump()
    bump()
    return x * count


def nonlocal_accumulate_tensor(x):
    total = torch.zeros(())
    def add(v):
        nonlocal total
        total = total + v.sum()
    for k in range(3):
        add(x * k)
    return total


def nonlocal_in_loop_closure(x):
    state = {"calls": 0}
    def step(v):
        state["calls"] += 1
        return v * 2
    for _ in range(3):
        x = step(x)
    return x, state


def nonlocal_two_levels(x):
    n = 1
    def outer():
        def inner():
            nonlocal n
            n = n * 3
        inner()
        inner()
    outer()
    return x * n


def nonlocal_returned_closure_reads(x):
    scale = 1.0
    def set_scale(s):
        nonlocal scale
        scale = s
    set_scale(4.0)
    return x * scale


def nonlocal_generator_writes(x):
    seen = 0
    def g():
        nonlocal seen
        for i in range(3):
            seen += 1
            yield x * i
    out = sum(g())
    return out, seen


# ---- closures and lambdas ---------------------------------------------------------------------
def lambda_called(x):
    f = lambda v: v * 2 + 1  # noqa: E731
    return f(x)


def lambda_default_arg(x):
    f = lambda v, k=3: v * k  # noqa: E731
    return f(x) + f(x, k=1)


def lambda_captures_tensor(x):
    y = x.sin()
    f = lambda v: v + y  # noqa: E731
    return f(x)


def lambda_returned(x):
    k = 3
    return x + 1, lambda v: v * k


def closure_returned(x):
    w = x * 2
    def apply(v):
        return v + w
    return apply


def closure_returned_called_later(x):
    def make(scale):
        def f(v):
            return v * scale
        return f
    f = make(3.0)
    return f(x), f


def closures_in_loop_late_binding(x):
    fs = [lambda v: v * i for i in range(3)]
    return [f(x) for f in fs]


def closures_in_loop_default_binding(x):
    fs = [lambda v, i=i: v * i for i in range(3)]
    return [f(x) for f in fs]


def closure_stored_in_dict(x):
    ops = {"double": lambda v: v * 2, "neg": lambda v: -v}
    return ops["double"](x) + ops["neg"](x)


def closure_passed_to_map(x):
    offset = 1.5
    return list(map(lambda v: v + offset, [x, x * 2]))


def closure_in_sorted_key(x):
    weights = {"a": 3, "b": 1, "c": 2}
    names = sorted(weights, key=lambda n: weights[n])
    return x * weights[names[0]], names


def closure_factory_partial(x):
    def linear(v, w, b):
        return v * w + b
    f = functools.partial(linear, w=2.0)
    return f(x, b=1.0)


def closure_recursive(x):
    def power(v, n):
        return v if n == 1 else v * power(v, n - 1)
    return power(x, 3)


def closure_mutated_cell_after_creation(x):
    k = 1
    f = lambda v: v * k  # noqa: E731
    k = 5
    return f(x)


def closure_decorator(x):
    def twice(fn):
        def wrapper(v):
            return fn(fn(v))
        return wrapper
    @twice
    def inc(v):
        return v + 1
    return inc(x)


def closure_functools_wraps(x):
    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args) * 2
        return wrapper
    @logged
    def body(v):
        return v.cos()
    return body(x), body.__name__


def closure_stored_on_global(x):
    global HOOK
    HOOK = lambda v: v * 2  # noqa: E731
    return HOOK(x)


def closure_returned_in_tuple(x):
    def make(k):
        return lambda v: v + k
    return [make(i) for i in range(2)], x * 2


# ---- breaks the program asks for --------------------------------------------------------------
def dynamo_graph_break(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


def dynamo_graph_break_in_callee(x):
    def helper(v):
        v = v.sin()
        torch._dynamo.graph_break()
        return v.cos()
    return helper(x) * 2


def dynamo_graph_break_in_loop(x):
    for _ in range(2):
        x = x * 2
        torch._dynamo.graph_break()
    return x


@torch.compiler.disable
def _disabled_helper(v):
    return v * 3


@torch._dynamo.disable
def _dynamo_disabled_helper(v):
    return v - 1


@torch.compiler.disable(recursive=False)
def _disabled_not_recursive(v):
    return _plain_helper(v) * 2


def _plain_helper(v):
    return v + 1


def compiler_disable_callee(x):
    y = x * 2
    z = _disabled_helper(y)
    return z + 1


def dynamo_disable_callee(x):
    y = x.relu()
    return _dynamo_disabled_helper(y) * 2


def compiler_disable_lambda(x):
    f = torch.compiler.disable(lambda v: v * 5)
    return f(x + 1) - 1


def compiler_disable_not_recursive(x):
    return _disabled_not_recursive(x * 2) + 1


def disabled_callee_in_loop(x):
    for _ in range(2):
        x = _disabled_helper(x) + 1
    return x


def framegraph_graph_break(x):
    y = x * 2
    framegraph.graph_break()
    return y + 1


def framegraph_graph_break_in_callee(x):
    def helper(v):
        framegraph.graph_break()
        return v * 4
    return helper(x + 1)


def framegraph_disable_callee(x):
    @framegraph.disable
    def helper(v):
        return v * 3
    return helper(x + 1)


# ---- more of the same, as programs write it -----------------------------------------------------
def import_torch_inside(x):
    import torch as th
    return th.relu(x) + th.ones_like(x)


def tensor_methods_called_through_the_class(x):
    return torch.Tensor.add(x, 1), torch.Tensor.sum(x, dim=0), torch.Tensor.exp_(x.clone())


def import_from_torch_functional_in_helper(x):
    def act(v):
        from torch.nn.functional import silu
        return silu(v)
    return act(x) * 2


def import_math_constants_loop(x):
    out = []
    for name in ("pi", "e", "tau"):
        import math
        out.append(x * getattr(math, name))
    return torch.stack(out)


def import_operator_reduce(x):
    import functools
    import operator
    return functools.reduce(operator.add, [x, x * 2, x * 3])


def import_from_math_prod(x):
    from math import prod
    return x * prod(x.shape)


def global_counter_in_loop(x):
    global COUNTER
    for _ in range(3):
        COUNTER += 1
        x = x + 1
    return x


def global_flag_toggle(x):
    global FLAG
    FLAG = not FLAG
    y = x * (2 if FLAG else 3)
    FLAG = not FLAG
    return y


FLAG = False


def global_list_rebind(x):
    global HISTORY
    HISTORY = HISTORY + [1]
    return x * len(HISTORY) / len(HISTORY)


def global_tensor_cache(x):
    global BUFFER
    BUFFER = x.detach().clone()
    return BUFFER * 2


def global_write_then_read_in_callee(x):
    global SCALE
    old = SCALE

    def read():
        return SCALE
    SCALE = 7.0
    y = x * read()
    SCALE = old
    return y


def nonlocal_counter_closure_returned_value(x):
    calls = 0

    def track(v):
        nonlocal calls
        calls += 1
        return v + calls
    a = track(x)
    b = track(x)
    return a + b, calls


def nonlocal_tensor_state_machine(x):
    state = x.clone()

    def step(delta):
        nonlocal state
        state = state * 0.5 + delta
        return state
    for k in range(3):
        step(x * k)
    return state


def nonlocal_list_cell_rebound(x):
    items = []

    def reset():
        nonlocal items
        items = [x]
    reset()
    items.append(x * 2)
    return items


def nonlocal_in_nested_loop(x):
    total = 0

    def add(k):
        nonlocal total
        total += k
    for i in range(3):
        for j in range(2):
            add(i * j)
    return x * total


def nonlocal_shared_by_two_closures(x):
    n = 0

    def inc():
        nonlocal n
        n += 1

    def get():
        return n
    inc()
    inc()
    return x * get()


def lambda_sorted_by_tensor_shape(x, y):
    pair = sorted([x, y], key=lambda v: v.shape[0])
    return pair[0] * 2


def lambda_in_dict_dispatch(x):
    table = {"relu": lambda v: v.relu(), "neg": lambda v: -v}
    return sum(f(x) for f in table.values())


def lambda_recursive_via_name(x):
    fact = lambda n: 1 if n <= 1 else n * fact(n - 1)  # noqa: E731
    return x * fact(4)


def closure_counter_factory(x):
    def make_counter():
        count = 0

        def counter():
            nonlocal count
            count += 1
            return count
        return counter
    c = make_counter()
    c()
    return x * c()


def closure_captures_module(x):
    layer = blocks_net[0]

    def apply(v):
        return layer(v).relu()
    return apply(x)


torch.manual_seed(1)
blocks_net = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 3))


def closure_partial_of_lambda(x):
    scale = functools.partial(lambda v, k: v * k, k=3.0)
    return scale(x)


def closure_returned_with_tensor_cell(x):
    w = x.sin()

    def project(v):
        return v @ w
    return project, x.cos()


def closure_list_of_closures_called(x):
    funcs = []
    for k in range(3):
        def f(v, k=k):
            return v + k
        funcs.append(f)
    return [f(x) for f in funcs]


def closure_decorator_with_args(x):
    def scale_by(k):
        def deco(fn):
            def wrapper(v):
                return fn(v) * k
            return wrapper
        return deco

    @scale_by(4)
    def body(v):
        return v + 1
    return body(x)


def closure_default_mutable_list(x):
    def accumulate(v, acc=None):
        acc = [] if acc is None else acc
        acc.append(v)
        return acc
    return accumulate(x, accumulate(x * 2))


def closure_wraps_preserves_doc(x):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(v):
            return fn(v) + 1
        return wrapper

    @deco
    def documented(v):
        """Doubles v."""
        return v * 2
    return documented(x), documented.__doc__, documented.__wrapped__ is not None


def dynamo_graph_break_in_nested_closure(x):
    def outer(v):
        def inner(w):
            torch._dynamo.graph_break()
            return w * 2
        return inner(v) + 1
    return outer(x)


def disabled_method_call(x):
    return _disabled_scaler.scale(x) + 1


class _DisabledScaler:
    @torch.compiler.disable
    def scale(self, v):
        return v * 3


_disabled_scaler = _DisabledScaler()


def graph_break_between_tensor_ops(x):
    a = x.sin()
    torch._dynamo.graph_break()
    b = a.cos()
    torch._dynamo.graph_break()
    return b.exp()


IMPORT_CASES = [
    (import_math, lambda: (t(3),)),
    (import_from, lambda: (t(3),)),
    (import_as, lambda: (t(3),)),
    (import_from_torch_nn, lambda: (t(3),)),
    (import_submodule_attr, lambda: (t(3),)),
    (import_in_callee, lambda: (t(3),)),
    (import_functools_partial, lambda: (t(3),)),
    (import_inside_loop, lambda: (t(3),)),
    (import_itertools_use, lambda: (t(3),)),
    (import_collections_namedtuple_use, lambda: (t(3),)),
    (import_typing, lambda: (t(3),)),
    (import_from_stdlib_modules_with_getattr, lambda: (t(3),)),
]

GLOBAL_CASES = [
    (global_counter, lambda: (t(3),)),
    (global_rebind_scale, lambda: (t(3),)),
    (global_store_tensor, lambda: (t(3),)),
    (global_dict_mutation, lambda: (t(3),)),
    (global_list_append, lambda: (t(3),)),
    (global_write_in_callee, lambda: (t(3),)),
    (global_read_after_write, lambda: (t(3),)),
    (global_del, lambda: (t(3),)),
]

NONLOCAL_CASES = [
    (nonlocal_counter, lambda: (t(3),)),
    (nonlocal_accumulate_tensor, lambda: (t(3),)),
    (nonlocal_in_loop_closure, lambda: (t(3),)),
    (nonlocal_two_levels, lambda: (t(3),)),
    (nonlocal_returned_closure_reads, lambda: (t(3),)),
    (nonlocal_generator_writes, lambda: (t(3),)),
]

CLOSURE_CASES = [
    (lambda_called, lambda: (t(3),)),
    (lambda_default_arg, lambda: (t(3),)),
    (lambda_captures_tensor, lambda: (t(3),)),
    (lambda_returned, lambda: (t(3),)),
    (closure_returned, lambda: (t(3),)),
    (closure_returned_called_later, lambda: (t(3),)),
    (closures_in_loop_late_binding, lambda: (t(3),)),
    (closures_in_loop_default_binding, lambda: (t(3),)),
    (closure_stored_in_dict, lambda: (t(3),)),
    (closure_passed_to_map, lambda: (t(3),)),
    (closure_in_sorted_key, lambda: (t(3),)),
    (closure_factory_partial, lambda: (t(3),)),
    (closure_recursive, lambda: (t(3),)),
    (closure_mutated_cell_after_creation, lambda: (t(3),)),
    (closure_decorator, lambda: (t(3),)),
    (closure_functools_wraps, lambda: (t(3),)),
    (closure_stored_on_global, lambda: (t(3),)),
    (closure_returned_in_tuple, lambda: (t(3),)),
]

MORE_CASES = [
    (import_torch_inside, lambda: (t(3),)),
    (import_from_torch_functional_in_helper, lambda: (t(3),)),
    (tensor_methods_called_through_the_class, lambda: (t(2, 3),)),
    (import_math_constants_loop, lambda: (t(3),)),
    (import_operator_reduce, lambda: (t(3),)),
    (import_from_math_prod, lambda: (t(3),)),
    (global_counter_in_loop, lambda: (t(3),)),
    (global_flag_toggle, lambda: (t(3),)),
    (global_list_rebind, lambda: (t(3),)),
    (global_tensor_cache, lambda: (t(3),)),
    (global_write_then_read_in_callee, lambda: (t(3),)),
    (nonlocal_counter_closure_returned_value, lambda: (t(3),)),
    (nonlocal_tensor_state_machine, lambda: (t(3),)),
    (nonlocal_list_cell_rebound, lambda: (t(3),)),
    (nonlocal_in_nested_loop, lambda: (t(3),)),
    (nonlocal_shared_by_two_closures, lambda: (t(3),)),
    (lambda_sorted_by_tensor_shape, lambda: (t(3), t(2))),
    (lambda_in_dict_dispatch, lambda: (t(3),)),
    (lambda_recursive_via_name, lambda: (t(3),)),
    (closure_counter_factory, lambda: (t(3),)),
    (closure_captures_module, lambda: (t(2, 3),)),
    (closure_partial_of_lambda, lambda: (t(3),)),
    (closure_returned_with_tensor_cell, lambda: (t(3),)),
    (closure_list_of_closures_called, lambda: (t(3),)),
    (closure_decorator_with_args, lambda: (t(3),)),
    (closure_default_mutable_list, lambda: (t(3),)),
    (closure_wraps_preserves_doc, lambda: (t(3),)),
    (dynamo_graph_break_in_nested_closure, lambda: (t(3),)),
    (disabled_method_call, lambda: (t(3),)),
    (graph_break_between_tensor_ops, lambda: (t(3),)),
]

BREAK_CASES = [
    (dynamo_graph_break, lambda: (t(3),)),
    (dynamo_graph_break_in_callee, lambda: (t(3),)),
    (dynamo_graph_break_in_loop, lambda: (t(3),)),
    (compiler_disable_callee, lambda: (t(3),)),
    (dynamo_disable_callee, lambda: (t(3),)),
    (compiler_disable_lambda, lambda: (t(3),)),
    (compiler_disable_not_recursive, lambda: (t(3),)),
    (disabled_callee_in_loop, lambda: (t(3),)),
]

# framegraph's own marks, which torch.compile does not know (it traces through them): each
# breaks the graph as many times as given, and results equal eager's.
OWN_BREAK_CASES = [
    (framegraph_graph_break, lambda: (t(3),), 1),
    (framegraph_graph_break_in_callee, lambda: (t(3),), 2),  # in the frame, then in the callee run eagerly
    (framegraph_disable_callee, lambda: (t(3),), 1),
]

# Where framegraph falls short of torch.compile, and why (strict xfails).
SHORT = {}


@parity_params(IMPORT_CASES + GLOBAL_CASES + NONLOCAL_CASES + CLOSURE_CASES + BREAK_CASES + MORE_CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check(fn, make_args)


@pytest.mark.parametrize("fn, make_args, breaks", OWN_BREAK_CASES, ids=[case[0].__name__ for case in OWN_BREAK_CASES])
def test_own_marks_break(fn, make_args, breaks):
    counts = compare(fn, make_args(), make_args(), scalars=False, shapes=False)
    assert counts["framegraph"].breaks == breaks, counts
    assert any(reason.startswith(("Call to graph_break()", "Attempted to call function marked as skipped"))
               for reason in counters["graph_break"]), dict(counters["graph_break"])
