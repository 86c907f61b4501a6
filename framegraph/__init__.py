"""framegraph: capture PyTorch programs as torch.fx graphs at the bytecode level.

    import framegraph
    fn = framegraph.compile(fn, backend="eager")

Importing this package stays cheap and free of torch and of the C extension: the bytecode
toolkit (`framegraph.bytecode`) is used on interpreters that have neither. The public API
below is loaded on first use.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

# Imported eagerly (it is tiny and torch-free) so that `framegraph.counters` is the counters
# dict: a later `import framegraph.counters` finds the module loaded and does not rebind.
from .counters import counters  # noqa: E402

# public name -> (module, attribute); attribute None means the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "compile": ("framegraph.api", "compile"),
    "reset": ("framegraph.api", "reset"),
    "explain": ("framegraph.explain", "explain"),
    "report": ("framegraph.reports", "report"),
    "OptimizedModule": ("framegraph.api", "OptimizedModule"),
    "disable": ("framegraph.eval_frame", "disable"),
    "graph_break": ("framegraph.eval_frame", "graph_break"),
    "allow_in_graph": ("framegraph.trace_rules", "allow_in_graph"),
    "mark_dynamic": ("framegraph.shapes", "mark_dynamic"),
    "mark_static": ("framegraph.shapes", "mark_static"),
    "run": ("framegraph.eval_frame", "run"),
    "list_backends": ("framegraph.backends", "list_backends"),
    "register_backend": ("framegraph.backends", "register_backend"),
    "set_logs": ("framegraph.logs", "set_logs"),
    "config": ("framegraph.config", None),
    "exc": ("framegraph.exc", None),
}

__all__ = sorted([*_LAZY, "counters"])


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'framegraph' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # The import system binds a submodule on its package once imported (`from
        # framegraph.explain import recording`); where the public API has a function of that
        # name, `framegraph.explain` stays the function.
        if isinstance(value, types.ModuleType) and _LAZY.get(name, (None, None))[1] is not None:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
