"""Symbolic shapes and automatic dynamic, over torch's ShapeEnv.

A graph starts out specialised: every size and every int input is a constant, guarded
exactly. When a frame recompiles because a size or an int changed, `DynamicPolicy` marks
that dimension (or that int) dynamic, and the next compile gives it a symbol (`s77`), so one
graph serves every value. The ShapeEnv records what the trace assumed about the symbols
(`2 <= L['x'].shape[0]`, or `L['n'] == 3` when Python needed the concrete value, as in
`range(n)`), and those expressions become guards too.

Floats follow ints: specialised first, a symbol once their value changed (a SymFloat the graph
reads with `.item()` from a 0-d float64 tensor input, see OutputGraph.add_float_input). NaN,
infinities and zeros are compiled specialised: the ShapeEnv cannot reason about the first two
and has one zero. A graph made dynamic with another value serves them as well.

Sizes 0 and 1 stay specialised (the ShapeEnv does this), so a batch of 1 gets its own graph.
`mark_dynamic(t, dim)` makes a dimension dynamic from the first compile; `mark_static(t, dim)`
keeps it constant however it varies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import re
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP, DimDynamic

from .source import Source

_DYNAMIC_ATTR = "_framegraph_dynamic_dims"
_STATIC_ATTR = "_framegraph_static_dims"


def mark_dynamic(tensor: torch.Tensor, dim: int | list[int]) -> None:
    """Compiles `tensor`'s dimension(s) `dim` with a symbol from the first call on.

    `dim` is an int or a list (or tuple) of ints, each in range for the tensor; negative
    dims count from the end, as in indexing."""
    _mark(tensor, dim, _DYNAMIC_ATTR, "mark_dynamic")


def mark_static(tensor: torch.Tensor, dim: int | list[int]) -> None:
    """Keeps `tensor`'s dimension(s) `dim` a constant, even when automatic dynamic would not."""
    _mark(tensor, dim, _STATIC_ATTR, "mark_static")


def _mark(tensor: torch.Tensor, dim: int | list[int], attribute: str, api: str) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"framegraph.{api}: expected a tensor, got {type(tensor).__name__}")
    dims = [dim] if _is_index(dim) else list(dim) if isinstance(dim, (list, tuple)) else None
    if dims is None or not all(_is_index(d) for d in dims):
        raise TypeError(f"framegraph.{api}: dim must be an int or a list of ints, got {dim!r}")
    rank = tensor.dim()
    for d in dims:
        if not -rank <= d < rank:
            raise IndexError(f"framegraph.{api}: dimension {d} is out of range for a tensor with "
                             f"{rank} dimension(s) (expected {-rank} <= dim < {rank})" if rank else
                             f"framegraph.{api}: a 0-dimensional tensor has no dimension {d}")
    marked = set(getattr(tensor, attribute, ()))
    marked.update(int(d) % rank for d in dims)
    setattr(tensor, attribute, marked)


def _is_index(value: Any) -> bool:
    """An int that is not a bool (True would silently mean dimension 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def marked_dynamic(tensor: torch.Tensor) -> set[int]:
    return set(getattr(tensor, _DYNAMIC_ATTR, ()))


@dataclasses.dataclass
class FrameShapes:
    """What one code object's compiles have seen, kept between compiles."""

    sizes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    dynamic_dims: dict[str, set[int]] = dataclasses.field(default_factory=dict)
    ints: dict[str, int] = dataclasses.field(default_factory=dict)
    dynamic_ints: set[str] = dataclasses.field(default_factory=set)
    floats: dict[str, float] = dataclasses.field(default_factory=dict)
    dynamic_floats: set[str] = dataclasses.field(default_factory=set)
    static_floats: set[str] = dataclasses.field(default_factory=set)  # the backend could not keep them symbolic
    generators: dict[str, int] = dataclasses.field(default_factory=dict)  # id of the torch.Generator seen
    varying_generators: set[str] = dataclasses.field(default_factory=set)


