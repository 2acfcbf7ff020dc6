"""Which transpose kernel to launch for a shape: the stored op best, else a rule.

:func:`choose_transpose` answers ``(kernel name, LaunchConfig or None, why)`` for a ``rows x
cols`` matrix of a dtype on a device:

1. ``1 x N`` or ``N x 1``: ``"copy"`` (no config): the transpose is the same bytes; the caller
   does a device-to-device memcpy.
2. The stored op best: every catalog transpose (:func:`autotune.kernel.ops.op_kernels`) is
   looked up through :func:`autotune.lookup`'s ladder (read-only); among those whose answer is
   the ``exact`` rung (tuned for this very device model, shape, dtype and toolchain, e.g. by
   ``autotune search --op transpose``), the fastest by its stored time. Only exact results are
   compared across kernels: which kernel wins depends on the exact row lengths (16-byte
   alignment), which a nearest shape does not share.
3. Otherwise the rule (:func:`rule_kernel`), with that kernel's config from the same ladder
   (a nearest shape, another device of the arch, or the default).

Answers are cached per process on the arguments: a warm call is one dict lookup under a lock
(no SQLAlchemy); :func:`autotune.clear_cache` forgets them with every other cache (call it
after tuning in the same process, to re-read the database).
"""

from __future__ import annotations

import threading
from dataclasses import replace

from autotune.base import caches
from autotune.errors import InvalidInputError
from autotune.store.urls import given_url
from autotune.kernel.dtypes import DTYPES, get_dtype

__all__ = ["BOTH_ODD_CONFIG", "rule_config", "SMALL_KERNEL", "SMALL_MAX", "ALIGNED_KERNEL", "UNALIGNED_KERNEL", "WIDE_KERNEL", "SKINNY_KERNEL", "SKINNY_LINE", "BOTH_ODD_KERNEL",
           "rule_kernel", "choose_transpose", "takes_views",
           "transpose_kernel_for", "clear_choices"]

SMALL_KERNEL = "naive_col"
"""The rule's kernel for small matrices of 2- to 8-byte elements, both sides at most :data:`SMALL_MAX`
(a batch of them above all): column reads, row writes, no shared memory. A 33 x 65 matrix fills 26 %
of two 64 x 64 tiles, and a matrix of a few KiB stays in the caches between a column read and the
next, as in PyTorch's elementwise copy. H100, ratio to PyTorch's ``x.mT.contiguous()`` at default
configs, L2-resident batches (``..._2026-11-24_..._transpose_small_batches.md``): float32 1000 x 33 x 65
0.88 (the rule's smem_vec 0.61), 4096 x 16 x 16 0.87 (0.44), 100 x 100 0.99 (0.93), 150 x 150 0.98
(0.77); float64 2000 x 20 x 30 1.07, 1000 x 33 x 65 0.97; float16 1000 x 33 x 65 0.75 (smem_pad
0.66). 1-byte elements keep :data:`SKINNY_KERNEL` (int8 1000 x 33 x 65: skinny 0.91, naive_col 0.81);
float16 256 x 127 x 129 stays with the tiles (smem_pad 2.58, naive_col 2.36), hence 100."""

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

BOTH_ODD_KERNEL = {2: "smem_pad", 4: "smem_pad"}
"""The rule's kernel per item size when neither ``rows`` nor ``cols`` is a multiple of 16 / itemsize
(rows misaligned on both sides; the other item sizes take :data:`UNALIGNED_KERNEL`), launched with
:data:`BOTH_ODD_CONFIG` where nothing is tuned (:func:`rule_config`): the classic padded tile, but
64 x 64. H100, % of memcpy, every config verified and timed in one run
(``benchmarks/results/2026-11-24_NVIDIA_H100_80GB_HBM3_transpose_odd_configs.txt``), 4 shapes the
rule was made from and 4 held out (6007x3001, 999x12347, 7777x5555, 1001x30001). 4-byte elements:
smem_pad TILE_DIM=64, BLOCK_ROWS=16 was ahead of smem_vec's element path (the rule before) on all 8,
by 1.5 to 10 points: float32 12345x6789 75.5 (smem_vec 68.7), 4093x4099 86.7 (76.9), 3001x7919 79.7
(74.1), 4099x2053 89.5 (83.1); held out 85.3 (76.1), 76.4 (73.8), 78.6 (70.7), 68.6 (67.1). An op
search of 30 configs at 12345x6789 stored the same config (76.8 % in the peers table;
``..._transpose_op_search_issue24.txt``). 2-byte elements: TILE_DIM=64, BLOCK_ROWS=8 was ahead of the
classic 32 x 8 (the rule before) on 7 of 8 float16 shapes: 60.7 (54.1), 70.5 (67.2), 64.6 (59.4),
80.7 (79.0); held out 68.6 (65.2), 67.3 (63.2), 62.7 (56.7), 54.7 (49.5). 8-byte elements: smem_pad
64 x 16 and smem_vec_realign are level (float64 12345x6789 87.2 against 86.4, 6007x3001 92.3 against
91.4), so :data:`UNALIGNED_KERNEL` stays. ncu (``..._transpose_ncu_issue24.txt``): smem_vec's element
path ran with 61 % of warps active (48 registers a thread, those of its vector path) and DRAM at 62 %
of peak, its stalls on global loads; the 64 x 16 tile keeps 2 blocks of 1024 threads on each SM."""

