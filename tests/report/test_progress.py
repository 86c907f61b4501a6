"""The progress line of a long compile: on stderr when it is a terminal, after
Progress.PROGRESS_AFTER seconds, ended by a newline; never when stderr is not a terminal."""

from __future__ import annotations

import io
import sys

import torch

import framegraph
from framegraph.logs import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def long_function(x):
    for _ in range(200):
        x = x + 1
        x = x * 1
    return x


def _compile_with(stream, monkeypatch) -> str:
    monkeypatch.setattr(Progress, "PROGRESS_AFTER", 0.0)  # every compile is "long"
    monkeypatch.setattr(sys, "stderr", stream)
    framegraph.reset()
    out = framegraph.compile(long_function, backend="eager")(torch.zeros(2))
    torch.testing.assert_close(out, long_function(torch.zeros(2)))
    return stream.getvalue()


def test_a_long_compile_shows_progress_on_a_terminal(monkeypatch):
    text = _compile_with(Terminal(), monkeypatch)
    assert "\r[framegraph] [0/0] compiling" in text and "lines translated" in text and "graph nodes" in text
    assert text.endswith("\n")


def test_never_when_stderr_is_not_a_terminal(monkeypatch):
    assert _compile_with(io.StringIO(), monkeypatch) == ""


def with_a_break(x):
    x = long_function(x)
    print("a graph break restarts translation")
    return x + 1


def test_one_line_per_frame_across_its_restarts(monkeypatch):
    monkeypatch.setattr(Progress, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(sys, "stderr", Terminal())
    framegraph.reset()
    framegraph.compile(with_a_break, backend="eager")(torch.zeros(2))
    text = sys.stderr.getvalue()
    # with_a_break is translated twice (the break restarts it): one line, rewritten at most
    # twice a second, ended once; the short resume function shows none
    assert text.count("\n") == 1 and text.startswith("\r[framegraph] [0/0] compiling"), text
