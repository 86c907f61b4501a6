"""The side-effect ledger: changes the program makes to state that outlives the call.

While tracing, a change to an object that existed before the call (an attribute of a module
or user object, the contents of a list or dict argument, a global) is recorded here instead
of being made. Reads during the trace consult the ledger, so the program sees its own
writes. After the graph has run, the replacement code replays the ledger (`codegen_replay`),
so the caller sees exactly the state eager execution would have left.

Entries are typed records kept in program order; the last write to a place wins. Replay is
a separate step, one small bytecode recipe per kind:

    StoreAttr(obj, name, value)   value; obj; STORE_ATTR name (object.__setattr__ when `generic`);
                                  with value DELETED: obj; DELETE_ATTR name (object.__delattr__)
    StoreCell(box, value)         value; cell; STORE_ATTR cell_contents
    StoreGlobal(name, value)      value; STORE_GLOBAL name
    ReplaceList(obj)              [new items]; obj; obj[:] = ...
    ReplaceDict(obj)              obj.clear(); obj.update({new items})
    AdvanceIterator(obj)          obj.__setstate__(position after what the trace consumed), or
                                  as the iterator tracker says (iterators.py)
    ReplayChanges(obj)            as the tracker says (`obj.replay_changes`), for containers
                                  whose keys are not constants (keyed_dicts.py)
    ReplaceStorage(obj)           the items of a dict or list subclass, set bypassing its methods
    LogCall(logger, call)         the record a logging call with constant arguments makes
                                  (variables/logging_calls.py)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
from typing import TYPE_CHECKING, Union

from .bytecode import create_instruction, emit
from .exc import Unsupported
from .variables.base import DELETED, VariableTracker

if TYPE_CHECKING:
    from .codegen import PyCodegen


@dataclasses.dataclass
class StoreAttr:
    obj: VariableTracker
    name: str
    value: VariableTracker
    generic: bool = False  # the class's own __setattr__ already ran in the trace: bypass it
    recreated: bool = False  # deleted, then set again: first taken out of the instance __dict__
    stored_first: bool = False  # a deletion of what the trace had set: the object may never have had it


@dataclasses.dataclass
class StoreCell:
    box: VariableTracker  # a CellBox of a real cell
    value: VariableTracker


@dataclasses.dataclass
class StoreGlobal:
    name: str
    value: VariableTracker


@dataclasses.dataclass
class ReplaceList:
    obj: VariableTracker  # a ListVariable with a source; its items are the new contents


@dataclasses.dataclass
class ReplaceDict:
    obj: VariableTracker  # a DictVariable with a source; its items are the new contents


@dataclasses.dataclass
class AdvanceIterator:
    obj: VariableTracker  # an iterator tracker with a source; replayed by its replay_advance


@dataclasses.dataclass
class ReplayChanges:
    obj: VariableTracker  # a tracker with a source that writes its changes back itself


@dataclasses.dataclass
class LogCall:
    logger: VariableTracker | None  # None: the root logger, called through the logging module
    call: tuple  # what variables/logging_calls.replay makes of it


@dataclasses.dataclass
class ReplaceStorage:
    obj: VariableTracker  # a UserDefinedObjectVariable of a dict or list subclass, with a source


Entry = Union[StoreAttr, StoreCell, StoreGlobal, ReplaceList, ReplaceDict, AdvanceIterator, ReplayChanges, ReplaceStorage,
              LogCall]


class SideEffects:
    def __init__(self) -> None:
        self._entries: dict[tuple, Entry] = {}
        self._forbidden_in: str | None = None  # code whose changes could not be replayed in order
        self._log_numbers = itertools.count()  # every logging call is an entry of its own

    @contextlib.contextmanager
    def forbidden(self, where: str):
        """No change may be recorded in the block: an autograd.Function's backward is traced
        at the apply, but runs later, during backward(), where replaying its changes after
        the graph would be wrong."""
        previous, self._forbidden_in = self._forbidden_in, where
        try:
            yield
        finally:
            self._forbidden_in = previous

    def _record(self, key: tuple, entry: Entry, replace: bool) -> None:
        if self._forbidden_in is not None:
            raise Unsupported("Unsupported mutation", f"{self._forbidden_in} changes state that outlives the call")
        if replace:
            self._entries.pop(key, None)  # re-insert: replay order follows the last write
            self._entries[key] = entry
        else:
            self._entries.setdefault(key, entry)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries.values())

    # ---- recording ----------------------------------------------------------------------

    def store_attr(self, obj: VariableTracker, name: str, value: VariableTracker, generic: bool = False) -> None:
        key = ("attr", id(obj), name)
        previous = self._entries.get(key)
        # Set again after a deletion: the attribute goes to the end of the instance __dict__.
        recreated = isinstance(previous, StoreAttr) and (previous.value is DELETED or previous.recreated)
        stored_first = value is DELETED and isinstance(previous, StoreAttr) and previous.value is not DELETED
        self._record(key, StoreAttr(obj, name, value, generic, recreated and value is not DELETED, stored_first),
                     replace=True)

    def delete_attr(self, obj: VariableTracker, name: str, generic: bool = False) -> None:
        self.store_attr(obj, name, DELETED, generic)

    def attr_names(self, obj: VariableTracker) -> list[str]:
        """The attributes stored on `obj` while tracing, in the order first stored."""
        return [e.name for e in self if isinstance(e, StoreAttr) and e.obj is obj and e.value is not DELETED]

    def load_attr(self, obj: VariableTracker, name: str) -> VariableTracker | None:
        entry = self._entries.get(("attr", id(obj), name))
        return entry.value if entry is not None else None

    def store_global(self, name: str, value: VariableTracker) -> None:
        self._record(("global", name), StoreGlobal(name, value), replace=True)

    def store_cell(self, box: VariableTracker, value: VariableTracker) -> None:
        key = ("cell", id(box))
        self._entries.pop(key, None)
        self._entries[key] = StoreCell(box, value)

    def load_global(self, name: str) -> VariableTracker | None:
        entry = self._entries.get(("global", name))
        return entry.value if entry is not None else None

    def mutated_list(self, obj: VariableTracker) -> None:
        self._record(("contents", id(obj)), ReplaceList(obj), replace=False)

    def mutated_dict(self, obj: VariableTracker) -> None:
        self._record(("contents", id(obj)), ReplaceDict(obj), replace=False)

    def mutated_storage(self, obj: VariableTracker) -> None:
        self._record(("contents", id(obj)), ReplaceStorage(obj), replace=False)

    def replayed_by(self, obj: VariableTracker) -> None:
        self._record(("contents", id(obj)), ReplayChanges(obj), replace=False)

    def advanced_iterator(self, obj: VariableTracker) -> None:
        self._record(("iterator", id(obj)), AdvanceIterator(obj), replace=False)

    def log_call(self, logger: VariableTracker | None, call: tuple) -> None:
        self._record(("log", next(self._log_numbers)), LogCall(logger, call), replace=False)

    def values(self) -> list[VariableTracker]:
        """Every tracker replay will rebuild (for choosing the graph's outputs)."""
        out: list[VariableTracker] = []
        for entry in self:
            if isinstance(entry, (StoreAttr, StoreGlobal, StoreCell)):
                if entry.value is not DELETED:
                    out.append(entry.value)
            elif not isinstance(entry, (AdvanceIterator, LogCall)):
                out.append(entry.obj)
        return out

    # ---- replay -------------------------------------------------------------------------

    def codegen_replay(self, cg: PyCodegen) -> None:
        """Every new value is loaded, into a temporary, before anything is changed: a value
        may be read from a place an entry changes (an item of the dict being refilled, a
        tensor the caller holds under two names, what is left of an iterator)."""
        loaded: dict[int, str] = {}
        for i, entry in enumerate(self):
            if isinstance(entry, StoreAttr) and entry.value is DELETED:
                continue
            if isinstance(entry, (StoreAttr, StoreGlobal, StoreCell)):
                cg.reconstruct(entry.value)
            elif isinstance(entry, (ReplaceList, ReplaceDict)):
                cg.build_items(entry.obj)
            elif isinstance(entry, ReplaceStorage):
                cg.build_items(entry.obj.storage)
            else:
                continue
            loaded[i] = f"___replay{i}"
            cg.store_local(loaded[i])
        # Iterators move last: another entry's object may be reached through one (an item of
        # the list a loop iterates, read through the iterator's `__reduce__`), and an
        # exhausted list iterator lets go of its list.
        entries = list(enumerate(self))
        for i, entry in [e for e in entries if not isinstance(e[1], AdvanceIterator)] + \
                [e for e in entries if isinstance(e[1], AdvanceIterator)]:
            _apply(cg, entry, loaded.get(i))


def _forget_attribute(obj, name: str) -> None:
    """Called by generated code: the instance attribute `name` gone, if it is there."""
    object.__getattribute__(obj, "__dict__").pop(name, None)


def _delete_if_present(obj, name: str) -> None:
    """Called by generated code: `name` deleted as object.__delattr__ does, unless the object
    never had it (the trace set it and deleted it again: nothing is left to delete)."""
    try:
        object.__delattr__(obj, name)
    except AttributeError:
        pass


def _apply(cg: PyCodegen, entry: Entry, new: str | None) -> None:
    """One entry's change; `new` is the temporary holding its new value or items."""
    if isinstance(entry, StoreAttr) and entry.value is DELETED:
        if entry.stored_first:
            _call_on_attribute(cg, _delete_if_present, entry)
        elif entry.generic:
            _call_on_attribute(cg, object.__delattr__, entry)
        else:
            cg.reconstruct_source(entry.obj)
            cg.append(create_instruction("DELETE_ATTR", argval=entry.name))
    elif isinstance(entry, StoreAttr) and entry.recreated:
        _call_on_attribute(cg, _forget_attribute, entry)
        _apply(cg, dataclasses.replace(entry, recreated=False), new)
    elif isinstance(entry, StoreAttr) and entry.generic:
        cg.load_callable_const(object.__setattr__)
        cg.reconstruct_source(entry.obj)
        cg.load_const(entry.name)
        cg.load_local(new)
        cg.call(3)
        cg.append(create_instruction("POP_TOP"))
    elif isinstance(entry, StoreAttr):
        if entry.obj.source is None and id(entry.obj) not in cg.graph_outputs:
            return  # a tensor the graph made and nothing holds after it: eager's is gone too
        cg.load_local(new)
        if entry.obj.source is None:
            cg.reconstruct(entry.obj)  # a tensor the graph made: its output
        else:
            cg.reconstruct_source(entry.obj)
        cg.append(create_instruction("STORE_ATTR", argval=entry.name))
    elif isinstance(entry, ReplaceStorage):
        from .variables.dict_subclass import replay_storage

        replay_storage(cg, entry.obj, new)
    elif isinstance(entry, StoreCell):
        cg.load_local(new)
        cg.load_source(entry.box.cell_source)
        cg.append(create_instruction("STORE_ATTR", argval="cell_contents"))
    elif isinstance(entry, StoreGlobal):
        cg.load_local(new)
        cg.append(create_instruction("STORE_GLOBAL", argval=entry.name))
    elif isinstance(entry, AdvanceIterator):
        entry.obj.replay_advance(cg)
    elif isinstance(entry, ReplayChanges):
        entry.obj.replay_changes(cg)
    elif isinstance(entry, LogCall):
        from .variables.logging_calls import replay

        replay(cg, entry.logger, entry.call)
    elif isinstance(entry, ReplaceList) and entry.obj.python_type() is collections.deque:
        _refill(cg, entry.obj, "extend", new)  # a deque takes no slice assignment (maxlen is unchanged)
    elif isinstance(entry, ReplaceList):
        cg.load_local(new)
        cg.reconstruct_source(entry.obj)
        cg.load_const(None)
        cg.load_const(None)
        cg.append(create_instruction("BUILD_SLICE", arg=2), create_instruction("STORE_SUBSCR"))
    else:
        _refill(cg, entry.obj, "update", new)


def _call_on_attribute(cg, fn, entry: StoreAttr) -> None:
    """`fn(obj, name)` for the entry's object and attribute, its result dropped."""
    cg.load_callable_const(fn)
    cg.reconstruct_source(entry.obj)
    cg.load_const(entry.name)
    cg.call(2)
    cg.append(create_instruction("POP_TOP"))


def _refill(cg, obj, method: str, new) -> None:
    """`obj.clear(); obj.<method>(new)`: the container keeps its identity, with new contents."""
    cg.reconstruct_source(obj)
    cg.append(*emit.create_load_method("clear"), *emit.create_call(0), create_instruction("POP_TOP"))
    cg.reconstruct_source(obj)
    cg.append(*emit.create_load_method(method))
    cg.load_local(new)
    cg.append(*emit.create_call(1), create_instruction("POP_TOP"))
