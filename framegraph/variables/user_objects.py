"""Objects of user classes and nn.Modules: attribute reads the way Python resolves them.

An attribute read follows CPython's order: a data descriptor on the class (a property is
inlined), then the instance `__dict__`, then the class attribute (functions become bound
methods, classmethods bind the class, staticmethods stay plain). Each value read is wrapped
with its source, so it is guarded exactly when it is used. Classes that customise attribute
access (`__getattribute__`, or `__getattr__` for a missing name) are not modelled.

An nn.Module also finds its parameters, buffers and submodules in `_parameters`, `_buffers`
and `_modules`, and calling it runs forward pre-hooks, `forward`, and forward hooks, as
`Module.__call__` does. Parameters and buffers become graph inputs whose sources are rooted
at the module (`L['self'].layers[0].weight`).
"""

from __future__ import annotations

import types
from typing import Any

import torch

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, ItemSource, Source, TypeSource
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable
from .user_functions import UserFunctionVariable, UserMethodVariable

_MISSING = object()


class UserDefinedObjectVariable(VariableTracker):
    __slots__ = ("value", "assigned_class")

    def __init__(self, value: Any, source: Source | None) -> None:
        super().__init__(source)
        self.value = value
        # (class, its source) once the trace runs `obj.__class__ = cls` on the caller's object
        self.assigned_class: tuple[type, Source | None] | None = None

    def python_type(self) -> type:
        return self.assigned_class[0] if self.assigned_class is not None else type(self.value)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from .builder import wrap

        cls = self.python_type()
        if cls.__getattribute__ is not object.__getattribute__ and not issubclass(cls, torch.nn.Module):
            raise Unsupported("Unsupported attribute access", f"{cls.__qualname__} defines __getattribute__")
        written = tx.output.side_effects.load_attr(self, name)
        if written is not None:
            return written
        if name == "__class__":
            return ConstantVariable(cls, self._type_source())
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            return self._descriptor(tx, name, class_attr)
        found = self._instance_attribute(tx, name)
        if found is not None:
            return found
        if class_attr is not _MISSING:
            if self.source is not None and hasattr(self.value, "__dict__"):
                # Found on the class: an instance attribute of that name would hide it later.
                tx.output.class_reads.setdefault(self.source, set()).add(name)
            return self._class_attribute(tx, name, class_attr)
        if hasattr(cls, "__getattr__") and not issubclass(cls, torch.nn.Module):
            raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.__getattr__ for {name!r}")
        raise Unsupported("Unsupported exception handling",
                          f"{cls.__qualname__!r} object has no attribute {name!r}")

    def has_attribute(self, tx, name: str) -> bool:
        """`hasattr(obj, name)` as the program would see it, guarded."""
        if tx.output.side_effects.load_attr(self, name) is not None:
            return True
        if self.source is None or self.assigned_class is not None:
            raise Unsupported("Unsupported builtin call", "hasattr on an object made while tracing or given a new class")
        present = hasattr(self.value, name)
        tx.output.guards.add(GuardKind.HASATTR, self.source, (name, present), tx.output.user_line, key=name)
        return present

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        from .builder import wrap

        instance_dict = getattr(self.value, "__dict__", None)
        if instance_dict is None or name not in instance_dict:
            return None
        return wrap(tx, instance_dict[name], self._attr_source(name))

    def _attr_source(self, name: str) -> Source:
        if self.source is None:
            raise Unsupported("Unsupported attribute access",
                              f"{type(self.value).__qualname__}.{name} of an object made while tracing")
        return AttrSource(self.source, name)

    def _type_source(self) -> Source | None:
        """Where the object's class can be loaded from."""
        if self.assigned_class is not None:
            return self.assigned_class[1]
        return TypeSource(self.source) if self.source is not None else None

    def _class_source(self, name: str) -> Source:
        type_source = self._type_source()
        if type_source is None:
            raise Unsupported("Unsupported attribute access", f"class attribute {name!r} without a source")
        return AttrSource(type_source, name)

    def _descriptor(self, tx, name: str, attr: Any) -> VariableTracker:
        if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
            getter = _user_function(tx, attr.fget, AttrSource(self._class_source(name), "fget"))
            return getter.call_function(tx, [self], {})
        raise Unsupported("Unsupported attribute access",
                          f"descriptor {type(attr).__qualname__} for {type(self.value).__qualname__}.{name}")

    def _class_attribute(self, tx, name: str, attr: Any) -> VariableTracker:
        from .builder import wrap

        cls = self.python_type()
        if isinstance(attr, types.FunctionType):
            # One guard per class: every instance's type is pinned by its TYPE_MATCH guard.
            return UserMethodVariable(_user_function(tx, attr, self._class_source(name), (cls, name)), self)
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return _user_function(tx, attr.__func__, self._class_source(name))
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            fn = _user_function(tx, attr.__func__, AttrSource(self._class_source(name), "__func__"))
            return UserMethodVariable(fn, ConstantVariable(cls, self._type_source()))
        return wrap(tx, getattr(cls, name), self._class_source(name))

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        cls = self.python_type()
        if cls.__setattr__ is not object.__setattr__ and cls.__setattr__ is not torch.nn.Module.__setattr__:
            raise Unsupported("Unsupported mutation", f"{cls.__qualname__} defines __setattr__")
        if name == "__class__":
            self._assign_class(tx, value)
            if self.source is not None:
                tx.output.side_effects.store_attr(self, name, value)
            return
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            raise Unsupported("Unsupported mutation", f"assignment through descriptor {cls.__qualname__}.{name}")
        if self.source is None:
            raise Unsupported("Unsupported mutation", f"attribute {name!r} of an object made while tracing")
        # Replayed with a real STORE_ATTR after the graph, so Module.__setattr__ still files
        # parameters, buffers and submodules where they belong.
        tx.output.side_effects.store_attr(self, name, value)

    def _assign_class(self, tx, value: VariableTracker) -> None:
        """`obj.__class__ = new`: checked as CPython checks it (on a stand-in instance); from
        then on the trace sees the new class, and the caller's object gets it by replay."""
        from .containers import raise_observed

        old = self.python_type()
        new = value.as_python_constant() if value.is_python_constant() else None
        if issubclass(old, torch.nn.Module) or old.__new__ is not object.__new__ or type(old) is not type:
            raise Unsupported("Unsupported mutation", f"assignment to __class__ of a {old.__qualname__}")
        if not isinstance(new, type):
            raise_observed(TypeError, f"__class__ must be set to a class, not '{value.python_type().__name__}' object")
        stand_in = object.__new__(old)
        try:
            stand_in.__class__ = new
        except TypeError as error:
            raise_observed(TypeError, str(error))
        self.assigned_class = (new, value.source)

    def length(self, tx) -> VariableTracker:
        """`len(obj)`: its `__len__`, whose result CPython checks."""
        from .containers import raise_observed

        result = self.call_method(tx, "__len__", [], {})
        if result.is_python_constant():
            count = result.as_python_constant()
            if not hasattr(type(count), "__index__"):
                raise_observed(TypeError, f"'{type(count).__name__}' object cannot be interpreted as an integer")
            if count < 0:
                raise_observed(ValueError, "__len__() should return >= 0")
            return ConstantVariable(count.__index__())
        if result.python_type() is not int:
            raise Unsupported("Unsupported builtin call", f"len() of a {self.python_type().__qualname__} gave {result}")
        return result

    def bool_value(self, tx) -> bool:
        """Truth as CPython decides it: `__bool__` (which must give a bool), else
        `__len__` (non-zero), else true."""
        from .containers import raise_observed

        cls = self.python_type()
        if _lookup_class(cls, "__bool__")[0] is not _MISSING:
            result = self.call_method(tx, "__bool__", [], {})
            if result.python_type() is not bool:
                raise_observed(TypeError, f"__bool__ should return bool, returned {result.python_type().__name__}")
            return result.bool_value(tx)
        if _lookup_class(cls, "__len__")[0] is not _MISSING:
            return self.length(tx).bool_value(tx)
        return True

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.call_method(tx, "__call__", args, kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.value).__qualname__})"


