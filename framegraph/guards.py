"""Guards: the assumptions a compiled entry relies on, as data first and one function last.

The translator records a `Guard` for every fact it used: a type it dispatched on, a constant it
folded, the dtype and shape it propagated. `GuardSet` keeps them in the order they were met
(so a type check precedes the attribute reads that depend on it) without duplicates, and
`compile_guards` turns them into a single `check_fn(L) -> bool` that the C hook calls before
every reuse. The rendered text of each guard, with the user line that caused it, is what
`FRAMEGRAPH_LOGS=guards` prints and what the recompile log quotes when a guard fails.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import weakref
from typing import Any, Callable, Iterable

from .shapes import SHAPE_GUARD_SCOPE
from .source import Source


class GuardKind(enum.Enum):
    TYPE_MATCH = "type"        # type(x) is T
    ID_MATCH = "id"            # x is the very object seen while tracing (a weakref to it)
    EQUALS_MATCH = "equals"    # type(x) is type(v) and x == v, for constants
    LENGTH = "length"          # type(x) is T and len(x) == n
    DICT_KEYS = "dict_keys"    # type(x) is T and its keys, in order, are the ones traced (expected: (T, keys))
    NOT_IN_DICT = "not_in_dict"  # none of these names is in x.__dict__ (class attributes not shadowed)
    HASATTR = "hasattr"        # hasattr(x, name) is the answer traced (expected: (name, bool))
    ALIAS = "alias"            # x is the same object as another source (expected: that source)
    DISTINCT = "distinct"      # no two of these sources (expected: a tuple) are one object
    TENSOR_MATCH = "tensor"    # everything that makes two tensors interchangeable for a graph
    GLOBAL_STATE = "global"    # grad mode, autocast, default dtype, deterministic algorithms
    STATE_READ = "state_read"  # reader() is the value the trace folded (expected: (reader, value))
    SHAPE_ENV = "shape_env"    # relations between symbolic sizes, from the ShapeEnv


@dataclasses.dataclass(frozen=True)
class Guard:
    kind: GuardKind
    source: Source | None
    expected: Any
    user_line: str = ""  # "file:line in fn" of the user code that needed the guard


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """The facts of a tensor a graph was specialised on; None in sizes/strides means dynamic."""

    type: type
    dtype: Any
    device: Any
    requires_grad: bool
    sizes: tuple[int | None, ...]
    strides: tuple[int | None, ...]
    dispatch_keys: Any

    @classmethod
    def of(cls, tensor: Any, dynamic_dims: Iterable[int] = ()) -> "TensorSpec":
        import torch

        dynamic = set(dynamic_dims)
        sizes = tuple(None if i in dynamic else int(s) for i, s in enumerate(tensor.shape))
        # A stride that depends on a dynamic size cannot be checked as a constant; the
        # ShapeEnv's guards cover it.
        strides = tuple(s if isinstance(s, int) and not dynamic else None for s in tensor.stride())
        return cls(type(tensor), tensor.dtype, tensor.device, tensor.requires_grad, sizes,
                   strides, torch._C._dispatch_keys(tensor))


def global_state() -> tuple:
    """The process-wide switches that change what a graph computes, or that the trace may
    have read (variables/functions.py folds their readers; every other reader is a break).
    Frames are never compiled under a dispatch mode or jit tracing (convert_frame), so those
    two read as 0 and False in every entry."""
    import torch

    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            torch._C._is_any_autocast_enabled() and (torch.is_autocast_enabled("cpu"),
                                                     torch.get_autocast_dtype("cpu")),
            torch.get_default_dtype(), torch._C._get_deterministic_algorithms(),
            torch._C._get_deterministic_algorithms_warn_only(),
            torch._C._is_torch_function_enabled(), torch._C._len_torch_dispatch_stack(),
            torch._C._is_tracing())


GLOBAL_STATE_NAMES = ("grad_mode", "inference_mode", "autocast", "default_dtype",
                      "deterministic_algorithms", "deterministic_warn_only", "torch_function",
                      "dispatch_modes", "jit_tracing")


def global_state_switches(expected: tuple) -> tuple[list[tuple[Callable[[], Any], Any]], bool]:
    """`global_state() == expected` as (reader, the singleton it must return) pairs, each read
    by its own torch call, so a hit outside autocast builds no tuple; and whether the whole
    state must still be compared (under autocast, whose settings are not singletons)."""
    import torch

    (grad, inference, autocast, default_dtype, deterministic, warn_only, torch_function,
     dispatch_modes, tracing) = expected
    switches = [(torch.is_grad_enabled, grad), (torch.is_inference_mode_enabled, inference),
                (torch.get_default_dtype, default_dtype),
                (torch._C._get_deterministic_algorithms, deterministic),
                (torch._C._get_deterministic_algorithms_warn_only, warn_only),
                (torch._C._is_torch_function_enabled, torch_function),
                (torch._C._len_torch_dispatch_stack, dispatch_modes),  # 0: a cached small int
                (torch._C._is_tracing, tracing)]
    if autocast is False:
        return switches + [(torch._C._is_any_autocast_enabled, False)], False
    return switches, True


class _Strong:
    """Stands in for a weak reference to an object that cannot have one."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


