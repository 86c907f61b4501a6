"""Callables whose calls a capability package outside the core translates
(framegraph.higher_order: torch.cond, checkpoint...), and module hooks a package says must
run eagerly (framegraph.distributed: FSDP2's).

The package registers one handler per function; the translator finds it here when it meets
the function, and never imports the package. A handler takes (tx, args, kwargs) and returns
the call's result, or raises Unsupported (the call then runs eagerly at a graph break).
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any, Callable

from ..exc import Unsupported
from .base import KnownValueVariable, MethodVariable, ValueVariable, VariableTracker

Handler = Callable[..., VariableTracker]

# id(function) -> (function, handler); the function is held, so its id stays its own.
_HANDLERS: dict[int, tuple[Any, Handler]] = {}


def register(fn: Any, handler: Handler) -> None:
    _HANDLERS[id(fn)] = (fn, handler)


# code object -> handler taking the function first: for the closures a library makes on every
# call (`torch.vmap(f)` returns a new one), met after being made eagerly.
_CODE_HANDLERS: dict[Any, Callable[..., VariableTracker]] = {}


def register_code(code: Any, handler: Callable[..., VariableTracker]) -> None:
    _CODE_HANDLERS[code] = handler


# Tests, one per package, of whether a module hook must run eagerly, never traced (FSDP2's
# unshard and reshard parameters around a module's forward). A test rather than a table of
# hooks: a library makes such hooks per module (bound methods, closures), and the package
# need not import the library before a program does.
_EAGER_HOOK_TESTS: list[Callable[[Any], bool]] = []


def register_eager_hook_test(test: Callable[[Any], bool]) -> None:
    _EAGER_HOOK_TESTS.append(test)


def runs_eagerly(hook: Any) -> bool:
    """Whether a module hook is one a package says runs eagerly: the module is then called
    outside the graph (nn_module's `_call_impl` model raises at the call)."""
    return any(test(hook) for test in _EAGER_HOOK_TESTS)


_EAGER: dict[int, Any] = {}  # id(function) -> the function wrapped to run with the hook off


def _eager(fn: Any, handler: Handler) -> Any:
    """`fn` run with framegraph's hook off; traced as `fn` itself if met again (a resume
    function gets it from the frame that broke)."""
    from ..eval_frame import disable

    if id(fn) not in _EAGER:
        wrapper = _EAGER[id(fn)] = disable(fn)
        _EAGER[id(wrapper)] = wrapper
        register(wrapper, handler)
    return _EAGER[id(fn)]


# Types whose objects a package's handlers take as arguments and use while tracing only (a
# process group for a collective): such an object is wrapped as itself, guarded by identity.
_OPAQUE_TYPES: tuple[type, ...] = ()  # a tuple: isinstance takes it as it is, for every value wrapped


def register_opaque_type(kind: type) -> None:
    global _OPAQUE_TYPES
    if kind not in _OPAQUE_TYPES:
        _OPAQUE_TYPES += (kind,)


def opaque(value: Any, source) -> VariableTracker | None:
    """The tracker for an object of a registered opaque type; the caller guards its identity."""
    return OpaqueObjectVariable(value, source) if isinstance(value, _OPAQUE_TYPES) else None


class OpaqueObjectVariable(KnownValueVariable):
    """An object the handlers read; calling one of its methods is a graph break at the call
    (`work.wait()`), the method running eagerly."""

    __slots__ = ()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(type(self.value), name, None)):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]):
        raise Unsupported("Unsupported method call", f"{type(self.value).__qualname__}.{name}(): a method of an "
                          "object framegraph passes along but does not model")

    def __repr__(self) -> str:
        return f"OpaqueObjectVariable({type(self.value).__qualname__})"


_C_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType)
_C_FIELDS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def unmodelled(value: Any, source) -> VariableTracker | None:
    """The tracker for an object of a class of the standard library written in C, outside the
    builtins, that nothing models (an io.StringIO, a file, a lock), or None; the caller guards
    its type. A third-party C type (numpy's Generator) is left to its own model, and the
    builtins' types (dict views, iterators) to the translator, which models them where it can
    and refuses them where it cannot."""
    kind = type(value)
    if source is None or isinstance(value, type) or kind.__module__ == "builtins" \
            or kind.__module__.partition(".")[0] not in sys.stdlib_module_names or not _written_in_c(kind):
        return None
    return UnmodelledObjectVariable(value, source)


@functools.lru_cache(maxsize=256)
def _written_in_c(kind: type) -> bool:
    """Whether every class of `kind`'s MRO comes from a module with no Python source (built in,
    or an extension): 3.12 makes some of the standard library's C types heap types, so the flag
    does not tell."""
    for cls in kind.__mro__[:-1]:
        module = sys.modules.get(cls.__module__)
        if module is None:
            return False
        filename = getattr(module, "__file__", None)
        if filename is not None and not filename.endswith((".so", ".pyd")):
            return False
    return True


class UnmodelledObjectVariable(ValueVariable):
    """An object of a C type of the standard library framegraph has no model for. It is passed along, and a call of one
    of its C methods (`stream.write(text)`) is a graph break at the call, where the method runs
    eagerly, looked up then; anything else done with it breaks where it is done. Its type is
    guarded, not its identity: a new object on each call is no recompile. Without it, a value
    of such a type broke the graph where it was loaded, and a resume function that starts with
    one on its stack ran eagerly as a whole."""

    __slots__ = ()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ..source import AttrSource
        from .builder import wrap
        from .constant import is_constant_type

        for cls in type(self.value).__mro__:
            if name in vars(cls):
                attr = vars(cls)[name]
                if isinstance(attr, _C_METHODS):
                    return MethodVariable(self, name)
                if isinstance(attr, _C_FIELDS):
                    # A field of the C struct (`stream.closed`): read now, a constant, guarded.
                    value = attr.__get__(self.value, type(self.value))
                    if is_constant_type(value):
                        return wrap(tx, value, AttrSource(self.source, name))
                break
        raise Unsupported("Unsupported value type",
                          f"{type(self.value).__qualname__}.{name} of an object framegraph does not model")

    def call_method(self, tx, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]):
        raise Unsupported("Unsupported method call", f"{type(self.value).__qualname__}.{name}(): a method of an "
                          "object framegraph passes along but does not model")

    def __repr__(self) -> str:
        return f"UnmodelledObjectVariable({type(self.value).__qualname__})"


def handled(value: Any, source=None) -> VariableTracker | None:
    """The tracker for `value` if a package handles its calls."""
    found = _HANDLERS.get(id(value))
    if found is not None and found[0] is value:
        return HandledCallableVariable(value, source, found[1])
    by_code = _CODE_HANDLERS.get(value.__code__) if isinstance(value, types.FunctionType) else None
    if by_code is not None:
        return HandledCallableVariable(value, source, functools.partial(by_code, value, source))
    return None


class HandledCallableVariable(KnownValueVariable):
    __slots__ = ("handler",)

    def __init__(self, value: Any, source, handler: Handler) -> None:
        super().__init__(value, source)
        self.handler = handler

    def call_function(self, tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.handler(tx, list(args), dict(kwargs))

    def reconstruct(self, codegen) -> None:
        # Rebuilt for a graph break, the operator runs eagerly with framegraph's hook off:
        # torch.cond and while_loop then compile their functions with torch.compile, whose
        # frame hook must not run under ours.
        codegen.load_const(_eager(self.value, self.handler))

    def __repr__(self) -> str:
        return f"HandledCallableVariable({getattr(self.value, '__qualname__', self.value)})"
