"""Break-everywhere fuzzing: every function of the capture suites, split before every
instruction framegraph translates for it, must still behave exactly as it does eagerly.

    python -m tests.fuzz.break_everywhere [--max-cases N] [--pairs] [--triples] [--samples K]
                                          [--jobs J] [--case SUBSTRING] [--part K/N] [--at POINT ...]

Cases are the test-case lists of `tests/capture/test_*.py` (module-level lists of tuples
`(function, argument factory, ...)`, and `(module factory, argument factory, kwargs, ...)`
for modules). For each case a discovery run (no forced break, itself compared with eager)
records every code object framegraph translates: the function, what it inlines, and the
frames a break hands to the hook. Each instruction of those is a break point; a run sets
`config.debug_force_break` to one of them (or a random pair or triple), calls the compiled
function three times (the second and third are cache hits) and compares results, raised
exceptions, mutated arguments, module state and the test module's global data with eager.

A forced break either splits a frame (`split`), or makes a frame run eagerly where no split
is possible (`unbreakable`: why_unbreakable refused it), or is never reached (`unreached`).
A frame that ran eagerly because framegraph itself failed is a `fallback`.

Runs go to worker processes in batches. A worker announces each run before it starts it, so
a crash (a segfault, with faulthandler's traceback) or a hang is charged to the run it
interrupted; that run is then repeated alone to confirm. Every failure is reported with a
reproducer line (`--case ... --at ...`), which runs in-process and prints the difference.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import faulthandler
import importlib
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
import types
import warnings
from typing import Any, Callable

import torch

import framegraph
from framegraph import breaks
from framegraph.bytecode import decode
from framegraph.counters import counters

_TESTS = __package__.rpartition(".")[0]  # "tests" under `python -m`, "" under pytest
_CAPTURE = f"{_TESTS}.capture" if _TESTS else "capture"
helpers = importlib.import_module(f"{_CAPTURE}.helpers")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALLS = 3
RUN_TIMEOUT = 120  # seconds one run may take before it counts as a hang
BATCH = 600        # runs per worker process (starting one, collecting every case, takes ~5 s)
FORCED = "Forced graph break"


# ---- cases ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Case:
    id: str                      # "test_core:CASES[3]"
    fn: Callable                 # the function, or a module factory
    make_args: Callable[[], tuple]
    kwargs: dict | None = None   # set for module cases (the forward's keyword arguments)
    fresh: bool = False          # each call gets new arguments from make_args (they cannot be cloned)
    normalize: Callable | None = None  # (result, arguments) -> what is compared
    before_call: Callable | None = None  # puts back state every run shares (a class the case writes to)

    @property
    def is_module(self) -> bool:
        return self.kwargs is not None


def _takes_no_arguments(fn: Any) -> bool:
    try:
        return not inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _as_case(module_name: str, list_name: str, i: int, item: Any) -> Case | None:
    if not (isinstance(item, tuple) and len(item) >= 2 and callable(item[0]) and _takes_no_arguments(item[1])):
        return None
    fn, make_args = item[0], item[1]
    is_module_class = isinstance(fn, type) and issubclass(fn, torch.nn.Module)
    if is_module_class or isinstance(fn, types.FunctionType) and _takes_no_arguments(fn):
        kwargs = item[2] if len(item) > 2 and isinstance(item[2], dict) else {}
        return Case(f"{module_name}:{list_name}[{i}]", fn, make_args, kwargs)
    if not isinstance(fn, types.FunctionType):
        return None
    return Case(f"{module_name}:{list_name}[{i}]", fn, make_args)


def collect_cases(matrix: bool = False) -> list[Case]:
    """Every case of every module-level case list in tests/capture/test_*.py, each once; with
    `matrix`, the cells of the semantics matrix (tests/matrix) too."""
    cases = matrix_cases() if matrix else []
    seen: set = set()
    folder = os.path.join(ROOT, "tests", "capture")
    for filename in sorted(os.listdir(folder)):
        if not (filename.startswith("test_") and filename.endswith(".py")):
            continue
        module_name = filename[:-3]
        module = importlib.import_module(f"{_CAPTURE}.{module_name}")
        for list_name, value in vars(module).items():
            if not (list_name.isupper() and isinstance(value, list)):
                continue
            for i, item in enumerate(value):
                case = _as_case(module_name, list_name, i, item)
                if case is not None and (id(case.fn), id(case.make_args)) not in seen:
                    seen.add((id(case.fn), id(case.make_args)))
                    cases.append(case)
    return cases


def matrix_cases() -> list[Case]:
    cells = importlib.import_module(f"{_TESTS + '.' if _TESTS else ''}matrix.cells")
    ALL_CELLS, KINDS, _restore, _shared_state, build, describe = (  # noqa: N806
        cells.ALL_CELLS, cells.KINDS, cells._restore, cells._shared_state, cells.build, cells.describe)

    cases = []
    for cell in ALL_CELLS:
        fn, make_args = build(cell)
        shared = _shared_state(KINDS[cell.kind]())
        cases.append(Case(f"matrix:{cell.id}", fn, make_args, fresh=True, normalize=describe,
                          before_call=(lambda shared=shared: _restore(shared)) if shared is not None else None))
    return cases


def select(cases: list[Case], max_cases: int | None, pattern: str | None = None) -> list[Case]:
    """Cases whose id contains `pattern`, thinned evenly to at most `max_cases`."""
    chosen = [c for c in cases if pattern is None or pattern in c.id]
    if max_cases is not None and len(chosen) > max_cases:
        chosen = [chosen[i * len(chosen) // max_cases] for i in range(max_cases)]
    return chosen


# ---- break points -----------------------------------------------------------------------------

_keys: dict[int, tuple[types.CodeType, str]] = {}


def code_key(code: types.CodeType) -> str:
    """A name for a code object that holds across processes: file:first line:qualname."""
    known = _keys.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    filename = code.co_filename
    for base in (ROOT + os.sep, "site-packages" + os.sep):
        if base in filename:
            filename = filename.split(base, 1)[1]
            break
    key = f"{filename}:{code.co_firstlineno}:{code.co_qualname}"
    _keys[id(code)] = (code, key)
    return key


Point = tuple[str, int]  # (code_key, offset of the instruction in the original code)


def point_text(point: Point) -> str:
    return f"{point[0]}@{point[1]}"


def parse_point(text: str) -> Point:
    key, _, offset = text.rpartition("@")
    return key, int(offset)


class Recorder:
    """A debug_force_break predicate that forces nothing and records every code translated."""

    def __init__(self) -> None:
        self.codes: dict[str, types.CodeType] = {}

    def __call__(self, code: types.CodeType, offset: int) -> bool:
        self.codes.setdefault(code_key(code), code)
        return False

    def candidates(self) -> list[tuple[Point, str]]:
        """One point per raw instruction (decoding can split one, e.g. into PUSH_NULL and
        LOAD_GLOBAL: a break at their offset breaks before each)."""
        found: dict[Point, str] = {}
        for key, code in self.codes.items():
            for inst in decode(code):
                found.setdefault((key, inst.offset), inst.opname)
        return list(found.items())


class Forcer:
    """A debug_force_break predicate that breaks before the given points."""

    def __init__(self, points: tuple[Point, ...]) -> None:
        self.points = frozenset(points)

    def __call__(self, code: types.CodeType, offset: int) -> bool:
        return (code_key(code), offset) in self.points


# ---- one run ----------------------------------------------------------------------------------

def _global_data(module_globals: dict) -> dict[str, Any]:
    """The test module's plain data globals (counters, logs, state dicts) a case may change."""
    kinds = (list, dict, set, int, float, str, bool, torch.Tensor)
    return {name: value for name, value in module_globals.items()
            if not name.startswith("__") and type(value) in kinds}


