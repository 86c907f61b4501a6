"""Iteration: what `for`, unpacking and `list(x)` see when they walk a value.

Iterators are lazy, as Python's are: `next_item(tx)` produces one item (None once the
iterator is exhausted) and consumes exactly what the real iterator would consume. A list
iterator reads the list as it is at each step, `map` calls its function only when an item
is asked for, `zip` stops at the first exhausted argument after taking from the ones before
it, and a generator runs its body to the next `yield` (see symbolic_convert/inline.py).
Consumers that need every item (`list(x)`, `sorted`, unpacking) drain the iterator with
`unpack`; the others (`for`, `next`, `any`, `zip`, `list.extend`) step it.

After the graph, an iterator that outlives the trace is rebuilt as the real thing: a
`map(fn, rest)` over the rebuilt rest of its argument, an `enumerate(rest, count)`, a
`list_iterator` positioned where the trace left it. Iterators the frame received (a `map`
handed to a resume function) are traced through their `__reduce__` parts; their position
lives in the list iterators at their leaves, which the side-effect ledger advances.
"""

from __future__ import annotations

import sys

import operator

from ..bytecode import create_instruction, emit
from ..exc import Unsupported
from ..source import ItemSource, MethodCallSource
from .base import MethodVariable, VariableTracker, is_method_of
from .constant import ConstantVariable
from .containers import BaseSequenceVariable, ListVariable, TupleVariable, raise_observed
from .dicts import DictVariable, SetVariable
from .object_keys import key_tracker
from .tensor import SizeVariable, TensorVariable
from .nn_module import ModuleSliceVariable, NNModuleVariable




def advanced(iterator, count: int):
    """`iterator` after `count` steps: how a rebuilt iterator over known items (a tuple, a
    range, a string, a dict, reversed...) is put back where the trace left it. Such an
    iterator only reads its container, so stepping it again runs no user code."""
    for _ in range(count):
        next(iterator)
    return iterator


def exhausted(iterator):
    """`iterator` run out as the trace ran it out: a sequence iterator that has raised
    StopIteration lets go of its sequence and never yields again, even if the sequence
    grows; one merely moved to the end would."""
    if hasattr(iterator, "__setstate__"):
        iterator.__setstate__(sys.maxsize)  # clamped to the end
    for _ in iterator:
        pass
    return iterator


class IteratorVariable(VariableTracker):
    """An iterator. Subclasses say how to take one step and how to rebuild the rest."""

    __slots__ = ()

    def next_item(self, tx) -> VariableTracker | None:
        raise NotImplementedError

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("__next__", "__iter__"):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__next__" and not args and not kwargs:
            item = self.next_item(tx)
            if item is None:
                raise_observed(StopIteration)
            return item
        if name == "__iter__" and not args and not kwargs:
            return self
        raise Unsupported("Unsupported method call", f"{self.python_type().__name__}.{name}")

    def reconstruct_remaining(self, codegen) -> None:
        """What a resume function gets for this iterator when it is a `for` loop's (the loop
        re-makes it with GET_ITER): the real iterator, or for an iterator over known items a
        list of what is left, which the resume function can guard and trace."""
        remaining = self.known_remaining()
        if remaining is None:
            codegen.reconstruct(self)
            return
        for item in remaining:
            codegen.reconstruct(item)
        codegen.build(list, len(remaining))

    def known_remaining(self) -> list[VariableTracker] | None:
        """The items still to come when producing them runs no code (else None)."""
        return None


def _rebuild_call(codegen, fn, values: list[VariableTracker], kw_names: tuple[str, ...] = ()) -> None:
    codegen.load_callable_const(fn)
    for value in values:
        codegen.reconstruct(value)
    codegen.append(*emit.create_call(len(values), kw_names))


def _set_state(codegen, state: int) -> None:
    """iterator -> iterator, with `__setstate__(state)` called on it."""
    codegen.append(*emit.create_dup_top(), *emit.create_load_method("__setstate__"))
    codegen.load_const(state)
    codegen.append(*emit.create_call(1), create_instruction("POP_TOP"))


