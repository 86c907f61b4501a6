"""itertools, as generators the translator can follow."""

from __future__ import annotations

import itertools

from . import polyfill


@polyfill(itertools.chain)
def chain(*iterables):
    for iterable in iterables:
        for item in iterable:
            yield item


@polyfill(itertools.chain.from_iterable)
def chain_from_iterable(iterables):
    for iterable in iterables:
        for item in iterable:
            yield item


@polyfill(itertools.product)
def product(*iterables, repeat=1):
    pools = [list(pool) for pool in iterables] * repeat
    result = [[]]
    for pool in pools:
        result = [prefix + [item] for prefix in result for item in pool]
    for combination in result:
        yield tuple(combination)


@polyfill(itertools.islice)
def islice(iterable, *bounds):
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (list(bounds) + [1])[:3]
    start = 0 if start is None else start
    step = 1 if step is None else step
    for index, item in enumerate(iterable):
        if stop is not None and index >= stop:
            return
        if index >= start and (index - start) % step == 0:
            yield item


@polyfill(itertools.repeat)
def repeat(value, times=None):
    if times is None:
        raise TypeError("itertools.repeat without times is infinite; framegraph only traces finite loops")
    for _ in range(times):
        yield value


@polyfill(itertools.accumulate)
def accumulate(iterable, func=None, *, initial=None):
    total = initial
    started = initial is not None
    if started:
        yield total
    for item in iterable:
        if not started:
            total, started = item, True
        else:
            total = total + item if func is None else func(total, item)
        yield total


@polyfill(itertools.zip_longest)
def zip_longest(*iterables, fillvalue=None):
    columns = [list(iterable) for iterable in iterables]
    longest = max((len(column) for column in columns), default=0)
    for index in range(longest):
        yield tuple(column[index] if index < len(column) else fillvalue for column in columns)
