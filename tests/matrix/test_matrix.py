"""The semantics matrix: every kind of value (kinds.py) crossed with every operation a
program applies to one (operations.py), the value passed in or made inside the compiled
function (cells.py). Each cell runs eagerly, under framegraph and under torch.compile:

- framegraph's results, exceptions and the value after the call equal eager's in every cell,
  with no fallback (asserted in `cells.run`);
- where torch.compile traces a cell (graphs, no break, eager's answer), framegraph traces it
  too, unless `SHORT` names the cell with the reason;
- over all cells run, framegraph traces at least 98% of those torch.compile traces.

The whole matrix runs on Python 3.11; on other versions a fixed sample (every `SAMPLE_EVERY`th
cell), to keep CI within its budget. `python -m tests.matrix.census` prints the same facts
grouped by reason.
"""

from __future__ import annotations

import sys

import pytest

from .cells import ALL_CELLS, Cell, framegraph_traces, run, torch_traces

SAMPLE_EVERY = 1 if sys.version_info[:2] == (3, 11) else 4
CELLS = ALL_CELLS[::SAMPLE_EVERY]
RESULTS: dict[str, tuple[bool, bool]] = {}  # cell id -> (torch.compile traces, framegraph traces)


def _short() -> dict[str, str]:
    short = {}

    def add(reason: str, *ids: str) -> None:
        for cell_id in ids:
            short[cell_id] = reason

    both = ("arg", "made")
    add("a class's (or module's, or enum member's) attribute written in the trace is not replayed: "
        "their trackers are made per read, so the ledger has no one object to key the write by",
        *(f"{kind}-attribute_write-{p}" for kind in ("class", "module", "enum", "int_enum") for p in both))
    add("an attribute set on a tuple subclass object the caller passed is not replayed",
        "tuple_subclass-attribute_write-arg")
    add("deleting a slot of a slotted object the caller passed is not replayed", "slotted_object-attribute_delete-arg")
    add("copy.copy/deepcopy of an object with __slots__ or a copyreg reduction (nullcontext, "
        "_GeneratorContextManager) runs eagerly", "contextmanager-shallow_copy-arg", "nullcontext-shallow_copy-arg",
        "nullcontext-deep_copy-arg")
    add("copy.deepcopy of an OrderedDict or a Counter (their own __reduce__) runs eagerly",
        *(f"{kind}-deep_copy-{p}" for kind in ("counter", "ordered_dict") for p in both))
    add("`v += v` of a tuple or size the caller passed: whether the result is the same object is not "
        "known while tracing (`t + ()` is `t` itself)", "size-inplace_add-arg", "tuple-inplace_add-arg")
    add("objects whose class defines __eq__ and __hash__ (a frozen dataclass, a class of its own) as dict "
        "keys and set elements: their hash is the class's code, which framegraph does not trace for keys",
        *(f"{kind}-{op}-{p}" for kind in ("protocol_object", "frozen_dataclass") for op in ("dict_key", "set_member")
          for p in both))
    add("the text of a function made while tracing inside an f-string: its address is not known while "
        "tracing (str() of it is computed after the graph, but an f-string needs it as it is built)",
        "lambda-formatted-made", "closure-formatted-made")
    add("an exception the program raises and does not catch (an ndarray or a bound method has no attribute "
        "`a` to set) makes framegraph run the frame eagerly, to raise it from the user's line",
        *(f"{kind}-attribute_write-{p}" for kind in ("ndarray", "bound_method") for p in both))
    return short


SHORT = _short()


@pytest.mark.parametrize("cell", CELLS, ids=[cell.id for cell in CELLS])
def test_cell(cell: Cell):
    outcomes = run(cell)  # framegraph equals eager, with no fallback
    theirs, ours = torch_traces(outcomes), framegraph_traces(outcomes)
    RESULTS[cell.id] = (theirs, ours)
    if cell.id in SHORT:
        if theirs and not ours:
            pytest.xfail(SHORT[cell.id])
        assert not ours or not theirs, f"framegraph now traces {cell.id}: take it out of SHORT"
        return
    assert ours or not theirs, f"torch.compile traces {cell.id} and framegraph breaks: {outcomes['framegraph'].reasons}"


def test_short_names_cells_of_the_matrix():
    ids = {cell.id for cell in ALL_CELLS}
    assert not set(SHORT) - ids, sorted(set(SHORT) - ids)


def test_matrix_size_and_trace_ratio():
    """At least 2,000 cells; of the cells run in this session that torch.compile traces,
    framegraph traces at least 98%."""
    assert len(ALL_CELLS) >= 2000
    ran = [RESULTS[cell.id] for cell in CELLS if cell.id in RESULTS]
    if len(ran) < len(CELLS):
        pytest.skip(f"only {len(ran)} of {len(CELLS)} cells ran in this session")
    traced_by_torch = [ours for theirs, ours in ran if theirs]
    ratio = sum(traced_by_torch) / len(traced_by_torch)
    print(f"framegraph traces {sum(traced_by_torch)} of the {len(traced_by_torch)} cells torch.compile traces "
          f"({ratio:.1%}), over {len(ran)} cells")
    assert ratio >= 0.98, ratio