class ListIteratorVariable(IteratorVariable):
    """An iterator over a sequence: a list tracker it reads live (an item appended while
    the loop runs is seen, as eagerly), or items fixed when it was made (a tuple, a range, a
    string, the rest of a real iterator the frame received, which has a source)."""

    __slots__ = ("_items", "seq", "origin", "index", "start", "exhausted")

    def __init__(self, items: list[VariableTracker] | None = None, source=None, start: int = 0,
                 seq: ListVariable | None = None, origin: VariableTracker | None = None) -> None:
        super().__init__(source)
        self._items = items
        self.seq = seq          # the list read at each step, for an iterator over a list
        self.origin = origin    # what iter() was called on, for rebuilding the real type
        self.start = start      # for a real iterator (with a source): its position when read
        # The next position: in `seq` itself, or in `items` (which then start at `start`).
        self.index = start if seq is not None else 0
        self.exhausted = False  # a list iterator stops for good once it reaches the end

    @property
    def items(self) -> list[VariableTracker]:
        return self.seq.items if self.seq is not None else self._items

    def python_type(self) -> type:
        if isinstance(self.origin, ConstantVariable):
            return type(iter(self.origin.value))  # range_iterator, str_ascii_iterator...
        if isinstance(self.origin, (TupleVariable, SizeVariable)):
            return type(iter(()))
        if isinstance(self.origin, SetVariable):
            return type(iter(set()))
        return type(iter([]))

    def children(self) -> list[VariableTracker]:
        if self.seq is not None or self.origin is not None:
            return [self.seq if self.seq is not None else self.origin]  # what reconstruct rebuilds
        return list(self.items[self.index:])

    def next_item(self, tx=None) -> VariableTracker | None:
        items = self.items
        if isinstance(self.origin, SetVariable) and len(self.origin.values) != len(items) and not self.exhausted:
            self.exhausted = True
            raise_observed(RuntimeError, "Set changed size during iteration")
        if self.exhausted or self.index >= len(items):
            self.exhausted = True
            return None
        item = items[self.index]
        self.index += 1
        return item

    def known_remaining(self) -> list[VariableTracker] | None:
        if self.seq is not None:
            return None  # the loop must keep reading the list itself
        return [] if self.exhausted else list(self.items[self.index:])

    def replay_advance(self, codegen) -> None:
        """Moves the real iterator (this one has a source) to where the trace left it."""
        if self.seq is not None:
            position = len(self.items) if self.exhausted else self.index
        else:
            position = self.start + (len(self.items) if self.exhausted else self.index)
        if self.exhausted:
            codegen.load_callable_const(exhausted)
            codegen.reconstruct_source(self)
            codegen.call(1)
            codegen.append(create_instruction("POP_TOP"))
        elif position != self.start:
            codegen.reconstruct_source(self)
            _set_state(codegen, position)
            codegen.append(create_instruction("POP_TOP"))

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)  # the ledger advances the real iterator
            return
        if self.exhausted and (self.seq is not None or self.origin is not None):
            codegen.load_callable_const(exhausted)
            _rebuild_call(codegen, iter, [self.seq if self.seq is not None else self.origin])
            codegen.call(1)
        elif self.seq is not None:
            _rebuild_call(codegen, iter, [self.seq])
            _set_state(codegen, self.index)
        elif self.origin is not None:
            # A sequence iterator that only reads known items: stepping it again is free.
            codegen.load_callable_const(advanced)
            _rebuild_call(codegen, iter, [self.origin])
            codegen.load_const(len(self.items) if self.exhausted else self.index)
            codegen.call(2)
        else:
            self.reconstruct_remaining(codegen)
            codegen.append(create_instruction("GET_ITER"))

    def __repr__(self) -> str:
        return f"ListIteratorVariable({self.index}/{len(self.items)})"


