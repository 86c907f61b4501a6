"""Helpers for the frame-hook tests (a distinct name: other test dirs have a conftest)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from framegraph import _C

ALWAYS = lambda f_locals: True  # noqa: E731  a guard that always passes


@contextlib.contextmanager
def hooked(callback: Any) -> Iterator[None]:
    prev = _C.set_eval_frame(callback)
    try:
        yield
    finally:
        _C.set_eval_frame(prev)


def twin(fn_or_code: Any, tag: str = "repl", old: str = "orig") -> Any:
    """A copy of a code object whose string constant `old` reads `tag` instead."""
    code = getattr(fn_or_code, "__code__", fn_or_code)
    swap = lambda c: tag if c == old else c  # noqa: E731
    consts = tuple(tuple(map(swap, c)) if type(c) is tuple else swap(c) for c in code.co_consts)
    assert consts != code.co_consts, f"{code.co_name} has no constant {old!r}"
    return code.replace(co_consts=consts)


class Replacer:
    """A callback: replaces codes in `table` (original code -> (check_fn, new code));
    every other frame runs as is (RUN_ONLY, so no code gets a lasting SKIP mark).
    Records the code of every frame it is offered."""

    def __init__(self, table: dict | None = None, default: Any = False) -> None:
        self.table = dict(table or {})
        self.default = default
        self.seen: list = []

    def add(self, fn: Any, new_code: Any, check_fn: Callable = ALWAYS) -> Any:
        self.table[fn.__code__] = (check_fn, new_code)
        return new_code

    def __call__(self, frame: Any) -> Any:
        if frame.f_code.co_filename == contextlib.__file__:
            return False  # hooked()'s own __exit__
        self.seen.append(frame.f_code)
        return self.table.get(frame.f_code, self.default)

    def reset(self) -> None:
        for code in self.table:
            _C.reset_code(code)

    def names(self) -> list[str]:
        return [c.co_name for c in self.seen]
