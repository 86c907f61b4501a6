"""What a translation depends on, written so that another process can check it.

A translation saved by one process is only as good as the objects its guards name. Inside one
process a guard says `x is <that function>`; across processes the function is a new object, so
it is named instead: by module and qualified name, with a digest of its code, its defaults and
no closure. Loading finds the live object under that name and accepts it only if it is the same
by those measures (`Stale` otherwise: the frame is traced as if nothing were saved). Modules go
by name, classes and builtins by where pickle finds them (the round trip is checked while
saving). Everything else a guard could hold (an instance met in the program, a closure, a
tensor) is `NotPortable`: such a translation is not saved at all. Nothing is copied by value
but constants, so a loaded guard never compares against a stand-in for a live object.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib
import io
import marshal
import pickle
import sys
import types
import weakref
from typing import Any, Callable

import torch

from ..guards import _Strong


class NotPortable(Exception):
    """The translation holds something no other process could find again: it is not saved."""


class Stale(Exception):
    """A saved translation names something the live process no longer has as it was."""


def code_digest(code: types.CodeType) -> str:
    """A digest of everything in a code object that its translation depends on, stable across
    processes (no ids, no hash-randomised orders).

    marshal's format 2 writes a code object whole and has no back-references (whose use
    follows reference counts), so its bytes depend on the code alone, except for a set
    constant (`x in {"a", "b"}`), written in an order string hashing randomises: such code is
    walked instead. A warm start digests every method of every class its guards name, so the
    fast form is on its path."""
    data = _code_bytes(code)
    if data is not None:
        return "m" + hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    _feed_code(h, code)
    return "w" + h.hexdigest()


def _code_bytes(code: types.CodeType) -> bytes | None:
    """marshal's bytes for the code, if they depend on the code alone; None: walk it."""
    data = marshal.dumps(code, 2)
    # format 2 writes a frozenset as the byte ">" (no reference flag): without one, no walk
    return data if b">" not in data or not _has_set_constant(code) else None


def _feed_code_of(h, code: types.CodeType) -> None:
    """What code_digest digests, written into `h` (a digest of a digest costs as much)."""
    data = _code_bytes(code)
    if data is not None:
        h.update(b"m")
        h.update(data)
    else:
        h.update(b"w")
        _feed_code(h, code)
    h.update(b"\0")


def _has_set_constant(code: types.CodeType) -> bool:
    pending = list(code.co_consts)  # (constants are exact tuples, frozensets and codes)
    while pending:
        const = pending.pop()
        kind = type(const)
        if kind is frozenset:
            return True
        if kind is tuple:
            pending.extend(const)
        elif kind is types.CodeType:
            pending.extend(const.co_consts)
    return False


def _feed_code(h, code: types.CodeType) -> None:
    for part in (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
                 code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_filename,
                 code.co_name, code.co_qualname, code.co_firstlineno):
        h.update(repr(part).encode())
        h.update(b"\0")
    for raw in (code.co_code, code.co_linetable, code.co_exceptiontable):
        h.update(raw)
        h.update(b"\0")
    for const in code.co_consts:
        _feed_constant(h, const)


def _feed_constant(h, const: Any) -> None:
    if isinstance(const, types.CodeType):
        h.update(b"code(")
        _feed_code(h, const)
        h.update(b")")
    elif isinstance(const, (tuple, frozenset)):
        items = list(const) if isinstance(const, tuple) else sorted(const, key=repr)
        h.update(f"{type(const).__name__}({len(items)}:".encode())
        for item in items:
            _feed_constant(h, item)
        h.update(b")")
    else:
        h.update(f"{type(const).__name__}:{const!r}\0".encode())


# --- saving -----------------------------------------------------------------------------------

_BY_VALUE = (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format, slice, complex,
             range, _Strong)


