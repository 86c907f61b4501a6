"""Logging calls with constant arguments are made after the graph (variables/logging_calls.py):
the records equal eager's, field by field (logger, level, message, file, line, function), in
eager's order with the program's other effects, and the call is no graph break. Every case
runs eagerly, under framegraph and under torch.compile (which breaks at each logger call):
framegraph's graph and break counts are asserted exactly, and at most torch.compile's. What
cannot be deferred (a value only the graph knows, exc_info, a logger class with its own record
machinery, a call inside a torch.cond branch) is still a break, with the eager record."""

from __future__ import annotations

import functools
import io
import logging

import pytest
import torch

import framegraph
from framegraph.counters import counters

from .frontends import Counts, break_count, compile_with, t
from .helpers import CountingBackend, assert_same

STREAM = io.StringIO()  # what the loggers' handlers write; the program writes to it too
EVENTS: list = []
FIELDS = "%(name)s|%(levelno)s|%(message)s|%(pathname)s|%(lineno)d|%(funcName)s"


def _logger(name: str, cls=logging.Logger, handler=None) -> logging.Logger:
    logger = cls(f"framegraph.tests.logging_calls.{name}") if cls is not logging.Logger \
        else logging.getLogger(f"framegraph.tests.logging_calls.{name}")
    handler = handler or logging.StreamHandler(STREAM)
    handler.setFormatter(logging.Formatter(FIELDS))
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger


log = _logger("plain")


@functools.lru_cache(None)
def _warning_once(self, *args):
    self.warning(*args)


class OnceLogger(logging.Logger):
    warning_once = _warning_once  # as transformers sets logging.Logger.warning_once


once = _logger("once", OnceLogger)


class OwnRecords(logging.Logger):
    def makeRecord(self, *args, **kwargs):
        record = super().makeRecord(*args, **kwargs)
        record.msg = f"[own] {record.msg}"
        return record


own = _logger("own", OwnRecords)


class ProgramHandler(logging.StreamHandler):
    """A handler of the program's own: code that may touch what the program changes."""

    @torch.compiler.disable  # the handler is not what is under test (both frontends skip it)
    def emit(self, record):
        EVENTS.append(record.getMessage())
        super().emit(record)


handled = _logger("handled", handler=ProgramHandler(STREAM))


# ---- the cases -------------------------------------------------------------------------------------

def every_level(x):
    y = x.sin()
    log.debug("debug %d", 1)
    log.info("info %s", "two")
    log.warning("warning with %d values of %s", x.numel(), x.dtype)
    log.error("error")
    log.critical("critical %r", (1, 2))
    log.log(logging.WARNING, "log at %d", logging.WARNING)
    log.warning("stack level one", stacklevel=1)
    return y.cos()


def _helper(x):
    log.warning("from an inlined helper, line and function of its own")
    return x * 2


def through_a_helper(x):
    return _helper(x).sin() + _helper(x + 1).cos()


def module_function(x):
    logging.info("root logger, below its level: no record")
    logging.warning("root logger at %s", "warning")
    return x.sin()


def once_per_process(x):
    once.warning_once("only once per message")
    once.warning_once("a second message, once too")
    return x.relu()


def order_with_effects(x):
    log.warning("first")
    y = x.sin()
    log.warning("second")
    STREAM.write("written by the program\n")  # a break: the records come before it
    log.warning("third")
    torch._dynamo.graph_break()
    log.warning("fourth")
    return y.cos()


def handler_of_the_program(x):
    EVENTS.append("before")
    handled.warning("the handler appends to the list the program appends to")
    EVENTS.append("after")
    return x.sin()


def value_from_the_graph(x):
    log.warning("sum %s", x.sum())  # a tensor: read only after the graph; a break
    return x.sin()


def reads_the_moment(x):
    log.warning("with the exception being handled (none)", exc_info=True)
    return x.sin()


def logger_with_own_records(x):
    own.warning("made by the class")
    return x.sin()


def inside_a_checkpoint(x):
    def block(v):
        log.warning("in the checkpointed block")  # eagerly once per forward, and per recompute
        return v.sin()

    return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False).cos()


