"""Context managers at torch.compile's parity: `contextlib.contextmanager` generators,
`nullcontext`, `ExitStack`, `suppress`, `torch.set_grad_enabled` / `no_grad` / `enable_grad` /
`inference_mode` as managers, decorators and function wrappers, grad-mode managers held in
containers and across breaks, `warnings.catch_warnings`, and user-defined
`__enter__`/`__exit__`.

Every case runs eagerly, under framegraph and under torch.compile with counting backends
(`python_parity.check`): equal results, raised exception types and mutated arguments, and no
more breaks and no fewer captured ops than torch.compile.
"""

import contextlib
import warnings

import torch
import torch._dynamo

from .datadep_cases import parity_params
from .helpers import assert_same
from .python_parity import check, t


def tg(*shape):
    return t(*shape).requires_grad_()


# ---- contextlib.contextmanager ---------------------------------------------------------------
@contextlib.contextmanager
def scaled(log, factor):
    log.append(("enter", factor))
    try:
        yield factor
    finally:
        log.append(("exit", factor))


@contextlib.contextmanager
def plain_cm():
    yield


@contextlib.contextmanager
def yields_tensor(x):
    yield x * 2


@contextlib.contextmanager
def swallowing():
    try:
        yield
    except ValueError:
        pass


@contextlib.contextmanager
def no_grad_cm():
    with torch.no_grad():
        yield


def cm_basic(x):
    log = []
    with scaled(log, 3) as k:
        y = x * k
    return y, log


def cm_plain(x):
    with plain_cm():
        y = x.sin()
    return y


def cm_yields_tensor(x):
    with yields_tensor(x) as doubled:
        y = doubled + 1
    return y


def cm_nested(x):
    log = []
    with scaled(log, 2) as a:
        with scaled(log, 5) as b:
            y = x * a * b
    return y, log


def cm_two_in_one_with(x):
    log = []
    with scaled(log, 2) as a, scaled(log, 3) as b:
        y = x + a + b
    return y, log


def cm_swallows_exception(x):
    with swallowing():
        x = x + 1
        raise ValueError()
    return x


def cm_exception_propagates_through(x):
    log = []
    try:
        with scaled(log, 2):
            raise KeyError()
    except KeyError:
        x = x * 4
    return x, log


def cm_wraps_no_grad(x):
    with no_grad_cm():
        y = x * 2
    return y, y.requires_grad


def cm_in_callee(x):
    def helper(v):
        log = []
        with scaled(log, 4) as k:
            return v * k
    return helper(x)


def cm_used_as_decorator(x):
    log = []
    @scaled(log, 7)
    def inner(v):
        return v + 1
    return inner(x), log


def cm_in_loop(x):
    log = []
    for k in range(3):
        with scaled(log, k):
            x = x + k
    return x, log


def cm_return_inside(x):
    log = []
    def f(v):
        with scaled(log, 2) as k:
            return v * k
    return f(x), log


# ---- contextlib utilities -------------------------------------------------------------------
def nullcontext_basic(x):
    with contextlib.nullcontext():
        y = x.relu()
    return y


def nullcontext_enter_result(x):
    with contextlib.nullcontext(x) as v:
        y = v * 3
    return y


def nullcontext_or_no_grad(x, use_no_grad):
    ctx = torch.no_grad() if use_no_grad else contextlib.nullcontext()
    with ctx:
        y = x * 2
    return y


def suppress_key_error(x):
    d = {"a": x}
    with contextlib.suppress(KeyError):
        x = x + d["missing"]
    return x * 2


def suppress_nothing_raised(x):
    with contextlib.suppress(ValueError):
        x = x + 1
    return x


def suppress_multiple_types(x):
    with contextlib.suppress(KeyError, IndexError):
        x = x + [x][3]
    return x


def exitstack_empty(x):
    with contextlib.ExitStack():
        y = x.cos()
    return y


