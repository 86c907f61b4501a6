"""Pure-Python stand-ins for library functions written in C, traced instead of breaking.

`itertools.chain` cannot be traced into (it is C) and would split the graph; its stand-in
here is a plain generator that behaves the same, which the translator inlines like user
code. To add one: write the function in the module for its library, decorated with
`@polyfill(real_function)`. A stand-in may use builtins and its arguments only (no module
globals), and must match the real function's results exactly.
"""

from __future__ import annotations

import types
from typing import Callable

POLYFILLS: dict[Callable, Callable] = {}
# id(real function) -> (real function, stand-in): looked up by identity, since hashing an
# arbitrary value the translator meets runs its __hash__ (user code, maybe half-initialised).
_BY_ID: dict[int, tuple[Callable, Callable]] = {}


def polyfill(real: Callable) -> Callable[[Callable], Callable]:
    def register(stand_in: Callable) -> Callable:
        POLYFILLS[real] = stand_in
        _BY_ID[id(real)] = (real, stand_in)
        return stand_in
    return register


def real_function_of(stand_in: object) -> Callable | None:
    """The library function a stand-in replaces (to rebuild a call of it after the graph)."""
    return next((real for real, candidate in POLYFILLS.items() if candidate is stand_in), None)


def stand_in_for(value: object) -> Callable | None:
    entry = _BY_ID.get(id(value))
    if entry is not None and entry[0] is value:
        return entry[1]
    if isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, type):
        # A C classmethod (itertools.chain.from_iterable) is a new object at each access; equal
        # ones hash by their class, which runs no user code.
        return POLYFILLS.get(value)
    return None


from . import (collections_abc_polyfills, collections_polyfills, functools_polyfills,  # noqa: E402,F401
               itertools_polyfills, typing_polyfills)  # (registers them)
