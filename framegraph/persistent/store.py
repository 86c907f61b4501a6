"""The cache directory: one file per code object and setting, each a list of entries.

A file is `MAGIC`, the SHA-256 of the body, then the body (a pickled list). A file whose magic
or digest does not match (truncated, edited, written by another format) is ignored with a
warning and overwritten by the next save; it is never unpickled. Writes go to a temporary
file renamed into place, so a reader never sees half a file, and two processes saving at
once lose one entry at worst.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
import warnings
from typing import Any

MAGIC = b"framegraph-cache-1\n"
FORMAT = 4  # of the entries; part of every key, so a change of what they hold misses old files
MAX_ENTRIES = 64  # per file: what one code object may keep for all the models that run it


def file_for(directory: str, key: str) -> str:
    return os.path.join(directory, key[:2], f"{key}.fgc")


def read(path: str, warn: bool = True) -> list[Any]:
    """The entries saved at `path`: [] when there is no file or it cannot be trusted (said in
    a warning, unless `warn` is False: a save that replaces the file)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    except OSError as error:
        if warn:
            warnings.warn(f"framegraph ignores the cache file {path}: {error}", RuntimeWarning, stacklevel=2)
        return []
    digest = data[len(MAGIC):len(MAGIC) + 32]
    body = data[len(MAGIC) + 32:]
    if not data.startswith(MAGIC) or len(digest) != 32 or hashlib.sha256(body).digest() != digest:
        if warn:
            warnings.warn(f"framegraph ignores the cache file {path}: it is damaged or not one of its own "
                          "(it will be replaced)", RuntimeWarning, stacklevel=2)
        return []
    try:
        entries = pickle.loads(body)
    except Exception as error:
        if warn:
            warnings.warn(f"framegraph ignores the cache file {path}: {type(error).__name__}: {error}",
                          RuntimeWarning, stacklevel=2)
        return []
    return entries if isinstance(entries, list) else []


def write(path: str, entries: list[Any]) -> None:
    body = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(body).digest() + body)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def versions() -> tuple:
    """What a saved translation assumes about the process besides its guards."""
    import torch

    import framegraph

    return (FORMAT, sys.version, sys.implementation.cache_tag, torch.__version__, framegraph.__version__)
