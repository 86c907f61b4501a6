"""VariableTrackers: the abstract values the translator moves around (see base.py)."""

from .base import NULL, MethodVariable, NullVariable, VariableTracker
from .builder import wrap, wrap_library_value
from .constant import ConstantVariable
from .containers import DictVariable, ListVariable, TupleVariable
from .builtins import BuiltinVariable
from .functions import PythonModuleVariable, TorchFunctionVariable
from .tensor import TensorVariable

__all__ = [
    "NULL", "BuiltinVariable", "ConstantVariable", "DictVariable", "ListVariable", "MethodVariable",
    "NullVariable",
    "PythonModuleVariable", "TensorVariable", "TorchFunctionVariable",
    "TupleVariable", "VariableTracker", "wrap", "wrap_library_value",
]
