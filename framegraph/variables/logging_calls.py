"""Logging calls made after the graph instead of breaking it.

Libraries log from the middle of model code: transformers warns once, from every checkpointed
decoder layer's call, that checkpointing turns the cache off. Each such call was a graph break
(the logging package is not traced), as it is under torch.compile. A logging call whose
arguments are constants has one effect, the record, so it is recorded in the side-effect ledger
and made after the graph, in program order with the ledger's other changes and before any code
that follows a break. The record is the one eager makes: same logger, level, message and
arguments, and the location (file, line, function) of the call in the traced code, taken at
trace time, since the frame that made the call may have been inlined. Only when it is emitted
differs: after the tensor work it came before. `config.defer_logging = False` turns this off.

The handlers that will take the record must be logging's own (and pytest's, which keep records
in their own lists), with logging's formatters and no filters, on the logger and its ancestors:
those only write the record out, so no state the program reads changes earlier than it would.
A handler of the program's own is code that could touch what the trace changes, so the call
breaks as before. The handlers are checked at trace time; one added after the compile is not.

Deferred: a Logger's level methods (`debug` ... `critical`, `log`) and the logging module's
functions, with no keyword but `stacklevel=1` (`exc_info`, `stack_info`, `extra` and deeper
stack levels read the moment or frames the trace does not have), on a logger whose class keeps
logging's record machinery; and transformers'/diffusers' lru-cached `warning_once` and
`info_once`, replayed as calls of themselves, so their cache keeps them to one record per message.
"""

from __future__ import annotations

import functools
import logging
import types
from typing import Any

from .. import config
from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource
from .base import VariableTracker
from .constant import ConstantVariable

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
           "critical": logging.CRITICAL, "fatal": logging.CRITICAL, "log": None}
# Library methods set on logging.Logger: an lru_cache around `self.warning(...)`.
_ONCE_METHODS = ("warning_once", "info_once")
# What Logger._log runs after finding the caller; a class that replaces one is not logging's.
_RECORD_MACHINERY = ("_log", "makeRecord", "handle", "isEnabledFor")

_MODULE_FUNCTIONS = {getattr(logging, name): name for name in _LEVELS}
_WRITER_MODULES = ("logging", "logging.handlers", "_pytest.logging")
_HANDLER_METHODS = ("emit", "handle", "filter", "format", "acquire", "release", "flush")


def _writes_only(logger: logging.Logger) -> bool:
    """Whether every handler a record of `logger` reaches only writes it out."""
    while logger is not None:
        if logger.filters:
            return False
        for handler in logger.handlers:
            formatter = handler.formatter
            if handler.filters or not _from_writer_modules(type(handler), _HANDLER_METHODS) or (
                    formatter is not None and not _from_writer_modules(type(formatter), ("format",))):
                return False
        if not logger.propagate:
            return True
        logger = logger.parent
    return True


def _from_writer_modules(cls: type, methods: tuple[str, ...]) -> bool:
    return all(getattr(getattr(cls, name, None), "__module__", None) in _WRITER_MODULES for name in methods)


def logger_method(tx, logger: VariableTracker, cls: type, name: str, attr: Any,
                  attr_source) -> VariableTracker | None:
    """`logger.<name>` as a call to defer, or None where it is read as any other attribute.
    The class's attribute is pinned: a patched method is traced (or breaks) as itself."""
    if not config.defer_logging or logger.source is None or not issubclass(cls, logging.Logger) \
            or not _writes_only(logger.value):
        return None
    if name in _LEVELS:
        known = attr is getattr(logging.Logger, name) and all(
            getattr(cls, part) is getattr(logging.Logger, part) for part in _RECORD_MACHINERY)
    else:
        known = name in _ONCE_METHODS and type(attr) is functools._lru_cache_wrapper
    if not known:
        return None
    if attr_source is not None:
        tx.output.guards.add(GuardKind.ID_MATCH, attr_source, attr, tx.output.user_line)
    return DeferredLogCallVariable(logger, name, AttrSource(logger.source, name))