# case -> framegraph's counts (torch.compile's, for comparison, as measured on 3.11)
CASES = {
    every_level: Counts(1, 2, 0),  # torch.compile: Counts(2, 2, 7)
    through_a_helper: Counts(1, 6, 0),  # Counts(3, 5, 3)
    module_function: Counts(1, 1, 0),  # Counts(1, 1, 2)
    once_per_process: Counts(1, 1, 0),  # Counts(1, 1, 2)
    order_with_effects: Counts(2, 2, 2),  # Counts(2, 2, 6)
    value_from_the_graph: Counts(2, 2, 2),  # Counts(3, 12, 7)
    reads_the_moment: Counts(1, 1, 1),  # Counts(1, 1, 1)
    logger_with_own_records: Counts(1, 1, 2),  # Counts(1, 1, 1)
    handler_of_the_program: Counts(3, 3, 3),  # Counts(3, 3, 3)
    inside_a_checkpoint: Counts(1, 1, 1),  # Counts(1, 1, 1)
}
# case -> why framegraph counts more breaks than torch.compile there
SHORT = {
    logger_with_own_records: "logging calls the class's own makeRecord eagerly; framegraph translates that frame "
                             "and breaks at its super().makeRecord(), where torch.compile leaves a frame that "
                             "holds no tensor untranslated",
}


@pytest.fixture(autouse=True)
def root_writes_to_the_stream():
    """The root logger's records (of the module functions) go to the stream too."""
    handler = logging.StreamHandler(STREAM)
    handler.setFormatter(logging.Formatter(FIELDS))
    handler.setLevel(logging.WARNING)
    logging.getLogger().addHandler(handler)
    yield
    logging.getLogger().removeHandler(handler)


def _run(fn, x, calls):
    STREAM.seek(0)
    STREAM.truncate()
    EVENTS.clear()
    _warning_once.cache_clear()
    results = [fn(x) for _ in range(calls)]
    lines = [line for line in STREAM.getvalue().splitlines()  # not torch's own warnings, at the root
             if line.startswith(("framegraph.tests.logging_calls", "root|")) or "|" not in line]
    return results, lines, list(EVENTS)


@pytest.mark.parametrize("fn", list(CASES), ids=lambda fn: fn.__name__)
def test_records_equal_eager_and_counts_at_most_torch_compile(fn):
    x = t(4)
    expected, expected_records, expected_events = _run(fn, x, 3)
    assert expected_records, "the case logs nothing eagerly: it tests nothing"
    counts = {}
    for frontend in ("framegraph", "torch"):
        backend = CountingBackend()
        compiled = compile_with(frontend, fn, backend)
        results, records, events = _run(compiled, x, 3)
        assert_same(expected, results)
        if frontend == "framegraph":
            assert records == expected_records
            assert events == expected_events
        else:
            # torch.compile's records made in its resume functions name those as the function
            assert [r.split("|")[:3] for r in records] == [r.split("|")[:3] for r in expected_records]
        counts[frontend] = Counts(backend.graph_count, backend.op_count, break_count(frontend))
    ours, theirs = counts["framegraph"], counts["torch"]
    assert ours == CASES[fn]
    assert (ours.graphs <= theirs.graphs and ours.breaks <= theirs.breaks) == (fn not in SHORT), \
        (ours, theirs, SHORT.get(fn))


def test_a_level_change_after_compiling_takes_effect_without_a_recompile():
    framegraph.reset()
    counting = CountingBackend()
    compiled = framegraph.compile(every_level, backend=counting)
    assert len(_run(compiled, t(4), 1)[1]) == 7
    log.setLevel(logging.ERROR)
    try:
        assert [line.split("|")[1] for line in _run(compiled, t(4), 1)[1]] == ["40", "50"]
    finally:
        log.setLevel(logging.DEBUG)
    assert counting.graph_count == 1


def test_defer_logging_off_breaks_at_each_call():
    framegraph.reset()
    counters.clear()
    counting = CountingBackend()
    with framegraph.config.patch(defer_logging=False):
        assert _run(framegraph.compile(every_level, backend=counting), t(4), 1)[1] == _run(every_level, t(4), 1)[1]
    assert sum(counters["graph_break"].values()) == 7
    assert counting.graph_count == 2


def test_root_logger_is_configured_as_logging_warning_does(monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    configured = []
    monkeypatch.setattr(logging, "basicConfig", lambda *a, **k: configured.append(True))

    def warns_on_root(x):
        logging.warning("root warning")
        return x.sin()

    framegraph.reset()
    counters.clear()
    framegraph.compile(warns_on_root, backend=CountingBackend())(t(4))
    assert configured == [True] and not counters["graph_break"]


# For the break-everywhere fuzzer (tests/fuzz): every case, split before each instruction.
FUZZ_CASES = [(fn, lambda: (t(4),)) for fn in CASES]
