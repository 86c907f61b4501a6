"""torch.compile routed to framegraph, for programs written for torch.compile (`python -m
framegraph run`).

`routed()` replaces, until it is undone:
- `torch.compile` (and so `torch.compiler.compile` and `nn.Module.compile()`, which call it)
  with a function that takes torch.compile's arguments and calls `framegraph.compile`: the
  backend, `fullgraph` and `dynamic` as they are; inductor's `mode` and `options` as
  torch.compile gives them to inductor (config patches); a custom backend gets them as
  keyword arguments, as torch.compile passes them;
- `torch.compiler.allow_in_graph` with framegraph's;
- once the program imports `torch._dynamo` (framegraph never imports it), `optimize`,
  `reset`, `allow_in_graph`, `mark_dynamic` and `mark_static` there.

`torch._dynamo.config` stays the program's to set, as it would be under torch.compile: before
each frame is compiled, its settings that framegraph has (`MAPPED`) are copied into
`framegraph.config` (a `config.patch` around a call counts while it is active), and one it has
no equivalent for, set away from its default, is named once in a warning.
`torch._dynamo.graph_break()`, `torch.compiler.disable` and `is_compiling()` need no routing:
framegraph understands them in every mode.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any, Callable

import torch

from .. import config as fg_config
from ..api import compile as fg_compile
from ..api import reset as fg_reset
from ..backends import builtin, list_backends
from ..convert_frame import before_compile
from ..shapes import mark_dynamic as fg_mark_dynamic
from ..shapes import mark_static as fg_mark_static
from ..trace_rules import allow_in_graph as fg_allow_in_graph

# torch._dynamo.config name -> framegraph.config name (`cache_size_limit` is torch's alias of
# recompile_limit). `optimize_ddp` may be a string naming DDP's optimizer: any true value is on.
MAPPED = {
    "recompile_limit": "recompile_limit",
    "accumulated_recompile_limit": "accumulated_recompile_limit",
    "capture_scalar_outputs": "capture_scalar_outputs",
    "capture_dynamic_output_shape_ops": "capture_dynamic_output_shape_ops",
    "automatic_dynamic_shapes": "automatic_dynamic_shapes",
    "specialize_int": "specialize_int",
    "specialize_float": "specialize_float",
    "optimize_ddp": "optimize_ddp",
}
# Settings whose value is what framegraph always does: honoured without a mapping.
ALREADY = {"inline_inbuilt_nn_modules": True}  # framegraph inlines every module
# Never warned about: the limits' old names (aliases of the mapped ones); assume_static_by_default,
# read at the torch.compile call (dynamic=True where it is False); suppress_errors, as
# framegraph's own failures always fall back to eager with a warning, never raise.
_QUIET = {"cache_size_limit", "accumulated_cache_size_limit", "assume_static_by_default", "suppress_errors"}


def torch_compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
                  backend: str | Callable | None = None, mode: str | None = None,
                  options: dict[str, Any] | None = None, disable: bool = False, **ignored: Any) -> Any:
    """torch.compile's signature, compiling with framegraph."""
    if model is None:
        return functools.partial(torch_compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable, **ignored)
    for name, value in ignored.items():
        if value not in (None, False):
            _warn_once(f"torch.compile({name}=...) has no framegraph equivalent and is ignored")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if disable:
        return model
    dynamic_config = sys.modules.get("torch._dynamo.config")
    if dynamic is None and dynamic_config is not None and not dynamic_config.assume_static_by_default:
        dynamic = True  # every size symbolic from the first compile, as torch.compile makes them
    return fg_compile(model, backend=_backend(backend, mode, options, dynamic), fullgraph=fullgraph, dynamic=dynamic)


def _backend(backend: str | Callable | None, mode: str | None, options: dict | None,
             dynamic: bool | None) -> str | Callable:
    backend = "inductor" if backend is None else backend
    if backend == "inductor":
        return _inductor(mode, options, dynamic) if (mode not in (None, "default") or options) else backend
    if isinstance(backend, str) and backend not in list_backends():
        raise RuntimeError(f"torch.compile routed to framegraph: framegraph has no backend {backend!r} "
                           f"(it has {', '.join(list_backends())}, and those registered with "
                           "framegraph.register_backend)")
    if (mode not in (None, "default") or options) and callable(backend):
        # torch.compile hands a custom backend its mode and options as keyword arguments.
        keywords = {**({"mode": mode} if mode not in (None, "default") else {}), **({"options": options} if options else {})}
        return functools.wraps(backend)(functools.partial(backend, **keywords))
    if mode not in (None, "default") or options:
        _warn_once(f"torch.compile(backend={backend!r}) takes no mode or options; they are ignored")
    return backend


def _inductor(mode: str | None, options: dict | None, dynamic: bool | None) -> Callable:
    """inductor with the configuration torch.compile gives it for `mode` and `options`."""
    from torch._inductor import config as inductor_config
    from torch._inductor import list_mode_options

    patches: dict[str, Any] = {}
    if mode not in (None, "default"):
        try:
            patches.update(list_mode_options(mode, dynamic))
        except KeyError:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, reduce-overhead, "
                               "max-autotune, max-autotune-no-cudagraphs") from None
    known = inductor_config.get_config_copy()
    for key, value in (options or {}).items():
        name = key.replace("-", "_")
        if name not in known:
            raise RuntimeError(f"Unexpected optimization option {key}, known options are {list(known)}")
        patches[name] = value

    def inductor(gm, example_inputs):
        return builtin.inductor(gm, example_inputs, config_patches=patches)
    inductor.copies_graph_attributes = True  # as framegraph's own inductor backend
    return inductor


