"""The hook's callback: decide, translate, harvest, and hand back (check_fn, code).

`ConvertFrame` is installed by `framegraph.compile`'s wrapper. The C hook calls it for every
fresh frame whose cached entries all miss. It returns:
- None: never look at this code again (trace rules say skip, or it cannot be compiled);
- RUN_ONLY (False): run this call as is, but keep the code's existing entries;
- (check_fn, code): a new cache entry, run now and reused while check_fn holds.

Our own failures never reach the user: the frame runs eagerly with one warning and a count in
`counters["fallback"]` (strict mode raises instead). The user's errors always reach them.
"""

from __future__ import annotations

import dataclasses
import dis
import functools
import gc
import itertools
import sys
import threading
import time
import types
import warnings
import weakref
from typing import Any, Callable

from . import config, logs
from .bytecode.verify import VerificationError
from .codegen import GRAPH_OUT, PyCodegen, replace_body, tensors_in, verify_generated
from .counters import counters
from .eval_frame import RUN_ONLY, get_cache_entries, reset_code
from .exc import (BackendCompilerFailed, GeneratedCodeError, InternalError, MarkedDynamicError,
                  RecompileLimitExceeded, RestartAnalysis, SpecializeFloats, Unsupported)
from .breaks import BreakPoint, generate_break, report_break, why_unbreakable
from .guards import CheckFn, GuardKind, compile_guards, global_state
from .output_graph import OutputGraph
from .resume_execution import label
from .shapes import DynamicPolicy, FrameShapes
from .symbolic_convert import InstructionTranslator
from .trace_rules import run_by_operator, skip_reason
from .variables.containers import TupleVariable
from .variables.ctx_managers import GlobalStateSnapshot
from .variables.generators import check_no_pending_cleanup
from .variables.base import VariableTracker
from .variables.tensor import TensorVariable

@dataclasses.dataclass
class CodeRecord:
    """What framegraph remembers about one code object it was offered."""

    ref: weakref.ref
    frame_id: int | None = None
    compiles: int = 0
    declined: bool = False      # marked SKIP in the hook; reset() offers it again
    warned_limit: bool = False
    last_reason: str = ""       # the guard failure behind the latest recompile
    in_flight: list = dataclasses.field(default_factory=list)  # see _compiled_meanwhile
    shapes: FrameShapes = dataclasses.field(default_factory=FrameShapes)  # automatic dynamic


# Keyed by identity: code objects compare equal by value, and two equal code objects (the
# per-module entry functions, for one) must not share counts or limits.
_records: dict[int, CodeRecord] = {}
_next_frame_id = itertools.count()
# Entries held by live code objects, for the accumulated limit: a compile adds one; a code
# object's death only marks the total stale (its weakref callback may run at any allocation,
# even in the middle of `+= 1`), and the total is counted again when it reaches the limit.
_total_compiles = 0
_total_stale = False
# One translation at a time in the process, so the limits hold under threads; re-entrant,
# because a backend may call compiled code. Cache hits never reach it.
_compile_lock = threading.RLock()


def record_for(code: types.CodeType) -> CodeRecord:
    key = id(code)
    record = _records.get(key)
    if record is None or record.ref() is not code:
        record = _records[key] = CodeRecord(weakref.ref(code, functools.partial(_forget, key)))
    return record


def _forget(key: int, ref: weakref.ref) -> None:
    global _total_stale
    record = _records.get(key)
    if record is not None and record.ref is ref:  # not a newer code object at a reused id
        del _records[key]
        _total_stale = True


def forget(code: types.CodeType) -> None:
    """Drops what framegraph remembers about `code` (its entries are gone)."""
    global _total_stale
    record = _records.get(id(code))
    if record is not None and record.ref() is code:
        del _records[id(code)]
        _total_stale = True


def _accumulated_limit_reached() -> bool:
    global _total_compiles, _total_stale
    if _total_compiles >= config.accumulated_recompile_limit and _total_stale:
        _total_stale = False  # before the count: a death during it marks the total stale again
        _total_compiles = sum(record.compiles for record in list(_records.values()))
    return _total_compiles >= config.accumulated_recompile_limit


