"""The functions of `dataclasses`, over trackers.

What depends only on the class folds: `fields` and `is_dataclass` read the class's
`__dataclass_fields__` while tracing; the class is pinned by whatever pinned the object's
type (a TYPE_MATCH guard, or the class an object made while tracing was made from).
`replace`, `asdict` and `astuple` read the object's fields as the real functions do and
build their results the same way (`replace` calls the class). The functions generated for a
dataclass (`__init__`, `__eq__`...) have code of their own, traced like the program's.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import DictVariable, ListVariable, NamedTupleVariable, TupleVariable
from .user_objects import UserDefinedObjectVariable, construct, raise_observed


def _class_of(value: VariableTracker) -> type:
    """The class `value` is, or is an instance of (what dataclasses' functions inspect)."""
    if value.is_python_constant() and isinstance(value.as_python_constant(), type):
        return value.as_python_constant()
    return value.python_type()


def _is_instance(value: VariableTracker) -> bool:
    return not (value.is_python_constant() and isinstance(value.as_python_constant(), type)) \
        and dataclasses.is_dataclass(value.python_type())


def _fields(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1 or kwargs:
        return None
    try:
        return ConstantVariable(dataclasses.fields(_class_of(args[0])))
    except TypeError as error:
        raise_observed(TypeError, str(error))


def _is_dataclass(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1 or kwargs:
        return None
    return ConstantVariable(dataclasses.is_dataclass(_class_of(args[0])))


def _replace(tx, args, kwargs) -> VariableTracker | None:
    if len(args) != 1:
        return None
    obj = args[0]
    if not _is_instance(obj):
        raise_observed(TypeError, "replace() should be called on dataclass instances")
    cls = obj.python_type()
    changes = dict(kwargs)
    for field in getattr(cls, "__dataclass_fields__").values():
        kind = getattr(field, "_field_type", None)
        if kind is getattr(dataclasses, "_FIELD_CLASSVAR"):
            continue
        if not field.init:
            if field.name in changes:
                raise_observed(ValueError, f"field {field.name} is declared with init=False, it cannot be "
                                           "specified with replace()")
            continue
        if field.name not in changes:
            if kind is getattr(dataclasses, "_FIELD_INITVAR") and field.default is dataclasses.MISSING:
                raise_observed(ValueError, f"InitVar {field.name!r} must be specified with replace()")
            changes[field.name] = obj.var_getattr(tx, field.name)
    cls_var = obj.var_getattr(tx, "__class__")  # `obj.__class__(**changes)`, as the real one calls it
    return construct(tx, cls_var, [], changes)


def _recurse(tx, value: VariableTracker, inner: Callable, as_pairs: bool) -> VariableTracker:
    """What `_asdict_inner` / `_astuple_inner` do to a value that is not a dataclass."""
    if isinstance(value, NamedTupleVariable) and hasattr(value.python_type(), "_fields"):
        return NamedTupleVariable([inner(v) for v in value.items], value.python_type())
    if type(value) in (TupleVariable, ListVariable):
        return type(value)([inner(v) for v in value.items])
    if type(value) is DictVariable:
        return DictVariable({k: inner(v) for k, v in value.items.items()})
    if value.is_python_constant() and type(value.as_python_constant()).__module__ == "builtins" \
            and not isinstance(value.as_python_constant(), (list, dict, set)):
        return value  # copy.deepcopy of an immutable builtin value is the value itself
    raise Unsupported("Unsupported builtin call", f"dataclasses {'asdict' if as_pairs else 'astuple'} "
                                                  f"deep-copies {value}")


def _factory(tx, factory: VariableTracker | None, items: list[VariableTracker], pairs: bool) -> VariableTracker:
    if factory is None:
        if pairs:
            return DictVariable({item.items[0].as_python_constant(): item.items[1] for item in items})
        return TupleVariable(items)
    return factory.call_function(tx, [ListVariable(items)], {})


def _as_container(pairs: bool) -> Callable:
    keyword = "dict_factory" if pairs else "tuple_factory"

    def handler(tx, args, kwargs) -> VariableTracker | None:
        factory = kwargs.pop(keyword, None)
        if len(args) != 1 or kwargs:
            return None
        if not _is_instance(args[0]):
            raise_observed(TypeError, f"{'asdict' if pairs else 'astuple'}() should be called on dataclass instances")

        def inner(value: VariableTracker) -> VariableTracker:
            if isinstance(value, UserDefinedObjectVariable) and _is_instance(value):
                items = []
                for field in dataclasses.fields(value.python_type()):
                    item = inner(value.var_getattr(tx, field.name))
                    items.append(TupleVariable([ConstantVariable(field.name), item]) if pairs else item)
                return _factory(tx, factory, items, pairs)
            return _recurse(tx, value, inner, pairs)
        return inner(args[0])
    return handler


DATACLASS_HANDLERS: dict[Any, Callable] = {
    dataclasses.fields: _fields,
    dataclasses.is_dataclass: _is_dataclass,
    dataclasses.replace: _replace,
    dataclasses.asdict: _as_container(pairs=True),
    dataclasses.astuple: _as_container(pairs=False),
}
