"""functools, as Python the translator can follow."""

from __future__ import annotations

import functools

from . import polyfill

@polyfill(functools.reduce)
def reduce(function, iterable, *initial):
    items = list(iterable)
    if initial:
        value = initial[0]
    elif items:
        value, items = items[0], items[1:]
    else:
        raise TypeError("reduce() of empty iterable with no initial value")
    for item in items:
        value = function(value, item)
    return value