def _lookup_class(cls: type, name: str) -> tuple[Any, type | None]:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name], klass
    return _MISSING, None


def _is_data_descriptor(attr: Any) -> bool:
    kind = type(attr)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


class SuperVariable(VariableTracker):
    """`super(cls, obj)`: attribute lookup starting after `cls` in type(obj)'s MRO."""

    __slots__ = ("cls", "obj")

    def __init__(self, cls: type, obj: VariableTracker) -> None:
        super().__init__()
        self.cls, self.obj = cls, obj

    def var_getattr(self, tx, name: str) -> VariableTracker:
        # `super()` in a classmethod binds the class itself: the MRO searched is its own, and
        # what a class attribute lookup gives is returned (a plain function stays unbound).
        of_class = isinstance(self.obj, ConstantVariable) and isinstance(self.obj.value, type)
        owner = self.obj.as_python_constant() if of_class else self.obj.python_type()
        mro = owner.__mro__
        if self.cls not in mro:
            raise Unsupported("Unsupported exception handling",
                              f"super({self.cls.__qualname__}, obj): obj is not an instance or subtype of it")
        for index in range(mro.index(self.cls) + 1, len(mro)):
            if name in mro[index].__dict__:
                attr = mro[index].__dict__[name]
                break
        else:
            raise Unsupported("Unsupported exception handling", f"'super' object has no attribute {name!r}")
        # Where the function can be reloaded: type(obj).__mro__[index].name (cls.__mro__... for a class)
        owner_source = None
        if self.obj.source is not None:
            owner_source = self.obj.source if of_class else TypeSource(self.obj.source)
        source = AttrSource(ItemSource(AttrSource(owner_source, "__mro__"), index), name) if owner_source else None
        if isinstance(attr, types.FunctionType):
            function = _user_function(tx, attr, source)
            return function if of_class else UserMethodVariable(function, self.obj)
        if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
            cls_var = self.obj if of_class else ConstantVariable(owner, owner_source)
            func_source = AttrSource(source, "__func__") if source is not None else None
            return UserMethodVariable(_user_function(tx, attr.__func__, func_source), cls_var)
        if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
            return _user_function(tx, attr.__func__, None)
        raise Unsupported("Unsupported attribute access", f"super().{name} ({type(attr).__qualname__})")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)


