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

import collections
import itertools
import math
import operator

import torch

from .datadep_cases import floats, parity_params, assert_parity


def x34():
    return (floats(3, 4),)


def x8():
    return (floats(8, seed=1),)


def sized(*shapes):
    """Arguments whose sizes change from one call to the next (the second call is dynamic)."""
    calls = itertools.count()

    def make():
        shape = shapes[next(calls) % len(shapes)]
        return (floats(*shape, seed=len(shape)),)

    return make


DYN = sized((6, 4), (9, 5))


# ---- lists and tuples ---------------------------------------------------------------------------


def list_iadd_tuple(x):
    parts = [x]
    parts += (x * 2, x * 3)
    parts += [x.sin()]
    return torch.stack(parts).sum(0), len(parts)


def list_iadd_generator(x):
    rows = []
    rows += (r * 2 for r in x.unbind(0))
    return torch.stack(rows)


def list_extend_with_a_range(x):
    dims = [0]
    dims += range(1, x.dim())
    return x.permute(*reversed(dims)), dims


def list_iadd_keeps_identity(x, acc):
    alias = acc
    acc += (x, x + 1)
    return alias is acc, len(alias)


def tuple_concat_and_repeat(x):
    shape = tuple(x.shape) + (1,)
    pad = (0, 1) * 2
    return x.reshape(shape), torch.nn.functional.pad(x, pad), shape * 2


def list_multiply_and_slice_assign(x):
    weights = [1.0] * 4
    weights[1:3] = [2.0, 3.0]
    weights[::2] = [0.5, 0.5]
    return x * torch.tensor(weights), weights


def list_methods_mixed(x):
    items = [x, x + 1, x + 2]
    items.insert(1, x * 10)
    items.reverse()
    last = items.pop()
    items.extend((last, last))
    labels = ["q", "k", "v", "k"]
    labels.remove("k")
    return items[0] + items[-1], len(items), labels.index("k"), labels.count("q"), "v" in labels


def list_sort_with_key(x):
    rows = list(x.unbind(0))
    sizes = [(i, float(i * 7 % 5)) for i in range(len(rows))]
    sizes.sort(key=lambda p: p[1], reverse=True)
    return [rows[i] for i, _ in sizes]


def list_copy_and_clear(x, acc):
    snap = acc.copy()
    acc.clear()
    acc.append(x)
    return len(snap), acc[0] * 2


def tuple_methods(x):
    dims = (0, 1, 0, 2)
    return x.sum(dims.index(1)), dims.count(0), (1, 2) < (1, 3), max((3, 1), (2, 9))


# ---- repr, str, format, f-strings ---------------------------------------------------------------


def fstring_of_constants(x, name="proj", layers=3):
    key = f"{name}.{layers:02d}.weight"
    width = f"{0.1234:.2f}|{255:x}|{7:>4}|{'a'!r}"
    return x * len(key), key, width


def repr_and_str_of_constants(x):
    parts = [repr(3), str(2.5), repr("q"), str(None), repr((1, "a")), str([1, 2]), repr({"k": 1}), str(True)]
    return x + len("".join(parts)), parts


def format_builtin(x):
    return x * float(format(0.5, ".3f")), format(12, "08b"), format(3.14159, "e"), format("s", "^5")


def str_format_method(x):
    template = "{name}-{index:03d}-{0}"
    s = template.format("pos", name="blk", index=4)
    return x * len(s), s, "{:.1%}".format(0.25)


def percent_formatting(x):
    s = "%s_%d_%.2f" % ("layer", 3, 0.5)
    return x + len(s), s, "%(a)s/%(b)s" % {"a": 1, "b": 2}


def fstring_of_a_shape(x):
    return x.flatten(), f"{tuple(x.shape)}", f"{x.shape[0]}x{x.shape[1]}", str(x.dtype), repr(x.device)


def fstring_of_a_dynamic_size(x):
    return x * 2, f"rows={x.shape[0]}"


def str_of_a_dtype_in_a_key(x, table):
    return x * table[str(x.dtype)]


# ---- str methods --------------------------------------------------------------------------------


