"""Exceptions at torch.compile's parity: try/except/else/finally with tensor work inside,
exceptions raised and caught within the trace, `__context__` and `__cause__` chains,
`raise ... from`, exception groups (`except*`), re-raises in handlers, and exceptions that
leave the compiled function.

Every case runs eagerly, under framegraph and under torch.compile with counting backends
(`python_parity.check`): equal results, raised exception types and mutated arguments, and no
more breaks and no fewer captured ops than torch.compile.
"""

import torch
import torch._dynamo

from .datadep_cases import parity_params
from .python_parity import check, t


class ShapeError(ValueError):
    pass


class RetryableError(RuntimeError):
    pass


# ---- try/except with tensor work -------------------------------------------------------------
def caught_value_error(x):
    try:
        y = x * 2
        raise ValueError("bad")
    except ValueError:
        y = x - 1
    return y


def caught_by_base_class(x):
    try:
        raise KeyError("k")
    except LookupError:
        return x.cos()


def caught_custom(x):
    try:
        if x.dim() == 1:
            raise ShapeError("need 2-d")
        y = x
    except ShapeError:
        y = x.unsqueeze(0)
    return y * 2


def caught_tuple_of_types(x):
    try:
        raise TypeError()
    except (ValueError, TypeError):
        return x + 1


def except_as_reads_args(x):
    try:
        raise ValueError(3)
    except ValueError as e:
        return x * e.args[0]


def except_as_str_message(x):
    try:
        raise ValueError("scale")
    except ValueError as e:
        return x * len(str(e))


def second_handler_matches(x):
    try:
        raise IndexError()
    except KeyError:
        return x
    except IndexError:
        return x * 3


