"""The 2-process harness itself: a failure in one process ends the run with that process's
error, and a hung run ends at its timeout; neither leaves a process behind."""

from __future__ import annotations

import time

import pytest
import torch

from . import harness

pytestmark = harness.requires_gloo


def _raise_mid_step(rank, world_size):
    t = torch.ones(2)
    torch.distributed.all_reduce(t)
    if rank == 1:
        raise ValueError("rank 1 failed in step 1")
    torch.distributed.all_reduce(t)  # rank 0 waits here for a peer that is gone


def test_one_process_raising_ends_the_run():
    from torch.multiprocessing import ProcessRaisedException

    start = time.monotonic()
    with pytest.raises(ProcessRaisedException, match="rank 1 failed in step 1"):
        harness.run(_raise_mid_step, timeout=60)
    assert time.monotonic() - start < 30


def _hang(rank, world_size):
    time.sleep(3600)


def test_a_hung_run_ends_at_its_timeout():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish in 8 s"):
        harness.run(_hang, timeout=8)
    assert time.monotonic() - start < 20
