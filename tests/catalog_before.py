"""The catalog as it was before the kernel model (``git show 3b61416:autotune/kernel/catalog.py``):
each kernel's launch geometry and static shared memory as Python formulas, kept as regression
anchors. The kernel files in ``kernels/`` must launch every config exactly as these did, and
the compiled kernels use the shared memory these say.

Transposes and copies: a block of ``TILE_DIM x BLOCK_ROWS`` threads (``TILE_DIM / vector``
along x for the vectorized kernel, ``vector = max(1, 16 // itemsize)``) moves ``UNROLL``
tiles of ``TILE_DIM x TILE_DIM`` laid along input rows (layout ``row``) or down input columns
(layout ``col``); the grid is 1-D, one block per ``TILES`` block tiles. Matrix products: a
2-D grid ``(cdiv(N, tile cols), cdiv(M, tile rows))``.
"""

from __future__ import annotations

SOURCE_HASHES = {"copy.cu": "1be2ee828cfa", "naive.cu": "34474f32fe85", "smem.cu": "95e704e9849b",
                 "vec.cu": "b5937e5b6ae2", "matmul_naive.cu": "00503735926f", "matmul_tiled.cu": "2868b38925a5",
                 "matmul_reg.cu": "b92661176efd"}
"""The first 12 hex digits of each source's SHA-256 after includes, before the model: results
stored then are keyed by these, so they must not change by moving kernels into files."""

# name: (source, entry point, copy or transpose, layout, vector bytes, stages tiles in shared memory, fixed macros)
MOVES = {
    "copy_row": ("copy.cu", "copy_tiled", "copy", "row", 0, False, {"COLUMNWISE": 0, "DIAGONAL": 0, "UNROLL": 1}),
    "copy_col": ("copy.cu", "copy_tiled", "copy", "col", 0, False, {"COLUMNWISE": 1, "DIAGONAL": 0, "UNROLL": 1}),
    "naive_row": ("naive.cu", "transpose_naive", "transpose", "row", 0, False,
                  {"COLUMNWISE": 0, "DIAGONAL": 0, "UNROLL": 1}),
    "naive_col": ("naive.cu", "transpose_naive", "transpose", "col", 0, False,
                  {"COLUMNWISE": 1, "DIAGONAL": 0, "UNROLL": 1}),
    "unroll_row": ("naive.cu", "transpose_naive", "transpose", "row", 0, False, {"COLUMNWISE": 0, "DIAGONAL": 0}),
    "unroll_col": ("naive.cu", "transpose_naive", "transpose", "col", 0, False, {"COLUMNWISE": 1, "DIAGONAL": 0}),
    "diagonal_row": ("naive.cu", "transpose_naive", "transpose", "row", 0, False,
                     {"COLUMNWISE": 0, "DIAGONAL": 1, "UNROLL": 1}),
    "diagonal_col": ("naive.cu", "transpose_naive", "transpose", "col", 0, False,
                     {"COLUMNWISE": 1, "DIAGONAL": 1, "UNROLL": 1}),
    "smem": ("smem.cu", "transpose_smem", "transpose", "row", 0, True, {"IPAD": 0, "UNROLL": 1}),
    "smem_pad": ("smem.cu", "transpose_smem", "transpose", "row", 0, True, {"UNROLL": 1}),
    "smem_unroll_pad": ("smem.cu", "transpose_smem", "transpose", "row", 0, True, {}),
    "smem_vec": ("vec.cu", "transpose_vec", "transpose", "row", 16, True, {"UNROLL": 1}),
}
DEFAULTS = {
    "copy_row": {"TILE_DIM": 32, "BLOCK_ROWS": 8}, "copy_col": {"TILE_DIM": 32, "BLOCK_ROWS": 8},
    "naive_row": {"TILE_DIM": 32, "BLOCK_ROWS": 8}, "naive_col": {"TILE_DIM": 32, "BLOCK_ROWS": 8},
    "unroll_row": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "UNROLL": 4},
    "unroll_col": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "UNROLL": 4},
    "diagonal_row": {"TILE_DIM": 32, "BLOCK_ROWS": 8}, "diagonal_col": {"TILE_DIM": 32, "BLOCK_ROWS": 8},
    "smem": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "DIAGONAL": 0},
    "smem_pad": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0},
    "smem_unroll_pad": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "UNROLL": 2, "DIAGONAL": 0},
    "smem_vec": {"TILE_DIM": 64, "BLOCK_ROWS": 16, "IPAD": 1, "TILES": 1, "STREAMING": 0, "DIAGONAL": 0, "GROUP": 0},
    "matmul_naive": {"BLOCK_X": 16, "BLOCK_Y": 16}, "matmul_tiled": {"TILE_WIDTH": 16},
    "matmul_reg": {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
}
MATMULS = ("matmul_naive", "matmul_tiled", "matmul_reg")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _macros(name: str, config: dict[str, int]) -> dict[str, int]:
    return {**(MOVES[name][6] if name in MOVES else {}), **config}


