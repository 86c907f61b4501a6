"""The persistent cache (framegraph/persistent): a second process installs the first one's
translations without tracing, with the same results, graphs and breaks; whatever the
translation depended on that changed (the function's code, a global it read, a tensor's
shape, a setting) makes it trace again; a damaged cache file is ignored with a warning.

Each case runs a script several times against one cache directory: in fresh interpreters, or
(to keep the suite quick) in this one as a fresh module after framegraph.reset(), which drops
every compiled entry and resume function as a new process would start without them. The
script checks its compiled results against eager itself and reports what it counted."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
import types
import unittest.mock

import pytest
import torch

import framegraph
from framegraph.counters import counters

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """
import json, sys, warnings
import torch
import framegraph
from framegraph.counters import counters

SCALE = {scale}

@framegraph.disable
def opaque(x):
    return x + 1

def helper(x):
    return torch.relu(x) * SCALE

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
torch.manual_seed(0)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.randn_like(p))

def f(x):
    y = helper(model(x)) {body}
    z = opaque(y)                      # a graph break: a resume function after it
    return torch.sin(z) - y.mean()

class Counting:
    graphs = 0
    def __call__(self, gm, example_inputs):
        Counting.graphs += 1
        return {backend}(gm, example_inputs)

{prelude}
x = torch.randn({rows}, 4)
compiled = framegraph.compile(f, backend=Counting())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = [compiled(x), compiled(x)]
for result in results:
    torch.testing.assert_close(result, f(x))
RESULT = {{"persistent": dict(counters["persistent"]), "graphs": Counting.graphs,
          "breaks": sum(counters["graph_break"].values()),
          "refusals": dict(counters["persistent_refusals"]), "failures": dict(counters["persistent_guard_failures"]),
          "warnings": [str(w.message) for w in caught if "framegraph" in str(w.message)]}}
print(json.dumps(RESULT))
"""

EAGER = "(lambda gm, inputs: gm.forward)"


def run(cache: str, scale: float = 2.0, body: str = "", rows: int = 5, backend: str = EAGER,
        prelude: str = "", fresh_process: bool = False) -> dict:
    source = textwrap.dedent(SCRIPT.format(scale=scale, body=body, rows=rows, backend=backend, prelude=prelude))
    return _run_source(cache, source, fresh_process)


def _run_source(cache: str, source: str, fresh_process: bool) -> dict:
    """A script's RESULT, from a new process or (after a reset) from this one."""
    if not fresh_process:
        return _run_here(cache, source)
    completed = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                               cwd=ROOT, env={**os.environ, "FRAMEGRAPH_CACHE_DIR": cache}, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


CASE_MODULE = "framegraph_persistent_case"


def _run_here(cache: str, source: str) -> dict:
    """The script as a new module of this process, with nothing compiled before it."""
    module = types.ModuleType(CASE_MODULE)
    sys.modules[CASE_MODULE] = module
    framegraph.reset()
    counters.clear()
    try:
        with framegraph.config.patch(cache_dir=cache, specialize_int=framegraph.config.specialize_int), \
                contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, "<persistent case>", "exec"), module.__dict__)
        return module.RESULT
    finally:
        framegraph.reset()
        del sys.modules[CASE_MODULE]


def test_a_second_process_installs_the_saved_translation_without_tracing(tmp_path):
    first = run(str(tmp_path), fresh_process=True)
    assert first["persistent"] == {"misses": 2, "saved": 2}, first  # the function and its resume function
    assert first["breaks"] == 1 and first["graphs"] == 2
    second = run(str(tmp_path), fresh_process=True)
    assert second["persistent"] == {"hits": 2}, second
    assert second["graphs"] == first["graphs"], "each saved graph goes to the backend again"
    assert second["breaks"] == 0, "nothing was traced, so no break was met"
    assert not second["warnings"], second["warnings"]


