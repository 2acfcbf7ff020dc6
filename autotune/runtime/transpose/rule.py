"""The transpose rule: which catalog kernel, and where it has one which config, for a ``rows x cols``
matrix of ``itemsize``-byte elements when nothing is tuned for its exact key.

:func:`rule_kernel` checks, in order: one row or column (a copy), 16-byte elements, small matrices,
16-byte-aligned rows, skinny shapes, misaligned output rows (4 and 8 bytes), large matrices of 1 and 2
bytes, rows odd on both sides, the rest by element size. Each constant below carries the H100 measurements it was chosen on
(``benchmarks/results/``; docs/transpose.md puts them side by side).
:mod:`autotune.runtime.transpose.choice` asks the database first and falls back to this rule.
"""

from __future__ import annotations

__all__ = ["SMALL_KERNEL", "SMALL_MAX", "ALIGNED_KERNEL", "UNALIGNED_KERNEL", "WIDE_KERNEL", "SKINNY_KERNEL",
           "SKINNY_LINE", "SHORT_OUTPUT_KERNEL", "OUT_ODD_KERNEL", "OUT_ODD_MIN_ROWS", "BYTES_KERNEL", "BYTES_MIN",
           "BYTES_LARGE", "BYTES_CONFIG", "BOTH_ODD_KERNEL", "BOTH_ODD_CONFIG", "DIAGONAL_RATIO", "rule_kernel",
           "rule_config"]

SMALL_KERNEL = "naive_flat"
"""The rule's kernel for small matrices, both sides at most :data:`SMALL_MAX` (a batch of them above
all): a copy over the flattened output (kernels/flat.cu), coalesced writes, reads gathered down the
input columns, no tiles, as PyTorch's elementwise copy of ``x.mT``. A 33 x 65 matrix fills 26 % of two
64 x 64 tiles; here a block is 1024 consecutive output elements whatever the shape. H100, ratio to
PyTorch's ``x.mT.contiguous()``, L2-resident batches, one run
(``benchmarks/results/2026-11-24_NVIDIA_H100_80GB_HBM3_transpose_vs_peers_flat.md``; naive_col, the
rule before, in brackets): float32 1000 x 33 x 65 1.08 (0.87), 4096 x 16 x 16 0.92 (0.86), 20000 x 33 x
65 1.20 (1.00), 100 x 100 0.99 (1.00), 150 x 150 1.00; float64 1000 x 33 x 65 1.02 (0.96), 2000 x 20 x 30
1.05 (1.06); float16 1000 x 33 x 65 0.96 (0.75); int8 1000 x 33 x 65 0.97 (skinny, the rule before for
1-byte elements: 0.90). float16 256 x 127 x 129 stays with the tiles (sides over 100)."""

SMALL_MAX = 100

ALIGNED_KERNEL = "smem_vec"
"""The rule's kernel when both row lengths are multiples of 16 bytes."""

UNALIGNED_KERNEL = {1: "smem_bytes", 2: "smem_vec_realign", 4: "smem_vec_realign", 8: "smem_vec_realign"}
"""The rule's kernel per item size when a row length is not a multiple of 16 bytes. H100,
5000x7001, % of memcpy (``benchmarks/results/2026-11-23_NVIDIA_H100_80GB_HBM3_unaligned_transpose.txt``):
int8 53.1 (smem_pad 49.1, smem_vec 49.3), float16 85.4 (75.3, 73.1), float32 93.1 (94.4, 92.4),
float64 93.7 (first run: smem_pad 93.5, smem_vec 94.8). smem_pad is ahead for float32 there
but far behind at 3001x7919 (65.0 against 74.3 for smem_vec_realign, first run:
``..._unaligned_transpose_first_kernel.txt``), so the rule takes smem_vec_realign for 2 to 8
bytes. For 1-byte elements it takes smem_bytes (words realigned in registers), ahead at default
configs on 3 of 4 odd shapes and level on the fourth, through ``autotune.transpose``: int8
3001x7919 48.1 % of memcpy (smem_vec_realign 36.5), 3x4093x4099 44.6 (37.7), 2x2049x3001 34.2
(27.7), 5000x7001 54.7 (55.4); for float16 it was behind on 2 of 4 (5000x7001 70.6 against 79.5)
(``..._transpose_vs_peers_bytes.md`` and ``..._unaligned_transpose_bytes.txt`` of 2026-11-23)."""

