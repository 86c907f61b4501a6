"""Check decode -> assemble over whole module trees.

    python -m framegraph.bytecode.roundtrip MODULE... [--stdlib] [--package NAME] [--verify] [-v] [-j N]

Every code object compiled from the sources (nested functions, classes,
comprehensions, lambdas, generators...) is decoded and assembled again. The
result must match the original: the same raw instructions and operands (jump
targets compared as instruction indices), the same exception handler, depth
and lasti for every instruction, the same source positions, the same
co_stacksize, and co_consts and co_names in the same order. Exit status 1 if
any code object differs.

With --verify, every code object goes through the verifier
(`framegraph.bytecode.verify`) instead: it must accept all of the compiler's
own output, so any refusal is a false positive of the verifier (exit status 1).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import importlib.util
import os
import sys
import sysconfig
import time
import types
import warnings
from collections.abc import Iterator

from . import versions
from .assemble import assemble
from .decode import RawInstruction, decode, localsplus_names, raw_instructions, raw_jump_target
from .instruction import OPERAND_KINDS, OperandKind
from .lower import const_key
from .tables import decode_exception_table
from .verify import VerificationError, verify


@dataclasses.dataclass
class FileReport:
    path: str
    compiled: bool = True
    code_objects: int = 0
    differences: list[str] = dataclasses.field(default_factory=list)


def iter_code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from iter_code_objects(const)


def _operand(code: types.CodeType, raw: RawInstruction, localsplus: list[str], starts: dict[int, int]) -> object:
    name, arg = raw.opname, raw.arg
    if name in versions.RAW_JUMPS:
        return "->", starts.get(raw_jump_target(raw))
    if name in versions.SUPERINSTRUCTIONS:
        return localsplus[arg >> 4], localsplus[arg & 15]
    if name in versions.NAME_SHIFTS:
        shift = versions.NAME_SHIFTS[name]
        return code.co_names[arg >> shift], arg & ((1 << shift) - 1)
    if name == "KW_NAMES" or name in versions.CONST_OPS:
        return const_key(code.co_consts[arg])
    kind = OPERAND_KINDS.get(name)
    if kind is OperandKind.NAME:
        return code.co_names[arg]
    if kind in (OperandKind.LOCAL, OperandKind.FREE):
        return localsplus[arg]
    return arg if name in versions.HAS_ARG else None


def summarize(code: types.CodeType) -> list[tuple[str, object, object, tuple]]:
    """(opname, operand, handler, positions) per raw instruction."""
    raws = raw_instructions(code)
    starts = {raw.start: i for i, raw in enumerate(raws)}
    localsplus = localsplus_names(code.co_varnames, code.co_cellvars, code.co_freevars)
    positions = list(code.co_positions())
    table = decode_exception_table(code.co_exceptiontable)
    rows = []
    index = 0
    for raw in raws:
        while index < len(table) and table[index].end <= raw.unit:
            index += 1
        entry = table[index] if index < len(table) and table[index].start <= raw.unit else None
        handler = None if entry is None else (starts.get(entry.target), entry.depth, entry.lasti)
        rows.append((raw.opname, _operand(code, raw, localsplus, starts), handler, positions[raw.unit]))
    return rows


def first_difference(original: types.CodeType, rebuilt: types.CodeType) -> str | None:
    before, after = summarize(original), summarize(rebuilt)
    labels = ("instruction", "operand", "exception handler", "positions")
    for i, (old, new) in enumerate(zip(before, after)):
        for label, a, b in zip(labels, old, new):
            if a != b:
                return f"{label} of instruction {i} ({old[0]}): {a!r} became {b!r}"
    if len(before) != len(after):
        return f"{len(before)} instructions became {len(after)}"
    if original.co_stacksize != rebuilt.co_stacksize:
        return f"co_stacksize {original.co_stacksize} became {rebuilt.co_stacksize}"
    # Code indexes these tuples itself (`f.__code__.co_consts[3]`), so the same
    # operands in another order are not equivalent.
    for label, key in (("co_consts", const_key), ("co_names", str)):
        old = [key(item) for item in getattr(original, label)]
        new = [key(item) for item in getattr(rebuilt, label)]
        if old != new:
            i = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            return f"{label} differ from index {i} ({len(old)} entries became {len(new)})"
    return None


def check_code(code: types.CodeType) -> str | None:
    try:
        rebuilt = assemble(decode(code), code)
    except Exception as error:  # a failure to round-trip is a difference, not a crash
        return f"{type(error).__name__}: {error}"
    return first_difference(code, rebuilt)


def verify_code(code: types.CodeType) -> str | None:
    try:
        verify(code)
    except VerificationError as error:
        return f"refused ({error.rule}): {error.detail} at offset {error.offset} (line {error.lineno})"
    except Exception as error:  # a crash of the verifier is reported like a refusal
        return f"the verifier raised {type(error).__name__}: {error}"
    return None


def check_file(path: str, verify_only: bool = False) -> FileReport:
    report = FileReport(path)
    try:
        with open(path, "rb") as file:
            source = file.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
        report.compiled = False
        return report
    check = verify_code if verify_only else check_code
    for code in iter_code_objects(module):
        report.code_objects += 1
        difference = check(code)
        if difference is not None:
            report.differences.append(f"{code.co_qualname} ({path}:{code.co_firstlineno}): {difference}")
    return report


def _python_files(root: str) -> Iterator[str]:
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        yield from (os.path.join(directory, f) for f in sorted(files) if f.endswith(".py"))


def _module_file(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise SystemExit(f"no Python source for module {name!r}")
    return spec.origin


def _package_files(name: str) -> list[str]:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return [_module_file(name)]
    return [path for location in spec.submodule_search_locations for path in _python_files(location)]


def collect_files(args: argparse.Namespace) -> list[str]:
    files = [_module_file(name) for name in args.modules]
    if args.stdlib:
        files += _python_files(sysconfig.get_paths()["stdlib"])
    for name in args.package:
        files += _package_files(name)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m framegraph.bytecode.roundtrip", description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules whose source file to check")
    parser.add_argument("--stdlib", action="store_true", help="every .py file of the standard library")
    parser.add_argument("--package", action="append", default=[], help="every .py file of an installed package")
    parser.add_argument("--verify", action="store_true", help="run the verifier instead of the round trip")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every file checked")
    args = parser.parse_args(argv)
    files = collect_files(args)
    if not files:
        parser.error("nothing to check: name modules, --stdlib or --package")
    began = time.perf_counter()
    reports = _run(files, args.jobs, args.verify)
    total = equivalent = skipped = 0
    differences = []
    for report in reports:
        if args.verbose:
            status = "skipped (does not compile)" if not report.compiled else f"{report.code_objects} code objects"
            print(f"{report.path}: {status}")
        skipped += not report.compiled
        total += report.code_objects
        equivalent += report.code_objects - len(report.differences)
        differences += report.differences
    for line in differences:
        print(f"{'REFUSED' if args.verify else 'DIFFERS'} {line}")
    elapsed = time.perf_counter() - began
    print(f"Python {sys.version.split()[0]}: {len(files) - skipped} files ({skipped} skipped: do not compile) in {elapsed:.1f}s")
    if args.verify:
        print(f"{total} code objects, {equivalent} verified, {len(differences)} refused")
    else:
        print(f"{total} code objects, {equivalent} equivalent, {len(differences)} differ")
    return 1 if differences else 0


def _run(files: list[str], jobs: int, verify_only: bool) -> list[FileReport]:
    check = functools.partial(check_file, verify_only=verify_only)
    if jobs <= 1:
        return [check(path) for path in files]
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(check, files, chunksize=8))


if __name__ == "__main__":
    sys.exit(main())
