"""Generator objects made while tracing: `next`, `send`, `throw`, `close` and the value the
body returns (StopIteration.value, the result of `yield from`).

The body runs one step per resumption, in a translator that stays suspended at its `yield`
in between (symbolic_convert/generators.py), so the body's effects and the consumer's
interleave as they do eagerly.

A generator left suspended inside a `try` or `with` block of its body would run that block's
`finally`/`__exit__` whenever its last reference goes (or at `close()`): an effect the trace
cannot place. So the output graph tracks such generators, and a frame that ends (or
breaks) while one is still suspended there is not captured (`check_no_pending_cleanup`).
"""

from __future__ import annotations

import types

from ..bytecode import emit, versions
from ..exc import ObservedException, Unsupported
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable
from .exceptions import ExceptionVariable, as_exception, make_exception, raise_observed
from .iterators import IteratorVariable

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_METHODS = frozenset({"__next__", "__iter__", "send", "throw", "close"})
_NONE = ConstantVariable(None)


class GeneratorVariable(IteratorVariable):
    __slots__ = ("fn", "bound", "_start", "translator", "finished", "running")

    def __init__(self, fn: VariableTracker, bound: dict[str, VariableTracker], start) -> None:
        super().__init__()
        self.fn, self.bound = fn, bound
        self._start = start        # makes the suspended translator, on the first step
        self.translator = None
        self.finished = False
        self.running = False

    def python_type(self) -> type:
        return types.GeneratorType

    def children(self) -> list[VariableTracker]:
        return [self.fn, *self.bound.values()] if self.translator is None else []

    @property
    def started(self) -> bool:
        return self.translator is not None

    def resume(self, tx, sent: VariableTracker = _NONE,
               thrown: ExceptionVariable | None = None) -> tuple[bool, VariableTracker]:
        """Runs the body to its next `yield` ((True, value)) or to its end ((False, the
        value it returned)); an exception leaving the body ends the generator."""
        if self.running:
            raise_observed(ValueError, "generator already executing")
        if self.finished:
            if thrown is not None:
                raise ObservedException(thrown)
            return False, _NONE
        if self.translator is None:
            if thrown is not None:
                self.finished = True  # thrown into a generator that never ran: it never will
                raise ObservedException(thrown)
            if not (sent.is_python_constant() and sent.as_python_constant() is None):
                raise_observed(TypeError, "can't send non-None value to a just-started generator")
            self.translator = self._start()
            tx.output.generators.append(self)
        self.running = True
        try:
            yielded, value = self.translator.resume(tx, sent, thrown)
        except BaseException:
            self.finished = True
            raise
        finally:
            self.running = False
        if not yielded:
            self.finished = True
        return yielded, value

    def next_item(self, tx) -> VariableTracker | None:
        yielded, value = self.resume(tx)
        return value if yielded else None

    def suspended_in_handler(self) -> bool:
        return not self.finished and self.translator is not None and self.translator.suspended_in_handler()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _METHODS:
            return MethodVariable(self, name)
        if name == "gi_running":
            return ConstantVariable(self.running)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if kwargs:
            raise Unsupported("Unsupported method call", f"generator.{name} with keyword arguments")
        if name == "__iter__" and not args:
            return self
        if name == "__next__" and not args:
            return _stop_with(*self.resume(tx))
        if name == "send" and len(args) == 1:
            return _stop_with(*self.resume(tx, args[0]))
        if name == "throw" and 1 <= len(args) <= 3:
            return _stop_with(*self.resume(tx, thrown=_thrown(args)))
        if name == "close" and not args:
            return self.close(tx)
        raise Unsupported("Unsupported method call", f"generator.{name}")

    def close(self, tx) -> VariableTracker:
        """`close()`: GeneratorExit at the `yield`; the body may only end (or raise)."""
        if not self.started or self.finished:
            self.finished = True
            return _NONE
        try:
            yielded, value = self.resume(tx, thrown=make_exception(GeneratorExit, [], {}))
        except ObservedException as raised:
            exception = raised.exception
            if isinstance(exception, ExceptionVariable) and issubclass(exception.cls, (GeneratorExit, StopIteration)):
                return _NONE
            raise
        if yielded:
            raise_observed(RuntimeError, "generator ignored GeneratorExit")
        return value if versions.GENERATOR_CLOSE_RETURNS_VALUE else _NONE

    def reconstruct(self, codegen) -> None:
        """A generator that has not started is the call that made it, made again (of the
        library function itself, for a stand-in: a real itertools.chain); one that has
        started has a suspended frame, which generated code cannot rebuild."""
        from ..polyfills import real_function_of
        from .user_functions import UserFunctionVariable

        code = self.fn.get_code()
        if self.translator is not None or code.co_flags & _CO_VARKEYWORDS:
            error = generator_break(f"generator {code.co_qualname} outlives the graph after it has started")
            # Breaking where it was first run leaves it unstarted in the graph, made again
            # after it, and run eagerly from there on.
            error.break_instead = self.translator.first_break if self.translator is not None else None
            raise error
        real = real_function_of(self.fn.fn) if isinstance(self.fn, UserFunctionVariable) else None
        if real is not None:
            codegen.load_callable_const(real)
        else:
            start = len(codegen.instructions)
            codegen.reconstruct(self.fn)
            load_fn = codegen.instructions[start:]
            del codegen.instructions[start:]
            codegen.append(*emit.create_push_null_pair(load_fn))
        names = code.co_varnames
        positional = [self.bound[name] for name in names[:code.co_argcount]]
        keyword_names = names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        if code.co_flags & _CO_VARARGS:  # what *args took comes after the named ones
            positional += self.bound[names[code.co_argcount + code.co_kwonlyargcount]].items
        for value in (*positional, *(self.bound[name] for name in keyword_names)):
            codegen.reconstruct(value)
        codegen.append(*emit.create_call(len(positional) + len(keyword_names), tuple(keyword_names)))

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.fn!r})"