def make_super(tx, args: list[VariableTracker]) -> SuperVariable:
    """`super()` (the class from the `__class__` cell, the object from the first argument)
    or `super(cls, obj)`."""
    if len(args) == 2:
        return SuperVariable(args[0].as_python_constant(), args[1])
    if args:
        raise Unsupported("Unsupported builtin call", "super() with one argument")
    if "__class__" not in tx.cell_names or not tx.code.co_argcount:
        raise Unsupported("Unsupported exception handling", "super(): no arguments")
    first = tx.code.co_varnames[0]
    obj = tx.cell(first).get(tx) if first in tx.cell_names else tx.load_local(first)
    return SuperVariable(tx.cell("__class__").get(tx).as_python_constant(), obj)


def class_attribute_of(tx, obj: VariableTracker, cls: type, class_source: Source | None,
                       name: str) -> VariableTracker:
    """`obj.name` found on `cls` (for objects that are not UserDefinedObjectVariables, such
    as namedtuple instances): a property runs its getter, a function binds `obj`."""
    from .builder import wrap

    attr, _ = _lookup_class(cls, name)
    source = AttrSource(class_source, name) if class_source is not None else None
    if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
        getter_source = AttrSource(source, "fget") if source is not None else None
        return _user_function(tx, attr.fget, getter_source).call_function(tx, [obj], {})
    if isinstance(attr, types.FunctionType):
        return UserMethodVariable(_user_function(tx, attr, source), obj)
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return _user_function(tx, attr.__func__, source)
    if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
        func_source = AttrSource(source, "__func__") if source is not None else None
        return UserMethodVariable(_user_function(tx, attr.__func__, func_source), ConstantVariable(cls, class_source))
    if source is None:
        raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.{name} of a class without a source")
    return wrap(tx, getattr(cls, name), source)


