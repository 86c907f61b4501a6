"""Backends: what turns a captured fx graph into something to call.

A backend is any callable `backend(gm, example_inputs) -> callable`; the result is called with
the graph's inputs as positional arguments. The names torch.compile users pass are built in:
`eager` runs the GraphModule, `aot_eager` runs it through AOTAutograd with no code generation,
`aot_eager_decomp_partition` adds inductor's decompositions and partitioner to that, and
`inductor` is torch's own compiler (`builtin.py`); `cudagraphs`, `tvm`, `openxla` and
`openxla_eval` hand the graph to another runtime (`external.py`); torch.compile's debugging
backends have their names too (`debugging.py`). Register more with
`@register_backend`, or from another package through the entry-point group torch.compile reads
(`torch_dynamo_backends`): a package that offers a backend to torch.compile offers it here too.
"""

from __future__ import annotations

from typing import Any, Callable

from ..exc import BackendOutputError, FramegraphError

Backend = Callable[..., Callable]
_REGISTRY: dict[str, Backend] = {}

# Installed by capability packages outside the core (framegraph.distributed): each takes the
# backend a graph is about to be handed to and returns the backend to use for that graph (the
# same one, or one that compiles the graph in pieces with it). They are asked at every compile
# because what they react to, such as a DDP forward in progress, changes from call to call.
backend_wrappers: list[Callable[[Backend], Backend]] = []


def backend_for_graph(backend: Backend) -> Backend:
    for wrap in backend_wrappers:
        backend = wrap(backend)
    return backend
ENTRY_POINT_GROUP = "torch_dynamo_backends"


def register_backend(fn: Backend | str | None = None, *, name: str | None = None):
    """Registers a backend under `name` (default: the function's name).

    Forms: `register_backend(fn)`, `register_backend(fn, name="x")`, and as decorators
    `@register_backend`, `@register_backend("x")`, `@register_backend(name="x")`.
    """
    if isinstance(fn, str):
        fn, name = None, fn

    def register(backend: Backend) -> Backend:
        if not callable(backend):
            raise TypeError(f"a backend must be callable as backend(gm, example_inputs), got {backend!r}")
        key = name or backend.__name__
        if key in _REGISTRY and _REGISTRY[key] is not backend:
            raise FramegraphError(f"a backend named {key!r} is already registered")
        _REGISTRY[key] = backend
        return backend
    return register(fn) if fn is not None else register


def list_backends() -> list[str]:
    """The names `framegraph.compile(backend=...)` accepts: the registered ones and those
    installed packages declare as entry points."""
    _load_builtins()
    return sorted({*_REGISTRY, *_entry_points()})


def lookup_backend(backend: str | Backend) -> Backend:
    """Resolves a backend name or callable; a bad one is an error that lists the valid names."""
    if callable(backend):
        return backend
    _load_builtins()
    if isinstance(backend, str) and backend in _REGISTRY:
        return _REGISTRY[backend]
    declared = _entry_points()
    if isinstance(backend, str) and backend in declared:
        return _load_entry_point(backend, declared[backend])
    raise FramegraphError(f"unknown backend {backend!r}: use one of {', '.join(list_backends())}, "
                          "or pass a callable backend(gm, example_inputs) -> callable")


def _entry_points() -> dict[str, Any]:
    """Name -> entry point of the backends installed packages declare. Read on each call that
    needs it (a miss or a listing, never a cached hit), so a package installed or put on
    sys.path while the program runs is found, as `importlib.metadata` finds it."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _load_entry_point(name: str, entry_point: Any) -> Backend:
    try:
        backend = entry_point.load()
    except Exception as error:
        raise FramegraphError(f"backend {name!r} is declared by entry point {entry_point.value!r}, "
                              f"which failed to load: {type(error).__name__}: {error}") from error
    if not callable(backend):
        raise FramegraphError(f"backend {name!r} (entry point {entry_point.value!r}) is {backend!r}, "
                              "not a callable backend(gm, example_inputs) -> callable")
    _REGISTRY[name] = backend
    return backend


def _load_builtins() -> None:
    # Deferred so that importing framegraph does not import torch.
    from . import builtin, debugging, external  # noqa: F401


def check_first_call(compiled: Callable, backend_name: str, examples: list, f_globals: dict,
                     name: str) -> Callable:
    """What is installed as `name` in place of a backend's compiled function until it has run once.

    The replacement code indexes the graph's outputs, so a backend that returns the wrong
    number of them, or something else than a tensor where the graph has one (or an int where
    it has a symbolic size), would surface as a raw unpack error or a wrong value in the
    user's results. The first call checks them against the graph's example outputs
    (`examples`) and then puts `compiled` itself under `name`, so every later call costs
    what it did without the check.
    """
    return check_first_call_of_types(compiled, backend_name, [runtime_type(example) for example in examples],
                                     f_globals, name)


def check_first_call_of_types(compiled: Callable, backend_name: str, expected: list[type], f_globals: dict,
                              name: str) -> Callable:
    """check_first_call, given what each output is at run time (`runtime_type` of the examples)."""

    def first_call(*args: Any) -> Any:
        outputs = compiled(*args)
        _check_outputs(outputs, backend_name, expected)
        if f_globals.get(name) is first_call:  # not after reset() took it out
            f_globals[name] = compiled
        return outputs

    return first_call


def runtime_type(example: Any) -> type:
    """What a graph output whose example value (fake tensor or symbol) is `example` is at run time."""
    import torch

    for symbolic, concrete in ((torch.Tensor, torch.Tensor), (torch.SymInt, int), (torch.SymFloat, float),
                               (torch.SymBool, bool)):
        if isinstance(example, symbolic):
            return concrete
    return type(example)


def _check_outputs(outputs: Any, backend_name: str, expected: list[type]) -> None:
    import torch

    where = f"the function backend {backend_name!r} compiled"
    if not isinstance(outputs, (tuple, list)):
        raise BackendOutputError(f"{where} returned {type(outputs).__name__}, expected a tuple of "
                                 f"{len(expected)} output(s), one per output of the graph it was given")
    if len(outputs) != len(expected):
        raise BackendOutputError(f"{where} returned {len(outputs)} output(s), expected {len(expected)} "
                                 "(one per output of the graph it was given)")
    for i, (value, kind) in enumerate(zip(outputs, expected)):
        if value is None and kind is torch.Tensor:
            # An operator's undefined tensor output reaches Python as None, where its fake
            # kernel made an empty tensor (`_native_multi_head_attention`'s weights when
            # need_weights=False): eager returns None too.
            continue
        if not isinstance(value, kind):
            raise BackendOutputError(f"{where} returned {type(value).__name__} as output {i}, "
                                     f"expected {'a tensor' if kind is torch.Tensor else kind.__name__}")