def exitstack_enter_contexts(x):
    log = []
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(scaled(log, 2))
        b = stack.enter_context(scaled(log, 3))
        y = x * a * b
    return y, log


def exitstack_callback(x):
    log = []
    with contextlib.ExitStack() as stack:
        stack.callback(log.append, "cb")
        y = x + 1
    return y, log


def exitstack_no_grad(x):
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.no_grad())
        y = x * 2
    return y, y.requires_grad


def exitstack_conditional(x, flag):
    with contextlib.ExitStack() as stack:
        if flag:
            stack.enter_context(torch.no_grad())
        y = x * 2
    return y, y.requires_grad


class Resource:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


def closing_object(x):
    r = Resource()
    with contextlib.closing(r):
        y = x + 1
    return y, r.closed


# ---- grad mode --------------------------------------------------------------------------------
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    z = x * 3
    return y, z


def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
    return a, b


def set_grad_enabled_false(x):
    with torch.set_grad_enabled(False):
        y = x.exp()
    return y


def set_grad_enabled_flag(x, flag):
    with torch.set_grad_enabled(flag):
        y = x.exp()
    return y


def set_grad_enabled_as_function(x):
    torch.set_grad_enabled(False)
    y = x * 2
    torch.set_grad_enabled(True)
    return y, y.requires_grad


def set_grad_enabled_decorator(x):
    @torch.set_grad_enabled(False)
    def inner(v):
        return v * 2
    return inner(x)


def no_grad_decorator(x):
    @torch.no_grad()
    def inner(v):
        return v * 2
    return inner(x)


@torch.no_grad()
def _global_no_grad(v):
    return v + 1


@torch.enable_grad()
def _global_enable_grad(v):
    return v + 2


@torch.set_grad_enabled(False)
def _global_set_grad(v):
    return v * 5


def no_grad_decorated_callee(x):
    return _global_no_grad(x) * 2


def enable_grad_decorated_callee(x):
    with torch.no_grad():
        y = _global_enable_grad(x)
    return y


def set_grad_decorated_callee(x):
    return _global_set_grad(x) + 1


def set_grad_enabled_wraps_function(x):
    inner = torch.set_grad_enabled(False)(lambda v: v * 3)
    return inner(x)


def no_grad_wraps_function(x):
    inner = torch.no_grad()(torch.sin)
    return inner(x)


def inference_mode_block(x):
    with torch.inference_mode():
        y = x * 2
    return y.sum()


def is_grad_enabled_inside(x):
    with torch.no_grad():
        flag = torch.is_grad_enabled()
    return x * (2 if flag else 3)


def grad_managers_in_list(x):
    managers = [torch.no_grad(), torch.enable_grad()]
    out = []
    for m in managers:
        with m:
            out.append(x * 2)
    return [o.requires_grad for o in out], out


def grad_manager_in_dict(x, train):
    modes = {True: torch.enable_grad, False: torch.no_grad}
    with modes[train]():
        y = x * 2
    return y


def no_grad_with_print_break(x):
    with torch.no_grad():
        y = x * 2
        print("inside no_grad")
        z = y + 1
    return z, z.requires_grad


def grad_manager_in_list_across_break(x):
    managers = [torch.no_grad()]
    with managers[0]:
        y = x * 2
        print("break")
        z = y * 3
    return z


def no_grad_exception_inside(x):
    try:
        with torch.no_grad():
            y = x * 2
            raise ValueError()
    except ValueError:
        y = x * 3
    return y, torch.is_grad_enabled()


def autocast_disabled(x):
    with torch.autocast("cpu", enabled=False):
        y = x @ x.t()
    return y