def class_getattr(tx, cls_var: VariableTracker, name: str) -> VariableTracker:
    """`Cls.name` for a user class: functions stay plain, classmethods bind the class, and
    every other value is read through the class (so it is guarded)."""
    from .builder import wrap

    cls = cls_var.as_python_constant()
    attr, _ = _lookup_class(cls, name)
    if attr is _MISSING:
        raise Unsupported("Unsupported exception handling", f"type object {cls.__qualname__!r} has no attribute {name!r}")
    source = AttrSource(cls_var.source, name) if cls_var.source is not None else None
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return _user_function(tx, attr.__func__, source)
    if isinstance(attr, classmethod) and isinstance(attr.__func__, types.FunctionType):
        func_source = AttrSource(source, "__func__") if source is not None else None
        return UserMethodVariable(_user_function(tx, attr.__func__, func_source), cls_var)
    if isinstance(attr, types.FunctionType):
        return _user_function(tx, attr, source)
    if source is None:
        raise Unsupported("Unsupported attribute access", f"{cls.__qualname__}.{name} of a class without a source")
    return wrap(tx, getattr(cls, name), source)


def _user_function(tx, fn: types.FunctionType, source: Source | None,
                   guard_once_for: tuple | None = None) -> VariableTracker:
    from ..trace_rules import is_inlineable
    from .builder import wrap

    if source is None:
        if not is_inlineable(fn):
            raise Unsupported("Attempted to call function marked as skipped", f"`{fn.__qualname__}`")
        return UserFunctionVariable(fn, None)
    if not is_inlineable(fn):
        return wrap(tx, fn, source)
    # The class might be patched between calls: guard the function object itself.
    if guard_once_for is None or guard_once_for not in tx.output.guarded_class_attrs:
        tx.output.guards.add(GuardKind.ID_MATCH, source, fn, tx.output.user_line)
        if guard_once_for is not None:
            tx.output.guarded_class_attrs.add(guard_once_for)
    return UserFunctionVariable(fn, source)


class NewObjectVariable(UserDefinedObjectVariable):
    """An instance of a user class created while tracing.

    `value` is a real, uninitialised instance (made with `object.__new__`) used only to find
    class attributes; the instance's own attributes live in `attrs`. If the object outlives
    the frame it is rebuilt after the graph: `object.__new__(cls)`, then each attribute.
    """

    __slots__ = ("attrs", "class_source")

    def __init__(self, value: Any, class_source: Source | None) -> None:
        super().__init__(value, None)
        self.attrs: dict[str, VariableTracker] = {}
        self.class_source = class_source

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        return self.attrs.get(name)

    def children(self) -> list[VariableTracker]:
        return list(self.attrs.values())

    def has_attribute(self, tx, name: str) -> bool:
        return name in self.attrs or _lookup_class(type(self.value), name)[0] is not _MISSING

    def _type_source(self) -> Source | None:
        return self.class_source

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        cls = type(self.value)
        if cls.__setattr__ is not object.__setattr__:
            raise Unsupported("Unsupported mutation", f"{cls.__qualname__} defines __setattr__")
        if name == "__class__":
            self._assign_class(tx, value)
            self.value.__class__ = self.assigned_class[0]  # the stand-in instance is ours to change
            self.class_source, self.assigned_class = value.source, None
            return
        class_attr, _ = _lookup_class(cls, name)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            raise Unsupported("Unsupported mutation", f"assignment through descriptor {cls.__qualname__}.{name}")
        self.attrs[name] = value

    def reconstruct(self, codegen) -> None:
        from ..bytecode import create_instruction

        codegen.load_callable_const(object.__new__)
        codegen.load_const(type(self.value))
        codegen.call(1)
        for name, value in self.attrs.items():
            codegen.append(create_instruction("COPY", arg=1))
            codegen.reconstruct(value)
            codegen.append(create_instruction("SWAP", arg=2), create_instruction("STORE_ATTR", argval=name))


