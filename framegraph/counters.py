"""Process-wide counters, nested by category: `counters["stats"]["unique_graphs"]`.

The categories and their meaning:
- `stats`: `unique_graphs` (graphs handed to a backend) and `calls_captured` (call nodes in those
  graphs, summed). Both move only on the compile path, never on a cache hit.
- `graph_break`: how often each break reason was met, keyed by its text.
- `eager_frames`: frames run eagerly as a whole by design, not as a graph break (a loop over
  modules whose hooks run eagerly, such as FSDP2's), keyed by the reason.
- `fallback`: frames that ran eagerly because framegraph itself failed, keyed by error type.
- `verifier`: generated code objects the bytecode verifier refused (`config.verify_bytecode`),
  keyed by the rule broken (each is also a `fallback`, as VerificationError).
- `recompiles`: compiles of a code object that already had entries.
- `compile_seconds`: wall time spent compiling, by phase: `translation` (the bytecode walk
  and everything not listed), `fake_propagation`, `graph_module` (fx codegen), `backend`,
  `guards`, `verify` (the replacement code's verification), and their `total`.

`reset()` leaves counters alone; clear them with `counters.clear()`.
"""

from __future__ import annotations

import collections

counters: collections.defaultdict[str, collections.Counter] = collections.defaultdict(collections.Counter)