@pytest.mark.parametrize("change, kwargs", [
    ("the function's code", dict(body="+ 1")),
    ("a global the trace read", dict(scale=3.0)),
    ("a tensor's shape", dict(rows=7)),
    ("a setting", dict(prelude="framegraph.config.specialize_int = True")),
])
def test_what_the_translation_depended_on_changing_makes_it_trace_again(tmp_path, change, kwargs):
    # (one of them across processes: the rest behave the same in this one)
    kwargs = dict(kwargs, fresh_process=change == "the function's code")
    run(str(tmp_path), fresh_process=kwargs["fresh_process"])
    again = run(str(tmp_path), **kwargs)  # the script checks its results against eager itself
    # The function traced again (its resume function may still hit: it need not read what changed).
    assert again["persistent"].get("hits", 0) < 2 and again["persistent"].get("saved", 0) >= 1, (change, again)
    if change in ("a global the trace read", "a tensor's shape"):
        assert again["persistent"].get("guards failed", 0) >= 1, again
    # The changed program's translation was saved beside the first: a third process hits it.
    assert run(str(tmp_path), **kwargs)["persistent"] == {"hits": 2}, change


SCALER = "class Scaler(torch.nn.Module):\n    def forward(self, t):\n        return t * {factor}\nSCALER = Scaler()\n"


@pytest.mark.parametrize("change", ["a method's code", "a class's bases"])
def test_a_changed_class_traces_again(tmp_path, change):
    body = "; y = SCALER(y)"
    first = run(str(tmp_path), body=body, prelude=SCALER.format(factor=2))
    changed = SCALER.format(factor=3) if change == "a method's code" else \
        SCALER.format(factor=2).replace("class Scaler(torch.nn.Module)", "class Base(torch.nn.Module):\n    pass\n"
                                        "class Scaler(Base)")
    again = run(str(tmp_path), body=body, prelude=changed)  # its results are checked against eager
    assert first["persistent"] == {"misses": 2, "saved": 2}, first
    assert again["persistent"].get("hits", 0) < 2 and again["persistent"].get("saved", 0) >= 1, again


@pytest.mark.parametrize("damage", ["truncated", "edited", "foreign"])
def test_a_damaged_cache_file_is_ignored_with_a_warning(tmp_path, damage):
    run(str(tmp_path))
    files = [os.path.join(d, name) for d, _, names in os.walk(tmp_path) for name in names]
    assert len(files) == 2
    for path in files:
        data = open(path, "rb").read()
        if damage == "truncated":
            data = data[:len(data) // 2]
        elif damage == "edited":
            data = data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:]
        else:
            data = b"not a framegraph cache file"
        open(path, "wb").write(data)
    again = run(str(tmp_path))
    assert again["persistent"] == {"misses": 2, "saved": 2}, again
    assert sum("ignores the cache file" in w for w in again["warnings"]) == 2, again["warnings"]  # once each
    assert run(str(tmp_path))["persistent"] == {"hits": 2}, "the next save replaced the damaged files"


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_saved_graphs_compile_with_the_real_backends(tmp_path, backend):
    name = f"framegraph.backends.lookup_backend({backend!r})"
    first = run(str(tmp_path), backend=name, fresh_process=backend == "inductor")
    second = run(str(tmp_path), backend=name, fresh_process=backend == "inductor")
    assert first["persistent"] == {"misses": 2, "saved": 2} and second["persistent"] == {"hits": 2}, (first, second)
    assert second["graphs"] == first["graphs"] == 2


def test_a_translation_that_names_an_object_of_the_program_is_not_saved(tmp_path):
    # The trace reads a dict keyed by an instance: no other process can find that key again,
    # so the frame is not saved and traces in every process (its resume function, which does
    # not read the dict, is saved).
    prelude = "class Key:\n    pass\nTABLE = {Key(): 2.0}\n"
    body = "; y = y * next(iter(TABLE.values()))"
    first = run(str(tmp_path), body=body, prelude=prelude)
    second = run(str(tmp_path), body=body, prelude=prelude)
    assert first["persistent"] == {"misses": 2, "saved": 1, "not saved": 1}, first
    assert any(f"{CASE_MODULE}.Key" in reason for reason in first["refusals"]), first["refusals"]
    assert second["persistent"] == {"misses": 1, "not saved": 1, "hits": 1}, second