def construct(tx, cls_var: VariableTracker, args: list[VariableTracker],
              kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for a class value: namedtuples, plain user classes and
    dataclasses, and a few immutable torch types built from constants."""
    from .containers import make_namedtuple

    cls = cls_var.as_python_constant()
    if cls in _CONSTANT_CONSTRUCTORS and all(a.is_python_constant() for a in (*args, *kwargs.values())):
        from .constant import fold

        return fold(lambda *a: cls(*a, **{k: v.as_python_constant() for k, v in kwargs.items()}), *args)
    namedtuple = make_namedtuple(tx, cls_var, args, kwargs)
    if namedtuple is not None:
        return namedtuple
    if issubclass(cls, BaseException):
        from .exceptions import make_exception

        return make_exception(cls, args, kwargs)
    from ..trace_rules import is_inlineable

    init = cls.__dict__.get("__init__") or next((k.__dict__["__init__"] for k in cls.__mro__
                                                  if "__init__" in k.__dict__), None)
    plain = (type(cls) is type and cls.__new__ is object.__new__ and not issubclass(cls, torch.nn.Module)
             and not issubclass(cls, BaseException))
    if not plain or not (init is object.__init__ or (isinstance(init, types.FunctionType) and is_inlineable(init))):
        raise Unsupported("Unsupported builtin call", f"creating a {cls.__qualname__} while tracing")
    obj = NewObjectVariable(object.__new__(cls), cls_var.source)
    if init is not object.__init__:
        source = AttrSource(cls_var.source, "__init__") if cls_var.source is not None else None
        UserFunctionVariable(init, source).call_function(tx, [obj, *args], kwargs)
    elif args or kwargs:
        raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}() takes no arguments")
    return obj


_CONSTANT_CONSTRUCTORS = frozenset({torch.Size, torch.device, slice, range})


class NNModuleVariable(UserDefinedObjectVariable):
    __slots__ = ()

    def _instance_attribute(self, tx, name: str) -> VariableTracker | None:
        from .builder import wrap

        found = super()._instance_attribute(tx, name)
        if found is not None:
            return found
        # What Module.__getattr__ finds: parameters, buffers, submodules. They are read
        # from the tables directly (`m._modules['fc']`), which guards and the generated
        # code do without a Python-level __getattr__ call per step.
        for store in ("_parameters", "_buffers", "_modules"):
            table = self.value.__dict__.get(store)
            if table is not None and name in table:
                value = table[name]
                if value is None:
                    return ConstantVariable(None)
                return wrap(tx, value, ItemSource(self._attr_source(store), name))
        return None

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        module = self.value
        self._check_no_unmodelled_hooks(tx)
        args = list(args)
        for key, hook in module._forward_pre_hooks.items():
            if key in module._forward_pre_hooks_with_kwargs:
                raise Unsupported("Unsupported method call", "a forward pre-hook registered with_kwargs=True")
            result = self._hook(tx, "_forward_pre_hooks", key, hook).call_function(
                tx, [self, _tuple(args)], {})
            if not (result.is_python_constant() and result.as_python_constant() is None):
                args = list(result.items) if _is_tuple(result) else [result]
        output = self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
        for key, hook in module._forward_hooks.items():
            if key in module._forward_hooks_with_kwargs:
                raise Unsupported("Unsupported method call", "a forward hook registered with_kwargs=True")
            result = self._hook(tx, "_forward_hooks", key, hook).call_function(
                tx, [self, _tuple(args), output], {})
            if not (result.is_python_constant() and result.as_python_constant() is None):
                output = result
        return output

    def _hook(self, tx, table: str, key: int, hook: Any) -> VariableTracker:
        from .builder import wrap

        return wrap(tx, hook, ItemSource(AttrSource(self.source, table), key))

    def _check_no_unmodelled_hooks(self, tx) -> None:
        from torch.nn.modules import module as module_impl

        module = self.value
        if (module._backward_hooks or module._backward_pre_hooks or module_impl._global_forward_hooks
                or module_impl._global_forward_pre_hooks or module_impl._global_backward_hooks
                or module_impl._global_backward_pre_hooks):
            raise Unsupported("Unsupported method call", "a module with backward hooks or global hooks")
        if self.source is None:
            raise Unsupported("Unsupported value type", "an nn.Module made while tracing")
        # The set of hooks decides the code traced: a hook added later must recompile.
        for table in ("_forward_pre_hooks", "_forward_hooks"):
            hooks = getattr(module, table)
            tx.output.guards.add(GuardKind.DICT_KEYS, AttrSource(self.source, table), (type(hooks), tuple(hooks)),
                                 tx.output.user_line)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _MODULE_METHODS and not _overridden(type(self.value), name):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        handler = _MODULE_METHODS.get(name)
        if handler is not None and not _overridden(type(self.value), name):
            return handler(self, tx, *args, **kwargs)
        return super().call_method(tx, name, args, kwargs)

    # ---- containers: Sequential, ModuleList, ModuleDict, and the named_* iterators ----

    def submodules(self, tx) -> list[tuple[str, VariableTracker]]:
        return [(key, self.var_getattr(tx, key)) for key, value in self.value._modules.items()
                if value is not None]

    def iterate(self, tx) -> list[VariableTracker]:
        if isinstance(self.value, torch.nn.ModuleDict):
            return [ConstantVariable(key) for key in self.value._modules]
        if isinstance(self.value, (torch.nn.Sequential, torch.nn.ModuleList)):
            return [module for _, module in self.submodules(tx)]
        if isinstance(self.value, torch.nn.ParameterList):
            return [self.var_getattr(tx, key) for key in self.value._parameters]
        raise Unsupported("Unsupported builtin call", f"iteration over {type(self.value).__qualname__}")


def _overridden(cls: type, name: str) -> bool:
    """Whether a user subclass replaced one of the container methods we model."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return not klass.__module__.startswith("torch.nn")
    return False


def _tuple(items: list[VariableTracker]) -> VariableTracker:
    from .containers import TupleVariable

    return TupleVariable(list(items))


def _is_tuple(value: VariableTracker) -> bool:
    from .containers import TupleVariable

    return isinstance(value, TupleVariable)


def _getitem(self: NNModuleVariable, tx, index: VariableTracker) -> VariableTracker:
    key = index.as_python_constant()
    module = self.value
    if isinstance(module, torch.nn.ModuleDict):
        return self.var_getattr(tx, key)
    if isinstance(key, slice):
        if not isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential)):
            raise Unsupported("Unsupported method call", f"slicing a {type(module).__qualname__}")
        return ModuleSliceVariable(type(module), [module_var for _, module_var in self.submodules(tx)][key])
    keys = list(module._modules) if not isinstance(module, torch.nn.ParameterList) else list(module._parameters)
    try:
        name = keys[key]
    except (IndexError, TypeError):
        raise Unsupported("Unsupported exception handling", f"{type(module).__qualname__}[{key!r}]") from None
    return self.var_getattr(tx, name)


