"""Tuples, namedtuples and lists whose items are VariableTrackers.

Containers made while tracing are plain data here: `append` edits the tracker. A container
that existed before the call (it has a source) is the caller's object: a change to it is
recorded in the side-effect ledger, which replays it after the graph.

Methods follow CPython exactly, errors included: an error the program could catch (popping
an empty list, removing a missing item) is raised as the program's own exception, so its
`try` blocks see it; anything we cannot decide without data (comparing tensors) is
Unsupported. Dicts and sets are in `dicts.py`.
"""

from __future__ import annotations

import collections
import operator
import types
from typing import Any

from ..bytecode import versions
from ..exc import Unsupported
from .base import MethodVariable, VariableTracker, is_method_of
from .constant import ConstantVariable


def raise_observed(cls: type, *args: Any) -> None:
    """Raises `cls(*args)` in the traced program, where its handlers can catch it."""
    from .exceptions import raise_observed as raise_

    raise_(cls, *args)


def constant_int(value: VariableTracker, what: str) -> int:
    """An index or count argument, as CPython takes it (`__index__`); a symbolic one is
    guarded to its value."""
    number = value.as_python_constant()
    if not hasattr(type(number), "__index__"):
        raise_observed(TypeError, f"{what} must be an integer, not {type(number).__name__}")
    return number.__index__()


def values_equal(tx, a: VariableTracker, b: VariableTracker) -> bool:
    """`a == b` as list.remove, list.index, `in`... compare: identity first, then equality."""
    if a is b:
        return True
    if a.is_python_constant() and b.is_python_constant():
        return a.as_python_constant() == b.as_python_constant()
    from .builtins import apply_operator, identity_key, keep_distinct
    from .tensor import SymNodeVariable

    if any(isinstance(v, SymNodeVariable) for v in (a, b)) \
            and all(isinstance(v, SymNodeVariable) or _is_number(v) for v in (a, b)):
        # A symbolic number compared with a number: `s == 1` is a guard, not its value.
        return apply_operator(tx, operator.eq, a, b).bool_value(tx)
    key_a, key_b = identity_key(tx, a), identity_key(tx, b)
    if key_a is not None and key_a == key_b:
        return True
    if key_a is not None and key_b is not None and _compares_by_identity(a) and _compares_by_identity(b):
        keep_distinct(tx, a, b)
        return False
    from .dicts import DictVariable

    if isinstance(a, BaseSequenceVariable) and isinstance(b, BaseSequenceVariable):
        # Lists equal lists and tuples (namedtuples too) equal tuples, item by item.
        if _family(a.kind) is not _family(b.kind) or len(a.items) != len(b.items):
            return False
        return all(values_equal(tx, x, y) for x, y in zip(a.items, b.items))
    if isinstance(a, DictVariable) and isinstance(b, DictVariable):
        return a.items.keys() == b.items.keys() and all(values_equal(tx, v, b.items[k]) for k, v in a.items.items())
    raise Unsupported("Unsupported builtin call", f"comparing {a} with {b} needs their values")


def _family(kind: type) -> type:
    """Sequences that can be equal: lists with lists, deques with deques, tuples (namedtuples
    too) with tuples."""
    return kind if kind in (list, collections.deque) else tuple


def _is_number(value: VariableTracker) -> bool:
    return value.is_python_constant() and type(value.as_python_constant()) in (int, float, bool)


def _compares_by_identity(value: VariableTracker) -> bool:
    return getattr(value.python_type(), "__eq__", None) is object.__eq__


