"""`str()`, `repr()`, `format()` and f-strings of objects of user classes: the class's own
`__str__`, `__repr__` and `__format__`, written in Python, are traced; their results must
be strings, as CPython checks. `object.__repr__` (it prints the object's address) is not
modelled; `object.__str__` is `repr()`, `object.__format__` with an empty spec is `str()`.
"""

from __future__ import annotations

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
    raise Unsupported("Unsupported builtin call", f"{kind}() of a {obj.python_type().__qualname__} "
                                                  "(object.__repr__ shows its address)")


def text_handler(kind: str):
    """The builtin `str`, `repr` or `format` on a user object or an exception the trace made
    (None: neither)."""
    def handler(tx, args, kwargs) -> VariableTracker | None:
        from .user_objects import UserDefinedObjectVariable

        if kind != "format" and len(args) == 1 and not kwargs and isinstance(args[0], ExceptionVariable):
            return ConstantVariable(args[0].text(f"__{kind}__"))
        if kwargs or not args or not isinstance(args[0], UserDefinedObjectVariable):
            return None
        if kind != "format" and len(args) != 1 or kind == "format" and len(args) > 2:
            return None
        return text_of(tx, args[0], kind, args[1] if len(args) == 2 else None)
    return handler