def touched_codes() -> list[types.CodeType]:
    """Code objects that have entries or were declined, for reset()."""
    codes = (record.ref() for record in list(_records.values()) if record.compiles or record.declined)
    return [code for code in codes if code is not None]


def reset_state() -> None:
    """framegraph.reset(): drops every entry, forgets frame numbering, compile counts and
    declines, and takes out of the user's globals every compiled function and resume function
    put there. Under the compile lock: no other thread is half-way through a compile."""
    global _next_frame_id, _total_compiles, _total_stale
    with _compile_lock:
        for code in touched_codes():
            reset_code(code)
        _records.clear()
        _next_frame_id = itertools.count()
        _total_compiles, _total_stale = 0, False
        for installed in list(_installed):
            installed.remove()
        _installed.clear()


class _Installed:
    """The names framegraph bound in one globals dict, with the values that count as ours
    (held weakly where they can be, so a value the user rebound is never ours).

    It lives in that dict, under INSTALLED_NAME, and the registry holds it weakly: a dict
    cannot be weakly referenced, and a namespace nobody else holds must die with what we put
    in it, as it did before anything was recorded."""

    def __init__(self, f_globals: dict) -> None:
        self.f_globals = f_globals
        self.names: dict[str, list[Callable[[], Any]]] = {}

    def add(self, name: str, values: tuple) -> None:
        self.names.setdefault(name, []).extend(_ref(value) for value in values)

    def remove(self) -> None:
        for name, refs in self.names.items():
            current = self.f_globals.get(name)
            if current is not None and any(ref() is current for ref in refs):
                del self.f_globals[name]
        if self.f_globals.get(INSTALLED_NAME) is self:
            del self.f_globals[INSTALLED_NAME]


INSTALLED_NAME = "__framegraph_installed__"
_installed: "weakref.WeakSet[_Installed]" = weakref.WeakSet()