def generator_break(context: str) -> Unsupported:
    """A break because a generator's suspended frame would have to cross a graph boundary."""
    return Unsupported(
        "Unsupported frame", context,
        "A generator that has started has a suspended frame, which code generated after the graph "
        "cannot rebuild: framegraph breaks where it is first stepped and runs it eagerly from there, "
        "and each step of a generator the frame received (through a graph break or as an argument) "
        "is a break of its own.",
        ("Consume the generator before the graph break (e.g. `list(gen)`), or create it after the "
         "break, so that it starts and finishes within one graph.",
         "Or remove the graph break between its steps (the call that breaks is listed with it)."))


class ReceivedGeneratorVariable(IteratorVariable):
    """A real generator the frame received (an argument, or one a graph break handed on): its
    frame runs outside the trace, so stepping it is a graph break, where it runs eagerly; it
    can be passed around and returned as it is."""

    __slots__ = ()

    def python_type(self) -> type:
        return types.GeneratorType

    def next_item(self, tx) -> VariableTracker | None:
        raise generator_break("stepping a generator the frame received, whose frame runs eagerly")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        if name == "__iter__" and not args and not kwargs:
            return self
        raise generator_break(f"generator.{name} of a generator the frame received")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _METHODS:
            return MethodVariable(self, name)
        return super().var_getattr(tx, name)


def _stop_with(yielded: bool, value: VariableTracker) -> VariableTracker:
    """The item a step produced, or the StopIteration its end raises (carrying the value the
    body returned, unless that is None: CPython raises a bare StopIteration then)."""
    if yielded:
        return value
    if value.is_python_constant() and value.as_python_constant() is None:
        raise_observed(StopIteration)
    raise ObservedException(make_exception(StopIteration, [value], {}))


def _thrown(args: list[VariableTracker]) -> ExceptionVariable:
    """What `throw(value)`, `throw(type)` or the old `throw(type, value[, tb])` raise."""
    if len(args) > 1:
        value = args[1]
        if not (value.is_python_constant() and value.as_python_constant() is None):
            if isinstance(value, ExceptionVariable):
                return value
            return make_exception(args[0].as_python_constant(), [value], {})
    return as_exception(args[0])


def check_no_pending_cleanup(output) -> None:
    """Refuses to end a capture while a generator waits inside a `try`/`with` of its body.
    Where every such generator first suspended there during a call the root frame can break
    at, the error names the earliest of those calls (`break_instead`): the frame is split
    there, and the generator runs eagerly."""
    pending = [g for g in output.generators if g.suspended_in_handler()]
    if not pending:
        return
    names = ", ".join(g.fn.get_code().co_qualname for g in pending)
    error = Unsupported("Unsupported frame", f"generator {names} is left suspended inside a try or with "
                        "block, whose cleanup would run when the generator is collected")
    breaks = [g.translator.break_instead for g in pending]
    if all(point is not None for point in breaks):
        error.break_instead = min(breaks, key=lambda point: point.index)
    raise error
