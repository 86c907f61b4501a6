"""nn.Module instances: attribute reads, calls and the container protocol, as Python and torch run them.

An attribute read is `object.__getattribute__` and then, only if that finds nothing, the class's
`__getattr__`: a data descriptor on the class (a property is inlined), the instance `__dict__`,
a class attribute; then torch's `Module.__getattr__`, which looks in `_parameters`, `_buffers`
and `_modules` in that order (a class's own `__getattr__` is inlined instead). So a method of
the class hides a submodule of the same name, as it does in eager. Each fact the lookup used is
guarded: a name found on the class or in a table must stay out of the instance `__dict__`, a
name found in a table must stay out of the tables searched before it, and a class attribute is
pinned once per class (every instance's type is pinned by its TYPE_MATCH guard), as is a
class's lack of a name found in a table. A name found nowhere raises the AttributeError
`Module.__getattr__` raises, which the traced code may catch.

A call is whatever `type(module).__call__` does. torch's `Module.__call__` and `_call_impl`,
`__getattr__`, the `named_*` iterators and the container methods of Sequential, ModuleList,
ModuleDict and ParameterList are modelled (`MODELLED`) rather than traced line by line; a
subclass that overrides one of them has its override inlined, and a `super().__call__(...)` in
that override comes back to the model. Where a result depends on which keys a table holds or
their order (iteration, `len`, positional indexing, `in`), those keys are guarded.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from typing import Any, Callable

import torch
from torch.nn.modules import module as module_impl

from ..exc import ObservedException, Unsupported
from ..guards import GuardKind
from ..source import ItemSource
from .base import VariableTracker
from .constant import ConstantVariable
from .handled_callables import runs_eagerly
from .user_functions import UserFunctionVariable
from .user_objects import _MISSING, UserDefinedObjectVariable, _is_data_descriptor, _lookup_class

_TABLES = ("_parameters", "_buffers", "_modules")  # Module.__getattr__'s search order
_PLAIN_CONSTANTS = (bool, int, float, str, type(None))


class NNModuleVariable(UserDefinedObjectVariable):
    __slots__ = ()

    # ---- attribute reads -------------------------------------------------------------------

    def var_getattr(self, tx, name: str) -> VariableTracker:
        cls = type(self.value)
        if cls.__getattribute__ is not object.__getattribute__:
            raise Unsupported("Unsupported attribute access", f"{cls.__qualname__} defines __getattribute__")
        written = tx.output.side_effects.load_attr(self, name)
        if written is not None:
            return written
        if name == "__class__":  # the type is pinned by the module's TYPE_MATCH guard
            return ConstantVariable(cls, self._type_source())
        class_attr, _ = _lookup_class(cls, name)
        if name == "__dict__" and type(class_attr) is types.GetSetDescriptorType:
            from .instance_dict import InstanceDictVariable

            return InstanceDictVariable(self)
        if class_attr is not _MISSING and _is_data_descriptor(class_attr):
            return self._descriptor(tx, name, class_attr)
        swapped = tx.output.reparametrized.get((id(self.value), "__dict__", name))
        if swapped is not None:
            return swapped
        found = self._instance_attribute(tx, name)
        if found is not None:
            return found
        if self.source is not None:  # what follows holds while the instance __dict__ lacks the name
            tx.output.class_reads.setdefault(self.source, set()).add(name)
        if class_attr is not _MISSING:
            return self._class_attribute(tx, name, class_attr)
        self._pin_class_attribute(tx, name, _MISSING)
        if _lookup_class(cls, "__getattr__")[0] is torch.nn.Module.__getattr__:
            return self.table_attribute(tx, name)
        return self._special(tx, "__getattr__").call_function(tx, [ConstantVariable(name)], {})

    def table_attribute(self, tx, name: str) -> VariableTracker:
        """What torch's Module.__getattr__ returns for `name`, or the AttributeError it raises
        (which the traced code may catch)."""
        for index, store in enumerate(_TABLES):
            if name in self._table(tx, store):
                for earlier in _TABLES[:index]:
                    self._guard_keys(tx, earlier)
                return self._table_item(tx, store, name)
        for store in _TABLES:
            self._guard_keys(tx, store)
        from .exceptions import make_exception

        message = ConstantVariable(f"{type(self.value).__name__!r} object has no attribute {name!r}")
        raise ObservedException(make_exception(AttributeError, [message], {}))

    def _class_attribute(self, tx, name: str, attr: Any) -> VariableTracker:
        if type(attr) in _PLAIN_CONSTANTS:  # torch's `_compiled_call_impl = None`, `_version = 1`...
            self._pin_class_attribute(tx, name, attr)
            return ConstantVariable(attr)
        return super()._class_attribute(tx, name, attr)

    def _pin_class_attribute(self, tx, name: str, value: Any) -> None:
        """Guards, once per class, the constant the class holds under `name` (or that it holds
        nothing there: a class attribute added later would hide the tables)."""
        cls, line = type(self.value), tx.output.user_line
        if (cls, name) in tx.output.guarded_class_attrs:
            return
        if value is _MISSING:
            tx.output.guards.add(GuardKind.HASATTR, self._type_source(), (name, hasattr(cls, name)), line, key=name)
        else:
            tx.output.guards.add(GuardKind.EQUALS_MATCH, self._class_source(name), value, line)
        tx.output.guarded_class_attrs.add((cls, name))

    def _special(self, tx, name: str) -> VariableTracker:
        """A special method (`__call__`, `__len__`...), which Python looks up on the type only."""
        attr, _ = _lookup_class(type(self.value), name)
        if attr is _MISSING:
            raise Unsupported("Unsupported exception handling", f"{type(self.value).__qualname__} has no {name}")
        if not isinstance(attr, types.FunctionType):
            raise Unsupported("Unsupported method call",
                              f"{type(self.value).__qualname__}.{name} is a {type(attr).__name__}")
        return self._class_attribute(tx, name, attr)

    # ---- the tables ------------------------------------------------------------------------

    def _table(self, tx, store: str) -> dict:
        table = self.value.__dict__.get(store)
        if not isinstance(table, dict):
            raise Unsupported("Unsupported attribute access", f"{type(self.value).__qualname__} has no {store} dict")
        tracked = tx.output.objects.get(id(table))
        if tracked is not None:
            from ..side_effects import ReplaceDict

            if any(isinstance(e, ReplaceDict) and e.obj is tracked for e in tx.output.side_effects):
                raise Unsupported("Unsupported mutation", f"{self.source}.{store} changed while tracing")
        return table

    def _table_item(self, tx, store: str, key: str) -> VariableTracker:
        swapped = tx.output.reparametrized.get((id(self.value), store, key))
        if swapped is not None:
            return swapped
        return builder.wrap(tx, self._table(tx, store)[key], ItemSource(self._attr_source(store), key))

    def _guard_keys(self, tx, store: str) -> list[str]:
        """The table's keys in order, which the trace depends on from here."""
        table = self._table(tx, store)
        tx.output.guards.add(GuardKind.DICT_KEYS, self._attr_source(store), (type(table), tuple(table)),
                             tx.output.user_line)
        return list(table)

    def _walk(self, tx, store: str) -> list[tuple[str, VariableTracker]]:
        """Every (key, value) of a table, in order."""
        from ..side_effects import StoreAttr

        for entry in tx.output.side_effects:
            # A pending assignment to this module may be filed into one of its tables.
            if isinstance(entry, StoreAttr) and entry.obj is self and (
                    isinstance(entry.value, NNModuleVariable) or not entry.value.is_python_constant()
                    or any(entry.name in self._table(tx, t) for t in _TABLES)):
                raise Unsupported("Unsupported mutation", f"{self.source}.{entry.name} assigned while tracing")
        return [(key, self._table_item(tx, store, key)) for key in self._guard_keys(tx, store)]

    # ---- calls -----------------------------------------------------------------------------

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self._special(tx, "__call__").call_function(tx, args, kwargs)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__contains__" and _lookup_class(type(self.value), name)[0] is _MISSING:
            from .builtins import contains

            # Python's fallback for `in`: iterate, comparing each item
            return ConstantVariable(contains(tx, self.iterate(tx), args[0]))
        if name.startswith("__") and name.endswith("__"):
            return self._special(tx, name).call_function(tx, args, kwargs)
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def _check_no_unmodelled_hooks(self, tx) -> None:
        module = self.value
        if (module._backward_hooks or module._backward_pre_hooks or module_impl._global_forward_hooks
                or module_impl._global_forward_pre_hooks or module_impl._global_backward_hooks
                or module_impl._global_backward_pre_hooks):
            raise Unsupported("Unsupported method call", "a module with backward hooks or global hooks")
        # The set of hooks decides the code traced: a hook added later must recompile.
        for table in ("_forward_pre_hooks", "_forward_hooks"):
            hooks = getattr(module, table)
            tx.output.guards.add(GuardKind.DICT_KEYS, self._attr_source(table), (type(hooks), tuple(hooks)),
                                 tx.output.user_line)

    def _hook(self, tx, table: str, key: int, hook: Any) -> VariableTracker:
        from .builder import wrap

        return wrap(tx, hook, ItemSource(self._attr_source(table), key))

    # ---- iteration and truth -----------------------------------------------------------------

    def iterate(self, tx) -> list[VariableTracker]:
        return tx.unpack_iterable(self._special(tx, "__iter__").call_function(tx, [], {}))

    def bool_value(self, tx) -> bool:
        for name in ("__bool__", "__len__"):  # Python's order; neither means true
            if _lookup_class(type(self.value), name)[0] is not _MISSING:
                return self._special(tx, name).call_function(tx, [], {}).bool_value(tx)
        return True

    def submodules(self, tx) -> list[tuple[str, VariableTracker]]:
        """named_children(): the non-None entries of `_modules`, each module once."""
        out, seen = [], set()
        for key, module in self._walk(tx, "_modules"):
            if isinstance(module, NNModuleVariable) and id(module) not in seen:
                seen.add(id(module))
                out.append((key, module))
        _guard_distinct(tx, [module for _, module in out])
        return out