def _opaque(x):
    return x + 1


def _breaking(x):
    y = torch.cos(x) * 2
    z = framegraph.disable(_opaque)(y)
    return z.sin()


def test_explain_traces_instead_of_loading(tmp_path):
    """explain() is about what a trace meets: with the cache on it still traces, and names the break."""
    x = torch.randn(3)
    with framegraph.config.patch(cache_dir=str(tmp_path)):
        framegraph.reset()
        counters.clear()
        torch.testing.assert_close(framegraph.compile(_breaking, backend="eager")(x), _breaking(x))
        assert counters["persistent"]["saved"] == 2
        framegraph.reset()
        counters.clear()
        torch.testing.assert_close(framegraph.compile(_breaking, backend="eager")(x), _breaking(x))
        assert dict(counters["persistent"]) == {"hits": 2}, "after reset(), this process loads what it saved"
        framegraph.reset()
        explained = framegraph.explain(_breaking)(x)
        assert explained.graph_break_count == 1 and explained.graph_count == 2
    framegraph.reset()


def test_a_cache_directory_that_cannot_be_written_is_a_warning_and_the_compile_stands(tmp_path):
    blocked = tmp_path / "a file, not a directory"
    blocked.write_text("")
    x = torch.randn(3)
    with framegraph.config.patch(cache_dir=str(blocked)):
        framegraph.reset()
        counters.clear()
        with pytest.warns(RuntimeWarning, match="could not save the translation"):
            torch.testing.assert_close(framegraph.compile(_breaking, backend="eager")(x), _breaking(x))
        assert counters["stats"]["unique_graphs"] == 2 and "saved" not in counters["persistent"]
    framegraph.reset()


def test_cache_dir_rejects_what_is_not_a_path():
    with pytest.raises(TypeError, match="cache_dir must be None or a directory path"):
        framegraph.config.cache_dir = 3


def _zoo_names() -> list[str]:
    from tests.models import zoo

    return list(zoo.ZOO)


# What the cache cannot save yet, and why: a parametrized module's property (its class is made
# for the one instance) closes over that instance, which no other process can name.
_NOT_SAVED = {"wav2vec2": "get_cached_parametrization closes over"}


@pytest.mark.parametrize("name", _zoo_names())
def test_library_models_load_what_they_saved(tmp_path, name):
    """Models of transformers, torchvision and timm: after reset() (every entry and resume
    function gone, as in a new process) each frame is installed from the cache, with the graphs
    the trace made and eager's outputs."""
    from tests.models import zoo
    from tests.models.census import _max_diff

    if not zoo.available(name):
        pytest.skip(f"{zoo.ZOO[name].library} is not installed")
    model, args, kwargs = zoo.build(name)
    with torch.no_grad():
        expected = model(*args, **kwargs)
        graphs = []
        with framegraph.config.patch(cache_dir=str(tmp_path)):
            for _ in range(2):
                framegraph.reset()
                counters.clear()
                result = framegraph.compile(model, backend="eager")(*args, **kwargs)
                assert _max_diff(result, expected) == 0.0  # (a key/value cache compared by what it holds)
                graphs.append(counters["stats"]["unique_graphs"])
                persistent = dict(counters["persistent"])
                refusals = list(counters["persistent_refusals"])
        framegraph.reset()
    assert graphs[0] >= 1 and graphs[1] == graphs[0], graphs
    if name in _NOT_SAVED:
        assert "hits" not in persistent and any(_NOT_SAVED[name] in r for r in refusals), (persistent, refusals)
        return
    assert set(persistent) == {"hits"}, persistent  # every frame loaded: no miss, refusal or failed guard


