"""Which transpose kernel to launch for a shape: the stored op best, else a rule.

:func:`choose_transpose` answers ``(kernel name, LaunchConfig or None, why)`` for a ``rows x
cols`` matrix of a dtype on a device:

1. ``1 x N`` or ``N x 1``: ``"copy"`` (no config): the transpose is the same bytes; the caller
   does a device-to-device memcpy.
2. The stored op best: every catalog transpose (:func:`autotune.search.op.op_kernels`) is
   looked up through :func:`autotune.lookup`'s ladder (read-only); among those whose answer is
   the ``exact`` rung (tuned for this very device model, shape, dtype and toolchain, e.g. by
   ``autotune search --op transpose``), the fastest by its stored time. Only exact results are
   compared across kernels: which kernel wins depends on the exact row lengths (16-byte
   alignment), which a nearest shape does not share.
3. Otherwise the rule (:func:`rule_kernel`), with that kernel's config from the same ladder
   (a nearest shape, another device of the arch, or the default).

Answers are cached per process on the arguments: a warm call is one dict lookup under a lock
(no SQLAlchemy); :func:`clear_choices` forgets them (also call :func:`autotune.clear_cache`
after tuning in the same process, to re-read the database).
"""

from __future__ import annotations

import os
import threading

from autotune.errors import InvalidInputError
from autotune.store.opening import given_url
from autotune.kernel.dtypes import DTYPES, get_dtype

__all__ = ["ALIGNED_KERNEL", "UNALIGNED_KERNEL", "WIDE_KERNEL", "rule_kernel", "choose_transpose", "takes_views",
           "transpose_kernel_for", "clear_choices"]

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

MAX_CACHED = 65536
_lock = threading.Lock()
_cache: dict[tuple, tuple] = {}


def rule_kernel(rows: int, cols: int, itemsize: int) -> tuple[str, str]:
    """The rule's ``(kernel, why)`` without a stored result: ``copy`` for one row or column,
    :data:`WIDE_KERNEL` for 16-byte elements, :data:`ALIGNED_KERNEL` when ``rows`` and ``cols``
    are multiples of ``16 // itemsize`` elements (16-byte vectors on both sides), else
    :data:`UNALIGNED_KERNEL` of the item size."""
    if rows == 1 or cols == 1:
        return "copy", f"{rows} x {cols}: a transpose of one row or column is a copy of its bytes"
    if itemsize >= 16:
        return WIDE_KERNEL, f"rule: {itemsize}-byte elements are moved one per thread, column reads, row writes"
    vec = max(1, 16 // itemsize)
    if rows % vec == 0 and cols % vec == 0:
        return ALIGNED_KERNEL, f"rule: rows and cols are multiples of {vec} elements (16-byte rows)"
    return UNALIGNED_KERNEL[itemsize], f"rule: rows {rows} or cols {cols} not a multiple of {vec} elements"


def clear_choices() -> None:
    """Forget cached answers."""
    with _lock:
        _cache.clear()


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
    from autotune.search.op import op_kernels

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
