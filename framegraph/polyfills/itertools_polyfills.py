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
    # The real product reads all its arguments when it is made, before the first next().
    pools = [tuple(pool) for pool in iterables] * repeat

    def combinations():
        result = [[]]
        for pool in pools:
            result = [prefix + [item] for prefix in result for item in pool]
        for combination in result:
            yield tuple(combination)

    return combinations()


@polyfill(itertools.islice)
def islice(iterable, *bounds):
    # Takes exactly what the real islice takes: the items up to each one it yields, never
    # one past `stop` (nor past the last one it yields).
    bounds = slice(*bounds)
    start = 0 if bounds.start is None else bounds.start
    step = 1 if bounds.step is None else bounds.step
    stop = bounds.stop
    for value in (start, stop):
        if value is not None and value < 0:
            raise ValueError("Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    if step < 1:
        raise ValueError("Step for islice() must be a positive integer or None.")
    iterator = iter(iterable)
    position, wanted = 0, start
    while True:
        while position < wanted:
            try:
                next(iterator)
            except StopIteration:
                return
            position += 1
        if stop is not None and position >= stop:
            return
        try:
            item = next(iterator)
        except StopIteration:
            return
        position += 1
        yield item
        wanted = wanted + step if stop is None else min(wanted + step, stop)


@polyfill(itertools.repeat)
def repeat(value, times=None):
    if times is None:
        raise TypeError("itertools.repeat without times is infinite; framegraph only traces finite loops")
    for _ in range(times):
        yield value


@polyfill(itertools.starmap)
def starmap(function, iterable):
    for args in iterable:
        yield function(*args)


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
    # Lazy like the real one: a row takes one item from each argument still running.
    iterators = [iter(iterable) for iterable in iterables]
    running = [True] * len(iterators)
    active = len(iterators)
    while active:
        row = []
        for index, iterator in enumerate(iterators):
            if running[index]:
                try:
                    row.append(next(iterator))
                    continue
                except StopIteration:
                    active -= 1
                    if not active:
                        return
                    running[index] = False
            row.append(fillvalue)
        yield tuple(row)