class DynamicPolicy:
    """Decides, for one compile, which dimensions and ints get symbols (and, from the same
    memory of earlier compiles, which torch.Generator arguments vary).

    `mode` is compile(dynamic=...): None for automatic, True for every dimension and int
    from the start, False for never."""

    def __init__(self, frame: FrameShapes, mode: bool | None, automatic: bool) -> None:
        self.frame, self.mode, self.automatic = frame, mode, automatic and mode is not False

    def tensor_dims(self, source: Source, value: torch.Tensor) -> list[DimDynamic]:
        name = source.name
        sizes = tuple(value.shape)
        static = getattr(value, _STATIC_ATTR, set())
        dynamic = set(getattr(value, _DYNAMIC_ATTR, set()))
        if self.mode is True:
            dynamic.update(range(value.dim()))
        elif self.automatic:
            seen = self.frame.sizes.get(name)
            if seen is not None and len(seen) == len(sizes):
                changed = {d for d, (a, b) in enumerate(zip(seen, sizes)) if a != b}
                self.frame.dynamic_dims.setdefault(name, set()).update(changed)
            dynamic.update(self.frame.dynamic_dims.get(name, ()))
        self.frame.sizes[name] = sizes
        return [DimDynamic.DYNAMIC if d in dynamic and d not in static else DimDynamic.STATIC
                for d in range(value.dim())]

    def int_is_dynamic(self, source: Source, value: int) -> bool:
        name = source.name
        if self.mode is True:
            return True
        if self.automatic and name in self.frame.ints and self.frame.ints[name] != value:
            self.frame.dynamic_ints.add(name)
        self.frame.ints[name] = value
        return self.automatic and name in self.frame.dynamic_ints

    def float_is_dynamic(self, source: Source, value: float) -> bool:
        name = source.name
        if self.automatic and name in self.frame.floats and not same_float(self.frame.floats[name], value):
            self.frame.dynamic_floats.add(name)
        self.frame.floats[name] = value
        if not math.isfinite(value) or value == 0.0 or name in self.frame.static_floats:
            # A zero stays a constant too: its sign is lost in the ShapeEnv (sympy has one
            # zero), so a value pinned while tracing with -0.0 would be guarded as `== 0.0`.
            return False
        return self.mode is True or (self.automatic and name in self.frame.dynamic_floats)

    def generator_varies(self, source: Source, value: torch.Generator) -> bool:
        """Whether this place has held another torch.Generator in an earlier compile (the
        graph then does not hold it: see variables/rng.py)."""
        name = source.name
        if self.frame.generators.get(name, id(value)) != id(value):
            self.frame.varying_generators.add(name)
        self.frame.generators[name] = id(value)
        return name in self.frame.varying_generators


def same_float(a: float, b: float) -> bool:
    """Whether the guard of a float specialised to `a` passes for `b`: NaN is NaN, and -0.0
    is not 0.0 (`1 / x` tells them apart)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@contextlib.contextmanager
def compile_caches_off(floats: bool):
    """torch's compile caches (AOTAutograd's, inductor's FX graph cache) do not check what a
    compile assumed about a float input's value (AOTAutograd pins a float the graph returns
    to `3.0*s == 4.5`): a graph compiled for one value would be reused for another, with the
    first value baked in. A graph with dynamic float inputs is compiled without them."""
    if not floats:
        yield
        return
    import torch._functorch.config
    import torch._inductor.config

    with torch._functorch.config.patch(enable_autograd_cache=False), \
            torch._inductor.config.patch(fx_graph_cache=False, fx_graph_remote_cache=False):
        yield


@functools.lru_cache(maxsize=None)
def _torch_source_class() -> type:
    from torch._guards import GuardSource
    from torch._guards import Source as TorchSource

    @dataclasses.dataclass(frozen=True)
    class NamedSource(TorchSource):
        """Our source as torch's: the ShapeEnv names symbols and guards by `name`."""

        text: str

        @property
        def _name_template(self) -> str:
            return self.text.replace("{", "{{").replace("}", "}}")

        @property
        def guard_source(self):
            return GuardSource.LOCAL

    return NamedSource


def torch_source(source: Source) -> Any:
    return _torch_source_class()(source.name)


def is_static(shape_env, value: Any) -> bool:
    """Whether a size (or a number computed from one) the trace saw as symbolic ended up a
    constant (0/1 or a guard)."""
    if not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    return shape_env.replace(value.node.expr).is_number


def shape_guard(shape_env, placeholders: list[tuple[Source, Any]]) -> str | None:
    """Python over `L` and `G` for everything the trace assumed about symbols (compiled
    with the other guards, in a scope that has the ShapeEnv's helper functions)."""
    values = [value for _, value in placeholders]
    sources = [torch_source(source) for source, _ in placeholders]
    expressions = shape_env.produce_guards(values, sources)
    # `.shape[i]` reads what `.size()[i]` does with one call fewer (a getter, not a method call
    # then an index): about 90 ns of each check on 3.12.
    return " and ".join(f"({_SIZE_CALL.sub('.shape[', e)})" for e in expressions) if expressions else None


_SIZE_CALL = re.compile(r"\.size\(\)\[")


SHAPE_GUARD_SCOPE = dict(SYMPY_INTERP)
# An ndarray's sizes are read through the tensor view the graph is given (source.AsTensorSource).
SHAPE_GUARD_SCOPE["as_tensor"] = torch.as_tensor
