"""The mixin methods of `collections.abc` that user mappings inherit, as Python the translator
can follow (their module is frozen into the interpreter, so its code is never traced).
transformers' attention registries are MutableMappings read with `get` and `in`."""

from __future__ import annotations

import collections.abc

from . import polyfill


@polyfill(collections.abc.Mapping.get)
def get(self, key, default=None):
    try:
        return self[key]
    except KeyError:
        return default


@polyfill(collections.abc.Mapping.__contains__)
def __contains__(self, key):
    try:
        self[key]
    except KeyError:
        return False
    else:
        return True