BOTH_ODD_CONFIG = {2: {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 64},
                   4: {"BLOCK_ROWS": 16, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 64}}
"""The config :data:`BOTH_ODD_KERNEL` is launched with where nothing is tuned, per item size."""

MAX_CACHED = 65536
_lock = threading.Lock()
_cache: dict[tuple, tuple] = {}


def rule_kernel(rows: int, cols: int, itemsize: int) -> tuple[str, str]:
    """The rule's ``(kernel, why)`` without a stored result: ``copy`` for one row or column,
    :data:`WIDE_KERNEL` for 16-byte elements, :data:`SMALL_KERNEL` for a small matrix of 2- to 8-byte
    elements (both sides at most :data:`SMALL_MAX`), :data:`ALIGNED_KERNEL` when ``rows`` and ``cols``
    are multiples of ``16 // itemsize`` elements (16-byte vectors on both sides),
    :data:`SKINNY_KERNEL` for a side of fewer than :data:`SKINNY_LINE` bytes, :data:`BOTH_ODD_KERNEL`
    of the item size when neither is a multiple, else :data:`UNALIGNED_KERNEL` of the item size."""
    if rows == 1 or cols == 1:
        return "copy", f"{rows} x {cols}: a transpose of one row or column is a copy of its bytes"
    if itemsize >= 16:
        return WIDE_KERNEL, f"rule: {itemsize}-byte elements are moved one per thread, column reads, row writes"
    if itemsize >= 2 and rows <= SMALL_MAX and cols <= SMALL_MAX:
        return SMALL_KERNEL, f"rule: {rows} x {cols} is small (sides <= {SMALL_MAX}): column reads, row writes"
    vec = max(1, 16 // itemsize)
    if rows % vec == 0 and cols % vec == 0:
        return ALIGNED_KERNEL, f"rule: rows and cols are multiples of {vec} elements (16-byte rows)"
    if min(rows, cols) * itemsize < SKINNY_LINE:
        return SKINNY_KERNEL, (f"rule: {rows} x {cols} is skinny (a side of < {SKINNY_LINE} bytes, rows not "
                               f"16-byte aligned): chunks of whole short rows")
    if rows % vec and cols % vec and itemsize in BOTH_ODD_KERNEL:
        return BOTH_ODD_KERNEL[itemsize], f"rule: neither rows {rows} nor cols {cols} is a multiple of {vec} elements"
    return UNALIGNED_KERNEL[itemsize], f"rule: rows {rows} or cols {cols} not a multiple of {vec} elements"


def rule_config(rows: int, cols: int, itemsize: int):
    """The :class:`~autotune.kernel.config.Config` the rule's kernel is launched with where nothing is
    tuned, when the rule has one for the shape's class (:data:`BOTH_ODD_CONFIG`: rows misaligned on
    both sides, 2- and 4-byte elements); else ``None`` (the kernel file's default)."""
    from autotune.kernel.config import Config

    kernel, _ = rule_kernel(rows, cols, itemsize)
    vec = max(1, 16 // itemsize)
    if itemsize in BOTH_ODD_CONFIG and kernel == BOTH_ODD_KERNEL[itemsize] and rows % vec and cols % vec:
        return Config.of(kernel, BOTH_ODD_CONFIG[itemsize])
    return None


def clear_choices() -> None:
    """Forget cached answers (registered with :mod:`autotune.base.caches`: ``autotune.clear_cache()``
    calls it)."""
    with _lock:
        _cache.clear()


caches.register("op_choice", clear_choices)


def choose_transpose(rows: int, cols: int, dtype, device: int | None = None, db: str | None = None):
    """The kernel, its launch config and why, for transposing a ``rows x cols`` matrix.

    Args:
        rows, cols: the input's shape, integers >= 1.
        dtype: a dtype of :data:`autotune.kernel.dtypes.DTYPES` (name or NumPy dtype).
        device: CUDA ordinal (``None``: 0) or a :class:`~autotune.measure.device.DeviceInfo`.
        db: results database URL (default ``AUTOTUNE_DB`` or the platformdirs default).

    Returns:
        ``(kernel_name, launch_config, why)``: ``("copy", None, why)`` for one row or column;
        otherwise a catalog transpose's name and its :class:`~autotune.runtime.lookup.LaunchConfig`,
        ``why`` one line (which rung, which kernels were compared or which rule applied).

    Raises:
        InvalidInputError: rows or cols not an integer >= 1, a dtype not in ``DTYPES``, a bad device.
        GPUUnavailableError, StoreError: as :func:`autotune.lookup` (not for ``copy``).
    """
    for name, value in (("rows", rows), ("cols", cols)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInputError(f"{name} {value!r} is not allowed; give an integer >= 1")
    ck = (rows, cols, dtype, device, given_url(db))
    with _lock:
        hit = _cache.get(ck)
    if hit is not None:
        return hit
    answer = _choose(rows, cols, dtype, 0 if device is None else device, db)
    with _lock:
        if len(_cache) >= MAX_CACHED:
            _cache.clear()
        return _cache.setdefault(ck, answer)


def _choose(rows: int, cols: int, dtype, device, db):
    """The cold path: one lookup per catalog transpose (each cached by lookup itself)."""
    from autotune.runtime.lookup import lookup
    from autotune.kernel.ops import op_kernels

    dt = get_dtype(dtype)
    if dt.name not in DTYPES:
        raise InvalidInputError(f"dtype {dt.name!r} is not allowed; allowed: {', '.join(DTYPES)}")
    kernel, why = rule_kernel(rows, cols, dt.itemsize)
    if kernel == "copy":
        return "copy", None, why
    answers = {k.name: lookup(k, (rows, cols), dt.name, device=device, db=db) for k in op_kernels("transpose", dt)}
    exact = sorted((a.median_ms, name) for name, a in answers.items() if a.rung == "exact" and a.median_ms)
    if exact:
        ms, name = exact[0]
        return name, answers[name], (f"stored op best: the fastest of {len(exact)} kernel"
                                     f"{'s' if len(exact) > 1 else ''} tuned for this exact key ({ms:.4f} ms)")
    chosen = answers[kernel]
    config = rule_config(rows, cols, dt.itemsize)
    if config is not None and chosen.rung == "default" and config != chosen.config:
        chosen = replace(chosen, config=config, note=f"{chosen.note}; the rule's config {config.key} instead")
    return kernel, chosen, f"{why}; no kernel tuned for this exact key; config: {chosen.rung} ({chosen.note})"


def takes_views(kernel) -> bool:
    """Whether a transpose :class:`~autotune.kernel.model.Kernel` reads row-pitched views and
    batches: it has the scalar arguments ``ld`` (row pitch, elements) and ``batch_stride``."""
    names = {a.name for a in kernel.args}
    return {"ld", "batch_stride"} <= names


def transpose_kernel_for(rows: int, cols: int, dtype, *, views: bool, device=None, db: str | None = None):
    """The kernel ``autotune.transpose(x)`` launches when no ``kernel=`` is given: ``(name, why)``.

    :func:`choose_transpose`'s answer, unless the input is a row-pitched view or a batch
    (``views``) and that kernel takes neither (:func:`takes_views`; every catalog transpose
    takes both): then :data:`ALIGNED_KERNEL`, which reads both. A ``copy`` answer
    for a ``1 x N`` / ``N x 1`` input that is not contiguous also goes to :data:`ALIGNED_KERNEL`.

    Raises:
        As :func:`choose_transpose`.
    """
    from autotune.kernel.catalog import get_kernel

    name, _, why = choose_transpose(rows, cols, dtype, device=device, db=db)
    if name == "copy":
        return ALIGNED_KERNEL, f"{why}, but its elements are not contiguous: {ALIGNED_KERNEL} reads the view"
    if views and not takes_views(get_kernel(name)):
        return ALIGNED_KERNEL, f"{why}; {name} takes no row pitch or batch: {ALIGNED_KERNEL} for this view or batch"
    return name, why