class ModuleSliceVariable(VariableTracker):
    """`layers[a:b]` of a ModuleList or Sequential: a new container of the same submodules.

    It can be iterated, indexed, measured and (for Sequential) called; it is never handed
    back to the caller, since that would mean building a new module after the graph.
    """

    __slots__ = ("kind", "modules")

    def __init__(self, kind: type, modules: list[VariableTracker]) -> None:
        super().__init__()
        self.kind, self.modules = kind, modules

    def python_type(self) -> type:
        return self.kind

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__len__":
            return ConstantVariable(len(self.modules))
        if name == "__getitem__":
            key = args[0].as_python_constant()
            if isinstance(key, slice):
                return ModuleSliceVariable(self.kind, self.modules[key])
            return self.modules[key]
        raise Unsupported("Unsupported method call", f"{self.kind.__qualname__}.{name} of a slice")

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.kind is not torch.nn.Sequential or kwargs or len(args) != 1:
            raise Unsupported("Unsupported method call", f"calling a slice of a {self.kind.__qualname__}")
        (value,) = args
        for module in self.modules:
            value = module.call_function(tx, [value], {})
        return value

    def iterate(self, tx) -> list[VariableTracker]:
        return list(self.modules)

    def reconstruct(self, codegen) -> None:
        raise Unsupported("Unsupported mutation", f"a slice of a {self.kind.__qualname__} escapes the frame")