WIDE_KERNEL = "naive_col"
"""The rule's kernel for 16-byte elements (complex128), any shape: one element is already a
16-byte access, so coalesced row writes with column reads (no shared memory) move it best.
H100, complex128, % of memcpy at default configs (``..._op_search_complex128_8192.txt`` and
``..._5000x7001.txt`` of 2026-11-23): 8192^2 naive_col 88.5 (smem_vec 86.3, smem_pad 52.6),
5000x7001 87.5 (43.8, 48.4); tuned by ``autotune search --op transpose``, naive_col reached 97.5
(BLOCK_ROWS=16, TILE_DIM=16) and 93.4 (8x8)."""

SKINNY_KERNEL = "skinny"
"""The rule's kernel for skinny matrices whose rows are not 16-byte aligned on both sides: a short
side of fewer than :data:`SKINNY_LINE` bytes (its rows do not fill one 128-byte line), elements of
1 to 8 bytes, any size (a batch of small skinny matrices too). A square tile then holds a few rows
and wastes the rest; skinny moves chunks of whole short rows with 16-byte vectors on both sides
(kernels/skinny.cu). H100, % of memcpy at default configs (skinny at STREAMING=0, its first
default), same run
(``benchmarks/results/2026-11-24_NVIDIA_H100_80GB_HBM3_transpose_skinny_sweep.txt``): int8
7 x 1000003 109.8 (smem_bytes 16.1, smem_pad 20.6, unroll_row 39.4), 1000003 x 7 101.2 (19.2, 26.3);
float16 33 x 65536 82.5 (smem_vec 66.7, smem_vec_realign 52.3), 200003 x 5 122.9 (61.4, 60.5);
float64 9 x 200003 104.5 (60.7, 47.3) (a memcpy of a few MB is itself far from the bandwidth); held
out (``..._transpose_heldout.txt``): float16 13 x 500009 97.0 (33.4, 17.9), float32 5 x 777777 99.1
(23.0, 22.0), int8 50 x 100003 124.6 (smem_bytes 102.1). In the peers table
(``..._transpose_vs_peers_issue24_rule1.md``) an int8 batch 64 x 7 x 16411 read 72.8 through skinny
against 9.4 through smem_bytes, hence no size floor. Where rows are 16-byte aligned smem_vec is
ahead (uint8 48 x 1048576: 85.1 against 71.7; float32 65536 x 32: 98.5 against 53.8), and with short
rows of 128 bytes or more the square tiles are (float32 65536 x 33: smem_vec_realign 89.3, smem_pad
88.7, skinny 67.4)."""

SKINNY_LINE = 128

SHORT_OUTPUT_KERNEL = {4: "naive_flat", 8: "naive_flat"}
"""The rule's kernel per item size for a skinny matrix (:data:`SKINNY_KERNEL`'s class) whose short side
is ``rows`` (so the output's rows are the short ones): the flattened-output copy of
:data:`SMALL_KERNEL`. H100, % of memcpy, each verified and timed in one run
(``..._transpose_skinny_vs_flat.txt``; skinny in brackets): float64 9 x 200003 112.1 (106.2), 9 x 2000003
98.0 (91.6), 5 x 777777 104.8 (101.0), 13 x 500009 99.8 (92.3); float32 118.8 (113.7), 97.4 (89.6),
110.1 (102.4), 100.5 (89.4). In the peers table (L2-resident) float64 9 x 200003 read 1.00x PyTorch
against skinny's 0.64x. Where the short side is ``cols`` skinny stays (float64 100003 x 15: 106.3 against
70.9; 300007 x 3: 122.8 against 118.5), and so it does for 1- and 2-byte elements (int8 7 x 1000003:
109.2 against 64.8; float16 33 x 65536: 75.6 against 54.6)."""