class _Doubler(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


class _Shifter(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 1


def _compile_modules(cache: str, models: list, x: torch.Tensor) -> dict:
    """Each model compiled and called in turn, in a fresh start of this process; the counts."""
    framegraph.reset()
    counters.clear()
    with framegraph.config.patch(cache_dir=cache):
        for model in models:
            for _ in range(2):
                torch.testing.assert_close(framegraph.compile(model, backend="eager")(x), model(x))
    framegraph.reset()
    return dict(counters["persistent"])


def test_modules_sharing_module_call_keep_their_own_entries_and_skip_each_others(tmp_path):
    """Every compiled module runs through one `module_call`, so their translations share a file:
    a module's entries are found past the others' without unpickling those (their locals'
    types differ), and a later module does not push an earlier one's out."""
    x = torch.randn(3, 4)
    models = [_Doubler(), _Shifter()]
    # One entry per set of local types: the second module's save must not drop the first's.
    with framegraph.config.patch(recompile_limit=1):
        assert _compile_modules(str(tmp_path), models, x) == {"misses": 2, "saved": 2, "passed over": 1}
        files = [name for _, _, names in os.walk(tmp_path) for name in names]
        assert len(files) == 1, files
        assert _compile_modules(str(tmp_path), models, x) == {"hits": 2, "passed over": 1}
        assert _compile_modules(str(tmp_path), models[::-1], x) == {"hits": 2, "passed over": 1}


def test_code_digests_do_not_depend_on_string_hashing(tmp_path):
    """A set constant is written in an order string hashing randomises: such code is digested
    by walking it, and every digest is the same in processes with different hash seeds."""
    script = textwrap.dedent("""
        import json
        from framegraph.persistent.portable import class_structure, code_digest, _has_set_constant

        def with_set(x):
            return x in {"alpha", "beta", "gamma", "delta"}

        def plain(x):
            return (x, "alpha", 1.5, None)

        class Holder:  # a set constant two code objects down, and one in a tuple of constants
            def method(self, x, y=("a", "b")):
                return lambda: x in {"alpha", "beta", "gamma"}

        assert _has_set_constant(with_set.__code__) and not _has_set_constant(plain.__code__)
        assert _has_set_constant(Holder.method.__code__)
        print(json.dumps([code_digest(with_set.__code__), code_digest(plain.__code__), class_structure(Holder)]))
    """)
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(digests) == 1, digests
    with_set, plain, _ = json.loads(digests.pop())
    assert with_set.startswith("w") and plain.startswith("m")


def test_an_entry_for_another_grad_mode_is_passed_over_unopened(tmp_path):
    x = torch.randn(3, 4)
    model = _Doubler()
    assert _compile_modules(str(tmp_path), [model], x) == {"misses": 1, "saved": 1}
    with torch.no_grad():
        assert _compile_modules(str(tmp_path), [model], x) == {"misses": 1, "saved": 1, "passed over": 1}
        assert _compile_modules(str(tmp_path), [model], x) == {"hits": 1}  # the newest entry is its own
    assert _compile_modules(str(tmp_path), [model], x) == {"hits": 1, "passed over": 1}


def test_a_loaded_graph_runs_the_code_fx_generated_for_it():
    """A loaded GraphModule is given back the forward fx generated when it was traced (not
    generated again node by node); when that code's globals cannot be saved, the graph still
    is, and its code is generated at load."""
    import pickle

    from framegraph.persistent.graphs import graph_bytes, graph_module

    def f(x, y):
        return torch.clamp(torch.nn.functional.relu(x @ y), max=float("inf")).sum(0)  # `inf`: a global of the code

    gm = torch.fx.symbolic_trace(f)
    x, y = torch.randn(3, 4), torch.randn(4, 5)
    saved = graph_bytes(gm)
    assert pickle.loads(saved)[2] is not None, "the generated code was saved"
    with unittest.mock.patch.object(torch.fx.Graph, "python_code", side_effect=AssertionError("generated again")):
        loaded = graph_module(saved)
    assert loaded.code == gm.code and "python_code" not in vars(loaded.graph)
    torch.testing.assert_close(loaded(x, y), f(x, y))
    type(gm).forward.__globals__["unsaveable"] = lambda: None  # a global no other process can find
    saved = graph_bytes(gm)
    assert pickle.loads(saved)[2] is None
    again = graph_module(saved)
    assert again.code == gm.code
    torch.testing.assert_close(again(x, y), f(x, y))


def test_a_loaded_translation_is_not_verified_again_unless_it_was_saved_unverified(tmp_path):
    """What is installed from the cache passed the bytecode verifier when it was made (and the
    file's digest says it is what was saved), so loading does not verify it again; an entry
    without that mark (an older one) is verified at load."""
    import framegraph.persistent as persistent

    first = run(str(tmp_path))
    assert first["persistent"] == {"misses": 2, "saved": 2}, first
    with unittest.mock.patch.object(persistent, "verify_generated", side_effect=AssertionError("verified again")):
        second = run(str(tmp_path))
    assert second["persistent"] == {"hits": 2} and not second["warnings"], second

    unmarked = tmp_path / "unmarked"
    original_dumps = persistent.dumps

    def without_mark(value):
        if isinstance(value, dict):  # the entry (dumps also writes the guard program's plan)
            value = {k: v for k, v in value.items() if k != "verified"}
        return original_dumps(value)

    with unittest.mock.patch.object(persistent, "dumps", without_mark):
        run(str(unmarked))
    seen = []
    with unittest.mock.patch.object(persistent, "verify_generated", side_effect=lambda code, **kw: seen.append(code)):
        third = run(str(unmarked))
    assert third["persistent"] == {"hits": 2}, third
    assert len(seen) == 3, "the two frames' code and the resume function are verified"


def test_a_loaded_translation_keeps_its_guard_programs_layout(tmp_path):
    """The guard program's layout is saved with the guards: loading makes the same program
    without laying it out again, and it still fails on what changed."""
    from framegraph import guard_program

    first = run(str(tmp_path))
    assert first["persistent"] == {"misses": 2, "saved": 2}, first
    with unittest.mock.patch.object(guard_program, "lower", side_effect=AssertionError("laid out again")):
        second = run(str(tmp_path))
    assert second["persistent"] == {"hits": 2} and not second["warnings"], second
    third = run(str(tmp_path), rows=7)  # a new shape: the program made from the plan refuses it
    assert "hits" not in third["persistent"] and third["persistent"]["guards failed"] >= 1, third
    assert third["failures"] and not third["warnings"], third


def test_a_pickled_source_hashes_as_a_new_one_in_another_process():
    """Sources keep their hash once computed; a str's hash differs between processes, so a
    pickled source must not carry it into the next one."""
    import pickle

    from framegraph.source import AttrSource, ItemSource, LocalSource

    source = ItemSource(AttrSource(LocalSource("self"), "layers"), 0)
    hash(source)
    data = pickle.dumps(source)
    script = ("import pickle, sys; from framegraph.source import AttrSource, ItemSource, LocalSource; "
              "s = pickle.loads(sys.stdin.buffer.read()); "
              "print(hash(s) == hash(ItemSource(AttrSource(LocalSource('self'), 'layers'), 0)), "
              "{s: 1}.get(ItemSource(AttrSource(LocalSource('self'), 'layers'), 0)))")
    done = subprocess.run([sys.executable, "-c", script], input=data, capture_output=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": "random"})
    assert done.stdout.split() == [b"True", b"1"]


_LINEAR = torch.nn.Linear(8, 8)


def _checkpointed(x):
    y = torch.utils.checkpoint.checkpoint(lambda t: torch.relu(_LINEAR(t)) * 2, x, use_reentrant=False)
    return y.sin().sum()


def _cond(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos() * 3, (x,))


def _vmapped(x):
    return torch.func.vmap(lambda row: row @ _LINEAR.weight.T + row.sum())(x)


def _grad_of(x):
    return torch.func.grad(lambda t: (t.sin() * 2).sum())(x)


def _flex(x):
    from torch.nn.attention.flex_attention import flex_attention

    q = x.view(1, 1, 4, 8)
    return flex_attention(q, q, q, score_mod=lambda score, b, h, i, j: score + (i - j))


@pytest.mark.parametrize("fn", [_checkpointed, _cond, _vmapped, _grad_of, _flex], ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_graphs_with_higher_order_operators_load_what_they_saved(tmp_path, fn, backend):
    """A graph that calls a higher-order operator (its subgraphs as attributes, the operator by
    its torch.ops.higher_order name) is saved and loaded like any other: the second start runs
    it without tracing, with eager's values and gradients."""
    import warnings

    x = torch.randn(4, 8, requires_grad=fn is _checkpointed)
    other = -x.detach().abs() if fn is _cond else x  # _cond's other branch
    counts = []
    for _ in range(2):
        framegraph.reset()
        counters.clear()
        with framegraph.config.patch(cache_dir=str(tmp_path)), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "flex_attention called without torch.compile")
            compiled = framegraph.compile(fn, backend=backend)
            result = compiled(x)
            torch.testing.assert_close(result, fn(x))
            if x.requires_grad:
                torch.testing.assert_close(torch.autograd.grad(result, x), torch.autograd.grad(fn(x), x))
            torch.testing.assert_close(compiled(other), fn(other))
        counts.append((dict(counters["persistent"]), counters["stats"]["unique_graphs"],
                       sum(counters["graph_break"].values())))
    framegraph.reset()
    assert counts == [({"misses": 1, "saved": 1}, 1, 0), ({"hits": 1}, 1, 0)], counts


def _made(base: type) -> type:
    """A class made at run time, as FSDP2's fully_shard makes `FSDP<Class>` for each class it
    shards: no name finds it."""
    return type(f"Made{base.__name__}", (base,), {"scale": 3})


def test_a_class_made_at_run_time_is_found_by_its_bases(tmp_path):
    x = torch.randn(3, 4)
    made = _made(_Doubler)
    assert _compile_modules(str(tmp_path), [made()], x) == {"misses": 1, "saved": 1}
    assert _compile_modules(str(tmp_path), [made()], x) == {"hits": 1}
    twin = _made(_Doubler)  # the same name and bases: which one the saved guard meant is unknown
    assert _compile_modules(str(tmp_path), [made()], x) == {"stale": 1, "misses": 1, "saved": 1}
    del twin


class _WithConstant(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * torch.tensor([1.0, 2.0, 3.0, 4.0]) + self.offset(x)  # a constant the trace makes

    def offset(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))  # subgraphs as attributes


def test_the_eager_backend_runs_the_saved_code_without_a_graph(tmp_path):
    """For the eager backend a loaded graph is its saved forward (fx's code, compiled), bound
    to the constants and subgraphs it reads: no Graph or GraphModule is built, unless an
    observer (explain, the report) is there to see one. Tracebacks find its source."""
    import linecache

    from framegraph import output_graph
    from framegraph.persistent import graphs

    x = torch.randn(3, 4)
    model = _WithConstant()
    assert _compile_modules(str(tmp_path), [model], x) == {"misses": 1, "saved": 1}
    with unittest.mock.patch.object(graphs, "graph_module", side_effect=AssertionError("a graph was built")):
        assert _compile_modules(str(tmp_path), [model], x) == {"hits": 1}
    forward = graphs.eager_forward(next(iter(_saved_graphs(tmp_path))))
    assert isinstance(forward.__self__, torch.nn.Module) and not isinstance(forward.__self__, torch.fx.GraphModule)
    source = "".join(linecache.getlines(forward.__code__.co_filename))
    assert "def forward" in source and "cond" in source
    built = []
    with unittest.mock.patch.object(output_graph, "graph_observers", [built.append]):
        assert _compile_modules(str(tmp_path), [model], x) == {"hits": 1}
    assert len(built) == 1 and isinstance(built[0], torch.fx.GraphModule)


def _saved_graphs(directory) -> list[bytes]:
    from framegraph.persistent import portable, store

    files = [os.path.join(d, name) for d, _, names in os.walk(directory) for name in names]
    return [graph for path in files for _, data in store.read(path)
            for graph, _, _ in portable.loads(data)["graphs"].values()]


def _starts(cache, fn, *args) -> dict:
    """`fn` compiled and called in a fresh start of this process; what the cache counted."""
    framegraph.reset()
    counters.clear()
    with framegraph.config.patch(cache_dir=str(cache)):
        torch.testing.assert_close(framegraph.compile(fn, backend="eager")(*args), fn(*args))
    framegraph.reset()
    return dict(counters["persistent"])


ANNOTATIONS = {"kind": int | None, "items": list[int]}


def _checks_annotations(x):
    if isinstance(3, ANNOTATIONS["kind"]) and ANNOTATIONS["items"].__origin__ is list:
        return x + 1
    return x - 1


def test_an_identity_guard_on_an_annotation_holds_for_an_equal_one(tmp_path):
    """`int | None` is a new object each time it is written (a dataclass validator's closure
    holds one): the identity guard a trace puts on it holds, in another process, for an equal
    one at the same place, and fails for another."""
    x = torch.randn(3)
    assert _starts(tmp_path, _checks_annotations, x) == {"misses": 1, "saved": 1}
    ANNOTATIONS["kind"] = int | None  # equal, not the same object
    assert _starts(tmp_path, _checks_annotations, x) == {"hits": 1}
    ANNOTATIONS["kind"] = str | None
    try:
        assert _starts(tmp_path, _checks_annotations, x) == {"guards failed": 1, "misses": 1, "saved": 1}
    finally:
        ANNOTATIONS["kind"] = int | None


@torch.library.custom_op("framegraph_tests::shifted", mutates_args=())
def _shifted(x: torch.Tensor) -> torch.Tensor:
    return x + 0.5


@_shifted.register_fake
def _(x):
    return torch.empty_like(x)


def _calls_operators(x):
    return torch.ops.framegraph_tests.shifted(torch.ops.aten.mul.Tensor(torch.ops.aten.sin(x), 2))


def test_graphs_calling_operators_by_name_are_saved(tmp_path):
    """torch.ops operators (an overload, a packet, a library's custom op) are saved by name:
    they hold pybind objects that do not pickle."""
    x = torch.randn(3)
    assert _starts(tmp_path, _calls_operators, x) == {"misses": 1, "saved": 1}
    assert _starts(tmp_path, _calls_operators, x) == {"hits": 1}


class _Registry:
    def __init__(self) -> None:
        self.table = {"double": lambda t: t * 2}


REGISTRY = _Registry()


def _through(registry):
    def decorate(fn):
        def wrapper(x):
            return registry.table["double"](fn(x))
        return wrapper
    return decorate


@_through(REGISTRY)
def _registered(x):
    return torch.cos(x)


def _calls_registered(x):
    return _registered(x) + 1


def test_a_function_closing_over_an_object_a_module_holds_is_saved(tmp_path):
    """A decorator's wrapper (found by its structure, not its name) whose closure holds a
    library's registry object: the object is described by the global that holds it; what the
    trace read of it is guarded as usual."""
    x = torch.randn(3)
    assert _starts(tmp_path, _calls_registered, x) == {"misses": 1, "saved": 1}
    assert _starts(tmp_path, _calls_registered, x) == {"hits": 1}
    double, REGISTRY.table["double"] = REGISTRY.table["double"], lambda t: t * 3  # read by the trace
    try:
        assert _starts(tmp_path, _calls_registered, x)["misses"] == 1
    finally:
        REGISTRY.table["double"] = double



DYNAMIC = """
import json, torch, framegraph
from framegraph.counters import counters
framegraph.config.capture_dynamic_output_shape_ops = True

def f(x, y, n):
    # the trace assumes x and y share their length (a guard relates the two symbols)
    return (x * n).sum(0) * (1 if x.shape[0] == y.shape[0] else -1)

def g(x, y, n):
    # no relation between the lengths; n is an int that changes from call to call
    return torch.cat([x * n, y]).sum(0) + x.shape[0] * y.shape[0]

def d(x, y, n):
    # a size that depends on data
    return y.nonzero().float().sum(0) + x.sum()

functions = {{"f": f, "g": g, "d": d}}
compiled = {{name: framegraph.compile(fn, backend={backend!r}) for name, fn in functions.items()}}
for name, rows, other, scale in {calls}:
    args = (torch.randn(rows, 3), torch.randn(other, 3), scale)
    torch.testing.assert_close(compiled[name](*args), functions[name](*args))
RESULT = {{"persistent": dict(counters["persistent"]), "graphs": counters["stats"]["unique_graphs"],
          "refusals": dict(counters["persistent_refusals"])}}
print(json.dumps(RESULT))
"""


def _dynamic(cache: str, backend: str, calls: list, fresh_process: bool = False) -> dict:
    return _run_source(cache, textwrap.dedent(DYNAMIC.format(backend=backend, calls=calls)), fresh_process)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_translations_with_symbolic_sizes_are_saved_and_load_for_new_sizes(tmp_path, backend):
    """Automatic dynamic: the second call's sizes make the frame's sizes (and the int)
    symbolic. A new process takes that translation for sizes it has never seen, without
    tracing; sizes that break a relation the trace assumed (f's x and y of one length) fail
    its guards and trace, with eager's result."""
    cache, fresh = str(tmp_path), backend == "inductor"
    first = _dynamic(cache, backend, [("f", 5, 5, 2), ("f", 7, 7, 3), ("g", 5, 6, 2), ("g", 7, 9, 3)], fresh)
    assert first["persistent"] == {"misses": 4, "saved": 4, "guards failed": 2}, first
    assert first["graphs"] == 4, first
    second = _dynamic(cache, backend, [("f", 9, 9, 4), ("f", 11, 11, 5), ("g", 10, 10, 4), ("g", 4, 6, 5)], fresh)
    assert second["persistent"] == {"hits": 2}, second
    assert second["graphs"] == 2, "nothing was traced: each saved graph went to the backend once"
    broken = _dynamic(cache, backend, [("f", 9, 9, 4), ("f", 4, 6, 4)], fresh)
    assert broken["persistent"]["hits"] == 1 and broken["persistent"]["saved"] == 1, broken
    assert broken["graphs"] == 2, "the relation failed, so the frame was traced for the new lengths"


def test_a_graph_with_sizes_from_data_is_saved_only_for_the_eager_backend(tmp_path):
    calls = [("d", 5, 5, 2), ("d", 7, 7, 3)]
    compiling = _dynamic(str(tmp_path), "aot_eager", calls)
    assert compiling["refusals"] == {"the graph has sizes that depend on data, for a backend other than eager": 2}
    eager = _dynamic(str(tmp_path), "eager", calls)
    assert eager["persistent"]["saved"] == 2 and not eager["refusals"], eager
    again = _dynamic(str(tmp_path), "eager", [("d", 9, 9, 4)])
    assert again["persistent"] == {"hits": 1} and again["graphs"] == 1, again
