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
3. Otherwise the rule (:func:`autotune.runtime.transpose.rule.rule_kernel`, re-exported here), with
   that kernel's config from the same ladder (a nearest shape, another device of the arch, or the
   default), or the rule's own config where it has one (:func:`~autotune.runtime.transpose.rule.rule_config`).

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

from autotune.runtime.transpose.rule import (  # the rule, re-exported: op_choice.rule_kernel etc.
    ALIGNED_KERNEL, BOTH_ODD_CONFIG, BOTH_ODD_KERNEL, BYTES_CONFIG, BYTES_KERNEL, BYTES_LARGE, BYTES_MIN,
    DIAGONAL_RATIO, OUT_ODD_KERNEL, OUT_ODD_MIN_ROWS, SHORT_OUTPUT_KERNEL, SKINNY_KERNEL, SKINNY_LINE, SMALL_KERNEL, SMALL_MAX, UNALIGNED_KERNEL, WIDE_KERNEL,
    rule_config, rule_kernel)

__all__ = ["choose_transpose", "takes_views", "transpose_kernel_for", "clear_choices", "rule_kernel", "rule_config",
           "SMALL_KERNEL", "SMALL_MAX", "ALIGNED_KERNEL", "UNALIGNED_KERNEL", "WIDE_KERNEL", "SKINNY_KERNEL",
           "SKINNY_LINE", "SHORT_OUTPUT_KERNEL", "OUT_ODD_KERNEL", "OUT_ODD_MIN_ROWS", "BYTES_KERNEL", "BYTES_MIN",
           "BYTES_LARGE", "BYTES_CONFIG", "BOTH_ODD_KERNEL", "BOTH_ODD_CONFIG", "DIAGONAL_RATIO"]

MAX_CACHED = 65536
_lock = threading.Lock()
_cache: dict[tuple, tuple] = {}


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