OUT_ODD_KERNEL = {4: "smem_aligned_out", 8: "smem_aligned_out"}
"""The rule's kernel per item size when the output's rows (``rows`` elements long) are not a multiple of
16 bytes, whatever ``cols``: smem_aligned_out (kernels/aligned_out.cu) at its default (TILE_DIM=32,
BLOCK_ROWS=8). Its tile is skewed so that every output row segment starts on a 32-byte sector boundary,
where the padded tile writes each one as a partial sector at both ends. H100, % of memcpy, every
config verified and timed in one run. Rows misaligned on both sides
(``benchmarks/results/2026-11-24_NVIDIA_H100_80GB_HBM3_transpose_aligned_out.txt``; 4 shapes the rule
was made from, 4 held out: 6007x3001, 999x12347, 7777x5555, 1001x30001). float32: 12345x6789 89.3
(smem_pad 64 x 16, the rule before: 76.7), 4093x4099 95.9 (85.3), 3001x7919 92.7 (80.1), 4099x2053
99.8 (89.7); held out 94.9 (85.5), 93.6 (77.7), 90.6 (78.6), 89.4 (69.0). float64 (smem_vec_realign
before): 91.3 (86.5), 96.6 (91.7), 94.3 (88.8), 100.0 (95.0); held out 96.7 (91.8), 96.4 (87.5), 94.0
(88.4), 90.5 (74.4). Output rows misaligned, input rows aligned
(``..._transpose_aligned_out_one_side.txt``): float32 7001x5000 91.8 (smem_vec_realign 69.5), 8191x2048
92.3 (73.4), 30001x1000 93.0 (71.7); float64 93.4 (89.3), 94.8 (90.5), 94.5 (91.3). Where only the
input's rows are misaligned the skew has nothing to fix (float32 5000x7001: 90.8 against 87.9 for
smem_vec_realign and 94.5 for smem_vec), so :data:`UNALIGNED_KERNEL` stays there. 128 x 128 tiles of
smem_pad (dynamic shared memory above 48 KiB) did not help 4-byte elements (12345x6789: 76.2 against
76.5 at 64 x 64; ``..._transpose_wide_tiles.txt``): the partial sectors at the ends of the segments, not
their share of a segment, cost the time. 16-byte elements keep :data:`WIDE_KERNEL` (complex128
12345x6789: naive_col 83.2, smem_aligned_out 41.2)."""

OUT_ODD_MIN_ROWS = 128
"""The fewest ``rows`` :data:`OUT_ODD_KERNEL` takes: its tiles write TILE_DIM elements of each output row
shifted back by up to a sector, so a few rows leave most of the last tile row empty. float32, % of memcpy
(``..._transpose_aligned_out_short_rows.txt``): 33 x 65536 67.5 (smem_vec_realign 76.7), 65 x 65536 66.8
(67.6), 129 x 65536 68.4 (54.0), 257 x 30001 87.5 (65.6)."""