class ReversedVariable(IteratorVariable):
    """`reversed(seq)` of a list (read live, as list_reverseiterator reads it) or of a
    sequence of known items."""

    __slots__ = ("seq", "_constants", "index", "start")

    def __init__(self, seq: VariableTracker, source=None, index: int | None = None) -> None:
        super().__init__(source)
        self.seq = seq
        # A constant sequence (a range, a string) is listed once; a list tracker is read live.
        self._constants = None if isinstance(seq, (BaseSequenceVariable, SizeVariable)) else \
            [ConstantVariable(v) for v in seq.as_python_constant()]
        self.index = len(self._items()) - 1 if index is None else index  # the next position to read
        self.start = self.index

    def _items(self) -> list[VariableTracker]:
        return self.seq.items if self._constants is None else self._constants

    def python_type(self) -> type:
        if isinstance(self.seq, ConstantVariable):
            return type(reversed(self.seq.value))
        return type(reversed(self.seq.python_type()()))

    def children(self) -> list[VariableTracker]:
        return [self.seq]

    def next_item(self, tx) -> VariableTracker | None:
        items = self._items()
        if not 0 <= self.index < len(items):
            self.index = -1
            return None
        item = items[self.index]
        self.index -= 1
        return item

    def known_remaining(self) -> list[VariableTracker] | None:
        if isinstance(self.seq, ListVariable) or self.source is not None:
            return None
        return list(reversed(self._items()[:self.index + 1]))

    def replay_advance(self, codegen) -> None:
        if self.index != self.start:
            codegen.reconstruct_source(self)
            _set_state(codegen, self.index)
            codegen.append(create_instruction("POP_TOP"))

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)  # the ledger moves the real one
        elif isinstance(self.seq, ListVariable):
            _rebuild_call(codegen, reversed, [self.seq])
            _set_state(codegen, self.index)  # a list_reverseiterator's next position
        else:
            codegen.load_callable_const(advanced)
            _rebuild_call(codegen, reversed, [self.seq])
            codegen.load_const(len(self._items()) - 1 - self.index)
            codegen.call(2)


class DictIteratorVariable(IteratorVariable):
    """Iterating a dict or one of its views: keys in order, values read when reached. A
    dict that changes size meanwhile raises RuntimeError, as eagerly."""

    __slots__ = ("dict_var", "kind", "keys", "index", "exhausted")

    def __init__(self, dict_var: DictVariable, kind: str) -> None:
        super().__init__()
        self.dict_var, self.kind = dict_var, kind
        self.keys = list(dict_var.items)
        self.index = 0
        self.exhausted = False

    def python_type(self) -> type:
        return type(iter(getattr({}, self.kind)()))

    def children(self) -> list[VariableTracker]:
        return [self.dict_var]

    def next_item(self, tx) -> VariableTracker | None:
        items = self.dict_var.items
        if self.exhausted:
            return None
        if len(items) != len(self.keys):
            self.exhausted = True  # CPython stops the iterator for good after the error
            raise_observed(RuntimeError, "dictionary changed size during iteration")
        if self.index >= len(self.keys):
            self.exhausted = True
            return None
        key = self.keys[self.index]
        self.index += 1
        if key not in items:
            raise_observed(RuntimeError, "dictionary keys changed during iteration")
        if self.kind == "keys":
            return key_tracker(key)
        if self.kind == "values":
            return items[key]
        return TupleVariable([key_tracker(key), items[key]])

    def known_remaining(self) -> list[VariableTracker] | None:
        # The keys still to come are known; values are read when reached (a loop may change
        # them meanwhile), so a loop over values or items keeps the real iterator.
        if self.kind != "keys" or self.exhausted:
            return None if not self.exhausted else []
        return [key_tracker(key) for key in self.keys[self.index:]]

    def reconstruct(self, codegen) -> None:
        codegen.load_callable_const(advanced)
        codegen.load_callable_const(iter)
        codegen.reconstruct(self.dict_var)
        if self.kind != "keys":
            codegen.append(*emit.create_load_method(self.kind), *emit.create_call(0))
        codegen.call(1)
        codegen.load_const(len(self.keys) if self.exhausted else self.index)
        codegen.call(2)


class MapVariable(IteratorVariable):
    """`map(fn, *iterables)`: each step takes one item from every iterator in turn (an
    exhausted one ends the map, and what was taken from those before it is lost, as
    eagerly), then calls fn."""

    __slots__ = ("fn", "iterators")

    def __init__(self, fn: VariableTracker, iterators: list[IteratorVariable], source=None) -> None:
        super().__init__(source)
        self.fn, self.iterators = fn, iterators

    def python_type(self) -> type:
        return map

    def children(self) -> list[VariableTracker]:
        return [self.fn, *self.iterators]

    def next_item(self, tx) -> VariableTracker | None:
        row = []
        for iterator in self.iterators:
            item = iterator.next_item(tx)
            if item is None:
                return None
            row.append(item)
        return self.fn.call_function(tx, row, {})

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            _rebuild_call(codegen, map, [self.fn, *self.iterators])


