"""A kernel's figures of merit for a time: GB/s of its objective's bytes, GFLOP/s of its flops.

The headline figure of a kernel is GFLOP/s when its objective counts flops, else GB/s when it
counts bytes, else the time itself (ms).
"""

from __future__ import annotations

from collections.abc import Mapping

from autotune.kernel.dtypes import DType, get_dtype
from autotune.kernel.model import Kernel

__all__ = ["unit", "figure", "headline"]


def unit(kernel: Kernel) -> str:
    """``GFLOP/s``, ``GB/s`` or ``ms``: the unit of :func:`figure`."""
    return "GFLOP/s" if kernel.objective.flops else "GB/s" if kernel.objective.bytes else "ms"


def figure(kernel: Kernel, dims: Mapping[str, int], dtype: DType | str, ms: float) -> float:
    """The headline figure of ``ms`` per launch on ``dims`` (higher is better except for ``ms``)."""
    dt = get_dtype(dtype)
    which = "flops" if kernel.objective.flops else "bytes" if kernel.objective.bytes else None
    if which is None:
        return ms
    return kernel.figure(which, dims, dt) / (ms * 1e-3) / 1e9


def headline(kernel: Kernel, dims: Mapping[str, int], dtype: DType | str, ms: float) -> str:
    """``"2873 GB/s"``, ``"24447 GFLOP/s"`` or ``"0.1234 ms"``."""
    u = unit(kernel)
    value = figure(kernel, dims, dtype, ms)
    return f"{value:.4f} ms" if u == "ms" else f"{value:.0f} {u}"