class GuardSet:
    """Guards in first-met order, each fact once."""

    def __init__(self) -> None:
        self._guards: dict[tuple, Guard] = {}

    def add(self, kind: GuardKind, source: Source | None, expected: Any = None,
            user_line: str = "", key: Any = None) -> None:
        """Records a guard; `key` tells apart guards of one kind on one source (HASATTR names)."""
        key = (kind, source, key)
        if key in self._guards:
            return
        if kind is GuardKind.ID_MATCH and not isinstance(expected, weakref.ref):
            # The object must not be kept alive by the cache entry that checks for it. The
            # few that cannot be weakly referenced (builtin method descriptors) live forever.
            try:
                expected = weakref.ref(expected)
            except TypeError:
                expected = _Strong(expected)
        self._guards[key] = Guard(kind, source, expected, user_line)

    def __iter__(self):
        return iter(self._guards.values())

    def __len__(self) -> int:
        return len(self._guards)


class _Emitter:
    """Builds the text of the check function and the constants it closes over."""

    def __init__(self) -> None:
        self.constants: dict[str, Any] = {}

    def const(self, value: Any) -> str:
        name = f"___c{len(self.constants)}"
        self.constants[name] = value
        return name

    def render(self, guard: Guard, ref: Callable[[Source], str] = lambda source: source.name) -> tuple[str, str]:
        """The guard as (code to evaluate, text a person reads in logs). `ref` gives the
        expression that reads a source (its name, or a variable holding it)."""
        kind, expected = guard.kind, guard.expected
        x = ref(guard.source) if guard.source is not None else ""
        if kind is GuardKind.TYPE_MATCH:
            return f"type({x}) is {self.const(expected)}", f"type({x}) is {_type_name(expected)}"
        if kind is GuardKind.ID_MATCH:
            text = f"{x} is {_short_repr(expected())}"
            if isinstance(expected, _Strong):
                if expected.value is None:
                    text = f"{x} is None"
                return f"{x} is {self.const(expected.value)}", text
            # a dead weak reference reads as None, which must not match a None
            return f"{x} is {self.const(expected)}() is not None", text
        if kind is GuardKind.EQUALS_MATCH:
            if expected is None or isinstance(expected, bool):
                return f"{x} is {expected!r}", f"{x} is {expected!r}"
            if isinstance(expected, float):
                # == cannot tell -0.0 from 0.0 (1/x can) and is never true for NaN.
                if math.isnan(expected):
                    return f"type({x}) is float and {x} != {x}", f"{x} is nan"
                code = f"type({x}) is float and {x} == {self.const(expected)}"
                if expected == 0.0:  # equal non-zero floats have the same sign
                    code += f" and {self.const(math.copysign)}(1.0, {x}) == {math.copysign(1.0, expected)}"
                return code, f"{x} == {expected!r}"
            return (f"type({x}) is {self.const(type(expected))} and {x} == {self.const(expected)}",
                    f"{x} == {expected!r}")
        if kind is GuardKind.LENGTH:
            kind_of, length = expected
            return (f"type({x}) is {self.const(kind_of)} and len({x}) == {length}",
                    f"len({x}) == {length}")
        if kind is GuardKind.DICT_KEYS:
            kind_of, keys = expected
            if not keys:  # hook tables: the common case, and five times cheaper than list()
                return f"type({x}) is {self.const(kind_of)} and not {x}", f"list({x}.keys()) == []"
            code = f"type({x}) is {self.const(kind_of)} and list({x}) == {self.const(list(keys))}"
            if not all(type(k) is str for k in keys):
                # 1, 1.0 and True are equal keys but not the same program input.
                code += f" and [type(k) for k in {x}] == {self.const([type(k) for k in keys])}"
            return code, f"list({x}.keys()) == {list(keys)!r}"
        if kind is GuardKind.NOT_IN_DICT:
            text = f"{x}.__dict__ has none of {sorted(expected)}"
            if len(expected) <= 2:
                return " and ".join(f"{name!r} not in {x}.__dict__" for name in sorted(expected)), text
            return f"not ({self.const(frozenset(expected))} & {x}.__dict__.keys())", text
        if kind is GuardKind.HASATTR:
            name, present = expected
            return f"hasattr({x}, {name!r}) is {present}", f"hasattr({x}, {name!r}) is {present}"
        if kind is GuardKind.ALIAS:
            return f"{x} is {ref(expected)}", f"{x} is {ref(expected)}"
        if kind is GuardKind.DISTINCT:
            ids = ", ".join(f"id({ref(s)})" for s in expected)
            return f"len({{{ids}}}) == {len(expected)}", f"no two of {', '.join(ref(s) for s in expected)} are the same object"
        if kind is GuardKind.TENSOR_MATCH:
            return self._tensor(x, expected)
        if kind is GuardKind.GLOBAL_STATE:
            return self._global_state(expected), "___check_global_state()"
        if kind is GuardKind.STATE_READ:
            read, value = expected
            return f"{self.const(read)}() is {value!r}", f"{_qualified(read)}() is {value!r}"
        if kind is GuardKind.SHAPE_ENV:
            return expected, expected
        raise ValueError(f"unknown guard kind {kind!r}")

    def _global_state(self, expected: tuple) -> str:
        """`global_state() == expected` spelled out (`global_state_switches`)."""
        switches, whole = global_state_switches(expected)
        parts = [f"{self.const(read)}() is {repr(value) if isinstance(value, bool) else self.const(value)}"
                 for read, value in switches]
        if whole:
            parts.append(f"{self.const(global_state)}() == {self.const(expected)}")
        return " and ".join(parts)

    def _tensor(self, x: str, spec: TensorSpec) -> tuple[str, str]:
        import torch

        parts = [f"type({x}) is {self.const(spec.type)}", f"{x}.dtype is {self.const(spec.dtype)}",
                 f"{x}.device == {self.const(spec.device)}",
                 f"{x}.requires_grad is {spec.requires_grad}"]
        if None not in spec.sizes:
            parts.append(f"{x}.shape == {spec.sizes!r}")
        else:
            parts.append(f"{x}.dim() == {len(spec.sizes)}")
            parts += [f"{x}.size({i}) == {s}" for i, s in enumerate(spec.sizes) if s is not None]
        if None not in spec.strides:
            parts.append(f"{x}.stride() == {spec.strides!r}")
        else:
            parts += [f"{x}.stride({i}) == {s}" for i, s in enumerate(spec.strides) if s is not None]
        keys = self.const(torch._C._dispatch_keys)
        parts.append(f"{keys}({x}) == {self.const(spec.dispatch_keys)}")
        dims = lambda values: "[" + ", ".join("?" if v is None else str(v) for v in values) + "]"
        text = (f"check_tensor({x}, {_type_name(spec.type)}, {spec.dtype}, device={spec.device}, "
                f"requires_grad={spec.requires_grad}, size={dims(spec.sizes)}, "
                f"stride={dims(spec.strides)})")
        return " and ".join(parts), text