def dumps(value: Any) -> bytes:
    """`value` pickled with every object outside plain constants named, never copied."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except NotPortable:
        raise
    except Exception as error:  # pickle's own refusal (a class that does not round-trip)
        raise NotPortable(f"{type(error).__name__}: {error}") from None
    return buffer.getvalue()


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.CodeType):
            return _code_reduce(obj)
        for singleton, (module, name) in _singletons():
            if obj is singleton:
                return _attribute, (module, name)
        if isinstance(obj, types.FunctionType):
            return NotImplemented if obj in _LOADERS else _function_reduce(obj)
        if isinstance(obj, types.ModuleType):
            if sys.modules.get(obj.__name__) is not obj:
                raise NotPortable(f"module {obj.__name__} is not the one sys.modules has under its name")
            return _module, (obj.__name__,)
        if isinstance(obj, (weakref.ref, _Strong)):
            referent = obj() if isinstance(obj, weakref.ref) else obj.value
            if referent is None and isinstance(obj, weakref.ref):
                raise NotPortable("a guard's object died before it was saved")
            if type(referent) in _EQUAL_VALUES:  # `int | None`: the live one, if equal, is what it meant
                return Relocated, ("equal", referent)
            if isinstance(obj, _Strong):
                return NotImplemented
            if isinstance(referent, types.CodeType):
                return Relocated, ("code", code_digest(referent))
            if isinstance(referent, types.FunctionType) and _lookup(referent.__module__, referent.__qualname__) is not referent:
                return Relocated, ("function", function_structure(referent))
            return reference, (referent,)
        if isinstance(obj, torch._C.DispatchKeySet):
            return _keyset_reduce(obj)
        if isinstance(obj, type) and obj in _UNNAMED_TYPES:
            return _unnamed_type, (_UNNAMED_TYPES[obj],)
        if isinstance(obj, type) and _lookup(obj.__module__, obj.__qualname__) is not obj and obj.__bases__:
            # A class made at run time (FSDP2's `FSDPBlock`, one per class it shards): found by
            # its bases, its name and its structure
            return _made_class, (obj.__module__, obj.__qualname__, obj.__bases__, class_structure(obj))
        if isinstance(obj, type) and _has_structure(obj):
            return _class, (obj.__module__, obj.__qualname__, class_structure(obj))
        if isinstance(obj, (type, types.BuiltinFunctionType, types.MethodDescriptorType,
                            types.WrapperDescriptorType, types.GetSetDescriptorType,
                            types.MemberDescriptorType, types.ClassMethodDescriptorType, enum.Enum)):
            return NotImplemented  # by name; pickle checks that the name finds the same object
        if type(obj) in _EQUAL_VALUES:
            return NotImplemented  # rebuilt from its arguments, named by these rules
        if isinstance(obj, _BY_VALUE) or _is_framegraph_record(obj) or getattr(type(obj), "__framegraph_portable__", False):
            return NotImplemented
        raise NotPortable(f"a {type(obj).__module__}.{type(obj).__qualname__} object cannot be named "
                          "in another process")


# Annotations made at run time (`int | None`, `list[int]`): a new object each time, equal by
# what it is made of. An identity guard on one (a dataclass validator's closure holds one)
# holds for an equal one in another process.
_EQUAL_VALUES = (types.UnionType, types.GenericAlias)

# Builtin types that pickle cannot find by their name (`builtins.function`), by how they are made.
_UNNAMED_TYPES = {value: name for name, value in vars(types).items() if isinstance(value, type)}
_UNNAMED_TYPES.update({type(None): "NoneType", type(...): "EllipsisType", type(NotImplemented): "NotImplementedType",
                       type({}.keys()): "dict_keys", type({}.values()): "dict_values", type({}.items()): "dict_items"})
_BY_NAME = {name: value for value, name in _UNNAMED_TYPES.items()}


def _unnamed_type(name: str) -> type:
    return _BY_NAME[name]


def _code_reduce(code: types.CodeType) -> tuple:
    """Marshal writes constants of the literal types only; generated code holds objects too
    (a function it calls, a type it checks): those are saved beside it, by the same rules."""
    held = {}
    for index, const in enumerate(code.co_consts):
        try:
            marshal.dumps(const)
        except ValueError:
            held[index] = const
    if held:
        code = code.replace(co_consts=tuple(None if i in held else c for i, c in enumerate(code.co_consts)))
    return _code, (marshal.dumps(code), held)


def _singletons() -> tuple:
    """Objects a guard may name that have no name of their own but one place everybody
    reaches them from, the same in every process."""
    import os

    return ((os.environ, ("os", "environ")), (sys.modules, ("sys", "modules")))


def _is_framegraph_record(obj: Any) -> bool:
    """framegraph's own data (sources, guards, tensor specs): pickled by value."""
    module = type(obj).__module__ or ""
    return module.startswith("framegraph.") and hasattr(type(obj), "__dataclass_fields__")