BYTES_KERNEL = "smem_bytes_aligned_out"
"""The rule's kernel for 1- and 2-byte elements whose rows are not 16-byte aligned (on either side), in a
matrix of at least :data:`BYTES_MIN` bytes: kernels/bytes_aligned_out.cu, whole aligned 4-byte words on
both sides and every output row segment starting on a word or a 32-byte sector, launched at
:data:`BYTES_CONFIG`. smem_bytes, which realigns each output row from wherever it starts, issued about 170
instructions per 4-byte word (ncu: 85 % of issue slots busy at 31 % of DRAM bandwidth,
``benchmarks/results/2026-11-24_NVIDIA_H100_80GB_HBM3_transpose_ncu_issue24.txt``); this one about 80
(``..._transpose_ncu_bytes.txt``).

H100, % of memcpy, each config verified and timed in one run, argument sets rotated over 4x the L2 (no
cache credit; ``..._transpose_bytes_diagonal.txt`` for this kernel, ``..._transpose_bytes_aligned_out.txt``
for the kernels before, in brackets: smem_bytes for uint8; smem_pad 64 x 8 in the rule's row or
diagonal order for float16 odd on both sides, smem_vec_realign where one side is). Both sides odd, the 4
shapes the rule was made from then 4 held out (6007x3001, 999x12347, 7777x5555, 1001x30001) and
10007x10009: uint8 12345x6789 80.8 (45.2), 4093x4099 79.2 (59.3), 3001x7919 80.3 (51.7), 4099x2053 84.3
(68.8); held out 80.5 (55.1), 71.9 (57.3), 80.6 (45.1), 65.7 (38.6); 78.5 (40.6). float16 83.3 (59.2),
86.1 (67.5), 83.5 (64.6), 83.9 (74.6); held out 83.6 (65.8), 81.7 (77.8), 84.5 (61.1), 75.6 (71.4); 83.5
(56.7). One side odd: uint8 5000x7001 78.5 (62.1), 7001x5000 81.4 (45.9); float16 84.1 (79.8), 84.6
(65.3)."""

BYTES_MIN = {1: 4 << 20, 2: 24 << 20}
"""The fewest bytes of a matrix (``rows * cols * itemsize``) for which :data:`BYTES_KERNEL` is the rule, per
item size. Below, a matrix transposed again and again stays in the L2 between calls (50 MiB on the H100),
and there the kernel's 3 passes and its extra rows (a tile loads 32 / itemsize rows more than it stores)
cost more than its aligned stores save. H100, both sides odd, one argument set timed back to back
(``..._transpose_bytes_warm_l2.txt``), % of memcpy, this kernel as the rule launches it
(:data:`BYTES_CONFIG`, :data:`BYTES_LARGE`) against smem_pad 64 x 8: float16 513x771 38.9 against 82.0, 1001x1999 65.8 against 98.4, 2049x3001 52.4 against 74.7,
4099x2053 (16.1 MiB) 59.4 against 71.0; 3001x5003 (28.6 MiB) 83.5 against 68.1, 4093x4099 87.3 against
72.0, 6007x3001 85.1 against 68.7, 3001x7919 85.0 against 64.9. uint8 against smem_pad 64 x 8 (smem_bytes
in brackets): 513x771 56.0 against 84.5 (71.4), 1001x1999 (1.9 MiB) 102.2 against 102.0 (83.3);
2049x3001 (5.9 MiB) 65.4 against 55.1 (49.1), 4099x2053 67.5 against 50.8 (46.5), 3001x5003 62.3 against
44.4 (40.9), 4093x4099 63.9 against 44.6 (42.2), 3001x7919 75.6 against 48.7 (52.0)."""

BYTES_LARGE = 20 << 20
"""From this many bytes a matrix of 1-byte elements no longer stays in the L2 between calls, and
:data:`BYTES_KERNEL` takes its kernel file's default (128-byte tiles, output rows on 32-byte sectors)
instead of :data:`BYTES_CONFIG`'s 64-byte tiles with output rows on words: uint8 3001x7919 (22.7 MiB, back
to back) 75.6 against 63.2, where 4093x4099 (16.0 MiB) read 55.4 against 63.9
(``..._transpose_bytes_warm_l2.txt``); 10007x10009 (rotated) 78.6 against 52.3
(``..._transpose_bytes_aligned_out.txt``)."""