def _ref(value: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(value)
    except TypeError:
        return lambda: value


def _remember_installed(f_globals: dict, installed: list[tuple[str, tuple]]) -> None:
    if not installed:
        return
    entry = f_globals.get(INSTALLED_NAME)
    if type(entry) is not _Installed or entry.f_globals is not f_globals:  # new, or copied from another dict
        entry = f_globals[INSTALLED_NAME] = _Installed(f_globals)
        _installed.add(entry)
    for name, values in installed:
        entry.add(name, values)


# Called with (code, CheckFn, phase timings) for every entry compiled; explain() listens here.
compile_observers: list = []
# Called with (frame, replacement code, CheckFn, OutputGraph, fullgraph) for every entry
# translated; the persistent cache (framegraph/persistent) saves the translation from here.
translation_observers: list = []
# Asked, in order, before a frame is translated, except under fullgraph or compile(dynamic=...):
# provider(frame, backend) returns (the check function, replacement code, [(global name,
# values)] it installed) for an entry made without tracing (the persistent cache's), or None.
translation_providers: list = []
# Called with no argument before each frame is compiled, ahead of the recompile limits: the
# command line's torch.compile routing copies torch._dynamo.config's settings here.
before_compile: list = []


class ConvertFrame:
    def __init__(self, backend: Callable, backend_name: str, fullgraph: bool = False,
                 root_code: types.CodeType | None = None, dynamic: bool | None = None,
                 root_calls_module: bool = False) -> None:
        self.dynamic = dynamic
        self.backend = backend
        self.backend_name = backend_name
        self.fullgraph = fullgraph
        # fullgraph is about the function the user compiled. Other frames offered to the
        # hook run outside any graph anyway: code the replacement calls to rebuild results,
        # and callees of eager code (which exists only where the root could not compile).
        self.root_code = root_code
        # The root is framegraph's own one-line frame that calls a compiled module: a break
        # inside the module gives up that frame quietly, and the hook picks up the module's
        # own frames as torch.compile does (its hooks run eagerly then), so the break is
        # counted once, where it splits the user's code.
        self.root_calls_module = root_calls_module

    def __call__(self, frame) -> Any:
        code = frame.f_code
        reason = skip_reason(code)
        if reason is not None:
            return None
        if run_by_operator(sys._getframe(1)) or _torch_is_interposed():
            return RUN_ONLY
        fullgraph = self.fullgraph and code is self.root_code
        record = _records.get(id(code))
        if (record is not None and record.ref() is code and record.warned_limit
                and record.compiles >= config.recompile_limit and not fullgraph):
            return RUN_ONLY  # diagnosed and warned once already; no lock, no translation
        with _compile_lock:
            record = record_for(code)  # under the lock: two threads must not make two records
            if record.compiles and _compiled_meanwhile(code, record, frame.f_locals):
                return RUN_ONLY
            # The collector comes back only once the translation's objects (trackers, fakes,
            # the fx graph) are gone with _convert's frame: the collection the compile's
            # allocations have made due then walks what the compile keeps, not all it made.
            pause_gc = config.pause_gc_during_compile and gc.isenabled()
            if pause_gc:
                gc.disable()
            try:
                return self._locked(frame, code, record, fullgraph)
            finally:
                if pause_gc:
                    gc.enable()

    def _locked(self, frame, code: types.CodeType, record: CodeRecord, fullgraph: bool) -> Any:
        if record.frame_id is None:
            record.frame_id = next(_next_frame_id)
        previous = logs.set_compile_id(logs.CompileId(record.frame_id, record.compiles))
        try:
            for hook in before_compile:
                hook()
            if record.compiles >= config.recompile_limit:
                limit = ("recompile_limit", config.recompile_limit)
            elif _accumulated_limit_reached():
                limit = ("accumulated_recompile_limit", config.accumulated_recompile_limit)
            else:
                limit = None
            if record.compiles and (limit is None or fullgraph or not record.warned_limit):
                _note_recompile(code, record, frame.f_locals)
            if limit is None:
                return self._convert(frame, code, record, fullgraph)
            if fullgraph:
                raise RecompileLimitExceeded(
                    f"framegraph.compile(fullgraph=True): {_where(code)} hit config.{limit[0]} "
                    f"({limit[1]}) and would run eagerly from now on\nlast reason: {record.last_reason}")
            _warn_limit(code, record, *limit)
            return RUN_ONLY
        finally:
            logs.set_compile_id(previous)

    def _convert(self, frame, code: types.CodeType, record: CodeRecord, fullgraph: bool) -> Any:
        last_attempt: list[OutputGraph] = []
        try:
            provided = self._provided(frame, record, fullgraph) if translation_providers else None
            check_fn, new_code = provided or self._compile_with_restarts(frame, code, record, last_attempt)
        except (Unsupported, _RunsAsIs) as error:
            if isinstance(error, Unsupported):  # (the module's own frames will report a break inside it)
                if fullgraph:
                    raise
                counters["unsupported"][error.gb_type] += 1
                report_break(error, code, whole_frame=True)
            elif isinstance(error, _EagerModulesInLoop):
                _report_eager_frame(error.reason, code)
            remembered = _failed_variant(frame, last_attempt[0]) if record.compiles and last_attempt else None
            if remembered is None:
                return self._decline(record)
            check_fn, new_code = remembered
        except (BackendCompilerFailed, MarkedDynamicError):
            raise
        except GeneratedCodeError as error:
            # Nothing can be installed for this frame, so a fullgraph compile has failed too.
            counters["fallback"][type(error).__name__] += 1
            if isinstance(error, VerificationError):
                counters["verifier"][error.rule] += 1
            if config.strict or fullgraph:
                raise
            warnings.warn(f"framegraph generated invalid code for {_where(code)} and runs it eagerly: "
                          f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
            return self._decline(record)
        except Exception as error:
            if config.strict or fullgraph:
                raise
            counters["fallback"][type(error).__name__] += 1
            warnings.warn(f"framegraph failed to compile {_where(code)} and runs it eagerly: "
                          f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
            return self._decline(record)
        global _total_compiles
        if record.compiles:
            counters["recompiles"][label(code)] += 1
        record.compiles += 1
        _total_compiles += 1
        if new_code is not code:  # a failed variant's entry is not worth the bookkeeping
            record.in_flight.append((weakref.ref(new_code), weakref.ref(check_fn)))
        return check_fn, new_code

    def _provided(self, frame, record: CodeRecord, fullgraph: bool) -> tuple[Callable, types.CodeType] | None:
        if fullgraph or self.dynamic is not None:
            return None
        for provider in translation_providers:
            found = provider(frame, self.backend)
            if found is not None:
                check_fn, new_code, installed = found
                _remember_installed(frame.f_globals, installed)
                for guard in check_fn.check.guards:
                    # The sizes it was made for, as if traced here: the next size that differs
                    # makes that dimension dynamic (automatic dynamic shapes).
                    if guard.kind is GuardKind.TENSOR_MATCH and guard.source is not None:
                        record.shapes.sizes.setdefault(guard.source.name, guard.expected.sizes)
                return check_fn, new_code
        return None

    def _compile_with_restarts(self, frame, code: types.CodeType, record: CodeRecord,
                               last_attempt: list[OutputGraph]):
        """Translates; a break the first pass meets restarts translation, which then stops
        cleanly before the breaking instruction (`[frame/count_attempt]` in the logs).
        `last_attempt` is left holding the latest attempt's OutputGraph."""
        break_at: BreakPoint | None = None
        allow_break = not (self.fullgraph and code is self.root_code)
        progress = logs.Progress()  # one line for the frame's compile, across its restarts
        try:
            for attempt in range(config.max_restarts + 1):
                logs.set_compile_id(logs.CompileId(record.frame_id, record.compiles, attempt))
                policy = DynamicPolicy(record.shapes, self.dynamic, config.automatic_dynamic_shapes)
                try:
                    return compile_frame(frame, self.backend, self.backend_name, break_at, allow_break, policy,
                                         last_attempt, progress)
                except RestartAnalysis as restart:
                    break_at = restart.break_at
                    if self.root_calls_module and code is self.root_code and (
                            len(break_at.reason.user_stack) > 1 or break_at.reason.gb_type == EAGER_HOOKS):
                        # (torch.compile never traces the compiled module's own hooks: they run
                        # before and after the frame it picks up.)
                        raise _BreakInsideModule from None
                except SpecializeFloats:
                    pass  # the floats it names are constants now (record.shapes.static_floats)
        finally:
            progress.end()
        raise Unsupported("Unsupported frame", f"translation restarted more than {config.max_restarts} times")

    @staticmethod
    def _decline(record: CodeRecord) -> Any:
        """Runs this call eagerly; a code with no entries is not offered again until reset()."""
        if record.compiles:
            return RUN_ONLY
        record.declined = True
        return None


class _RunsAsIs(Exception):
    """The frame runs eagerly as a whole, and that is no graph break (see the subclasses)."""


class _BreakInsideModule(_RunsAsIs):
    """The module-calling root frame would break inside the module: it runs as is instead."""


class _EagerModulesInLoop(_RunsAsIs):
    """The frame calls a module whose hooks run eagerly (FSDP2's) inside a loop. Split there,
    its loop would resume after every such module, in a resume function recompiled for each
    (one module after another), to capture only the loop's own glue between them: the frame
    runs eagerly instead, and each module's forward compiles as a frame of its own, as under
    torch.compile (which skips a frame that breaks in a loop)."""

    def __init__(self, reason: Unsupported) -> None:
        super().__init__(reason.context)
        self.reason = reason


EAGER_HOOKS = "Module hooks run eagerly"


def _report_eager_frame(reason: Unsupported, code: types.CodeType) -> None:
    counters["eager_frames"][f"{reason.gb_type}: {reason.context}"] += 1
    if logs.enabled("graph_breaks"):
        where = f"{code.co_filename}:{code.co_firstlineno} ({label(code)})"
        logs.log("graph_breaks", f"Frame runs eagerly, not split (no graph break): {where}\n"
                                 f"  Reason: {reason.gb_type}: {reason.context}, called inside a loop")


def _compiled_meanwhile(code: types.CodeType, record: CodeRecord, f_locals: dict) -> bool:
    """Whether another thread compiled an entry this call fits after the hook missed (while this
    thread waited for the lock, or even before it asked): this call then runs as is rather
    than compile the same variant twice. The hook adds an entry after the callback has
    returned, outside the lock, so the entries handed back and not yet seen in the chain
    count too, until seen there or until their replacement code is gone (the entry that held
    it was dropped, by reset_code, before this thread saw it). Both are held weakly: the
    record outlives its entries."""
    chain = [entry.check_fn for entry in get_cache_entries(code)]
    pending = [(refs, refs[1]()) for refs in record.in_flight if refs[0]() is not None]
    pending = [(refs, check) for refs, check in pending
               if check is not None and not any(check is c for c in chain)]
    record.in_flight = [refs for refs, _ in pending]
    return any(check(f_locals) for check in chain + [check for _, check in pending])


def _failed_variant(frame, output: OutputGraph) -> tuple[Callable, types.CodeType] | None:
    """An entry that runs the frame as is while the guards of the failed attempt hold: a call
    they pass would be traced the same way up to the same failure, so it runs eagerly
    (always correct) instead of being translated again. None when even those guards cannot
    be built; then the frame is translated again on its next miss."""
    try:
        check = _guard(output, frame.f_globals, frame.f_code)
    except Exception:
        return None
    check.fn.check = check
    return check.fn, frame.f_code


def _torch_is_interposed() -> bool:
    """A TorchDispatchMode is on the stack, torch.jit.trace is recording, a torch.func
    transform runs eagerly (its tensors are functorch's wrappers, which fake tensors do not
    model), or torch.compile is compiling or running in this thread (torch.cond run eagerly
    compiles its branches with it; its frame hook then sits over ours): each
    must see the program's own code, so frames run as they are (and the global-state guard
    keeps existing entries from running meanwhile), as torch.compile does under a dispatch
    mode."""
    import torch
    import torch._guards

    return torch._C._len_torch_dispatch_stack() > 0 or torch._C._is_tracing() \
        or torch._C._functorch.peek_interpreter_stack() is not None \
        or torch._guards.CompileContext.try_get() is not None \
        or torch._C._dynamo.eval_frame.get_eval_frame_callback() not in (None, False)


def compile_frame(frame, backend: Callable, backend_name: str, break_at: BreakPoint | None = None,
                  allow_break: bool = True, dynamic: DynamicPolicy | None = None,
                  last_attempt: list[OutputGraph] | None = None,
                  progress: logs.Progress | None = None) -> tuple[Callable, types.CodeType]:
    """Translates one frame into a guarded replacement code object.

    Raises RestartAnalysis when the frame must be split at a graph break; the next attempt
    passes that break point as `break_at`. `last_attempt`, if given, is left holding this
    attempt's OutputGraph (its guards describe a failed variant)."""
    start = time.perf_counter()
    output = OutputGraph(frame.f_globals, backend, backend_name, dynamic)
    if progress is not None:
        output.progress = progress
    if last_attempt is not None:
        last_attempt[:] = [output]
    try:
        return _compile(frame, output, break_at, allow_break, start)
    finally:
        if progress is None:
            output.progress.end()
        _remember_installed(frame.f_globals, output.installed)
        output.release_real_tensors()


def _compile(frame, output: OutputGraph, break_at: BreakPoint | None, allow_break: bool,
             start: float) -> tuple[Callable, types.CodeType]:
    code = frame.f_code
    output.guards.add(GuardKind.GLOBAL_STATE, None, global_state(), _entry_line(code))
    tx = InstructionTranslator(code, frame.f_locals, frame.f_globals, frame.f_builtins, output, frame.closure)
    tx.stop_at = break_at.index if break_at is not None else -1
    snapshot = GlobalStateSnapshot()
    try:
        result = tx.run()
    except Unsupported as error:
        _maybe_restart(tx, error, allow_break and break_at is None)
        raise
    finally:
        # Modes still open were entered under the fake mode, which their exit must see too:
        # inference_mode's exit restores the dispatch keys it saved on entry.
        with output.fake_mode:
            snapshot.restore(output.open_modes)
    try:
        if result is None:  # stopped at the break point
            check_no_pending_cleanup(output)
            inst = tx.instructions[break_at.index]
            new_code = generate_break(tx, inst, output, lambda cg, values: _emit_graph(cg, output, values))
            report_break(break_at.reason, code)
        else:
            new_code = _generate(code, output, result)
    except Unsupported as error:
        # What the trace left cannot outlive it (a started generator): break earlier, if
        # that is where the problem began and breaks are allowed.
        earlier = error.break_instead
        if earlier is not None and allow_break and (break_at is None or earlier.index < break_at.index):
            raise RestartAnalysis(earlier) from None
        raise
    verify_start = time.perf_counter()
    verify_generated(new_code, replacement_for=code)
    output.timings["verify"] = time.perf_counter() - verify_start
    guards_start = time.perf_counter()
    check = _guard(output, frame.f_globals, code)
    output.timings["guards"] = time.perf_counter() - guards_start
    if logs.enabled("bytecode"):
        logs.log("bytecode", f"ORIGINAL BYTECODE {_where(code, listing=True)}\n{_listing(code)}\n\n"
                             f"MODIFIED BYTECODE {_where(code, listing=True)}\n{_listing(new_code)}\n")
    if logs.enabled("guards"):
        logs.log("guards", f"GUARDS for {_where(code)}:\n{check.describe()}")
    _record_phases(output.timings, time.perf_counter() - start)
    check.fn.check = check  # so tools can read the guard text from a cache entry
    for observer in compile_observers:
        observer(code, check, output.timings)
    for observer in translation_observers:
        observer(frame, new_code, check, output, not allow_break)
    return check.fn, new_code


def _record_phases(timings: dict[str, float], total: float) -> None:
    """Adds this compile's seconds per phase to counters["compile_seconds"]."""
    phases = counters["compile_seconds"]
    for phase, seconds in timings.items():
        phases[phase] += seconds
    phases["translation"] += total - sum(timings.values())
    phases["total"] += total


def _maybe_restart(tx: InstructionTranslator, error: Unsupported, allow: bool) -> None:
    """Turns an Unsupported into a restart that splits the frame, where a split is possible."""
    if not allow:
        return
    if error.break_instead is not None:
        raise RestartAnalysis(error.break_instead) from None
    inst = tx.current  # the root frame's instruction: a CALL when the error came from a callee
    if error.gb_type == EAGER_HOOKS and _in_loop(tx, inst):
        raise _EagerModulesInLoop(error) from None
    why_not = why_unbreakable(tx, inst, error)
    if why_not is not None:
        error.context = f"{error.context} ({why_not}, so the whole frame runs eagerly)"
        return
    raise RestartAnalysis(BreakPoint(tx.index_of[inst], error)) from None


def _in_loop(tx: InstructionTranslator, inst) -> bool:
    """Whether a backward jump of the frame spans `inst` (it may run again in this call)."""
    index = tx.index_of[inst]
    return any(jump.target is not None and tx.index_of[jump.target] <= index < position
               for position, jump in enumerate(tx.instructions))


def _emit_graph(cg: PyCodegen, output: OutputGraph, values: list[VariableTracker]) -> None:
    """Calls the graph computing every new tensor in `values` and in the side-effect ledger;
    afterwards cg.reconstruct can rebuild any of them. The ledger is replayed separately,
    after the values the caller needs are loaded: a value read from a container the ledger
    changes must be read before the change."""
    graph_outputs = [t for t in tensors_in(TupleVariable([*values, *output.side_effects.values()]))
                     if t.source is None]
    compiled = output.compile_subgraph(graph_outputs)
    if compiled is None and graph_outputs:
        raise InternalError("tensors were made but no graph was compiled")
    if output.grad_mode_after is not None:
        import torch

        cg.load_callable_const(torch._C._set_grad_enabled)
        cg.load_const(output.grad_mode_after)
        cg.call(1)
        cg.pop_top()
    if compiled is not None:
        cg.call_compiled_graph(compiled)
        cg.store_local(GRAPH_OUT)
        cg.graph_outputs = {id(t): i for i, t in enumerate(graph_outputs)}


def _generate(code: types.CodeType, output: OutputGraph, result) -> types.CodeType:
    """The replacement body: call the graph (if any), load the result, replay side effects,
    return."""
    cg = PyCodegen(code, output.f_globals)
    graph_outputs = [t for t in tensors_in(result) if t.source is None]
    if type(result) is TensorVariable and graph_outputs == [result] and not output.side_effects:
        compiled = output.compile_subgraph(graph_outputs)
        cg.call_compiled_graph(compiled)
        cg.unpack_sequence(1)  # the seed's shape: call, unpack the one output, return it
    else:
        _emit_graph(cg, output, [result])
        cg.reconstruct(result)
        output.side_effects.codegen_replay(cg)
    cg.return_value()
    return replace_body(code, cg.instructions)


def _guard(output: OutputGraph, f_globals: dict, code: types.CodeType) -> CheckFn:
    output.input_guards()
    tensor_sources = tuple(inp.object_source for inp in output.inputs if inp.spec is not None)
    if len(tensor_sources) > 1:
        output.guards.add(GuardKind.DISTINCT, None, tensor_sources, _entry_line(code))
    return compile_guards(output.guards, f_globals)


def _entry_line(code: types.CodeType) -> str:
    """The user line of a guard the frame needs as a whole (the global state it ran under, its
    tensor arguments being distinct): its `def` line."""
    return f"{code.co_filename}:{code.co_firstlineno} in {label(code)}"


def _where(code: types.CodeType, listing: bool = False) -> str:
    if listing:
        return f"{label(code)} {code.co_filename} line {code.co_firstlineno}"
    return f"{label(code)} ({code.co_filename}:{code.co_firstlineno})"


def _listing(code: types.CodeType) -> str:
    return dis.Bytecode(code).dis().rstrip("\n")


def _note_recompile(code: types.CodeType, record: CodeRecord, f_locals: dict) -> None:
    """Finds which guard of each existing entry failed, for the recompile log and the limit
    warning: one failure per entry, newest entry first, with the user line behind it."""
    failures = []
    for entry in get_cache_entries(code):
        check = getattr(entry.check_fn, "check", None)
        failure = check.first_failure(f_locals) if check is not None else None
        if failure is not None:
            failures.append(failure)
    record.last_reason = failures[0].split("  #")[0] if failures else "(no guard failed)"
    if logs.enabled("recompiles"):
        lines = [f"Recompiling function {label(code)} in {code.co_filename}:{code.co_firstlineno}",
                 "triggered by the following guard failure(s):"]
        lines += [f"- {failure}" for failure in failures]
        logs.log("recompiles", "\n".join(lines))


def _warn_limit(code: types.CodeType, record: CodeRecord, setting: str, limit: int) -> None:
    if record.warned_limit:
        return
    record.warned_limit = True
    warnings.warn(f"framegraph hit config.{setting} ({limit})\n"
                  f"function: {label(code)!r} ({code.co_filename}:{code.co_firstlineno})\n"
                  f"last reason: {record.last_reason}\n"
                  "To see every recompile and why, run with FRAMEGRAPH_LOGS=recompiles. From now on "
                  "this function runs eagerly where no compiled entry fits.", RuntimeWarning, stacklevel=2)
