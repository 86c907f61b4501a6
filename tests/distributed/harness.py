"""Runs a function in 2 gloo processes on localhost and reports the first failure.

`run(worker, *args)` spawns the processes with torch.multiprocessing, each calling
`worker(rank, world_size, *args)` after joining a process group through a TCPStore the parent
holds (on a free port), so no rank depends on another's lifetime. It returns
when both have finished; a process that raises ends the run with that process's traceback
(the other is terminated, not left waiting in a collective), and a run that outlives its
timeout is terminated and reported as such.
"""

from __future__ import annotations

import datetime
import os
import pickle
import sys
import time

import pytest
import torch

WORLD_SIZE = 2


def available() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_gloo_available()


requires_gloo = pytest.mark.skipif(not available(), reason="torch.distributed with gloo is unavailable")


def _entry(rank: int, worker, port: int, timeout: float, args: tuple) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)  # 2 processes on 2 cores: more threads only contend
    # The store is the parent's (run): were it rank 0's, rank 0 finishing first would take it
    # away from a rank still shutting down, which then aborts (seen under load).
    store = dist.TCPStore("127.0.0.1", port, WORLD_SIZE, is_master=False,
                          timeout=datetime.timedelta(seconds=timeout))
    # A collective the other process never joins raises after `timeout` instead of hanging.
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORLD_SIZE,
                            timeout=datetime.timedelta(seconds=timeout))
    worker(rank, WORLD_SIZE, *args)
    # Only after success: a failing process must record its error before its peer, waiting on
    # it in a collective, sees the connection close and fails too.
    dist.destroy_process_group()
    # Then leave without the interpreter's teardown: torch's C++ objects destroyed there abort
    # the process now and then ("terminate called without an active exception"), after both
    # ranks have finished and destroyed their group (seen on 3.11 and 3.12, about one run of
    # this directory in five). The worker's outcome is decided by then.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run(worker, *args, timeout: float = 90.0) -> None:
    """Runs `worker(rank, world_size, *args)` in each process; `worker` must be importable
    by name (a module-level function), as the processes are spawned."""
    import torch.distributed as dist
    import torch.multiprocessing as mp

    store = dist.TCPStore("127.0.0.1", 0, WORLD_SIZE, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=timeout))  # outlives every process
    context = mp.start_processes(_entry, args=(worker, store.port, timeout, args), nprocs=WORLD_SIZE,
                                 join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    # join() raises ProcessRaisedException (with the child's traceback) or ProcessExitedException
    # when one process fails, after terminating the others.
    try:
        _join(context, deadline, worker, timeout)
    except mp.ProcessRaisedException as error:
        # The process that failed first may not be the one join() reports: its peer, waiting in
        # a collective, fails too once it is gone. Every traceback is shown.
        raise mp.ProcessRaisedException(_every_error(context) or str(error), error.error_index,
                                        error.error_pid) from None


def _every_error(context) -> str:
    texts = []
    for rank, path in enumerate(context.error_files):
        if os.path.exists(path) and os.path.getsize(path):
            with open(path, "rb") as file:
                texts.append(f"\n\n-- Process {rank} terminated with the following error:\n{pickle.load(file)}")
    return "".join(texts)


def _join(context, deadline: float, worker, timeout: float) -> None:
    while not context.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
            for process in context.processes:
                process.join(5)
                if process.is_alive():
                    process.kill()
            raise TimeoutError(f"{getattr(worker, '__qualname__', worker)} did not finish in {timeout:.0f} s "
                               f"on {WORLD_SIZE} processes; they were terminated")
