"""Bit-exact verification of a kernel's output against NumPy.

The output buffer has ``GUARD_BYTES`` of guard on each side. It is poisoned with ``0xA5``,
the kernel runs once on the given input, and the output must equal the NumPy reference bit
for bit (compared as unsigned integers of the element size, so NaN payloads and signed
zeros count) and the guards must be untouched. Then again with poison ``0x5A``: an element
the kernel never writes equals the reference under at most one of the two poisons, so it
cannot pass both.
"""

from __future__ import annotations

import numpy as np

from autotune.errors import TrialFailed

__all__ = ["GUARD_BYTES", "POISONS", "poisoned_run", "verify"]

GUARD_BYTES = 1 << 16
POISONS = (0xA5, 0x5A)


def verify(drv, launch, a: np.ndarray, reference: np.ndarray, d_in, d_out_full) -> None:
    """Copy ``a`` to ``d_in``, run ``launch`` into the poisoned ``d_out_full`` (guards
    included), and compare with ``reference``, once per poison.

    Args:
        drv: ``pycuda.driver``.
        launch: runs the kernel once, reading ``d_in`` and writing ``d_out_full + GUARD_BYTES``.
        a: the input (2-D, the kernel's dtype); ``reference``: what it must produce.

    Raises:
        TrialFailed: ``wrong_result`` (first mismatch, or guard bytes written), or
            ``launch_error``/``resources`` if the launch fails.
    """
    n = reference.nbytes
    expected = reference.view(f"u{reference.dtype.itemsize}")
    drv.memcpy_htod(d_in, a)
    for poison in POISONS:
        got = poisoned_run(drv, launch, d_out_full, n, poison).view(expected.dtype).reshape(expected.shape)
        _check_equal(got, expected)


def poisoned_run(drv, launch, d_out_full, n: int, poison: int) -> np.ndarray:
    """Fill ``d_out_full`` (``n`` output bytes and the guards) with byte ``poison``, run
    ``launch`` once, and return the ``n`` output bytes (uint8) after checking the guards.

    Raises:
        TrialFailed: ``wrong_result`` (guard bytes written), ``launch_error`` or ``resources``.
    """
    host = np.empty(n + 2 * GUARD_BYTES, dtype=np.uint8)
    drv.memset_d8(d_out_full, poison, host.size)
    _run_once(drv, launch)
    drv.memcpy_dtoh(host, d_out_full)
    _check_guards(host, poison, n)
    return host[GUARD_BYTES:GUARD_BYTES + n]


def _run_once(drv, launch) -> None:
    try:
        launch()
        drv.Context.synchronize()
    except drv.LaunchError as exc:
        status = "resources" if "resources" in str(exc) else "launch_error"
        raise TrialFailed(status, str(exc).splitlines()[0]) from None


def _check_guards(host: np.ndarray, poison: int, n: int) -> None:
    for name, guard in (("before", host[:GUARD_BYTES]), ("after", host[GUARD_BYTES + n:])):
        bad = np.flatnonzero(guard != poison)
        if bad.size:
            raise TrialFailed("wrong_result", f"wrote {bad.size} guard bytes {name} the output buffer")


def _check_equal(got: np.ndarray, expected: np.ndarray) -> None:
    diff = got != expected
    if diff.any():
        count = int(diff.sum())
        r, c = np.unravel_index(int(np.argmax(diff)), diff.shape)
        raise TrialFailed("wrong_result", f"{count} of {diff.size} elements differ from NumPy; first at "
                          f"[{r}, {c}]: got 0x{int(got[r, c]):x}, expected 0x{int(expected[r, c]):x}")