def _restore(module_globals: dict, saved: dict[str, Any]) -> None:
    """Puts the saved data globals back; containers are refilled in place, as functions that
    imported or captured them hold the objects themselves."""
    for name, value in saved.items():
        current = module_globals.get(name)
        copy = helpers.clone(value)
        if type(current) is type(value) and isinstance(value, list):
            current[:] = copy
        elif type(current) is type(value) and isinstance(value, (dict, set)):
            current.clear()
            current.update(copy)
        else:
            module_globals[name] = copy


def _call(fn: Callable, args: tuple, kwargs: dict) -> tuple[Any, BaseException | None]:
    try:
        return fn(*args, **kwargs), None
    except Exception as error:
        return None, error


@dataclasses.dataclass
class Observed:
    result: Any
    error: BaseException | None
    args: tuple
    state: Any          # module state_dict, or None
    globals: dict[str, Any]


class Baseline:
    """The eager behaviour of one case over CALLS calls, and how to replay it compiled."""

    def __init__(self, case: Case) -> None:
        self.case = case
        fn_globals = self._target_globals()
        self.module_globals = fn_globals
        self.initial_globals = helpers.clone(_global_data(fn_globals))
        self.inputs = []
        for call in range(CALLS):
            torch.manual_seed(call)
            self.inputs.append(case.make_args())
        self.observed = self._observe(self._make_target())

    def _target_globals(self) -> dict:
        fn = self.case.fn
        if isinstance(fn, type):
            return sys.modules[fn.__module__].__dict__
        return fn.__globals__

    def _make_target(self) -> Any:
        if not self.case.is_module:
            return self.case.fn
        torch.manual_seed(0)
        return self.case.fn().eval()

    def _observe(self, target: Any, compiled: Any = None) -> list[Observed]:
        _restore(self.module_globals, self.initial_globals)
        out = []
        for call in range(CALLS):
            if self.case.before_call is not None:
                self.case.before_call()
            args = self.case.make_args() if self.case.fresh else helpers.clone(self.inputs[call])
            torch.manual_seed(100 + call)
            result, error = _call(compiled or target, args, self.case.kwargs or {})
            if self.case.normalize is not None:
                result, args = self.case.normalize((result, args)), None
            state = dict(target.state_dict()) if self.case.is_module else None
            out.append(Observed(result, error, args, helpers.clone(state),
                                helpers.clone(_global_data(self.module_globals))))
        _restore(self.module_globals, self.initial_globals)
        return out

    def compare(self, actual: list[Observed]) -> str | None:
        """The first difference from eager, or None."""
        for call, (want, got) in enumerate(zip(self.observed, actual)):
            try:
                if want.error is not None or got.error is not None:
                    assert type(got.error) is type(want.error), f"raised {got.error!r}, eager raised {want.error!r}"
                    assert str(got.error) == str(want.error), f"raised {got.error!r}, eager raised {want.error!r}"
                else:
                    helpers.assert_same(want.result, got.result)
                helpers.assert_same(want.args, got.args, "mutated inputs")
                helpers.assert_same(want.state, got.state, "module state")
                helpers.assert_same(want.globals, got.globals, "module globals")
            except AssertionError as error:
                return f"call {call}: {error}"
            except Exception as error:  # e.g. a tensor that cannot even be printed
                return f"call {call}: comparing raised {type(error).__name__}: {error}"
        return None

    def run(self, predicate: Callable) -> "RunResult":
        """Compiles the case with `predicate` as config.debug_force_break and compares."""
        framegraph.reset()
        counters.clear()
        backend = helpers.CountingBackend()
        target = self._make_target()
        fired: list[bool] = []

        def observe(reason, code, whole_frame):
            if reason.gb_type == FORCED:
                fired.append(whole_frame)

        breaks.break_observers.append(observe)
        try:
            with warnings.catch_warnings(record=True) as caught, \
                    framegraph.config.patch(debug_force_break=predicate):
                warnings.simplefilter("always")
                compiled = framegraph.compile(target, backend=backend)
                actual = self._observe(target, compiled)
        finally:
            breaks.break_observers.remove(observe)
            _forget_generated(self.module_globals)
        fallbacks = [str(w.message).splitlines()[0] for w in caught if "failed to compile" in str(w.message)]
        fallbacks = fallbacks or [f"counters['fallback']: {dict(counters['fallback'])}"] * bool(counters["fallback"])
        return RunResult(mismatch=self.compare(actual), fallbacks=fallbacks,
                         split=fired.count(False), unbreakable=fired.count(True),
                         graphs=backend.graph_count)