def _type_name(kind: type) -> str:
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _qualified(fn: Callable) -> str:
    module = getattr(fn, "__module__", None) or "torch._C"
    return f"{module}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _short_repr(value: Any) -> str:
    if value is None:
        return "<dead object>"
    if isinstance(value, types.ModuleType):
        return f"<module {value.__name__!r}>"
    if isinstance(value, types.CodeType):
        return f"<code {value.co_qualname} at {value.co_filename}:{value.co_firstlineno}>"
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"<{type(value).__name__} {name} at {id(value):#x}>"


class CheckFn:
    """The compiled guard of one cache entry; calling it is the whole cost of a cache hit.

    Each guard's text (for logs and explain) and its code on its own (compiled only to
    explain a miss) are rendered when first asked for: a C guard program needs neither, and
    most entries are never explained."""

    def __init__(self, fn: Callable[[dict], bool], guards: list[Guard], f_globals: dict,
                 rendered: tuple[list[str], list[str], dict] | None = None) -> None:
        self.fn, self.guards, self._f_globals = fn, guards, f_globals
        if rendered is not None:
            self.texts, self.codes, self.scope = rendered

    def _render(self) -> None:
        emitter = _Emitter()
        self.texts, self.codes = _render_each(emitter, self.guards)
        self.scope = dict(SHAPE_GUARD_SCOPE, **emitter.constants, G=self._f_globals)

    def __getattr__(self, name: str) -> Any:
        if name in ("texts", "codes", "scope"):
            self._render()
            return self.__dict__[name]
        raise AttributeError(name)

    @functools.cached_property
    def parts(self) -> list[Callable[[dict], bool]]:
        return [_make(f"lambda L: {code}", self.scope) for code in self.codes]

    def __call__(self, f_locals: dict) -> bool:
        return self.fn(f_locals)

    def failures(self, f_locals: dict) -> list[str]:
        """The text of each guard that fails on these locals, for the recompile log."""
        failed = []
        for guard, text, part in zip(self.guards, self.texts, self.parts):
            try:
                ok = part(f_locals)
            except Exception as error:  # a changed type can make a later read raise
                ok, text = False, f"{text}  ({type(error).__name__}: {error})"
            if not ok:
                failed.append(self.describe_failure(guard, text))
        return failed

    def first_failure(self, f_locals: dict) -> str | None:
        """The first failing guard as `text (now: value)  # user line`, or None when all pass."""
        for guard, text, code in zip(self.guards, self.texts, self.codes):
            part = _make(f"lambda L: {code}", self.scope)  # compiled as reached: the first usually fails early
            try:
                ok = part(f_locals)
            except Exception:
                ok = False
            if not ok:
                text = self.describe_failure(guard, text, f_locals)
                return f"{text}  # {guard.user_line}" if guard.user_line else text
        return None

    def describe_failure(self, guard: Guard, text: str, f_locals: dict | None = None) -> str:
        """The failed guard's text, with what it reads now where that can be said (the new
        value of a constant, a tensor's new facts): a recompile's reason names old and new."""
        if guard.kind is GuardKind.GLOBAL_STATE:
            changed = [f"{name} {old!r} -> {new!r}" for name, old, new
                       in zip(GLOBAL_STATE_NAMES, guard.expected, global_state()) if old != new]
            return f"{text} ({', '.join(changed)})"
        if f_locals is None or guard.source is None or guard.kind not in _SHOWS_NEW_VALUE:
            return text
        try:
            value = read_source(guard.source, f_locals, self.scope)
        except Exception:  # the read itself failed (a missing key): the text says enough
            return text
        return f"{text} (now: {_summary(value)})"

    def describe(self) -> str:
        """One guard per line with the user line that caused it, for FRAMEGRAPH_LOGS=guards."""
        width = min(max((len(t) for t in self.texts), default=0), 72)
        return "\n".join(f"- {text:<{width}}  # {g.user_line}" if g.user_line else f"- {text}"
                         for text, g in zip(self.texts, self.guards))


