"""The kernel catalog: each kernel's CUDA source, entry point, tunable macros and launch shape.

Kernels follow the classic CUDA transpose studies (M. Harris, "An Efficient Matrix Transpose
in CUDA C/C++"; the copy/naive/unroll/diagonal kernels of "Professional CUDA C
Programming"). A block of ``TILE_DIM x BLOCK_ROWS`` threads moves ``UNROLL`` tiles of
``TILE_DIM x TILE_DIM`` elements (UNROLL is 1 unless tunable), laid side by side along the
direction ``threadIdx.x`` runs: along input rows (layout ``row``) or down input columns
(layout ``col``). Blocks are numbered over a 1-D grid, one per block tile, and take tiles in
row-major or diagonal order (:func:`tile_of_block`). Entries that differ only in macros
share a source file; a kernel's ``fixed`` macros pin what it is (e.g. ``naive_col`` is
``naive.cu`` with ``COLUMNWISE=1``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType

import numpy as np

from autotune.kernel.config import Config
from autotune.kernel.dtypes import DType
from autotune.errors import InvalidInputError
from autotune.resources import data_dir

__all__ = ["Kernel", "MatmulKernel", "KERNELS", "ALIASES", "get_kernel", "tile_of_block", "source_text", "source_hash"]

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*$", re.MULTILINE)


def tile_of_block(block: int, tiles_y: int, tiles_x: int, diagonal: bool, group: int = 0) -> tuple[int, int]:
    """(tile row, tile column) of block tile number ``block`` of a ``tiles_y x tiles_x`` grid.

    Mirrors ``tile_origin`` in ``kernels/common.cuh``: row-major order; the classic
    diagonal reordering generalised to rectangular grids (``y = b % tiles_y``,
    ``x = (b // tiles_y + y) % tiles_x``); or, with ``group`` G > 0, the grouped order of
    tiled matrix products (bands of G tile rows walked column by column). Each is a
    bijection for any grid.
    """
    if diagonal:
        y = block % tiles_y
        return y, (block // tiles_y + y) % tiles_x
    if group:
        first = block // (group * tiles_x) * group
        i, height = block - first * tiles_x, min(group, tiles_y - first)
        return first + i % height, i // height
    return block // tiles_x, block % tiles_x


@dataclass(frozen=True)
class Kernel:
    """One entry of the catalog.

    Attributes:
        name: catalog name used on the command line (``smem_pad``).
        file: source file in ``kernels/``.
        function: ``extern "C"`` entry point in that file.
        op: ``"transpose"`` (output is cols x rows) or ``"copy"`` (output is rows x cols).
        defaults: default value of each tunable macro (the classic 32x8 tile).
        fixed: macros this kernel pins (e.g. ``smem`` has ``IPAD=0``); not tunable. UNROLL
            and DIAGONAL are 1 and 0 unless tunable or fixed; COLUMNWISE=1 is layout ``col``.
        summary: one line for tables and help.
        shared: stages its tiles in static shared memory (``UNROLL`` tiles per block).
        dtypes: element types it supports (``None``: every one of :data:`autotune.kernel.dtypes.DTYPES`).
        vector_bytes: bytes each thread moves per global access (16 for the vectorized
            kernel: ``16 // itemsize`` elements; 0 for one element per access). A block then
            has ``TILE_DIM // (vector_bytes // itemsize)`` threads along a tile row.
        signature: PyCUDA ``prepare`` argument types of the entry point (``PPii``: out, in,
            rows, cols; the matrix products take ``PPPiii``: C, A, B, M, N, K).
    """

    name: str
    file: str
    function: str
    op: str
    defaults: Mapping[str, int]
    fixed: Mapping[str, int] = field(default_factory=dict)
    summary: str = ""
    shared: bool = False
    dtypes: tuple[str, ...] | None = None
    vector_bytes: int = 0
    signature: str = "PPii"

    @property
    def tunables(self) -> tuple[str, ...]:
        """Names of the tunable macros, sorted."""
        return tuple(sorted(self.defaults))

    # --- temporary shims of the kernel model (issue 12), until "Kernel model:" lands on main ----------
    @property
    def dims(self) -> tuple[str, ...]:
        """SHIM: the named problem dimensions: ``("rows", "cols")`` (``("m", "n", "k")`` for a product)."""
        return ("m", "n", "k") if self.op == "matmul" else ("rows", "cols")

    @property
    def source_hash(self) -> str:
        """SHIM: SHA-256 (hex) of the source after includes (:func:`source_hash`)."""
        return source_hash(self)

    @property
    def spec_hash(self) -> str:
        """SHIM: SHA-256 (hex) of a canonical description of what the launch depends on (entry point,
        dims, op, fixed macros, tunable names, argument signature); the kernel model's replaces it."""
        spec = {"function": self.function, "dims": self.dims, "op": self.op, "fixed": dict(sorted(self.fixed.items())),
                "tunables": self.tunables, "signature": self.signature, "vector_bytes": self.vector_bytes}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()

    @property
    def layout(self) -> str:
        """``row`` (threadIdx.x runs along input rows) or ``col`` (down input columns)."""
        return "col" if self.fixed.get("COLUMNWISE", 0) else "row"

    def check_dtype(self, dtype: DType) -> None:
        """Raise :class:`InvalidInputError` unless this kernel supports ``dtype``."""
        if self.dtypes is not None and dtype.name not in self.dtypes:
            raise InvalidInputError(f"kernel {self.name} does not support dtype {dtype.name!r}; "
                                    f"allowed: {', '.join(self.dtypes)}")

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

    def _value(self, config: Config, name: str, default: int) -> int:
        return {**self.fixed, **config.as_dict()}.get(name, default)

    def tile_shape(self, config: Config) -> tuple[int, int]:
        """Input rows x cols one block moves: UNROLL tiles along the direction threadIdx.x runs."""
        tile, unroll = config["TILE_DIM"], self._value(config, "UNROLL", 1)
        return (tile * unroll, tile) if self.layout == "col" else (tile, tile * unroll)

    def tiles(self, config: Config, rows: int, cols: int) -> tuple[int, int]:
        """Block tiles down and across a ``rows x cols`` input (the grid of :func:`tile_of_block`)."""
        h, w = self.tile_shape(config)
        return -(-rows // h), -(-cols // w)

    def vector(self, itemsize: int) -> int:
        """Elements each thread moves per global access for elements of ``itemsize`` bytes."""
        return max(1, self.vector_bytes // itemsize)

    def block(self, config: Config, itemsize: int) -> tuple[int, int, int]:
        """Threads per block for elements of ``itemsize`` bytes: ``(TILE_DIM, BLOCK_ROWS, 1)``,
        or ``(TILE_DIM // vector, BLOCK_ROWS, 1)`` for a vectorized kernel."""
        return (config["TILE_DIM"] // self.vector(itemsize), config["BLOCK_ROWS"], 1)

    def grid(self, config: Config, rows: int, cols: int) -> tuple[int, int]:
        """Blocks over a 1-D grid (the kernel maps block to tile): one per block tile, or one
        per ``TILES`` consecutive block tiles for a kernel that moves several in turn."""
        tiles_y, tiles_x = self.tiles(config, rows, cols)
        per_block = self._value(config, "TILES", 1)
        return (-(-tiles_y * tiles_x // per_block), 1)

    def shared_bytes(self, config: Config, itemsize: int) -> int:
        """Static shared memory per block for elements of ``itemsize`` bytes."""
        if not self.shared:
            return 0
        tile = config["TILE_DIM"]
        return self._value(config, "UNROLL", 1) * tile * (tile + self._value(config, "IPAD", 0)) * itemsize


@dataclass(frozen=True)
class MatmulKernel(Kernel):
    """A matrix product ``C[M,N] = A[M,K] @ B[K,N]`` (op ``matmul``, row-major, float32 and
    float64): ``rows, cols`` of the geometry methods are ``M, N``; each block computes a
    ``tile_shape`` tile of C, over a 2-D grid (x along N, y along M).

    Attributes:
        block_macros: the macros giving the block's threads along x and y, each a macro name
            or ``(macro, divisor macro)`` for ``macro / divisor``.
        tile_macros: the macros giving the rows and columns of C one block computes.
        shared_tiles: ``(rows, cols)`` macro expressions of each shared-memory array, in
            elements (``"BM+1"``: a macro plus a constant).
    """

    block_macros: tuple = ()
    tile_macros: tuple[str, str] = ("", "")
    shared_tiles: tuple[tuple[str, str], ...] = ()

    def _eval(self, config: Config, term) -> int:
        values = {**self.fixed, **config.as_dict()}
        if isinstance(term, tuple):
            return values[term[0]] // values[term[1]]
        name, _, plus = str(term).partition("+")
        return values[name] + int(plus or 0)

    def output_shape(self, rows: int, cols: int) -> tuple[int, int]:
        """``(M, N)``: C has the rows of A and the columns of B."""
        return (rows, cols)

    def reference(self, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:  # type: ignore[override]
        """``a @ b`` in float64 (the accuracy reference of :mod:`autotune.kernel.problem`)."""
        return np.matmul(a.astype(np.float64), b.astype(np.float64))

    def tile_shape(self, config: Config) -> tuple[int, int]:
        """Rows x cols of C one block computes."""
        return self._eval(config, self.tile_macros[0]), self._eval(config, self.tile_macros[1])

    def block(self, config: Config, itemsize: int) -> tuple[int, int, int]:
        """Threads per block ``(x, y, 1)`` (the same for every element size)."""
        return self._eval(config, self.block_macros[0]), self._eval(config, self.block_macros[1]), 1

    def grid(self, config: Config, rows: int, cols: int) -> tuple[int, int]:
        """``(ceil(N / tile cols), ceil(M / tile rows))`` blocks for an ``M x N`` C."""
        tiles_y, tiles_x = self.tiles(config, rows, cols)
        return (tiles_x, tiles_y)

    def shared_bytes(self, config: Config, itemsize: int) -> int:
        """Static shared memory per block for elements of ``itemsize`` bytes."""
        return sum(self._eval(config, r) * self._eval(config, c) for r, c in self.shared_tiles) * itemsize


def _matmul(name: str, summary: str, defaults: dict[str, int], block: tuple, tile: tuple[str, str],
            shared: tuple[tuple[str, str], ...] = ()) -> MatmulKernel:
    return MatmulKernel(name, f"{name}.cu", name, "matmul", MappingProxyType(defaults), MappingProxyType({}),
                        summary, shared=bool(shared), dtypes=("float32", "float64"), signature="PPPiii",
                        block_macros=block, tile_macros=tile, shared_tiles=shared)


MATMUL_KERNELS = (
    _matmul("matmul_naive", "matrix product, one thread per element of C, operands from global memory",
            {"BLOCK_X": 16, "BLOCK_Y": 16}, ("BLOCK_X", "BLOCK_Y"), ("BLOCK_Y", "BLOCK_X")),
    _matmul("matmul_tiled", "matrix product with TILE_WIDTH x TILE_WIDTH shared-memory tiles of A and B",
            {"TILE_WIDTH": 16}, ("TILE_WIDTH", "TILE_WIDTH"), ("TILE_WIDTH", "TILE_WIDTH"),
            (("TILE_WIDTH", "TILE_WIDTH"), ("TILE_WIDTH", "TILE_WIDTH"))),
    _matmul("matmul_reg", "register-blocked matrix product: BM x BN block tile, TM x TN outputs per thread",
            {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}, (("BN", "TN"), ("BM", "TM")), ("BM", "BN"),
            (("BK", "BM+1"), ("BK", "BN"))),
)
"""The matrix products (float32 and float64 only); see ``kernels/matmul*.cu``."""


_SOURCES = {"copy.cu": ("copy_tiled", "copy"), "naive.cu": ("transpose_naive", "transpose"),
            "smem.cu": ("transpose_smem", "transpose"), "vec.cu": ("transpose_vec", "transpose")}
"""Each source file's entry point and op; several catalog entries share a file."""


def _entry(name: str, file: str, summary: str, tunables: dict[str, int], fixed: dict[str, int]) -> Kernel:
    function, op = _SOURCES[file]
    return Kernel(name, file, function, op, MappingProxyType({"TILE_DIM": 32, "BLOCK_ROWS": 8, **tunables}),
                  MappingProxyType(fixed), summary, shared=file in ("smem.cu", "vec.cu"),
                  vector_bytes=16 if file == "vec.cu" else 0)


def _direct(name: str, file: str, summary: str, *, columnwise: int, unroll: int = 0, diagonal: int = 0) -> Kernel:
    """A kernel of direct.cuh; ``unroll`` > 0 makes UNROLL tunable with that default."""
    fixed = {"COLUMNWISE": columnwise, "DIAGONAL": diagonal} | ({} if unroll else {"UNROLL": 1})
    return _entry(name, file, summary, {"UNROLL": unroll} if unroll else {}, fixed)


KERNELS: Mapping[str, Kernel] = MappingProxyType({
    k.name: k for k in (
        _direct("copy_row", "copy.cu", "copy by rows, coalesced: the upper bound", columnwise=0),
        _direct("copy_col", "copy.cu", "copy by columns, strided: the lower bound", columnwise=1),
        _direct("naive_row", "naive.cu", "row reads, strided column writes", columnwise=0),
        _direct("naive_col", "naive.cu", "strided column reads, row writes", columnwise=1),
        _direct("unroll_row", "naive.cu", "naive_row moving UNROLL tiles per block", columnwise=0, unroll=4),
        _direct("unroll_col", "naive.cu", "naive_col moving UNROLL tiles per block", columnwise=1, unroll=4),
        _direct("diagonal_row", "naive.cu", "naive_row taking tiles in diagonal order", columnwise=0, diagonal=1),
        _direct("diagonal_col", "naive.cu", "naive_col taking tiles in diagonal order", columnwise=1, diagonal=1),
        _entry("smem", "smem.cu", "shared-memory tile, no padding (bank conflicts)",
               {"DIAGONAL": 0}, {"IPAD": 0, "UNROLL": 1}),
        _entry("smem_pad", "smem.cu", "shared-memory tile padded by IPAD columns",
               {"IPAD": 1, "DIAGONAL": 0}, {"UNROLL": 1}),
        _entry("smem_unroll_pad", "smem.cu", "padded shared-memory tiles, UNROLL per block",
               {"IPAD": 1, "UNROLL": 2, "DIAGONAL": 0}, {}),
        _entry("smem_vec", "vec.cu", "16-byte vector loads and stores through a padded shared tile, TILES per block",
               {"TILE_DIM": 64, "BLOCK_ROWS": 16, "IPAD": 1, "TILES": 1, "STREAMING": 0, "DIAGONAL": 0, "GROUP": 0}, {"UNROLL": 1}),
        *MATMUL_KERNELS,
    )
})

ALIASES: Mapping[str, str] = MappingProxyType({"copy": "copy_row", "naive": "naive_row"})
"""Former names still accepted by :func:`get_kernel` (not listed in :data:`KERNELS`)."""


def get_kernel(name: str) -> Kernel:
    """The catalog entry called ``name`` (or an :data:`ALIASES` name for one).

    Raises:
        InvalidInputError: unknown name (the message lists the catalog and close matches).
    """
    try:
        return KERNELS[ALIASES.get(name, name)]
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
