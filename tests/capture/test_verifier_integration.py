"""Generated code that is invalid never runs: the bytecode verifier refuses bad replacement
code and resume functions, torch.fx code that does not compile is a typed error, and in both
cases the frame runs eagerly with a warning (or raises under fullgraph=True and strict)."""

import operator
import re
import warnings

import pytest
import torch

import framegraph
import framegraph.codegen as codegen
import framegraph.output_graph as output_graph
import framegraph.resume_execution as resume_execution
from framegraph import config
from framegraph.bytecode import create_instruction, versions
from framegraph.bytecode.verify import VerificationError
from framegraph.counters import counters
from framegraph.exc import GraphCodeError, InternalError

from .helpers import CountingBackend, assert_same, clone

EVENTS: list = []


@framegraph.disable
def note(x):
    EVENTS.append(x.shape)


def straight(x, w):
    return torch.sin(x @ w) + 1


def breaking(x):
    y = torch.cos(x) * 2
    note(y)
    return y - 1


def args():
    torch.manual_seed(0)
    return torch.randn(3, 4), torch.randn(4, 2)


@pytest.fixture
def null_returns(monkeypatch):
    """Codegen that hands RETURN_VALUE a NULL: the interpreter would crash on it."""
    def return_null(self):
        self.append(create_instruction("PUSH_NULL"), create_instruction("RETURN_VALUE"))

    monkeypatch.setattr(codegen.PyCodegen, "return_value", return_null)


def run_eagerly_with_warning(fn, inputs, message, backend=None):
    """Compiles `fn`, calls it twice; each call must equal eager and one warning matching
    `message` must say why the frame runs eagerly."""
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(fn, backend=backend or CountingBackend())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            EVENTS.clear()
            expected = fn(*clone(inputs))
            expected_events = list(EVENTS)
            EVENTS.clear()
            assert_same(expected, compiled(*clone(inputs)))
            assert EVENTS == expected_events
    texts = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(texts) == 1, texts  # the frame was declined, not retried on the second call
    assert re.search(message, texts[0]), texts[0]


def test_refused_replacement_runs_eagerly_with_a_warning(null_returns):
    run_eagerly_with_warning(
        straight, args(),
        r"framegraph generated invalid code for straight \(.*\) and runs it eagerly: VerificationError: "
        r"NULL \(pushed by PUSH_NULL at offset \d+\) returned by RETURN_VALUE at offset \d+ \(line \d+\) "
        r"in straight")
    assert counters["verifier"] == {"NULL returned": 1}
    assert counters["fallback"] == {"VerificationError": 1}


@pytest.mark.parametrize("how", ["fullgraph", "strict"])
def test_refusal_raises_under_fullgraph_and_strict(null_returns, how):
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(straight, backend=CountingBackend(), fullgraph=how == "fullgraph")
    with config.patch(strict=how == "strict"), pytest.raises(VerificationError, match="NULL returned|returned by") as info:
        compiled(*args())
    assert isinstance(info.value, InternalError) and info.value.rule == "NULL returned"
    assert info.value.opname == "RETURN_VALUE" and info.value.lineno is not None
    assert counters["verifier"] == {"NULL returned": 1}


def test_refused_resume_function(monkeypatch):
    generate = resume_execution._generate
    smallest = versions.MIN_STACKSIZE  # 3.13 gives every frame at least one slot

    def too_small_a_stack(spec):
        code, origin = generate(spec)
        return code.replace(co_stacksize=smallest), origin

    monkeypatch.setattr(resume_execution, "_generate", too_small_a_stack)
    resume_execution.CACHE.clear()
    run_eagerly_with_warning(
        breaking, (torch.randn(3),),
        rf"VerificationError: .* makes the stack {smallest + 1} deep, past co_stacksize {smallest} at offset \d+ "
        r"\(line \d+\) in breaking \(")
    assert counters["verifier"] == {"stack overflow": 1}
    resume_execution.CACHE.clear()


def test_every_replacement_and_resume_function_is_verified(monkeypatch):
    seen = []
    real = codegen.verify
    monkeypatch.setattr(codegen, "verify", lambda code, *, replacement_for=None: (
        seen.append((code.co_name, replacement_for is not None)), real(code, replacement_for=replacement_for)))
    resume_execution.CACHE.clear()
    run_breaks_once = framegraph.compile(breaking, backend=CountingBackend())
    framegraph.reset()
    x = torch.randn(3)
    assert_same(breaking(x.clone()), run_breaks_once(x.clone()))
    assert ("breaking", True) in seen  # the frame's replacement
    # the resume function, when it is made, and its own replacement, when the hook compiles it;
    # it carries the original's name
    assert sorted(entry for entry in seen if entry[0] == "breaking") == [("breaking", False), ("breaking", True),
                                                                          ("breaking", True)]
    seen.clear()
    framegraph.reset()
    resume_execution.CACHE.clear()
    with config.patch(verify_bytecode=False):
        assert_same(breaking(x.clone()), framegraph.compile(breaking, backend=CountingBackend())(x.clone()))
    assert seen == []


@pytest.fixture
def fx_code_does_not_compile(monkeypatch):
    """A graph whose fx code reads `0 += x`, which Python refuses to compile."""
    remove_dead_code = output_graph.remove_dead_code

    def add_bad_node(graph):
        remove_dead_code(graph)
        first = next(node for node in graph.nodes if node.op == "placeholder")
        output = next(node for node in graph.nodes if node.op == "output")
        with graph.inserting_before(output):
            graph.call_function(operator.iadd, (0, first))

    monkeypatch.setattr(output_graph, "remove_dead_code", add_bad_node)


def test_graph_code_that_does_not_compile_runs_eagerly_with_a_warning(fx_code_does_not_compile):
    run_eagerly_with_warning(
        straight, args(),
        r"GraphCodeError: torch.fx generated graph code that does not compile: .*augmented assignment, "
        r"at line \d+ of the graph's code: 0 \+= l_x")
    assert counters["fallback"] == {"GraphCodeError": 1}


@pytest.mark.parametrize("how", ["fullgraph", "strict"])
def test_graph_code_error_raises_under_fullgraph_and_strict(fx_code_does_not_compile, how):
    framegraph.reset()
    compiled = framegraph.compile(straight, backend=CountingBackend(), fullgraph=how == "fullgraph")
    with config.patch(strict=how == "strict"), pytest.raises(GraphCodeError, match=r"0 \+= l_x") as info:
        compiled(*args())
    assert isinstance(info.value.__cause__, SyntaxError)
