"""framegraph's frame hook beside torch.compile's in one process. Each keeps the evaluator it
found when it installed itself and chains to it; in the order below (framegraph's installed
over torch's while torch's already chains to framegraph's) each handed every frame to the
other for ever, and the program hung. Run in a child process, with a timeout."""

from __future__ import annotations

import os
import subprocess
import sys

PROGRAM = '''
import torch
import torch._dynamo

import framegraph


@framegraph.disable
def helper(x):
    return x + 1


def b(x):
    y = x * 2
    torch._dynamo.graph_break()
    return helper(y)  # framegraph's hook off and on again, under torch.compile's


torch_b = torch.compile(b, backend="eager")


def a(x):
    y = x.cos()
    framegraph.graph_break()
    return torch_b(y) - 1  # torch.compile's hook installed over framegraph's


compiled = framegraph.compile(a, backend="eager")
x = torch.arange(4.0)
for _ in range(3):
    assert torch.equal(compiled(x), a(x))
assert torch.equal(torch_b(x), b(x))
print("ok")
'''


def test_both_frontends_nested_both_ways_finish():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": root})
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
