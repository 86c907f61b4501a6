"""Bytecode toolkit: decode code objects into editable instructions and assemble them back.

Key components:

* `versions`: every 3.11/3.12/3.13 difference, as data (the only version-aware module);
* `decode`: code object -> normal-form `Instruction` list (the normal form is
  tabulated in `framegraph.bytecode.decode`);
* `assemble` / `transform_code_object`: instruction list -> code object;
* `analysis`: stack depths, liveness, jump targets;
* `emit`: `create_*` helpers that build correct sequences for the running version;
* `verify`: refuses code objects that would crash the interpreter (NULLs outside
  calls, stack depths, unbound LOAD_FAST, cells), before framegraph installs them;
* `decompile`: code object -> Python source for a person to read (the report's view of
  replacement code and resume functions), which re-executes to what the bytecode computes;
* `transforms`: ready-made transforms for round-trip testing;
* `roundtrip`: ``python -m framegraph.bytecode.roundtrip`` checks decode/assemble
  (or, with ``--verify``, the verifier) over whole module trees.

This package must never import torch or ``framegraph._C``.
"""

from .analysis import jump_targets, live_locals, max_stack_depth, prefix_end, stack_depths, stack_effect
from .assemble import CodeMeta, assemble, transform_code_object
from .decode import decode, decoded
from .instruction import ExceptionTableEntry, Instruction, OperandKind, create_instruction

__all__ = [
    "CodeMeta",
    "ExceptionTableEntry",
    "Instruction",
    "OperandKind",
    "assemble",
    "create_instruction",
    "decode",
    "decoded",
    "jump_targets",
    "live_locals",
    "max_stack_depth",
    "prefix_end",
    "stack_depths",
    "stack_effect",
    "transform_code_object",
]