def _named(kind: str):
    def handler(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
        from .containers import ListVariable, TupleVariable

        if args or kwargs:
            raise Unsupported("Unsupported method call", f"Module.{kind} with arguments")
        if kind == "named_children":
            pairs = self.submodules(tx)
        else:
            pairs = _named_tensors(self, tx, "_parameters" if kind == "named_parameters" else "_buffers")
        return ListVariable([TupleVariable([ConstantVariable(n), v]) for n, v in pairs])
    return handler


def _named_tensors(self: NNModuleVariable, tx, store: str) -> list[tuple[str, VariableTracker]]:
    """Recursive, in the order Module.named_parameters/named_buffers yields."""
    out: list[tuple[str, VariableTracker]] = []
    seen: set[int] = set()

    def visit(module_var: NNModuleVariable, prefix: str) -> None:
        for name, value in module_var.value.__dict__[store].items():
            if value is None or id(value) in seen:
                continue
            seen.add(id(value))
            out.append((prefix + name, module_var.var_getattr(tx, name)))
        for name, child in module_var.submodules(tx):
            visit(child, prefix + name + ".")

    visit(self, "")
    return out


def _plain(kind: str):
    def handler(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
        from .containers import ListVariable

        pairs = _MODULE_METHODS["named_" + kind](self, tx, *args, **kwargs)
        return ListVariable([pair.items[1] for pair in pairs.items])
    return handler


def _items(self: NNModuleVariable, tx) -> VariableTracker:
    from .containers import ListVariable, TupleVariable

    return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in self.submodules(tx)])


def _keys(self: NNModuleVariable, tx) -> VariableTracker:
    from .containers import ListVariable

    return ListVariable([ConstantVariable(k) for k, _ in self.submodules(tx)])


def _values(self: NNModuleVariable, tx) -> VariableTracker:
    from .containers import ListVariable

    return ListVariable([v for _, v in self.submodules(tx)])


def _len(self: NNModuleVariable, tx) -> VariableTracker:
    if not isinstance(self.value, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict,
                                   torch.nn.ParameterList)):
        raise Unsupported("Unsupported builtin call", f"len() of {type(self.value).__qualname__}")
    return ConstantVariable(len(self.value))


_MODULE_METHODS = {
    "__getitem__": _getitem,
    "__len__": _len,
    "named_children": _named("named_children"),
    "named_parameters": _named("named_parameters"),
    "named_buffers": _named("named_buffers"),
    "children": _plain("children"),
    "parameters": _plain("parameters"),
    "buffers": _plain("buffers"),
    "items": _items,
    "keys": _keys,
    "values": _values,
}