class FilterVariable(IteratorVariable):
    """`filter(fn, iterable)`: steps its iterator until fn (or truth, for None) accepts."""

    __slots__ = ("fn", "iterator")

    def __init__(self, fn: VariableTracker, iterator: IteratorVariable, source=None) -> None:
        super().__init__(source)
        self.fn, self.iterator = fn, iterator

    def python_type(self) -> type:
        return filter

    def children(self) -> list[VariableTracker]:
        return [self.fn, self.iterator]

    def next_item(self, tx) -> VariableTracker | None:
        keep_all = self.fn.is_python_constant() and self.fn.as_python_constant() is None
        while (item := self.iterator.next_item(tx)) is not None:
            verdict = item if keep_all else self.fn.call_function(tx, [item], {})
            if verdict.bool_value(tx):
                return item
        return None

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
        else:
            _rebuild_call(codegen, filter, [self.fn, self.iterator])


class ZipVariable(IteratorVariable):
    """`zip(*iterables, strict=...)`: a step takes from each iterator in turn and stops at
    the first exhausted one; strict checks that they all end together."""

    __slots__ = ("iterators", "strict")

    def __init__(self, iterators: list[IteratorVariable], strict: bool, source=None) -> None:
        super().__init__(source)
        self.iterators, self.strict = iterators, strict

    def python_type(self) -> type:
        return zip

    def children(self) -> list[VariableTracker]:
        return list(self.iterators)

    def next_item(self, tx) -> VariableTracker | None:
        if not self.iterators:
            return None
        row = []
        for position, iterator in enumerate(self.iterators):
            item = iterator.next_item(tx)
            if item is None:
                if self.strict:
                    self._check_all_ended(tx, position)
                return None
            row.append(item)
        return TupleVariable(row)

    def _check_all_ended(self, tx, position: int) -> None:
        if position:
            plural = "s 1-" + str(position) if position > 1 else " 1"
            raise_observed(ValueError, f"zip() argument {position + 1} is shorter than argument{plural}")
        for later, iterator in enumerate(self.iterators[1:], 2):
            if iterator.next_item(tx) is not None:
                plural = "s 1-" + str(later - 1) if later > 2 else " 1"
                raise_observed(ValueError, f"zip() argument {later} is longer than argument{plural}")

    def known_remaining(self) -> list[VariableTracker] | None:
        columns = [iterator.known_remaining() for iterator in self.iterators]
        if self.strict or any(column is None for column in columns):
            return None
        return [TupleVariable(list(row)) for row in zip(*columns)]

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(zip)
        for iterator in self.iterators:
            codegen.reconstruct(iterator)
        if self.strict:
            codegen.load_const(True)
        codegen.append(*emit.create_call(len(self.iterators) + self.strict, ("strict",) if self.strict else ()))


class EnumerateVariable(IteratorVariable):
    """`enumerate(iterable, start)`: (count, item) pairs, counting from start."""

    __slots__ = ("iterator", "count", "start")

    def __init__(self, iterator: IteratorVariable | None, count: int, source=None) -> None:
        super().__init__(source)
        self.iterator, self.count = iterator, count
        self.start = count

    def python_type(self) -> type:
        return enumerate

    def children(self) -> list[VariableTracker]:
        return [self.iterator]

    def next_item(self, tx) -> VariableTracker | None:
        item = self.iterator.next_item(tx)
        if item is None:
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])

    def known_remaining(self) -> list[VariableTracker] | None:
        rest = self.iterator.known_remaining()
        if rest is None:
            return None
        return [TupleVariable([ConstantVariable(self.count + i), item]) for i, item in enumerate(rest)]

    def replay_advance(self, codegen) -> None:
        """A real enumerate's count cannot be set: the real one is stepped as often as the
        trace stepped it. Its iterator only reads a sequence, so this runs no user code, and
        it moves that iterator too, before the ledger's own (absolute) entry for it."""
        if self.count != self.start:
            codegen.load_callable_const(advanced)
            codegen.reconstruct_source(self)
            codegen.load_const(self.count - self.start)
            codegen.append(*emit.create_call(2), create_instruction("POP_TOP"))

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(enumerate)
        codegen.reconstruct(self.iterator)
        codegen.load_const(self.count)
        codegen.call(2)


