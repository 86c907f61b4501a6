"""Inductor's CPU probes kept in the cache directory (framegraph/backends/inductor_probes.py).

The answers are inductor's own: the first process asks inductor and keeps each answer; a later
one takes the kept answer instead of compiling and loading a test program again. A kept answer
that cannot be trusted is ignored with a warning, and without a cache directory nothing is kept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import framegraph
from framegraph.backends import inductor_probes

cpu_vec_isa = pytest.importorskip("torch._inductor.cpu_vec_isa")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Probe:
    """Stands for inductor's `check_build`: counts what it is asked and answers `answer`."""

    def __init__(self, answer: bool = True) -> None:
        self.answer, self.asked = answer, []

    def __call__(self, isa, code: str) -> bool:
        self.asked.append((str(isa), code))
        return self.answer


def _kept(cache) -> list[dict]:
    directory = os.path.join(cache, "inductor-probes")
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    return [json.load(open(os.path.join(directory, name))) for name in names]


@pytest.mark.parametrize("answer", [True, False])
def test_an_answer_is_kept_and_taken_instead_of_probing_again(tmp_path, answer):
    probe = Probe(answer)
    check_build = inductor_probes._remembering(probe)
    isa = cpu_vec_isa.VecAVX2()
    with framegraph.config.patch(cache_dir=str(tmp_path)):
        assert check_build(isa, "int main() {}") is answer
        assert check_build(isa, "int main() {}") is answer
        assert len(probe.asked) == 1
        assert _kept(tmp_path) == [{"isa": "avx2", "supported": answer}]
        # Another program, or another instruction set, is another question.
        check_build(isa, "int main() { return 0; }")
        check_build(cpu_vec_isa.VecAVX512(), "int main() {}")
    assert len(probe.asked) == 3
    assert len(_kept(tmp_path)) == 3


def test_without_a_cache_directory_inductor_probes_every_time_and_nothing_is_kept(tmp_path):
    probe = Probe()
    check_build = inductor_probes._remembering(probe)
    with framegraph.config.patch(cache_dir=None):
        check_build(cpu_vec_isa.VecAVX2(), "x")
        check_build(cpu_vec_isa.VecAVX2(), "x")
    assert len(probe.asked) == 2


@pytest.mark.parametrize("content", ["{not json", '{"supported": "yes"}', "[true]", ""])
def test_a_kept_answer_that_cannot_be_trusted_is_ignored_with_a_warning_and_replaced(tmp_path, content):
    probe = Probe(True)
    check_build = inductor_probes._remembering(probe)
    isa = cpu_vec_isa.VecAVX2()
    with framegraph.config.patch(cache_dir=str(tmp_path)):
        check_build(isa, "x")
        path = inductor_probes._path(str(tmp_path), isa, "x")
        with open(path, "w") as f:
            f.write(content)
        with pytest.warns(RuntimeWarning, match="ignores the kept inductor probe"):
            assert check_build(isa, "x") is True
        assert len(probe.asked) == 2
        assert json.load(open(path)) == {"isa": "avx2", "supported": True}


def test_an_answer_that_cannot_be_kept_is_a_warning_and_the_answer_stands(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the directory would go
    check_build = inductor_probes._remembering(Probe(False))
    with framegraph.config.patch(cache_dir=str(blocked)), \
            pytest.warns(RuntimeWarning, match="could not keep inductor's probe"):
        assert check_build(cpu_vec_isa.VecAVX2(), "x") is False


def test_the_key_is_what_the_answer_depends_on(tmp_path, monkeypatch):
    isa = cpu_vec_isa.VecAVX2()
    first = inductor_probes._path(str(tmp_path), isa, "x")
    assert inductor_probes._path(str(tmp_path), isa, "x") == first
    assert inductor_probes._path(str(tmp_path), isa, "y") != first
    assert inductor_probes._path(str(tmp_path), cpu_vec_isa.VecAVX512(), "x") != first
    monkeypatch.setattr(cpu_vec_isa, "_get_isa_dry_compile_fingerprint", lambda flags: f"another compiler={flags}")
    assert inductor_probes._path(str(tmp_path), isa, "x") != first  # the compiler, as inductor tells it apart
    monkeypatch.setattr(inductor_probes, "_cpu", lambda: "another CPU")
    monkeypatch.setattr(cpu_vec_isa, "_get_isa_dry_compile_fingerprint", lambda flags: "x")
    assert inductor_probes._path(str(tmp_path), isa, "x") != inductor_probes._path(str(tmp_path), isa, "y")


def test_remember_probes_wraps_inductor_once_and_only_with_a_cache_directory(tmp_path, monkeypatch):
    original = Probe()
    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", original)
    with framegraph.config.patch(cache_dir=None):
        inductor_probes.remember_probes()
    assert cpu_vec_isa.VecISA.check_build is original
    with framegraph.config.patch(cache_dir=str(tmp_path)):
        inductor_probes.remember_probes()
        wrapped = cpu_vec_isa.VecISA.check_build
        inductor_probes.remember_probes()
    assert wrapped is not original and cpu_vec_isa.VecISA.check_build is wrapped


CHILD = """
import json, sys, torch, framegraph
from torch._inductor import cpu_vec_isa

if sys.argv[1] == "warm":
    def probe(isa, code):  # the warm process must not probe at all
        raise AssertionError(f"inductor probed {isa} again")
    cpu_vec_isa.VecISA.check_build = probe

def f(x):
    return torch.sin(x) * 2 + x.cos()

x = torch.randn(8, 8)
torch.testing.assert_close(framegraph.compile(f, backend="inductor")(x), f(x))
print(json.dumps([str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]))
"""


def test_a_new_process_takes_every_answer_and_picks_what_the_first_picked(tmp_path):
    """End to end, through the inductor backend: the first process probes (as inductor does)
    and keeps the answers; the second cannot probe, and compiles with the same instruction
    sets."""
    env = {**os.environ, "FRAMEGRAPH_CACHE_DIR": str(tmp_path / "fg"), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "ind")}
    chosen = []
    for run in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), run], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        chosen.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert chosen[0] == chosen[1]
    assert _kept(tmp_path / "fg"), "the first process kept no answer"