BYTES_CONFIG = {1: {"BLOCK_ROWS": 16, "OUT_ALIGN": 4, "TILE_BYTES": 64},
                2: {"BLOCK_ROWS": 8, "OUT_ALIGN": 32, "TILE_BYTES": 128}}
"""The config :data:`BYTES_KERNEL` is launched with where nothing is tuned, per item size (1-byte
elements from :data:`BYTES_LARGE` bytes: the kernel file's default). 2-byte elements: 8 block rows, ahead
of 16 on all 11 odd float16 shapes rotated (75.6 to 86.1 % of memcpy against 65.5 to 77.5,
``..._transpose_bytes_diagonal.txt``) and on the 4 large ones back to back (83.5 to 87.3 against 71.6
to 78.4); 1-byte elements at 128-byte tiles and 8 block rows spill registers. 1-byte elements below
:data:`BYTES_LARGE`: 64-byte tiles with output rows on words, ahead of the default on the 4 shapes
from 5.9 to 16 MiB back to back (62.3 to 67.5 against 53.9 to 58.9, ``..._transpose_bytes_warm_l2.txt``)."""

BOTH_ODD_KERNEL = {1: "smem_pad", 2: "smem_pad"}
"""The rule's kernel per item size when neither ``rows`` nor ``cols`` is a multiple of 16 / itemsize,
and neither :data:`OUT_ODD_KERNEL` nor :data:`BYTES_KERNEL` takes the shape (a matrix below
:data:`BYTES_MIN`), launched with :data:`BOTH_ODD_CONFIG` where nothing is tuned: the padded tile, whose
element-wise moves cost little where the matrix stays in the L2 (see :data:`BYTES_MIN`'s figures). 2-byte
elements, rotated: TILE_DIM=64, BLOCK_ROWS=8 was ahead of the classic 32 x 8 on 7 of 8 float16 shapes
(``..._transpose_odd_configs.txt``): 60.7 (54.1), 70.5 (67.2), 64.6 (59.4), 80.7 (79.0); held out 68.6
(65.2), 67.3 (63.2), 62.7 (56.7), 54.7 (49.5). 1-byte elements, back to back: uint8 513x771 84.5 (smem_bytes
71.4), 1001x1999 102.0 (83.3)."""

BOTH_ODD_CONFIG = {1: {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 64},
                   2: {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 64}}
"""The config :data:`BOTH_ODD_KERNEL` is launched with where nothing is tuned, per item size (others:
the kernel file's default), with ``DIAGONAL=1`` where ``cols >= DIAGONAL_RATIO * rows``."""

DIAGONAL_RATIO = 2
"""Where the input is this many times wider than tall, :data:`BOTH_ODD_CONFIG` takes the tiles in
diagonal order. H100, float16 rows odd on both sides, smem_pad 64 x 8 in row and diagonal order, one run
(``..._transpose_half_configs.txt``; all 8 shapes it was made from): wider, 999x12347 78.6 against 65.3,
1001x30001 71.7 against 52.6, 3001x7919 64.6 against 62.2; not wider, 12345x6789 55.2 against 59.2,
4099x2053 73.3 against 76.1, 4093x4099 67.1 against 68.5, 6007x3001 62.3 against 65.6, 7777x5555 58.9
against 61.5."""

