"""Lowering guard records into the C guard program (`framegraph._C.GuardProgram`).

The program is the cache-hit check: a flat list of `(op, dst, src, arg)` over numbered
registers. A read op puts a value in a register the first time a guard needs its source
(`L['model']`, then `._modules`, then `['blocks']` ...), so each source is read once; a check
op tests a register and the program stops at the first that fails. The ops are laid out as a
tree of sources (`lower`): each source's checks come after its read and before its children's
reads, so a read never runs before the type check of the object it reads from, as in the
Python check function (`guards.compile_guards`, recorded order), which is what runs when
`config.c_guards` is False and what explains a failure either way. A SKIP op heads each big
enough subtree: once every op in it has passed and is covered by a memo, a hit whose memos
still hold jumps over it (framegraph/_C/guard_memo.c).

Guards the C side has no op for (symbolic-shape relations, global state under autocast,
sources read by calling a method) become `PY`/`CALL` ops: small Python functions the program
calls, so every guard set lowers.
"""

from __future__ import annotations

import collections
import types
from typing import Any, Callable

from . import _C
from .guards import Guard, GuardKind, TensorSpec, _Strong, global_state, global_state_switches
from .source import AttrSource, GlobalSource, ItemSource, LocalSource, Source, TypeSource

OP = {name: code for code, name in enumerate(_C.GUARD_OPS)}
_tensor_api_ready = False
_shim_ready = False
_shim_numbers_seen: dict[tuple, tuple | None] = {}


def _install_tensor_api() -> None:
    """Hands the C side torch's own tensor getters, once per process."""
    global _tensor_api_ready, _shim_ready
    if not _tensor_api_ready:
        import torch

        base = torch._C.TensorBase.__dict__
        _C.set_tensor_api(base["dtype"], base["requires_grad"], base["shape"], base["device"],
                          torch._C._dispatch_keys, base["stride"], base["data_ptr"], base["is_contiguous"])
        _tensor_api_ready = True
        addresses = _shim_addresses(torch)
        if addresses is not None:
            _C.set_tensor_shim(base["_cdata"], *addresses)
            _shim_ready = True


def _shim_addresses(torch: Any) -> list[int] | None:
    """The addresses of torch's C shim getters the tensor check reads through, or None.

    Only from torch 2.13 on: older shims log every failure (a sparse tensor's strides) to
    stderr, where the check would print on each call."""
    import ctypes
    import os

    version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2] if part.isdigit())
    if version < (2, 13):
        return None
    directory = os.path.join(os.path.dirname(torch.__file__), "lib")
    # (named, not globbed: glob's first use costs half a millisecond of a warm start)
    paths = [path for path in (os.path.join(directory, name) for name in
                               ("libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.dll")) if os.path.exists(path)]
    try:
        library = ctypes.CDLL(paths[0])
        return [ctypes.cast(getattr(library, f"aoti_torch_get_{name}"), ctypes.c_void_p).value
                for name in ("dtype", "dim", "sizes", "strides", "data_ptr", "device_type", "device_index")]
    except (IndexError, OSError, AttributeError):
        return None


# A SKIP op heads every subtree of at least this many ops after its root's read: below that,
# checking the witnesses costs about what running the ops does.
MIN_SKIP = 4


class _Node:
    """A source and what the program does with it: its checks, then its children's."""

    __slots__ = ("source", "parent", "checks", "children", "index", "size", "register")

    def __init__(self, source: Source) -> None:
        self.source = source
        self.parent: _Node | None = None
        self.checks: list[Guard] = []
        self.children: list[_Node] = []
        self.index: dict[Any, _Node] = {}  # children by their last step
        self.size = 0  # ops of the subtree after its root's read
        self.register = -1