class CallableIteratorVariable(IteratorVariable):
    """`iter(fn, sentinel)`: calls fn for each item, and stops for good at the first result
    equal to the sentinel."""

    __slots__ = ("fn", "sentinel", "exhausted")

    def __init__(self, fn: VariableTracker, sentinel: VariableTracker) -> None:
        super().__init__()
        self.fn, self.sentinel = fn, sentinel
        self.exhausted = False

    def python_type(self) -> type:
        return type(iter(int, 0))

    def children(self) -> list[VariableTracker]:
        return [self.fn, self.sentinel]

    def next_item(self, tx) -> VariableTracker | None:
        from .containers import values_equal

        if self.exhausted:
            return None
        item = self.fn.call_function(tx, [], {})
        if values_equal(tx, item, self.sentinel):
            self.exhausted = True
            return None
        return item

    def reconstruct(self, codegen) -> None:
        if self.exhausted:
            raise Unsupported("Unsupported value type", "an exhausted iter(callable, sentinel) outliving the graph")
        _rebuild_call(codegen, iter, [self.fn, self.sentinel])


class DictViewVariable(VariableTracker):
    """`d.keys()`, `d.values()` or `d.items()` of a dict tracker."""

    __slots__ = ("dict_var", "kind")

    def __init__(self, dict_var: DictVariable, kind: str) -> None:
        super().__init__()
        self.dict_var, self.kind = dict_var, kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def children(self) -> list[VariableTracker]:
        return [self.dict_var]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if is_method_of(self.python_type(), name):
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)

    def items_now(self) -> list[VariableTracker]:
        items = self.dict_var.items
        if self.kind == "keys":
            return [key_tracker(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_tracker(k), v]) for k, v in items.items()]

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__len__":
            return ConstantVariable(len(self.dict_var.items))
        if name == "__contains__" and self.kind == "keys" and args[0].is_python_constant():
            return ConstantVariable(args[0].as_python_constant() in self.dict_var.items)
        if name == "__iter__" and not args:
            return DictIteratorVariable(self.dict_var, self.kind)
        from .dict_views import view_method

        return view_method(tx, self, name, args, kwargs)  # set algebra, membership of pairs, reversed

    def reconstruct(self, codegen) -> None:
        codegen.reconstruct(self.dict_var)
        codegen.append(*emit.create_load_method(self.kind), *emit.create_call(0))


def get_iterator(tx, value: VariableTracker) -> IteratorVariable:
    """`iter(value)`."""
    if isinstance(value, IteratorVariable):
        return value
    if isinstance(value, ListVariable):
        return ListIteratorVariable(seq=value)
    from .deques import DequeVariable

    if isinstance(value, DequeVariable):
        return value.call_method(tx, "__iter__", [], {})
    if isinstance(value, DictVariable):
        return DictIteratorVariable(value, "keys")
    if isinstance(value, DictViewVariable):
        return DictIteratorVariable(value.dict_var, value.kind)
    if isinstance(value, (TupleVariable, SizeVariable)):
        return ListIteratorVariable(list(value.items), origin=value)
    if isinstance(value, SetVariable):
        return ListIteratorVariable(value.items)  # a set of constants: its order is eager's
    if value.is_python_constant():
        constant = value.as_python_constant()
        if isinstance(constant, (range, str, bytes, tuple, frozenset)):
            return ListIteratorVariable([ConstantVariable(item) for item in constant], origin=value)
    from .user_objects import UserDefinedObjectVariable

    if isinstance(value, UserDefinedObjectVariable) and not isinstance(value, NNModuleVariable):
        return value.get_iterator(tx)  # its __iter__, or the old sequence protocol
    return ListIteratorVariable(_fixed_items(tx, value))


