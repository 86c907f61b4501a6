"""Making objects of user classes while tracing, and what the C methods of `object` do to them.

`cls(*args, **kwargs)` runs as `type.__call__` does: the class's `__new__` (a Python
`__new__` is inlined; the builtin one of `object`, `dict` or `list` makes a record, a
`NewObjectVariable`), then, if the result is an instance of `cls`, its `__init__` (inlined, or
the builtin one). Metaclasses that only add behaviour when the class is made (ABCMeta, a
`__setattr__` on the class) leave instances ordinary; one that defines `__call__` is not modelled.

The C methods of `object` reached through `super()`, through the class (`object.__setattr__
(self, ...)`, as frozen dataclasses do) or bound to an instance are the generic operations on
the object's record: `__getattribute__`, `__setattr__` and `__delattr__` skip the class's own
hooks. Those of dict, OrderedDict and list act on a subclass's storage (dict_subclass.py).

An object made while tracing that outlives the graph is rebuilt by `rebuild`: the builtin
`__new__`, kept in a temporary at once (so an object that refers to itself, or is reached
twice, is one object), then its items and its `__dict__`, set with calls that bypass the
class's `__setitem__` and `__setattr__`, in the order the trace made them.
"""

from __future__ import annotations

import collections
import operator
import types
from typing import Any

from ..exc import ObservedException, Unsupported
from ..source import AttrSource
from ..bytecode import emit
from .base import VariableTracker
from .constant import ConstantVariable
from .iterators import IteratorVariable
from .user_objects import (_MISSING, SOLID_BASES, NewObjectVariable, UserDefinedObjectVariable, _lookup_class,
                           _user_function, is_raised, raise_observed)

_HEAPTYPE = 1 << 9
_SLOT_TYPES = (types.WrapperDescriptorType, types.MethodDescriptorType)


def builtin_base(cls: type) -> type | None:
    """The builtin class whose layout instances of `cls` have (the first class in the MRO
    that is not written in Python), if it is one of SOLID_BASES."""
    solid = next(klass for klass in cls.__mro__ if not klass.__flags__ & _HEAPTYPE)
    return solid if solid in SOLID_BASES else None


def slot_owner(attr: Any) -> type | None:
    """The builtin class a C method belongs to, when it is one whose methods are modelled."""
    if isinstance(attr, _SLOT_TYPES) and attr.__objclass__ in SOLID_BASES:
        return attr.__objclass__
    return None


def ordinary_metaclass(cls: type) -> bool:
    """Whether making and reading instances of `cls` is untouched by its metaclass."""
    meta = type(cls)
    return (_lookup_class(meta, "__call__")[0] is type.__dict__["__call__"]
            and _lookup_class(meta, "__getattribute__")[0] is type.__dict__["__getattribute__"]
            and _lookup_class(meta, "__getattr__")[0] is _MISSING)


# ---- making objects ---------------------------------------------------------------------------

def construct_object(tx, cls_var: VariableTracker, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> VariableTracker:
    cls = cls_var.as_python_constant()
    what = f"creating a {cls.__qualname__} while tracing"
    if not ordinary_metaclass(cls) or builtin_base(cls) is None:
        raise Unsupported("Unsupported builtin call", what)
    new, _ = _lookup_class(cls, "__new__")
    if isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        source = AttrSource(cls_var.source, "__new__") if cls_var.source is not None else None
        obj = _user_function(tx, new.__func__, source).call_function(tx, [cls_var, *args], kwargs)
        if not (isinstance(obj, UserDefinedObjectVariable) and issubclass(obj.python_type(), cls)):
            return obj  # type.__call__ runs __init__ only on an instance of the class
    elif getattr(new, "__self__", None) in SOLID_BASES:
        init, _ = _lookup_class(cls, "__init__")
        if (args or kwargs) and init is object.__init__:
            raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}() takes no arguments")
        obj = make_instance(tx, cls, cls_var.source)
    else:
        raise Unsupported("Unsupported builtin call", f"{what}: its __new__ is {type(new).__qualname__}")
    init, _ = _lookup_class(cls, "__init__")
    if init is object.__init__:
        return obj  # it takes any arguments once __new__ is the class's own
    if isinstance(init, types.FunctionType):
        source = AttrSource(cls_var.source, "__init__") if cls_var.source is not None else None
        result = _user_function(tx, init, source, (cls, "__init__")).call_function(tx, [obj, *args], kwargs)
        if not (result.is_python_constant() and result.as_python_constant() is None):
            raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}.__init__() returned a value")
    elif slot_owner(init) is not None:
        SlotMethodVariable(obj, slot_owner(init), "__init__").call_function(tx, args, kwargs)
    else:
        raise Unsupported("Unsupported builtin call", f"{what}: its __init__ is {type(init).__qualname__}")
    return obj