def _forget_generated(module_globals: dict) -> None:
    """Drops the compiled graphs and resume functions a run installed, so memory stays flat."""
    for name in [n for n in module_globals if n.startswith(("__compiled_fn_", "__framegraph_resume_at_"))]:
        del module_globals[name]


@dataclasses.dataclass
class RunResult:
    mismatch: str | None = None
    fallbacks: list[str] = dataclasses.field(default_factory=list)
    split: int = 0
    unbreakable: int = 0
    graphs: int = 0
    crash: str | None = None       # set by the driver: the worker died or hung in this run
    candidates: list | None = None  # set by discovery runs


# ---- workers ----------------------------------------------------------------------------------

def worker(task_file: str, out_file: str) -> None:
    """Runs the tasks of `task_file` in order, announcing each before it starts."""
    faulthandler.enable()
    with open(task_file) as f:
        tasks = json.load(f)
    cases = {c.id: c for c in collect_cases(matrix=any(t["case"].startswith("matrix:") for t in tasks))}
    baselines: dict[str, Baseline] = {}
    with open(out_file, "a") as out, open(os.devnull, "w") as quiet:
        for task in tasks:
            out.write(json.dumps({"begin": task["id"]}) + "\n")
            out.flush()
            faulthandler.dump_traceback_later(RUN_TIMEOUT, exit=True)
            sys.stdout = quiet  # the cases print
            try:
                result = run_task(cases[task["case"]], task["points"], baselines)
            except Exception:
                result = RunResult(mismatch="driver error: " + traceback.format_exc(limit=-3))
            finally:
                sys.stdout = sys.__stdout__
                faulthandler.cancel_dump_traceback_later()
            out.write(json.dumps({"end": task["id"], **dataclasses.asdict(result)}) + "\n")
            out.flush()