_SHOWS_NEW_VALUE = (GuardKind.EQUALS_MATCH, GuardKind.TENSOR_MATCH, GuardKind.TYPE_MATCH, GuardKind.LENGTH)


def _summary(value: Any) -> str:
    """A short description of a value a guard read: a tensor's facts, else a clipped repr."""
    import torch

    if isinstance(value, torch.Tensor):
        return (f"{type(value).__name__} {str(value.dtype).replace('torch.', '')} {value.device} "
                f"size={list(value.shape)} stride={list(value.stride())} requires_grad={value.requires_grad}")
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def compile_guards(guards: Iterable[Guard], f_globals: dict, plan: tuple | None = None) -> CheckFn:
    """The check over the frame's locals `L`, with the frame's globals bound as `G`: the C guard
    program (`guard_program.py`), or with `config.c_guards` off, a generated Python function.

    Either way each source is read once, the first time a guard needs it (a module's
    `L['model'].layers[3].attn` is one attribute walk, not one per guard on it); guards run
    in recorded order and the first that fails returns False, so a read never runs before
    the type check that makes it safe. A read or check that raises an Exception (a global
    deleted since, `self.downsample` now None instead of a submodule) fails the check too:
    the frame is not the one compiled for, so the next entry is tried or the frame
    recompiles, and the translation meets the same state eager code does.

    The C program's layout is kept as `plan` on the result; given back with guards laid out
    the same way (a warm start's), it spares laying them out again.
    """
    from . import config

    guards = list(guards)
    if config.c_guards:
        scope = dict(SHAPE_GUARD_SCOPE, G=f_globals)
        if plan is not None:
            check = CheckFn(guard_program.from_plan(plan, guards, f_globals, scope, _make), guards, f_globals)
        else:
            program, plan = guard_program.lower(guards, f_globals, scope, _make)
            check = CheckFn(program, guards, f_globals)
        check.plan = plan
        return check
    emitter = _Emitter()
    texts, codes = _render_each(emitter, guards)
    lines = ["def ___check(L):", "  try:"]
    variables: dict[Source, str] = {}

    def ref(source: Source) -> str:
        variable = variables.get(source)
        if variable is None:
            base = getattr(source, "base", None)
            expression = source.name if base is None else source.expression(ref(base))
            variable = variables[source] = f"___v{len(variables)}"
            lines.append(f"    {variable} = {expression}")
        return variable

    for guard in guards:
        fast, _ = emitter.render(guard, ref)
        lines.append(f"    if not ({fast}):\n        return False")
    lines += ["  except Exception:", "    return False", "  return True"]
    scope = dict(SHAPE_GUARD_SCOPE, **emitter.constants, G=f_globals)
    exec(compile("\n".join(lines), "<framegraph guards>", "exec"), scope)
    return CheckFn(scope.pop("___check"), guards, f_globals, (texts, codes, scope))


def _render_each(emitter: _Emitter, guards: list[Guard]) -> tuple[list[str], list[str]]:
    """Each guard's text and its code on its own, over L and G (constants go to `emitter`)."""
    texts, codes = [], []
    for guard in guards:
        code, text = emitter.render(guard)
        texts.append(text)
        codes.append(code)
    return texts, codes


def read_source(source: Source | str, f_locals: dict, scope: dict) -> Any:
    """What `source` (or an expression over sources' names) reads in a frame with these
    locals (`scope` binds its globals as `G`)."""
    return _make(f"lambda L: {source if isinstance(source, str) else source.name}", scope)(f_locals)


def _make(source: str, scope: dict) -> Callable[[dict], bool]:
    return eval(compile(source, "<framegraph guards>", "eval"), scope)


# The C guard program is what compile_guards builds on every compile and every warm start: it
# is imported with this module, not on the first compile (it imports this module, so it comes
# last, as a module).
from . import guard_program  # noqa: E402