def make_instance(tx, cls: type, class_source) -> NewObjectVariable:
    """What the builtin `__new__` makes: an empty record (and storage) of class `cls`."""
    from .dict_subclass import new_storage

    base = builtin_base(cls)
    if base is None or not ordinary_metaclass(cls):
        raise Unsupported("Unsupported builtin call", f"creating a {cls.__qualname__} while tracing")
    try:
        stand_in = base.__new__(cls)  # C code: no user code runs
    except TypeError as error:  # an abstract class, say: eager raises it
        raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}(): {error}") from None
    return NewObjectVariable(stand_in, class_source, new_storage(base))


class NewFunctionVariable(VariableTracker):
    """`object.__new__` (or dict's, list's) reached from a Python `__new__`: `super().__new__(cls)`."""

    __slots__ = ("owner",)

    def __init__(self, owner: type) -> None:
        super().__init__()
        self.owner = owner

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if not args or not args[0].is_python_constant() or not isinstance(args[0].as_python_constant(), type):
            raise Unsupported("Unsupported builtin call", f"{self.owner.__name__}.__new__ without a class")
        cls = args[0].as_python_constant()
        if self.owner is object and (len(args) > 1 or kwargs):
            raise Unsupported("Unsupported exception handling", "object.__new__() takes exactly one argument")
        base = builtin_base(cls)
        if base is not self.owner and not (self.owner is dict and base is collections.OrderedDict):
            raise Unsupported("Unsupported exception handling", f"{self.owner.__name__}.__new__({cls.__qualname__})")
        return make_instance(tx, cls, args[0].source)


# ---- the C methods of the builtin bases -------------------------------------------------------

class SlotMethodVariable(VariableTracker):
    """A C method of object, dict, OrderedDict or list bound to a user object: what
    `super().__setattr__`, `object.__setattr__(self, ...)` or `self.keys` of a dict subclass
    reach."""

    __slots__ = ("obj", "owner", "name")

    def __init__(self, obj: UserDefinedObjectVariable, owner: type, name: str) -> None:
        super().__init__()
        self.obj, self.owner, self.name = obj, owner, name

    def python_type(self) -> type:
        if isinstance(self.owner.__dict__[self.name], types.MethodDescriptorType):
            return types.BuiltinMethodType
        return types.MethodWrapperType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.owner is types.SimpleNamespace and self.name in ("__init__", "__eq__", "__ne__"):
            return _namespace_method(tx, self.obj, self.name, list(args), dict(kwargs))
        if self.owner in (object, types.SimpleNamespace) or self.name == "__getattribute__":
            return _object_method(tx, self.obj, self.name, list(args), dict(kwargs))  # their hooks are object's
        from .dict_subclass import storage_method

        return storage_method(tx, self.obj, self.owner, self.name, list(args), dict(kwargs))

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(self.owner.__dict__[self.name].__get__)  # the bound method, remade
        codegen.reconstruct(self.obj)
        codegen.call(1)

    def __repr__(self) -> str:
        return f"SlotMethodVariable({self.owner.__name__}.{self.name} of {self.obj!r})"


