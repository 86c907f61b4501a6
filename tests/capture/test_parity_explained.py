"""Where framegraph still breaks more than torch.compile (the strict xfails of the parity
modules), `explain` says so in a way a person can act on: each break names its family (a
gb_type of framegraph.exc.CATALOG), what was met, why it breaks and a hint.

A new shortfall in a parity module must be added here with the families its breaks belong to.
"""

import pytest

import framegraph
from framegraph.exc import CATALOG

from . import test_parity_builtins, test_parity_generators, test_parity_protocols

# case -> the gb_types of its breaks (None: it falls short on captured ops, not on breaks)
FAMILIES = {
    "gen_returned_in_zip": None,
    "gen_live_across_break": {"Unsupported frame", "Call to graph_break()"},
    "gen_stepped_on_both_sides_of_break": {"Unsupported frame", "Call to graph_break()"},
    "gen_unstarted_across_break": {"Unsupported frame", "Call to graph_break()"},
    "sorted_by_tensor_value_with_item": {"Tensor to Python scalar"},
    "set_of_hashable_objects": {"Unsupported builtin call", "Unsupported value type"},
}

_MODULES = {
    test_parity_generators: (test_parity_generators.SHORT, test_parity_generators.GENERATOR_CASES
                             + test_parity_generators.GENEXP_CASES + test_parity_generators.LAZY_BUILTIN_CASES
                             + test_parity_generators.ITER_NEXT_CASES),
    test_parity_builtins: (test_parity_builtins.SHORT_OF_TORCH, test_parity_builtins.ALL),
    test_parity_protocols: (test_parity_protocols.SHORT_OF_TORCH, test_parity_protocols.ALL),
}
SHORTFALLS = {fn.__name__: (fn, make_args) for short, cases in _MODULES.values()
              for fn, make_args in cases if fn.__name__ in short}


def test_every_shortfall_is_listed_here():
    short = {name for names, _ in _MODULES.values() for name in names}
    assert set(SHORTFALLS) == short
    assert set(FAMILIES) == short


@pytest.mark.parametrize("name", sorted(n for n, families in FAMILIES.items() if families))
def test_explain_names_the_family_and_a_hint(name):
    fn, make_args = SHORTFALLS[name]
    framegraph.reset()
    out = framegraph.explain(fn)(*make_args())
    assert out.break_reasons, f"{name}: explain reports no break"
    assert {r.gb_type for r in out.break_reasons} == FAMILIES[name]
    text = str(out)
    for reason in out.break_reasons:
        assert reason.gb_type in CATALOG
        assert reason.reason and reason.explanation and reason.hints
        assert reason.user_stack or reason.whole_frame, f"{name}: a break with no user line"
        assert f"{reason.gb_type}: {reason.reason}" in text
        for hint in reason.hints:
            assert f"Hint: {hint}" in text
