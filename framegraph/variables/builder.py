"""Turning a real value the frame can see into a VariableTracker, with the guards it needs.

`wrap` is the one door for program state (arguments, globals, closure values): every fact the
returned tracker exposes is guarded against the value reached through `source` on later calls.
`wrap_library_value` is for attributes of libraries such as torch, which are not program state.
"""

from __future__ import annotations

import collections
import enum
import functools
import inspect
import types
from typing import Any

import torch

from .. import config
from ..exc import Unsupported
from ..guards import GuardKind
from ..bytecode import versions
from ..source import (AttrSource, ItemSource, IteratorStateSource, LocalSource, MethodCallSource, Source,
                      StorageItemSource)
from ..polyfills import stand_in_for
from ..trace_rules import disabled_by_torch, is_allowed_in_graph, is_inlineable, is_user_class
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable, is_constant_type
from .containers import DictVariable, ListVariable, NamedTupleVariable, TupleVariable, redefined_tuple_behaviour
from .iterators import REDUCIBLE_ITERATORS, ListIteratorVariable, wrap_reduced_iterator
from .ctx_managers import (GRAD_MODE_CLASSES, DecoratedFunctionVariable, decorated_manager,
                           is_context_decorated, wrap_grad_mode)
from .builtins import BuiltinVariable, is_pure_or_tensor_builtin
from .handled_callables import handled, opaque, unmodelled
from .functions import (DisabledFunctionVariable, PythonModuleVariable, SkippedFunctionVariable, TorchFunctionVariable,
                        is_torch_function)
from .user_functions import PartialClassVariable, PartialVariable, UserFunctionVariable, UserMethodVariable
from .keyed_dicts import TensorKeyedDictVariable, is_tensor_keyed
from .nn_module import NNModuleVariable
from .object_keys import wrap_object_keyed_dict, wrap_set
from .numpy import is_ndarray, is_numpy_scalar, wrap_ndarray, wrap_numpy_callable
from .tensor import SizeVariable
from .tuple_subclass import plain_tuple_subclass
from .deques import wrap_deque
from .descriptors import wrap_property
from .default_dicts import wrap_defaultdict
from .operator_objects import KINDS as OPERATOR_OBJECTS, wrap_operator_object
from .optimizer import EAGER_BRANCHES, EagerBranchVariable
from .stdlib import known_object, modelled_callable, wrap_known_object
from .user_objects import UserDefinedObjectVariable
from .user_defined import builtin_base, builtin_class_attribute, ordinary_metaclass, slot_owner
from .dict_subclass import DICT_ITERATORS, wrap_dict_iterator, wrap_existing


