"""The command line: programs written for torch.compile, run with framegraph instead.

    python -m framegraph run script.py [args...]       # torch.compile calls framegraph
    python -m framegraph run -m package.module [args...]
    python -m framegraph explain script.py [args...]   # the same, then a summary of what compiled
    python -m framegraph report [--out DIR] script.py [args...]   # the same, and the HTML report

The script runs unmodified, as `python script.py` would run it (its `sys.argv`, `__main__`,
its directory first on `sys.path`), inside `routing.routed()`. The core never imports this
package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m framegraph",
                                     description="Run a program written for torch.compile with framegraph.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("run", "run the program with torch.compile routed to framegraph"),
                       ("explain", "as run, then print what framegraph compiled: graphs, breaks and why, "
                                   "guards, compile time"),
                       ("report", "as run, and write framegraph's HTML report of the run")):
        command = commands.add_parser(name, help=text, description=text)
        if name == "report":
            command.add_argument("--out", default="framegraph_report",
                                 help="the directory of the report (default: ./framegraph_report)")
        command.add_argument("-m", dest="module", action="store_true",
                             help="the target is a module to run as `python -m` runs it")
        command.add_argument("target", help="the script (or, with -m, the module)")
        command.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    return parser


@contextlib.contextmanager
def _observing(options):
    """explain's summary (printed) or the report (written) of the run, also when it raises."""
    if options.command == "explain":
        from ..explain import recording

        with recording() as record:
            try:
                yield
            finally:
                try:
                    print(record.output(), file=sys.stderr)
                except Exception as error:  # never in place of the program's own exception
                    print(f"framegraph explain: no summary ({type(error).__name__}: {error})", file=sys.stderr)
    elif options.command == "report":
        from ..reports import path_in, report

        try:
            with report(options.out, "framegraph report: " + " ".join([options.target, *options.args])):
                yield
        finally:
            print(f"framegraph: report written to {path_in(options.out)}", file=sys.stderr)
    else:
        yield


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    from .routing import routed

    if not options.module and not os.path.exists(options.target):
        print(f"python -m framegraph {options.command}: no such file: {options.target}", file=sys.stderr)
        return 2
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [options.target, *options.args]
    if not options.module:
        sys.path.insert(0, os.path.dirname(os.path.abspath(options.target)))
    try:
        with routed(), _observing(options):
            if options.module:
                runpy.run_module(options.target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(options.target, run_name="__main__")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0
