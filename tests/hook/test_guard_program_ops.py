"""framegraph._C.GuardProgram op by op, without torch, so every supported Python runs it
(weak references and optional attribute lookups differ between 3.11, 3.12 and 3.13)."""

from __future__ import annotations

import gc
import sys
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
    assert program((OP["GLOBAL"], 0, -1, "h"), globals_={"g": 1})({}) is False
    assert program(local(0, "x"))({}) is False


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


def test_exceptions_fail_the_check_and_name_the_op_only_base_exceptions_propagate():
    def boom(L):
        raise ZeroDivisionError("from a check")

    def interrupt(L):
        raise KeyboardInterrupt

    p = program(local(0, "x"), (OP["PY"], -1, -1, boom))
    assert p({"x": 1}) is False and p.failed_at == 1
    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "missing"))
    assert p({"x": Obj()}) is False and p.failed_at == 1
    p = program(local(0, "x"), (OP["PY"], -1, -1, interrupt))
    with pytest.raises(KeyboardInterrupt):
        p({"x": 1})
    assert p.failed_at == 1


def test_attributes_can_be_hung_on_a_program_and_it_is_collected():
    p = program(local(0, "x"))
    p.check = p  # a cycle through the instance dict
    ref = weakref.ref(p)
    assert p.n_ops == 1
    del p
    gc.collect()
    assert ref() is None


def test_no_reference_is_leaked_on_pass_fail_or_error():
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


# ---- memos: a remembered read or check must see every change ------------------------------


def attr_equals(name="a", value=1):
    return program(local(0, "x"), (OP["ATTR"], 1, 0, name), (OP["EQUALS"], -1, 1, (type(value), value)))


def twice(p, f_locals):
    """Runs p twice: the second run is the one the memos answer."""
    first = p(f_locals)
    assert p(f_locals) is first
    return first


def test_memo_sees_a_changed_attribute():
    x = Obj(a=1)
    p = attr_equals()
    assert twice(p, {"x": x})
    x.a = 2
    assert not twice(p, {"x": x})
    x.a = 1
    assert twice(p, {"x": x})


def test_memo_sees_a_property_added_to_the_class():
    class C:
        def __init__(self):
            self.a = 1

    x = C()
    p = attr_equals()
    assert twice(p, {"x": x})
    C.a = property(lambda self: 2)  # a data descriptor outranks the instance __dict__
    assert not twice(p, {"x": x})


def test_memo_sees_class_assignment_and_a_replaced_dict():
    class C:
        def __init__(self):
            self.a = 1

    class D(C):
        a = property(lambda self: 5)

    x = C()
    p = attr_equals()
    assert twice(p, {"x": x})
    x.__class__ = D
    assert not twice(p, {"x": x})
    x.__class__ = C
    assert twice(p, {"x": x})
    x.__dict__ = {"a": 3}
    assert not twice(p, {"x": x})


def test_memo_never_remembers_a_property_or_getattr():
    calls = []

    class C:
        @property
        def a(self):
            calls.append(1)
            return 1

        def __getattr__(self, name):
            calls.append(name)
            return 1

    for name in ("a", "b"):
        p = attr_equals(name)
        calls.clear()
        assert p({"x": C()}) and p({"x": C()}) and len(calls) == 2


def test_memo_sees_hook_tables_items_and_globals_change():
    hooks = OrderedDict()
    x = Obj(hooks=hooks, table={"k": 1})
    g = {"G": 1}
    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "hooks"), (OP["FALSY"], -1, 1, OrderedDict),
                (OP["ATTR"], 2, 0, "table"), (OP["ITEM"], 3, 2, "k"), (OP["EQUALS"], -1, 3, (int, 1)),
                (OP["GLOBAL"], 4, -1, "G"), (OP["EQUALS"], -1, 4, (int, 1)), globals_=g)
    assert twice(p, {"x": x})
    hooks[0] = print
    assert not twice(p, {"x": x})
    del hooks[0]
    assert twice(p, {"x": x})
    x.table["k"] = 2
    assert not twice(p, {"x": x})
    x.table["k"] = 1
    g["G"] = 2
    assert not twice(p, {"x": x})
    g["G"] = 1
    assert twice(p, {"x": x})


def test_memo_sees_reordered_keys_and_mutated_lists():
    x = Obj(od=OrderedDict(a=1, b=2), items=[1, 2])
    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "od"), (OP["DICT_KEYS"], -1, 1, (OrderedDict, ["a", "b"], None)),
                (OP["ATTR"], 2, 0, "items"), (OP["LEN"], -1, 2, (list, 2)))
    assert twice(p, {"x": x})
    x.od.move_to_end("a")  # reorders without touching the dict's version
    assert not twice(p, {"x": x})
    x.od.move_to_end("b")
    assert twice(p, {"x": x})
    x.items.append(3)
    assert not twice(p, {"x": x})