def run_task(case: Case, points: list[Point] | None, baselines: dict[str, Baseline]) -> RunResult:
    """points None: a discovery run, which also lists the case's break points."""
    baseline = baselines.get(case.id)
    if baseline is None:
        baseline = baselines[case.id] = Baseline(case)
    if points is None:
        recorder = Recorder()
        result = baseline.run(recorder)
        result.candidates = [[point_text(p), opname] for p, opname in recorder.candidates()]
        return result
    return baseline.run(Forcer(tuple(tuple(p) for p in points)))


@dataclasses.dataclass
class Task:
    id: int
    case: str
    points: list[Point] | None

    def reproducer(self) -> str:
        at = "".join(f" --at '{point_text(p)}'" for p in self.points or ())
        return f"python -m tests.fuzz.break_everywhere --case '{self.case}' --exact{at}"


def run_batch(tasks: list[Task]) -> dict[int, RunResult]:
    """Runs tasks in worker processes; a crash or hang is charged to the task it interrupted
    and the rest of the batch goes on in a new worker."""
    results: dict[int, RunResult] = {}
    pending = list(tasks)
    while pending:
        with tempfile.TemporaryDirectory() as tmp:
            task_file, out_file, err_file = (os.path.join(tmp, n) for n in ("tasks", "out", "err"))
            with open(task_file, "w") as f:
                json.dump([dataclasses.asdict(t) for t in pending], f)
            with open(err_file, "w") as err:
                proc = subprocess.run([sys.executable, "-m", "tests.fuzz.break_everywhere", "--worker", task_file,
                                       "--out", out_file], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
                                      env={**os.environ, "PYTHONPATH": ROOT})
            begun = None
            if os.path.exists(out_file):
                with open(out_file) as f:
                    for line in f:
                        record = json.loads(line)
                        if "begin" in record:
                            begun = record["begin"]
                        else:
                            task_id = record.pop("end")
                            results[task_id] = RunResult(**record)
                            begun = None
            with open(err_file) as f:
                stderr = f.read()
        done = {t.id for t in pending if t.id in results}
        if begun is not None:
            what = "hang" if "Timeout" in stderr else f"exit code {proc.returncode}"
            results[begun] = RunResult(crash=f"{what}\n{_tail(stderr)}")
            done.add(begun)
        elif proc.returncode != 0 and len(done) < len(pending):
            raise RuntimeError(f"worker failed before its first run:\n{_tail(stderr)}")
        pending = [t for t in pending if t.id not in done]
    return results