def optimize(backend: str | Callable = "inductor", *, nopython: bool = False, disable: bool = False,
             dynamic: bool | None = None, **ignored: Any) -> Callable[[Callable], Any]:
    """torch._dynamo.optimize: a decorator compiling with framegraph (`nopython` is fullgraph)."""
    for name, value in ignored.items():
        if value is not None:
            _warn_once(f"torch._dynamo.optimize({name}=...) has no framegraph equivalent and is ignored")
    return lambda fn: fn if disable else torch_compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic)


def _mark_dynamic(torch_fn: Callable) -> Callable:
    """torch._dynamo.mark_dynamic, marking the tensor for framegraph too (a size range has no
    framegraph equivalent: named in a warning)."""
    @functools.wraps(torch_fn)
    def call(t: Any, index: Any, **kwargs: Any) -> None:
        if isinstance(t, torch.Tensor):
            fg_mark_dynamic(t, index)
        if any(value is not None for value in kwargs.values()):
            _warn_once(f"torch._dynamo.mark_dynamic({', '.join(kwargs)}=...) has no framegraph equivalent; "
                       "the dimension is dynamic without them")
        return torch_fn(t, index, **kwargs)
    return call


def _mark_static(torch_fn: Callable) -> Callable:
    @functools.wraps(torch_fn)
    def call(t: Any, index: Any = None) -> None:
        if isinstance(t, torch.Tensor):
            fg_mark_static(t, list(range(t.dim())) if index is None else index)
        return torch_fn(t, index)
    return call


def _allow_in_graph(torch_fn: Callable) -> Callable:
    @functools.wraps(torch_fn)
    def call(fn):
        fg_allow_in_graph(fn)
        return torch_fn(fn)
    return call


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=3)


def sync_dynamo_config(baseline: dict[str, Any]) -> None:
    """torch._dynamo.config's settings framegraph has, copied into framegraph.config; those set
    back to their defaults restore framegraph's own (`baseline`)."""
    torch_config = sys.modules.get("torch._dynamo.config")
    if torch_config is None:
        return
    for torch_name, ours in MAPPED.items():
        if torch_config._is_default(torch_name):
            value = baseline[ours]
        else:
            value = getattr(torch_config, torch_name)
            value = bool(value) if ours == "optimize_ddp" else value
        if getattr(fg_config, ours) != value:
            setattr(fg_config, ours, value)
    for name in torch_config._config:
        if name in MAPPED or name in _QUIET or name.startswith("_") or torch_config._is_default(name):
            continue
        if name in ALREADY and getattr(torch_config, name) == ALREADY[name]:
            continue
        _warn_once(f"torch._dynamo.config.{name} = {getattr(torch_config, name)!r} has no framegraph "
                   "equivalent and is ignored")


def _patch_dynamo(dynamo: Any, undo: list) -> None:
    """Routes what torch._dynamo offers (once the program has imported it)."""
    def reset() -> None:
        fg_reset()
        original_reset()

    original_reset = dynamo.reset
    for name, value in (("optimize", optimize), ("reset", reset),
                        ("allow_in_graph", _allow_in_graph(dynamo.allow_in_graph)),
                        ("mark_dynamic", _mark_dynamic(dynamo.mark_dynamic)),
                        ("mark_static", _mark_static(dynamo.mark_static))):
        undo.append((dynamo, name, getattr(dynamo, name)))
        setattr(dynamo, name, value)


class _DynamoImportHook(importlib.abc.MetaPathFinder):
    """Routes torch._dynamo's functions when the program imports it (framegraph does not)."""

    def __init__(self, undo: list) -> None:
        self.undo = undo

    def find_spec(self, fullname: str, path: Any, target: Any = None):
        if fullname != "torch._dynamo":
            return None
        sys.meta_path.remove(self)  # find the real module, once
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader, undo = spec.loader, self.undo

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                _patch_dynamo(module, undo)
        spec.loader = Loader()
        return spec


@contextlib.contextmanager
def routed():
    """torch.compile and its relatives call framegraph inside the block (see the module doc)."""
    undo: list[tuple[Any, str, Any]] = []
    baseline = {ours: getattr(fg_config, ours) for ours in MAPPED.values()}
    sync = functools.partial(sync_dynamo_config, baseline)
    hook = _DynamoImportHook(undo)
    for owner, name, value in ((torch, "compile", torch_compile),
                               (torch.compiler, "allow_in_graph", _allow_in_graph(torch.compiler.allow_in_graph))):
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        _patch_dynamo(dynamo, undo)
    else:
        sys.meta_path.insert(0, hook)
    before_compile.append(sync)
    try:
        yield
    finally:
        before_compile.remove(sync)
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
        for owner, name, value in reversed(undo):
            setattr(owner, name, value)
        for ours, value in baseline.items():
            setattr(fg_config, ours, value)