def tile_shape(name: str, config: dict[str, int]) -> tuple[int, int]:
    """Input rows x cols one block moves (a transpose or copy), or rows x cols of C one block computes."""
    m = _macros(name, config)
    if name == "matmul_naive":
        return m["BLOCK_Y"], m["BLOCK_X"]
    if name == "matmul_tiled":
        return m["TILE_WIDTH"], m["TILE_WIDTH"]
    if name == "matmul_reg":
        return m["BM"], m["BN"]
    tile, unroll = m["TILE_DIM"], m.get("UNROLL", 1)
    return (tile * unroll, tile) if MOVES[name][3] == "col" else (tile, tile * unroll)


def block(name: str, config: dict[str, int], itemsize: int) -> tuple[int, int, int]:
    """Threads per block."""
    m = _macros(name, config)
    if name == "matmul_naive":
        return m["BLOCK_X"], m["BLOCK_Y"], 1
    if name == "matmul_tiled":
        return m["TILE_WIDTH"], m["TILE_WIDTH"], 1
    if name == "matmul_reg":
        return m["BN"] // m["TN"], m["BM"] // m["TM"], 1
    vector = max(1, MOVES[name][4] // itemsize)
    return m["TILE_DIM"] // vector, m["BLOCK_ROWS"], 1


def grid(name: str, config: dict[str, int], rows: int, cols: int) -> tuple[int, int, int]:
    """Blocks per grid for a ``rows x cols`` input (a move) or an ``M x N`` C (a product: rows = M, cols = N)."""
    h, w = tile_shape(name, config)
    tiles_y, tiles_x = cdiv(rows, h), cdiv(cols, w)
    if name in MATMULS:
        return tiles_x, tiles_y, 1
    return cdiv(tiles_y * tiles_x, _macros(name, config).get("TILES", 1)), 1, 1


DYNAMIC_TILES = {"smem", "smem_pad", "smem_unroll_pad"}
"""Kernels whose tiles became dynamic shared memory (issue 24: 128 x 128 tiles above 48 KiB); the
bytes per block are the same, launched rather than compiled in."""


def shared_bytes(name: str, config: dict[str, int], itemsize: int) -> int:
    """Shared memory per block, static and dynamic together (what a measurement reports)."""
    m = _macros(name, config)
    if name == "matmul_tiled":
        return 2 * m["TILE_WIDTH"] ** 2 * itemsize
    if name == "matmul_reg":
        return (m["BK"] * (m["BM"] + 1) + m["BK"] * m["BN"]) * itemsize
    if name == "matmul_naive" or not MOVES[name][5]:
        return 0
    tile = m["TILE_DIM"]
    return m.get("UNROLL", 1) * tile * (tile + m.get("IPAD", 0)) * itemsize


def static_shared_bytes(name: str, config: dict[str, int], itemsize: int) -> int:
    """Static shared memory per block (what ptxas reports for the compiled kernel)."""
    return 0 if name in DYNAMIC_TILES else shared_bytes(name, config, itemsize)


def dynamic_shared_bytes(name: str, config: dict[str, int], itemsize: int) -> int:
    """Dynamic shared memory per block (the kernel file's ``[launch] shared``)."""
    return shared_bytes(name, config, itemsize) if name in DYNAMIC_TILES else 0
