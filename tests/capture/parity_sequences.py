"""Parity cases of builtins on sequences and numbers: list and tuple arithmetic, `repr`/`str`/
`format` and f-strings, str methods, `sorted`/`min`/`max` with keys, and `divmod`/`round`/`abs`
on sizes that are symbols.
"""

from __future__ import annotations

import itertools
import math
import operator

import torch

from .datadep_cases import floats


def x34():
    return (floats(3, 4),)


def sized(*shapes):
    """Arguments whose sizes change from one call to the next (the second call is dynamic)."""
    calls = itertools.count()

    def make():
        shape = shapes[next(calls) % len(shapes)]
        return (floats(*shape, seed=len(shape)),)

    return make


DYN = sized((6, 4), (9, 5))


def with_(*make):
    return lambda: (floats(3, 4), *[m() for m in make])


def tensor_list():
    return ([floats(3, 4), floats(2, 4, seed=1), floats(5, 4, seed=2)],)


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


# ---- cases ----------------------------------------------------------------------------------------

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