def _function_reduce(fn: types.FunctionType) -> tuple:
    if "<locals>" in fn.__qualname__ or _lookup(fn.__module__, fn.__qualname__) is not fn:
        raise NotPortable(f"function {fn.__qualname__} is not found under its module and name")
    return _function, (fn.__module__, fn.__qualname__, function_structure(fn))


def function_structure(fn: types.FunctionType, _open: tuple = ()) -> str:
    """A digest of what a function does: its code, defaults and what its closure holds (a
    decorator's wrapper holds the function it wraps). Two processes whose functions under one
    name have the same structure run the same code with the same constants."""
    if fn in _open:  # a closure that reaches itself: named by how far up the cycle goes
        return f"cycle:{len(_open) - _open.index(fn)}"
    extras = _extras(fn, _open)
    h = hashlib.sha256()
    _feed_code_of(h, fn.__code__)
    h.update(extras)
    return h.hexdigest()


def _extras(fn: types.FunctionType, _open: tuple) -> bytes:
    """A function's defaults and what its closure holds, described (raises NotPortable)."""
    if fn.__defaults__ is None and fn.__kwdefaults__ is None and fn.__closure__ is None:
        return _NOTHING_MORE  # most methods
    return "".join(_describe(value, fn, (*_open, fn)) for value in (
        fn.__defaults__, fn.__kwdefaults__,
        *(cell.cell_contents if _filled(cell) else _EMPTY for cell in fn.__closure__ or ()))).encode()


_EMPTY = object()
_NOTHING_MORE = b"NoneType:None" * 2  # no defaults, no keyword defaults, no closure


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _describe(value: Any, owner: types.FunctionType, _open: tuple) -> str:
    if value is _EMPTY:
        return "<empty cell>"
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, enum.Enum, torch.dtype)):
        return f"{type(value).__qualname__}:{value!r}"
    if type(value) in (tuple, list, frozenset):
        items = sorted(value, key=repr) if type(value) is frozenset else value
        return f"{type(value).__name__}(" + ",".join(_describe(item, owner, _open) for item in items) + ")"
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return "dict(" + ",".join(f"{k}={_describe(v, owner, _open)}" for k, v in sorted(value.items())) + ")"
    if isinstance(value, types.FunctionType):
        return "function:" + function_structure(value, _open)
    if isinstance(value, (type, types.BuiltinFunctionType, types.ModuleType)):
        name = getattr(value, "__qualname__", value.__name__)
        module = value.__name__ if isinstance(value, types.ModuleType) else value.__module__
        if (sys.modules.get(module) if isinstance(value, types.ModuleType) else _lookup(module, name)) is not value:
            raise NotPortable(f"{owner.__qualname__} closes over {name}, which is not found by its name")
        return f"ref:{module}.{name}"
    named = _global_name(value, owner)
    if named is not None:
        # An object a module holds (a library's registry): which object it is is all the
        # function's structure needs; what the trace read of it, its guards check.
        return f"global:{named}:{type(value).__module__}.{type(value).__qualname__}"
    raise NotPortable(f"{owner.__qualname__} closes over or defaults to a {type(value).__qualname__}")


def _global_name(value: Any, owner: types.FunctionType) -> str | None:
    """`module.name` of a global holding `value`, in the function's module or its class's."""
    for module in (owner.__module__, type(value).__module__):
        namespace = getattr(sys.modules.get(module or ""), "__dict__", {})
        for name, held in namespace.items():
            if held is value:
                return f"{module}.{name}"
    return None


def _has_structure(cls: type) -> bool:
    """A class whose definition may differ between two processes that find it by one name:
    the program's and its libraries' (torch's are fixed by the version in the key, builtins
    and the standard library by Python's)."""
    module = cls.__module__ or ""
    root = module.split(".")[0]
    return not (root in ("torch", "framegraph", "builtins") or root in sys.stdlib_module_names)


