"""The backends torch.compile users pass by name, and the ones packages declare as entry points.

Every built-in name runs a forward and a backward compiled by framegraph and by torch.compile
with the same backend name; results and gradients equal eager's and each other's.
"""

import sys
import textwrap

import pytest
import torch

import framegraph
from framegraph import exc
from framegraph.backends import ENTRY_POINT_GROUP, list_backends, lookup_backend
from framegraph.counters import counters

from tests.capture.helpers import assert_same

STANDARD = ["eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner", "inductor"]


def mlp_step(x, w1, w2):
    h = torch.nn.functional.gelu(x @ w1)
    return torch.log_softmax(h @ w2, dim=-1).sum(dim=0)


def _inputs():
    torch.manual_seed(0)
    return (torch.randn(6, 5), torch.randn(5, 7, requires_grad=True), torch.randn(7, 3, requires_grad=True))


def _forward_backward(fn, args):
    out = fn(*args)
    out.sum().backward()
    return out.detach(), [a.grad.clone() for a in args if a.requires_grad]


def test_standard_backends_listed():
    assert set(STANDARD) <= set(list_backends())


def _ours_like_eager(name, same=assert_same):
    """Forward and backward compiled by framegraph with `name`: one graph, eager's numbers."""
    expected = _forward_backward(mlp_step, _inputs())
    framegraph.reset()
    counters.clear()
    ours = _forward_backward(framegraph.compile(mlp_step, backend=name), _inputs())
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    same(expected, ours)
    return ours


@pytest.mark.parametrize("name", STANDARD)
def test_standard_backend_matches_eager_and_torch_compile(name):
    import torch._dynamo

    ours = _ours_like_eager(name)
    torch._dynamo.reset()
    theirs = _forward_backward(torch.compile(mlp_step, backend=name), _inputs())
    torch._dynamo.reset()
    assert_same(theirs, ours)


def test_unknown_backend_lists_every_name():
    with pytest.raises(exc.FramegraphError) as info:
        framegraph.compile(mlp_step, backend="aot_eagre")
    message = str(info.value)
    assert "'aot_eagre'" in message
    for name in list_backends():
        assert name in message


@pytest.fixture
def declared_backends(tmp_path, monkeypatch):
    """A package on sys.path whose metadata declares backends in torch.compile's entry-point
    group: one that works, one whose module is missing and one that is not callable."""
    (tmp_path / "fg_test_backend_pkg.py").write_text(textwrap.dedent("""
        CALLS = []

        def counting(gm, example_inputs):
            CALLS.append(len(list(gm.graph.nodes)))
            return gm.forward

        NOT_CALLABLE = 42
    """))
    info = tmp_path / "fg_test_backend_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fg-test-backend-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""
        [{ENTRY_POINT_GROUP}]
        fg_declared = fg_test_backend_pkg:counting
        fg_missing = fg_test_backend_pkg_absent:counting
        fg_not_callable = fg_test_backend_pkg:NOT_CALLABLE
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("fg_test_backend_pkg", None)
    from framegraph.backends import _REGISTRY

    _REGISTRY.pop("fg_declared", None)


def test_entry_point_backend_is_listed_and_used(declared_backends):
    """torch.compile finds the same declared backend under the same name."""
    import torch._dynamo
    from torch._dynamo.backends import registry

    assert {"fg_declared", "fg_missing", "fg_not_callable"} <= set(list_backends())
    x = torch.randn(4, 3)
    framegraph.reset()
    result = framegraph.compile(lambda t: t.sin() + 1, backend="fg_declared")(x)
    assert torch.equal(result, x.sin() + 1)
    import fg_test_backend_pkg

    assert fg_test_backend_pkg.CALLS and lookup_backend("fg_declared") is fg_test_backend_pkg.counting
    ours = list(fg_test_backend_pkg.CALLS)
    fg_test_backend_pkg.CALLS.clear()
    # torch caches its first discovery: make it look again, and forget it afterwards
    registry._lazy_import.cache_clear()
    registry._discover_entrypoint_backends.cache_clear()
    try:
        torch._dynamo.reset()
        assert torch.equal(torch.compile(lambda t: t.sin() + 1, backend="fg_declared")(x), result)
        assert fg_test_backend_pkg.CALLS == ours
    finally:
        for name in ("fg_declared", "fg_missing", "fg_not_callable"):
            registry._BACKENDS.pop(name, None)
            registry._COMPILER_FNS.pop(name, None)
        torch._dynamo.reset()