def _tail(text: str, lines: int = 30) -> str:
    """The end of a worker's stderr, less faulthandler's frames of the driver itself."""
    kept = [line for line in text.rstrip().splitlines()
            if not any(noise in line for noise in ("break_everywhere.py", "<frozen runpy>", "Extension modules"))]
    return "\n".join(kept[-lines:])


def run_all(tasks: list[Task], jobs: int, log: Callable[[str], None]) -> dict[int, RunResult]:
    batches = [tasks[i:i + BATCH] for i in range(0, len(tasks), BATCH)]
    by_id = {task.id: task for task in tasks}
    results: dict[int, RunResult] = {}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for count, done in enumerate(concurrent.futures.as_completed(
                [pool.submit(run_batch, batch) for batch in batches]), 1):
            batch_results = done.result()
            results.update(batch_results)
            # Each failure as it comes (the full report waits for the end of the sweep).
            for task_id, result in batch_results.items():
                problem = result.crash or result.mismatch or (result.fallbacks[0] if result.fallbacks else None)
                if problem:
                    task = by_id[task_id]
                    log(f"    failing: {task.case} at {[point_text(p) for p in task.points or ()]}: "
                        f"{problem.splitlines()[0][:200]}")
            bad = sum(1 for r in results.values() if r.crash or r.mismatch or r.fallbacks)
            log(f"  batch {count}/{len(batches)}: {len(results)} runs, {bad} failing")
    return results


# ---- the sweep --------------------------------------------------------------------------------

@dataclasses.dataclass
class Report:
    cases: int = 0
    candidates: int = 0
    runs: int = 0
    split: int = 0
    unbreakable: int = 0
    unreached: int = 0
    crashes: list[str] = dataclasses.field(default_factory=list)
    mismatches: list[str] = dataclasses.field(default_factory=list)
    fallbacks: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def add(self, task: Task, result: RunResult) -> None:
        self.runs += 1
        if task.points:
            self.split += bool(result.split)
            self.unbreakable += bool(result.unbreakable and not result.split)
            self.unreached += not (result.split or result.unbreakable)
        where = f"{task.case} at {[point_text(p) for p in task.points or ()]}"
        if result.crash:
            self.crashes.append(f"CRASH {where}: {result.crash}\n  reproduce: {task.reproducer()}")
        if result.mismatch:
            self.mismatches.append(f"MISMATCH {where}: {result.mismatch}\n  reproduce: {task.reproducer()}")
        if result.fallbacks:
            self.fallbacks.append(f"FALLBACK {where}: {result.fallbacks[0]}\n  reproduce: {task.reproducer()}")

    def render(self) -> str:
        lines = [*self.crashes, *self.mismatches, *self.fallbacks,
                 f"cases {self.cases}, break points {self.candidates}, runs {self.runs} "
                 f"(forced breaks split a frame in {self.split}, made a frame run eagerly in "
                 f"{self.unbreakable} (unbreakable), were not reached in {self.unreached}); "
                 f"crashes {len(self.crashes)}, mismatches {len(self.mismatches)}, "
                 f"fallbacks {len(self.fallbacks)}; {self.seconds:.0f} s"]
        return "\n".join(lines)


