"""A frontend cache that survives the process: warm starts without tracing.

    FRAMEGRAPH_CACHE_DIR=/path/to/cache python train.py      # or framegraph.config.cache_dir

Each translated frame is saved under a key made of its code object's contents, the Python,
torch and framegraph versions, every setting and the backend's name: its replacement code,
its resume functions, its guards as data with their guard program's layout (`plan`: rebuilt
from the live values at load, not laid out again), and its fx graphs. The code is not verified
again at load: it passed the verifier when it was made, and the file's digest says these are
its bytes. A later process that meets a frame with the same key takes the saved entries
newest first, re-resolves each one's guards against the live objects (`portable.py`) and
checks them on the frame's arguments; the first that holds is installed as if just traced,
and its graphs go to the backend (where inductor's own caches apply). A frame whose key or
guards do not match is traced as usual, and its translation saved. Each entry also carries
its outline (`_outline`: the types of the frame's locals and the global
state its guards fix), compared before the entry is unpickled: every compiled module runs
through one `module_call`, so one file holds the entries of every model and mode, and each
outline keeps up to `recompile_limit` of them.

What is not saved, and why (`counters["persistent"]` counts each):
- a translation whose guards hold something another process cannot name (an instance met in
  the program, a closure, a lambda): `NotPortable`;
- graphs with sizes that depend on data (unbacked symbols, checked by runtime asserts), for a
  backend other than `eager`: the ShapeEnv is not saved, and such a backend would need its
  unbacked symbols. For `eager` they are saved, asserts included, as the saved code runs.
- a parametrized module's reads (`torch.nn.utils.parametrize` makes a class per instance
  whose property closes over the instance).

Symbolic sizes are saved: the ShapeEnv's guards are Python text over the frame's locals, saved
as any other guard. At load, a backend that compiles is handed fakes made from the live inputs
with the trace's dynamic dimensions (`graphs.fake_inputs`), in a new ShapeEnv; whatever that
compile assumes about their symbols is added to the saved guards, so a later call that breaks
it traces.

The cache is off unless `config.cache_dir` is set. Saving or loading never fails a compile: a
problem is a warning, and the frame is traced. The files are pickles: point `cache_dir` only
at a directory you would trust with your code, as with inductor's caches.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sys
import time
import types
import warnings
from typing import Any, Callable

import torch
from torch._subclasses.fake_tensor import FakeTensor

from .. import config, convert_frame, output_graph
from ..backends import backend_for_graph, check_first_call_of_types, lookup_backend, runtime_type
from ..codegen import verify_generated
from ..counters import counters
from ..exc import BackendCompilerFailed, InternalError
from ..guards import SHAPE_GUARD_SCOPE, Guard, GuardKind, compile_guards, global_state, read_source
from ..resume_execution import CACHE, ResumeOrigin
from ..shapes import shape_guard
from ..source import LocalSource
from ..symbolic_convert.handlers.imports import SYS_MODULES_GLOBAL
from . import store
from .graphs import eager_forward, fake_inputs, graph_bytes, graph_module, is_symbolic, propagate, spec_source
from .portable import NotPortable, Relocated, Stale, code_digest, dumps, loads, reference

_RESUME_PREFIX = "__framegraph_resume_at_"


def _key(code: types.CodeType, backend: Callable) -> str:
    settings = sorted((name, repr(getattr(config, name))) for name in config._DEFAULTS
                      if name not in ("cache_dir", "debug_force_break"))
    return hashlib.sha256(repr((code_digest(code), store.versions(), settings, _backend_key(backend))).encode()).hexdigest()


def _backend_key(backend: Callable) -> str:
    """The backend by what it is, not by an address (a callable instance's repr has one)."""
    named = backend if isinstance(backend, (types.FunctionType, type, functools.partial)) else type(backend)
    named = getattr(named, "func", named)
    return f"{getattr(named, '__module__', '?')}.{getattr(named, '__qualname__', '?')}"


def _original(code: types.CodeType) -> types.CodeType:
    origin = CACHE.origin(code)
    return origin.code if origin is not None else code


# --- saving -----------------------------------------------------------------------------------

def _on_translation(frame, new_code: types.CodeType, check, output, fullgraph: bool) -> None:
    if config.cache_dir is None or config.debug_force_break is not None or fullgraph or output.dynamic.mode is not None:
        return  # (a translation made under fullgraph or compile(dynamic=...) serves only those)
    try:
        entry = (_outline(check.guards), _entry(frame.f_code, new_code, check, output))
    except NotPortable as error:
        counters["persistent"]["not saved"] += 1
        counters["persistent_refusals"][str(error)] += 1
        return
    except Exception as error:  # our own bug: the compile itself stands
        counters["persistent"]["not saved"] += 1
        warnings.warn(f"framegraph could not save the translation of {frame.f_code.co_name}: "
                      f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
        return
    try:
        path = store.file_for(config.cache_dir, _key(frame.f_code, output.backend))
        entries = store.read(path, warn=False)
        # Up to recompile_limit entries for each outline: a model compiled after others
        # through the same code (every module runs through one `module_call`) does not push
        # theirs out.
        same = [other for other in entries if other[0] == entry[0]]
        drop = {id(other) for other in same[:max(0, len(same) + 1 - config.recompile_limit)]}
        entries = [other for other in entries if id(other) not in drop] + [entry]
        store.write(path, entries[-store.MAX_ENTRIES:])
    except Exception as error:  # a full disk, a directory we may not write: the compile stands
        warnings.warn(f"framegraph could not save the translation of {frame.f_code.co_name}: "
                      f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
        return
    counters["persistent"]["saved"] += 1


def _entry(code: types.CodeType, new_code: types.CodeType, check, output) -> bytes:
    if output.needs_runtime_asserts and output.backend is not lookup_backend("eager"):
        # (the eager backend runs the saved code, asserts included, and reads no example)
        raise NotPortable("the graph has sizes that depend on data, for a backend other than eager")
    graphs = {name: (graph_bytes(gm), [_input_spec(example, source) for example, source in zip(examples, sources)],
                     _output_types(gm))
              for name, gm, examples, sources in output.harvested}
    resumes = []
    # The guards and code may read modules through it whether this translation or an earlier
    # one put it there.
    sys_modules = output.f_globals.get(SYS_MODULES_GLOBAL) is sys.modules
    for name, values in output.installed:
        value = values[0]
        if name in graphs or name == SYS_MODULES_GLOBAL:
            continue
        if name.startswith(_RESUME_PREFIX) and isinstance(value, types.FunctionType):
            origin = CACHE.origin(value.__code__)
            # (equal, not identical: resume functions are shared by code objects equal by value,
            # as a function defined again in the same process is)
            if origin is None or origin.code != _original(code):
                raise NotPortable(f"resume function {name} does not come from this frame's function")
            resumes.append((name, value.__code__, origin.body_start, origin.original_start))
        else:
            raise NotPortable(f"the translation installs {name}, an object of the program")
    plan = getattr(check, "plan", None)  # the guard program's layout (compile_guards)
    try:
        plan = dumps(plan) if plan is not None else None
    except NotPortable:  # an item key no other process can name: laid out again at load
        plan = None
    try:
        return dumps({"guards": list(check.guards), "code": new_code, "graphs": graphs, "resumes": resumes,
                      "sys_modules": sys_modules, "verified": config.verify_bytecode, "plan": plan})
    except NotPortable:
        for guard in check.guards:  # a refusal names the guard it comes from
            try:
                dumps(guard)
            except NotPortable as error:
                raise NotPortable(f"{error} (guard {guard.kind.name} on "
                                  f"{guard.source.name if guard.source else '-'})") from None
        raise


def _outline(guards: list) -> tuple:
    """What an entry is for, compared before it is unpickled: the type of each local the
    guards fix, as (local, module, qualname), and the global state (grad mode, autocast ...)
    they require. The entries of other models sharing the code, or of the same model under
    another grad mode, cost nothing to pass over."""
    types_ = tuple(sorted({(guard.source.local_name, guard.expected.__module__, guard.expected.__qualname__)
                           for guard in guards
                           if guard.kind is GuardKind.TYPE_MATCH and isinstance(guard.source, LocalSource)}))
    states = [guard.expected for guard in guards if guard.kind is GuardKind.GLOBAL_STATE]
    return types_, states[0] if len(states) == 1 else None


def _outline_holds(outline: tuple, f_locals: dict) -> bool:
    types_, state = outline
    for local, module, qualname in types_:
        cls = type(f_locals[local]) if local in f_locals else None
        if cls is None or cls.__module__ != module or cls.__qualname__ != qualname:
            return False
    return state is None or state == global_state()


def _output_types(gm: torch.fx.GraphModule) -> list[type]:
    """What each output of the graph is at run time, for the check of the backend's first call."""
    (outputs,) = [node.args[0] for node in gm.graph.nodes if node.op == "output"]
    return [runtime_type(node.meta["val"]) if isinstance(node, torch.fx.Node) else type(node) for node in outputs]


def _input_spec(example: Any, source: Any) -> tuple:
    """What the input a backend is handed at load is made from: a static tensor's facts; or,
    for an input with symbols, its source, read in the live frame (see graphs.fake_inputs)."""
    if isinstance(example, torch.SymInt):
        return ("int", source, ())
    if type(example) is not FakeTensor:
        raise NotPortable(f"a graph input is a {type(example).__name__}, not a tensor of fixed kind")
    if getattr(example, "item_memo", None) is not None:
        raise NotPortable("a graph input is a float made symbolic")
    dims = tuple(i for i, size in enumerate(example.shape) if not isinstance(size, int))
    if dims:
        return ("tensor", source, dims)
    if not all(isinstance(s, int) for s in (*example.stride(), example.storage_offset())):
        raise NotPortable("a graph input has symbolic strides or offset with static sizes")
    # A parameter's fake is made from the live parameter, as a trace makes it: DDP's split
    # finds the parameters a graph reads, and those it ignores, by their fakes.
    return (tuple(example.shape), tuple(example.stride()), example.storage_offset(), example.dtype,
            example.device, example.requires_grad, source if isinstance(example, torch.nn.Parameter) else None)


# --- loading ----------------------------------------------------------------------------------

def _provide(frame, backend: Callable) -> tuple | None:
    if config.cache_dir is None or config.debug_force_break is not None:
        return None
    start = time.perf_counter()
    try:
        return _lookup(frame, backend, getattr(backend, "__name__", type(backend).__name__))
    except BackendCompilerFailed:
        raise  # as when the graph was traced: the backend's failure is the user's to see
    except Exception as error:  # our own bug: the frame is traced instead
        warnings.warn(f"framegraph could not look up {frame.f_code.co_name} in its cache, and traces it: "
                      f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
        return None
    finally:
        seconds = counters["compile_seconds"]
        seconds["persistent_load"] += time.perf_counter() - start
        seconds["total"] += time.perf_counter() - start


def _lookup(frame, backend: Callable, backend_name: str) -> tuple | None:
    code = frame.f_code
    path = store.file_for(config.cache_dir, _key(code, backend))
    for outline, data in reversed(store.read(path)):
        if not _outline_holds(outline, frame.f_locals):
            counters["persistent"]["passed over"] += 1
            continue
        try:
            entry = loads(data)
        except Stale:
            counters["persistent"]["stale"] += 1
            continue
        except Exception as error:
            warnings.warn(f"framegraph ignores an entry of its cache file {path}: {type(error).__name__}: {error}",
                          RuntimeWarning, stacklevel=2)
            continue
        try:
            found = _install_if_it_holds(frame, entry, backend, backend_name)
        except BackendCompilerFailed:
            raise
        except Exception as error:
            warnings.warn(f"framegraph could not install a saved translation of {code.co_name}, and "
                          f"traces it: {type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
            return None
        if found is not None:
            counters["persistent"]["hits"] += 1
            return found
    counters["persistent"]["misses"] += 1
    return None


def _install_if_it_holds(frame, entry: dict, backend: Callable, backend_name: str) -> tuple | None:
    f_globals = frame.f_globals
    installed = []
    if entry["sys_modules"] and f_globals.get(SYS_MODULES_GLOBAL) is not sys.modules:
        f_globals[SYS_MODULES_GLOBAL] = sys.modules  # the guards read modules through it
        installed.append((SYS_MODULES_GLOBAL, (sys.modules,)))
    guards = _relocated(entry["guards"], frame.f_locals, f_globals)
    check = None
    if guards is not None:
        plan = entry.get("plan")
        check = compile_guards(guards, f_globals, loads(plan) if plan is not None else None)
    if check is None or not check(frame.f_locals):
        counters["persistent"]["guards failed"] += 1
        if check is not None:
            counters["persistent_guard_failures"][check.first_failure(frame.f_locals) or "?"] += 1
        for name, _ in installed:
            del f_globals[name]
        return None
    try:
        return _install(frame, entry, check, installed, backend, backend_name)
    except BaseException:
        for name, _ in installed:  # nothing half-installed stays behind
            f_globals.pop(name, None)
        raise


def _install(frame, entry: dict, check, installed: list, backend: Callable, backend_name: str) -> tuple:
    f_globals = frame.f_globals
    renames = {}
    original = _original(frame.f_code)
    # Each code object of an entry saved with "verified" passed the verifier when it was made
    # (resume functions in resume_execution, the frame's code in convert_frame, against this
    # same original: the key holds its digest), and the file's SHA-256 (store.read) says these
    # are its bytes; renaming co_names changes nothing the verifier reads. Verifying again would
    # be a fifth of a warm start.
    verify = not entry.get("verified")
    for name, code, body_start, original_start in entry["resumes"]:
        if verify:
            verify_generated(code)
        offset = int(name[len(_RESUME_PREFIX):].split("_")[0])
        renames[name] = fresh = CACHE.adopt(code, ResumeOrigin(original, body_start, original_start), offset)
        function = types.FunctionType(code, f_globals, fresh)
        f_globals[fresh] = function
        installed.append((fresh, (function,)))
    shape_guards = []
    for name, (graph, inputs, output_types) in entry["graphs"].items():
        renames[name] = fresh = f"__compiled_fn_{next(output_graph._compiled_fn_ids)}"
        chosen = backend_for_graph(backend)
        # The eager backend, which reads neither inputs nor values, runs the saved code; a
        # GraphModule is built only for a backend or an observer (explain, the report) to see.
        eager = chosen is lookup_backend("eager")
        compiled = eager_forward(graph) if eager and not output_graph.graph_observers else None
        if compiled is not None:
            counters["stats"]["unique_graphs"] += 1
        else:
            gm, examples, shape_env = graph_module(graph), [], None
            if not eager:
                reads = [spec_source(spec) for spec in inputs]
                values = iter(_read_all([s for s in reads if s is not None], frame.f_locals, f_globals) or ())
                examples, shape_env = fake_inputs(inputs, [next(values, None) if s is not None else None for s in reads])
                propagate(gm, examples)
            compiled = _backend_compile(gm, examples, chosen, backend_name)
            symbolic = [(spec[1], example) for spec, example in zip(inputs, examples) if is_symbolic(spec)]
            if symbolic:
                # What this compile assumed about the symbols (the trace's assumptions, and the
                # backend's) is checked from now on, with the saved guards.
                expression = shape_guard(shape_env, symbolic)
                if expression is not None:
                    shape_guards.append(Guard(GuardKind.SHAPE_ENV, None, expression, ""))
        first_call = check_first_call_of_types(compiled, backend_name, output_types, f_globals, fresh)
        f_globals[fresh] = first_call
        installed.append((fresh, (first_call, compiled)))
    new_code = entry["code"]
    new_code = new_code.replace(co_names=tuple(renames.get(name, name) for name in new_code.co_names))
    if verify:
        verify_generated(new_code, replacement_for=frame.f_code)
    if shape_guards:
        check = compile_guards([*check.guards, *shape_guards], f_globals)
        if not check(frame.f_locals):
            raise InternalError(f"the guards of a loaded translation of {frame.f_code.co_name} fail on the call "
                                "its graphs were compiled for")
    check.fn.check = check
    return check.fn, new_code, installed


def _backend_compile(gm: torch.fx.GraphModule, examples: list, backend: Callable, backend_name: str) -> Callable:
    """What output_graph does with a harvested graph, for a loaded one (`backend` is already
    the one backend_for_graph chose)."""
    try:
        compiled = backend(gm, examples)
    except Exception as error:
        raise BackendCompilerFailed(backend_name, error) from error
    compiled = output_graph.ready_to_install(compiled, gm, backend_name)
    counters["stats"]["unique_graphs"] += 1
    return compiled


def _read_all(sources: list, f_locals: dict, f_globals: dict) -> tuple | None:
    """What each source reads in the live frame, in one compiled read; None if a read fails."""
    if not sources:
        return ()
    try:
        return read_source("(" + "".join(f"{source.name}, " for source in sources) + ")", f_locals,
                           dict(SHAPE_GUARD_SCOPE, G=f_globals))
    except Exception:
        return None


def _relocated(guards: list, f_locals: dict, f_globals: dict) -> list | None:
    """The guards with each identity guard on an object without a name pointed at what its
    source reads now, if that is the same code; None if one is not."""
    moved = [i for i, guard in enumerate(guards) if isinstance(guard.expected, Relocated)]
    if not moved:
        return guards
    # (if a read fails, so would the check)
    values = _read_all([guards[i].source for i in moved], f_locals, f_globals)
    if values is None:
        return None
    out = list(guards)
    for i, value in zip(moved, values):
        if not guards[i].expected.accepts(value):
            return None
        out[i] = dataclasses.replace(guards[i], expected=reference(value))
    return out


def enable() -> None:
    """Registers the cache with the core (done on import of framegraph.api; it does nothing
    while `config.cache_dir` is None)."""
    if _on_translation not in convert_frame.translation_observers:
        convert_frame.translation_observers.append(_on_translation)
        convert_frame.translation_providers.append(_provide)


enable()