def wrap(tx, value: Any, source: Source) -> VariableTracker:
    guards, line = tx.output.guards, tx.output.user_line
    kind = type(value)
    if kind is torch.Tensor or kind is torch.nn.Parameter:
        # Most values wrapped; no callable switch or object model below can claim one.
        return tx.output.add_tensor_input(value, source)
    if kind not in _PLAIN_SCALARS:  # the registries below are of callables and library objects
        if _watches_its_reads(kind):
            return _wrap_watching_object(tx, value, source)
        special = _special_callable(value, source)
        if special is not None:
            guards.add(GuardKind.ID_MATCH, source, value, line)
            return special
        if isinstance(value, torch.Tensor):
            return tx.output.add_tensor_input(value, source)
        known = wrap_known_object(tx, value, source)  # enums, os.environ, signatures... (stdlib.py)
        if known is not None:
            return known
    if type(value) is int and not config.specialize_int and tx.output.dynamic.int_is_dynamic(source, value):
        return tx.output.add_int_input(value, source)
    if type(value) is float and not config.specialize_float and tx.output.dynamic.float_is_dynamic(source, value):
        return tx.output.add_float_input(value, source)
    if is_constant_type(value) or is_numpy_scalar(value) or (
            type(value) is slice and all(is_constant_type(part) for part in (value.start, value.stop, value.step))):
        return ConstantVariable(value, source,
                                pending_guard=lambda: guards.add(GuardKind.EQUALS_MATCH, source, value, line))
    if kind is torch.Size:  # before tuple: a size answers .numel() and rebuilds as a torch.Size
        guards.add(GuardKind.LENGTH, source, (kind, len(value)), line)
        return SizeVariable([wrap(tx, item, ItemSource(source, i)) for i, item in enumerate(value)], source)
    if kind is tuple or (isinstance(value, tuple) and (hasattr(kind, "_fields") or hasattr(kind, "n_fields")
                                                       or plain_tuple_subclass(kind))):
        guards.add(GuardKind.LENGTH, source, (kind, len(value)), line)
        if kind is not tuple and "__getitem__" in redefined_tuple_behaviour(kind):  # read bypassing it
            items = [wrap(tx, item, StorageItemSource(source, i, tuple)) for i, item in enumerate(value)]
        else:
            items = [wrap(tx, item, ItemSource(source, i)) for i, item in enumerate(value)]
        if kind is tuple:
            return TupleVariable(items, source)
        return NamedTupleVariable(items, kind, source, instance_dict=getattr(value, "__dict__", None))
    known = _already_wrapped(tx, value, source)
    if known is not None:
        return known
    if kind is functools.partial:
        # One tracker per partial, as for other objects: a frame resumed after a break may hold
        # it under two names (a local and a value that was on the stack), and `p == p` or
        # `p is q` compare the object.
        guards.add(GuardKind.TYPE_MATCH, source, kind, line)
        variable = PartialVariable(wrap(tx, value.func, AttrSource(source, "func")),
                                   tx.unpack_iterable(wrap(tx, value.args, AttrSource(source, "args"))),
                                   wrap(tx, value.keywords, AttrSource(source, "keywords")).items, source,
                                   vars(value))
        tx.output.objects[id(value)] = variable
        return variable
    known = opaque(value, source)  # before the object models: a DeviceMesh has a __dict__
    if known is not None:
        guards.add(GuardKind.ID_MATCH, source, value, line)
        return known
    variable = _wrap_mutable(tx, value, source, kind)
    if variable is not None:
        tx.output.objects[id(value)] = variable
        return variable
    if isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, torch.Tensor):
        # `y.add` handed over at a graph break, before its call: the tensor, then the method.
        return MethodVariable(wrap(tx, value.__self__, AttrSource(source, "__self__")), value.__name__)
    if isinstance(value, types.MethodType) and type(value.__self__) in GRAD_MODE_CLASSES:
        # A grad-mode manager's bound __exit__: a block a graph break cut in two.
        return MethodVariable(wrap(tx, value.__self__, AttrSource(source, "__self__")), value.__name__)
    if isinstance(value, types.FunctionType) and is_context_decorated(value):
        guards.add(GuardKind.ID_MATCH, source, value, line)
        inner = wrap(tx, value.__wrapped__, AttrSource(source, "__wrapped__"))
        return DecoratedFunctionVariable(decorated_manager(value), inner, source)
    if isinstance(value, types.FunctionType) and is_inlineable(value):
        # The code decides what is traced; defaults and closure cells are read (and guarded)
        # through the function when used. So two closures of one `def` share the entry.
        guards.add(GuardKind.TYPE_MATCH, source, types.FunctionType, line)
        guards.add(GuardKind.ID_MATCH, AttrSource(source, "__code__"), value.__code__, line)
        return UserFunctionVariable(value, source)
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType) \
            and is_inlineable(value.__func__):
        # The type first: any object may have a `__func__` and a `__self__`.
        guards.add(GuardKind.TYPE_MATCH, source, type(value), line)
        fn = wrap(tx, value.__func__, AttrSource(source, "__func__"))
        return UserMethodVariable(fn, wrap(tx, value.__self__, AttrSource(source, "__self__")), source)
    if type(value) is types.MethodWrapperType:
        # A slot wrapper bound to an object (`super().__getattribute__` handed over at a
        # break) is a new object at every read, so its identity cannot be guarded. Calling it
        # is a graph break whatever it is bound to; the slot it wraps is what is guarded.
        guards.add(GuardKind.TYPE_MATCH, source, types.MethodWrapperType, line)
        guards.add(GuardKind.ID_MATCH, AttrSource(source, "__objclass__"), value.__objclass__, line)
        guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "__name__"), value.__name__, line)
        variable = tx.output.objects[id(value)] = SkippedFunctionVariable(value, source)
        return variable
    if kind is torch.Generator:
        from .rng import wrap_random_generator

        return wrap_random_generator(tx, value, source, line)
    library = wrap_library_value(value, source, strict=False)
    if library is not None:
        if type(library) is SkippedFunctionVariable and type(value) is types.BuiltinMethodType \
                and not isinstance(value.__self__, (types.ModuleType, type, type(None))):
            # A builtin method bound to an object (`generator.manual_seed`, handed over at the
            # break its call makes) is a new object at every read: the object it is bound to
            # and its name are guarded, else each call would fail the guard and recompile.
            guards.add(GuardKind.TYPE_MATCH, source, types.BuiltinMethodType, line)
            guards.add(GuardKind.ID_MATCH, AttrSource(source, "__self__"), value.__self__, line)
            guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "__name__"), value.__name__, line)
            return library
        # The object is fixed for the program; guard that this name still refers to it.
        guards.add(GuardKind.ID_MATCH, source, value, line)
        return library
    if isinstance(value, BaseException) and isinstance(source, LocalSource) and source.local_name.startswith("___stack"):
        # A resume function starting at an exception handler (breaks._route_exceptions).
        raise Unsupported(
            "Unsupported exception handling", f"the {type(value).__name__} raised at a graph break, handled after it",
            "An instruction that a graph break ran eagerly raised inside a `with` block (or a comprehension); "
            "the code that handles it (the manager's __exit__ and what follows) runs eagerly, as it would "
            "without framegraph: framegraph does not trace the handling of an exception raised outside its trace.",
            ("Nothing is wrong: the exception is handled as in eager. To keep the rest of the function in a "
             "graph when this happens, move the call that raises out of the `with` block.",))
    raise Unsupported("Unsupported value type", f"{type(value).__qualname__} at {source}")