def str_split_and_join(x, name="encoder.layers.3.attn"):
    parts = name.split(".")
    index = int(parts[2])
    return x * index, "/".join(parts[::-1]), name.rsplit(".", 1)[-1], name.partition(".")


def str_predicates(x):
    names = ["weight", "bias", "Weight2", "  pad  ", "123"]
    flags = [(n.startswith("w"), n.endswith("s"), n.isdigit(), n.islower(), n.strip(), n.isidentifier())
             for n in names]
    return x + sum(f[0] for f in flags), flags


def str_case_and_replace(x):
    s = "Hidden_Size"
    out = [s.lower(), s.upper(), s.title(), s.swapcase(), s.replace("_", " "), s.capitalize(), s.casefold()]
    return x * len(out[4]), out


def str_find_and_count(x):
    s = "conv1.conv2.bn"
    return x * s.count("conv"), s.find("bn"), s.rfind("conv"), s.index("."), "x" in s, s[-2:]


def str_padding_and_encode(x):
    s = "7"
    return x * len(s.zfill(3)), s.rjust(3, "*"), s.ljust(3), s.center(5, "-"), "ab".encode(), "a\tb".expandtabs(4)


def str_split_lines_and_strip(x):
    text = "a=1\nb=2\n\nc=3 "
    pairs = dict(line.strip().split("=") for line in text.splitlines() if line.strip())
    return x * int(pairs["c"]), pairs


def str_keys_pick_modules(x, mods):
    out = x
    for name in sorted(mods):
        if name.startswith("act_") and not name.endswith("_off"):
            out = mods[name](out)
    return out


def str_join_of_numbers(x):
    dims = [str(d) for d in x.shape]
    return x.sum(), "x".join(dims), ",".join(map(str, range(3)))


def str_comparisons_and_ord(x):
    return x * (ord("b") - ord("a")), chr(65), "abc" < "abd", sorted(["b", "A", "a"]), min("hello")


# ---- sorted, min, max with keys -----------------------------------------------------------------


def sorted_dict_by_value(x, scores):
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    return x * ranked[0][1], [k for k, _ in ranked]


def sorted_tensors_by_size(xs):
    return [t.relu() for t in sorted(xs, key=lambda t: t.shape[0])]


def sorted_with_itemgetter(x):
    rows = [("b", 2, x), ("a", 3, x * 2), ("c", 1, x * 3)]
    by_name = sorted(rows, key=operator.itemgetter(0))
    by_rank = sorted(rows, key=operator.itemgetter(1))
    return by_name[0][2] + by_rank[0][2]


def sorted_with_attrgetter(x):
    import types

    specs = [types.SimpleNamespace(order=o, w=w) for o, w in ((2, 0.5), (1, 2.0), (3, 1.0))]
    out = x
    for spec in sorted(specs, key=operator.attrgetter("order")):
        out = out * spec.w
    return out


def min_max_with_key(x):
    words = ["attention", "mlp", "norm", "embedding"]
    shortest = min(words, key=len)
    longest = max(words, key=len)
    return x * len(shortest) + len(longest), shortest, longest, max([], default=0), min(3, 1, key=lambda v: -v)


def min_max_of_tensor_list_by_key(xs):
    biggest = max(xs, key=lambda t: t.numel())
    smallest = min(xs, key=lambda t: t.shape[-1])
    return biggest * 2, smallest + 1


def sorted_stable_with_ties(x):
    pairs = [(1, "b"), (0, "a"), (1, "a"), (0, "c")]
    return x + len(pairs), sorted(pairs, key=lambda p: p[0]), sorted(pairs, key=lambda p: (p[0], p[1]))


def sorted_by_tensor_value_with_item(x):
    rows = x.unbind(0)
    order = sorted(range(len(rows)), key=lambda i: rows[i].sum().item())
    return torch.stack([rows[i] for i in order])


def max_of_sizes(x, y):
    n = max(x.shape[0], y.shape[0])
    m = min(x.shape[-1], y.shape[-1])
    return torch.zeros(n, m), n, m


# ---- divmod, round, abs on sizes ----------------------------------------------------------------


def divmod_of_a_size(x):
    q, r = divmod(x.shape[0], 4)
    return x[: q * 4].reshape(q, 4, -1), r