class SortKey:
    """Orders trackers as Python orders their values (only `<`, as list.sort uses),
    comparing tuples item by item, so `sorted(d.items())` works while only the (constant)
    keys are ever compared. Values Python cannot order raise TypeError, as eagerly."""

    __slots__ = ("tx", "value")

    def __init__(self, tx, value: VariableTracker) -> None:
        self.tx, self.value = tx, value

    def __lt__(self, other: "SortKey") -> bool:
        a, b = self.value, other.value
        if isinstance(a, TupleVariable) and isinstance(b, TupleVariable):
            for x, y in zip(a.items, b.items):
                if not values_equal(self.tx, x, y):
                    return SortKey(self.tx, x) < SortKey(self.tx, y)
            return len(a.items) < len(b.items)
        if a.is_python_constant() and b.is_python_constant():
            return a.as_python_constant() < b.as_python_constant()
        from .user_objects import UserDefinedObjectVariable

        if isinstance(a, UserDefinedObjectVariable) or isinstance(b, UserDefinedObjectVariable):
            import operator

            from .builtins import apply_operator

            return apply_operator(self.tx, operator.lt, a, b).bool_value(self.tx)  # the objects' own __lt__
        raise Unsupported("Unsupported builtin call", "sorting values that are not constants")


def sort_order(tx, keys: list[VariableTracker], reverse: bool) -> list[int]:
    """The permutation a stable sort of `keys` makes, as list.sort makes it."""
    try:
        return sorted(range(len(keys)), key=lambda i: SortKey(tx, keys[i]), reverse=reverse)
    except TypeError as error:
        raise_observed(TypeError, str(error))


