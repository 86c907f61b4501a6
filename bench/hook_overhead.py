"""Per-call cost of the frame hook (a microbenchmark, not a test).

    python bench/hook_overhead.py [--n 200000] [--repeat 7]

Measures ``f(x)`` for a trivial ``def f(x): return x`` called from a Python loop:

  (a)  no hook installed at all (measured before framegraph._C installs anything)
  (a2) hook installed by another call, this thread's callback None
       (3.13 keeps the hook installed once used; 3.11/3.12 uninstall it when idle,
       so there (a2) equals (a))
  (b)  callback installed, f's code marked SKIP
  (c1) callback installed, cache hit + replacement, guard ``bool`` (C, always true
       here: f_locals is a non-empty dict) -- the cheapest possible guard
  (c2) as (c1) with a Python ``lambda f_locals: True`` guard

Prints ns/call (best of --repeat) and the overhead over (a), as a Markdown table row.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time


def f(x):
    return x


def loop(fn, n, x):
    for _ in range(n):
        fn(x)


def best_ns_per_call(n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        loop(f, n, 1)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def empty_loop_ns(n: int, repeat: int) -> float:
    def nothing(fn, n, x):
        for _ in range(n):
            pass

    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        nothing(f, n, 1)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n, repeat = args.n, args.repeat

    res = {}
    res["loop"] = empty_loop_ns(n, repeat)
    res["a"] = best_ns_per_call(n, repeat)  # before framegraph._C is even imported

    from framegraph import _C

    code = f.__code__
    replacement = code.replace(co_name=code.co_name)

    def never_called(frame):
        raise AssertionError("callback must not run")

    # install the hook once and drop the callback again
    _C.set_eval_frame(never_called)
    _C.set_eval_frame(None)
    res["a2"] = best_ns_per_call(n, repeat)

    _C.skip_code(loop.__code__)
    _C.skip_code(best_ns_per_call.__code__)
    _C.skip_code(code)
    prev = _C.set_eval_frame(never_called)
    res["b"] = best_ns_per_call(n, repeat)
    _C.set_eval_frame(prev)

    for key, guard in (("c1", bool), ("c2", lambda f_locals: True)):
        _C.reset_code(code)

        def install(frame, guard=guard):
            return (guard, replacement) if frame.f_code is code else False

        prev = _C.set_eval_frame(install)
        f(1)  # the miss: installs the entry
        assert [e.code for e in _C._debug_get_cache_entry_list(code)] == [replacement]
        res[key] = best_ns_per_call(n, repeat)
        _C.set_eval_frame(prev)

    a = res["a"]
    ver = platform.python_version()
    print(f"# python {ver} ({sys.executable}), n={n}, best of {repeat}; "
          f"empty loop iteration {res['loop']:.0f} ns (included below)")
    print("| python | (a) no hook | (a2) installed, cb None | (b) SKIP | "
          "(c1) hit+replace, `bool` guard | (c2) hit+replace, lambda guard |")
    print("|---|---|---|---|---|---|")
    cells = [f"{a:.0f}"] + [f"{res[k]:.0f} (+{res[k] - a:.0f})" for k in ("a2", "b", "c1", "c2")]
    print(f"| {ver} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
