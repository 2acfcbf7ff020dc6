"""Compiled cubins kept on disk, so that a config compiled once is loaded, never rebuilt.

An entry is keyed by everything that decides the binary: the SHA-256 of the kernel's source
text, the nvcc options (the config's macros, the dtype macro, the flags), the target arch,
the nvcc release, and the options nvcc reads from its environment (:data:`NVCC_ENV`:
``NVCC_PREPEND_FLAGS`` and ``NVCC_APPEND_FLAGS``, where set), so that a cubin built with, say,
``NVCC_APPEND_FLAGS=-G`` is never loaded by a build without it. It lives in the platformdirs user cache folder (``AUTOTUNE_CACHE_DIR``
overrides it) as one file: a JSON header line (the cubin's SHA-256 and what ptxas reported)
and the cubin's bytes. Writes go to a temporary file in the same folder, renamed into place
(atomic: concurrent compiles of one config never see half a file). An entry that does not
match its digest (a torn disk, an edit) is treated as missing and rebuilt.

:func:`building` holds an advisory lock (``flock``) on the entry's ``.lock`` file while one
build runs, so that another process or thread about to build the same entry (a measuring
child meeting a config the pipeline is compiling) waits for it and loads its result instead
of running nvcc a second time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from autotune import settings
from autotune.base.files import lock_file

__all__ = ["CACHE_ENV", "NVCC_ENV", "building", "cache_dir", "entry_key", "nvcc_environment", "load", "store"]

CACHE_ENV = "AUTOTUNE_CACHE_DIR"
"""Environment variable naming the cache folder (default: platformdirs' user cache dir)."""
NVCC_ENV = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
"""The environment variables whose options nvcc adds to every command line it is given (before
and after ours): set, they change the binary, so they are part of an entry's key."""


def nvcc_environment() -> tuple[str, ...]:
    """``NAME=value`` of each variable of :data:`NVCC_ENV` set to more than blanks, in that order."""
    values = (os.environ.get("NVCC_PREPEND_FLAGS", ""), os.environ.get("NVCC_APPEND_FLAGS", ""))  # NVCC_ENV's order
    return tuple(f"{name}={value}" for name, value in zip(NVCC_ENV, values) if value.strip())


def cache_dir() -> Path:
    """The folder of cached cubins: ``$AUTOTUNE_CACHE_DIR`` or ``<user cache dir>/autotune/cubins``."""
    if folder := settings.CACHE_DIR.get():
        return Path(folder)
    import platformdirs

    return Path(platformdirs.user_cache_dir("autotune")) / "cubins"


def entry_key(source: str, options: Sequence[str], arch: str, nvcc_version: str,
              environment: Sequence[str] = ()) -> str:
    """The hex SHA-256 naming the entry of one build (each input in its own length-prefixed field);
    ``environment``: :func:`nvcc_environment` (none set: the key of a build without it, as
    before it was a field)."""
    fields = [hashlib.sha256(source.encode()).hexdigest(), *options, f"arch={arch}", f"nvcc={nvcc_version}"]
    if environment:
        fields.append({"environment": list(environment)})
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


def _path(key: str, root: Path | None) -> Path:
    return (root or cache_dir()) / key[:2] / f"{key}.cubin"


def load(key: str, root: Path | None = None) -> tuple[bytes, dict[str, Any]] | None:
    """The cached ``(cubin, info)`` of ``key``, or ``None`` when it is missing, unreadable or
    does not match its digest (then it is rebuilt and overwritten)."""
    try:
        header, _, cubin = _path(key, root).read_bytes().partition(b"\n")
        meta = json.loads(header)
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(cubin).hexdigest():
        return None
    return cubin, dict(meta.get("info") or {})


def store(key: str, cubin: bytes, info: Mapping[str, Any], root: Path | None = None) -> Path | None:
    """Keep ``cubin`` and its JSON-able ``info`` under ``key``, atomically (temporary file, then
    rename). A cache that cannot be written is skipped (``None``): it only saves time."""
    path = _path(key, root)
    header = json.dumps({"sha256": hashlib.sha256(cubin).hexdigest(), "info": dict(info)}).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cubin")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header + b"\n" + cubin)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return None
    return path


@contextlib.contextmanager
def building(key: str, root: Path | None = None) -> Iterator[None]:
    """Hold ``key``'s build lock for the block: a second holder (another process or thread)
    waits until the first one's block ended. Where the lock cannot be taken (a cache that
    cannot be written, no ``fcntl``) the block runs unlocked: the cache only saves time."""
    with lock_file(_path(key, root).with_suffix(".lock")):
        yield
