"""What each kind of kernel computes: its problem shape, how its result is checked, and
its figure of merit. One strategy object per op family, looked up by kernel (:func:`problem_of`),
so the search, store, best and lookup path stays one path for every kernel.

=============  =====================  ==========================================  ==============
family         kernels (``op``)       check                                       figure
=============  =====================  ==========================================  ==============
``move``       transpose, copy        bit-exact against NumPy (:mod:`.verify`)     GB/s
``matmul``     matmul                 relative error against float64 NumPy        GFLOP/s
=============  =====================  ==========================================  ==============

A problem's shape is ``(rows, cols, depth)``: ``rows x cols`` input and ``depth = 0`` for
the moves; ``M, N, K`` of ``C[M,N] = A[M,K] @ B[K,N]`` for the matrix products.

**Matmul check.** The inputs are fresh uniform(-1, 1) values of the kernel's dtype; C is
poisoned with all-ones bytes (NaN in float32 and float64), so an element the kernel never
writes stays NaN and fails the check at any size. The result must be finite and its
relative Frobenius error ``||C - C_ref|| / ||C_ref||`` against the float64 NumPy product of
the same inputs at most :func:`tolerance` ``= 8 * sqrt(K) * u`` (``u`` the unit roundoff:
2**-24 for float32, 2**-53 for float64). A sum of K products in working precision has a
rounding error that grows like ``sqrt(K) * u`` for random data (probabilistic error analysis,
Higham and Mary, 2019; the worst-case bound is ``K * u``); the factor 8 leaves a margin of
about ten over a plain sequential sum. At K = 4096 float32 that is 3.1e-5: one element of a
4096 x 4096 C off by a typical value alone gives an error of 1/4096 = 2.4e-4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autotune.errors import TrialFailed

__all__ = ["NAN_POISON", "PROBLEMS", "TOLERANCE_FACTOR", "Problem", "check_product", "format_shape",
           "matmul_gbps", "matmul_gflops", "problem_of", "relative_error", "tolerance"]

TOLERANCE_FACTOR = 8.0
"""``c`` of the matmul tolerance ``c * sqrt(K) * u``."""
NAN_POISON = 0xFF
"""Byte the matmul output is poisoned with: all-ones bytes are a NaN in float32 and float64."""


def tolerance(dtype: np.dtype | str, k: int) -> float:
    """Largest relative Frobenius error accepted for a product over ``k`` terms in ``dtype``."""
    unit_roundoff = float(np.finfo(np.dtype(dtype)).eps) / 2
    return TOLERANCE_FACTOR * math.sqrt(max(k, 1)) * unit_roundoff


def relative_error(got: np.ndarray, reference: np.ndarray) -> float:
    """``||got - reference||_F / ||reference||_F`` computed in float64 (``nan`` if ``got``
    holds NaN; ``||got||_F`` when the reference is all zeros)."""
    ref = reference.astype(np.float64, copy=False)
    diff = np.linalg.norm(got.astype(np.float64) - ref)
    scale = np.linalg.norm(ref)
    return float(diff / scale) if scale > 0 else float(diff)


def check_product(got: np.ndarray, reference: np.ndarray, k: int) -> float:
    """Check a product ``got`` (M x N, float32 or float64) against its float64 ``reference``.

    Returns:
        The relative Frobenius error.

    Raises:
        TrialFailed: ``wrong_result`` when an element is not finite (unwritten: still the NaN
            poison) or the relative error exceeds :func:`tolerance` for ``k`` terms.
    """
    bad = ~np.isfinite(got)
    if bad.any():
        r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
        raise TrialFailed("wrong_result", f"{int(bad.sum())} of {bad.size} elements are not finite (unwritten?); "
                                          f"first at [{r}, {c}]")
    error, limit = relative_error(got, reference), tolerance(got.dtype, k)
    if not error <= limit:
        worst = np.abs(got.astype(np.float64) - reference)
        r, c = np.unravel_index(int(np.argmax(worst)), worst.shape)
        raise TrialFailed("wrong_result", f"relative error {error:.3g} > tolerance {limit:.3g} (K={k}); worst at "
                                          f"[{r}, {c}]: got {got[r, c]!r}, expected {reference[r, c]!r}")
    return error


def matmul_gflops(m: int, n: int, k: int, ms: float) -> float:
    """``2 * M * N * K`` flops in ``ms`` milliseconds, in GFLOP/s (1e9 per second)."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e9


def matmul_gbps(m: int, n: int, k: int, itemsize: int, ms: float) -> float:
    """Minimum traffic of a product (A and B read once, C written once) per time, GB/s.

    Not a bandwidth the kernel achieves; stored as ``gbps`` so that every stored result
    orders by one column (for one key, higher is faster, like GFLOP/s).
    """
    return (m * k + k * n + m * n) * itemsize / (ms * 1e-3) / 1e9


def format_shape(rows: int, cols: int, depth: int = 0) -> str:
    """``RxC`` for a move, ``MxNxK`` for a product."""
    return f"{rows}x{cols}" + (f"x{depth}" if depth else "")


@dataclass(frozen=True)
class Problem:
    """The strategy of one op family.

    Attributes:
        family: ``move`` or ``matmul``.
        unit: unit of the figure of merit shown to users (``GB/s`` or ``GFLOP/s``).
        dims: names of the shape's dimensions on the command line.
    """

    family: str
    unit: str
    dims: tuple[str, ...]

    @property
    def is_matmul(self) -> bool:
        return self.family == "matmul"

    def figure(self, rows: int, cols: int, depth: int, itemsize: int, ms: float) -> float:
        """The figure of merit of ``ms`` per launch: GB/s (``2 * rows * cols * itemsize``
        bytes moved) or GFLOP/s (``2 * M * N * K``)."""
        if self.is_matmul:
            return matmul_gflops(rows, cols, depth, ms)
        return 2.0 * rows * cols * itemsize / (ms * 1e-3) / 1e9

    def of_gbps(self, gbps: float, rows: int, cols: int, depth: int, itemsize: int) -> float:
        """The figure of merit of a stored ``gbps`` (itself for a move; for a product, the
        GFLOP/s of the same time, as ``gbps`` is :func:`matmul_gbps`)."""
        if not self.is_matmul:
            return gbps
        return gbps * matmul_gflops(rows, cols, depth, 1.0) / matmul_gbps(rows, cols, depth, itemsize, 1.0)


PROBLEMS = {"move": Problem("move", "GB/s", ("rows", "cols")),
            "matmul": Problem("matmul", "GFLOP/s", ("M", "N", "K"))}
"""The families by name."""


def problem_of(kernel) -> Problem:
    """The family of a catalog kernel (a :class:`~autotune.kernel.catalog.Kernel` or its name)."""
    from autotune.kernel.catalog import get_kernel

    k = get_kernel(kernel) if isinstance(kernel, str) else kernel
    return PROBLEMS["matmul" if k.op == "matmul" else "move"]