class UnboundSlotMethodVariable(VariableTracker):
    """`object.__setattr__`, `dict.__setitem__`... read from the builtin class: called with a
    user object first, it is that object's slot method; with a plain dict or list, its method."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: type, name: str, source=None) -> None:
        super().__init__(source)
        self.owner, self.name = owner, name

    def python_type(self) -> type:
        return type(self.owner.__dict__[self.name])

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if not args:
            raise Unsupported("Unsupported exception handling",
                              f"{self.owner.__name__}.{self.name}() needs an argument")
        first = args[0]
        if isinstance(first, UserDefinedObjectVariable) and issubclass(first.python_type(), self.owner):
            return SlotMethodVariable(first, self.owner, self.name).call_function(tx, args[1:], kwargs)
        if self.owner is not object and not isinstance(first, UserDefinedObjectVariable) \
                and first.python_type() is self.owner:
            # `str.isalnum(s)`, `set.difference(a, b)`, `dict.get(d, k)`: the value's own method
            return first.call_method(tx, self.name, list(args[1:]), dict(kwargs))
        raise Unsupported("Unsupported builtin call", f"{self.owner.__name__}.{self.name} on {first}")

    def reconstruct(self, codegen) -> None:
        codegen.load_const(self.owner.__dict__[self.name])


def builtin_class_attribute(cls: type, name: str, source) -> VariableTracker | None:
    """`object.name`, `dict.name`... when it is a method modelled on user objects."""
    if name == "fromkeys":
        from .dict_views import fromkeys_of

        return fromkeys_of(cls)
    if cls in _VALUE_TYPES and name != "__new__":
        attr = _lookup_class(cls, name)[0]
        if isinstance(attr, _SLOT_TYPES) and attr.__objclass__ is cls:
            return UnboundSlotMethodVariable(cls, name, source)
        return None
    if cls not in SOLID_BASES:
        return None
    if name == "__new__":
        return NewFunctionVariable(dict if cls is collections.OrderedDict else cls)
    owner = slot_owner(_lookup_class(cls, name)[0])
    return UnboundSlotMethodVariable(owner, name, source) if owner is not None else None


# Builtin value types whose methods, read from the class, apply to a value of exactly the type.
_VALUE_TYPES = frozenset({str, bytes, int, float, complex, tuple, set, frozenset})


def _object_method(tx, obj: UserDefinedObjectVariable, name: str, args: list, kwargs: dict) -> VariableTracker:
    def the_name() -> str:
        if not args or not args[0].is_python_constant() or not isinstance(args[0].as_python_constant(), str):
            raise Unsupported("Unsupported builtin call", f"object.{name} with a name that is not a constant str")
        return args[0].as_python_constant()

    if kwargs:
        raise Unsupported("Unsupported exception handling", f"object.{name}() takes no keyword arguments")
    if name == "__getattribute__" and len(args) == 1:
        return obj.generic_getattr(tx, the_name())
    if name == "__setattr__" and len(args) == 2:
        obj.generic_setattr(tx, the_name(), args[1], bypass=True)
        return ConstantVariable(None)
    if name == "__delattr__" and len(args) == 1:
        obj.generic_delattr(tx, the_name())
        return ConstantVariable(None)
    if name == "__init__":
        if args:
            raise Unsupported("Unsupported exception handling", "object.__init__() takes exactly one argument")
        return ConstantVariable(None)
    if name in ("__eq__", "__ne__") and len(args) == 1:
        from .builtins import same_object

        if name == "__eq__":
            return ConstantVariable(True) if same_object(tx, obj, args[0]) else ConstantVariable(NotImplemented)
        equal = obj.call_special(tx, "__eq__", args, {})  # object.__ne__ inverts the type's __eq__
        if equal.is_python_constant() and equal.as_python_constant() is NotImplemented:
            return equal
        return ConstantVariable(not equal.bool_value(tx))
    if name in ("__lt__", "__le__", "__gt__", "__ge__") and len(args) == 1:
        return ConstantVariable(NotImplemented)
    raise Unsupported("Unsupported method call", f"object.{name} on {obj}")


def _namespace_method(tx, obj: UserDefinedObjectVariable, name: str, args: list, kwargs: dict) -> VariableTracker:
    """SimpleNamespace's `__init__(**kwargs)` sets the attributes; `==` compares them."""
    if name == "__init__":
        if args:
            raise Unsupported("Unsupported builtin call", "SimpleNamespace() with a positional mapping")
        for key, value in kwargs.items():
            obj.record_attr(tx, key, value, generic=True)
        return ConstantVariable(None)
    (other,) = args
    if not (isinstance(other, UserDefinedObjectVariable) and issubclass(other.python_type(), types.SimpleNamespace)):
        return ConstantVariable(NotImplemented)
    from .containers import values_equal

    mine, theirs = obj.instance_dict_keys(tx), other.instance_dict_keys(tx)
    equal = sorted(mine) == sorted(theirs) and all(
        values_equal(tx, obj.generic_getattr(tx, key), other.generic_getattr(tx, key)) for key in mine)
    return ConstantVariable(equal == (name == "__eq__"))


