"""An array's ``reset`` as the CUDA memsets that do it (no device needed to plan them).

``reset = "zeros"`` (or a value) on an ``out``, ``inout`` or ``scratch`` argument sets every
element to that value before every launch of the check, every timed launch, and every launch of
:func:`autotune.launcher` called with ``reset=True``. The fill is done by the driver's memsets,
queued on the launch's stream (so it is captured by ``torch.cuda.graph`` too): the element's bytes
repeated every 1, 2 or 4 bytes take one ``cuMemsetD8/D16/D32Async``; an 8- or 16-byte element
whose 4-byte words differ (e.g. float64 1.0) takes one strided ``cuMemsetD2D32Async`` per word
(pitch: the element size, one word wide, one row per element).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Fill", "fill_ops"]


class Fill(NamedTuple):
    """One memset: ``kind`` ``d8``, ``d16`` or ``d32`` sets ``count`` units of ``word`` from
    byte ``offset``; ``d2d32`` sets ``count`` 4-byte words ``pitch`` bytes apart from ``offset``."""

    kind: str
    offset: int
    word: int
    count: int
    pitch: int = 0


def fill_ops(value: int | float, dtype: np.dtype, nbytes: int) -> list[Fill]:
    """The memsets setting ``nbytes`` of elements of ``dtype`` to ``value`` (see module doc).

    Raises:
        ValueError: ``value`` is not a value of ``dtype`` (the loader refuses such files).
    """
    dtype = np.dtype(dtype)
    element = np.array(value).astype(dtype)
    if dtype.kind in "iu" and element != value:
        raise ValueError(f"{value!r} is not a value of {dtype}")
    raw = element.tobytes()
    size = len(raw)
    if nbytes == 0:
        return []
    for unit, kind in ((1, "d8"), (2, "d16"), (4, "d32")):
        if size % unit == 0 and raw == raw[:unit] * (size // unit):
            return [Fill(kind, 0, int.from_bytes(raw[:unit], "little"), nbytes // unit)]
    words = [int.from_bytes(raw[j:j + 4], "little") for j in range(0, size, 4)]
    return [Fill("d2d32", 4 * j, w, nbytes // size, size) for j, w in enumerate(words)]
