"""Run a slice of CPython's own test suite with framegraph rewriting the code it runs.

This is the behavioural proof for the bytecode toolkit and the frame hook: if decoding and
re-assembling code, or replacing every frame through the hook, changed any semantics, some of
CPython's tests of that semantics would fail. A failure only counts when the same test passes
without the rewrite, so the interpreter's own known failures on this machine do not mask ours.

Modes:
  none        plain run: the baseline
  roundtrip   an import hook re-assembles every code object of every module imported
  nops        the same with a NOP before every instruction and a prologue, so offsets,
              jumps, line and exception tables must be recomputed, not copied
  hook        the frame hook replaces every eligible frame with a round-tripped copy of its code
  hook-flaky  the same, with guards that fail on every other call, so the callback runs often
              and cache chains hold several entries

    python tests/cpython_slice.py                 # every mode, compared against the baseline
    python tests/cpython_slice.py --mode nops     # one mode, raw counts (used by the above)

Needs no torch. Run from the repository root (or with it on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import subprocess
import sys
import time
import unittest

TESTS = (
    "test_grammar", "test_exceptions", "test_with", "test_generators", "test_coroutines",
    "test_scope", "test_listcomps", "test_dictcomps", "test_contextlib", "test_itertools",
    "test_functools", "test_json", "test_dis",
)
# test_dis compares the disassembly of its own functions with expected listings; inserting
# NOPs changes that text by design, so it only "applies" to modes that keep the bytecode.
NOT_APPLICABLE = {"nops": {"test_dis"}}
# Single tests that check something a copy of the code cannot have (test id -> why). They are
# reported as skipped, so the run keeps the baseline's test count.
_HOOK_RUNS_A_COPY = {
    # Both run a function until CPython quickens it, then disassemble it with adaptive=True:
    # the hook runs a copy, so the original code object is never quickened or specialised.
    **dict.fromkeys([f"test.test_dis.{cls}.{test}" for cls in ("DisTests", "DisWithFileTests")
                     for test in ("test_loop_quicken", "test_super_instructions")],
                    "checks that the original code object was quickened"),
    # Disassembles the function outer() returns; LOAD_CONST's argrepr names the nested code
    # object by address, and the copy of outer makes functions from its own nested copies.
    "test.test_dis.InstructionTests.test_nested":
        "checks that a nested function's code is the original outer.__code__.co_consts entry",
}
if sys.version_info >= (3, 13):
    # 3.13 charges every C-level entry into the eval loop PY_EVAL_C_STACK_UNITS (2) of its
    # C recursion limit; a PEP 523 hook makes every Python call one, which the plain
    # interpreter inlines, so fib(limit*2//7) through the pure-Python lru wrapper overflows.
    _HOOK_RUNS_A_COPY["test.test_functools.TestLRUPy.test_lru_recursion"] = (
        "sized to the C recursion limit of calls that never enter the eval loop from C")
NOT_APPLICABLE_TESTS = {"hook": _HOOK_RUNS_A_COPY, "hook-flaky": _HOOK_RUNS_A_COPY}
MODES = ("none", "roundtrip", "nops", "hook", "hook-flaky")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    """Compiles from source every time (never a cached .pyc) and rewrites the result."""

    transform = None

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        code = compile(self.get_data(path), path, "exec", dont_inherit=True)
        return self.transform(code)


def _install_import_hook(transform) -> None:
    from framegraph.bytecode.transforms import roundtrip_code

    _RewritingLoader.transform = staticmethod(lambda code: roundtrip_code(code, transform))
    # Extension modules must still load (test_json imports _json fresh); only the source
    # loader is swapped for ours.
    loaders = [(_RewritingLoader if loader is importlib.machinery.SourceFileLoader else loader, suffixes)
               for loader, suffixes in importlib._bootstrap_external._get_supported_file_loaders()]
    sys.path_hooks.insert(0, importlib.machinery.FileFinder.path_hook(*loaders))
    sys.path_importer_cache.clear()


def _install_frame_hook(flaky: bool) -> None:
    from framegraph import _C
    from framegraph.bytecode.transforms import roundtrip_code

    copies: dict = {}

    def always(_locals):
        return True

    def every_other_call():
        calls = [0]

        def guard(_locals):
            calls[0] += 1
            return calls[0] % 2 == 1

        return guard

    def callback(frame):
        code = frame.f_code
        new = copies.get(code)
        if new is None:
            new = copies[code] = roundtrip_code(code)
        return (every_other_call() if flaky else always), new

    _C.set_eval_frame(callback)


class _Result(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bad: list[str] = []

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.bad.append(test.id())

    def addError(self, test, err):
        super().addError(test, err)
        self.bad.append(test.id())

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.bad.append(test.id())


def run_mode(mode: str, tests: tuple[str, ...]) -> dict:
    """Runs the slice in this process and returns {test: {ran, failed: [...], skipped}}."""
    if mode in ("roundtrip", "nops"):
        from framegraph.bytecode import transforms
        _install_import_hook(transforms.identity if mode == "roundtrip" else transforms.insert_nops)
    report = {}
    with open(os.devnull, "w") as stream:
        for name in tests:
            report[name] = _run_one(mode, name, stream)
    return {k: v for k, v in report.items() if v is not None}


def _run_one(mode: str, name: str, stream) -> dict | None:
    if name in NOT_APPLICABLE.get(mode, ()):
        return None
    suite = unittest.defaultTestLoader.loadTestsFromName(f"test.{name}")
    _skip_tests(suite, NOT_APPLICABLE_TESTS.get(mode, {}))
    runner = unittest.TextTestRunner(stream=stream, resultclass=_Result, verbosity=0)
    if mode.startswith("hook"):
        _install_frame_hook(flaky=mode == "hook-flaky")
    try:
        result = runner.run(suite)
    finally:
        if mode.startswith("hook"):
            from framegraph import _C
            _C.set_eval_frame(None)
    return {"ran": result.testsRun, "failed": sorted(result.bad), "skipped": len(result.skipped)}


def _skip_tests(suite: unittest.TestSuite, reasons: dict[str, str]) -> None:
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            _skip_tests(test, reasons)
        elif test.id() in reasons:
            # Raised from the body, not unittest.skip: 3.12.1 leaves those out of testsRun,
            # which would differ from the baseline's count.
            def skipped(reason=reasons[test.id()]):
                raise unittest.SkipTest(reason)

            setattr(test, test._testMethodName, skipped)


def _run_in_subprocess(mode: str, tests: tuple[str, ...]) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, __file__, "--mode", mode, "--json", "--tests", ",".join(tests)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"mode {mode}: the runner itself failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(modes: tuple[str, ...], tests: tuple[str, ...] = TESTS) -> int:
    t0 = time.perf_counter()
    base = _run_in_subprocess("none", tests)
    print(f"baseline: {sum(r['ran'] for r in base.values())} tests, "
          f"{sum(len(r['failed']) for r in base.values())} failing without framegraph "
          f"({time.perf_counter() - t0:.0f}s)")
    new_failures = 0
    for mode in modes:
        t0 = time.perf_counter()
        got = _run_in_subprocess(mode, tests)
        ran = passed = 0
        for name, r in got.items():
            extra = sorted(set(r["failed"]) - set(base[name]["failed"]))
            ran += r["ran"]
            passed += r["ran"] - len(r["failed"]) - r["skipped"]
            if r["ran"] != base[name]["ran"]:
                extra.append(f"{name}: ran {r['ran']} tests, baseline ran {base[name]['ran']}")
            for line in extra:
                print(f"  NEW FAILURE under {mode}: {line}")
            new_failures += len(extra)
        print(f"{mode}: {len(got)} modules, {ran} tests, {passed} passed, "
              f"{sum(len(r['failed']) for r in got.values())} failed "
              f"({time.perf_counter() - t0:.0f}s)")
    print(f"{sys.version.split()[0]}: {new_failures} new failures across {', '.join(modes)}")
    return 1 if new_failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--modes", default="roundtrip,nops,hook,hook-flaky",
                        help="modes compared against the baseline when --mode is not given")
    parser.add_argument("--tests", default=",".join(TESTS), help="comma-separated test modules")
    parser.add_argument("--json", action="store_true", help="print the raw report as JSON")
    args = parser.parse_args(argv)
    tests = tuple(args.tests.split(","))
    if args.mode is None:
        return compare(tuple(args.modes.split(",")), tests)
    report = run_mode(args.mode, tests)
    if args.json:
        print(json.dumps(report))
    else:
        for name, r in report.items():
            print(f"{name}: ran {r['ran']}, failed {len(r['failed'])}, skipped {r['skipped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
