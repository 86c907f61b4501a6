"""framegraph's settings, and `config.patch` to change them for a block or a function.

    framegraph.config.recompile_limit = 4
    with framegraph.config.patch(strict=True):
        ...

Every setting is declared once in `_DEFAULTS` with its type and, where a bad value could
silently disable a safety net, a check. Assigning an unknown name is an error that lists the
near matches, so a typo never silently does nothing.
"""

from __future__ import annotations

import difflib
import functools
import os
import sys
import types
from typing import Any, Callable


def _at_least_one(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"framegraph.config.{name} must be at least 1, got {value}")


def _force_break_spec(name: str, value: Any) -> None:
    if value is None or callable(value):
        return
    if not isinstance(value, (set, frozenset, list, tuple)) or not all(
            isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], (types.CodeType, str))
            and isinstance(pair[1], int) for pair in value):
        raise TypeError(f"framegraph.config.{name} must be None, a predicate (code, offset) -> bool, or a "
                        f"collection of (code object or qualname, offset) pairs, got {value!r}")


def _directory_or_none(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"framegraph.config.{name} must be None or a directory path, got {value!r}")


# name: (default, type, check or None, what it means)
_DEFAULTS: dict[str, tuple[Any, type, Callable[[str, Any], None] | None, str]] = {
    "strict": (False, bool, None,
               "raise framegraph's own internal errors instead of falling back to eager"),
    "recompile_limit": (8, int, _at_least_one,
                        "compiled entries one code object may hold before it runs eagerly"),
    "accumulated_recompile_limit": (256, int, _at_least_one,
                                    "compiled entries all code objects together may hold"),
    "inline_depth_limit": (32, int, _at_least_one, "how deep calls are inlined"),
    "max_restarts": (100, int, _at_least_one, "translation restarts of one frame before giving up"),
    "automatic_dynamic_shapes": (True, bool, None,
                                 "after a size changes, compile a graph with a symbol for it"),
    "specialize_int": (False, bool, None, "treat every int input as a constant, never a symbol"),
    "specialize_float": (False, bool, None,
                         "treat every float input as a constant, never a symbol (otherwise a float whose "
                         "value changed is passed to the graph as a 0-d float64 tensor and read with .item())"),
    "c_guards": (True, bool, None,
                 "check cache entries with the C guard program; False runs the same guards as a "
                 "generated Python function (slower; for debugging the guard program)"),
    "verify_bytecode": (True, bool, None,
                        "check every replacement code object and resume function framegraph generates "
                        "(framegraph.bytecode.verify) before installing it; refused code is an internal "
                        "error (the frame runs eagerly, or raises under strict/fullgraph) instead of "
                        "crashing the interpreter"),
    "fake_rules": (True, bool, None,
                   "propagate fake tensors through norms, matmuls, elementwise arithmetic and a few "
                   "activations by size-generic rules, each learned from the op's meta kernel on its "
                   "first call for its kind of inputs, make static-size views with their C++ kernels, "
                   "and convolutions and empty tensors by FakeTensorMode's own steps without its cache "
                   "(framegraph.fake_rules); False runs every op through FakeTensorMode as it is"),
    "pause_gc_during_compile": (True, bool, None,
                                "suspend the cyclic GC while a frame compiles (it is re-enabled after; "
                                "a compile makes many short-lived objects and, on a large heap, "
                                "collections otherwise make compile time grow faster than the model)"),
    "capture_scalar_outputs": (False, bool, None,
                               "keep Tensor.item() and integer Tensor.tolist() in the graph as symbols "
                               "(unbacked: no value at trace time); otherwise they are graph breaks"),
    "capture_dynamic_output_shape_ops": (False, bool, None,
                                         "keep ops whose output shape depends on tensor values (nonzero, "
                                         "boolean-mask indexing, unique) in the graph; otherwise they are "
                                         "graph breaks"),
    "optimize_ddp": (True, bool, None,
                     "in a module run by DistributedDataParallel, split each graph at DDP's gradient-bucket "
                     "boundaries and compile the pieces one by one, so each bucket's all-reduce starts "
                     "while backward still runs (as torch.compile's DDP optimizer)"),
    "defer_logging": (True, bool, None,
                      "a logging call with constant arguments (`logger.warning(...)`, transformers' "
                      "`logger.warning_once(...)`, `logging.info(...)`) is made after the graph, in program "
                      "order with the other changes replayed there, instead of breaking the graph; the "
                      "record is the same, only emitted after the tensor work it followed"),
    "cache_dir": (os.environ.get("FRAMEGRAPH_CACHE_DIR") or None, object, _directory_or_none,
                  "a directory where each frame's translation is saved, so that a later process "
                  "installs it without tracing when its guards hold (framegraph/persistent); None: "
                  "off. The default is $FRAMEGRAPH_CACHE_DIR"),
    "debug_force_break": (None, object, _force_break_spec,
                          "testing: graph-break before chosen instructions, as if they were unsupported: "
                          "(code object or qualname, offset) pairs or a predicate (code, offset) -> bool, "
                          "with the offsets of the original function's instructions (a resume function "
                          "made from it breaks at the same ones)"),
}


class _Config(types.ModuleType):
    """The module object itself, so `config.x = v` is checked like `config.patch(x=v)`."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name in ("patch", "describe"):
            return super().__setattr__(name, value)
        super().__setattr__(name, _checked(name, value))

    def patch(self, changes: dict[str, Any] | None = None, **kwargs: Any) -> "_Patch":
        """Changes settings until the block or decorated function ends, even on error."""
        return _Patch({**(changes or {}), **kwargs})

    def describe(self) -> str:
        """One line per setting: name, current value, meaning."""
        return "\n".join(f"{name} = {getattr(self, name)!r}  # {doc}"
                         for name, (_, _, _, doc) in _DEFAULTS.items())


def _checked(name: str, value: Any) -> Any:
    if name not in _DEFAULTS:
        near = difflib.get_close_matches(name, _DEFAULTS, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise AttributeError(f"framegraph.config has no setting {name!r}{hint} "
                             f"(settings: {', '.join(_DEFAULTS)})")
    _, kind, check, _ = _DEFAULTS[name]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"framegraph.config.{name} must be {kind.__name__}, got {value!r}")
    if check is not None:
        check(name, value)
    return value


class _Patch:
    def __init__(self, changes: dict[str, Any]) -> None:
        for name, value in changes.items():
            _checked(name, value)
        self._changes = changes
        self._saved: list[dict[str, Any]] = []

    def __enter__(self) -> None:
        module = sys.modules[__name__]
        self._saved.append({name: getattr(module, name) for name in self._changes})
        for name, value in self._changes.items():
            setattr(module, name, value)

    def __exit__(self, *exc_info: object) -> None:
        module = sys.modules[__name__]
        for name, value in self._saved.pop().items():
            setattr(module, name, value)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def patched(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return patched


for _name, (_default, *_rest) in _DEFAULTS.items():
    globals()[_name] = _default
sys.modules[__name__].__class__ = _Config