def test_entry_point_backend_that_fails_to_load(declared_backends):
    with pytest.raises(exc.FramegraphError, match="fg_missing.*failed to load.*ModuleNotFoundError"):
        lookup_backend("fg_missing")
    with pytest.raises(exc.FramegraphError, match="fg_not_callable.*not a callable"):
        lookup_backend("fg_not_callable")


# ---- the backends that hand the graph to another runtime (backends/external.py) -----------------

def test_every_name_torch_compile_lists_is_a_framegraph_backend():
    import torch._dynamo

    assert set(torch._dynamo.list_backends()) <= set(list_backends())  # cudagraphs, inductor, openxla, tvm


def test_cudagraphs_without_cuda_runs_the_graph_and_says_why_like_torch_compile():
    """On CPU tensors (and on this machine, with no CUDA) both frontends skip CUDA graphs and run
    the graph through AOTAutograd: forward and backward equal eager's."""
    import torch._dynamo

    expected = _forward_backward(mlp_step, _inputs())
    framegraph.reset()
    counters.clear()
    with pytest.warns(RuntimeWarning, match="cudagraphs.*runs without CUDA graphs"):
        ours = _forward_backward(framegraph.compile(mlp_step, backend="cudagraphs"), _inputs())
    assert counters["stats"]["unique_graphs"] == 1
    torch._dynamo.reset()
    theirs = _forward_backward(torch.compile(mlp_step, backend="cudagraphs"), _inputs())
    torch._dynamo.reset()
    assert_same(expected, ours)
    assert_same(theirs, ours)


def _tvm_available() -> bool:
    try:
        from tvm.relax.frontend.torch import from_fx  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.skipif(not _tvm_available(), reason="apache-tvm (0.20 or later, with its Relax FX frontend) is not installed")
def test_tvm_runs_the_graph_on_tvm_and_equals_eager():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(5, 8)
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(model, backend="tvm")
    with torch.no_grad():
        for batch in (x, torch.randn(5, 8)):
            torch.testing.assert_close(compiled(batch), model(batch), rtol=1e-5, atol=1e-5)
    assert counters["stats"]["unique_graphs"] == 1
    with pytest.raises(exc.BackendCompilerFailed, match="inference only"):
        framegraph.reset()
        framegraph.compile(model, backend="tvm")(x)  # the parameters require grad


def test_a_backend_whose_package_is_missing_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_xla", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "tvm", None)
    for name, package in (("openxla", "torch_xla"), ("openxla_eval", "torch_xla"), ("tvm", "apache-tvm")):
        framegraph.reset()
        with pytest.raises(exc.BackendCompilerFailed, match=package):
            framegraph.compile(lambda t: t.sin() + 1, backend=name)(torch.randn(3))


DEBUGGING = ["eager_noexcept", "eager_debug", "pre_dispatch_eager", "ts", "aot_ts"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize("name", DEBUGGING)
def test_torch_compile_s_debugging_backends_match_eager_and_torch_compile(name):
    """backends/debugging.py: forward and backward under each name, as under torch.compile."""
    import torch._dynamo

    ours = _ours_like_eager(name, same=torch.testing.assert_close)
    torch._dynamo.reset()
    try:
        if name in ("ts", "aot_ts"):
            # torch.compile's own fail in 2.13: TorchScript cannot script its lazy GraphModule
            with pytest.raises(torch._dynamo.exc.BackendCompilerFailed):
                torch.compile(mlp_step, backend=name)(*_inputs())
        else:
            torch.testing.assert_close(ours, _forward_backward(torch.compile(mlp_step, backend=name), _inputs()))
    finally:
        torch._dynamo.reset()


def test_every_name_torch_compile_registers_but_its_own_tooling_is_a_framegraph_backend():
    import torch._dynamo

    tooling = {"dynamo_minifier_backend", "dynamo_accuracy_minifier_backend", "invoke_subgraph",
               "aot_eager_decomp_partition_crossref", "aot_eager_decomp_partition_with_mode"}
    theirs = {n for n in torch._dynamo.list_backends(exclude_tags=()) if not n.endswith("_TESTING_ONLY")} - tooling
    assert theirs <= set(list_backends()), theirs - set(list_backends())


def test_eager_noexcept_names_a_failure_of_the_graph():
    """An index out of range is found only when the graph runs: the error says the graph failed,
    with the program's own error chained."""
    framegraph.reset()
    compiled = framegraph.compile(lambda x, i: x[i] + 1, backend="eager_noexcept")
    assert torch.equal(compiled(torch.ones(2), torch.tensor([1])), torch.tensor([2.0]))
    with pytest.raises(exc.FramegraphError, match="the graph raised while it ran") as info:
        compiled(torch.ones(2), torch.tensor([5]))
    assert isinstance(info.value.__cause__, (IndexError, RuntimeError))
