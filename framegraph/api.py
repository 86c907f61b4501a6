"""The public entry points: `compile` and `reset`."""

from __future__ import annotations

import builtins
import functools
import inspect
from typing import Any, Callable

import torch

from . import convert_frame
from .backends import lookup_backend
from .eval_frame import reset_code, wrap


def compile(fn: Callable | None = None, *, backend: str | Callable = "inductor",
            fullgraph: bool = False, dynamic: bool | None = None) -> Any:
    """Compiles `fn` (a function or an nn.Module) the way torch.compile does.

    Usable as `framegraph.compile(fn, ...)` and as a decorator, with or without arguments.
    `backend` is a registered name (see `list_backends()`) or a callable
    `backend(gm, example_inputs) -> callable`. With `fullgraph=True` anything that would
    split the graph raises instead.
    """
    if dynamic not in (None, True, False):
        raise TypeError(f"framegraph.compile: dynamic must be None, True or False, got {dynamic!r}")
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    resolved = lookup_backend(backend)
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
    if isinstance(fn, torch.nn.Module):
        entry = _module_entry()
        return OptimizedModule(fn, entry, convert_frame.ConvertFrame(resolved, name, fullgraph, entry.__code__, dynamic))
    if not callable(fn):
        raise TypeError(f"framegraph.compile expects a function or an nn.Module, got "
                        f"{type(fn).__name__} ({fn!r})")
    root = getattr(inspect.unwrap(fn), "__code__", None)
    return wrap(fn, convert_frame.ConvertFrame(resolved, name, fullgraph, root, dynamic))


class OptimizedModule(torch.nn.Module):
    """A module whose calls run its forward, and everything that calls, under framegraph.

    Parameters, buffers, state_dict and train()/eval() are the original module's: attribute
    reads fall through to it, and it is registered as the submodule `_orig_mod`.
    """

    def __init__(self, module: torch.nn.Module, entry: Callable, callback: Callable) -> None:
        super().__init__()
        self._orig_mod = module
        self._call = wrap(entry, callback)

    def __call__(self, *args, **kwargs):
        return self._call(self._orig_mod, *args, **kwargs)

    forward = __call__

    def __getattr__(self, name: str):
        if name == "_orig_mod":
            return super().__getattr__(name)
        return getattr(self._orig_mod, name)


def _module_entry() -> Callable:
    """A fresh one-line function that calls the module: the frame framegraph compiles.

    Module.__call__ itself lives in torch and is never translated; this frame's single call
    is, so hooks and forward (built-in modules included) are inlined into one graph. Each
    compiled module gets its own code object, so its cache entries are its own.
    """
    namespace: dict[str, Any] = {}
    exec(builtins.compile("def module_call(module, *args, **kwargs):\n    return module(*args, **kwargs)\n",
                 "<framegraph module call>", "exec"), namespace)
    return namespace["module_call"]


def reset() -> None:
    """Drops every compiled entry and forgets compile counts; counters are kept."""
    for code in convert_frame.touched_codes():
        reset_code(code)
    convert_frame.reset_state()
