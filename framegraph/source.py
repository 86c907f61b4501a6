"""Sources: where a value the translator holds came from, as frozen records.

Every Source has two readings that must always agree:
- `name`: the expression a guard evaluates to reach the value, from the frame's locals `L` and
  globals `G` (`L['x']`, `G['model'].layers[0].weight`);
- `reconstruct(codegen)`: the bytecode that loads the same value in generated code.

A value without a source was made during tracing; it cannot be guarded, only rebuilt.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol


class Codegen(Protocol):
    """The part of the bytecode generator that sources use to load themselves."""

    def load_local(self, name: str) -> None: ...
    def load_cell(self, name: str) -> None: ...
    def load_global(self, name: str) -> None: ...
    def load_attr(self, name: str) -> None: ...
    def load_const(self, value: Any) -> None: ...
    def load_builtin(self, name: str) -> None: ...
    def subscript(self) -> None: ...
    def call(self, nargs: int, kw_names: tuple[str, ...] = ()) -> None: ...
    def load_method(self, name: str) -> None: ...
    def load_source(self, source: "Source") -> None: ...
    def load_callable_const(self, value: Any) -> None: ...


def _source(cls: type) -> type:
    """A frozen dataclass whose hash and name are computed once. Sources are dict keys
    everywhere (guards, inputs, memos) and are named for every input, guard and placeholder; a
    nested one (`L['self'].layer1[0].conv1.weight`) walks its whole chain for either, each
    time: about 4% of a CNN's translation."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    cls.__hash__ = _once(cls.__hash__, "_hash")
    named = cls.__dict__.get("name")
    if isinstance(named, property):
        cls.name = property(_once(named.fget, "_name"), doc=named.__doc__)
    return cls


def _once(compute, slot: str):
    def cached(self):
        known = self.__dict__.get(slot)
        if known is None:
            known = compute(self)
            object.__setattr__(self, slot, known)
        return known
    return cached


@_source
class Source:
    @property
    def name(self) -> str:
        raise NotImplementedError

    def reconstruct(self, codegen: Codegen) -> None:
        raise NotImplementedError

    def expression(self, base: str) -> str:
        """This source read from an already-evaluated base expression (guards evaluate each
        base once and reuse it)."""
        raise NotImplementedError

    @property
    def root(self) -> "Source":
        """The local or global this chain of attribute and item reads starts from."""
        return self

    def __str__(self) -> str:
        return self.name

    def __getstate__(self) -> dict:
        # a str's hash differs between processes: a pickled source (persistent cache) drops it,
        # and its name, which the loading process makes again
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_name")}


@_source
class LocalSource(Source):
    """A local variable, argument or free variable of the frame being compiled."""

    local_name: str

    @property
    def name(self) -> str:
        return f"L[{self.local_name!r}]"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_local(self.local_name)


@_source
class FrameCellSource(Source):
    """The cell object of a free variable of the frame being compiled (where a write to it is
    replayed); never guarded: its contents are the local of the same name."""

    local_name: str

    @property
    def name(self) -> str:
        return f"cell {self.local_name!r}"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_cell(self.local_name)


@_source
class GlobalSource(Source):
    global_name: str

    @property
    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_global(self.global_name)


@_source
class AttrSource(Source):
    base: Source
    member: str

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        if self.member.isidentifier():
            return f"{base}.{self.member}"
        return f"getattr({base}, {self.member!r})"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base)
        codegen.load_attr(self.member)

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class AsTensorSource(Source):
    """`torch.as_tensor(base)`: the tensor view of an ndarray, which a graph takes in its place.
    Only generated code loads it; guards read the ndarray itself."""

    base: Source

    @property
    def name(self) -> str:
        return f"as_tensor({self.base.name})"

    def reconstruct(self, codegen: Codegen) -> None:
        import torch

        codegen.load_callable_const(torch.as_tensor)
        codegen.load_source(self.base)
        codegen.call(1)

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class FloatTensorSource(Source):
    """A dynamic float as the graph takes it: a 0-d float64 CPU tensor made from `base` at each
    call (backends take tensors, not Python floats; the graph reads the number with
    `.item()`). Only generated code loads it; guards read the float itself."""

    base: Source

    @property
    def name(self) -> str:
        return f"scalar_tensor({self.base.name})"

    def reconstruct(self, codegen: Codegen) -> None:
        import torch

        codegen.load_callable_const(torch.scalar_tensor)
        codegen.load_source(self.base)
        codegen.load_const(torch.float64)
        codegen.load_const(_CPU)
        codegen.call(3, ("dtype", "device"))

    @property
    def root(self) -> Source:
        return self.base.root


