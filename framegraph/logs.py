"""Readable logs of what framegraph did, switched on per artifact.

    FRAMEGRAPH_LOGS=bytecode,guards python train.py
    framegraph.set_logs("graph_breaks", recompiles=True)

Every line starts with the bracket of the compile it belongs to, `[frame/count]`, plus `_attempt`
when translation restarted (see `CompileId`). Lines go to the `framegraph.<artifact>` logger, so
the standard `logging` machinery (handlers, pytest's caplog) sees them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
import warnings

ARTIFACTS: dict[str, str] = {
    "bytecode": "ORIGINAL and MODIFIED BYTECODE of every compiled frame",
    "graph_code": "the Python code of every captured fx graph",
    "guards": "the guards of every compiled entry, each with the user line that caused it",
    "graph_breaks": "every graph break, once, with its reason and user line",
    "recompiles": "why a frame that already had compiled entries was compiled again",
    "dynamic": "sizes and ints that became symbolic",
}


@dataclasses.dataclass(frozen=True)
class CompileId:
    """Which frame (in order of first compile), which compile of it, which attempt."""

    frame_id: int
    compile_count: int
    attempt: int = 0

    def __str__(self) -> str:
        suffix = f"_{self.attempt}" if self.attempt else ""
        return f"[{self.frame_id}/{self.compile_count}{suffix}]"


_enabled: set[str] = set()
_current: CompileId | None = None
_root = logging.getLogger("framegraph")


def set_logs(*names: str, **flags: bool) -> None:
    """Replaces the set of enabled artifacts. Names may be comma-separated strings."""
    wanted = {n.strip() for name in names for n in name.split(",") if n.strip()}
    wanted |= {name for name, on in flags.items() if on}
    unknown = sorted((wanted | set(flags)) - set(ARTIFACTS))
    if unknown:
        known = ", ".join(f"{name} ({doc})" for name, doc in ARTIFACTS.items())
        raise ValueError(f"unknown framegraph log artifact(s) {', '.join(unknown)}; known: {known}")
    _enabled.clear()
    _enabled.update(wanted)
    if wanted and not _root.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        _root.addHandler(handler)
    _root.setLevel(logging.INFO if wanted else logging.WARNING)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a line is logged (tests and tools swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def enabled(artifact: str) -> bool:
    return artifact in _enabled


def current_compile_id() -> CompileId | None:
    """The compile being made now (None outside a compile)."""
    return _current


def set_compile_id(compile_id: CompileId | None) -> CompileId | None:
    """Sets the bracket for lines logged from now on; returns the previous one to restore."""
    global _current
    previous, _current = _current, compile_id
    return previous


def log(artifact: str, text: str) -> None:
    """Logs `text`, every line prefixed with the current compile's bracket."""
    if artifact not in _enabled:
        return
    prefix = f"{_current} " if _current is not None else ""
    logging.getLogger(f"framegraph.{artifact}").info(
        "\n".join(prefix + line for line in text.splitlines()))


def _from_environment() -> None:
    value = os.environ.get("FRAMEGRAPH_LOGS", "")
    if not value:
        return
    try:
        set_logs(value)
    except ValueError as error:
        # A typo in an environment variable must not stop the user's program.
        warnings.warn(f"FRAMEGRAPH_LOGS ignored: {error}", stacklevel=2)


_from_environment()


class Progress:
    """A line on stderr, when it is a terminal, for a compile still running after
    PROGRESS_AFTER seconds: where translation is, how many lines it has translated, how big the
    graph is; rewritten in place at most every half second, ended when the compile ends."""

    PROGRESS_AFTER = 2.0

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.next_at = self.started + self.PROGRESS_AFTER
        self.lines = 0
        self.shown = False

    def show(self, user_line: str, nodes: int) -> None:
        now = time.perf_counter()
        self.next_at = now + 0.5
        stream = sys.stderr
        if stream is None or not stream.isatty():
            self.next_at = float("inf")  # never, for this compile
            return
        where = current_compile_id()
        stream.write(f"\r[framegraph] {where or ''} compiling, {now - self.started:.1f} s: {self.lines} lines "
                     f"translated, {nodes} graph nodes, at {user_line}\x1b[K")
        stream.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            self.shown = False
