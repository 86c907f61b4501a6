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


@polyfill(functools.cached_property.__get__)
def cached_property_get(self, instance, owner=None):
    # The real one (3.11) holds an RLock while it computes: a C object the trace cannot enter.
    # A trace runs on one thread, so the lock changes nothing here; the value computed is
    # stored in the instance's __dict__, which later reads find before this descriptor.
    if instance is None:
        return self
    if self.attrname is None:
        raise TypeError("Cannot use cached_property instance without calling __set_name__ on it.")
    try:
        cache = instance.__dict__
    except AttributeError:
        raise TypeError(f"No '__dict__' attribute on {type(instance).__name__!r} instance "
                        f"to cache {self.attrname!r} property.") from None
    if self.attrname in cache:
        return cache[self.attrname]
    value = self.func(instance)
    cache[self.attrname] = value
    return value
