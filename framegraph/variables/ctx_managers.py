"""torch's global-state context managers inside a graph: grad mode, inference mode, autocast.

Each one does two things when it is entered or left while tracing:
- it records a node that makes the same change when the graph runs (so the ops between see
  the mode, as torch.compile's graphs do with `torch._C._set_grad_enabled` nodes), and
- it makes the real change in the tracing process, so fake-tensor propagation of the ops
  inside sees the mode too (requires_grad of results, autocast dtypes).

The real change is always undone when tracing ends, even when it ends in an error
(`GlobalStateSnapshot` in convert_frame).

They are created by calling the class (`torch.no_grad()`), or, for functions decorated with
`@torch.no_grad()`, from the decorator's context factory (see `wrap_decorated`).
"""

from __future__ import annotations

import contextlib
import types
import warnings
from typing import Any

import torch

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable


class ContextManagerVariable(VariableTracker):
    __slots__ = ("entered",)

    def __init__(self) -> None:
        super().__init__()
        self.entered = False

    def enter(self, tx) -> VariableTracker:
        raise NotImplementedError

    def exit(self, tx) -> None:
        raise NotImplementedError

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("__enter__", "__exit__"):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"{type(self).__name__}.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__enter__":
            self.entered = True
            return self.enter(tx)
        if name == "__exit__":
            self.exit(tx)
            return ConstantVariable(None)  # never swallows the exception
        raise Unsupported("Unsupported method call", f"{type(self).__name__}.{name}")


class GradModeVariable(ContextManagerVariable):
    """no_grad / enable_grad (applied on enter, which records the mode to go back to) and
    set_grad_enabled (applied when made, which records it; entering applies it again)."""

    __slots__ = ("cls", "mode", "previous", "applied")

    def __init__(self, tx, mode: bool, apply_now: bool, cls: type | None = None, source=None) -> None:
        super().__init__()
        self.source = source
        self.cls = cls or (torch.set_grad_enabled if apply_now else torch.enable_grad if mode else torch.no_grad)
        self.mode = mode
        self.previous = torch.is_grad_enabled()
        self.applied = False
        if apply_now:
            self._set(tx, mode)
            self.applied = True

    def python_type(self) -> type:
        return self.cls

    def _set(self, tx, mode: bool) -> None:
        tx.output.call_function(torch._C._set_grad_enabled, [ConstantVariable(mode)], {})
        torch._C._set_grad_enabled(mode)

    def enter(self, tx) -> VariableTracker:
        if self.cls is not torch.set_grad_enabled:
            self.previous = torch.is_grad_enabled()
            if self.source is not None:  # the real object keeps what its __enter__ saw
                tx.output.side_effects.store_attr(self, "prev", ConstantVariable(self.previous))
        elif self.applied and torch.is_grad_enabled() == self.mode:
            # Made just before: its constructor set the mode, so entering sets nothing new
            # (torch.compile's graph has the one node too).
            return ConstantVariable(None)
        self._set(tx, self.mode)
        return ConstantVariable(None)

    def exit(self, tx) -> None:
        self._set(tx, self.previous)
        self.entered = False

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if len(args) == 1 and not kwargs:
            return decorate(tx, self, args[0])
        return super().call_function(tx, args, kwargs)

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            # Entered or not: a real manager in the state its methods read. At a graph break
            # inside the `with`, the graph so far has left grad mode as the block set it; the
            # manager's `__exit__` restores what it saved, and the manager can be entered again.
            codegen.load_callable_const(rebuild_grad_mode)
            for value in (self.cls, self.mode, self.previous):
                codegen.load_const(value)
            codegen.call(3)


def rebuild_grad_mode(cls: type, mode: bool, previous: bool) -> Any:
    """A grad-mode manager the trace made, made again without the effect its constructor has
    (set_grad_enabled changes the mode when made: the graph did that). `prev` is what its
    `__exit__` restores: set when made (set_grad_enabled) or entered (no_grad, enable_grad);
    one that was not entered has not used it yet."""
    manager = cls.__new__(cls)
    manager.prev = previous
    if cls is torch.set_grad_enabled:
        manager.mode = mode
    return manager


