"""`str()`, `repr()`, `format()` and f-strings of objects of user classes: the class's own
`__str__`, `__repr__` and `__format__`, written in Python, are traced; their results must
be strings, as CPython checks. `object.__repr__` (it prints the object's address) is not
modelled; `object.__str__` is `repr()`, `object.__format__` with an empty spec is `str()`.
"""

from __future__ import annotations

import collections
import functools
import types

from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable
from .exceptions import ExceptionVariable, raise_observed


def _python_method(obj, name: str) -> bool:
    from .user_objects import _lookup_class

    return isinstance(_lookup_class(obj.python_type(), name)[0], types.FunctionType)


def _checked(result: VariableTracker, name: str) -> VariableTracker:
    if not (result.is_python_constant() and isinstance(result.as_python_constant(), str)):
        if result.is_python_constant() or result.python_type() is not str:
            raise_observed(TypeError, f"{name} returned non-string (type {result.python_type().__name__})")
        raise Unsupported("Unsupported builtin call", f"{name} returned a string that is not a constant")
    return result


def text_of(tx, obj, kind: str, spec: VariableTracker | None = None) -> VariableTracker:
    """`str(obj)` (kind "str"), `repr(obj)` ("repr") or `format(obj, spec)` ("format")."""
    if kind == "format":
        spec = spec if spec is not None else ConstantVariable("")
        if _python_method(obj, "__format__"):
            return _checked(obj.call_special(tx, "__format__", [spec], {}), "__format__")
        if not (spec.is_python_constant() and spec.as_python_constant() == ""):
            raise_observed(TypeError, f"unsupported format string passed to {obj.python_type().__name__}.__format__")
        kind = "str"
    if kind == "str" and _python_method(obj, "__str__"):
        return _checked(obj.call_special(tx, "__str__", [], {}), "__str__")
    if _python_method(obj, "__repr__"):
        return _checked(obj.call_special(tx, "__repr__", [], {}), "__repr__")
    folded = _fold_text(tx, obj, "repr")
    if folded is not None:
        return folded
    raise Unsupported("Unsupported builtin call", f"{kind}() of a {obj.python_type().__qualname__} "
                                                  "(object.__repr__ shows its address)")


def text_handler(kind: str):
    """The builtin `str`, `repr` or `format` on a user object or an exception the trace made
    (None: neither)."""
    def handler(tx, args, kwargs) -> VariableTracker | None:
        from .user_objects import UserDefinedObjectVariable

        if kind != "format" and len(args) == 1 and not kwargs and isinstance(args[0], ExceptionVariable):
            return ConstantVariable(args[0].text(f"__{kind}__"))
        if kwargs or not args:
            return None
        if not isinstance(args[0], UserDefinedObjectVariable):
            if len(args) == 2 and kind == "format" and not (args[1].is_python_constant()
                                                             and args[1].as_python_constant() == ""):
                return None
            return _fold_text(tx, args[0], "str" if kind == "format" else kind) if len(args) <= 2 else None
        if kind != "format" and len(args) != 1 or kind == "format" and len(args) > 2:
            return None
        return text_of(tx, args[0], kind, args[1] if len(args) == 2 else None)
    return handler


def _fold_text(tx, obj: VariableTracker, kind: str) -> VariableTracker | None:
    """The text of an object whose type's `__repr__`/`__str__` are C code reading nothing the
    trace can change (a function, a module, a class, an object with object's `__repr__`),
    from the real object, which a guard pins: its address shows in the text."""
    from .object_keys import id_of
    from .user_functions import NestedFunctionVariable
    from .user_objects import UserDefinedObjectVariable

    if obj.is_python_constant():
        return None  # folded as a constant
    copy = _real_copy(obj, tx)
    if copy is not None:
        return ConstantVariable(str(copy) if kind == "str" else repr(copy))
    cls = obj.python_type()
    if not (isinstance(getattr(cls, "__repr__", None), types.WrapperDescriptorType)
            and cls.__repr__ in _ADDRESS_REPRS and cls.__str__ in _ADDRESS_STRS):
        return None
    if isinstance(obj, NestedFunctionVariable) or obj.source is not None or isinstance(obj, UserDefinedObjectVariable):
        return id_of(tx, obj, str if kind == "str" else repr)
    return None


# The C `__repr__`s of kinds whose text is their name and address only.
_ADDRESS_REPRS = {object.__repr__, types.FunctionType.__repr__, types.ModuleType.__repr__,
                  types.BuiltinFunctionType.__repr__, types.MethodType.__repr__, types.GeneratorType.__repr__}
_ADDRESS_STRS = {object.__str__}


def _real_copy(obj: VariableTracker, tx=None):
    """A real object of `obj`'s type holding its items, where they are all constants and the
    type's text is C code over the items (a deque, a defaultdict, a subclass of dict, list or
    OrderedDict without a Python `__repr__`), or None."""
    from .deques import DequeVariable
    from .default_dicts import DefaultDictVariable
    from .user_objects import UserDefinedObjectVariable, builtin_base_of

    def constants(items) -> bool:
        return all(item.is_python_constant() for item in items)

    from .user_functions import PartialVariable

    if isinstance(obj, PartialVariable) and constants([*obj.args, *obj.keywords.values()]) and tx is not None:
        from .object_keys import real_object

        known, fn = real_object(tx, obj.fn)
        if known:  # its text is its function's and arguments' reprs
            return functools.partial(fn, *(a.as_python_constant() for a in obj.args),
                                     **{k: v.as_python_constant() for k, v in obj.keywords.items()})
    if isinstance(obj, DequeVariable) and constants(obj.items):
        return collections.deque([item.as_python_constant() for item in obj.items], obj.maxlen)
    if isinstance(obj, DefaultDictVariable) and obj.factory.is_python_constant() and obj.is_python_constant_items():
        return collections.defaultdict(obj.factory.as_python_constant(),
                                       {k: v.as_python_constant() for k, v in obj.items.items()})
    if isinstance(obj, UserDefinedObjectVariable) and obj.storage is not None and constants(obj.storage.children()) \
            and not _python_method(obj, "__str__") and not _python_method(obj, "__repr__"):
        from .object_keys import holds_object_keys

        cls = obj.python_type()
        base = builtin_base_of(cls)
        if base is list:
            copy = list.__new__(cls)
            list.extend(copy, [item.as_python_constant() for item in obj.storage.items])
            return copy
        if base in (dict, collections.OrderedDict) and not any(holds_object_keys(k) for k in obj.storage.items):
            copy = base.__new__(cls)
            dict.update(copy, {k: v.as_python_constant() for k, v in obj.storage.items.items()}) \
                if base is dict else base.update(copy, {k: v.as_python_constant() for k, v in obj.storage.items.items()})
            return copy
    return None