# ---- warnings.catch_warnings --------------------------------------------------------------------
def catch_warnings_block(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x * 2
    return y


def catch_warnings_record(x):
    with warnings.catch_warnings(record=True):
        y = x + 1
    return y


# ---- user-defined __enter__/__exit__ -------------------------------------------------------------
class Tracker:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(("exit", exc_type))
        return False


class Swallow:
    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        return exc_type is not None and issubclass(exc_type, KeyError)


class Scale:
    def __init__(self, factor):
        self.factor = factor
        self.active = False

    def __enter__(self):
        self.active = True
        return self.factor

    def __exit__(self, *exc):
        self.active = False


class NoGradLike:
    def __enter__(self):
        self.prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)

    def __exit__(self, *exc):
        torch.set_grad_enabled(self.prev)


def user_cm_basic(x):
    log = []
    with Tracker(log) as tr:
        y = x * 2
    return y, log, tr is not None


def user_cm_exception(x):
    log = []
    try:
        with Tracker(log):
            raise ValueError()
    except ValueError:
        x = x - 1
    return x, log


def user_cm_swallows(x):
    with Swallow():
        x = x + 1
        raise KeyError()
    return x


def user_cm_does_not_swallow(x):
    try:
        with Swallow():
            raise ValueError()
    except ValueError:
        x = x * 2
    return x


def user_cm_state(x):
    s = Scale(3.0)
    with s as k:
        inside = s.active
        y = x * k
    return y, inside, s.active


def user_cm_sets_grad(x):
    with NoGradLike():
        y = x * 2
    return y, y.requires_grad


def user_cm_passed_in(x, cm):
    with cm as k:
        return x * k


def user_cm_nested(x):
    log = []
    with Tracker(log), Scale(2.0) as k:
        y = x * k
    return y, log


def user_cm_return_inside(x):
    log = []
    def f(v):
        with Tracker(log):
            return v.sin()
    return f(x), log


def user_cm_break_inside(x):
    log = []
    for k in range(3):
        with Tracker(log):
            if k == 1:
                break
            x = x + 1
    return x, log


# ---- more managers ------------------------------------------------------------------------------
@contextlib.contextmanager
def recorded(log, name):
    log.append(("in", name))
    yield name
    log.append(("out", name))  # not reached when the block raises


@contextlib.contextmanager
def converting():
    try:
        yield
    except KeyError as e:
        raise ValueError("converted") from e


@contextlib.contextmanager
def no_yield():
    if False:
        yield


@contextlib.contextmanager
def yields_twice():
    yield 1
    yield 2


@contextlib.contextmanager
def eval_mode(module):
    was_training = module.training
    module.train(False)
    try:
        yield module
    finally:
        module.train(was_training)


torch.manual_seed(0)
norm_net = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))


def cm_no_finally_exception_skips_exit(x):
    log = []
    try:
        with recorded(log, "a"):
            raise KeyError()
    except KeyError:
        pass
    return x + len(log), log


def cm_converts_exception(x):
    try:
        with converting():
            {}["k"]
    except ValueError as e:
        return x * (2 if isinstance(e.__cause__, KeyError) else 3)
    return x


def cm_generator_did_not_yield(x):
    try:
        with no_yield():
            x = x + 1
    except RuntimeError:
        return x * 2
    return x


def cm_generator_did_not_stop(x):
    try:
        with yields_twice() as v:
            x = x + v
    except RuntimeError:
        return x * 3
    return x


def cm_eval_mode_module(x):
    with eval_mode(norm_net) as m:
        y = m(x)
    return y, norm_net.training


def cm_object_reused(x):
    log = []
    cm = recorded(log, "once")
    with cm:
        x = x + 1
    try:
        with cm:
            x = x + 100
    except (AttributeError, RuntimeError):
        x = x * 2
    return x, log


def cm_nested_in_generator_consumer(x):
    log = []
    def producer(t):
        with recorded(log, "gen"):
            yield t + 1
            yield t + 2
    return list(producer(x)), log


def cm_enter_result_unpacked(x):
    @contextlib.contextmanager
    def pair(t):
        yield t * 2, t * 3
    with pair(x) as (a, b):
        y = a + b
    return y


def exitstack_suppressing_exception(x):
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.suppress(KeyError))
        x = x + 1
        {}["missing"]
    return x * 2


