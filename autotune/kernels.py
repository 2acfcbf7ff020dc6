"""The kernel catalog: each kernel's CUDA source, entry point, tunable macros and launch shape.

Kernels follow the classic CUDA transpose study (M. Harris, "An Efficient Matrix Transpose
in CUDA C/C++", NVIDIA developer blog): a block of TILE_DIM x BLOCK_ROWS threads moves a
TILE_DIM x TILE_DIM tile. ``copy`` is the bandwidth upper bound, ``naive`` writes strided,
``smem`` stages the tile in shared memory, ``smem_pad`` pads the tile by IPAD columns to
avoid shared-memory bank conflicts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .config import Config
from .dtypes import DType
from .errors import InvalidInputError
from .resources import data_dir

__all__ = ["Kernel", "KERNELS", "get_kernel", "source_text", "source_hash"]

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Kernel:
    """One entry of the catalog.

    Attributes:
        name: catalog name used on the command line (``smem_pad``).
        file: source file in ``kernels/``.
        function: ``extern "C"`` entry point in that file.
        op: ``"transpose"`` (output is cols x rows) or ``"copy"`` (output is rows x cols).
        defaults: default value of each tunable macro (the classic 32x8 tile).
        fixed: macros this kernel pins (e.g. ``smem`` has ``IPAD=0``); not tunable.
        summary: one line for tables and help.
    """

    name: str
    file: str
    function: str
    op: str
    defaults: Mapping[str, int]
    fixed: Mapping[str, int] = field(default_factory=dict)
    summary: str = ""

    @property
    def tunables(self) -> tuple[str, ...]:
        """Names of the tunable macros, sorted."""
        return tuple(sorted(self.defaults))

    def default_config(self) -> Config:
        """The kernel's built-in default config (used when nothing is tuned)."""
        return Config.of(self.name, dict(self.defaults))

    def macros(self, config: Config, dtype: DType) -> dict[str, str]:
        """All ``-D`` macros of ``config`` for ``dtype``: tunables, fixed ones and ELEM_T.

        Raises:
            InvalidInputError: the config is for another kernel, or its macros are not
                exactly this kernel's tunables with positive int values.
        """
        self.check(config)
        values = {**config.as_dict(), **self.fixed}
        return {**{k: str(v) for k, v in sorted(values.items())}, "ELEM_T": dtype.ctype}

    def check(self, config: Config) -> None:
        """Raise :class:`InvalidInputError` unless ``config`` fits this kernel."""
        if config.kernel != self.name:
            raise InvalidInputError(f"config {config} is not for kernel {self.name!r}")
        names = {k for k, _ in config.macros}
        if names != set(self.defaults):
            raise InvalidInputError(
                f"config {config} sets macros {sorted(names)}; {self.name} takes {list(self.tunables)}"
            )
        for name, value in config.macros:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInputError(f"macro {name}={value!r} is not a non-negative integer")

    def output_shape(self, rows: int, cols: int) -> tuple[int, int]:
        """Shape of the output for a ``rows x cols`` input."""
        return (cols, rows) if self.op == "transpose" else (rows, cols)

    def reference(self, a: np.ndarray) -> np.ndarray:
        """What the kernel must produce for input ``a`` (2-D), computed by NumPy."""
        return np.ascontiguousarray(a.T if self.op == "transpose" else a)

    def block(self, config: Config) -> tuple[int, int, int]:
        """Threads per block ``(TILE_DIM, BLOCK_ROWS, 1)``."""
        return (config["TILE_DIM"], config["BLOCK_ROWS"], 1)

    def grid(self, config: Config, rows: int, cols: int) -> tuple[int, int]:
        """Blocks: one per tile, numbered row-major over a 1-D grid."""
        tile = config["TILE_DIM"]
        return (-(-rows // tile) * -(-cols // tile), 1)


def _tiled(name: str, file: str, function: str, op: str, summary: str, **extra: int) -> Kernel:
    return Kernel(name, file, function, op, MappingProxyType({"TILE_DIM": 32, "BLOCK_ROWS": 8, **extra}),
                  summary=summary)


KERNELS: Mapping[str, Kernel] = MappingProxyType({
    k.name: k for k in (
        _tiled("copy", "copy.cu", "copy_tiled", "copy", "coalesced tiled copy: the upper bound"),
        _tiled("naive", "naive.cu", "transpose_naive", "transpose", "row reads, strided column writes"),
        Kernel("smem", "smem.cu", "transpose_smem", "transpose",
               MappingProxyType({"TILE_DIM": 32, "BLOCK_ROWS": 8}), MappingProxyType({"IPAD": 0}),
               "shared-memory tile, no padding (bank conflicts)"),
        _tiled("smem_pad", "smem.cu", "transpose_smem", "transpose",
               "shared-memory tile padded by IPAD columns", IPAD=1),
    )
})


def get_kernel(name: str) -> Kernel:
    """The catalog entry called ``name``.

    Raises:
        InvalidInputError: unknown name (the message lists the catalog and close matches).
    """
    try:
        return KERNELS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, KERNELS, n=2)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise InvalidInputError(f"unknown kernel {name!r}{hint}; allowed: {', '.join(KERNELS)}") from None


@cache
def source_text(file: str) -> str:
    """Source of ``kernels/<file>`` with its local ``#include "..."`` files inlined (once each).

    This is the text compiled and hashed, so a change in a header changes the hash.
    """
    root = data_dir("kernels")
    seen: set[str] = set()

    def inline(path: Path) -> str:
        def repl(m: re.Match[str]) -> str:
            name = m.group(1)
            if name in seen:
                return ""
            seen.add(name)
            return inline(root / name)

        return _PRAGMA_ONCE.sub("", _INCLUDE.sub(repl, path.read_text()))

    return inline(root / file)


def source_hash(kernel: Kernel) -> str:
    """SHA-256 (hex) of the kernel's source after includes."""
    return hashlib.sha256(source_text(kernel.file).encode()).hexdigest()