def lower(guards: list[Guard], f_globals: dict, scope: dict,
          make: Callable[[str, dict], Callable]) -> tuple[_C.GuardProgram, tuple]:
    """The program checking `guards`, and its plan (see `from_plan`); `scope` and `make`
    build the Python pieces (the same names the Python check function sees).

    Layout: global state first; then the tree of sources depth first (a source's read, its
    checks in recorded order, its children in first-met order), with a SKIP op after the read
    of every source whose subtree is big enough; then the subtrees no memo covers that were met
    inside a SKIP range (`_volatile`: tensors, lists), which must run at every call, so they
    stay out of what a SKIP jumps over; then the guards over several sources (aliasing,
    distinctness, shape relations)."""
    ops: list[Any] = []
    # op index -> how from_plan makes that op again: ("G", guard index, the registers its
    # check read, in order) for a check, ("C", register, base register, expression) for a
    # read through Python; every other op is plain data.
    plan: dict[int, tuple] = {}
    index_of = {id(guard): i for i, guard in enumerate(guards)}
    # Sources are frozen dataclasses whose hash walks their whole chain: each source object
    # is looked up once (guards share them; they all live while this runs), and a node is
    # found under its parent by its last step alone.
    by_id: dict[int, _Node] = {}
    top: dict[Any, _Node] = {}
    roots: list[_Node] = []
    made: list[_Node] = []  # parents before children
    n_regs = 0

    def node(source: Source) -> _Node:
        found = by_id.get(id(source))
        if found is not None:
            return found
        if isinstance(source, (LocalSource, GlobalSource)):
            parent, index = None, top
            key: Any = (type(source), source.local_name if isinstance(source, LocalSource) else source.global_name)
        else:
            parent = node(source.base)
            index = parent.index
            key = ((AttrSource, source.member) if isinstance(source, AttrSource)
                   else (ItemSource, type(source.index), source.index) if isinstance(source, ItemSource)
                   else TypeSource if isinstance(source, TypeSource) else source)
        found = index.get(key)
        if found is None:
            found = index[key] = _Node(source)
            found.parent = parent
            (roots if parent is None else parent.children).append(found)
            made.append(found)
        by_id[id(source)] = found
        return found

    def reg(source: Source) -> int:
        return read(node(source))

    def read(current: _Node) -> int:
        nonlocal n_regs
        if current.register >= 0:
            return current.register
        source = current.source
        if isinstance(source, LocalSource):
            op, src, arg = OP["LOCAL"], -1, source.local_name
        elif isinstance(source, GlobalSource):
            op, src, arg = OP["GLOBAL"], -1, source.global_name
        else:
            src = read(current.parent)
            if isinstance(source, AttrSource):
                op, arg = OP["ATTR"], source.member
            elif isinstance(source, ItemSource):
                op, arg = OP["ITEM"], source.index
            elif isinstance(source, TypeSource):
                op, arg = OP["TYPE"], None
            else:  # iterator state, method calls: a one-line Python reader
                expression = source.expression("b")
                op, arg = OP["CALL"], make(f"lambda b: {expression}", scope)
                plan[len(ops)] = ("C", n_regs, src, expression)
        current.register, n_regs = n_regs, n_regs + 1
        ops.append((op, current.register, src, arg))
        return current.register

    registers: list[int] = []  # what each check read, in order

    def recording(source: Source) -> int:
        registers.append(reg(source))  # (which may add the source's read first)
        return registers[-1]

    def add_check(guard: Guard) -> None:
        start = len(registers)
        op = _check(guard, recording, scope, make)
        plan[len(ops)] = ("G", index_of[id(guard)], tuple(registers[start:]))
        ops.append(op)

    tail: list[Guard] = []
    for guard in guards:
        if guard.kind is GuardKind.GLOBAL_STATE:
            add_check(guard)
        elif guard.source is None or guard.kind in (GuardKind.ALIAS, GuardKind.DISTINCT):
            tail.append(guard)
        else:
            node(guard.source).checks.append(guard)
    for found in reversed(made):
        found.size = len(found.checks) + sum(1 + child.size for child in found.children)

    skips: list[tuple[int, int, int]] = []  # (SKIP op index, end of its range, root register)
    later: list[_Node] = []  # subtrees taken out of SKIP ranges, run after them

    def walk(tops: list[_Node]) -> None:
        # Depth first, without recursion (source chains can be long); an int pair on the
        # stack marks the end of a SKIP's range: (its index, its root register).
        stack: list[Any] = [(top, False) for top in reversed(tops)]
        while stack:
            current, in_range = stack.pop()
            if isinstance(current, int):
                skips.append((current, len(ops), in_range))
                continue
            kinds = _known_types(current)
            if in_range and _volatile(current, kinds):
                if _plain(current.source):
                    read(current)  # the read is covered by its parent's witness
                later.append(current)
                continue
            register = read(current)
            if current.size >= MIN_SKIP and _may_skip(current, kinds):
                stack.append((len(ops), register))
                ops.append(None)
                in_range = True
            for guard in current.checks:
                add_check(guard)
            stack.extend((child, in_range) for child in reversed(current.children))

    walk(roots)
    while later:
        batch, later[:] = list(later), []
        walk(batch)
    for guard in tail:
        add_check(guard)
    _hand_over(ops, skips)
    template = tuple(plan.get(i, op) for i, op in enumerate(ops))
    return _C.GuardProgram(tuple(ops), n_regs, f_globals), (template, n_regs)


def from_plan(plan: tuple, guards: list[Guard], f_globals: dict, scope: dict,
              make: Callable[[str, dict], Callable]) -> _C.GuardProgram:
    """The program `lower` made for guards laid out as these are (the same kinds on the same
    sources in the same order: a warm start's, saved with their plan), without laying it out
    again. Only the checks and Python reads are made anew, from these guards' values."""
    template, n_regs = plan
    ops: list[Any] = []
    for item in template:
        if item[0] == "G":
            registers = iter(item[2])
            ops.append(_check(guards[item[1]], lambda source: next(registers), scope, make))
        elif item[0] == "C":
            _, dst, src, expression = item
            ops.append((OP["CALL"], dst, src, make(f"lambda b: {expression}", scope)))
        else:
            ops.append(item)
    return _C.GuardProgram(tuple(ops), n_regs, f_globals)


