"""framegraph._C.GuardProgram op by op, without torch, so every supported Python runs it
(weak references and optional attribute lookups differ between 3.11, 3.12 and 3.13)."""

from __future__ import annotations

import gc
import weakref
from collections import OrderedDict

import pytest

from framegraph import _C

OP = {name: code for code, name in enumerate(_C.GUARD_OPS)}


class Obj:
    kind = "class attribute"

    def __init__(self, **kw):
        self.__dict__.update(kw)


class Slotted:
    __slots__ = ("a",)


def program(*ops, n_regs=None, globals_=None):
    written = [op[1] for op in ops if op[0] <= OP["CALL"]]
    return _C.GuardProgram(tuple(ops), n_regs if n_regs is not None else len(written), globals_)


def local(reg, name):
    return (OP["LOCAL"], reg, -1, name)


@pytest.mark.parametrize("check, good, bad", [
    ((OP["TYPE_IS"], -1, 0, int), 3, 3.0),
    ((OP["IS"], -1, 0, None), None, 0),
    ((OP["EQUALS"], -1, 0, (str, "a")), "a", "b"),
    ((OP["EQUALS"], -1, 0, (int, 1)), 1, True),
    ((OP["FLOAT"], -1, 0, 0.0), 0.0, -0.0),
    ((OP["FLOAT"], -1, 0, float("nan")), float("nan"), 1.0),
    ((OP["FLOAT"], -1, 0, 2.5), 2.5, 2),
    ((OP["LEN"], -1, 0, (list, 2)), [1, 2], [1]),
    ((OP["LEN"], -1, 0, (list, 2)), [1, 2], (1, 2)),
    ((OP["FALSY"], -1, 0, OrderedDict), OrderedDict(), OrderedDict(a=1)),
    ((OP["FALSY"], -1, 0, dict), {}, OrderedDict()),
    ((OP["DICT_KEYS"], -1, 0, (dict, ["a", 1], None)), {"a": 0, 1: 0}, {1: 0, "a": 0}),
    ((OP["DICT_KEYS"], -1, 0, (dict, [1], [int])), {1: 0}, {True: 0}),
    ((OP["DICT_KEYS"], -1, 0, (OrderedDict, ["a", "b"], None)), OrderedDict(a=1, b=2),
     OrderedDict(b=1, a=2)),
    ((OP["NOT_IN_DICT"], -1, 0, ("kind",)), Obj(), Obj(kind="shadowed")),
    ((OP["HASATTR"], -1, 0, ("a", True)), Obj(a=1), Obj()),
    ((OP["HASATTR"], -1, 0, ("a", False)), Slotted(), Obj(a=None)),
])
def test_each_check_passes_and_fails(check, good, bad):
    p = program(local(0, "x"), check)
    assert p({"x": good}) is True and p.failed_at == -1
    assert p({"x": bad}) is False and p.failed_at == 1


def test_reads_chain_and_each_source_is_read_once():
    reads = []

    class Counted:
        @property
        def inner(self):
            reads.append(1)
            return Obj(items={"k": [10, 20]})

    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "inner"), (OP["ATTR"], 2, 1, "items"),
                (OP["ITEM"], 3, 2, "k"), (OP["ITEM"], 4, 3, 1), (OP["TYPE"], 5, 1, None),
                (OP["EQUALS"], -1, 4, (int, 20)), (OP["IS"], -1, 5, Obj),
                (OP["LEN"], -1, 3, (list, 2)))
    assert p({"x": Counted()}) and len(reads) == 1


def test_globals_and_missing_names():
    p = program((OP["GLOBAL"], 0, -1, "g"), (OP["EQUALS"], -1, 0, (int, 1)), globals_={"g": 1})
    assert p({})
    with pytest.raises(KeyError):
        program((OP["GLOBAL"], 0, -1, "h"), globals_={"g": 1})({})
    with pytest.raises(KeyError):
        program(local(0, "x"))({})


def test_id_holds_weakly_and_a_dead_object_never_matches():
    target = Obj()
    p = program(local(0, "x"), (OP["ID"], -1, 0, weakref.ref(target)))
    assert p({"x": target}) and not p({"x": Obj()})
    del target
    gc.collect()
    assert not p({"x": Obj()}) and not p({"x": None})


def test_alias_distinct_and_python_calls():
    a, b = Obj(), Obj()
    p = program(local(0, "x"), local(1, "y"), (OP["ALIAS"], 1, 0, None))
    assert p({"x": a, "y": a}) and not p({"x": a, "y": b})
    p = program(local(0, "x"), local(1, "y"), local(2, "z"), (OP["DISTINCT"], -1, -1, (0, 1, 2)))
    assert p({"x": a, "y": b, "z": 1}) and not p({"x": a, "y": b, "z": a})
    p = program(local(0, "it"), (OP["CALL"], 1, 0, lambda it: it.__reduce__()[2]),
                (OP["EQUALS"], -1, 1, (int, 0)), (OP["PY"], -1, -1, lambda L: "ok" in L),
                (OP["CALLS_ARE"], -1, -1, ((lambda: 1 > 0, True),)))
    assert p({"it": iter([1]), "ok": 1})
    assert not p({"it": iter([1])})
    it = iter([1, 2])
    next(it)
    assert not p({"it": it, "ok": 1})


def test_errors_propagate_and_name_the_op():
    def boom(L):
        raise ZeroDivisionError("from a check")

    p = program(local(0, "x"), (OP["PY"], -1, -1, boom))
    with pytest.raises(ZeroDivisionError, match="from a check"):
        p({"x": 1})
    assert p.failed_at == 1
    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "missing"))
    with pytest.raises(AttributeError):
        p({"x": Obj()})


def test_attributes_can_be_hung_on_a_program_and_it_is_collected():
    p = program(local(0, "x"))
    p.check = p  # a cycle through the instance dict
    ref = weakref.ref(p)
    assert p.n_ops == 1
    del p
    gc.collect()
    assert ref() is None


def test_no_reference_is_leaked_on_pass_fail_or_error():
    import sys

    inner = Obj(items={"k": [10, 20]}, n=3)
    outer = Obj(inner=inner)
    target = Obj()
    ref = weakref.ref(target)
    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "inner"), (OP["ATTR"], 2, 1, "items"),
                (OP["ITEM"], 3, 2, "k"), (OP["TYPE"], 4, 1, None), (OP["ATTR"], 5, 1, "n"),
                (OP["IS"], -1, 4, Obj), (OP["EQUALS"], -1, 5, (int, 3)),
                (OP["DICT_KEYS"], -1, 2, (dict, ["k"], None)), (OP["NOT_IN_DICT"], -1, 1, ("kind",)),
                (OP["HASATTR"], -1, 1, ("n", True)), (OP["LEN"], -1, 3, (list, 2)),
                (OP["CALL"], 6, 3, len), (OP["EQUALS"], -1, 6, (int, 2)),
                (OP["DISTINCT"], -1, -1, (0, 1, 2, 3)), (OP["PY"], -1, -1, lambda L: True),
                local(7, "t"), (OP["ID"], -1, 7, ref), (OP["ATTR"], 8, 1, "missing"))
    cases = ({"x": outer, "t": target}, {"x": outer, "t": Obj()}, {"x": Obj(inner=Obj(items={}))})
    watched = [inner, outer, target, inner.items, inner.items["k"], Obj, *cases]
    before = [sys.getrefcount(o) for o in watched]
    for f_locals in cases:
        for _ in range(100):
            try:
                p(f_locals)
            except (AttributeError, KeyError):
                pass
    del f_locals
    assert [sys.getrefcount(o) for o in watched] == before