def test_check_memo_is_not_fooled_by_a_new_object_at_the_same_address():
    """A float freed and a new one made at its address, while a failing earlier check kept
    the remembered check from running: the check must still run on the new value."""
    x = Obj(f=True)
    p = program(local(0, "x"), (OP["ATTR"], 1, 0, "v"), (OP["ATTR"], 2, 0, "f"), (OP["IS"], -1, 2, True),
                (OP["FLOAT"], -1, 1, 1.5))
    reused = 0
    for attempt in range(50):
        x.f = True
        x.v = float("1.5")
        assert twice(p, {"x": x})
        old = id(x.v)
        x.f = False
        x.v = None  # frees the float
        x.v = float(str(2.5 + attempt * 0))  # the free list hands back the same address
        reused += id(x.v) == old
        assert not p({"x": x})  # stops at the IS check, after re-reading v
        x.f = True
        assert not p({"x": x}), "a remembered check passed on a different object"
    assert reused, "the scenario never happened: the float free list did not reuse an address"


# ---- SKIP: a subtree jumped over while its witnesses hold ------------------------------------

def skipping(*extra_after):
    """x -> SKIP over [x.inner, x.inner.a == 1, x.inner.items['k'], len(...) == 2, x.t is None],
    handing over x.inner.items['k'] to the ops after it."""
    return program(local(0, "x"), (OP["SKIP"], -1, 0, (8, (3,))),
                   (OP["ATTR"], 1, 0, "inner"), (OP["ATTR"], 2, 1, "a"), (OP["EQUALS"], -1, 2, (int, 1)),
                   (OP["ATTR"], 4, 1, "items"), (OP["ITEM"], 3, 4, "k"), (OP["DICT_KEYS"], -1, 4, (dict, ["k"], None)),
                   *extra_after, n_regs=5)


def test_a_skip_arms_jumps_and_sees_every_change_under_it():
    inner = Obj(a=1, items={"k": [10, 20]})
    x = Obj(inner=inner)
    seen = []
    p = skipping((OP["PY"], -1, -1, lambda L: seen.append(1) or True), (OP["LEN"], -1, 3, (list, 2)))
    for _ in range(3):
        assert p({"x": x}) and p.failed_at == -1
    assert p.skips == [(1, 8, True, -1)]
    inner.a = 2
    assert not p({"x": x}) and p.failed_at == 4  # the check itself, run again
    inner.a = 1
    assert p({"x": x})
    inner.items["k"].append(30)  # the list is handed over and checked after the range
    assert not p({"x": x}) and p.failed_at == 9
    inner.items["k"] = [1, 2]
    assert p({"x": x})
    x.inner = Obj(a=1, items={"k": [1, 2], "j": 0})
    assert not p({"x": x})
    x.inner = inner
    del inner.a
    assert not p({"x": x})
    inner.a = 1
    for _ in range(4):
        assert p({"x": x})
    assert p.skips[0][2] is True


def test_a_skip_tells_a_new_object_at_a_dead_ones_address():
    p = skipping()
    addresses, reused = set(), 0
    for i in range(50):
        a = 1 if i % 2 else 2
        x = Obj(inner=Obj(a=a, items={"k": [1]}))
        reused += id(x) in addresses
        addresses.add(id(x))
        assert p({"x": x}) is (a == 1)
        assert p({"x": x}) is (a == 1)
        del x  # freed by its last reference (no cycle): the next is often made in its place
    assert reused, "no object was made at a dead one's address: the test did not test anything"


def test_a_skip_does_not_arm_over_what_no_memo_covers():
    class Prop:
        @property
        def a(self):
            return 1

    x = Obj(inner=Prop())
    x.inner.__dict__["items"] = {"k": [1]}
    p = skipping()
    for _ in range(3):
        assert p({"x": x})
    assert p.skips[0][2] is False and p.skips[0][3] == 3


@pytest.mark.parametrize("ops", [
    (local(0, "x"), (OP["SKIP"], -1, 0, (9, ()))),                             # ends past the program
    (local(0, "x"), (OP["SKIP"], -1, 0, (3, ())), (OP["ATTR"], 1, 0, "a"),
     (OP["IS"], -1, 1, None)),                                                  # reads 1 after, not handed over
    (local(0, "x"), (OP["SKIP"], -1, 0, (3, (0,))), (OP["ATTR"], 1, 0, "a")),  # hands over what it did not read
    (local(0, "x"), (OP["SKIP"], -1, 0, (4, ())), (OP["ATTR"], 1, 0, "a"),
     (OP["SKIP"], -1, 1, (5, ())), (OP["ATTR"], 2, 1, "b")),                    # ranges that overlap
])
def test_malformed_skips_are_refused(ops):
    with pytest.raises(ValueError, match="malformed op"):
        program(*ops, n_regs=3)