_CPU = "cpu"  # a Python float is a CPU number, whatever torch.set_default_device says


@_source
class ItemSource(Source):
    """`base[index]` for a constant index: an int, a str, or another hashable constant."""

    base: Source
    index: Any

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        return f"{base}[{self.index!r}]"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base)
        codegen.load_const(self.index)
        codegen.subscript()

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class TypeSource(Source):
    """`type(base)`: where class attributes (methods, properties) of an object are read."""

    base: Source

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        return f"type({base})"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_builtin("type")
        codegen.load_source(self.base)
        codegen.call(1)

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class IteratorStateSource(Source):
    """Part of the state of a list, tuple or range iterator, read without advancing it:
    `it.__reduce__()` is `(iter, (sequence,), position)`."""

    base: Source
    part: str  # "sequence" or "position"

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        suffix = "[1][0]" if self.part == "sequence" else "[2]"
        return f"{base}.__reduce__(){suffix}"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base)
        codegen.load_method("__reduce__")
        codegen.call(0)
        for index in ((1, 0) if self.part == "sequence" else (2,)):
            codegen.load_const(index)
            codegen.subscript()

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class MethodCallSource(Source):
    """`base.method(*args)` with constant arguments, for what a guard reads by calling a
    method: metadata (`storage_offset()`), one environment variable (`environ.get('X')`)."""

    base: Source
    method: str
    args: tuple = ()

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        return f"{base}.{self.method}({', '.join(repr(arg) for arg in self.args)})"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_source(self.base)
        codegen.load_method(self.method)
        for arg in self.args:
            codegen.load_const(arg)
        codegen.call(len(self.args))

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class DictEntriesSource(Source):
    """`list(base.keys())` or `list(base.values())`: a dict's keys or values in order, for a
    dict whose keys a guard cannot spell as constants (tensors, which hash by identity).
    Read once per guard check or graph call when several sources share it."""

    base: Source
    part: str  # "keys" or "values"

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        return f"list({base}.{self.part}())"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_callable_const(list)
        codegen.load_source(self.base)
        codegen.load_method(self.part)
        codegen.call(0)
        codegen.call(1)

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class InstanceDictSource(Source):
    """`base.__dict__` as the generic lookup reads it (`object.__getattribute__`), so that a
    class's own `__getattribute__` does not run: where the instance attributes of such a
    class live."""

    base: Source

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        return f"object.__getattribute__({base}, '__dict__')"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_const(object)
        codegen.load_method("__getattribute__")
        codegen.load_source(self.base)
        codegen.load_const("__dict__")
        codegen.call(2)

    @property
    def root(self) -> Source:
        return self.base.root


@_source
class StorageItemSource(Source):
    """`owner.__getitem__(base, index)`: an item of a dict or list subclass read from its
    storage, bypassing a `__getitem__` the subclass defines (`owner` is dict or list)."""

    base: Source
    index: Any
    owner: type

    @property
    def name(self) -> str:
        return self.expression(self.base.name)

    def expression(self, base: str) -> str:
        return f"{self.owner.__name__}.__getitem__({base}, {self.index!r})"

    def reconstruct(self, codegen: Codegen) -> None:
        codegen.load_const(self.owner)
        codegen.load_method("__getitem__")
        codegen.load_source(self.base)
        codegen.load_const(self.index)
        codegen.call(2)

    @property
    def root(self) -> Source:
        return self.base.root