_RANGE_ITERATOR = type(iter(range(0)))
_SEQUENCE_ITERATORS = (type(iter([])), type(iter(())), _RANGE_ITERATOR, type(iter("")), type(iter("\u20ac")),
                       type(iter(b"")))


def _wrap_iterator(tx, value: Any, source: Source) -> VariableTracker:
    """A list, tuple or range iterator the frame received (a comprehension's `.0`): its
    remaining items are traced, and what the trace consumes is replayed on the real one."""
    guards, line = tx.output.guards, tx.output.user_line
    reduced = value.__reduce__()
    guards.add(GuardKind.TYPE_MATCH, source, type(value), line)
    if len(reduced) == 2:  # exhausted: it has let go of its sequence and reduces to an empty one
        guards.add(GuardKind.LENGTH, MethodCallSource(source, "__reduce__"), (tuple, 2), line)
        return ListIteratorVariable([], source=source)
    _, (sequence,), position = reduced
    guards.add(GuardKind.EQUALS_MATCH, IteratorStateSource(source, "position"), position, line)
    if versions.RANGE_ITERATOR_REDUCES_TO_REST and type(value) is _RANGE_ITERATOR:
        position = 0  # the sequence is what is left, and __setstate__(n) skips n from here
    items = wrap(tx, sequence, IteratorStateSource(source, "sequence"))
    if isinstance(items, ListVariable):  # read live, as the real list iterator reads its list
        iterator = ListIteratorVariable(source=source, seq=items, start=position)
    else:
        remaining = tx.unpack_iterable(items)[position:]
        iterator = ListIteratorVariable(remaining, source=source, start=position)
    tx.output.side_effects.advanced_iterator(iterator)
    return iterator


