"""The command line: programs written for torch.compile, run with framegraph instead.

    python -m framegraph run script.py [args...]       # torch.compile calls framegraph
    python -m framegraph run -m package.module [args...]
    python -m framegraph explain script.py [args...]   # the same, then a summary of what compiled

The script runs unmodified, as `python script.py` would run it (its `sys.argv`, `__main__`,
its directory first on `sys.path`), inside `routing.routed()`. The core never imports this
package.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m framegraph",
                                     description="Run a program written for torch.compile with framegraph.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("run", "run the program with torch.compile routed to framegraph"),
                       ("explain", "as run, then print what framegraph compiled: graphs, breaks and why, "
                                   "guards, compile time")):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("-m", dest="module", action="store_true",
                             help="the target is a module to run as `python -m` runs it")
        command.add_argument("target", help="the script (or, with -m, the module)")
        command.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    return parser


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
    recording = None
    try:
        with routed():
            if options.command == "explain":
                from ..explain import recording as record

                recording = record()
                observed = recording.__enter__()
            try:
                if options.module:
                    runpy.run_module(options.target, run_name="__main__", alter_sys=True)
                else:
                    runpy.run_path(options.target, run_name="__main__")
            finally:
                if recording is not None:
                    recording.__exit__(None, None, None)
                    print(observed.output(), file=sys.stderr)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0