# ---- operators ---------------------------------------------------------------------------------

_BINARY = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"), operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"), operator.matmul: ("__matmul__", "__rmatmul__"),
    operator.and_: ("__and__", "__rand__"), operator.or_: ("__or__", "__ror__"),
    operator.xor: ("__xor__", "__rxor__"), operator.lshift: ("__lshift__", "__rlshift__"),
    operator.rshift: ("__rshift__", "__rrshift__"),
    operator.eq: ("__eq__", "__eq__"), operator.ne: ("__ne__", "__ne__"),
    operator.lt: ("__lt__", "__gt__"), operator.gt: ("__gt__", "__lt__"),
    operator.le: ("__le__", "__ge__"), operator.ge: ("__ge__", "__le__"),
}
_INPLACE = {
    operator.iadd: ("__iadd__", operator.add), operator.isub: ("__isub__", operator.sub),
    operator.imul: ("__imul__", operator.mul), operator.itruediv: ("__itruediv__", operator.truediv),
    operator.ifloordiv: ("__ifloordiv__", operator.floordiv), operator.imod: ("__imod__", operator.mod),
    operator.ipow: ("__ipow__", operator.pow), operator.imatmul: ("__imatmul__", operator.matmul),
    operator.iand: ("__iand__", operator.and_), operator.ior: ("__ior__", operator.or_),
    operator.ixor: ("__ixor__", operator.xor), operator.ilshift: ("__ilshift__", operator.lshift),
    operator.irshift: ("__irshift__", operator.rshift),
}
_COMPARISONS = frozenset({operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge})
_UNARY = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__", operator.abs: "__abs__",
          abs: "__abs__"}
# Builtins that call one special method of their argument, and what they check its result is.
_CONVERSIONS = {int: ("__int__", int), float: ("__float__", float), operator.index: ("__index__", int),
                hash: ("__hash__", int), round: ("__round__", None), complex: ("__complex__", complex)}


def as_index(tx, value: VariableTracker) -> VariableTracker:
    """`operator.index(value)` for an object whose class defines `__index__` (what indexing
    a sequence or a tensor, `range()` and slice bounds call); other values as they are."""
    if isinstance(value, UserDefinedObjectVariable) and value.has_special("__index__"):
        return user_builtin(tx, operator.index, [value], {})
    return value