def _wrap_mutable(tx, value: Any, source: Source, kind: type) -> VariableTracker | None:
    guards, line = tx.output.guards, tx.output.user_line
    if kind in _SEQUENCE_ITERATORS:
        return _wrap_iterator(tx, value, source)
    if kind in DICT_ITERATORS:
        return wrap_dict_iterator(tx, value, source)
    if is_ndarray(value):
        return wrap_ndarray(tx, value, source)
    if kind is collections.deque:
        return wrap_deque(tx, value, source)
    if kind is property:
        return wrap_property(tx, value, source)
    if kind in OPERATOR_OBJECTS:
        return wrap_operator_object(tx, value, source)
    if kind is set or kind is frozenset:
        return wrap_set(tx, value, source)
    if kind is list:
        guards.add(GuardKind.LENGTH, source, (kind, len(value)), line)
        return ListVariable([wrap(tx, item, ItemSource(source, i)) for i, item in enumerate(value)], source)
    if is_tensor_keyed(value):
        return TensorKeyedDictVariable.wrap(tx, value, source)
    if kind is collections.defaultdict:
        return wrap_defaultdict(tx, value, source)
    if kind is dict:
        if not all(isinstance(k, (str, int)) for k in value):
            return wrap_object_keyed_dict(tx, value, source)
        guards.add(GuardKind.DICT_KEYS, source, (dict, tuple(value)), line)
        return DictVariable({k: wrap(tx, v, ItemSource(source, k)) for k, v in value.items()}, source)
    if isinstance(value, torch.nn.Module):
        guards.add(GuardKind.TYPE_MATCH, source, type(value), line)
        return NNModuleVariable(value, source)
    if kind in REDUCIBLE_ITERATORS:
        return wrap_reduced_iterator(tx, value, source)
    if kind in GRAD_MODE_CLASSES:
        return wrap_grad_mode(tx, value, source)
    if kind is types.GeneratorType:
        from .generators import ReceivedGeneratorVariable

        guards.add(GuardKind.TYPE_MATCH, source, kind, line)
        return ReceivedGeneratorVariable(source)
    variable = unmodelled(value, source)
    if variable is not None:
        guards.add(GuardKind.TYPE_MATCH, source, kind, line)
        return variable
    base = _plain_object_base(value)
    if base is not None:
        guards.add(GuardKind.TYPE_MATCH, source, type(value), line)
        if base is object or base is types.SimpleNamespace:
            return UserDefinedObjectVariable(value, source)
        return wrap_existing(tx, value, source, base)
    return None


_PLAIN_SCALARS = frozenset({bool, int, float, str, type(None)})


@functools.lru_cache(maxsize=1024)
def _watches_its_reads(cls: type) -> bool:
    """Whether instances of `cls` (an ordinary class of the program's) answer every attribute
    read through a `__getattribute__` of its own. Dispatching such an object with isinstance()
    would show: an isinstance() that fails asks the object for its `__class__`, through that
    `__getattribute__`, which the program may count or log."""
    return (isinstance(inspect.getattr_static(cls, "__getattribute__", None), types.FunctionType)
            and builtin_base(cls) is object and ordinary_metaclass(cls) and is_user_class(cls)
            and not issubclass(cls, (torch.Tensor, torch.nn.Module)))


def _already_wrapped(tx, value: Any, source: Source) -> VariableTracker | None:
    """The tracker of a mutable object met before: one tracker per object, so a change made
    through one name is seen through every other; a second name must keep referring to it."""
    known = tx.output.objects.get(id(value))
    if known is not None and known.source != source:
        tx.output.guards.add(GuardKind.ALIAS, source, known.source, tx.output.user_line)
    return known