class BaseSequenceVariable(VariableTracker):
    __slots__ = ("items",)
    kind: type = tuple

    def __init__(self, items: list[VariableTracker], source=None) -> None:
        super().__init__(source)
        self.items = list(items)

    def python_type(self) -> type:
        return self.kind

    def children(self) -> list[VariableTracker]:
        return self.items

    def is_python_constant(self) -> bool:
        return all(item.is_python_constant() for item in self.items)

    def as_python_constant(self):
        return self.kind(item.as_python_constant() for item in self.items)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if is_method_of(self.kind, name):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def plain(self, items: list[VariableTracker]) -> BaseSequenceVariable:
        """A new sequence of the builtin kind (slicing or adding a namedtuple gives a tuple)."""
        return ListVariable(items) if isinstance(self, ListVariable) else TupleVariable(items)

    def getitem(self, tx, index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant()
        if isinstance(key, slice):
            return self.plain(self.items[key])
        try:
            return self.items[key]
        except (IndexError, TypeError) as error:
            # The message names the real type ("tuple index out of range").
            raise_observed(type(error), str(error).replace("list", self.kind.__name__, 1))

    def bool_value(self, tx) -> bool:
        return bool(self.items)

    def index_of(self, tx, value: VariableTracker, start: int = 0, stop: int | None = None) -> int | None:
        positions = range(len(self.items))[slice(start, stop)]
        return next((i for i in positions if values_equal(tx, self.items[i], value)), None)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if kwargs:
            raise Unsupported("Unsupported method call", f"{self.kind.__name__}.{name} with keyword arguments")
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(self.index_of(tx, args[0]) is not None)
        if name == "count" and len(args) == 1:
            return ConstantVariable(sum(1 for item in self.items if values_equal(tx, item, args[0])))
        if name == "index" and 1 <= len(args) <= 3:
            bounds = [constant_int(a, "slice indices") for a in args[1:]]
            found = self.index_of(tx, args[0], *bounds)
            if found is None:
                raise_observed(ValueError, f"{self.kind.__name__}.index(x): x not in {self.kind.__name__}"
                               if self.kind is tuple else f"{args[0].as_python_constant()!r} is not in list")
            return ConstantVariable(found)
        raise Unsupported("Unsupported method call", f"{self.kind.__name__}.{name}")

    def reconstruct(self, codegen) -> None:
        # A container with a source is the caller's unmodified object: hand back that object.
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(self.kind, len(self.items))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(BaseSequenceVariable):
    __slots__ = ()
    kind = tuple


# ---- lists ------------------------------------------------------------------------------------

def _list_append(lst: "ListVariable", tx, value) -> None:
    lst.items.append(value)


def _list_extend(lst: "ListVariable", tx, iterable) -> None:
    if isinstance(iterable, BaseSequenceVariable):
        lst.items.extend(list(iterable.items))  # a list or tuple is read first: `xs.extend(xs)`
        return
    # Any other iterable is consumed one item at a time, each appended before the next is
    # made: a generator reading the list sees it grow.
    from .iterators import get_iterator

    iterator = get_iterator(tx, iterable)
    while (item := iterator.next_item(tx)) is not None:
        lst.items.append(item)


def _list_insert(lst: "ListVariable", tx, index, value) -> None:
    lst.items.insert(constant_int(index, "list indices"), value)


def _list_pop(lst: "ListVariable", tx, *index) -> VariableTracker:
    if not lst.items:
        raise_observed(IndexError, "pop from empty list")
    position = constant_int(index[0], "list indices") if index else -1
    if not -len(lst.items) <= position < len(lst.items):
        raise_observed(IndexError, "pop index out of range")
    return lst.items.pop(position)


def _list_remove(lst: "ListVariable", tx, value) -> None:
    found = lst.index_of(tx, value)
    if found is None:
        raise_observed(ValueError, "list.remove(x): x not in list")
    del lst.items[found]


def _list_clear(lst: "ListVariable", tx) -> None:
    lst.items.clear()


def _list_reverse(lst: "ListVariable", tx) -> None:
    lst.items.reverse()


def _list_sort(lst: "ListVariable", tx, *args, key=None, reverse=None, **unexpected) -> None:
    if args:
        raise_observed(TypeError, "sort() takes no positional arguments")
    if unexpected:
        raise_observed(TypeError, versions.SORT_BAD_KEYWORD.format(next(iter(unexpected))))
    items, lst.items = lst.items, []  # CPython empties the list while it sorts: `key` sees []
    try:
        if key is None or (key.is_python_constant() and key.as_python_constant() is None):
            keys = items
        else:
            keys = [key.call_function(tx, [item], {}) for item in items]  # once per item, in order
    except BaseException:
        lst.items = items
        raise
    if lst.items:
        raise Unsupported("Unsupported mutation", "a list changed by the key function of its own sort()")
    descending = bool(reverse.as_python_constant()) if reverse is not None else False
    lst.items = [items[i] for i in sort_order(tx, keys, descending)]


def _list_setitem(lst: "ListVariable", tx, index, value) -> None:
    key = index.as_python_constant()
    if isinstance(key, slice):
        from .iterators import unpack

        new = unpack(tx, value)
        try:
            lst.items[key] = new
        except ValueError as error:  # extended slice of another length
            raise_observed(ValueError, str(error))
        return
    position = constant_int(index, "list indices")
    if not -len(lst.items) <= position < len(lst.items):
        raise_observed(IndexError, "list assignment index out of range")
    lst.items[position] = value


def _list_delitem(lst: "ListVariable", tx, index) -> None:
    key = index.as_python_constant()
    if isinstance(key, slice):
        del lst.items[key]
        return
    position = constant_int(index, "list indices")
    if not -len(lst.items) <= position < len(lst.items):
        raise_observed(IndexError, "list assignment index out of range")
    del lst.items[position]


def _list_imul(lst: "ListVariable", tx, count) -> None:
    lst.items *= constant_int(count, "can't multiply sequence by non-int")


# The methods that change a list, with the arguments CPython accepts (keywords only for sort).
_LIST_MUTATORS = {
    "append": _list_append, "extend": _list_extend, "insert": _list_insert, "pop": _list_pop,
    "remove": _list_remove, "clear": _list_clear, "reverse": _list_reverse, "sort": _list_sort,
    "__setitem__": _list_setitem, "__delitem__": _list_delitem, "__imul__": _list_imul,
}
_LIST_ARITY = {"append": (1, 1), "extend": (1, 1), "insert": (2, 2), "pop": (0, 1), "remove": (1, 1),
               "clear": (0, 0), "reverse": (0, 0), "sort": (0, 99), "__setitem__": (2, 2),
               "__delitem__": (1, 1), "__imul__": (1, 1)}


class ListVariable(BaseSequenceVariable):
    __slots__ = ()
    kind = list

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        mutator = _LIST_MUTATORS.get(name)
        if mutator is not None:
            low, high = _LIST_ARITY[name]
            if (kwargs and name != "sort") or not low <= len(args) <= high:
                raise Unsupported("Unsupported method call", f"list.{name} with these arguments")
            if self.source is not None:
                tx.output.side_effects.mutated_list(self)
            result = mutator(self, tx, *args, **kwargs)
            return result if result is not None else ConstantVariable(None)
        if name == "copy" and not args and not kwargs:
            return ListVariable(list(self.items))
        return super().call_method(tx, name, args, kwargs)


# ---- namedtuples ------------------------------------------------------------------------------

class NamedTupleVariable(TupleVariable):
    """A namedtuple or a struct sequence (`torch.return_types.max`): a tuple with field names.

    A namedtuple subclass without `__slots__` has an instance `__dict__` too: its `__init__`
    and later assignments fill `attrs` (for one made while tracing), and its own methods and
    properties are looked up on the class as for any user object."""

    __slots__ = ("tuple_type", "attrs", "class_source", "instance_dict")

    def __init__(self, items: list[VariableTracker], tuple_type: type, source=None, class_source=None,
                 instance_dict: dict | None = None) -> None:
        redefined = redefined_tuple_behaviour(tuple_type) - {"__getitem__"}
        if redefined:
            # The model answers these as tuple does; only the class's own code would be right.
            raise Unsupported("Unsupported value type",
                              f"{tuple_type.__qualname__}, a tuple class redefining {', '.join(sorted(redefined))}",
                              "framegraph models a namedtuple or tuple subclass as a tuple with fields; "
                              "this class changes how a tuple behaves, so the code using it runs eagerly.")
        super().__init__(items, source)
        self.tuple_type = tuple_type
        self.attrs: dict[str, VariableTracker] = {}
        self.instance_dict = instance_dict  # the real `__dict__` of the caller's object, if any
        self.class_source = class_source if class_source is not None else (
            _type_source(source) if source is not None else None)

    def python_type(self) -> type:
        return self.tuple_type

    def children(self) -> list[VariableTracker]:
        return [*self.items, *self.attrs.values()]

    def is_python_constant(self) -> bool:
        return not self.attrs and super().is_python_constant()

    def as_python_constant(self):
        values = [item.as_python_constant() for item in self.items]
        return self.tuple_type(*values) if self._is_namedtuple() else self.tuple_type(values)

    def _is_namedtuple(self) -> bool:
        return hasattr(self.tuple_type, "_fields")

    def getitem(self, tx, index: VariableTracker) -> VariableTracker:
        if "__getitem__" in redefined_tuple_behaviour(self.tuple_type):
            return self.var_getattr(tx, "__getitem__").call_function(tx, [index], {})
        return super().getitem(tx, index)

    def _fields(self) -> tuple[str, ...]:
        return getattr(self.tuple_type, "_fields", None) or getattr(self.tuple_type, "__match_args__", ())

    def var_getattr(self, tx, name: str) -> VariableTracker:
        fields = self._fields()
        if name in fields:
            return self.items[fields.index(name)]
        if name in self.attrs:
            return self.attrs[name]
        if self.instance_dict is not None and name in self.instance_dict:
            from ..source import AttrSource
            from .builder import wrap

            return wrap(tx, self.instance_dict[name], AttrSource(self.source, name))
        if self._user_attribute(name):
            from .classes import class_attribute_of

            if self.instance_dict is not None:
                # Found on the class: an instance attribute of that name would hide it later.
                tx.output.class_reads.setdefault(self.source, set()).add(name)
            return class_attribute_of(tx, self, self.tuple_type, self.class_source, name)
        # A namedtuple's field names, or a structseq's (torch.return_types) counts of fields.
        if name in ("_fields", "_field_defaults", "n_fields", "n_sequence_fields", "n_unnamed_fields") \
                and hasattr(self.tuple_type, name):
            return ConstantVariable(getattr(self.tuple_type, name))
        if name == "__class__":
            return ConstantVariable(self.tuple_type, self.class_source)
        if is_method_of(self.tuple_type, name):
            return MethodVariable(self, name)
        if self.source is not None and _has_instance_dict(self.tuple_type):
            raise Unsupported("Unsupported attribute access",
                              f"{self.tuple_type.__qualname__}.{name} of a namedtuple the caller passed")
        raise_observed(AttributeError, f"{self.tuple_type.__name__!r} object has no attribute {name!r}")

    def _user_attribute(self, name: str) -> bool:
        """Whether the class attribute `name` comes from the program's own class body (a
        method, a property, a class constant), not from tuple or the namedtuple factory."""
        from ..trace_rules import is_inlineable, is_user_class

        for klass in self.tuple_type.__mro__:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                fn = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
                if isinstance(fn, types.FunctionType):
                    # the factory's own methods (_replace, _asdict...) are modelled here, not traced
                    return is_inlineable(fn) and fn.__code__.co_filename not in ("<string>", collections.__file__)
                special = (name.startswith("__") and name.endswith("__")) or name in ("_fields", "_field_defaults")
                return (is_user_class(klass) and not special and not callable(attr)
                        and type(attr).__name__ != "_tuplegetter")
        return False

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "_replace" and not args and self._is_namedtuple():
            fields = self._fields()
            unknown = [key for key in kwargs if key not in fields]
            if unknown:
                raise_observed(versions.NAMEDTUPLE_REPLACE_BAD_FIELD, f"Got unexpected field names: {unknown!r}")
            return NamedTupleVariable([kwargs.get(f, item) for f, item in zip(fields, self.items)],
                                      self.tuple_type, class_source=self.class_source)
        if name == "_asdict" and not args and not kwargs and self._is_namedtuple():
            from .dicts import DictVariable

            return DictVariable(dict(zip(self._fields(), self.items)))
        if self._user_attribute(name):
            return self.var_getattr(tx, name).call_function(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if not _has_instance_dict(self.tuple_type) or name in self._fields() or self._user_attribute(name):
            # What eager raises: fields are read-only, a plain namedtuple has no __dict__.
            dummy = tuple.__new__(self.tuple_type, [None] * len(self.items))
            try:
                setattr(dummy, name, None)
            except AttributeError as error:
                raise_observed(AttributeError, str(error))
            raise Unsupported("Unsupported mutation", f"assignment to {self.tuple_type.__qualname__}.{name}")
        if self.source is not None:
            raise Unsupported("Unsupported mutation",
                              f"attribute {name!r} of a {self.tuple_type.__qualname__} the caller passed")
        self.attrs[name] = value

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        # A namedtuple's own __new__ is `tuple.__new__(cls, (fields...))` written in Python;
        # calling tuple.__new__ directly builds the same object without a Python frame. A
        # struct sequence is built from one tuple by its type.
        if self._is_namedtuple() or not hasattr(self.tuple_type, "n_fields"):  # not a struct sequence: bypass __new__
            codegen.load_callable_const(tuple.__new__)
            codegen.load_const(self.tuple_type)
        else:
            codegen.load_callable_const(self.tuple_type)
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(tuple, len(self.items))
        codegen.call(1 if hasattr(self.tuple_type, "n_fields") and not self._is_namedtuple() else 2)
        from ..bytecode import create_instruction

        for name, value in self.attrs.items():
            codegen.append(create_instruction("COPY", arg=1))
            codegen.reconstruct(value)
            codegen.append(create_instruction("SWAP", arg=2), create_instruction("STORE_ATTR", argval=name))


# What the tuple model answers by itself (indexing, iteration, length, comparison, hashing,
# arithmetic, attribute hooks); a class redefining one of these behaves otherwise.
TUPLE_BEHAVIOUR = frozenset({
    "__getitem__", "__iter__", "__len__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__hash__", "__add__", "__radd__", "__mul__", "__rmul__", "__bool__", "__reversed__",
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "index", "count",
})
HEAPTYPE = 1 << 9


def redefined_tuple_behaviour(cls: type) -> frozenset:
    """The tuple behaviours that Python classes between `cls` and tuple redefine."""
    found: set = set()
    for klass in cls.__mro__:
        if klass is tuple or not klass.__flags__ & HEAPTYPE:
            break
        found.update(name for name in TUPLE_BEHAVIOUR.intersection(klass.__dict__)
                     if klass.__dict__[name] is not tuple.__dict__.get(name)  # `__hash__ = tuple.__hash__`
                     and type(klass.__dict__[name]) is not _FIELD_GETTER)  # a field named `index` or `count`
    return frozenset(found)


_FIELD_GETTER = type(collections.namedtuple("_Point", "x").x)


class TupleSlotMethodVariable(VariableTracker):
    """tuple's own method bound to a tuple subclass object (`super().__getitem__`): what the
    tuple model answers, bypassing the class's override."""

    __slots__ = ("obj", "name")

    def __init__(self, obj: NamedTupleVariable, name: str) -> None:
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.name == "__getitem__" and len(args) == 1 and not kwargs:
            return BaseSequenceVariable.getitem(self.obj, tx, args[0])
        return TupleVariable.call_method(self.obj, tx, self.name, args, kwargs)

    def children(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(getattr(tuple, self.name).__get__)
        codegen.reconstruct(self.obj)
        codegen.call(1)


def _type_source(source):
    from ..source import TypeSource

    return TypeSource(source)


def _has_instance_dict(cls: type) -> bool:
    return cls.__dictoffset__ != 0


def make_namedtuple(tx, cls_var: VariableTracker, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """`cls(*args)` for a namedtuple class whose `__new__` is the generated one; a subclass's
    `__init__` runs on the new instance, as `type.__call__` runs it. None for other classes."""
    cls = cls_var.as_python_constant()
    new_owner = next((k for k in cls.__mro__ if "__new__" in k.__dict__), None)
    if not (issubclass(cls, tuple) and hasattr(cls, "_fields") and new_owner is not None
            and "_make" in new_owner.__dict__):
        return None
    fields = cls._fields
    values = dict(zip(fields, args))
    for key, value in kwargs.items():
        if key in values or key not in fields:
            raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}() got an unexpected "
                                                                f"or repeated argument {key!r}")
        values[key] = value
    for name, default in getattr(cls, "_field_defaults", {}).items():
        values.setdefault(name, ConstantVariable(default))
    if len(args) > len(fields) or set(values) != set(fields):
        raise Unsupported("Unsupported exception handling", f"{cls.__qualname__}() arguments do not match its fields")
    obj = NamedTupleVariable([values[name] for name in fields], cls, class_source=cls_var.source)
    init = next(k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__)
    if init is not object.__init__:
        from ..trace_rules import is_inlineable

        if not isinstance(init, types.FunctionType) or not is_inlineable(init):
            raise Unsupported("Unsupported builtin call", f"creating a {cls.__qualname__} while tracing")
        from ..source import AttrSource
        from .user_functions import UserFunctionVariable

        source = AttrSource(cls_var.source, "__init__") if cls_var.source is not None else None
        UserFunctionVariable(init, source).call_function(tx, [obj, *args], kwargs)
    return obj


from .dicts import DictVariable, SetVariable  # noqa: E402  (they build on the sequences above)