def wrap_grad_mode(tx, manager: Any, source) -> GradModeVariable:
    """A real grad-mode manager the frame received (an argument, or held across a break)."""
    from ..guards import GuardKind
    from ..source import AttrSource

    cls = type(manager)
    line = tx.output.user_line
    tx.output.guards.add(GuardKind.TYPE_MATCH, source, cls, line)
    # Leaving restores what it recorded (when made, or when entered: a block a break cut in
    # two is left in the resume function); set_grad_enabled's entry applies its own mode.
    entered = hasattr(manager, "prev")  # no_grad/enable_grad record it when entered
    if entered:
        tx.output.guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "prev"), manager.prev, line)
    else:
        tx.output.guards.add(GuardKind.HASATTR, source, ("prev", False), line, key="prev")
    mode = cls is torch.enable_grad
    if cls is torch.set_grad_enabled:
        tx.output.guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "mode"), manager.mode, line)
        mode = manager.mode
    variable = GradModeVariable(tx, mode, apply_now=False, cls=cls, source=source)
    if entered:
        variable.previous = manager.prev
    return variable


GRAD_MODE_CLASSES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled)


class OpaqueModeVariable(ContextManagerVariable):
    """A mode entered through a function returning a handle that the exit function takes:
    inference_mode (`_enter_inference_mode(mode)`) and autocast (`_enter_autocast(*args)`)."""

    __slots__ = ("enter_fn", "exit_fn", "args", "handle")

    def __init__(self, enter_fn, exit_fn, args: list[Any]) -> None:
        super().__init__()
        self.enter_fn, self.exit_fn, self.args = enter_fn, exit_fn, args
        self.handle: VariableTracker | None = None

    def enter(self, tx) -> VariableTracker:
        # Running the enter function (on fakes, in the tracing process) really enters the mode.
        self.handle = tx.output.call_function(self.enter_fn, [ConstantVariable(a) for a in self.args], {})
        tx.output.open_modes.append((self.exit_fn, self.handle))
        return ConstantVariable(None)

    def exit(self, tx) -> None:
        if self.handle is None:
            raise Unsupported("Unsupported context manager", "__exit__ before __enter__")
        tx.output.open_modes.remove((self.exit_fn, self.handle))
        tx.output.call_function(self.exit_fn, [self.handle], {})


