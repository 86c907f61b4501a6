"""The public entry points: `compile` and `reset`."""

from __future__ import annotations

import builtins
import functools
import inspect
import types
import weakref
from typing import Any, Callable

import torch

from . import convert_frame, distributed, higher_order, persistent, reports  # noqa: F401  (they register with the core)
from .backends import lookup_backend
from .eval_frame import wrap
from .exc import Unsupported
from .trace_rules import skip_reason

reports.start_from_environment()  # FRAMEGRAPH_REPORT=dir: the whole process, written at exit


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
        entry = _module_entry(type(fn), resolved, fullgraph, dynamic)
        return OptimizedModule(fn, entry, convert_frame.ConvertFrame(resolved, name, fullgraph, entry.__code__, dynamic,
                                                                          root_calls_module=True))
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
    """The compiled module: calling it calls the original exactly as `module(*args)` would
    (its own `__call__`, hooks and forward), under framegraph.

    It behaves as the original for everything else, following torch.compile's wrapper: the
    original is the submodule `_orig_mod` (so `state_dict` keys and `named_*` names start with
    `_orig_mod.`), attribute reads and writes (`training` included) go through to it, `dir()`
    lists its names, and `len`, iteration, indexing, `in` and truth are its own.
    """

    # Attributes of the wrapper itself; a write to any other name goes to the original (a
    # name the class defines, such as `forward`, can still be replaced on the wrapper).
    _own_attributes = frozenset({"_orig_mod", "_call", "__dict__"})

    def __init__(self, module: torch.nn.Module, entry: Callable, callback: Callable) -> None:
        super().__init__()
        self._orig_mod = module
        self._call = wrap(entry, callback)

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks or self._backward_pre_hooks or self._backward_hooks:
            return super().__call__(*args, **kwargs)  # hooks registered on the wrapper itself
        return self._call(self._orig_mod, *args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._call(self._orig_mod, *args, **kwargs)

    @property
    def training(self) -> bool:
        return self._orig_mod.training

    @training.setter
    def training(self, mode: bool) -> None:
        # Module.__init__ sets a default before the wrapper holds the module: the mode is the module's.
        module = self.__dict__.get("_orig_mod")
        if module is not None:
            module.training = mode

    def __getattr__(self, name: str):
        if name == "_orig_mod":
            return super().__getattr__(name)
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._own_attributes and not hasattr(type(self), name):
            setattr(self._orig_mod, name, value)
            return
        super().__setattr__(name, value)
        if name == "_orig_mod":
            # Also a plain attribute: a call reads it without Module.__getattr__'s failed lookup.
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name not in self._own_attributes and not hasattr(type(self), name):
            delattr(self._orig_mod, name)
            return
        super().__delattr__(name)
        if name == "_orig_mod":
            self.__dict__.pop(name, None)

    def __dir__(self):
        names = self._orig_mod.__dir__()
        return names + [name for name in super().__dir__() if name not in names]

    def __len__(self) -> int:
        return len(self._orig_mod)

    def __bool__(self) -> bool:
        return bool(self._orig_mod)

    def __iter__(self):
        return iter(self._orig_mod)

    def __getitem__(self, key):
        return self._orig_mod[key]

    def __setitem__(self, key, value) -> None:
        self._orig_mod[key] = value

    def __delitem__(self, key) -> None:
        del self._orig_mod[key]

    def __contains__(self, item) -> bool:
        return item in self._orig_mod


def _module_entry(cls: type, backend: Callable, fullgraph: bool, dynamic: bool | None) -> Callable:
    """The one-line function that calls a compiled module: the frame framegraph compiles.

    Module.__call__ itself lives in torch and is never translated; this frame's single call
    is, so hooks and forward (built-in modules included) are inlined into one graph. Modules
    of one class compiled with the same backend and settings share it, and so its cache
    entries: their guards are on the modules' types, structure and tensors' metadata, and
    their parameters are graph inputs, so identical blocks compiled one by one (as training
    frameworks compile transformer blocks) trace one graph, which every block reuses.
    """
    by_settings = _MODULE_ENTRIES.setdefault(cls, {})
    key = (id(backend), fullgraph, dynamic)  # a backend need not be hashable (a dataclass)
    known = by_settings.get(key)
    if known is not None and known[0] is backend:
        return known[1]
    namespace: dict[str, Any] = {}
    exec(builtins.compile("def module_call(module, *args, **kwargs):\n    return module(*args, **kwargs)\n",
                          "<framegraph module call>", "exec"), namespace)
    by_settings[key] = (backend, namespace["module_call"])  # the backend held: its id stays its own
    return namespace["module_call"]


# module class -> {(id(backend), fullgraph, dynamic): (backend, its entry function)}; a class
# that goes away takes its entries with it.
_MODULE_ENTRIES: "weakref.WeakKeyDictionary[type, dict]" = weakref.WeakKeyDictionary()


def reset() -> None:
    """Drops every compiled entry and forgets compile counts; takes the compiled and resume
    functions framegraph put in user globals out again; counters are kept."""
    convert_frame.reset_state()
