"""The HTML report (framegraph.reports): what it shows equals what framegraph did (counters and
explain), every guard carries the user line that made it, and the page works in a real headless
browser (Chromium): it loads with no console error, its sections expand, and a screenshot shows
the summary."""

from __future__ import annotations

import collections
import importlib.util
import os
import re
import shutil
import warnings

import pytest
import torch

import framegraph
from framegraph.counters import counters
from framegraph.reports import path_in


def seed_demo(x, n):
    y = torch.sin(x) * n
    print("a graph break")
    return y.cos() + x.shape[0]


SEED_CALLS = [((3,), 2), ((3,), 2), ((4,), 2), ((5,), 3)]  # a hit, a recompile for size, one for n


def _run_seed(directory):
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(seed_demo, backend="eager")
    with framegraph.report(str(directory)) as record:
        for shape, n in SEED_CALLS:
            torch.testing.assert_close(compiled(torch.ones(shape), n), seed_demo(torch.ones(shape), n))
    return record


def _page(directory) -> str:
    with open(path_in(str(directory)), encoding="utf-8") as file:
        return file.read()


def test_the_seed_demo_report_shows_what_framegraph_did(tmp_path, capsys):
    record = _run_seed(tmp_path)
    graphs = counters["stats"]["unique_graphs"]
    breaks = sum(counters["graph_break"].values())
    recompiles = sum(counters["recompiles"].values())
    assert sum(len(f.graphs) for f in record.frames) == graphs == 5
    assert len(record.breaks) == breaks == 3
    assert sum(1 for f in record.frames if f.recompile_reason) == recompiles == 3
    assert all(line for frame in record.frames for _, line in frame.guards), \
        [(g, line) for frame in record.frames for g, line in frame.guards if not line]
    page = _page(tmp_path)
    assert f"Graph breaks ({breaks})" in page and f"Compiled frames ({len(record.frames)})" in page
    assert "the builtin `print` was called" in page
    assert "check_tensor(L[&#x27;x&#x27;]" in page and "Recompiled because this guard failed" in page
    # each recompile names the failed guard with the old value and the new
    assert "size=[3], stride=[1]) (now: Tensor float32 cpu size=[4]" in page
    assert "L[&#x27;n&#x27;] == 2 (now: 3)" in page
    assert "MODIFIED" in page and "__compiled_fn_" in page  # the replacement bytecode, read from the cache
    # ... and as Python, with the resume function it calls (tests/report/test_decompile.py)
    assert "def seed_demo(x, n):\n    graph_out_0 = __compiled_fn_" in page.replace("&#x27;", "'")
    assert "resume function (resume_in_seed_demo, from line" in page
    assert "not rendered as Python" not in page
    assert not re.search(r"""(src|href)=["']https?:""", page), "the page must not load anything"
    # explain of one call: the same graphs and breaks as the report's first two compiles
    framegraph.reset()
    explained = framegraph.explain(seed_demo)(torch.ones(3), 2)
    assert explained.graph_count == sum(len(f.graphs) for f in record.frames[:2])
    assert explained.graph_break_count == sum(1 for b in record.breaks if b.compile_id.startswith("[0/0"))
    assert [b.gb_type for b in explained.break_reasons] == [record.breaks[0].gb_type]


@pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None, reason="the second zoo's torch-geometric models need the `models` extra")
def test_a_zoo_model_with_breaks(tmp_path):
    from tests.models.zoo2 import build, fresh

    warnings.simplefilter("ignore")
    model, args = build("pyg_gcn")
    framegraph.reset()
    counters.clear()
    compiled = framegraph.compile(model, backend="eager")
    with torch.no_grad(), framegraph.report(str(tmp_path)) as record:
        compiled(*fresh(args))
    assert len(record.breaks) == sum(counters["graph_break"].values()) > 0
    by_type = collections.Counter(b.gb_type for b in record.breaks)
    assert by_type == collections.Counter(k.split(": ")[0] for k, n in counters["graph_break"].items()
                                          for _ in range(n))
    assert sum(len(f.graphs) for f in record.frames) == counters["stats"]["unique_graphs"]
    assert all(line for frame in record.frames for _, line in frame.guards)
    page = _page(tmp_path)
    for gb_type, count in by_type.items():
        assert f"<td>{gb_type}</td><td>{count}</td>" in page.replace("&#x27;", "'")


def test_framegraph_report_rejects_what_is_not_a_directory():
    with pytest.raises(TypeError, match="expects a directory path"):
        with framegraph.report(3):
            pass


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (Debian: apt-get install chromium)")
def test_the_page_works_in_a_headless_browser(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright (pip) drives the browser")
    _run_seed(tmp_path)
    errors: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=_browser(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto("file://" + os.path.abspath(path_in(str(tmp_path))))
            assert page.eval_on_selector_all("details", "all => all.filter(d => d.open).length") == 0
            total = page.eval_on_selector_all("details", "all => all.length")
            page.click("#expand")
            assert page.eval_on_selector_all("details", "all => all.filter(d => d.open).length") == total > 5
            page.click("#collapse")
            assert page.eval_on_selector_all("details", "all => all.filter(d => d.open).length") == 0
            shot = tmp_path / "summary.png"
            page.locator("#summary").screenshot(path=str(shot))
            assert shot.stat().st_size > 5000
            assert "graph breaks" in page.inner_text("#summary")
        finally:
            browser.close()
    assert errors == []


def test_the_environment_variable_and_the_command_line_write_a_report(tmp_path):
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "program.py"
    script.write_text("import torch, framegraph\n"
                      "def f(x):\n"
                      "    x = x + 1\n"
                      "    print('break')\n"
                      "    return x * 2\n"
                      "framegraph.compile(f, backend='eager')(torch.ones(2))\n")
    env = dict(os.environ, PYTHONPATH=root, FRAMEGRAPH_REPORT=str(tmp_path / "env"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    pages = os.listdir(tmp_path / "env")
    assert len(pages) == 1 and "report written to" in done.stderr
    page = (tmp_path / "env" / pages[0]).read_text()
    assert "Graph breaks (1)" in page and "Compiled frames (2)" in page
    torch_script = tmp_path / "torch_program.py"
    torch_script.write_text("import torch\n"
                            "f = torch.compile(lambda x: torch.relu(x) + 1, backend='eager')\n"
                            "print(f(torch.ones(2)).sum().item())\n")
    env.pop("FRAMEGRAPH_REPORT")
    done = subprocess.run([sys.executable, "-m", "framegraph", "report", "--out", str(tmp_path / "cli"),
                           str(torch_script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "4.0", done.stderr
    (page_name,) = os.listdir(tmp_path / "cli")
    page = (tmp_path / "cli" / page_name).read_text()
    assert "Compiled frames (1)" in page and "relu" in page


def test_a_report_that_cannot_be_written_warns_and_keeps_the_program_s_exception(tmp_path):
    blocked = tmp_path / "a_file"
    blocked.write_text("not a directory")
    compiled = framegraph.compile(lambda x: x + 1, backend="eager")
    with pytest.warns(RuntimeWarning, match="could not write the report"):
        with pytest.raises(ZeroDivisionError):
            with framegraph.report(str(blocked / "inside")):
                compiled(torch.ones(1))
                1 / 0
