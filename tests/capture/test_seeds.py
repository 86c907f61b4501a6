"""The behaviour the seed documents show, reproduced with framegraph in place of torch.compile."""

import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import framegraph
from framegraph.exc import BackendCompilerFailed, FramegraphError, Unsupported

from .helpers import assert_same

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_script(source: str, **env: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True,
                          text=True, env=environment, cwd=ROOT, timeout=300)


def test_seed_004_counters_program_prints_the_four_lines():
    result = run_script("""
        import torch
        import framegraph
        from framegraph import counters

        def run(label, fn, n):
            framegraph.reset(); counters.clear()
            cf = framegraph.compile(fn, backend="eager")
            for _ in range(n):
                cf(torch.randn(4))
            print(label, dict(counters["stats"]))

        run("1 op, 1 call  ", lambda x: x + 1, 1)
        run("1 op, 5 calls ", lambda x: x + 1, 5)
        run("3 ops, 1 call ", lambda x: torch.sin(x) * 2 + 1, 1)
        run("3 ops, 5 calls", lambda x: torch.sin(x) * 2 + 1, 5)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "1 op, 1 call   {'calls_captured': 1, 'unique_graphs': 1}",
        "1 op, 5 calls  {'calls_captured': 1, 'unique_graphs': 1}",
        "3 ops, 1 call  {'calls_captured': 3, 'unique_graphs': 1}",
        "3 ops, 5 calls {'calls_captured': 3, 'unique_graphs': 1}",
    ]


def test_seed_004_modified_bytecode_calls_the_graph_and_mentions_no_torch():
    result = run_script("""
        import torch
        import framegraph

        def f(x):
            y = torch.sin(x)
            return y + 1

        framegraph.compile(f, backend="eager")(torch.randn(4))
    """, FRAMEGRAPH_LOGS="bytecode")
    assert result.returncode == 0, result.stderr
    log = result.stderr
    assert "[0/0] ORIGINAL BYTECODE f" in log
    modified = log[log.index("MODIFIED BYTECODE"):]
    lines = [line for line in modified.splitlines()[1:] if line.strip() not in ("", "[0/0]")]
    assert all(line.startswith("[0/0] ") for line in lines)
    ops = [re.search(r"\b([A-Z][A-Z_]+)\b", line).group(1) for line in lines]
    text = "\n".join(lines)
    assert "__compiled_fn_0" in text and "LOAD_GLOBAL" in text
    assert "CALL" in text and "UNPACK_SEQUENCE          1" in text and "RETURN_VALUE" in text
    assert "torch" not in text
    assert ops[-2:] == ["UNPACK_SEQUENCE", "RETURN_VALUE"]
    assert "CALL" in ops and ops.index("CALL") > ops.index("LOAD_FAST")


def test_guards_log_prints_one_guard_per_line_with_the_user_line():
    result = run_script("""
        import torch
        import framegraph

        def f(x, n):
            return torch.sin(x) * n

        framegraph.compile(f, backend="eager")(torch.randn(4), 3)
    """, FRAMEGRAPH_LOGS="guards")
    assert result.returncode == 0, result.stderr
    guards = [line for line in result.stderr.splitlines() if line.startswith("[0/0] - ")]
    assert any("L['n'] == 3" in g and "in f" in g for g in guards), guards
    assert any("check_tensor(L['x']" in g and "size=[4]" in g for g in guards), guards
    assert any("G['torch'] is <module 'torch'>" in g for g in guards), guards


def mlp(x, w1, b1, w2, b2, w3, b3, w4, b4):
    x = torch.relu(x @ w1.t() + b1)
    x = torch.relu(torch.nn.functional.linear(x, w2, b2))
    x = torch.tanh(x @ w3.t() + b3)
    return x @ w4.t() + b4


def _mlp_args(requires_grad=False):
    torch.manual_seed(0)
    sizes = [(16, 8), (32, 16), (32, 32), (4, 32)]
    args = [torch.randn(5, 8)]
    for out, inp in sizes:
        args += [torch.randn(out, inp, requires_grad=requires_grad), torch.randn(out, requires_grad=requires_grad)]
    return args


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_four_layer_mlp_matches_eager_on_every_backend(backend):
    framegraph.reset()
    args = _mlp_args()
    compiled = framegraph.compile(mlp, backend=backend)
    assert_same(mlp(*args), compiled(*args))
    other = [torch.randn(7, 8)] + args[1:]
    assert_same(mlp(*other), compiled(*other))


def test_mlp_gradients_match_eager_with_aot_eager():
    framegraph.reset()
    eager_args, compiled_args = _mlp_args(True), _mlp_args(True)
    mlp(*eager_args).square().sum().backward()
    framegraph.compile(mlp, backend="aot_eager")(*compiled_args).square().sum().backward()
    for e, c in zip(eager_args[1:], compiled_args[1:]):
        torch.testing.assert_close(c.grad, e.grad)


def test_compile_rejects_non_callables_and_unknown_backends():
    with pytest.raises(TypeError, match="expects a function or an nn.Module, got int"):
        framegraph.compile(42)
    with pytest.raises(FramegraphError, match="unknown backend 'fast'.*aot_eager, .*eager, .*inductor"):
        framegraph.compile(mlp, backend="fast")


def test_compile_works_as_a_decorator_with_and_without_arguments():
    @framegraph.compile
    def plain(x):
        return x * 2

    @framegraph.compile(backend="eager")
    def configured(x):
        return x * 3

    x = torch.randn(3)
    assert_same(x * 2, plain(x))
    assert_same(x * 3, configured(x))
    assert plain.__name__ == "plain"


def test_backend_failure_is_reported_with_its_message():
    def broken(gm, example_inputs):
        raise RuntimeError("no registers left")

    framegraph.reset()
    with pytest.raises(BackendCompilerFailed, match="no registers left"):
        framegraph.compile(lambda x: x.sin(), backend=broken)(torch.randn(2))


def test_fullgraph_raises_unsupported_with_the_reason_and_user_line():
    def uses_print(x):
        print("side effect")
        return x + 1

    framegraph.reset()
    with pytest.raises(Unsupported) as info:
        framegraph.compile(uses_print, backend="eager", fullgraph=True)(torch.randn(2))
    error = info.value
    assert error.gb_type == "Attempted to call function marked as skipped"
    assert "print" in str(error) and "test_seeds.py" in str(error)
    assert error.hints


def test_unsupported_frame_runs_eagerly_and_callees_still_compile():
    from .helpers import CountingBackend

    def helper(x):
        return torch.cos(x) + 1

    def outer(x):
        print("eager")
        return helper(x) * 2

    framegraph.reset()
    backend = CountingBackend()
    x = torch.randn(3)
    assert_same(outer(x), framegraph.compile(outer, backend=backend)(x))
    assert backend.graph_count == 1, "helper is compiled as a frame of its own"