def module_function(fn: Any) -> VariableTracker | None:
    """`logging.warning` and the other module-level functions, as calls to defer."""
    if not config.defer_logging or not isinstance(fn, types.FunctionType) or fn not in _MODULE_FUNCTIONS \
            or not _writes_only(logging.getLogger()):
        return None
    return DeferredLogCallVariable(None, _MODULE_FUNCTIONS[fn], None)


class DeferredLogCallVariable(VariableTracker):
    """A logging method or function; calling it records the call in the ledger. Where the call
    cannot be deferred it is a break, and the bound method is rebuilt from its source."""

    __slots__ = ("logger", "method")

    def __init__(self, logger: VariableTracker | None, method: str, source) -> None:
        super().__init__(source)
        self.logger = logger  # the Logger's tracker, or None for the root logger's module functions
        self.method = method

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        what = f"Logger.{self.method}" if self.logger is not None else f"logging.{self.method}"
        if not all(v.is_python_constant() for v in (*args, *kwargs.values())):
            raise Unsupported("Attempted to call function marked as skipped",
                              f"`{what}` of a value that is not a constant (it would be read after the graph)",
                              "log values the trace knows (shapes, names), or log after the compiled call")
        args = [v.as_python_constant() for v in args]
        kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        if self.method in _ONCE_METHODS:
            call = (self.method, tuple(args), tuple(kwargs.items()))
        else:
            call = _record_call(what, self.method, args, kwargs, tx)
        tx.output.side_effects.log_call(self.logger, call)
        return ConstantVariable(None)

    def __repr__(self) -> str:
        return f"DeferredLogCallVariable({self.method})"


def _record_call(what: str, method: str, args: list, kwargs: dict, tx) -> tuple:
    """(level, message, arguments, location) of the record the call makes."""
    if set(kwargs) - {"stacklevel"} or kwargs.get("stacklevel", 1) != 1:
        raise Unsupported("Attempted to call function marked as skipped",
                          f"`{what}` with {', '.join(f'{k}=' for k in kwargs)}: the record would read the "
                          "exception being handled, the stack or frames outside the trace")
    level = _LEVELS[method]
    if level is None:  # Logger.log(level, msg, *args)
        if not args or not isinstance(args[0], int):
            raise Unsupported("Attempted to call function marked as skipped", f"`{what}` without an int level")
        level, args = args[0], args[1:]
    if not args:
        raise Unsupported("Attempted to call function marked as skipped", f"`{what}` without a message")
    from ..resume_execution import CACHE

    origin = CACHE.origin(tx.code)  # a resume function stands for its original
    function = (origin.code if origin is not None else tx.code).co_name
    return level, args[0], tuple(args[1:]), (tx.code.co_filename, tx.lineno, function)


def emit_record(logger: logging.Logger | None, level: int, message: Any, args: tuple,
                location: tuple[str, int, str]) -> None:
    """Called by generated code: what `Logger._log` does after finding its caller, with the
    caller found at trace time. The module functions first configure the root logger, as
    `logging.warning` does."""
    if logger is None:
        logger = logging.getLogger()
        if not logger.handlers:
            logging.basicConfig()
    if not logger.isEnabledFor(level):
        return
    filename, lineno, function = location
    logger.handle(logger.makeRecord(logger.name, level, filename, lineno, message, args, None, function, None, None))


def replay(cg, logger: VariableTracker | None, call: tuple) -> None:
    if logger is not None and call[0] in _ONCE_METHODS:
        method, args, kwargs = call
        cg.reconstruct_source(logger)
        cg.load_method(method)
        for value in (*args, *(v for _, v in kwargs)):
            cg.load_const(value)
        cg.call(len(args) + len(kwargs), tuple(k for k, _ in kwargs))
    else:
        cg.load_callable_const(emit_record)
        if logger is None:
            cg.load_const(None)
        else:
            cg.reconstruct_source(logger)
        for part in call:
            cg.load_const(part)
        cg.call(1 + len(call))
    cg.pop_top()
