"""User-object protocols at torch.compile's parity: descriptors, attribute hooks, `__dict__`,
`__new__` and metaclasses, `__class__` assignment, `super()` through multiple inheritance,
`__slots__`, reflected and in-place operators, attributes on tensors, functions and
namedtuples, writes to enclosing cells, and objects made in the trace that outlive it.

Every case runs eagerly, under framegraph and under torch.compile with counting backends, on
two fresh sets of arguments: results, raised exception types and what the call leaves in its
arguments equal eager's (compared as object graphs), and framegraph has no more breaks and
no fewer captured ops than torch.compile (`assert_parity`).
"""

from __future__ import annotations

from .datadep_cases import assert_parity, parity_params
from .parity_attributes import ATTRIBUTE_HOOKS, DESCRIPTORS, INSTANCE_DICTS, SLOTS
from .parity_classes import CLASS_MAKING, OPERATORS, SUPER
from .parity_values import CELLS, ESCAPING, FOREIGN_ATTRIBUTES, IN_CONTEXT

ALL = [*DESCRIPTORS, *ATTRIBUTE_HOOKS, *INSTANCE_DICTS, *CLASS_MAKING, *SUPER, *SLOTS, *OPERATORS,
       *FOREIGN_ATTRIBUTES, *CELLS, *ESCAPING, *IN_CONTEXT]

SHORT_OF_TORCH: dict[str, str] = {
    "set_of_hashable_objects": "a set of user objects: framegraph's sets hold constants only (an object's "
                               "own __hash__ and __eq__ decide membership), so building it is a graph break",
}


@parity_params(ALL, SHORT_OF_TORCH)
def test_protocols_at_torch_parity(fn, make_args):
    assert_parity(fn, make_args)