def _wrap_watching_object(tx, value: Any, source: Source) -> VariableTracker:
    """An object `_watches_its_reads` holds, wrapped by its type alone (no read of its own)."""
    known = _already_wrapped(tx, value, source)
    if known is not None:
        return known
    tx.output.guards.add(GuardKind.TYPE_MATCH, source, type(value), tx.output.user_line)
    variable = tx.output.objects[id(value)] = UserDefinedObjectVariable(value, source)
    return variable


def _plain_object_base(value: Any) -> type | None:
    """For an instance of an ordinary Python class (attributes in its __dict__, a metaclass
    that leaves instances alone), the builtin base whose layout it has: object, or the dict,
    OrderedDict or list its items live in."""
    cls = type(value)
    if isinstance(value, type) or cls.__module__ == "builtins" or isinstance(cls, enum.EnumMeta) \
            or not ordinary_metaclass(cls):
        return None
    try:
        object.__getattribute__(value, "__dict__")
    except AttributeError:
        # Only __slots__ (dataclasses.Field): read and written through their descriptors.
        return object if builtin_base(cls) is object and _all_slotted(cls) else None
    return builtin_base(cls)


def _all_slotted(cls: type) -> bool:
    return all("__slots__" in klass.__dict__ for klass in cls.__mro__[:-1])


def _special_callable(value: Any, source: Source | None) -> VariableTracker | None:
    """Callables handled by a switch or a stand-in rather than by what they are."""
    package_handled = handled(value, source)  # higher-order operators (framegraph.higher_order)
    if package_handled is not None:
        return package_handled
    if is_allowed_in_graph(value):
        return TorchFunctionVariable(value, source)
    stand_in = stand_in_for(value)
    if stand_in is not None:
        return UserFunctionVariable(stand_in, None)
    if isinstance(value, types.FunctionType) and value in EAGER_BRANCHES:
        return EagerBranchVariable(value, source)
    if value is torch.fx.traceback.annotate:  # a contextmanager, modelled (ctx_managers.annotate)
        return TorchFunctionVariable(value, source)
    if value is functools.partial:
        return PartialClassVariable(source)
    owner = slot_owner(value)
    if owner is not None and owner.__dict__.get(value.__name__) is value:
        # `object.__setattr__` held in a variable (a wrapper's saved original): what
        # `object.__setattr__` reads as
        return builtin_class_attribute(owner, value.__name__, source)
    numpy_callable = wrap_numpy_callable(value, source)
    if numpy_callable is not None:
        return numpy_callable
    return modelled_callable(value, source)


def wrap_library_value(value: Any, source: Source | None, strict: bool = True) -> VariableTracker | None:
    special = _special_callable(value, source)
    if special is not None:
        return special
    if isinstance(value, types.ModuleType):
        return PythonModuleVariable(value, source)
    known = known_object(value, source)  # a library's own: nothing to guard
    if known is not None:
        return known[0]
    if is_pure_or_tensor_builtin(value):
        return BuiltinVariable(value, source)
    if is_constant_type(value) or isinstance(value, type):
        # Classes are fixed objects: `isinstance(x, torch.Tensor)` folds against them.
        return ConstantVariable(value, source)
    if disabled_by_torch(value):
        return DisabledFunctionVariable(value, source)
    if isinstance(value, types.FunctionType) and is_inlineable(value):
        # A function of torch's inlined Python (`torch.nn.utils.clip_grad_norm_`) is traced
        # however it is reached, through a module attribute as through a global.
        return UserFunctionVariable(value, source)
    if isinstance(value, types.FunctionType) and is_context_decorated(value) and is_inlineable(value.__wrapped__):
        inner = UserFunctionVariable(value.__wrapped__, AttrSource(source, "__wrapped__") if source else None)
        return DecoratedFunctionVariable(decorated_manager(value), inner, source)
    if is_torch_function(value):
        return TorchFunctionVariable(value, source)
    if callable(value) and not isinstance(value, type):
        return SkippedFunctionVariable(value, source)
    if not strict:
        return None
    raise Unsupported("Unsupported value type", f"{type(value).__qualname__} at {source}")