def no_exception_else(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 1
    else:
        y = y * 2
    return y


def exception_skips_else(x):
    try:
        y = x + 1
        raise ValueError()
    except ValueError:
        y = y - 10
    else:
        y = y * 2
    return y


def finally_runs_on_success(x):
    log = []
    try:
        y = x.sin()
    finally:
        log.append("finally")
    return y, log


def finally_runs_on_caught(x):
    log = []
    try:
        try:
            raise RuntimeError()
        finally:
            log.append("inner finally")
    except RuntimeError:
        log.append("caught")
    return x + len(log), log


def finally_with_return(x):
    def inner(v):
        try:
            return v * 2
        finally:
            v.add_(1)
    y = x.clone()
    return inner(y), y


def finally_overrides_return(x):
    def inner(v):
        try:
            return v * 2
        finally:
            return v * 3  # noqa: B012
    return inner(x)


def nested_try_inner_catches(x):
    try:
        try:
            raise ValueError()
        except ValueError:
            x = x + 1
    except Exception:
        x = x - 100
    return x


def nested_try_outer_catches(x):
    try:
        try:
            raise KeyError()
        except ValueError:
            x = x + 1
    except KeyError:
        x = x * 5
    return x


def exception_from_callee(x):
    def check_positive(v, k):
        if k < 0:
            raise ValueError("negative")
        return v * k
    try:
        return check_positive(x, -1)
    except ValueError:
        return check_positive(x, 2)


def exception_deep_callee(x):
    def a(v):
        return b(v) + 1
    def b(v):
        raise RetryableError()
    try:
        return a(x)
    except RetryableError:
        return x * 4


def exception_in_loop_continue(x):
    out = x
    for k in range(4):
        try:
            if k % 2:
                raise ValueError()
            out = out + k
        except ValueError:
            continue
    return out


def exception_in_loop_break(x):
    out = x
    for k in range(5):
        try:
            if k == 2:
                raise StopIteration
            out = out * 1.5
        except StopIteration:
            break
    return out


def retry_loop(x):
    attempts = 0
    while True:
        try:
            attempts += 1
            if attempts < 3:
                raise RetryableError()
            return x * attempts
        except RetryableError:
            pass


def key_error_from_dict(x):
    cache = {"a": x}
    try:
        return cache["b"]
    except KeyError:
        return cache["a"] + 1


def index_error_from_list(x):
    xs = [x, x + 1]
    try:
        return xs[5]
    except IndexError:
        return xs[-1]


class Config:
    scale = 2.0


def attribute_error_fallback(x):
    cfg = Config()
    try:
        bias = cfg.bias
    except AttributeError:
        bias = 0.5
    return x * cfg.scale + bias


def getattr_default_style(x):
    try:
        n = x.num_heads
    except AttributeError:
        n = 1
    return x * n


def zero_division_caught(x):
    try:
        k = 1 / 0
    except ZeroDivisionError:
        k = 2.0
    return x * k


def int_conversion_error(x):
    try:
        n = int("abc")
    except ValueError:
        n = 4
    return x + n


def assert_caught(x):
    try:
        assert x.dim() == 3, "need 3 dims"
    except AssertionError:
        return x.unsqueeze(0)
    return x


def type_error_from_bad_call(x):
    def f(a, b):
        return a + b
    try:
        return f(x)
    except TypeError:
        return f(x, x)


def stop_iteration_from_next(x):
    it = iter([])
    try:
        v = next(it)
    except StopIteration:
        v = x
    return v * 2


def bare_except(x):
    try:
        raise RuntimeError()
    except:  # noqa: E722
        x = x + 2
    return x


def except_exception_catches_all(x):
    try:
        {}["missing"]
    except Exception:
        x = x * 2
    return x


def exception_not_raised_handler_skipped(x):
    try:
        y = x.relu()
    except RuntimeError:
        y = x.neg()
    return y


def exception_variable_cleared(x):
    try:
        raise ValueError()
    except ValueError as e:
        kind = type(e).__name__
    return x + len(kind)


def isinstance_of_caught(x):
    try:
        raise ShapeError("x")
    except ValueError as e:
        return x * (2 if isinstance(e, ShapeError) else 3)


# ---- raise from, chains, re-raise ------------------------------------------------------------
def raise_from_caught(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as outer:
        return x * (2 if isinstance(outer.__cause__, KeyError) else 3)


def raise_from_none(x):
    try:
        try:
            raise KeyError()
        except KeyError:
            raise ValueError() from None
    except ValueError as e:
        return x * (2 if e.__cause__ is None else 3), e.__suppress_context__


def implicit_context(x):
    try:
        try:
            raise KeyError()
        except KeyError:
            raise ValueError()
    except ValueError as e:
        return x * (2 if isinstance(e.__context__, KeyError) else 3)


def context_none_without_chain(x):
    try:
        raise ValueError()
    except ValueError as e:
        return x + (1 if e.__context__ is None else 0)


def reraise_bare(x):
    try:
        try:
            raise ValueError()
        except ValueError:
            x = x + 1
            raise
    except ValueError:
        x = x * 2
    return x


def reraise_named(x):
    try:
        try:
            raise KeyError()
        except KeyError as e:
            raise e
    except KeyError:
        return x - 3


def reraise_different_type(x):
    try:
        try:
            raise KeyError()
        except KeyError:
            raise RetryableError() from None
    except RuntimeError:
        return x.exp()


def raise_class_not_instance(x):
    try:
        raise ValueError
    except ValueError as e:
        return x * len(e.args)


def cause_args(x):
    try:
        try:
            raise ValueError(2)
        except ValueError as e:
            raise RuntimeError(3) from e
    except RuntimeError as e:
        return x * e.args[0] * e.__cause__.args[0]


def with_traceback_none(x):
    try:
        raise ValueError().with_traceback(None)
    except ValueError:
        return x + 1


def exception_instance_made_then_raised(x):
    err = ShapeError("bad shape", 4)
    try:
        raise err
    except ShapeError as e:
        return x * e.args[1], e is err


def exception_object_returned(x):
    try:
        raise ValueError("kept")
    except ValueError as e:
        saved = e
    return x + 1, type(saved)


def exception_stored_in_list(x):
    errors = []
    for k in range(3):
        try:
            if k != 1:
                raise ValueError(k)
        except ValueError as e:
            errors.append(e.args[0])
    return x * sum(errors), errors


# ---- exceptions leaving the compiled function ------------------------------------------------
def raises_value_error(x):
    y = x * 2
    if y.dim() == 1:
        raise ValueError("1-d input")
    return y


def raises_from_callee_uncaught(x):
    def check(v):
        if v.shape[0] > 2:
            raise ShapeError("too long")
        return v
    return check(x) + 1


def raises_key_error_uncaught(x):
    d = {"a": x}
    return d["b"]


def raises_after_finally(x):
    log = []
    try:
        raise RuntimeError("boom")
    finally:
        log.append(x.sum())


def raises_in_handler(x):
    try:
        raise KeyError()
    except KeyError:
        raise ValueError("from handler")


def raises_not_matching(x):
    try:
        raise KeyError()
    except ValueError:
        return x


def assert_fails(x):
    assert x.dim() == 3, "needs 3 dims"
    return x


# ---- exception groups ------------------------------------------------------------------------
def except_star_one(x):
    try:
        raise ExceptionGroup("g", [ValueError(1)])
    except* ValueError:
        x = x + 1
    return x


def except_star_two_handlers(x):
    log = []
    try:
        raise ExceptionGroup("g", [ValueError(), KeyError()])
    except* ValueError:
        log.append("value")
    except* KeyError:
        log.append("key")
    return x * len(log), log


def except_star_unhandled_rest(x):
    try:
        try:
            raise ExceptionGroup("g", [ValueError(), KeyError()])
        except* ValueError:
            x = x + 1
    except* KeyError:
        x = x * 2
    return x


def exception_group_caught_plain(x):
    try:
        raise ExceptionGroup("g", [ValueError()])
    except ExceptionGroup as eg:
        return x * len(eg.exceptions)


def except_star_naked_exception(x):
    try:
        raise ValueError()
    except* ValueError:
        x = x - 1
    return x


# ---- realistic patterns ---------------------------------------------------------------------
def optional_feature(x):
    try:
        mask = x.attention_mask
    except AttributeError:
        mask = None
    if mask is None:
        return x.softmax(-1)
    return (x + mask).softmax(-1)


def validate_then_compute(x, w):
    def validate(a, b):
        if a.shape[-1] != b.shape[0]:
            raise ShapeError(f"{a.shape} @ {b.shape}")
    try:
        validate(x, w)
        return x @ w
    except ShapeError:
        return x @ w.t()


def lookup_with_fallback(x):
    table = {"relu": torch.relu, "tanh": torch.tanh}
    out = []
    for name in ("relu", "gelu", "tanh"):
        try:
            fn = table[name]
        except KeyError:
            fn = torch.sigmoid
        out.append(fn(x))
    return torch.stack(out)


def parse_int_fallback(x):
    values = []
    for s in ("1", "x", "3"):
        try:
            values.append(int(s))
        except ValueError:
            values.append(0)
    return x * sum(values)


def cleanup_in_finally(x, buf):
    try:
        buf.copy_(x * 2)
        y = buf.sum()
    finally:
        buf.mul_(0.5)
    return y


def try_in_callee_loop(x):
    def safe_div(a, k):
        try:
            return a / (1 / k)
        except ZeroDivisionError:
            return a
    return sum(safe_div(x, k) for k in (0, 1, 2))


def early_return_in_try(x):
    for k in range(3):
        try:
            if k == 1:
                return x * k
        finally:
            x = x + 1
    return x


def break_in_try_finally(x):
    log = []
    for k in range(3):
        try:
            if k == 1:
                break
            x = x * 2
        finally:
            log.append(k)
    return x, log


def handler_uses_tensor_result(x):
    y = x.abs()
    try:
        raise ValueError()
    except ValueError:
        y = y + x.mean()
    return y


def suppressed_with_pass(x):
    try:
        raise RuntimeError()
    except RuntimeError:
        pass
    return x.tanh()


def exception_type_dispatch(x):
    out = []
    for err in (ValueError, KeyError, TypeError):
        try:
            raise err()
        except (ValueError, TypeError):
            out.append(x * 2)
        except KeyError:
            out.append(x * 3)
    return torch.stack(out)


class StrictLayer:
    def __init__(self, strict):
        self.strict = strict

    def __call__(self, v):
        if self.strict and v.dim() < 2:
            raise ShapeError()
        return v * 2


def method_raises_caught(x):
    layer = StrictLayer(True)
    try:
        return layer(x)
    except ShapeError:
        return layer(x.unsqueeze(0))


def not_implemented_fallback(x):
    def fast(v):
        raise NotImplementedError
    def slow(v):
        return v.cumsum(0)
    try:
        return fast(x)
    except NotImplementedError:
        return slow(x)


# ---- more handlers, chains and patterns ---------------------------------------------------------
def handler_reads_tensor_from_try(x):
    try:
        y = x.exp()
        z = y[10]
    except IndexError:
        z = y.sum()
    return z


def nested_functions_each_catch(x):
    def inner(v):
        try:
            raise KeyError("inner")
        except KeyError:
            return v + 1

    def outer(v):
        try:
            return inner(v) * 2
        except KeyError:
            return v
    return outer(x)


def exception_escapes_inner_caught_outer_with_finally(x):
    log = []
    def inner(v):
        try:
            raise ValueError()
        finally:
            log.append("inner finally")

    try:
        inner(x)
    except ValueError:
        log.append("outer caught")
    return x * len(log), log


def raise_in_else_clause(x):
    try:
        try:
            y = x + 1
        except KeyError:
            y = x
        else:
            raise ValueError("from else")
    except ValueError:
        y = x * 3
    return y


def raise_in_finally_replaces(x):
    try:
        try:
            raise KeyError()
        finally:
            raise ValueError()  # noqa: B012
    except ValueError as e:
        return x * (2 if isinstance(e.__context__, KeyError) else 3)


def exception_in_comprehension_caught(x):
    try:
        values = [10 // k for k in (2, 1, 0)]
    except ZeroDivisionError:
        values = [0]
    return x * len(values)


def exception_in_generator_caught_by_consumer(x):
    def g(t):
        yield t
        raise ValueError("stop here")
    out = []
    try:
        for v in g(x):
            out.append(v * 2)
    except ValueError:
        out.append(x)
    return out


def loop_collects_failures(x):
    table = {"a": 1.0, "c": 3.0}
    total = x
    misses = []
    for key in ("a", "b", "c", "d"):
        try:
            total = total * table[key]
        except KeyError as e:
            misses.append(e.args[0])
    return total, misses


def try_except_inside_module_forward(x):
    return safe_block(x)


class SafeBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)

    def forward(self, v):
        try:
            cache = self.cache
        except AttributeError:
            cache = None
        out = self.proj(v)
        return out if cache is None else out + cache


torch.manual_seed(0)
safe_block = SafeBlock()


def exception_args_tuple(x):
    try:
        raise ValueError("a", 2, 3.5)
    except ValueError as e:
        a, b, c = e.args
    return x * b + c, a


def exception_repr(x):
    try:
        raise KeyError("missing")
    except KeyError as e:
        text = repr(e)
    return x + len(text), text


def exception_str_of_key_error(x):
    try:
        {}["k"]
    except KeyError as e:
        text = str(e)
    return x + 1, text


def type_of_caught(x):
    try:
        [][0]
    except Exception as e:
        kind = type(e)
    return x * 2, kind is IndexError


def issubclass_dispatch(x):
    def handle(err):
        if issubclass(type(err), LookupError):
            return 1
        return 2
    try:
        raise KeyError()
    except Exception as e:
        k = handle(e)
    return x * k


def reraise_after_cleanup(x, buf):
    try:
        try:
            buf.add_(x)
            raise RetryableError()
        except RetryableError:
            buf.mul_(2)
            raise
    except RetryableError:
        return buf.sum()


def chained_cause_reads_message(x):
    try:
        try:
            int("nan-value")
        except ValueError as e:
            raise RuntimeError("conversion failed") from e
    except RuntimeError as err:
        inner = err.__cause__
    return x * 2, type(inner).__name__


def suppress_context_flag(x):
    try:
        try:
            raise KeyError()
        except KeyError:
            raise ValueError() from None
    except ValueError as e:
        flags = (e.__suppress_context__, e.__cause__ is None, isinstance(e.__context__, KeyError))
    return x + 1, flags


def context_chain_three_levels(x):
    try:
        try:
            try:
                raise KeyError()
            except KeyError:
                raise ValueError()
        except ValueError:
            raise TypeError()
    except TypeError as e:
        depth = 0
        link = e
        while link is not None:
            depth += 1
            link = link.__context__
    return x * depth


def exception_from_torch_shape_check(x):
    try:
        y = x.view(-1, 7)
    except RuntimeError:
        y = x.view(-1)
    return y


def stop_iteration_manual_loop(x):
    it = iter([x, x * 2])
    total = torch.zeros_like(x)
    while True:
        try:
            total = total + next(it)
        except StopIteration:
            break
    return total


def assertion_message_used(x):
    try:
        assert x.dim() > 5, "rank"
    except AssertionError as e:
        msg = e.args[0]
    return x * len(msg)


def exception_in_lambda_caught(x):
    f = lambda d: d["missing"]  # noqa: E731
    try:
        return f({})
    except KeyError:
        return x - 2


def finally_mutates_list_arg(x, log):
    try:
        return x * 2
    finally:
        log.append("done")


def try_in_loop_with_else(x):
    out = x
    for k in range(3):
        try:
            if k == 1:
                raise ValueError()
        except ValueError:
            out = out - 1
        else:
            out = out * 2
    return out


def except_star_value_and_key(x):
    caught = []
    try:
        raise ExceptionGroup("many", [ValueError(1), KeyError(2), ValueError(3)])
    except* ValueError as group:
        caught.append(len(group.exceptions))
    except* KeyError:
        caught.append("key")
    return x * 2, caught


def _safe_ratio(a, k):
    torch._dynamo.graph_break()  # the rest is a frame of its own, called with k = 2, 1, 0
    try:
        return a * (1 / k)
    except ZeroDivisionError:
        return a


def division_by_symbolic_zero_caught(x):
    for k in (2, 1, 0):
        x = _safe_ratio(x, k)
    return x


TRY_EXCEPT_CASES = [
    (caught_value_error, lambda: (t(3),)),
    (caught_by_base_class, lambda: (t(3),)),
    (caught_custom, lambda: (t(3),)),
    (caught_tuple_of_types, lambda: (t(3),)),
    (except_as_reads_args, lambda: (t(3),)),
    (except_as_str_message, lambda: (t(3),)),
    (second_handler_matches, lambda: (t(3),)),
    (no_exception_else, lambda: (t(3),)),
    (exception_skips_else, lambda: (t(3),)),
    (finally_runs_on_success, lambda: (t(3),)),
    (finally_runs_on_caught, lambda: (t(3),)),
    (finally_with_return, lambda: (t(3),)),
    (finally_overrides_return, lambda: (t(3),)),
    (nested_try_inner_catches, lambda: (t(3),)),
    (nested_try_outer_catches, lambda: (t(3),)),
    (exception_from_callee, lambda: (t(3),)),
    (exception_deep_callee, lambda: (t(3),)),
    (exception_in_loop_continue, lambda: (t(3),)),
    (exception_in_loop_break, lambda: (t(3),)),
    (retry_loop, lambda: (t(3),)),
    (key_error_from_dict, lambda: (t(3),)),
    (index_error_from_list, lambda: (t(3),)),
    (attribute_error_fallback, lambda: (t(3),)),
    (getattr_default_style, lambda: (t(3),)),
    (zero_division_caught, lambda: (t(3),)),
    (int_conversion_error, lambda: (t(3),)),
    (assert_caught, lambda: (t(3),)),
    (type_error_from_bad_call, lambda: (t(3),)),
    (stop_iteration_from_next, lambda: (t(3),)),
    (bare_except, lambda: (t(3),)),
    (except_exception_catches_all, lambda: (t(3),)),
    (exception_not_raised_handler_skipped, lambda: (t(3),)),
    (exception_variable_cleared, lambda: (t(3),)),
    (isinstance_of_caught, lambda: (t(3),)),
]

CHAIN_CASES = [
    (raise_from_caught, lambda: (t(3),)),
    (raise_from_none, lambda: (t(3),)),
    (implicit_context, lambda: (t(3),)),
    (context_none_without_chain, lambda: (t(3),)),
    (reraise_bare, lambda: (t(3),)),
    (reraise_named, lambda: (t(3),)),
    (reraise_different_type, lambda: (t(3),)),
    (raise_class_not_instance, lambda: (t(3),)),
    (cause_args, lambda: (t(3),)),
    (with_traceback_none, lambda: (t(3),)),
    (exception_instance_made_then_raised, lambda: (t(3),)),
    (exception_object_returned, lambda: (t(3),)),
    (exception_stored_in_list, lambda: (t(3),)),
]

ESCAPING_CASES = [
    (raises_value_error, lambda: (t(3),)),
    (raises_from_callee_uncaught, lambda: (t(3),)),
    (raises_key_error_uncaught, lambda: (t(3),)),
    (raises_after_finally, lambda: (t(3),)),
    (raises_in_handler, lambda: (t(3),)),
    (raises_not_matching, lambda: (t(3),)),
    (assert_fails, lambda: (t(3),)),
]

GROUP_CASES = [
    (except_star_one, lambda: (t(3),)),
    (except_star_two_handlers, lambda: (t(3),)),
    (except_star_unhandled_rest, lambda: (t(3),)),
    (exception_group_caught_plain, lambda: (t(3),)),
    (except_star_naked_exception, lambda: (t(3),)),
]

MORE_CASES = [
    (handler_reads_tensor_from_try, lambda: (t(3),)),
    (nested_functions_each_catch, lambda: (t(3),)),
    (exception_escapes_inner_caught_outer_with_finally, lambda: (t(3),)),
    (raise_in_else_clause, lambda: (t(3),)),
    (raise_in_finally_replaces, lambda: (t(3),)),
    (exception_in_comprehension_caught, lambda: (t(3),)),
    (exception_in_generator_caught_by_consumer, lambda: (t(3),)),
    (loop_collects_failures, lambda: (t(3),)),
    (try_except_inside_module_forward, lambda: (t(2, 3),)),
    (exception_args_tuple, lambda: (t(3),)),
    (exception_repr, lambda: (t(3),)),
    (exception_str_of_key_error, lambda: (t(3),)),
    (type_of_caught, lambda: (t(3),)),
    (issubclass_dispatch, lambda: (t(3),)),
    (reraise_after_cleanup, lambda: (t(3), torch.zeros(3))),
    (chained_cause_reads_message, lambda: (t(3),)),
    (suppress_context_flag, lambda: (t(3),)),
    (context_chain_three_levels, lambda: (t(3),)),
    (exception_from_torch_shape_check, lambda: (t(3, 2),)),
    (stop_iteration_manual_loop, lambda: (t(3),)),
    (assertion_message_used, lambda: (t(3),)),
    (exception_in_lambda_caught, lambda: (t(3),)),
    (finally_mutates_list_arg, lambda: (t(3), [])),
    (try_in_loop_with_else, lambda: (t(3),)),
    (except_star_value_and_key, lambda: (t(3),)),
]

PATTERN_CASES = [
    (optional_feature, lambda: (t(2, 3),)),
    (validate_then_compute, lambda: (t(2, 3), t(2, 3))),
    (lookup_with_fallback, lambda: (t(3),)),
    (parse_int_fallback, lambda: (t(3),)),
    (cleanup_in_finally, lambda: (t(3), torch.zeros(3))),
    (try_in_callee_loop, lambda: (t(3),)),
    (early_return_in_try, lambda: (t(3),)),
    (break_in_try_finally, lambda: (t(3),)),
    (handler_uses_tensor_result, lambda: (t(3),)),
    (suppressed_with_pass, lambda: (t(3),)),
    (exception_type_dispatch, lambda: (t(3),)),
    (method_raises_caught, lambda: (t(3),)),
    (not_implemented_fallback, lambda: (t(3),)),
    (division_by_symbolic_zero_caught, lambda: (t(3),)),
]

# Where framegraph falls short of torch.compile, and why (strict xfails).
SHORT = {}


@parity_params(TRY_EXCEPT_CASES + CHAIN_CASES + ESCAPING_CASES + GROUP_CASES + MORE_CASES + PATTERN_CASES, SHORT)
def test_like_torch_compile(fn, make_args):
    check(fn, make_args)
