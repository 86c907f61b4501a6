"""Parity cases of `collections`: deque, defaultdict, Counter, ChainMap, OrderedDict; and set
algebra and dict views.
"""

from __future__ import annotations

import collections

import torch

from .datadep_cases import floats


def x34():
    return (floats(3, 4),)


def with_(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


def tensor_list():
    return ([floats(3, 4), floats(2, 4, seed=1), floats(5, 4, seed=2)],)


# ---- collections.deque --------------------------------------------------------------------------


def deque_as_a_window(x):
    window = collections.deque(maxlen=3)
    for row in x.unbind(0):
        window.append(row)
    return torch.stack(list(window)), len(window), window.maxlen


def deque_both_ends(x):
    d = collections.deque([x, x + 1])
    d.appendleft(x - 1)
    d.append(x + 2)
    first = d.popleft()
    last = d.pop()
    d.extendleft([x * 5])
    d.extend([x * 6])
    return first + last, list(d), d[0] + d[-1]


def deque_rotate_and_index(x):
    d = collections.deque(range(5))
    d.rotate(2)
    d.rotate(-1)
    return x * d[0], list(d), d.index(3), d.count(0), 4 in d


def deque_of_tensors_fifo(x):
    queue = collections.deque()
    for i in range(4):
        queue.append(x * i)
        if len(queue) > 2:
            queue.popleft()
    return sum(queue)


def deque_returned(x):
    d = collections.deque([x], maxlen=2)
    d.append(x * 2)
    d.append(x * 3)
    return d


def deque_input_mutated(x, d):
    d.append(x)
    d.popleft()
    return d[0] + d[-1]


def deque_remove_clear_copy(x):
    d = collections.deque([1, 2, 3, 2])
    d.remove(2)
    c = d.copy()
    d.clear()
    return x * len(c), list(c), len(d), bool(d)


def deque_reversed_and_iter(x):
    d = collections.deque([x, x * 2, x * 3])
    return [t.sum() for t in reversed(d)], torch.stack(list(iter(d)))


# ---- defaultdict --------------------------------------------------------------------------------


def defaultdict_of_lists(x):
    groups = collections.defaultdict(list)
    for i, row in enumerate(x.unbind(0)):
        groups[i % 2].append(row)
    return {k: torch.stack(v).sum(0) for k, v in groups.items()}


def defaultdict_of_ints_counts(x):
    counts = collections.defaultdict(int)
    for word in "a b a c b a".split():
        counts[word] += 1
    return x * counts["a"], dict(counts), counts["missing"]


def defaultdict_with_a_lambda(x):
    scales = collections.defaultdict(lambda: 1.0)
    scales["proj"] = 2.0
    return x * scales["proj"] * scales["other"], sorted(scales)


def defaultdict_of_tensor_factory(x):
    acc = collections.defaultdict(lambda: torch.zeros(4))
    for i, row in enumerate(x.unbind(0)):
        acc["even" if i % 2 == 0 else "odd"] += row
    return acc


def defaultdict_nested(x):
    tree = collections.defaultdict(lambda: collections.defaultdict(float))
    tree["a"]["b"] += 1.5
    tree["a"]["c"] += 2.0
    return x * tree["a"]["b"] + tree["a"]["c"], {k: dict(v) for k, v in tree.items()}


def defaultdict_get_does_not_insert(x):
    d = collections.defaultdict(list)
    got = d.get("k")
    has = "k" in d
    d["k"]
    return x + len(d), got, has, d.default_factory is list


def defaultdict_input(x, d):
    d["new"].append(x)
    return len(d["new"]) * x


def defaultdict_of_sets(x):
    seen = collections.defaultdict(set)
    for a, b in [(1, 2), (1, 3), (2, 3), (1, 2)]:
        seen[a].add(b)
    return x * len(seen[1]), {k: sorted(v) for k, v in seen.items()}


# ---- Counter ------------------------------------------------------------------------------------


def counter_most_common(x):
    c = collections.Counter("abracadabra")
    top = c.most_common(2)
    return x * top[0][1], top, c["z"]


def counter_update_and_arithmetic(x):
    a = collections.Counter(a=3, b=1)
    b = collections.Counter(a=1, b=2, c=4)
    a.update(["a", "c"])
    return x * sum((a + b).values()), dict(a - b), dict(a & b), dict(a | b)


def counter_of_shapes(xs):
    c = collections.Counter(t.shape[0] for t in xs)
    return [t * c[t.shape[0]] for t in xs]


def counter_subtract_and_total(x):
    c = collections.Counter({"x": 4, "y": 2})
    c.subtract({"x": 1, "y": 5})
    return x * c["x"], dict(c), sorted(c.elements()), c.total()


def counter_from_a_list_of_strings(x, names):
    c = collections.Counter(n.split(".")[0] for n in names)
    return x * len(c), c


# ---- ChainMap -----------------------------------------------------------------------------------


def chainmap_lookup_order(x):
    defaults = {"scale": 1.0, "shift": 0.0}
    overrides = {"scale": 3.0}
    cfg = collections.ChainMap(overrides, defaults)
    return x * cfg["scale"] + cfg["shift"], len(cfg), sorted(cfg), "shift" in cfg, cfg.get("nope", 7)


def chainmap_writes_go_first(x):
    base = {"a": 1}
    cm = collections.ChainMap({}, base)
    cm["b"] = 2
    cm["a"] = 10
    return x * cm["a"], cm.maps[0], base


def chainmap_new_child(x):
    root = collections.ChainMap({"w": 2.0})
    child = root.new_child({"w": 5.0})
    return x * child["w"] + root["w"], dict(child.parents), len(child.maps)


def chainmap_of_inputs(x, a, b):
    cm = collections.ChainMap(a, b)
    return x * cm["k"] + cm["j"]


# ---- OrderedDict --------------------------------------------------------------------------------


def ordered_dict_move_to_end(x):
    od = collections.OrderedDict(a=x, b=x + 1, c=x + 2)
    od.move_to_end("a")
    od.move_to_end("c", last=False)
    return list(od), od["a"] * 2


def ordered_dict_popitem_both_ends(x):
    od = collections.OrderedDict((k, x * i) for i, k in enumerate("abcd"))
    last = od.popitem()
    first = od.popitem(last=False)
    return last[1] + first[1], list(od)


def ordered_dict_setdefault_pop_update(x):
    od = collections.OrderedDict()
    od.setdefault("w", x)
    od.setdefault("w", x * 100)
    od.update(b=x + 1, c=2)
    c = od.pop("c")
    missing = od.pop("missing", None)
    return od, c, missing


def ordered_dict_equality_is_ordered(x):
    a = collections.OrderedDict([("a", 1), ("b", 2)])
    b = collections.OrderedDict([("b", 2), ("a", 1)])
    return x + 1, a == b, a == dict(b), dict(a) == dict(b)


def ordered_dict_reversed_and_views(x):
    od = collections.OrderedDict(a=1, b=2, c=3)
    return x * len(od), list(reversed(od)), list(reversed(od.items())), list(od.values())


def ordered_dict_copy_fromkeys_clear(x):
    od = collections.OrderedDict.fromkeys(["a", "b"], 0)
    cp = od.copy()
    od.clear()
    cp["a"] = x
    return cp, len(od), type(cp).__name__


def ordered_dict_input_mutated(x, od):
    od.move_to_end(next(iter(od)))
    od["new"] = x
    return sum(v for v in od.values() if isinstance(v, torch.Tensor))


def ordered_dict_returned_with_tensors(x):
    od = collections.OrderedDict()
    for i in range(3):
        od[f"layer{i}"] = x * i
    del od["layer1"]
    return od


def ordered_dict_or_merge(x):
    a = collections.OrderedDict(a=x)
    b = {"b": x + 1}
    merged = a | b
    a |= {"c": 3}
    return merged, a, type(merged).__name__


# ---- sets and dict views ------------------------------------------------------------------------


def set_algebra(x):
    a, b = {1, 2, 3, 4}, {3, 4, 5}
    return x * len(a & b), sorted(a | b), sorted(a - b), sorted(a ^ b), a <= {1, 2, 3, 4, 5}, a.isdisjoint({9})


def set_methods_mutating(x):
    s = {1, 2}
    s.add(3)
    s.update([4, 5], {6})
    s.discard(1)
    s.remove(2)
    s.difference_update({6})
    s.intersection_update(range(10))
    popped = len(s)
    s.symmetric_difference_update({3, 7})
    return x * popped, sorted(s)


def set_of_strings_selects(x):
    allowed = {"relu", "gelu"}
    chosen = [n for n in ("gelu", "tanh", "relu") if n in allowed]
    return x * len(chosen), chosen, sorted(allowed.union({"silu"}))


def frozenset_keys(x):
    fs = frozenset({"a", "b"})
    table = {fs: 2.0, frozenset(): 0.0}
    return x * table[frozenset(["b", "a"])], sorted(fs | {"c"}), fs.issubset({"a", "b", "c"})


def set_of_dims_from_shape(x):
    dims = {i for i, d in enumerate(x.shape) if d > 3}
    return x.sum(tuple(sorted(dims))) if dims else x, sorted(dims)


def set_comparison_operators(x):
    a = {1, 2}
    return x + 1, a < {1, 2, 3}, a > {1}, a == {2, 1}, a != {1}, {1, 2}.issuperset([1])


def dict_keys_set_algebra(x, d):
    shared = d.keys() & {"w", "b", "z"}
    extra = d.keys() - {"w"}
    return x * len(shared), sorted(shared), sorted(extra), sorted(d.keys() | {"q"})


def dict_items_membership_and_len(x, d):
    items = d.items()
    return x * len(items), ("n", 3) in items, ("n", 4) in items, list(d.values())[-1]


def dict_views_are_live(x):
    d = {"a": x}
    keys, values = d.keys(), d.values()
    d["b"] = x * 2
    return len(keys), sum(values), list(keys)


def dict_views_reversed_and_iter(x):
    d = {"a": 1, "b": 2, "c": 3}
    return x * next(iter(d.values())), list(reversed(d.keys())), list(reversed(d.items())), next(reversed(d))


def dict_view_isdisjoint_and_xor(x, d):
    return x + 1, d.keys().isdisjoint({"zz"}), sorted(d.keys() ^ {"w", "new"})


def dict_fromkeys_and_merge_operators(x):
    d = dict.fromkeys(("a", "b"), 1.0)
    e = d | {"c": 2.0}
    d |= {"a": 3.0}
    return x * e["c"] + d["a"], e, d


def dict_comprehension_over_items(x, d):
    return {k: v * 2 for k, v in d.items() if isinstance(v, torch.Tensor)}


# ---- cases ----------------------------------------------------------------------------------------

DEQUES = [
    (deque_as_a_window, x34),
    (deque_both_ends, x34),
    (deque_rotate_and_index, x34),
    (deque_of_tensors_fifo, x34),
    (deque_returned, x34),
    (deque_input_mutated, with_(lambda: collections.deque([floats(4), floats(4, seed=3)]))),
    (deque_remove_clear_copy, x34),
    (deque_reversed_and_iter, x34),
]

DEFAULTDICTS = [
    (defaultdict_of_lists, x34),
    (defaultdict_of_ints_counts, x34),
    (defaultdict_with_a_lambda, x34),
    (defaultdict_of_tensor_factory, x34),
    (defaultdict_nested, x34),
    (defaultdict_get_does_not_insert, x34),
    (defaultdict_input, with_(lambda: collections.defaultdict(list))),
    (defaultdict_of_sets, x34),
]

COUNTERS = [
    (counter_most_common, x34),
    (counter_update_and_arithmetic, x34),
    (counter_of_shapes, tensor_list),
    (counter_subtract_and_total, x34),
    (counter_from_a_list_of_strings, with_(lambda: ["enc.a", "enc.b", "dec.a"])),
]

CHAINMAPS = [
    (chainmap_lookup_order, x34),
    (chainmap_writes_go_first, x34),
    (chainmap_new_child, x34),
    (chainmap_of_inputs, with_(lambda: {"k": 2.0}, lambda: {"k": 5.0, "j": 1.0})),
]

ORDERED_DICTS = [
    (ordered_dict_move_to_end, x34),
    (ordered_dict_popitem_both_ends, x34),
    (ordered_dict_setdefault_pop_update, x34),
    (ordered_dict_equality_is_ordered, x34),
    (ordered_dict_reversed_and_views, x34),
    (ordered_dict_copy_fromkeys_clear, x34),
    (ordered_dict_input_mutated, with_(lambda: collections.OrderedDict(a=floats(4), b=2))),
    (ordered_dict_returned_with_tensors, x34),
    (ordered_dict_or_merge, x34),
]

SETS_AND_VIEWS = [
    (set_algebra, x34),
    (set_methods_mutating, x34),
    (set_of_strings_selects, x34),
    (frozenset_keys, x34),
    (set_of_dims_from_shape, x34),
    (set_comparison_operators, x34),
    (dict_keys_set_algebra, with_(lambda: {"w": 1, "b": 2, "n": 3})),
    (dict_items_membership_and_len, with_(lambda: {"w": 1, "b": 2, "n": 3})),
    (dict_views_are_live, x34),
    (dict_views_reversed_and_iter, x34),
    (dict_view_isdisjoint_and_xor, with_(lambda: {"w": 1, "b": 2})),
    (dict_fromkeys_and_merge_operators, x34),
    (dict_comprehension_over_items, with_(lambda: {"a": floats(2), "n": 3, "b": floats(2, seed=4)})),
]
