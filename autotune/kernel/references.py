"""Python references and comparisons of the catalog's kernels (``[check]`` of ``kernels/*.toml``).

A reference is called with every kernel argument by name (NumPy arrays, scalars) and returns
what the kernel must write; a comparison ``(got, expected, *, name, dims) -> str | None``
returns why ``got`` fails, or ``None``.

**Matrix products** (``matmul_*``): the reference is the float64 NumPy product of the same
inputs; the result must be finite and its relative Frobenius error
``||C - C_ref|| / ||C_ref||`` at most :func:`tolerance` ``= 8 * sqrt(K) * u`` (``u`` the unit
roundoff: 2**-24 for float32, 2**-53 for float64). A sum of K products in working precision
has a rounding error that grows like ``sqrt(K) * u`` for random data (probabilistic error
analysis, Higham and Mary, 2019; the worst-case bound is ``K * u``); the factor 8 leaves a
margin of about ten over a plain sequential sum. At K = 4096 float32 that is 3.1e-5: one
element of a 4096 x 4096 C off by a typical value alone gives an error of 1/4096 = 2.4e-4.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TOLERANCE_FACTOR", "transpose", "copy", "matmul", "product_tolerance", "tolerance", "relative_error",
           "tile_of_block"]

TOLERANCE_FACTOR = 8.0
"""``c`` of the matmul tolerance ``c * sqrt(K) * u``."""


TRANSPOSE_BLOCK = (32, 2048)
"""Rows x columns of ``src`` copied at a time by :func:`transpose`."""


def transpose(*, src: np.ndarray, **_) -> np.ndarray:
    """``src.T`` (cols x rows), C-contiguous. A 2-D ``src`` is copied in blocks of
    :data:`TRANSPOSE_BLOCK` that stay in the CPU's cache (4x faster than NumPy's strided
    copy at 8192^2 float32)."""
    if src.ndim != 2:
        return np.ascontiguousarray(src.T)
    rows, cols = src.shape
    out = np.empty((cols, rows), src.dtype)
    br, bc = TRANSPOSE_BLOCK
    for i in range(0, rows, br):
        for j in range(0, cols, bc):
            out[j:j + bc, i:i + br] = src[i:i + br, j:j + bc].T
    return out


def copy(*, src: np.ndarray, **_) -> np.ndarray:
    """``src`` itself (rows x cols)."""
    return np.ascontiguousarray(src)


def matmul(*, A: np.ndarray, B: np.ndarray, **_) -> np.ndarray:
    """``A @ B`` computed in float64 (M x N)."""
    return np.matmul(A.astype(np.float64), B.astype(np.float64))


def tolerance(dtype: np.dtype | str, k: int) -> float:
    """Largest relative Frobenius error accepted for a product over ``k`` terms in ``dtype``."""
    unit_roundoff = float(np.finfo(np.dtype(dtype)).eps) / 2
    return TOLERANCE_FACTOR * math.sqrt(max(k, 1)) * unit_roundoff


def relative_error(got: np.ndarray, reference: np.ndarray) -> float:
    """``||got - reference||_F / ||reference||_F`` in float64 (``||got||_F`` for a zero reference)."""
    ref = reference.astype(np.float64, copy=False)
    diff = np.linalg.norm(got.astype(np.float64) - ref)
    scale = np.linalg.norm(ref)
    return float(diff / scale) if scale > 0 else float(diff)


def product_tolerance(got: np.ndarray, expected: np.ndarray, *, name: str, dims: dict) -> str | None:
    """Why the product ``got`` (M x N, float32 or float64) fails against its float64
    ``expected``: an element not finite (unwritten: still the NaN poison), or a relative
    error above :func:`tolerance` for ``dims["k"]`` terms; ``None`` when it passes."""
    bad = ~np.isfinite(got)
    if bad.any():
        r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
        return f"{int(bad.sum())} of {bad.size} elements of {name} are not finite (unwritten?); first at [{r}, {c}]"
    k = dims["k"]
    error, limit = relative_error(got, expected), tolerance(got.dtype, k)
    if error <= limit:
        return None
    worst = np.abs(got.astype(np.float64) - expected)
    r, c = np.unravel_index(int(np.argmax(worst)), worst.shape)
    return (f"relative error {error:.3g} > tolerance {limit:.3g} (K={k}); worst at [{r}, {c}]: "
            f"got {got[r, c]!r}, expected {expected[r, c]!r}")


def _product_bound(dtype: np.dtype | str, dims: dict) -> float:
    """:func:`product_tolerance`'s bound on the relative Frobenius error: :func:`tolerance` for
    ``dims["k"]`` terms."""
    return tolerance(dtype, dims["k"])


# The verification computes the relative error on the device and calls the function only when
# the device's figure fails or is within a hair of the bound (autotune/measure/verify.py).
product_tolerance.relative_norm = _product_bound  # type: ignore[attr-defined]


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
