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
