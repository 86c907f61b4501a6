"""Builtins and the methods of builtin types at torch.compile's parity: list and tuple
arithmetic, `repr`/`str`/`format` and f-strings of constants, `sorted`/`min`/`max` with keys,
`divmod`/`round`/`abs` on sizes that are symbols, `collections` (deque, defaultdict, Counter,
ChainMap, OrderedDict), set algebra and dict views, `str` methods, `slice` objects,
`torch.Size` and `torch.return_types`.

Every case runs eagerly, under framegraph and under torch.compile with counting backends, on
two fresh sets of arguments (the sizes of `dynamic` cases differ between them, so the second
call compiles with symbols): results, raised exception types and what the call leaves in its
arguments equal eager's, and framegraph has no more breaks and no fewer captured ops than
torch.compile (`assert_parity`).
"""

from __future__ import annotations

from .datadep_cases import assert_parity, parity_params
from .parity_collections import CHAINMAPS, COUNTERS, DEFAULTDICTS, DEQUES, ORDERED_DICTS, SETS_AND_VIEWS
from .parity_sequences import FORMATTING, LISTS, ORDERING, SIZES, STRINGS
from .parity_torch_types import IN_CONTEXT, RETURN_TYPES, SIZE_TYPES, SLICES

ALL = [*LISTS, *FORMATTING, *STRINGS, *ORDERING, *SIZES, *DEQUES, *DEFAULTDICTS, *COUNTERS, *CHAINMAPS,
       *ORDERED_DICTS, *SETS_AND_VIEWS, *SLICES, *SIZE_TYPES, *RETURN_TYPES, *IN_CONTEXT]

SHORT_OF_TORCH: dict[str, str] = {
    "sorted_by_tensor_value_with_item": "the sort key (a lambda closing over the frame's `rows`) breaks on "
                                        ".item(); a frame whose cells are shared with functions it made cannot be "
                                        "split at a break, so it runs eagerly where torch.compile splits it",
}


@parity_params(ALL, SHORT_OF_TORCH)
def test_builtins_at_torch_parity(fn, make_args):
    assert_parity(fn, make_args)