def _guard_distinct(tx, modules: list[VariableTracker]) -> None:
    """The trace told these modules apart by identity (one tracker per object), so none of
    them may be another on a later call."""
    sources = tuple(m.source for m in modules)
    if len(sources) > 1:
        tx.output.guards.add(GuardKind.DISTINCT, None, sources, tx.output.user_line, key=sources)


class ModelledFunctionVariable(UserFunctionVariable):
    """A torch function in MODELLED, reached through a class (`super().__call__`,
    `nn.Module.__getattr__`, a bound method of a module): called on a module the frame can
    reach, it runs the model; on anything else, torch's own code is inlined."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if not (args and isinstance(args[0], NNModuleVariable) and args[0].source is not None):
            return super().call_function(tx, args, kwargs)
        model = MODELLED[self.fn]
        try:
            _signature(model).bind(args[0], tx, *args[1:], **kwargs)
        except TypeError:
            raise Unsupported("Unsupported method call", f"{self.fn.__qualname__} with these arguments") from None
        return model(args[0], tx, *args[1:], **kwargs)


@functools.lru_cache(maxsize=None)
def _signature(model: Callable) -> inspect.Signature:
    return inspect.signature(model)


# ---- the models: torch's implementations, over trackers ---------------------------------------

def _wrapped_call_impl(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
    compiled = self.var_getattr(tx, "_compiled_call_impl")
    if not (compiled.is_python_constant() and compiled.as_python_constant() is None):
        raise Unsupported("Unsupported method call", f"{self.source} was compiled with Module.compile()")
    return self.var_getattr(tx, "_call_impl").call_function(tx, list(args), kwargs)


def _call_impl(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
    """Forward pre-hooks, forward, forward hooks (backward and global hooks are not modelled)."""
    module = self.value
    _check_no_eager_hooks(module)
    self._check_no_unmodelled_hooks(tx)
    args = list(args)
    for key, hook in module._forward_pre_hooks.items():
        hook_var = self._hook(tx, "_forward_pre_hooks", key, hook)
        if key in module._forward_pre_hooks_with_kwargs:
            # hook(module, args, kwargs) -> None or a new (args, kwargs) pair (FSDP2's are these)
            result = hook_var.call_function(tx, [self, _tuple(args), _dict(kwargs)], {})
            if not _is_none(result):
                args, kwargs = _args_and_kwargs(result)
            continue
        result = hook_var.call_function(tx, [self, _tuple(args)], {})
        if not _is_none(result):
            args = list(result.items) if _is_tuple(result) else [result]
    output = self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
    for key, hook in module._forward_hooks.items():
        hook_args = [self, _tuple(args), *([_dict(kwargs)] if key in module._forward_hooks_with_kwargs else []), output]
        result = self._hook(tx, "_forward_hooks", key, hook).call_function(tx, hook_args, {})
        if not _is_none(result):
            output = result
    return output


def _check_no_eager_hooks(module: torch.nn.Module) -> None:
    """A hook its library marks to run outside any compiler (FSDP2's gather the parameters
    the forward reads, and free them after) cannot be traced or run mid-graph: the call breaks
    here, and convert_frame decides how the frame runs around it."""
    eager = [hook for hook in (*module._forward_pre_hooks.values(), *module._forward_hooks.values())
             if runs_eagerly(hook)]
    if eager:
        names = ", ".join(sorted({getattr(hook, "__qualname__", type(hook).__qualname__) for hook in eager}))
        raise Unsupported("Module hooks run eagerly",
                          f"{type(module).__qualname__} has hooks that run eagerly ({names})")


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _dict(kwargs: dict[str, VariableTracker]) -> VariableTracker:
    from .dicts import DictVariable

    return DictVariable(dict(kwargs))


def _args_and_kwargs(result: VariableTracker) -> tuple[list[VariableTracker], dict[str, VariableTracker]]:
    """What a with_kwargs pre-hook returned, as the call's new arguments: eager requires an
    (args, kwargs) pair and raises otherwise (the break runs the call to raise it)."""
    from .containers import ListVariable, TupleVariable
    from .dicts import DictVariable

    if _is_tuple(result) and len(result.items) == 2:
        new_args, new_kwargs = result.items
        if type(new_args) in (TupleVariable, ListVariable) and isinstance(new_kwargs, DictVariable) \
                and all(isinstance(k, str) for k in new_kwargs.items):
            return list(new_args.items), dict(new_kwargs.items)
    raise Unsupported("Unsupported method call",
                      f"a forward pre-hook with kwargs returned {result}, not an (args, kwargs) pair of a "
                      "tuple and a dict of names")


def _module_getattr(self: NNModuleVariable, tx, name: VariableTracker) -> VariableTracker:
    return self.table_attribute(tx, name.as_python_constant())


def _tuple(items: list[VariableTracker]) -> VariableTracker:
    from .containers import TupleVariable

    return TupleVariable(list(items))


def _is_tuple(value: VariableTracker) -> bool:
    from .containers import TupleVariable

    return isinstance(value, TupleVariable)


def _constant_args(name: str, args, kwargs, **defaults) -> dict[str, Any]:
    """Keyword-able arguments of a modelled method, all constants, with their defaults."""
    values = dict(defaults)
    names = list(defaults)
    if len(args) > len(names) or any(k not in values for k in kwargs):
        raise Unsupported("Unsupported method call", f"Module.{name} with these arguments")
    for key, value in (*zip(names, args), *kwargs.items()):
        if not value.is_python_constant():
            raise Unsupported("Unsupported method call", f"Module.{name} with a non-constant {key}")
        values[key] = value.as_python_constant()
    return values


def _named_modules_list(self: NNModuleVariable, tx, prefix: str = "",
                        remove_duplicate: bool = True) -> list[tuple[str, NNModuleVariable]]:
    """Module.named_modules: pre-order, each module once (by identity) unless told otherwise."""
    out: list[tuple[str, NNModuleVariable]] = []
    seen: set[int] = set()

    def visit(module: NNModuleVariable, name: str) -> None:
        if id(module) in seen:
            return
        if remove_duplicate:
            seen.add(id(module))
        out.append((name, module))
        for key, child in module._walk(tx, "_modules"):
            if isinstance(child, NNModuleVariable):
                visit(child, name + ("." if name else "") + key)

    visit(self, prefix)
    _guard_distinct(tx, list({id(m): m for _, m in out}.values()))
    return out


def _named_members(self: NNModuleVariable, tx, store: str, prefix: str, recurse: bool,
                   remove_duplicate: bool) -> list[tuple[str, VariableTracker]]:
    """Module._named_members over `store`: tensors in the order named_parameters/buffers yield."""
    modules = _named_modules_list(self, tx, prefix, remove_duplicate) if recurse else [(prefix, self)]
    out: list[tuple[str, VariableTracker]] = []
    seen: set[int] = set()  # tensor trackers are one per tensor, and the inputs are guarded distinct
    for module_prefix, module in modules:
        for key, value in module._walk(tx, store):
            if (value.is_python_constant() and value.as_python_constant() is None) or id(value) in seen:
                continue
            if remove_duplicate:
                seen.add(id(value))
            out.append((module_prefix + ("." if module_prefix else "") + key, value))
    return out


def _pairs(pairs: list[tuple[str, VariableTracker]]) -> VariableTracker:
    from .containers import TupleVariable
    from .iterators import ListIteratorVariable

    return ListIteratorVariable([TupleVariable([ConstantVariable(n), v]) for n, v in pairs])


def _named(store: str) -> Callable:
    def named(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
        options = _constant_args(f"named_{store[1:]}", args, kwargs, prefix="", recurse=True, remove_duplicate=True)
        return _pairs(_named_members(self, tx, store, **options))

    def plain(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
        from .iterators import ListIteratorVariable

        options = _constant_args(store[1:], args, kwargs, recurse=True)
        return ListIteratorVariable([v for _, v in _named_members(self, tx, store, "", options["recurse"], True)])
    return named, plain


def _named_modules(self: NNModuleVariable, tx, *args, **kwargs) -> VariableTracker:
    options = _constant_args("named_modules", args, kwargs, memo=None, prefix="", remove_duplicate=True)
    if options.pop("memo") is not None:
        raise Unsupported("Unsupported method call", "Module.named_modules with a memo")
    return _pairs(_named_modules_list(self, tx, **options))


def _modules(self: NNModuleVariable, tx) -> VariableTracker:
    from .iterators import ListIteratorVariable

    return ListIteratorVariable([m for _, m in _named_modules_list(self, tx)])


def _named_children(self: NNModuleVariable, tx) -> VariableTracker:
    return _pairs(self.submodules(tx))


def _children(self: NNModuleVariable, tx) -> VariableTracker:
    from .iterators import ListIteratorVariable

    return ListIteratorVariable([m for _, m in self.submodules(tx)])


def _iter_values(store: str) -> Callable:
    def handler(self: NNModuleVariable, tx) -> VariableTracker:
        from .iterators import ListIteratorVariable

        return ListIteratorVariable([value for _, value in self._walk(tx, store)])
    return handler


def _iter_keys(self: NNModuleVariable, tx) -> VariableTracker:
    from .iterators import ListIteratorVariable

    return ListIteratorVariable([ConstantVariable(key) for key in self._guard_keys(tx, "_modules")])


def _len_of(store: str) -> Callable:
    def handler(self: NNModuleVariable, tx) -> VariableTracker:
        table = self._table(tx, store)
        tx.output.guards.add(GuardKind.LENGTH, self._attr_source(store), (type(table), len(table)),
                             tx.output.user_line)
        return ConstantVariable(len(table))
    return handler


def _parameter_list_len(self: NNModuleVariable, tx) -> VariableTracker:
    return self.var_getattr(tx, "_size")  # ParameterList counts its entries itself


def _position(index: Any, size: int) -> int:
    """`index` as the containers' `_get_abs_string_index` reads it, counted from the start;
    where that raises (not an int, out of range), eager execution raises it instead."""
    try:
        position = operator.index(index)
    except TypeError:
        raise Unsupported("Unsupported exception handling", f"index {index!r} is not an integer") from None
    if not -size <= position < size:
        raise Unsupported("Unsupported exception handling", f"index {position} is out of range")
    return position % size


def _list_getitem(self: NNModuleVariable, tx, index: VariableTracker) -> VariableTracker:
    """ModuleList[i]: the entry named str(i), i counted from the end when negative."""
    key = index.as_python_constant()
    if isinstance(key, slice):
        return _slice(self, tx, key)
    size = _len_of("_modules")(self, tx).as_python_constant()
    return self._table_item(tx, "_modules", str(_position(key, size)))


def _sequential_getitem(self: NNModuleVariable, tx, index: VariableTracker) -> VariableTracker:
    """Sequential[i]: the i-th entry of `_modules`, in order."""
    key = index.as_python_constant()
    if isinstance(key, slice):
        return _slice(self, tx, key)
    values = [value for _, value in self._walk(tx, "_modules")]
    return values[_position(key, len(values))]


def _slice(self: NNModuleVariable, tx, key: slice) -> VariableTracker:
    return ModuleSliceVariable(type(self.value), [value for _, value in self._walk(tx, "_modules")][key])


def _module_key(key: VariableTracker) -> str:
    name = key.as_python_constant()
    if not isinstance(name, str):  # what a dict lookup does with it is for eager execution to say
        raise Unsupported("Unsupported exception handling", f"ModuleDict key {name!r}")
    return name


def _dict_getitem(self: NNModuleVariable, tx, key: VariableTracker) -> VariableTracker:
    name = _module_key(key)
    if name not in self._table(tx, "_modules"):
        raise Unsupported("Unsupported exception handling", f"ModuleDict has no key {name!r}")
    return self._table_item(tx, "_modules", name)


def _dict_contains(self: NNModuleVariable, tx, key: VariableTracker) -> VariableTracker:
    return ConstantVariable(_module_key(key) in self._guard_keys(tx, "_modules"))


def _dict_view(kind: str) -> Callable:
    def handler(self: NNModuleVariable, tx) -> VariableTracker:
        from .iterators import DictViewVariable

        # ModuleDict.keys() is `self._modules.keys()`: the dict itself, every entry wrapped
        return DictViewVariable(self.var_getattr(tx, "_modules"), kind)
    return handler


def _parameter_list_getitem(self: NNModuleVariable, tx, index: VariableTracker) -> VariableTracker:
    key = index.as_python_constant()
    if isinstance(key, slice):
        raise Unsupported("Unsupported method call", "slicing a ParameterList")
    size = _parameter_list_len(self, tx).as_python_constant()
    return self.var_getattr(tx, str(_position(key, size)))  # ParameterList reads getattr(self, str(i))


def _parameter_list_iter(self: NNModuleVariable, tx) -> VariableTracker:
    from .iterators import ListIteratorVariable

    size = _parameter_list_len(self, tx).as_python_constant()
    return ListIteratorVariable([self.var_getattr(tx, str(i)) for i in range(size)])


_NAMED_PARAMETERS, _PARAMETERS = _named("_parameters")
_NAMED_BUFFERS, _BUFFERS = _named("_buffers")
_nn = torch.nn

# torch's function -> its model, called as model(module_tracker, tx, *args, **kwargs)
MODELLED: dict[Callable, Callable] = {
    _nn.Module.__call__: _wrapped_call_impl,
    _nn.Module._call_impl: _call_impl,
    _nn.Module.__getattr__: _module_getattr,
    _nn.Module.named_parameters: _NAMED_PARAMETERS,
    _nn.Module.parameters: _PARAMETERS,
    _nn.Module.named_buffers: _NAMED_BUFFERS,
    _nn.Module.buffers: _BUFFERS,
    _nn.Module.named_children: _named_children,
    _nn.Module.children: _children,
    _nn.Module.named_modules: _named_modules,
    _nn.Module.modules: _modules,
    _nn.ModuleList.__getitem__: _list_getitem,
    _nn.ModuleList.__len__: _len_of("_modules"),
    _nn.ModuleList.__iter__: _iter_values("_modules"),
    _nn.Sequential.__getitem__: _sequential_getitem,
    _nn.Sequential.__len__: _len_of("_modules"),
    _nn.Sequential.__iter__: _iter_values("_modules"),
    _nn.ModuleDict.__getitem__: _dict_getitem,
    _nn.ModuleDict.__len__: _len_of("_modules"),
    _nn.ModuleDict.__iter__: _iter_keys,
    _nn.ModuleDict.__contains__: _dict_contains,
    _nn.ModuleDict.keys: _dict_view("keys"),
    _nn.ModuleDict.values: _dict_view("values"),
    _nn.ModuleDict.items: _dict_view("items"),
    _nn.ParameterList.__getitem__: _parameter_list_getitem,
    _nn.ParameterList.__len__: _parameter_list_len,
    _nn.ParameterList.__iter__: _parameter_list_iter,
}


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
            return self.modules[_position(key, len(self.modules))]
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

    def bool_value(self, tx) -> bool:
        return bool(self.modules)

    def reconstruct(self, codegen) -> None:
        raise Unsupported("Unsupported mutation", f"a slice of a {self.kind.__qualname__} escapes the frame")


# Read on every parameter and submodule lookup: bound once here rather than imported per call
# (it imports this module, so it comes last, as a module, not a name).
from . import builder  # noqa: E402
