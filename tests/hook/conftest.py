"""Fixtures for the frame-hook tests. No torch: these run on 3.11, 3.12 and 3.13."""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from framegraph import _C  # noqa: E402
from hookutil import Replacer  # noqa: E402


@pytest.fixture(autouse=True)
def _clean_hook_state() -> Iterator[None]:
    assert _C.set_eval_frame(None) is None, "a previous test left a callback installed"
    yield
    leftover = _C.set_eval_frame(None)
    _C.set_guard_error_hook(None)
    assert leftover is None, "the test left a callback installed"


@pytest.fixture
def replacer() -> Iterator[Replacer]:
    r = Replacer()
    yield r
    r.reset()
