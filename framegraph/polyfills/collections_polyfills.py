"""The C helpers of `collections` that its Python classes (Counter) call, as Python the
translator can follow."""

from __future__ import annotations

import collections

from . import polyfill


@polyfill(collections._count_elements)
def _count_elements(mapping, iterable):
    # Counter.update's counting loop: each item looked up with the mapping's own `get`
    mapping_get = mapping.get
    for elem in iterable:
        mapping[elem] = mapping_get(elem, 0) + 1
