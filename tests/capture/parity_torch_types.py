"""Parity cases of `slice` objects, `torch.Size` and `torch.return_types` as inputs, outputs and
constructors, and builtins in context.
"""

from __future__ import annotations

import collections

import torch

from .datadep_cases import floats
from .parity_sequences import DYN, sized, with_, x34


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


def return_types_fields_of_an_input(x, r):
    # A structseq has n_fields, not a namedtuple's _fields: hasattr answers False, as eagerly.
    return x * r.values.sum(), hasattr(r, "_fields"), hasattr(r, "n_fields"), r.n_fields


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


# ---- cases ----------------------------------------------------------------------------------------

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
    (return_types_fields_of_an_input, with_(lambda: torch.median(floats(3, 4, seed=9), dim=0))),
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