def user_builtin(tx, fn, args: list[VariableTracker], kwargs: dict) -> VariableTracker | None:
    """A builtin on a user object that CPython answers with the object's special method:
    abs(), int(), float(), round(), hash(), operator.index(), divmod(), pow(); range()
    and slice() of objects with `__index__`. None when `fn` is not one of these."""
    if fn in _UNARY and len(args) == 1 and not kwargs:
        return _special_or_fail(tx, args[0], _UNARY[fn], [])
    if fn is pow and len(args) == 2 and not kwargs:
        return user_operator(tx, operator.pow, args)
    if fn is divmod and len(args) == 2 and not kwargs:
        a, b = args
        for left, name, right in ((a, "__divmod__", b), (b, "__rdivmod__", a)):
            result = _try_special(tx, left, name, right)
            if result is not None and not _not_implemented(result):
                return result
        raise_observed(TypeError, "unsupported operand type(s) for divmod()")
    if fn in (range, slice) and not kwargs:
        from .builtins import BuiltinVariable

        return BuiltinVariable(fn).call_function(tx, [as_index(tx, a) if fn is range else a for a in args], {})
    if fn not in _CONVERSIONS or kwargs or not args or not isinstance(args[0], UserDefinedObjectVariable):
        return None
    name, kind = _CONVERSIONS[fn]
    obj = args[0]
    if fn in (int, float) and not obj.has_special(name) and obj.has_special("__index__"):
        name, kind = "__index__", int
    if fn is hash and (_lookup_class(obj.python_type(), "__hash__")[0] is None):
        raise_observed(TypeError, f"unhashable type: '{obj.python_type().__name__}'")
    if fn is hash and not isinstance(_lookup_class(obj.python_type(), "__hash__")[0], types.FunctionType):
        return None  # the identity hash: not modelled
    if not obj.has_special(name):
        raise_observed(TypeError, f"{getattr(fn, '__name__', fn)}() argument must be a number, not "
                                  f"'{obj.python_type().__name__}'")
    result = obj.call_special(tx, name, list(args[1:]), {})
    if kind is not None and not issubclass(result.python_type(), kind):
        raise_observed(TypeError, f"{name} returned non-{kind.__name__} (type {result.python_type().__name__})")
    if fn in (int, operator.index) and result.python_type() is not int:
        result = ConstantVariable(int(result.as_python_constant()))  # an int subclass becomes an int
    return result


def user_operator(tx, fn, args: list[VariableTracker]) -> VariableTracker:
    """An operator with a user object among its operands, by Python's protocol: the left
    operand's method, then the right one's reflected method, each returning NotImplemented
    to pass; `==` and `!=` fall back to identity."""
    if len(args) == 1 and fn in _UNARY:
        return _special_or_fail(tx, args[0], _UNARY[fn], [])
    if len(args) != 2:
        raise Unsupported("Unsupported builtin call", f"operator {getattr(fn, '__name__', fn)} on a user object")
    a, b = args
    if fn in _INPLACE:
        name, fn = _INPLACE[fn]
        if isinstance(a, UserDefinedObjectVariable) and a.has_special(name):
            result = a.call_special(tx, name, [b], {})
            if not _not_implemented(result):
                return result
    if fn not in _BINARY:
        raise Unsupported("Unsupported builtin call", f"operator {getattr(fn, '__name__', fn)} on a user object")
    forward, reflected = _BINARY[fn]
    order = [(a, forward, b), (b, reflected, a)]
    type_a, type_b = a.python_type(), b.python_type()
    if isinstance(b, UserDefinedObjectVariable) and type_b is not type_a and issubclass(type_b, type_a) \
            and (fn in _COMPARISONS or _lookup_class(type_b, reflected)[0] is not _lookup_class(type_a, reflected)[0]):
        order.reverse()  # a subclass's reflected method goes first (for a comparison, always)
    for left, name, right in order:
        result = _try_special(tx, left, name, right)
        if result is not None and not _not_implemented(result):
            return result
    if fn in (operator.eq, operator.ne):
        from .builtins import same_object

        return ConstantVariable(same_object(tx, a, b) == (fn is operator.eq))
    raise Unsupported("Unsupported exception handling",
                      f"unsupported operand types for {forward}: {a.python_type().__name__} and "
                      f"{b.python_type().__name__}")


def _try_special(tx, obj: VariableTracker, name: str, other: VariableTracker) -> VariableTracker | None:
    """`type(obj).name(obj, other)`, or None when that is NotImplemented without running."""
    if isinstance(obj, UserDefinedObjectVariable):
        return obj.call_special(tx, name, [other], {}) if obj.has_special(name) else None
    if obj.is_python_constant() and type(obj.as_python_constant()).__module__ == "builtins":
        return None  # builtin values return NotImplemented for objects they do not know
    raise Unsupported("Unsupported builtin call", f"{name} of {obj} with a user object")


def _special_or_fail(tx, obj: VariableTracker, name: str, args) -> VariableTracker:
    if isinstance(obj, UserDefinedObjectVariable) and obj.has_special(name):
        return obj.call_special(tx, name, args, {})
    raise Unsupported("Unsupported exception handling", f"bad operand type for {name}: {obj}")


