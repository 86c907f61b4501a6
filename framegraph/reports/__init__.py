"""One HTML report a person can read of what framegraph compiled: graphs, breaks, guards with
the user line that made each, recompiles, bytecode, and a timeline.

    with framegraph.report("out/"):           # writes out/framegraph_report_<pid>.html at the end
        model(x)

    FRAMEGRAPH_REPORT=out/ python train.py     # the whole process, written at exit
    python -m framegraph report train.py       # the same for a program written for torch.compile

The page is self-contained (no network, no external assets). The core never imports this
package: it listens on the core's observer lists (collect.py), and the API starts it once
when FRAMEGRAPH_REPORT is set.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import warnings

from .collect import Collector
from .page import render


def path_in(directory: str) -> str:
    return os.path.join(directory, f"framegraph_report_{os.getpid()}.html")


def write(collector: Collector, directory: str, title: str = "framegraph report") -> str:
    os.makedirs(directory, exist_ok=True)
    path = path_in(directory)
    with open(path, "w", encoding="utf-8") as file:
        file.write(render(collector, title))
    return path


@contextlib.contextmanager
def report(directory: str, title: str = "framegraph report"):
    """Records what framegraph compiles in the block and writes the page when it ends (also
    when the block raises). Yields the Collector; the page's path is `path_in(directory)`."""
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"framegraph.report expects a directory path, got {type(directory).__name__}")
    collector = Collector()
    collector.install()
    try:
        yield collector
    finally:
        collector.uninstall()
        try:
            write(collector, os.fspath(directory), title)
        except Exception as error:  # never in place of the program's own exception, nor as one
            warnings.warn(f"framegraph could not write the report to {directory}: "
                          f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=3)


_from_environment: Collector | None = None


def start_from_environment() -> None:
    """FRAMEGRAPH_REPORT=dir: records the whole process and writes the page at exit."""
    global _from_environment
    directory = os.environ.get("FRAMEGRAPH_REPORT")
    if not directory or _from_environment is not None:
        return
    collector = _from_environment = Collector()
    collector.install()

    def at_exit() -> None:
        collector.uninstall()
        try:
            path = write(collector, directory, "framegraph report: " + " ".join(sys.argv))
        except Exception as error:  # a report must never turn a finished program into a failing one
            print(f"framegraph: could not write the report to {directory}: {type(error).__name__}: {error}",
                  file=sys.stderr)
            return
        print(f"framegraph: report written to {path}", file=sys.stderr)
    atexit.register(at_exit)
