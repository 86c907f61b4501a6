"""The public entry points: `compile` and `reset`."""

from __future__ import annotations

import builtins
import functools
import inspect
import types
from typing import Any, Callable

import torch

from . import convert_frame
from .backends import lookup_backend
from .eval_frame import wrap
from .exc import Unsupported
from .trace_rules import skip_reason


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
    if not isinstance(fullgraph, bool):
        raise TypeError(f"framegraph.compile: fullgraph must be True or False, got {fullgraph!r}")
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
    root = _root_code(fn)
    if fullgraph:
        _check_traced(fn, root)
    return wrap(fn, convert_frame.ConvertFrame(resolved, name, fullgraph, root, dynamic))


def _root_code(fn: Callable) -> types.CodeType | None:
    """The code of the first frame a call of `fn` runs: the frame `fullgraph` is about."""
    fn = inspect.unwrap(fn)
    while isinstance(fn, functools.partial):
        fn = inspect.unwrap(fn.func)
    code = getattr(fn, "__code__", None)  # functions, and bound methods through their function
    if code is None and not isinstance(fn, type):
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)  # a callable object
    return code if isinstance(code, types.CodeType) else None


def _check_traced(fn: Callable, root: types.CodeType | None) -> None:
    """fullgraph=True promises one graph for the whole call: refused at once for a callable
    framegraph will not translate, rather than run eagerly without a word."""
    name = f"{getattr(fn, '__module__', None) or ''}.{getattr(fn, '__qualname__', None) or repr(fn)}".lstrip(".")
    if root is None:
        why = "it has no Python bytecode (a builtin or a C function)"
    else:
        why = skip_reason(root)
        why = why and f"trace_rules skip it: {why}"
    if why is not None:
        raise Unsupported("Unsupported frame", f"framegraph.compile(fullgraph=True): {name} is not traced: {why}",
                          "fullgraph=True asks for the whole call as one graph, and framegraph runs this "
                          "function as it is, never translating it.",
                          ("Compile the user function that calls it instead.",))


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
    """Drops every compiled entry and forgets compile counts; takes the compiled and resume
    functions framegraph put in user globals out again; counters are kept."""
    convert_frame.reset_state()
