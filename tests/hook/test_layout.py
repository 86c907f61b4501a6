"""A replacement may have more locals than the original; its free variables still bind by
position, and are checked by name."""

from __future__ import annotations

import pytest

from framegraph import _C


def make_closure():
    scale = 3

    def fn(x):
        return x * scale

    return fn


def replacement_template():
    scale = 3

    def fn(x):
        extra_local = x + 0
        another = extra_local * scale
        return another

    return fn


def test_replacement_with_more_locals_and_a_free_variable():
    fn, replacement = make_closure(), replacement_template()
    assert fn.__code__.co_freevars == replacement.__code__.co_freevars == ("scale",)
    seen = []

    def callback(frame):
        if frame.f_code is fn.__code__:
            seen.append(frame.f_code)
            return (lambda f_locals: True), replacement.__code__
        return None

    previous = _C.set_eval_frame(callback)
    try:
        assert fn(2) == 6
    finally:
        _C.set_eval_frame(previous)
    assert seen == [fn.__code__]
    _C.reset_code(fn.__code__)


def test_free_variable_names_must_match():
    def other():
        factor = 3

        def fn(x):
            return x * factor

        return fn

    fn, mismatched = make_closure(), other()

    def callback(frame):
        if frame.f_code is fn.__code__:
            return (lambda f_locals: True), mismatched.__code__
        return None

    previous = _C.set_eval_frame(callback)
    try:
        with pytest.raises(TypeError, match="free variables"):
            fn(2)
    finally:
        _C.set_eval_frame(previous)
    _C.reset_code(fn.__code__)
