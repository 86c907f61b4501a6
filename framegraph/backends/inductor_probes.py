"""Inductor's probe of the CPU, remembered in `config.cache_dir` across processes.

Before its first CPU kernel in a process, inductor finds which vector instruction sets it may
use (AVX2, AVX-512, AVX-512 VNNI, AMX, AVX-512 BF16) by compiling a test program for each and
loading the result in a child Python process (`VecISA.check_build`). On a two-core Xeon that is
about 1.3 s of every new process: more than half of a warm start whose graphs inductor finds in
its own caches, and a restarted torch.compile pays it the same way.

Each answer depends only on what is asked (the instruction set's compiler flags and the test
program), the compiler (inductor's own fingerprint of it: its `-v` text, which inductor reads
in every process anyway), the torch build and interpreter that load the result, and the CPU.
So, with a cache directory set, each answer is kept there under a digest of all of those, and
a later process takes it instead of probing again. What is kept is a yes or a no, as JSON:
a file that is not one of those is ignored with a warning and the probe runs. Without a cache
directory, inductor probes as it always does.

This wraps one method of inductor's (`VecISA.check_build`), once per process, and only when the
inductor backend runs with a cache directory set; the wrapper asks inductor's own method
whenever it has no answer kept, and does exactly that when the cache is off. If this torch has
no such method, nothing is wrapped.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import warnings

from .. import config

_DIRECTORY = "inductor-probes"  # under config.cache_dir


def remember_probes() -> None:
    """Makes inductor's CPU probes read and write `config.cache_dir` (a no-op without one)."""
    if config.cache_dir is None:
        return
    try:
        from torch._inductor import cpu_vec_isa
    except ImportError:
        return
    probe = getattr(cpu_vec_isa.VecISA, "check_build", None)
    if probe is None or getattr(probe, "_framegraph_remembers", False):
        return
    cpu_vec_isa.VecISA.check_build = _remembering(probe)


def _remembering(probe):
    @functools.wraps(probe)
    def check_build(isa, code: str) -> bool:
        directory = config.cache_dir
        path = _path(directory, isa, code) if directory is not None else None
        if path is None:
            return probe(isa, code)
        kept = _read(path)
        if kept is not None:
            return kept
        answer = probe(isa, code)
        _write(path, answer, str(isa))
        return answer
    check_build._framegraph_remembers = True
    return check_build


def _path(directory: str, isa, code: str) -> str | None:
    """Where the answer for `isa` and `code` is kept, or None when what it depends on cannot be
    read (then inductor probes)."""
    try:
        import torch
        from torch._inductor.cpu_vec_isa import _get_isa_dry_compile_fingerprint

        fingerprint = _get_isa_dry_compile_fingerprint(isa.build_arch_flags())
        what = repr((type(isa).__qualname__, str(isa), fingerprint, code, _cpu(), sys.executable,
                     os.path.dirname(torch.__file__), os.environ.get("LD_LIBRARY_PATH", "")))
    except Exception:
        return None
    return os.path.join(directory, _DIRECTORY, hashlib.sha256(what.encode()).hexdigest() + ".json")


@functools.cache
def _cpu() -> str:
    """The CPU as the kernel describes it: its model and feature flags (what a test program's
    loading depends on), without the lines that change from moment to moment (its clock)."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        import platform

        return platform.processor() or platform.machine()
    keep = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags", "Features", "CPU implementer",
            "CPU part")
    return "\n".join(sorted({line for line in lines if line.split(":")[0].strip() in keep}))


def _read(path: str) -> bool | None:
    try:
        with open(path) as f:
            data = json.load(f)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as error:
        warnings.warn(f"framegraph ignores the kept inductor probe {path}: {error}", RuntimeWarning, stacklevel=3)
        return None
    if not isinstance(data, dict) or not isinstance(data.get("supported"), bool):
        warnings.warn(f"framegraph ignores the kept inductor probe {path}: it is not one of its own",
                      RuntimeWarning, stacklevel=3)
        return None
    return data["supported"]


def _write(path: str, answer: bool, isa: str) -> None:
    """Written whole or not at all (a temporary file renamed into place), so that a process
    reading at the same time finds no half answer."""
    import tempfile

    temporary = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump({"isa": isa, "supported": answer}, f)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        warnings.warn(f"framegraph could not keep inductor's probe of {isa} in {path}: {error}", RuntimeWarning,
                      stacklevel=3)
