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


def polyfill(real: Callable) -> Callable[[Callable], Callable]:
    def register(stand_in: Callable) -> Callable:
        POLYFILLS[real] = stand_in
        return stand_in
    return register


def real_function_of(stand_in: object) -> Callable | None:
    """The library function a stand-in replaces (to rebuild a call of it after the graph)."""
    return next((real for real, candidate in POLYFILLS.items() if candidate is stand_in), None)


def stand_in_for(value: object) -> Callable | None:
    if not callable(value) or isinstance(type(value).__hash__, types.FunctionType):
        return None  # only functions are polyfilled; a class's own __hash__ is user code
    try:
        return POLYFILLS.get(value)  # type: ignore[arg-type]
    except TypeError:  # unhashable values are never polyfilled
        return None


from . import (collections_abc_polyfills, collections_polyfills, functools_polyfills,  # noqa: E402,F401
               itertools_polyfills, typing_polyfills)  # (registers them)