def sweep(cases: list[Case], pairs: bool, triples: bool, samples: int, seed: int, jobs: int,
          log: Callable[[str], None] = print) -> Report:
    start = time.perf_counter()
    report = Report(cases=len(cases))
    ids = iter(range(10 ** 9))
    discovery = [Task(next(ids), case.id, None) for case in cases]
    found = run_all(discovery, jobs, log)
    singles = []
    for task in discovery:
        result = found[task.id]
        report.add(task, result)
        for text, _ in result.candidates or ():
            singles.append(Task(next(ids), task.case, [parse_point(text)]))
    report.candidates = len(singles)
    log(f"discovery: {len(cases)} cases, {len(singles)} break points ({time.perf_counter() - start:.0f} s)")
    results = run_all(singles, jobs, log)
    for task in singles:
        report.add(task, results[task.id])
    log(f"single breaks: {len(singles)} runs ({time.perf_counter() - start:.0f} s)")
    fired: dict[str, list[Point]] = {}
    for task in singles:
        if results[task.id].split:
            fired.setdefault(task.case, []).append(task.points[0])
    rng = random.Random(seed)
    for size, wanted in ((2, pairs), (3, triples)):
        if not wanted:
            continue
        combos = []
        for case_id, points in fired.items():
            if len(points) >= size:
                for _ in range(samples):
                    combos.append(Task(next(ids), case_id, sorted(rng.sample(points, size))))
        results = run_all(combos, jobs, log)
        for task in combos:
            report.add(task, results[task.id])
        log(f"{size} breaks at once: {len(combos)} runs ({time.perf_counter() - start:.0f} s)")
    report.seconds = time.perf_counter() - start
    return report


def reproduce(case: Case, points: list[Point]) -> int:
    """Runs one combination in this process and prints what differs."""
    baseline = Baseline(case)
    result = baseline.run(Forcer(tuple(points)))
    print(json.dumps(dataclasses.asdict(result), indent=2, default=str))
    return 1 if result.mismatch or result.fallbacks else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.break_everywhere", description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-cases", type=int, help="at most this many cases, spread over the suites")
    parser.add_argument("--pairs", action="store_true", help="also random pairs of break points per case")
    parser.add_argument("--triples", action="store_true", help="also random triples of break points per case")
    parser.add_argument("--samples", type=int, default=10, help="pairs (triples) per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once")
    parser.add_argument("--case", help="only cases whose id contains this")
    parser.add_argument("--exact", action="store_true", help="--case names one case exactly")
    parser.add_argument("--at", action="append", help="run only this break point (code@offset), in-process")
    parser.add_argument("--matrix", action="store_true", help="also the cells of the semantics matrix")
    parser.add_argument("--part", help="K/N: only the K-th of N equal runs of the chosen cases (K from 1), "
                                       "to split a sweep between machines or processes")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.out)
        return 0
    cases = collect_cases(matrix=args.matrix or (args.case or "").startswith("matrix:"))
    if args.exact:
        cases = [c for c in cases if c.id == args.case]
        args.case = None
    cases = select(cases, args.max_cases, args.case)
    if args.part:
        k, n = map(int, args.part.split("/"))
        cases = cases[(k - 1) * len(cases) // n:k * len(cases) // n]
    if args.at:
        return max(reproduce(case, [parse_point(p) for p in args.at]) for case in cases)
    report = sweep(cases, args.pairs, args.triples, args.samples, args.seed, args.jobs,
                   lambda line: print(line, file=sys.stderr, flush=True))
    print(report.render())
    return 1 if report.crashes or report.mismatches or report.fallbacks else 0


if __name__ == "__main__":
    sys.exit(main())
