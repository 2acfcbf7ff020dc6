"""The kernel catalog: the kernel files shipped in ``kernels/``, and users' kernel files.

The catalog follows the classic CUDA transpose studies (M. Harris, "An Efficient Matrix
Transpose in CUDA C/C++"; the copy/naive/unroll/diagonal kernels of "Professional CUDA C
Programming") and the tiled matrix products; each is a kernel file (``kernels/<name>.toml``)
read by the same loader as a user's (:mod:`autotune.kernel.loader`). Nothing here knows a
kernel by name: adding one is adding a file.

:func:`resolve_kernel` takes a catalog name or a path to a kernel file. A user's kernel is
registered by name in the process once loaded, so its configs (which name their kernel)
find it again; its name may not be a catalog kernel's, nor another loaded file's.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from autotune.errors import InvalidInputError, KernelFileError
from autotune.kernel.arguments import check_kernel_arg
from autotune.kernel.loader import load_kernel
from autotune.kernel.model import Kernel
from autotune.resources import data_dir

__all__ = ["KERNELS", "ALIASES", "get_kernel", "resolve_kernel", "is_kernel_path"]

ALIASES: Mapping[str, str] = {"copy": "copy_row", "naive": "naive_row"}
"""Former names still accepted by :func:`get_kernel` (not listed in :data:`KERNELS`)."""

_lock = threading.Lock()
_user: dict[str, Kernel] = {}
_files: dict[Path, Kernel] = {}
_singles: dict[str, Kernel] = {}  # catalog kernels read one by one before the whole catalog


class _Catalog(Mapping[str, Kernel]):
    """``kernels/*.toml`` by name, read on first use (``import autotune`` reads no file)."""

    _kernels: dict[str, Kernel] | None = None

    def _load(self) -> dict[str, Kernel]:
        if self._kernels is None:
            found = {}
            for file in sorted(data_dir("kernels").glob("*.toml")):
                kernel = _singles.get(file.stem) or load_kernel(file)  # the same object once read alone
                found[kernel.name] = kernel
            self._kernels = found
        return self._kernels

    def __getitem__(self, name: str) -> Kernel:
        if self._kernels is None:  # one kernel's file alone (a first call of the runtime reads one, not all)
            one = _singles.get(name)
            if one is None and name.isidentifier() and (data_dir("kernels") / f"{name}.toml").is_file():
                loaded = load_kernel(data_dir("kernels") / f"{name}.toml")
                if loaded.name == name:
                    with _lock:
                        one = _singles.setdefault(name, loaded)
            if one is not None:
                return one
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


KERNELS: Mapping[str, Kernel] = _Catalog()
"""The catalog: name -> `Kernel`, every ``kernels/*.toml``
(``autotune kernels`` lists them), each file read on first use."""


def get_kernel(name: str) -> Kernel:
    """The catalog kernel called ``name`` (or an :data:`ALIASES` name), or a user's kernel
    of that name loaded in this process.

    Raises:
        InvalidInputError: unknown name (the message lists the catalog and close matches).
    """
    name = ALIASES.get(name, name)
    if name in KERNELS:
        return KERNELS[name]
    with _lock:
        if name in _user:
            return _user[name]
    close = difflib.get_close_matches(name, KERNELS, n=2)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise InvalidInputError(f"unknown kernel {name!r}{hint}; allowed: {', '.join(KERNELS)}, "
                            "or a path to a kernel file (.toml)")


def is_kernel_path(text: str) -> bool:
    """Whether ``text`` names a kernel file rather than a catalog kernel."""
    return text.endswith(".toml") or "/" in text or "\\" in text


def resolve_kernel(kernel: str | Path | Kernel) -> Kernel:
    """A `Kernel` from a catalog name, a path to a kernel file, or a Kernel.

    Raises:
        InvalidInputError: unknown catalog name; not a name, path or Kernel.
        KernelFileError: the file is malformed, or its kernel's name is a catalog kernel's
            or another loaded file's.
    """
    if isinstance(kernel, Kernel):
        return _register(kernel) if kernel.name not in KERNELS or KERNELS[kernel.name] is not kernel else kernel
    check_kernel_arg(kernel)  # None, 42, b"x", "": refused by type before any path is tried
    if isinstance(kernel, Path) or is_kernel_path(kernel):
        path = Path(kernel).resolve()
        with _lock:
            if path in _files:
                return _files[path]
        if path.parent == data_dir("kernels").resolve():
            loaded = load_kernel(path)
            if loaded.name in KERNELS and KERNELS[loaded.name].path == path:
                return KERNELS[loaded.name]
        loaded = _register(load_kernel(path))
        with _lock:
            return _files.setdefault(path, loaded)
    return get_kernel(kernel)


def _register(kernel: Kernel) -> Kernel:
    if kernel.name in KERNELS or kernel.name in ALIASES:
        raise KernelFileError(f"kernel file {kernel.path}: name: {kernel.name!r} is a catalog kernel's name; "
                              "choose another")
    with _lock:
        known = _user.get(kernel.name)
        if known is not None and known is not kernel and (known.path != kernel.path or known.path is None):
            raise KernelFileError(f"kernel file {kernel.path}: name: {kernel.name!r} is already the name of "
                                  f"{known.path or 'another kernel'} in this process; choose another")
        _user[kernel.name] = kernel
    return kernel
