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

import pytest
import torch

from .python_parity import check, parametrize, t


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


@parametrize(CONTEXTMANAGER_CASES + CONTEXTLIB_CASES + GRAD_MODE_CASES + WARNINGS_CASES + USER_CM_CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check(fn, make_args)