def exitstack_exception_propagates(x):
    log = []
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(log.append, "cleanup")
            raise ValueError()
    except ValueError:
        x = x - 1
    return x, log


def exitstack_pop_all_then_close(x):
    log = []
    with contextlib.ExitStack() as stack:
        stack.callback(log.append, "first")
        saved = stack.pop_all()
    log.append("after with")
    saved.close()
    return x + 1, log


def exitstack_callback_order(x):
    log = []
    with contextlib.ExitStack() as stack:
        for name in ("a", "b", "c"):
            stack.callback(log.append, name)
        y = x * 2
    return y, log


def exitstack_callback_kwargs(x):
    out = {}
    with contextlib.ExitStack() as stack:
        stack.callback(out.update, last=3)
        y = x + 1
    return y, out


def exitstack_push_exit(x):
    log = []
    def on_exit(exc_type, exc, tb):
        log.append(exc_type)
        return True
    with contextlib.ExitStack() as stack:
        stack.push(on_exit)
        raise KeyError()
    return x + 1, log


def exitstack_many_managers(x):
    log = []
    with contextlib.ExitStack() as stack:
        values = [stack.enter_context(recorded(log, i)) for i in range(3)]
        y = x * sum(values)
    return y, log


def nullcontext_in_loop_choice(x):
    out = []
    for use_no_grad in (False, True):
        with torch.no_grad() if use_no_grad else contextlib.nullcontext():
            out.append(x * 2)
    return [o.requires_grad for o in out], out


def suppress_in_callee(x):
    def lookup(d, k):
        with contextlib.suppress(KeyError):
            return d[k]
        return None
    v = lookup({"a": 2.0}, "b")
    return x * (1.0 if v is None else v)


def suppress_stops_at_first_error(x):
    log = []
    with contextlib.suppress(IndexError):
        log.append(1)
        [][1]
        log.append(2)
    return x + len(log), log


def no_grad_in_callee(x):
    def frozen(v):
        with torch.no_grad():
            return v * 2
    y = frozen(x)
    return y, y.requires_grad


def enable_grad_decorated_nested(x):
    @torch.enable_grad()
    def inner(v):
        return v * 2
    with torch.no_grad():
        y = inner(x)
    return y, y.requires_grad


def set_grad_enabled_restores_after_exception(x):
    try:
        with torch.set_grad_enabled(False):
            raise KeyError()
    except KeyError:
        pass
    y = x * 2
    return y, y.requires_grad


def grad_mode_from_flag_in_loop(x):
    outs = []
    for mode in (True, False, True):
        with torch.set_grad_enabled(mode):
            outs.append(x * 3)
    return [o.requires_grad for o in outs]


def no_grad_inside_set_grad_true(x):
    with torch.set_grad_enabled(True):
        a = x * 2
        with torch.no_grad():
            b = x * 3
    return a.requires_grad, b.requires_grad, a + b


def inference_mode_false(x):
    with torch.inference_mode(False):
        y = x * 2
    return y