# Containers that change in place with no version to tell (a dict has one, a tuple cannot change).
_UNVERSIONED = (list, set, collections.deque, bytearray)


def _known_types(node: _Node) -> list[type]:
    kinds = []
    for guard in node.checks:
        kind = guard.kind
        if kind is GuardKind.TYPE_MATCH:
            kind_of = guard.expected
        elif kind is GuardKind.LENGTH or kind is GuardKind.DICT_KEYS:
            kind_of = guard.expected[0]
        elif kind is GuardKind.ID_MATCH:
            kind_of = type(guard.expected())
        else:
            continue
        if isinstance(kind_of, type):
            kinds.append(kind_of)
    return kinds


def _volatile(node: _Node, kinds: list[type]) -> bool:
    """Whether the checks of this subtree must run at every call, whatever the memos say: a
    tensor's facts (its metadata changes in place), a container with no version, or a value
    read by calling Python. `kinds`: the node's _known_types."""
    return (not _plain(node.source) or any(guard.kind is GuardKind.TENSOR_MATCH for guard in node.checks)
            or any(issubclass(t, _UNVERSIONED) for t in kinds))


def _may_skip(node: _Node, kinds: list[type]) -> bool:
    """A SKIP can arm only on a root with a version of its own: an object with a __dict__, a
    dict or a class, not a tuple or a function (what is read from them is covered by their
    parent's SKIP)."""
    return not _volatile(node, kinds) and not any(issubclass(t, _NO_VERSION) for t in kinds)


_NO_VERSION = (tuple, str, bytes, types.FunctionType, types.CodeType, types.MethodType, type(None))


def _plain(source: Source) -> bool:
    """Read by an op the memos know (an attribute, an item, a type, a local or a global)."""
    return isinstance(source, (LocalSource, GlobalSource, AttrSource, ItemSource, TypeSource))


def _hand_over(ops: list[Any], skips: list[tuple[int, int, int]]) -> None:
    """Fills in each SKIP op: the registers read into in its range that ops after it read."""
    alias, distinct, last_read = OP["ALIAS"], OP["DISTINCT"], OP["CALL"]
    last_use: dict[int, int] = {}
    for index, op in enumerate(ops):
        if op is not None:
            code, dst, src, arg = op
            last_use[src] = index
            if code == alias:
                last_use[dst] = index
            elif code == distinct:
                for r in arg:
                    last_use[r] = index
    starts = {start: (end, root, []) for start, end, root in skips}
    open_ranges: list[tuple[int, list]] = []  # (end, exports), innermost last: ranges nest
    for index, op in enumerate(ops):
        while open_ranges and open_ranges[-1][0] <= index:
            open_ranges.pop()
        if op is None:
            end, _, exports = starts[index]
            open_ranges.append((end, exports))
        elif op[0] <= last_read and open_ranges:
            used = last_use.get(op[1], -1)
            for end, exports in reversed(open_ranges):  # each range it outlives hands it over
                if end > used:
                    break
                exports.append(op[1])
    for start, (end, root, exports) in starts.items():
        ops[start] = (OP["SKIP"], -1, root, (end, tuple(exports)))


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
    if kind is GuardKind.STATE_READ:
        return OP["CALLS_ARE"], -1, -1, (tuple(expected),)
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
            tuple(spec.strides), spec.dispatch_keys, fast, remember, fast and _contiguous(spec),
            _shim_facts(spec) if fast and _shim_ready else None)


def _shim_facts(spec: TensorSpec) -> tuple[int, bytes, bytes, int | None, int | None] | None:
    """What the C shim compares: the dtype as torch's scalar type number, the sizes and strides
    as native int64 with -1 where a dimension is dynamic, and the device as the shim's type
    number and index (None, None where they are not known: the device is then read as a
    torch.device)."""
    import array

    pack = lambda values: array.array("q", [-1 if v is None else v for v in values]).tobytes()
    numbers = _shim_numbers(spec.dtype, spec.device)
    return None if numbers is None else (numbers[0], pack(spec.sizes), pack(spec.strides), *numbers[1:])


def _shim_numbers(dtype: Any, device: Any) -> tuple[int, int | None, int | None] | None:
    """The shim's numbers for a tensor of this dtype and device, read from an empty one. A
    device no tensor can be made on here keeps only the dtype's number (from a CPU tensor)."""
    import torch

    key = (dtype, device)
    if key not in _shim_numbers_seen:
        numbers = None
        for where in (device, "cpu"):
            try:
                numbers = _C.tensor_shim_numbers(torch.empty(0, dtype=dtype, device=where))
            except (RuntimeError, TypeError):
                continue
            if numbers is not None and where != device:
                numbers = (numbers[0], None, None)
            break
        _shim_numbers_seen[key] = numbers
    return _shim_numbers_seen[key]


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
