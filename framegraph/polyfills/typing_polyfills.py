"""typing, as Python the translator can follow (its module is never traced)."""

from __future__ import annotations

import typing

from . import polyfill


@polyfill(typing.cast)
def cast(typ, val):
    # typing.cast is the identity at run time; the type is for checkers only.
    return val