def class_structure(cls: type) -> str:
    """A digest of a class's definition: its bases by name, and each attribute of its own
    (functions by structure, constants by value, anything else by its type). Two processes
    whose classes under one name have the same structure made them from the same source."""
    h = hashlib.sha256(repr([f"{base.__module__}.{base.__qualname__}" for base in cls.__mro__]).encode())
    for name, value in sorted(vars(cls).items()):
        if name in ("__dict__", "__weakref__", "__doc__"):
            continue
        for part in (value.__func__,) if isinstance(value, (staticmethod, classmethod)) else \
                (value.fget, value.fset, value.fdel) if isinstance(value, property) else (value,):
            if isinstance(part, types.FunctionType):
                # written into the class's digest, not digested on their own first
                try:
                    extras = _extras(part, ())
                except NotPortable:
                    extras = b"(not portable)"
                h.update(f"{name}=function:".encode())
                _feed_code_of(h, part.__code__)
                h.update(extras + b"\0")
                continue
            if part is None or isinstance(part, (bool, int, float, str, bytes, tuple, frozenset)):
                described = f"{type(part).__name__}:{part!r}" if not isinstance(part, (tuple, frozenset)) \
                    else f"{type(part).__name__}:{len(part)}"
            else:
                described = f"a {type(part).__module__}.{type(part).__qualname__}"
            h.update(f"{name}={described}\0".encode())
    return h.hexdigest()


def _keyset_reduce(keys: Any) -> tuple:
    names = tuple(key.name for key in torch._C.DispatchKey.__members__.values() if keys.has(key))
    if _keyset(names).raw_repr() != keys.raw_repr():
        raise NotPortable("a dispatch key set that its keys do not rebuild")
    return _keyset, (names,)


def _lookup(module: str | None, qualname: str) -> Any:
    """The object at `module.qualname` among the modules already imported, or None."""
    found = sys.modules.get(module or "")
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def graph_dumps(value: Any) -> bytes:
    """A graph and its attributes, pickled as torch.fx would write their code: each function a
    node calls by the name fx gives it (`torch.nn.functional.max_pool2d`, which is a function
    made inside torch and cannot be found by its own qualified name)."""
    buffer = io.BytesIO()
    try:
        _GraphPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except Exception as error:
        raise NotPortable(f"the graph does not pickle: {type(error).__name__}: {error}") from None
    return buffer.getvalue()