def autocast_cpu_bf16(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x.t()
    return y.float()


class Timer:
    def __enter__(self):
        self.entered = True
        return self

    def __exit__(self, *exc):
        self.exited = True
        return False


def user_cm_returns_self_state(x):
    with Timer() as timer:
        y = x + 1
    return y, timer.entered, timer.exited


def user_cm_nested_order(x):
    log = []
    with Tracker(log) as outer:
        with Tracker(log) as inner:
            y = x * 2
    return y, log, outer is not inner


def user_cm_swallow_in_loop(x):
    for k in range(3):
        with Swallow():
            if k == 1:
                raise KeyError()
            x = x + k
    return x


def user_cm_exit_gets_exception_type(x):
    log = []
    try:
        with Tracker(log):
            raise IndexError()
    except IndexError:
        pass
    return x * 2, log


def user_cm_scale_attribute_after(x):
    s = Scale(4.0)
    with s as k:
        y = x * k
    s.factor = 5.0
    return y, s.factor


class Nesting:
    def __init__(self):
        self.depth = 0

    @contextlib.contextmanager
    def deeper(self):
        self.depth += 1
        try:
            yield self.depth
        finally:
            self.depth -= 1


def user_cm_generator_method(x):
    m = Nesting()
    with m.deeper() as d1:
        with m.deeper() as d2:
            y = x * d1 * d2
    return y, m.depth


# ---- graph breaks inside managed blocks ---------------------------------------------------------
def _opaque(v):
    torch._dynamo.graph_break()
    return v


def break_inside_contextmanager(x):
    log = []
    with recorded(log, "blk"):
        y = x * 2
        y = _opaque(y)
        z = y + 1
    return z, log


def break_inside_user_cm(x):
    log = []
    with Tracker(log):
        y = x.sin()
        y = _opaque(y)
    return y.cos(), log


def break_inside_nullcontext(x):
    with contextlib.nullcontext():
        y = x * 2
        y = _opaque(y)
    return y + 1


def break_inside_suppress(x):
    with contextlib.suppress(KeyError):
        y = x * 2
        y = _opaque(y)
    return y + 1


def break_inside_exitstack(x):
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.no_grad())
        y = x * 2
        y = _opaque(y)
    return y + 1


def break_inside_no_grad_nested_user_cm(x):
    log = []
    with torch.no_grad():
        with Tracker(log):
            y = _opaque(x * 2)
    return y, log


def break_before_and_after_cm(x):
    y = _opaque(x + 1)
    with contextlib.nullcontext():
        y = y * 2
    return _opaque(y) - 1


