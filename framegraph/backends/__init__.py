"""Backends: what turns a captured fx graph into something to call.

A backend is any callable `backend(gm, example_inputs) -> callable`; the result is called with
the graph's inputs as positional arguments. Three are built in (see `builtin.py`):
`eager` runs the GraphModule, `aot_eager` runs it through AOTAutograd with no code generation,
and `inductor` is torch's own compiler. Register more with `@register_backend`.
"""

from __future__ import annotations

from typing import Callable

from ..exc import FramegraphError

Backend = Callable[..., Callable]
_REGISTRY: dict[str, Backend] = {}


def register_backend(fn: Backend | str | None = None, *, name: str | None = None):
    """Registers a backend under `name` (default: the function's name).

    Forms: `register_backend(fn)`, `register_backend(fn, name="x")`, and as decorators
    `@register_backend`, `@register_backend("x")`, `@register_backend(name="x")`.
    """
    if isinstance(fn, str):
        fn, name = None, fn

    def register(backend: Backend) -> Backend:
        if not callable(backend):
            raise TypeError(f"a backend must be callable as backend(gm, example_inputs), got {backend!r}")
        key = name or backend.__name__
        if key in _REGISTRY and _REGISTRY[key] is not backend:
            raise FramegraphError(f"a backend named {key!r} is already registered")
        _REGISTRY[key] = backend
        return backend
    return register(fn) if fn is not None else register


def list_backends() -> list[str]:
    """The names `framegraph.compile(backend=...)` accepts."""
    _load_builtins()
    return sorted(_REGISTRY)


def lookup_backend(backend: str | Backend) -> Backend:
    """Resolves a backend name or callable; a bad one is an error that lists the valid names."""
    if callable(backend):
        return backend
    _load_builtins()
    if isinstance(backend, str) and backend in _REGISTRY:
        return _REGISTRY[backend]
    raise FramegraphError(f"unknown backend {backend!r}: use one of {', '.join(sorted(_REGISTRY))}, "
                          "or pass a callable backend(gm, example_inputs) -> callable")


def _load_builtins() -> None:
    # Deferred so that importing framegraph does not import torch.
    from . import builtin  # noqa: F401