class _GraphPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):  # the generated code's imports
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, (torch._ops.HigherOrderOperator, torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
            # By name, as the generated code calls it (`torch.ops.aten.add.Tensor`,
            # `torch.ops.higher_order.cond`, a library's custom op): they hold pybind objects,
            # and a higher-order operator the kernels registered for it, which do not pickle.
            if isinstance(obj, torch._ops.HigherOrderOperator):
                namespace, name, overload = "higher_order", obj.__name__, None
            else:
                packet = obj if isinstance(obj, torch._ops.OpOverloadPacket) else obj.overloadpacket
                namespace, name = packet._qualified_op_name.split("::")
                overload = None if obj is packet else obj._overloadname
            if _operator(namespace, name, overload) is not obj:
                raise NotPortable(f"the graph calls the operator {obj}, which torch.ops does not find by its name")
            return _operator, (namespace, name, overload)
        if isinstance(obj, types.FunctionType) and obj is not _qualified and (
                "<locals>" in obj.__qualname__ or _lookup(obj.__module__, obj.__qualname__) is not obj):
            from torch.fx.node import _get_qualified_name

            name = _get_qualified_name(obj)
            if _qualified(name) is not obj:
                raise NotPortable(f"the graph calls {name}, which is not found by that name")
            return _qualified, (name,)
        return NotImplemented


def _operator(namespace: str, name: str, overload: str | None) -> Any:
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return packet if overload is None else getattr(packet, overload)
    except (AttributeError, RuntimeError):  # (a library's op its module has not registered)
        raise Stale(f"operator {namespace}::{name}{'.' + overload if overload else ''} is not registered") from None


def _qualified(name: str) -> Any:
    module, _, attribute = name.rpartition(".")
    found = _lookup(module, attribute)
    if found is None and module:
        found = getattr(importlib.import_module(module), attribute, None)
    return found


# --- loading ----------------------------------------------------------------------------------

class Relocated:
    """What an identity guard expects when its object has no name (a code object, a nested
    function): whatever its source reads in the live frame, if that has the same digest."""

    def __init__(self, kind: str, digest: Any) -> None:
        self.kind, self.digest = kind, digest

    def accepts(self, value: Any) -> bool:
        if self.kind == "equal":  # (digest: the value itself)
            return type(value) is type(self.digest) and value == self.digest
        if self.kind == "code":
            return isinstance(value, types.CodeType) and code_digest(value) == self.digest
        try:
            return isinstance(value, types.FunctionType) and function_structure(value) == self.digest
        except NotPortable:
            return False


# The structures computed during one load, by object: guards name a class or a function many
# times, and nothing changes while one entry is read.
_structures: dict[int, tuple[Any, str]] | None = None


def loads(data: bytes) -> Any:
    """The inverse of dumps; raises Stale when a name no longer finds what it found."""
    global _structures
    _structures = {}
    try:
        return _Unpickler(io.BytesIO(data)).load()
    finally:
        _structures = None


def _structure_of(value: Any, digest: Callable[[Any], str]) -> str:
    if _structures is None:
        return digest(value)
    known = _structures.get(id(value))
    if known is None or known[0] is not value:
        known = _structures[id(value)] = (value, digest(value))
    return known[1]


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module not in sys.modules and not module.startswith(("torch", "framegraph", "builtins",
                                                                "marshal", "_operator", "operator")):
            # Loading a translation never imports the program's modules: one not imported
            # yet cannot be what the live frame reached.
            raise Stale(f"module {module} is not imported")
        try:
            return super().find_class(module, name)
        except (AttributeError, ImportError) as error:
            raise Stale(f"{module}.{name} is gone: {error}") from None


def _function(module: str, qualname: str, structure: str) -> Any:
    fn = _lookup(module, qualname)
    try:
        same = isinstance(fn, types.FunctionType) and _structure_of(fn, function_structure) == structure
    except NotPortable:
        same = False
    if not same:
        raise Stale(f"function {module}.{qualname} changed")
    return fn


def _code(raw: bytes, held: dict) -> types.CodeType:
    code = marshal.loads(raw)
    if held:
        code = code.replace(co_consts=tuple(held.get(i, c) for i, c in enumerate(code.co_consts)))
    return code


def _attribute(module: str, name: str) -> Any:
    return getattr(_module(module), name)


def _class(module: str, qualname: str, structure: str) -> type:
    cls = _lookup(module, qualname) if module in sys.modules else None
    if not isinstance(cls, type) or _structure_of(cls, class_structure) != structure:
        raise Stale(f"class {module}.{qualname} changed")
    return cls


def _made_class(module: str, qualname: str, bases: tuple, structure: str) -> type:
    base = next((b for b in reversed(bases) if b is not object), object)
    found = [cls for cls in base.__subclasses__()
             if cls.__bases__ == bases and cls.__qualname__ == qualname and cls.__module__ == module]
    # (two alike, as a class statement run twice makes: which one the guard meant is unknown)
    if len(found) != 1 or _structure_of(found[0], class_structure) != structure:
        raise Stale(f"class {module}.{qualname}, made from {[b.__qualname__ for b in bases]}, is not found as it was")
    return found[0]


def _module(name: str) -> types.ModuleType:
    module = sys.modules.get(name)
    if module is None:
        if not name.startswith("torch"):
            raise Stale(f"module {name} is not imported")
        module = importlib.import_module(name)
    return module


def reference(referent: Any) -> Any:
    """What an identity guard holds of its object: a weak reference where the object takes one."""
    try:
        return weakref.ref(referent)
    except TypeError:
        return _Strong(referent)


def _keyset(names: tuple[str, ...]) -> Any:
    return _keyset_of(names)


@functools.cache  # a model's tensors share a few key sets; the sets are immutable values
def _keyset_of(names: tuple[str, ...]) -> Any:
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Undefined)
    for name in names:
        keys = keys | torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, name))
    return keys


_LOADERS = (_function, _class, _made_class, _module, reference, _keyset, _unnamed_type, _code, _attribute)
_BY_VALUE += (Relocated,)  # pickled by name: they rebuild the rest
