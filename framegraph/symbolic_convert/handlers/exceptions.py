"""raise, try/except and the exception paths of `with`, as far as the trace can see them.

A raise becomes an `ObservedException`; the translator's loop finds the handler from the
exception table entry of the instruction that raised (see `InstructionTranslator.run`). The
handler code then runs on trackers like any other code.
"""

from __future__ import annotations

from ...exc import ObservedException, Unsupported
from ...variables.constant import ConstantVariable
from ...variables.exceptions import ExceptionVariable, as_cause, as_exception


def RAISE_VARARGS(tx, inst) -> None:
    if inst.argval == 0:
        if not tx.exception_stack:
            raise Unsupported("Unsupported exception handling", "bare raise with no exception being handled")
        raise ObservedException(tx.exception_stack[-1], reraised=True)
    cause = tx.pop() if inst.argval == 2 else None
    exception = as_exception(tx.pop())
    if cause is not None:
        exception.store_attr(tx, "__cause__", as_cause(cause))
    raise ObservedException(exception)


def RERAISE(tx, inst) -> None:
    exception = tx.pop()
    if inst.argval:
        tx.pop()  # the saved lasti, used by the interpreter for tracebacks
    raise ObservedException(exception, reraised=True)


def PUSH_EXC_INFO(tx, inst) -> None:
    exception = tx.pop()
    previous = tx.exception_stack[-1] if tx.exception_stack else ConstantVariable(None)
    tx.exception_stack.append(exception)
    tx.push(previous)
    tx.push(exception)


def POP_EXCEPT(tx, inst) -> None:
    tx.pop()  # the previous exception, which becomes current again
    tx.exception_stack.pop()


def CHECK_EXC_MATCH(tx, inst) -> None:
    match = tx.pop().as_python_constant()
    exception = tx.peek()
    tx.push(ConstantVariable(isinstance(exception, ExceptionVariable) and issubclass(exception.cls, match)))


def LOAD_ASSERTION_ERROR(tx, inst) -> None:
    tx.push(ConstantVariable(AssertionError))


def WITH_EXCEPT_START(tx, inst) -> None:
    exception = tx.peek()
    exit_method = tx.peek(4)
    cls = exception.cls if isinstance(exception, ExceptionVariable) else None
    tx.push(tx.call(exit_method, [ConstantVariable(cls), exception, ConstantVariable(None)], {}))