def _not_implemented(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is NotImplemented


# ---- rebuilding after the graph ---------------------------------------------------------------

def _set_attributes(obj: Any, attributes: dict) -> None:
    """Called by generated code: the instance `__dict__` entries, bypassing `__setattr__`."""
    object.__getattribute__(obj, "__dict__").update(attributes)


def rebuild(codegen, obj: NewObjectVariable) -> None:
    from .dict_subclass import fill_storage

    cls = obj.python_type()
    codegen.load_callable_const(builtin_base(cls).__new__)
    codegen.load_const(cls)
    codegen.call(1)
    codegen.hold_made(obj)
    if obj.storage is not None:
        fill_storage(codegen, obj)
    for name, value in obj.slots.items():
        member, _ = _lookup_class(cls, name)  # the slot's own descriptor: no property can intercept
        codegen.load_callable_const(member.__set__)
        codegen.reconstruct(obj)
        codegen.reconstruct(value)
        codegen.call(2)
        codegen.pop_top()
    if obj.attrs:
        codegen.load_callable_const(_set_attributes)
        codegen.reconstruct(obj)
        for name, value in obj.attrs.items():
            codegen.load_const(name)
            codegen.reconstruct(value)
        codegen.build(dict, len(obj.attrs))
        codegen.call(2)
        codegen.pop_top()


# ---- iterating by index ---------------------------------------------------------------------------

# A __getitem__ that never raises IndexError would make the trace run forever.
MAX_INDEXED_ITEMS = 10_000


def resume_index_iteration(obj: Any, index: int):
    """Called by generated code: what is left of `Sequence.__iter__`'s generator over `obj`
    once it has yielded `obj[0]`...`obj[index - 1]` (the same loop, from `index`)."""
    try:
        while True:
            value = obj[index]
            yield value
            index += 1
    except IndexError:
        return


class IndexIteratorVariable(IteratorVariable):
    """Iterating a user object by index, `obj[0]`, `obj[1]`... until IndexError, one item per
    step as eagerly: Python's old sequence protocol (a real `iterator`), or the generator of
    `collections.abc.Sequence.__iter__`, which does the same."""

    __slots__ = ("obj", "index", "exhausted", "generator")

    def __init__(self, obj: UserDefinedObjectVariable, generator: bool) -> None:
        super().__init__()
        self.obj, self.generator = obj, generator
        self.index, self.exhausted = 0, False

    def python_type(self) -> type:
        return types.GeneratorType if self.generator else type(iter(_Empty()))

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def next_item(self, tx) -> VariableTracker | None:
        if self.exhausted:
            return None
        if self.index >= MAX_INDEXED_ITEMS:
            raise Unsupported("Unsupported frame", f"iterating over {self.index} items of {self.obj} by index")
        try:
            item = self.obj.call_special(tx, "__getitem__", [ConstantVariable(self.index)], {})
        except ObservedException as raised:
            if not is_raised(raised, IndexError):
                raise
            self.exhausted = True
            return None
        self.index += 1
        return item

    def reconstruct(self, codegen) -> None:
        if self.generator:
            codegen.load_callable_const(resume_index_iteration)
            codegen.reconstruct(self.obj)
            codegen.load_const(self.index)
            codegen.call(2)
            if self.exhausted:  # closed before it starts: finished, and runs nothing
                codegen.append(*emit.create_dup_top(), *emit.create_load_method("close"), *emit.create_call(0))
                codegen.pop_top()
        elif self.exhausted:
            codegen.load_callable_const(exhausted_index_iterator)
            codegen.call(0)
        else:
            codegen.load_callable_const(iter)
            codegen.reconstruct(self.obj)
            codegen.call(1)
            codegen.append(*emit.create_dup_top(), *emit.create_load_method("__setstate__"))
            codegen.load_const(self.index)
            codegen.append(*emit.create_call(1))
            codegen.pop_top()


class _Empty:
    def __getitem__(self, index):
        raise IndexError(index)


def exhausted_index_iterator():
    """Called by generated code: an old-protocol `iterator` that has reached its end (one
    lets go of its object then, so which object it walked no longer matters)."""
    iterator = iter(_Empty())
    for _ in iterator:
        pass
    return iterator
