"""Generator bodies: RETURN_GENERATOR, YIELD_VALUE and `yield from` (GET_YIELD_FROM_ITER,
SEND, END_SEND). A body only runs in a GeneratorTranslator (symbolic_convert/generators.py);
anywhere else these raise Unsupported through the translator's hooks."""

from __future__ import annotations

from ...exc import Unsupported
from ...variables.iterators import IteratorVariable, get_iterator


def RETURN_GENERATOR(tx, inst) -> None:
    tx.on_return_generator()


def YIELD_VALUE(tx, inst) -> None:
    tx.on_yield(tx.pop())


def GET_YIELD_FROM_ITER(tx, inst) -> None:
    tx.push(get_iterator(tx, tx.pop()))  # a generator is its own iterator


def SEND(tx, inst) -> None:
    from ...variables.generators import GeneratorVariable
    from ..generators import finish_send

    sent = tx.pop()
    receiver = tx.peek()
    if isinstance(receiver, GeneratorVariable):
        yielded, value = receiver.resume(tx, sent)
    elif isinstance(receiver, IteratorVariable):
        if not (sent.is_python_constant() and sent.as_python_constant() is None):
            raise Unsupported("Unsupported method call", f"send() to {receiver} through yield from")
        value = receiver.next_item(tx)
        yielded = value is not None
        if not yielded:
            from ...variables.constant import ConstantVariable

            value = ConstantVariable(None)
    else:
        raise Unsupported("Unsupported frame", f"yield from {receiver}")
    if yielded:
        tx.push(value)
    else:
        finish_send(tx, inst, value)


def END_SEND(tx, inst) -> None:
    value = tx.pop()
    tx.pop()  # the finished iterator
    tx.push(value)