def round_of_a_size_ratio(x):
    k = round(x.shape[0] * 0.5)
    return x[:k], k


def round_of_a_size_with_digits(x):
    scale = round(x.shape[1] / 3, 2)
    return x * scale


def abs_of_a_size_difference(x):
    d = abs(x.shape[0] - 2 * x.shape[1])
    return x.sum() + d, d


def floor_ceil_of_sizes(x):
    half = math.ceil(x.shape[0] / 2)
    low = math.floor(x.shape[0] / 3)
    return x[:half].sum(0) + x[:low].sum(0), half, low


def size_arithmetic_mix(x):
    n, m = x.shape
    blocks = -(-n // 2)
    pad = blocks * 2 - n
    return torch.nn.functional.pad(x, (0, 0, 0, pad)).reshape(blocks, 2, m), n % 3, pow(m, 2)


def int_float_of_sizes(x):
    n = x.shape[0]
    return x / math.sqrt(n) + float(n) / int(x.shape[1]), int(n / 2)


def divmod_of_constants(x):
    q, r = divmod(17, 5)
    fq, fr = divmod(7.5, 2)
    return x * q + r + fq + fr, divmod(-7, 2), round(2.5), round(-1.567, 1), abs(-3.5)


def sum_and_any_of_sizes(x):
    return x.reshape(-1)[: sum(x.shape)], any(d > 5 for d in x.shape), all(d > 1 for d in x.shape)


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


# ---- slice objects ------------------------------------------------------------------------------


def slice_object_built_and_used(x):
    s = slice(1, None, 2)
    return x[s], x[:, slice(0, 2)], s.start, s.stop, s.step


def slice_indices(x):
    s = slice(-3, None)
    start, stop, step = s.indices(x.shape[0])
    return x[start:stop:step], (start, stop, step)


def slice_as_input(x, s):
    return x[s] * 2


def slices_in_a_tuple_index(x):
    idx = (slice(None), slice(1, 3))
    return x[idx], x[(Ellipsis, 0)], x[..., slice(None, None, -1)] if False else x[..., :1]


def slice_returned(x):
    return x.sum(), slice(0, x.shape[0], 2)


def slice_of_a_dynamic_size(x):
    s = slice(1, x.shape[0] - 1)
    return x[s], s.stop


def slice_on_lists_and_strings(x):
    names = ["a", "b", "c", "d"]
    s = slice(1, 3)
    return x * len(names[s]), names[s], "abcdef"[s], tuple(range(10))[::3]


def slice_equality_and_hash(x):
    a, b = slice(1, 2), slice(1, 2)
    return x + (a == b), a == slice(1, 3), repr(a)


# ---- torch.Size ---------------------------------------------------------------------------------


def size_constructed(x):
    s = torch.Size([2, 6])
    return x.reshape(s), s, s.numel(), len(s)


def size_as_input(x, s):
    return x.reshape(s), s[0] * s[1], s


def size_arithmetic_and_slicing(x):
    s = x.shape
    t = s[:1] + (1,) + s[1:]
    return x.reshape(t), t, type(t).__name__, s[-1:]


def size_returned_and_compared(x):
    s = x.size()
    return x.view(s), s, s == (3, 4), s == torch.Size([3, 4]), list(s), tuple(s) + (0,)


def size_methods(x):
    s = x.shape
    return x * s.count(4), s.index(4), s.numel(), torch.Size(s)


def size_of_a_dynamic_tensor(x):
    s = x.shape
    flat = torch.Size([s[0] * s[1]])
    return x.reshape(flat), flat, s


def new_tensor_from_size(x):
    return torch.zeros(x.shape) + x, x.new_ones(x.shape[::-1]).sum(), torch.empty(torch.Size((2,))).shape


# ---- torch.return_types -------------------------------------------------------------------------


def return_types_unpacked(x):
    values, indices = x.max(dim=1)
    top = x.topk(2, dim=-1)
    return values + top.values.sum(-1), indices, top.indices


def return_types_returned(x):
    return x.sort(dim=0), x.min(1)


def return_types_fields(x):
    r = torch.median(x, dim=0)
    return r.values * 2, r[1], len(r), type(r).__name__, r._fields if hasattr(r, "_fields") else None


def return_types_as_input(x, r):
    return x * r.values.sum() + r.indices.float().mean()


def return_types_constructed(x):
    r = torch.return_types.max((x.sum(0), x.argmax(0)))
    return r, r.values + 1


def return_types_in_a_loop(x):
    out = []
    for dim in range(x.dim()):
        m = x.max(dim)
        out.append(m.values.sum() + m.indices.sum())
    return out


def return_types_kthvalue_and_mode(x):
    k = torch.kthvalue(x, 2, dim=1)
    m = torch.mode(torch.round(x), dim=0)
    return k.values, k.indices, m.values, m.indices


# ---- more builtins in context -------------------------------------------------------------------


def list_iadd_of_strings_and_keys(x, d):
    names = ["w"]
    names += "ab"
    names += d
    names += d.keys()
    return x * len(names), names


def tuple_iadd_list_raises(x):
    t = (1, 2)
    try:
        t += [3]
    except TypeError:
        return x - 1
    return x + len(t)


def max_of_dict_by_get(x, scores):
    best = max(scores, key=scores.get)
    worst = min(scores, key=lambda k: scores[k])
    return x * scores[best] - scores[worst], best, worst


def sorted_set_and_dict(x):
    return x + 1, sorted({"b", "c", "a"}), sorted({"y": 1, "x": 2}), sorted((3, 1, 2), reverse=True)


def lru_cache_with_ordered_dict(x):
    cache = collections.OrderedDict()
    for i, row in enumerate(x.unbind(0)):
        cache[i] = row * 2
        cache.move_to_end(i)
        if len(cache) > 2:
            cache.popitem(last=False)
    return list(cache), torch.stack(list(cache.values()))


def ordered_dict_compared_with_dict(x):
    od = collections.OrderedDict(a=1, b=2)
    return x + 1, od == {"b": 2, "a": 1}, {"a": 1, "b": 2} == od, list(od.keys()), od.get("c", 3)


def counter_in_place_operators(x):
    c = collections.Counter("aab")
    c += collections.Counter("bcc")
    c -= collections.Counter("a")
    return x * c["b"], dict(c), c.most_common()


def counter_from_a_dict_and_missing(x):
    c = collections.Counter({"cat": 2, "dog": 1})
    c["bird"] += 3
    return x * (c["cat"] + c["fish"]), sorted(c), len(c)


def chainmap_delete_and_maps(x):
    local, global_ = {"a": 1}, {"a": 10, "b": 20}
    cm = collections.ChainMap(local, global_)
    del cm["a"]
    cm.maps[0]["c"] = 3
    return x * cm["a"] + cm["c"], dict(cm), len(cm.maps)


def defaultdict_setdefault_and_pop(x):
    d = collections.defaultdict(list)
    d.setdefault("a", []).append(x)
    d["b"].append(x * 2)
    popped = d.pop("a")
    return popped[0] + d["b"][0], sorted(d)


def deque_of_strings_join(x):
    d = collections.deque("abc", maxlen=3)
    d.append("d")
    d.appendleft("z")
    return x * len(d), "".join(d), d.maxlen


def deque_zero_maxlen_and_equality(x):
    empty = collections.deque([1, 2], maxlen=0)
    a = collections.deque([1, 2, 3])
    b = collections.deque([1, 2, 3], maxlen=5)
    return x + len(empty), a == b, a == [1, 2, 3], list(a + b), 2 * collections.deque([7])


def set_difference_of_key_sets(x, d):
    expected = {"w", "b", "q"}
    missing = expected - set(d)
    extra = set(d) - expected
    return x * len(missing), sorted(missing), sorted(extra), d.keys() == {"w", "b", "n"}


def dict_view_lengths_and_indexing(x, d):
    return x * len(d.values()), list(d.items())[0], list(d.values())[-1], tuple(d)


def str_methods_with_tuples_and_keywords(x):
    s = "layer.weight"
    return (x * s.startswith(("bias", "layer")), s.endswith((".w", "weight")), "a\nb\n".splitlines(keepends=True),
            "{a}-{b}".format_map({"a": 1, "b": 2}), "".join(reversed("abc")), s.split(".", maxsplit=1))


def nested_format_specs(x):
    width, digits = 8, 3
    v = 3.14159
    return x * width, f"{v:{width}.{digits}f}", "%5.2f|%-4d|%x" % (v, 7, 255), f"{'mid':^{width}}"


def slice_reversing_and_stepping(x):
    rev = slice(None, None, -1)
    names = ["a", "b", "c", "d"]
    return x[::2], x.flip(0)[slice(1)], names[rev], names[slice(2)], (1, 2, 3)[rev]


def size_concatenation_and_views(x):
    s = torch.Size((2, 6)) + (1,)
    head = x.shape[:-1]
    return x.reshape(s), x.view(*head, 2, 2), len(x.shape), x.new_zeros(x.shape).shape, s


def size_as_a_dict_key(x):
    table = {torch.Size([3, 4]): "matrix", torch.Size([4]): "vector"}
    return x * 2, table[x.shape], table.get(x.shape[1:], "none")


def return_types_of_sort_topk_aminmax(x):
    s = torch.sort(x, dim=-1, descending=True)
    top = x.topk(2)
    lo, hi = torch.aminmax(x)
    return s.indices, top[0], top.values is top[0], lo + hi


def return_types_slogdet_and_named_access(x):
    m = x[:, :3] @ x[:, :3].T + torch.eye(3)
    r = torch.linalg.slogdet(m)
    return r.sign * r.logabsdet, r[0], tuple(r)


def round_and_floordiv_of_sizes(x):
    n = x.shape[0]
    blocks = round(n / 4) * 4
    half = n // 2
    return x[:blocks].sum(0), x[half:], blocks, half, n % 2 == 1


def min_max_of_sizes_dynamic(x):
    k = min(x.shape[0], 8)
    m = max(x.shape[1], 2)
    return x[:k, :m] * 2, k, m


def abs_and_divmod_of_a_dynamic_size(x):
    q, r = divmod(x.shape[0], 2)
    return x[: q * 2].reshape(q, 2, -1).sum(1) + abs(-r), q, r


# ---- cases --------------------------------------------------------------------------------------


def with_(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


def tensor_list():
    return ([floats(3, 4), floats(2, 4, seed=1), floats(5, 4, seed=2)],)


LISTS = [
    (list_iadd_tuple, x34),
    (list_iadd_generator, x34),
    (list_extend_with_a_range, x34),
    (list_iadd_keeps_identity, with_(lambda: [floats(2)])),
    (tuple_concat_and_repeat, x34),
    (list_multiply_and_slice_assign, x34),
    (list_methods_mixed, x34),
    (list_sort_with_key, x34),
    (list_copy_and_clear, with_(lambda: [1, 2, 3])),
    (tuple_methods, x34),
]

FORMATTING = [
    (fstring_of_constants, x34),
    (repr_and_str_of_constants, x34),
    (format_builtin, x34),
    (str_format_method, x34),
    (percent_formatting, x34),
    (fstring_of_a_shape, x34),
    (fstring_of_a_dynamic_size, DYN),
    (str_of_a_dtype_in_a_key, with_(lambda: {"torch.float32": 2.0, "torch.float64": 3.0})),
]

STRINGS = [
    (str_split_and_join, x34),
    (str_predicates, x34),
    (str_case_and_replace, x34),
    (str_find_and_count, x34),
    (str_padding_and_encode, x34),
    (str_split_lines_and_strip, x34),
    (str_keys_pick_modules, with_(lambda: {"act_relu": torch.nn.ReLU(), "act_tanh_off": torch.nn.Tanh(),
                                           "act_gelu": torch.nn.GELU(), "norm": torch.nn.Identity()})),
    (str_join_of_numbers, x34),
    (str_comparisons_and_ord, x34),
]

ORDERING = [
    (sorted_dict_by_value, with_(lambda: {"a": 0.5, "b": 2.0, "c": 1.0})),
    (sorted_tensors_by_size, tensor_list),
    (sorted_with_itemgetter, x34),
    (sorted_with_attrgetter, x34),
    (min_max_with_key, x34),
    (min_max_of_tensor_list_by_key, tensor_list),
    (sorted_stable_with_ties, x34),
    (sorted_by_tensor_value_with_item, x34),
    (max_of_sizes, with_(lambda: floats(5, 2))),
]

SIZES = [
    (divmod_of_a_size, DYN),
    (round_of_a_size_ratio, DYN),
    (round_of_a_size_with_digits, DYN),
    (abs_of_a_size_difference, DYN),
    (floor_ceil_of_sizes, DYN),
    (size_arithmetic_mix, DYN),
    (int_float_of_sizes, DYN),
    (divmod_of_constants, x34),
    (sum_and_any_of_sizes, DYN),
]

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

SLICES = [
    (slice_object_built_and_used, x34),
    (slice_indices, x34),
    (slice_as_input, with_(lambda: slice(1, None, 2))),
    (slices_in_a_tuple_index, x34),
    (slice_returned, x34),
    (slice_of_a_dynamic_size, DYN),
    (slice_on_lists_and_strings, x34),
    (slice_equality_and_hash, x34),
]

SIZE_TYPES = [
    (size_constructed, x34),
    (size_as_input, with_(lambda: torch.Size([4, 3]))),
    (size_arithmetic_and_slicing, x34),
    (size_returned_and_compared, x34),
    (size_methods, x34),
    (size_of_a_dynamic_tensor, DYN),
    (new_tensor_from_size, x34),
]

RETURN_TYPES = [
    (return_types_unpacked, x34),
    (return_types_returned, x34),
    (return_types_fields, x34),
    (return_types_as_input, with_(lambda: torch.max(floats(2, 3, seed=8), dim=1))),
    (return_types_constructed, x34),
    (return_types_in_a_loop, x34),
    (return_types_kthvalue_and_mode, x34),
]

IN_CONTEXT = [
    (list_iadd_of_strings_and_keys, with_(lambda: {"p": 1, "q": 2})),
    (tuple_iadd_list_raises, x34),
    (max_of_dict_by_get, with_(lambda: {"a": 0.5, "b": 2.0, "c": -1.0})),
    (sorted_set_and_dict, x34),
    (lru_cache_with_ordered_dict, x34),
    (ordered_dict_compared_with_dict, x34),
    (counter_in_place_operators, x34),
    (counter_from_a_dict_and_missing, x34),
    (chainmap_delete_and_maps, x34),
    (defaultdict_setdefault_and_pop, x34),
    (deque_of_strings_join, x34),
    (deque_zero_maxlen_and_equality, x34),
    (set_difference_of_key_sets, with_(lambda: {"w": 1, "b": 2, "n": 3})),
    (dict_view_lengths_and_indexing, with_(lambda: {"w": floats(4), "b": 2})),
    (str_methods_with_tuples_and_keywords, x34),
    (nested_format_specs, x34),
    (slice_reversing_and_stepping, x34),
    (size_concatenation_and_views, x34),
    (size_as_a_dict_key, x34),
    (return_types_of_sort_topk_aminmax, x34),
    (return_types_slogdet_and_named_access, x34),
    (round_and_floordiv_of_sizes, sized((6, 4), (9, 4))),
    (min_max_of_sizes_dynamic, sized((6, 4), (11, 5))),
    (abs_and_divmod_of_a_dynamic_size, sized((6, 4), (9, 5))),
]

ALL = [*LISTS, *FORMATTING, *STRINGS, *ORDERING, *SIZES, *DEQUES, *DEFAULTDICTS, *COUNTERS, *CHAINMAPS,
       *ORDERED_DICTS, *SETS_AND_VIEWS, *SLICES, *SIZE_TYPES, *RETURN_TYPES, *IN_CONTEXT]

# Cases where framegraph cannot reach torch.compile's counts, with the reason.
SHORT_OF_TORCH: dict[str, str] = {
    "sorted_by_tensor_value_with_item": "the sort key (a lambda closing over the frame's `rows`) breaks on "
                                        ".item(); a frame whose cells are shared with functions it made cannot be "
                                        "split at a break, so it runs eagerly where torch.compile splits it",
}


@parity_params(ALL, SHORT_OF_TORCH)
def test_builtins_at_torch_parity(fn, make_args):
    assert_parity(fn, make_args)