def make_context_manager(tx, cls: type, args: list[VariableTracker],
                         kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """A tracker for `cls(*args, **kwargs)` when cls is a context manager we model, else None."""
    if cls is contextlib.ExitStack:
        from .exit_stack import make_exit_stack

        return make_exit_stack(tx, args, kwargs)
    if cls is warnings.catch_warnings:
        return CatchWarningsVariable.make(tx, args, kwargs)
    if cls is torch.autograd.profiler.record_function and not _profiling(tx):
        return ProfilerRegionVariable()
    if is_getitem_to_index(cls) and not args and not kwargs:
        return IndexingModeVariable()
    if cls not in _MANAGERS:
        return None
    values = [a.as_python_constant() for a in args]
    options = {k: v.as_python_constant() for k, v in kwargs.items()}
    if cls is torch.no_grad and not values and not options:
        return GradModeVariable(tx, False, apply_now=False)
    if cls is torch.enable_grad and not values and not options:
        return GradModeVariable(tx, True, apply_now=False)
    if cls is torch.set_grad_enabled:
        (mode,) = values or [options["mode"]]
        return GradModeVariable(tx, bool(mode), apply_now=True)
    if cls is torch.inference_mode:
        mode = values[0] if values else options.get("mode", True)
        return OpaqueModeVariable(torch.autograd.grad_mode._enter_inference_mode,
                                  torch.autograd.grad_mode._exit_inference_mode, [bool(mode)])
    if cls in (torch.autocast, torch.amp.autocast):
        probe = torch.autocast(*values, **options)  # normalises the arguments as torch does
        return OpaqueModeVariable(torch.amp.autocast_mode._enter_autocast,
                                  torch.amp.autocast_mode._exit_autocast,
                                  [probe.device, probe.fast_dtype, probe._enabled, probe._cache_enabled])
    return None


_MANAGERS = frozenset({torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode,
                       torch.autocast, torch.amp.autocast})


def _profiling(tx) -> bool:
    """Whether a profiler records now (guarded: starting or stopping one recompiles)."""
    from ..guards import GuardKind
    from ..source import AttrSource
    from ..symbolic_convert.handlers.imports import sys_modules_source

    enabled = bool(torch.autograd.profiler._is_profiler_enabled)
    source = AttrSource(sys_modules_source(tx, "torch.autograd.profiler"), "_is_profiler_enabled")
    tx.output.guards.add(GuardKind.EQUALS_MATCH, source, enabled, tx.output.user_line)
    return enabled


class ProfilerRegionVariable(ContextManagerVariable):
    """`torch.autograd.profiler.record_function(name)` (every optimizer step opens one) while
    no profiler records: a region that only labels a profiler's trace, traced as a no-op, as
    torch.compile does. While one records, the region runs eagerly at a break, so that the
    profile names it as eager's does. If it must outlive the graph (open across a break) it is
    handed on as a nullcontext, whose exit matches an entry the graph did not make."""

    __slots__ = ()

    def enter(self, tx) -> VariableTracker:
        return self

    def exit(self, tx) -> None:
        pass

    def python_type(self) -> type:
        return torch.autograd.profiler.record_function

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(contextlib.nullcontext)
        codegen.call(0)


def is_getitem_to_index(cls: type) -> bool:
    # Recognised by name: framegraph never imports torch._dynamo itself.
    return cls.__module__ == "torch._dynamo._trace_wrapped_higher_order_op" and cls.__name__ == "TransformGetItemToIndex"


class IndexingModeVariable(ContextManagerVariable):
    """torch's TransformGetItemToIndex, the torch-function mode under which flex_attention's
    create_block_mask runs the mask_mod: inside it, `table[index]` with tensor (and int) indices
    is `aten.index` (ops/subscript), not a read of the index as a number. Its other functions
    pass through unchanged. A break inside the block runs the frame eagerly."""

    __slots__ = ()

    def enter(self, tx) -> VariableTracker:
        tx.output.getitem_as_index += 1
        return ConstantVariable(None)

    def exit(self, tx) -> None:
        tx.output.getitem_as_index -= 1


class AnnotationVariable(ContextManagerVariable):
    """`torch.fx.traceback.annotate(d)`: the nodes made inside carry `d` (merged into what the
    blocks around it set) in meta["custom"], as torch's tracers record it; inductor reads it
    (flex_attention's `fallback_to_eager`). A break inside runs the frame eagerly."""

    __slots__ = ("annotation",)

    def __init__(self, annotation: dict) -> None:
        super().__init__()
        self.annotation = annotation

    def enter(self, tx) -> VariableTracker:
        outer = tx.output.annotations[-1] if tx.output.annotations else {}
        tx.output.annotations.append({**outer, **self.annotation})
        return ConstantVariable(None)

    def exit(self, tx) -> None:
        tx.output.annotations.pop()


def annotate(tx, args, kwargs) -> VariableTracker:
    """The tracker of `torch.fx.traceback.annotate(...)`."""
    values = [*args, *kwargs.values()]
    if len(values) != 1 or not values[0].is_python_constant() or not isinstance(values[0].as_python_constant(), dict):
        raise Unsupported("Unsupported context manager", "torch.fx.traceback.annotate of anything but a constant dict")
    return AnnotationVariable(dict(values[0].as_python_constant()))


def from_instance(tx, manager: Any) -> VariableTracker:
    """The tracker for an existing context-manager object (a decorator's factory made it)."""
    cls = type(manager)
    if cls in (torch.no_grad, torch.enable_grad):
        return make_context_manager(tx, cls, [], {})
    if cls is torch.set_grad_enabled:
        return GradModeVariable(tx, manager.mode, apply_now=False)
    if cls is torch.inference_mode:
        return make_context_manager(tx, cls, [ConstantVariable(manager.mode)], {})
    raise Unsupported("Unsupported context manager", f"{cls.__qualname__} used as a decorator")


class CatchWarningsVariable(ContextManagerVariable):
    """`warnings.catch_warnings()`: saves the warning filters on entry and puts them back on
    exit, so the filter changes made inside (simplefilter, filterwarnings) have no effect
    after it. Inside a graph no Python code warns (warnings.warn breaks the graph, and a
    break inside this block runs the frame eagerly), so the block and the changes inside it
    are traced as the no-ops they are for the program; `record=True` gives the empty log.
    (Warnings that operators raise while the graph runs are not replayed, in or out of such
    a block, as in torch.compile.)"""

    __slots__ = ("record",)

    def __init__(self, record: bool) -> None:
        super().__init__()
        self.record = record

    @classmethod
    def make(cls, tx, args, kwargs) -> "CatchWarningsVariable":
        options = {k: v.as_python_constant() for k, v in kwargs.items()}
        if args or options.get("module") is not None:
            raise Unsupported("Unsupported context manager", "catch_warnings() of another warnings module")
        if options.get("action") is not None:
            run_filter_change(warnings.simplefilter, [options["action"], options.get("category", Warning),
                                                       options.get("lineno", 0), options.get("append", False)], {})
        return cls(bool(options.get("record", False)))

    def python_type(self) -> type:
        return warnings.catch_warnings

    def enter(self, tx) -> VariableTracker:
        tx.output.warning_blocks += 1
        if self.record:
            from .containers import ListVariable

            return ListVariable([])
        return ConstantVariable(None)

    def exit(self, tx) -> None:
        tx.output.warning_blocks -= 1


def filter_change(fn):
    """warnings.simplefilter / filterwarnings / resetwarnings: inside a catch_warnings block
    they are undone on its exit, so traced they are checked and dropped; elsewhere they
    change the process for good, and run eagerly at a break."""
    def handler(tx, args, kwargs) -> VariableTracker:
        if not tx.output.warning_blocks:
            raise Unsupported("Attempted to call function marked as skipped",
                              f"warnings.{fn.__name__} outside a catch_warnings block changes the process's filters")
        values = [a.as_python_constant() for a in args]
        run_filter_change(fn, values, {k: v.as_python_constant() for k, v in kwargs.items()})
        return ConstantVariable(None)
    return handler


def run_filter_change(fn, args: list, kwargs: dict) -> None:
    """Calls the filter function inside a throwaway catch_warnings, for the errors it raises."""
    try:
        with warnings.catch_warnings():
            fn(*args, **kwargs)
    except Exception as error:
        raise Unsupported("Unsupported context manager",
                          f"warnings.{fn.__name__} raised {type(error).__name__}: {error}") from None


class DecoratedFunctionVariable(VariableTracker):
    """A function decorated with a context manager (`@torch.no_grad()`): each call enters a
    fresh copy of the manager, runs the function inlined, and leaves the manager. The
    manager is a real one (a decorator applied before the frame ran) or, for a decorator
    applied while tracing, the grad mode its calls enter."""

    __slots__ = ("manager", "fn")

    def __init__(self, manager: Any, fn: VariableTracker, source=None) -> None:
        super().__init__(source)
        self.manager, self.fn = manager, fn

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if isinstance(self.manager, bool):
            context = GradModeVariable(tx, self.manager, apply_now=False)
        else:
            context = from_instance(tx, self.manager)
        context.call_method(tx, "__enter__", [], {})
        result = self.fn.call_function(tx, args, kwargs)
        context.call_method(tx, "__exit__", [ConstantVariable(None)] * 3, {})
        return result

    def reconstruct(self, codegen) -> None:
        if self.source is not None or not isinstance(self.manager, bool):
            super().reconstruct(codegen)
            return
        codegen.load_callable_const(grad_mode_decorated)
        codegen.load_const(self.manager)
        codegen.reconstruct(self.fn)
        codegen.call(2)


def grad_mode_decorated(mode: bool, fn: Any) -> Any:
    """What torch's grad-mode decorator returns for `fn`, made by the manager that enters
    `mode` without changing it on construction (set_grad_enabled would, right there)."""
    return (torch.enable_grad() if mode else torch.no_grad())(fn)


def decorate(tx, manager: "GradModeVariable", fn: VariableTracker) -> VariableTracker:
    """`manager(fn)` for a grad-mode manager used as a decorator or function wrapper."""
    from .functions import TorchFunctionVariable
    from .user_functions import BaseUserFunctionVariable

    if manager.entered or not isinstance(fn, (BaseUserFunctionVariable, TorchFunctionVariable)) \
            or (isinstance(fn, BaseUserFunctionVariable) and fn.get_code().co_flags & _CO_GENERATOR_LIKE):
        raise Unsupported("Unsupported context manager", f"{manager.python_type().__name__} applied to {fn}")
    if manager.applied:
        # set_grad_enabled(mode) changed the mode when made; used as a decorator it undoes that.
        manager._set(tx, manager.previous)
        manager.applied = False
    return DecoratedFunctionVariable(manager.mode, fn)


_CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200


def is_context_decorated(fn: Any) -> bool:
    """Whether `fn` is torch's wrapper for a function decorated with a grad-mode manager."""
    from torch.utils import _contextlib

    code = getattr(fn, "__code__", None)
    return (code is not None and code.co_filename == _contextlib.__file__
            and code.co_name == "decorate_context" and hasattr(fn, "__wrapped__"))


def decorated_manager(fn: Any) -> Any:
    """The context-manager object behind a `decorate_context` wrapper."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
    return cells["ctx_factory"].cell_contents.__self__


class GlobalStateSnapshot:
    """Undoes the real mode changes tracing made, however tracing ended: modes still open
    (an error inside a `with`) are exited innermost first, then grad mode is restored."""

    def __init__(self) -> None:
        self.grad = torch.is_grad_enabled()

    def restore(self, open_modes: list) -> None:
        while open_modes:
            exit_fn, handle = open_modes.pop()
            exit_fn(handle.value)
        torch._C._set_grad_enabled(self.grad)