def rule_kernel(rows: int, cols: int, itemsize: int) -> tuple[str, str]:
    """The rule's ``(kernel, why)`` without a stored result: ``copy`` for one row or column,
    :data:`WIDE_KERNEL` for 16-byte elements, :data:`SMALL_KERNEL` for a small matrix (both sides at
    most :data:`SMALL_MAX`), :data:`ALIGNED_KERNEL` when ``rows`` and ``cols``
    are multiples of ``16 // itemsize`` elements (16-byte vectors on both sides),
    :data:`SHORT_OUTPUT_KERNEL` (4- and 8-byte elements, ``rows`` the short side) or else
    :data:`SKINNY_KERNEL` for a side of fewer than :data:`SKINNY_LINE` bytes, :data:`OUT_ODD_KERNEL` of
    the item size when ``rows`` is not a multiple (the output's rows misaligned), :data:`BYTES_KERNEL` for
    1- and 2-byte elements in a matrix of :data:`BYTES_MIN` bytes or more, :data:`BOTH_ODD_KERNEL` of the
    item size when neither is a multiple, else :data:`UNALIGNED_KERNEL` of the item size."""
    if rows == 1 or cols == 1:
        return "copy", f"{rows} x {cols}: a transpose of one row or column is a copy of its bytes"
    if itemsize >= 16:
        return WIDE_KERNEL, f"rule: {itemsize}-byte elements are moved one per thread, column reads, row writes"
    if rows <= SMALL_MAX and cols <= SMALL_MAX:
        return SMALL_KERNEL, f"rule: {rows} x {cols} is small (sides <= {SMALL_MAX}): a copy over the flattened output"
    vec = max(1, 16 // itemsize)
    if rows % vec == 0 and cols % vec == 0:
        return ALIGNED_KERNEL, f"rule: rows and cols are multiples of {vec} elements (16-byte rows)"
    if min(rows, cols) * itemsize < SKINNY_LINE and rows < cols and itemsize in SHORT_OUTPUT_KERNEL:
        return SHORT_OUTPUT_KERNEL[itemsize], (f"rule: {rows} x {cols} is skinny with short output rows of {rows} "
                                               f"elements: a copy over the flattened output")
    if min(rows, cols) * itemsize < SKINNY_LINE:
        return SKINNY_KERNEL, (f"rule: {rows} x {cols} is skinny (a side of < {SKINNY_LINE} bytes, rows not "
                               f"16-byte aligned): chunks of whole short rows")
    if rows % vec and rows >= OUT_ODD_MIN_ROWS and itemsize in OUT_ODD_KERNEL:
        return OUT_ODD_KERNEL[itemsize], (f"rule: rows {rows} is not a multiple of {vec} elements: output row "
                                          f"segments skewed onto 32-byte sectors")
    if itemsize in BYTES_MIN and rows * cols * itemsize >= BYTES_MIN[itemsize]:
        return BYTES_KERNEL, (f"rule: {itemsize}-byte rows not 16-byte aligned in {rows} x {cols}, "
                              f"{rows * cols * itemsize / 2**20:.1f} MiB: output rows from aligned words")
    if rows % vec and cols % vec and itemsize in BOTH_ODD_KERNEL:
        return BOTH_ODD_KERNEL[itemsize], f"rule: neither rows {rows} nor cols {cols} is a multiple of {vec} elements"
    return UNALIGNED_KERNEL[itemsize], f"rule: rows {rows} or cols {cols} not a multiple of {vec} elements"


def rule_config(rows: int, cols: int, itemsize: int):
    """The :class:`~autotune.kernel.config.Config` the rule's kernel is launched with where nothing is
    tuned, when the rule has one for the shape's class: :data:`BYTES_CONFIG` (but 1-byte elements from
    :data:`BYTES_LARGE` bytes), :data:`BOTH_ODD_CONFIG` (diagonal order where ``cols >= DIAGONAL_RATIO *
    rows``); else ``None`` (the kernel file's default)."""
    from autotune.kernel.config import Config

    kernel, _ = rule_kernel(rows, cols, itemsize)
    vec = max(1, 16 // itemsize)
    if kernel == BYTES_KERNEL:
        large = itemsize == 1 and rows * cols >= BYTES_LARGE
        return None if large else Config.of(kernel, BYTES_CONFIG[itemsize])
    if itemsize in BOTH_ODD_CONFIG and kernel == BOTH_ODD_KERNEL[itemsize] and rows % vec and cols % vec:
        return Config.of(kernel, {**BOTH_ODD_CONFIG[itemsize], "DIAGONAL": int(cols >= DIAGONAL_RATIO * rows)})
    return None
