"""framegraph._C links only against symbols the running libpython exports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

from framegraph import _C


def _defined_symbols(path: str) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"nm -D failed on {path}: {out.stderr.strip()}")
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def _python_exports() -> tuple[str, set[str]]:
    """The shared libpython if the interpreter uses one, else the executable."""
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir = sysconfig.get_config_var("LIBDIR") or ""
        ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
        instsoname = sysconfig.get_config_var("INSTSONAME") or ""
        for name in (instsoname, ldlib):
            path = os.path.join(libdir, name)
            if name and os.path.exists(path):
                return path, _defined_symbols(os.path.realpath(path))
        pytest.skip(f"shared libpython not found in {libdir!r}")
    return sys.executable, _defined_symbols(os.path.realpath(sys.executable))


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) is not installed")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF symbol check")
def test_only_exported_cpython_symbols_are_used():
    out = subprocess.run(["nm", "-u", _C.__file__], capture_output=True, text=True, check=True)
    undefined = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    lib, exported = _python_exports()
    python_syms = {s for s in undefined if re.match(r"_?Py|_Py", s)}
    missing = sorted(s for s in python_syms if s not in exported)
    assert not missing, f"not exported by {lib}: {missing}"
    # Everything else must come from the C library (versioned) or be a weak hook.
    other = sorted(
        s for s in undefined - python_syms
        if "@" not in s and s not in {"__gmon_start__", "_ITM_deregisterTMCloneTable",
                                      "_ITM_registerTMCloneTable", "__cxa_finalize"}
    )
    assert not other, f"unexpected undefined symbols: {other}"
    assert python_syms, "expected some Py* symbols"
