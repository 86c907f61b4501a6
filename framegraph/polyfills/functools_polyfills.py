"""functools, as Python the translator can follow."""

from __future__ import annotations

import functools

from . import polyfill

@polyfill(functools.reduce)
def reduce(function, iterable, *initial):
    # Each item is taken just before the call that uses it, as the real reduce takes it.
    iterator = iter(iterable)
    if initial:
        value = initial[0]
    else:
        try:
            value = next(iterator)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    for item in iterator:
        value = function(value, item)
    return value


@polyfill(functools.update_wrapper)
def update_wrapper(wrapper, wrapped, assigned=functools.WRAPPER_ASSIGNMENTS, updated=functools.WRAPPER_UPDATES):
    # functools.wraps(wrapped) is a partial of the real update_wrapper (variables/stdlib.py),
    # whose calls come here.
    for name in assigned:
        try:
            value = getattr(wrapped, name)
        except AttributeError:
            pass
        else:
            setattr(wrapper, name, value)
    for name in updated:
        getattr(wrapper, name).update(getattr(wrapped, name, {}))
    wrapper.__wrapped__ = wrapped
    return wrapper
