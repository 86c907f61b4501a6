"""Lowering guard records into the C guard program (`framegraph._C.GuardProgram`).

The program is the cache-hit check: a flat list of `(op, dst, src, arg)` over numbered
registers. A read op puts a value in a register the first time a guard needs its source
(`L['model']`, then `._modules`, then `['blocks']` ...), so each source is read once; a check
op tests a register and the program stops at the first that fails. Guards keep their recorded
order, as in the Python check function (`guards.compile_guards`), which is what runs when
`config.c_guards` is False and what explains a failure either way.

Guards the C side has no op for (symbolic-shape relations, global state under autocast,
sources read by calling a method) become `PY`/`CALL` ops: small Python functions the program
calls, so every guard set lowers.
"""

from __future__ import annotations

from typing import Any, Callable

from . import _C
from .guards import Guard, GuardKind, TensorSpec, _Strong, global_state, global_state_switches
from .source import AttrSource, GlobalSource, ItemSource, LocalSource, Source, TypeSource

OP = {name: code for code, name in enumerate(_C.GUARD_OPS)}
_tensor_api_ready = False


def _install_tensor_api() -> None:
    """Hands the C side torch's own tensor getters, once per process."""
    global _tensor_api_ready
    if not _tensor_api_ready:
        import torch

        base = torch._C.TensorBase.__dict__
        _C.set_tensor_api(base["dtype"], base["requires_grad"], base["shape"], base["device"],
                          torch._C._dispatch_keys, base["stride"], base["data_ptr"], base["is_contiguous"])
        _tensor_api_ready = True


def lower(guards: list[Guard], f_globals: dict, scope: dict,
          make: Callable[[str, dict], Callable]) -> _C.GuardProgram:
    """The program checking `guards`; `scope` and `make` build the Python pieces (the same
    names the Python check function sees)."""
    ops: list[tuple[int, int, int, Any]] = []
    registers: dict[Source, int] = {}

    def reg(source: Source) -> int:
        found = registers.get(source)
        if found is not None:
            return found
        if isinstance(source, LocalSource):
            op, src, arg = OP["LOCAL"], -1, source.local_name
        elif isinstance(source, GlobalSource):
            op, src, arg = OP["GLOBAL"], -1, source.global_name
        else:
            src = reg(source.base)
            if isinstance(source, AttrSource):
                op, arg = OP["ATTR"], source.member
            elif isinstance(source, ItemSource):
                op, arg = OP["ITEM"], source.index
            elif isinstance(source, TypeSource):
                op, arg = OP["TYPE"], None
            else:  # iterator state, method calls: a one-line Python reader
                op, arg = OP["CALL"], make(f"lambda b: {source.expression('b')}", scope)
        registers[source] = len(registers)
        ops.append((op, registers[source], src, arg))
        return registers[source]

    for guard in guards:
        ops.append(_check(guard, reg, scope, make))
    return _C.GuardProgram(tuple(ops), len(registers), f_globals)


def _check(guard: Guard, reg: Callable[[Source], int], scope: dict,
           make: Callable[[str, dict], Callable]) -> tuple[int, int, int, Any]:
    kind, expected = guard.kind, guard.expected
    x = reg(guard.source) if guard.source is not None else -1
    if kind is GuardKind.TYPE_MATCH:
        return OP["TYPE_IS"], -1, x, expected
    if kind is GuardKind.ID_MATCH:
        if isinstance(expected, _Strong):
            return OP["IS"], -1, x, expected.value
        return OP["ID"], -1, x, expected
    if kind is GuardKind.EQUALS_MATCH:
        if expected is None or isinstance(expected, bool):
            return OP["IS"], -1, x, expected
        if type(expected) is float:
            return OP["FLOAT"], -1, x, expected
        return OP["EQUALS"], -1, x, (type(expected), expected)
    if kind is GuardKind.LENGTH:
        return OP["LEN"], -1, x, tuple(expected)
    if kind is GuardKind.DICT_KEYS:
        kind_of, keys = expected
        if not keys:
            return OP["FALSY"], -1, x, kind_of
        types = None if all(type(k) is str for k in keys) else [type(k) for k in keys]
        return OP["DICT_KEYS"], -1, x, (kind_of, list(keys), types)
    if kind is GuardKind.NOT_IN_DICT:
        return OP["NOT_IN_DICT"], -1, x, tuple(sorted(expected))
    if kind is GuardKind.HASATTR:
        return OP["HASATTR"], -1, x, tuple(expected)
    if kind is GuardKind.ALIAS:
        return OP["ALIAS"], reg(expected), x, None
    if kind is GuardKind.DISTINCT:
        return OP["DISTINCT"], -1, -1, tuple(reg(s) for s in expected)
    if kind is GuardKind.TENSOR_MATCH:
        return OP["TENSOR"], -1, x, _tensor_spec(expected, _is_module_tensor(guard.source))
    if kind is GuardKind.GLOBAL_STATE:
        return _global_state(expected)
    if kind is GuardKind.SHAPE_ENV:
        return OP["PY"], -1, -1, make(f"lambda L: {expected}", scope)
    raise ValueError(f"no guard program op for {kind!r}")


def _is_module_tensor(source: Source) -> bool:
    """A module's parameter or buffer: the same tensor every call, and worth remembering
    (arguments are new tensors on most calls)."""
    base = getattr(source, "base", None)
    return (isinstance(source, ItemSource) and isinstance(base, AttrSource)
            and base.member in ("_parameters", "_buffers"))


def _tensor_spec(spec: TensorSpec, remember: bool) -> tuple:
    import torch

    _install_tensor_api()
    # The getters are read straight from TensorBase only where no subclass can override them.
    fast = spec.type is torch.Tensor or spec.type is torch.nn.Parameter
    # A complex tensor's conjugate view shares its data pointer and differs only in its
    # dispatch keys, so a complex tensor's keys are read on every check.
    remember = remember and not spec.dtype.is_complex
    return (spec.type, spec.dtype, spec.device, spec.requires_grad, tuple(spec.sizes),
            tuple(spec.strides), spec.dispatch_keys, fast, remember, fast and _contiguous(spec))


def _contiguous(spec: TensorSpec) -> bool:
    """The strides are the contiguous ones, and `is_contiguous()` on a tensor of these sizes is
    true exactly for them: torch ignores the stride of a dimension of size 1 (and every stride
    of an empty tensor), so no size may be below 2."""
    if None in spec.sizes or None in spec.strides or any(s < 2 for s in spec.sizes):
        return False
    expected, step = [], 1
    for size in reversed(spec.sizes):
        expected.append(step)
        step *= size
    return tuple(reversed(expected)) == tuple(spec.strides)


def _global_state(expected: tuple) -> tuple[int, int, int, Any]:
    """Each switch compared by identity; under autocast the whole state is compared, as the
    Python check does."""
    switches, whole = global_state_switches(expected)
    if whole:
        return OP["PY"], -1, -1, lambda L: global_state() == expected
    return OP["CALLS_ARE"], -1, -1, tuple(switches)
