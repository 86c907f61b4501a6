"""`python -m framegraph run|explain`: unmodified programs written for torch.compile, run in a
subprocess first as they are (torch.compile) and then with framegraph, with equal losses;
explain's summary shows framegraph's graphs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "cli")


def _python(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)


def _losses(done: subprocess.CompletedProcess) -> list[float]:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _summary(done: subprocess.CompletedProcess) -> dict[str, int]:
    found = {}
    for line in done.stderr.splitlines():
        for key in ("Graph Count", "Graph Break Count"):
            if line.startswith(key + ": "):
                found[key] = int(line.split(": ")[1])
    return found


def test_a_training_script_runs_as_under_torch_compile():
    """The script compiles a module with `model.compile()`, a loss with `@torch.compile`, sets
    torch._dynamo.config and marks a size dynamic: framegraph's losses are torch.compile's."""
    script = os.path.join(HERE, "train_script.py")
    expected = _losses(_python(script, "6"))
    assert _losses(_python("-m", "framegraph", "run", script, "6")) == expected
    explained = _python("-m", "framegraph", "explain", script, "6")
    assert _losses(explained) == expected
    summary = _summary(explained)
    assert summary["Graph Count"] >= 2 and summary["Graph Break Count"] == 0, explained.stderr[-2000:]
    as_module = _python("-m", "framegraph", "run", "-m", "tests.cli.train_script", "4")
    assert _losses(as_module) == expected[:4]


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("transformers", "accelerate")),
                    reason="transformers' Trainer needs the `models` extra (transformers, accelerate)")
def test_trainer_with_torch_compile_runs_as_under_torch_compile():
    script = os.path.join(HERE, "trainer_script.py")
    expected = _losses(_python(script))
    explained = _python("-m", "framegraph", "explain", script)
    assert _losses(explained) == expected
    assert _summary(explained) == {"Graph Count": 1, "Graph Break Count": 0}, explained.stderr[-2000:]


def test_bad_targets_and_failing_programs_say_what_happened(tmp_path):
    missing = _python("-m", "framegraph", "run", str(tmp_path / "nowhere.py"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    failing = tmp_path / "failing.py"
    failing.write_text("import torch\n"
                       "f = torch.compile(lambda x: x + 1, backend='eager')\n"
                       "f(torch.ones(1))\n"
                       "raise ValueError('the program\\'s own error')\n")
    done = _python("-m", "framegraph", "run", str(failing))
    assert done.returncode != 0
    assert "ValueError: the program's own error" in done.stderr
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(3)\n")
    assert _python("-m", "framegraph", "run", str(exits)).returncode == 3
