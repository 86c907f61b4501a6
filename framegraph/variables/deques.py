"""`collections.deque`, as CPython's C implementation behaves.

A deque is a sequence whose items are trackers and whose `maxlen` is a constant: a bounded
deque drops items from the opposite end as new ones arrive (`append` drops from the left,
`appendleft` from the right). Its methods raise what CPython raises, as the program's own
exceptions. A deque made while tracing is rebuilt as `deque(items, maxlen)`; one the caller
passed is changed in place after the graph (`clear()` then `extend(items)`, the ledger's
ReplaceList), its length and `maxlen` guarded. Iterating one that changes size raises
RuntimeError, as eagerly.
"""

from __future__ import annotations

import collections

from ..exc import Unsupported
from .base import MethodVariable, VariableTracker, is_method_of
from .constant import ConstantVariable
from .containers import BaseSequenceVariable, constant_int, raise_observed, values_equal
from .iterators import IteratorVariable

deque = collections.deque
_DEQUE_ITERATOR = type(iter(deque()))
_MUTATORS = frozenset({"append", "appendleft", "extend", "extendleft", "pop", "popleft", "clear", "insert",
                       "remove", "reverse", "rotate", "__setitem__", "__delitem__", "__iadd__", "__imul__"})


class DequeVariable(BaseSequenceVariable):
    __slots__ = ("maxlen",)
    kind = deque

    def __init__(self, items: list[VariableTracker], maxlen: int | None, source=None) -> None:
        super().__init__(items, source)
        self.maxlen = maxlen
        self._bound_left()

    def is_python_constant(self) -> bool:
        return False  # mutable: never folded into a constant

    def plain(self, items: list[VariableTracker]) -> BaseSequenceVariable:
        return DequeVariable(items, self.maxlen)

    def _bound_left(self) -> None:
        """What a full deque drops when items arrive on the right."""
        if self.maxlen is not None and len(self.items) > self.maxlen:
            del self.items[:len(self.items) - self.maxlen]

    def _bound_right(self) -> None:
        if self.maxlen is not None and len(self.items) > self.maxlen:
            del self.items[self.maxlen:]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        if name == "__class__":
            return ConstantVariable(deque)
        if is_method_of(deque, name):
            return MethodVariable(self, name)
        raise_observed(AttributeError, f"'collections.deque' object has no attribute {name!r}")

    def getitem(self, tx, index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant()
        if isinstance(key, slice):
            raise_observed(TypeError, "sequence index must be integer, not 'slice'")
        position = self._position(key)
        return self.items[position]

    def _position(self, key) -> int:
        if not hasattr(type(key), "__index__"):
            raise_observed(TypeError, f"sequence index must be integer, not '{type(key).__name__}'")
        position = key.__index__()
        if not -len(self.items) <= position < len(self.items):
            raise_observed(IndexError, "deque index out of range")
        return position % len(self.items)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if kwargs:
            raise Unsupported("Unsupported method call", f"deque.{name} with keyword arguments")
        if name in _MUTATORS:
            if self.source is not None:
                tx.output.side_effects.mutated_list(self)
            result = self._mutate(tx, name, list(args))
            return result if result is not None else ConstantVariable(None)
        if name == "copy" and not args:
            return DequeVariable(list(self.items), self.maxlen)
        if name == "__copy__" and not args:
            return DequeVariable(list(self.items), self.maxlen)
        if name == "index" and 1 <= len(args) <= 3:
            bounds = [constant_int(a, "slice indices") for a in args[1:]]
            found = self.index_of(tx, args[0], *bounds)
            if found is None:
                raise_observed(ValueError, f"{args[0].as_python_constant()!r} is not in deque"
                               if args[0].is_python_constant() else "deque.index(x): x not in deque")
            return ConstantVariable(found)
        if name == "__reversed__" and not args:
            from .iterators import ReversedVariable

            return ReversedVariable(self)
        if name == "__iter__" and not args:
            return DequeIteratorVariable(self)
        if name in ("__eq__", "__ne__") and len(args) == 1:
            other = args[0]
            equal = isinstance(other, DequeVariable) and len(other.items) == len(self.items) \
                and all(values_equal(tx, a, b) for a, b in zip(self.items, other.items))
            return ConstantVariable(equal == (name == "__eq__"))
        return super().call_method(tx, name, args, {})

    def _mutate(self, tx, name: str, args: list[VariableTracker]) -> VariableTracker | None:
        items = self.items
        arity = {"append": 1, "appendleft": 1, "extend": 1, "extendleft": 1, "pop": 0, "popleft": 0,
                 "clear": 0, "insert": 2, "remove": 1, "reverse": 0, "__setitem__": 2, "__delitem__": 1,
                 "__iadd__": 1, "__imul__": 1}.get(name)
        if name == "rotate":
            if len(args) > 1:
                raise_observed(TypeError, f"rotate expected at most 1 argument, got {len(args)}")
            steps = constant_int(args[0], "rotate") if args else 1
            if items:
                steps %= len(items)
                items[:] = items[-steps:] + items[:-steps] if steps else items
            return None
        if len(args) != arity:
            raise_observed(TypeError, f"deque.{name}() takes {arity} argument(s) ({len(args)} given)")
        if name == "append":
            items.append(args[0])
            self._bound_left()
        elif name == "appendleft":
            items.insert(0, args[0])
            self._bound_right()
        elif name in ("extend", "__iadd__", "extendleft"):
            for item in self._each_item(tx, args[0]):
                if name == "extendleft":
                    items.insert(0, item)
                    self._bound_right()
                else:
                    items.append(item)
                    self._bound_left()
            return self if name == "__iadd__" else None
        elif name in ("pop", "popleft"):
            if not items:
                raise_observed(IndexError, "pop from an empty deque")
            return items.pop() if name == "pop" else items.pop(0)
        elif name == "clear":
            items.clear()
        elif name == "insert":
            if self.maxlen is not None and len(items) >= self.maxlen:
                raise_observed(IndexError, "deque already at its maximum size")
            items.insert(constant_int(args[0], "deque indices"), args[1])
        elif name == "remove":
            found = self.index_of(tx, args[0])
            if found is None:
                raise_observed(ValueError, "deque.remove(x): x not in deque")
            del items[found]
        elif name == "reverse":
            items.reverse()
        elif name == "__setitem__":
            items[self._position(args[0].as_python_constant())] = args[1]
        elif name == "__delitem__":
            del items[self._position(args[0].as_python_constant())]
        elif name == "__imul__":
            count = constant_int(args[0], "can't multiply sequence by non-int")
            items[:] = items * max(count, 0)
            self._bound_left()
            return self
        return None

    def _each_item(self, tx, iterable: VariableTracker):
        """The items of `iterable` as `deque.extend` takes them: the deque itself is copied
        first; anything else is consumed one item at a time, each added before the next is
        made (a generator reading the deque sees it grow)."""
        if iterable is self:
            yield from list(self.items)
            return
        from .iterators import get_iterator

        iterator = get_iterator(tx, iterable)
        while (item := iterator.next_item(tx)) is not None:
            yield item

    def bool_value(self, tx) -> bool:
        return bool(self.items)

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        codegen.load_callable_const(deque)
        for item in self.items:
            codegen.reconstruct(item)
        codegen.build(list, len(self.items))
        codegen.load_const(self.maxlen)
        codegen.call(2)

    def __repr__(self) -> str:
        return f"DequeVariable({self.items!r}, maxlen={self.maxlen})"


class DequeIteratorVariable(IteratorVariable):
    """`iter(d)`: reads the deque live and refuses to go on once it changed size."""

    __slots__ = ("deque", "index", "length")

    def __init__(self, deque_var: DequeVariable) -> None:
        super().__init__()
        self.deque, self.index, self.length = deque_var, 0, len(deque_var.items)

    def python_type(self) -> type:
        return _DEQUE_ITERATOR

    def children(self) -> list[VariableTracker]:
        return [self.deque]

    def next_item(self, tx) -> VariableTracker | None:
        items = self.deque.items
        if len(items) != self.length:
            self.length = -1  # a deque iterator that saw a change stays broken
            raise_observed(RuntimeError, "deque mutated during iteration")
        if self.index >= len(items):
            return None
        self.index += 1
        return items[self.index - 1]

    def known_remaining(self) -> list[VariableTracker] | None:
        return None  # the loop must keep reading the deque itself

    def reconstruct(self, codegen) -> None:
        if self.length != len(self.deque.items):
            raise Unsupported("Unsupported builtin call", "a deque iterator whose deque changed, after the graph")
        codegen.load_callable_const(_DEQUE_ITERATOR)
        codegen.reconstruct(self.deque)
        codegen.load_const(self.index)
        codegen.call(2)


def make_deque(tx, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> DequeVariable:
    """`deque(iterable=(), maxlen=None)`."""
    bound = dict(zip(("iterable", "maxlen"), args))
    for key, value in kwargs.items():
        if key not in ("iterable", "maxlen") or key in bound:
            raise_observed(TypeError, f"deque() got an unexpected or repeated keyword argument {key!r}")
        bound[key] = value
    if len(args) > 2:
        raise_observed(TypeError, f"deque expected at most 2 arguments, got {len(args)}")
    maxlen = bound.get("maxlen", ConstantVariable(None)).as_python_constant()
    if maxlen is not None:
        if not hasattr(type(maxlen), "__index__"):
            raise_observed(TypeError, "an integer is required")
        maxlen = maxlen.__index__()
        if maxlen < 0:
            raise_observed(ValueError, "maxlen must be non-negative")
    items = tx.unpack_iterable(bound["iterable"]) if "iterable" in bound else []
    return DequeVariable(items, maxlen)


def wrap_deque(tx, value: deque, source) -> DequeVariable:
    """A deque the caller passed: its length and maxlen guarded, its items read by index."""
    from ..guards import GuardKind
    from ..source import AttrSource, ItemSource
    from .builder import wrap

    line = tx.output.user_line
    tx.output.guards.add(GuardKind.LENGTH, source, (deque, len(value)), line)
    tx.output.guards.add(GuardKind.EQUALS_MATCH, AttrSource(source, "maxlen"), value.maxlen, line)
    items = [wrap(tx, item, ItemSource(source, i)) for i, item in enumerate(value)]
    return DequeVariable(items, value.maxlen, source)