def _fixed_items(tx, value: VariableTracker) -> list[VariableTracker]:
    """The items of containers whose iteration runs no user code: modules, tensors, enums,
    an object's __dict__."""
    from .enums import EnumClassVariable
    from .instance_dict import InstanceDictVariable

    if isinstance(value, EnumClassVariable):
        return value.members()
    if isinstance(value, (NNModuleVariable, ModuleSliceVariable)):
        return value.iterate(tx)
    if isinstance(value, InstanceDictVariable):
        return unpack(tx, value.snapshot(tx))
    if isinstance(value, TensorVariable):
        if value.example.dim() == 0:
            raise Unsupported("Unsupported builtin call", "iteration over a 0-d tensor")
        return [tx.output.call_function(operator.getitem, [value, ConstantVariable(i)], {})
                for i in range(int(value.example.shape[0]))]  # a symbolic length is guarded
    raise Unsupported("Unsupported builtin call", f"iteration over {value}")


def unpack(tx, value: VariableTracker) -> list[VariableTracker]:
    """Every item iterating `value` produces, in order (an iterator is consumed)."""
    if isinstance(value, (BaseSequenceVariable, SizeVariable)):
        return list(value.items)
    if isinstance(value, DictVariable):
        return [key_tracker(k) for k in value.items]
    if isinstance(value, DictViewVariable):
        return value.items_now()
    iterator = get_iterator(tx, value)
    items = []
    while (item := iterator.next_item(tx)) is not None:
        items.append(item)
    return items


# Real lazy iterators the builder traces through their __reduce__ parts.
REDUCIBLE_ITERATORS = (map, filter, zip, enumerate, reversed, type(reversed([])))


def wrap_reduced_iterator(tx, value, source) -> IteratorVariable:
    """A real map, filter, zip, enumerate or reversed the frame received (at a graph break,
    the one a `for` loop was walking), traced through `__reduce__()`. A map, filter or zip
    keeps all its state in its argument iterators, so the ledger advancing those advances
    it; an enumerate and a reversed have a position of their own, which the ledger replays."""
    from ..guards import GuardKind
    from .builder import wrap

    kind, reduced = type(value), value.__reduce__()
    reduced_source = MethodCallSource(source, "__reduce__")
    tx.output.guards.add(GuardKind.TYPE_MATCH, source, kind, tx.output.user_line)
    # A strict zip reduces to three parts (the flag), a plain one to two.
    tx.output.guards.add(GuardKind.LENGTH, reduced_source, (tuple, len(reduced)), tx.output.user_line)
    if kind is enumerate:
        # Its ledger entry goes first: stepping the real enumerate moves its iterator too,
        # and the iterator's own entry then sets the same position again.
        variable = EnumerateVariable(None, 0, source)
        tx.output.side_effects.advanced_iterator(variable)
    parts = [wrap(tx, part, ItemSource(ItemSource(reduced_source, 1), i)) for i, part in enumerate(reduced[1])]
    if kind is enumerate:
        variable.iterator = _as_iterator(parts[0])
        if not isinstance(variable.iterator, ListIteratorVariable):
            raise Unsupported("Unsupported value type", f"an enumerate over {variable.iterator} at {source}")
        variable.count = variable.start = parts[1].as_python_constant()
        return variable
    if kind is not map and kind is not filter and kind is not zip:  # reversed, list_reverseiterator
        # One that has let go of its list (see versions.RANGE_ITERATOR_REDUCES_TO_REST) has no position.
        position = wrap(tx, reduced[2], ItemSource(reduced_source, 2)).as_python_constant() \
            if len(reduced) > 2 else -1
        variable = ReversedVariable(parts[0], source, position)
        tx.output.side_effects.advanced_iterator(variable)
        return variable
    if kind is zip:
        iterators = [_as_iterator(part) for part in parts]
        return ZipVariable(iterators, len(reduced) > 2, source)
    iterators = [_as_iterator(part) for part in parts[1:]]
    if type(value) is map:
        return MapVariable(parts[0], iterators, source)
    return FilterVariable(parts[0], iterators[0], source)


def _as_iterator(value: VariableTracker) -> IteratorVariable:
    if not isinstance(value, IteratorVariable):
        raise Unsupported("Unsupported value type", f"an iterator argument {value} of a received map, filter or zip")
    return value
