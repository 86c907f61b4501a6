"""Markdown for bench/RESULTS.md: the machine, number formatting, tables, and history.

A run is prepended under a dated `## Run ...` heading; everything already in the file (earlier
runs and the hand-written hook-overhead section) stays below it, so regressions show.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import sys

import torch

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
TITLE = "# Benchmark results"


def machine() -> dict[str, str]:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": f"{cpu}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "torch": torch.__version__,
        "command": "python -m bench " + " ".join(sys.argv[1:]),
    }


def ms(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "n/a"
    return f"{seconds * 1e3:.1f}" if seconds >= 0.01 else f"{seconds * 1e3:.2f}"


def us(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "n/a"
    return f"{seconds * 1e6:.1f}" if abs(seconds) < 1e-4 else f"{seconds * 1e6:.0f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |"
              for row in rows]
    return "\n".join(lines)


def header(info: dict[str, str], elapsed: float) -> str:
    return "\n".join([
        f"## Run {info['date']}, Python {info['python'].split()[-1]} (`{info['command'].strip()}`)",
        "",
        f"Command, from the repository root: `{info['command'].strip()}` "
        f"({elapsed / 60:.1f} min wall). Machine: {info['cpu']}; {info['os']}. "
        f"Python {info['python']}, torch {info['torch']}.",
    ])


def prepend(section: str) -> None:
    """Writes `section` above every earlier section of RESULTS.md."""
    old = ""
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            old = f.read()
    if old.startswith(TITLE):
        old = old[len(TITLE):].lstrip("\n")
    with open(RESULTS, "w") as f:
        f.write(f"{TITLE}\n\n{section.rstrip()}\n\n{old}")