def break_inside_catch_warnings(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = _opaque(x * 2)
    return y


# ---- grad-mode managers as objects: made early, kept in containers and globals, across breaks ----
SHARED_NO_GRAD = torch.no_grad()


def global_no_grad_object(x):
    with SHARED_NO_GRAD:
        y = x * 2
    return y, y.requires_grad


def no_grad_made_before_break(x):
    ctx = torch.no_grad()
    torch._dynamo.graph_break()
    with ctx:
        y = x * 2
    return y, y.requires_grad


def set_grad_enabled_made_before_break(x):
    ctx = torch.set_grad_enabled(False)
    torch._dynamo.graph_break()
    y = x * 2
    with ctx:
        z = x * 3
    return y.requires_grad, z.requires_grad, torch.is_grad_enabled()


def managers_in_dict_across_break(x):
    modes = {"train": torch.enable_grad(), "eval": torch.no_grad()}
    torch._dynamo.graph_break()
    with modes["eval"]:
        y = x * 2
    with modes["train"]:
        z = x * 3
    return y.requires_grad, z.requires_grad


def manager_reused_after_break(x):
    ctx = torch.no_grad()
    with ctx:
        a = x * 2
    torch._dynamo.graph_break()
    with ctx:
        b = x * 3
    return a.requires_grad, b.requires_grad, a + b


def break_inside_global_no_grad(x):
    with SHARED_NO_GRAD:
        y = x * 2
        torch._dynamo.graph_break()
        z = y + 1
    return z, z.requires_grad


def manager_list_entered_in_turn_across_break(x):
    managers = [torch.no_grad(), torch.enable_grad(), torch.set_grad_enabled(True)]
    out = []
    for m in managers:
        with m:
            out.append((x * 2).requires_grad)
        torch._dynamo.graph_break()
    return out


CONTEXTMANAGER_CASES = [
    (cm_basic, lambda: (t(3),)),
    (cm_plain, lambda: (t(3),)),
    (cm_yields_tensor, lambda: (t(3),)),
    (cm_nested, lambda: (t(3),)),
    (cm_two_in_one_with, lambda: (t(3),)),
    (cm_swallows_exception, lambda: (t(3),)),
    (cm_exception_propagates_through, lambda: (t(3),)),
    (cm_wraps_no_grad, lambda: (tg(3),)),
    (cm_in_callee, lambda: (t(3),)),
    (cm_used_as_decorator, lambda: (t(3),)),
    (cm_in_loop, lambda: (t(3),)),
    (cm_return_inside, lambda: (t(3),)),
]

CONTEXTLIB_CASES = [
    (nullcontext_basic, lambda: (t(3),)),
    (nullcontext_enter_result, lambda: (t(3),)),
    (nullcontext_or_no_grad, lambda: (tg(3), True)),
    (suppress_key_error, lambda: (t(3),)),
    (suppress_nothing_raised, lambda: (t(3),)),
    (suppress_multiple_types, lambda: (t(3),)),
    (exitstack_empty, lambda: (t(3),)),
    (exitstack_enter_contexts, lambda: (t(3),)),
    (exitstack_callback, lambda: (t(3),)),
    (exitstack_no_grad, lambda: (tg(3),)),
    (exitstack_conditional, lambda: (tg(3), True)),
    (closing_object, lambda: (t(3),)),
]

GRAD_MODE_CASES = [
    (no_grad_block, lambda: (tg(3),)),
    (enable_grad_inside_no_grad, lambda: (tg(3),)),
    (set_grad_enabled_false, lambda: (tg(3),)),
    (set_grad_enabled_flag, lambda: (tg(3), False)),
    (set_grad_enabled_as_function, lambda: (tg(3),)),
    (set_grad_enabled_decorator, lambda: (tg(3),)),
    (no_grad_decorator, lambda: (tg(3),)),
    (no_grad_decorated_callee, lambda: (tg(3),)),
    (enable_grad_decorated_callee, lambda: (tg(3),)),
    (set_grad_decorated_callee, lambda: (tg(3),)),
    (set_grad_enabled_wraps_function, lambda: (tg(3),)),
    (no_grad_wraps_function, lambda: (tg(3),)),
    (inference_mode_block, lambda: (t(3),)),
    (is_grad_enabled_inside, lambda: (tg(3),)),
    (grad_managers_in_list, lambda: (tg(3),)),
    (grad_manager_in_dict, lambda: (tg(3), False)),
    (no_grad_with_print_break, lambda: (tg(3),)),
    (grad_manager_in_list_across_break, lambda: (tg(3),)),
    (no_grad_exception_inside, lambda: (tg(3),)),
    (autocast_disabled, lambda: (t(3, 3),)),
]

MORE_CASES = [
    (cm_no_finally_exception_skips_exit, lambda: (t(3),)),
    (cm_converts_exception, lambda: (t(3),)),
    (cm_generator_did_not_yield, lambda: (t(3),)),
    (cm_generator_did_not_stop, lambda: (t(3),)),
    (cm_eval_mode_module, lambda: (t(2, 3),)),
    (cm_object_reused, lambda: (t(3),)),
    (cm_nested_in_generator_consumer, lambda: (t(3),)),
    (cm_enter_result_unpacked, lambda: (t(3),)),
    (exitstack_suppressing_exception, lambda: (t(3),)),
    (exitstack_exception_propagates, lambda: (t(3),)),
    (exitstack_pop_all_then_close, lambda: (t(3),)),
    (exitstack_callback_order, lambda: (t(3),)),
    (exitstack_callback_kwargs, lambda: (t(3),)),
    (exitstack_push_exit, lambda: (t(3),)),
    (exitstack_many_managers, lambda: (t(3),)),
    (nullcontext_in_loop_choice, lambda: (tg(3),)),
    (suppress_in_callee, lambda: (t(3),)),
    (suppress_stops_at_first_error, lambda: (t(3),)),
    (no_grad_in_callee, lambda: (tg(3),)),
    (enable_grad_decorated_nested, lambda: (tg(3),)),
    (set_grad_enabled_restores_after_exception, lambda: (tg(3),)),
    (grad_mode_from_flag_in_loop, lambda: (tg(3),)),
    (no_grad_inside_set_grad_true, lambda: (tg(3),)),
    (inference_mode_false, lambda: (t(3),)),
    (autocast_cpu_bf16, lambda: (t(3, 3),)),
    (user_cm_returns_self_state, lambda: (t(3),)),
    (user_cm_nested_order, lambda: (t(3),)),
    (user_cm_swallow_in_loop, lambda: (t(3),)),
    (user_cm_exit_gets_exception_type, lambda: (t(3),)),
    (user_cm_scale_attribute_after, lambda: (t(3),)),
    (user_cm_generator_method, lambda: (t(3),)),
]

BREAK_INSIDE_CASES = [
    (break_inside_contextmanager, lambda: (t(3),)),
    (break_inside_user_cm, lambda: (t(3),)),
    (break_inside_nullcontext, lambda: (t(3),)),
    (break_inside_suppress, lambda: (t(3),)),
    (break_inside_exitstack, lambda: (tg(3),)),
    (break_inside_no_grad_nested_user_cm, lambda: (tg(3),)),
    (break_before_and_after_cm, lambda: (t(3),)),
    (break_inside_catch_warnings, lambda: (t(3),)),
]

GRAD_OBJECT_CASES = [
    (global_no_grad_object, lambda: (tg(3),)),
    (no_grad_made_before_break, lambda: (tg(3),)),
    (set_grad_enabled_made_before_break, lambda: (tg(3),)),
    (managers_in_dict_across_break, lambda: (tg(3),)),
    (manager_reused_after_break, lambda: (tg(3),)),
    (break_inside_global_no_grad, lambda: (tg(3),)),
    (manager_list_entered_in_turn_across_break, lambda: (tg(3),)),
]

WARNINGS_CASES = [
    (catch_warnings_block, lambda: (t(3),)),
    (catch_warnings_record, lambda: (t(3),)),
]

USER_CM_CASES = [
    (user_cm_basic, lambda: (t(3),)),
    (user_cm_exception, lambda: (t(3),)),
    (user_cm_swallows, lambda: (t(3),)),
    (user_cm_does_not_swallow, lambda: (t(3),)),
    (user_cm_state, lambda: (t(3),)),
    (user_cm_sets_grad, lambda: (tg(3),)),
    (user_cm_passed_in, lambda: (t(3), Scale(2.0))),
    (user_cm_nested, lambda: (t(3),)),
    (user_cm_return_inside, lambda: (t(3),)),
    (user_cm_break_inside, lambda: (t(3),)),
]

# Where framegraph falls short of torch.compile, and why (strict xfails).
SHORT = {}


@parity_params(CONTEXTMANAGER_CASES + CONTEXTLIB_CASES + GRAD_MODE_CASES + WARNINGS_CASES + USER_CM_CASES
               + MORE_CASES + BREAK_INSIDE_CASES + GRAD_OBJECT_CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check(fn, make_args)


def annotated(x):
    y = x.sin()
    with torch.fx.traceback.annotate({"stage": "inner"}):
        z = y.cos()
        with torch.fx.traceback.annotate({"fallback_to_eager": True}):
            w = z.exp()
    return w + 1


def test_fx_annotations_reach_the_nodes_as_under_torch_compile():
    """`torch.fx.traceback.annotate` blocks put their dicts (merged, innermost last) in the
    meta["custom"] of the nodes made inside, which inductor reads; no break."""
    from .frontends import break_count, compile_with
    from .helpers import CountingBackend

    x = torch.randn(3)
    customs = {}
    for frontend in ("torch", "framegraph"):
        counting = CountingBackend()
        assert_same(annotated(x), compile_with(frontend, annotated, counting)(x))
        assert counting.graph_count == 1 and break_count(frontend) == 0, frontend
        customs[frontend] = [n.meta.get("custom") for n in counting.graphs[0].graph.nodes]
    assert customs["framegraph"] == customs["torch"] == [
        None, None, {"stage": "inner"}, {"stage": "inner", "fallback_to_eager": True}, None, None]
