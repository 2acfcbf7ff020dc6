"""Verification of a config's outputs: poisoned, guarded, compared with the kernel's check.

Before each verification run every checked output (role ``out``) is filled, guards
included, with a poison byte; an ``inout`` array gets its input values inside poisoned
guards; inputs and scratch arrays get their values. The kernel runs once; the guards must be
untouched and each checked output must match the reference under the kernel's comparison:

* ``exact``: bit for bit (compared as unsigned integers of the element size, so NaN
  payloads and signed zeros count). Run twice, with poisons ``0xA5`` and ``0x5A``: an
  element the kernel never writes equals the reference under at most one of them.
* ``tolerance``: poison ``0xFF`` (a NaN in every float type), every element finite and
  ``|got - expected| <= atol + rtol * |expected|``.
* ``module:function``: poison ``0xFF``, then ``function(got, expected, name=, dims=)``
  returns why it fails, or ``None``.

The device is reached only through ``drv`` (``pycuda.driver``, or a fake in the tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from autotune.errors import TrialFailed
from autotune.kernel.model import Check
from autotune.measure.buffers import GUARD_BYTES, ArgSet

__all__ = ["GUARD_BYTES", "EXACT_POISONS", "NAN_POISON", "verify_outputs", "compare", "load_inputs"]

EXACT_POISONS = (0xA5, 0x5A)
NAN_POISON = 0xFF
"""All-ones bytes: a NaN in float16, float32 and float64."""


def load_inputs(drv, args: ArgSet, roles: list[str], values: Mapping[int, np.ndarray], poison: int) -> None:
    """Fill ``args``: every guarded array with ``poison`` (guards included), then each array
    ``i`` in ``values`` (inputs, inouts, scratch) with its host values."""
    for i, role in enumerate(roles):
        if args.guarded[i]:
            drv.memset_d8(args.pointers[i] - GUARD_BYTES, poison, args.nbytes[i] + 2 * GUARD_BYTES)
        if i in values and args.nbytes[i]:
            drv.memcpy_htod(args.pointers[i], np.ascontiguousarray(values[i]))


def read_output(drv, args: ArgSet, i: int, poison: int, name: str) -> np.ndarray:
    """The bytes of guarded array ``i`` (uint8) after checking that its guards still hold ``poison``.

    Raises:
        TrialFailed: ``wrong_result`` naming the guard written.
    """
    host = np.empty(args.nbytes[i] + 2 * GUARD_BYTES, dtype=np.uint8)
    drv.memcpy_dtoh(host, args.pointers[i] - GUARD_BYTES)
    for side, guard in (("before", host[:GUARD_BYTES]), ("after", host[GUARD_BYTES + args.nbytes[i]:])):
        bad = np.flatnonzero(guard != poison)
        if bad.size:
            raise TrialFailed("wrong_result", f"wrote {bad.size} guard bytes {side} {name}")
    return host[GUARD_BYTES:GUARD_BYTES + args.nbytes[i]]


def run_once(drv, launch: Callable[[], None]) -> None:
    """Launch and wait; a failed launch becomes ``TrialFailed`` (``resources`` or ``launch_error``)."""
    try:
        launch()
        drv.Context.synchronize()
    except drv.LaunchError as exc:
        status = "resources" if "resources" in str(exc) else "launch_error"
        raise TrialFailed(status, str(exc).splitlines()[0]) from None


def verify_outputs(drv, launch: Callable[[], None], args: ArgSet, roles: list[str], names: list[str],
                   dtypes: list[np.dtype], values: Mapping[int, np.ndarray], expected: Mapping[int, np.ndarray],
                   check: Check, dims: Mapping[str, int], base: Path | None = None) -> None:
    """Run ``launch`` once per poison of ``check`` and compare every checked output.

    Args:
        args, roles, names, dtypes: the argument set the launch uses, and each array's role,
            name and element type.
        values: host values of the inputs, inouts and scratch arrays, by array index.
        expected: the reference of each checked output, by array index.
        base: folder a ``module:function`` comparison's ``.py`` path is relative to.

    Raises:
        TrialFailed: ``wrong_result`` (first mismatch, or a guard written), ``launch_error``
            or ``resources``.
    """
    for poison in EXACT_POISONS if check.exact else (NAN_POISON,):
        load_inputs(drv, args, roles, values, poison)
        run_once(drv, launch)
        for i, want in expected.items():
            raw = read_output(drv, args, i, poison, names[i])
            got = raw.view(dtypes[i]).reshape(want.shape)
            reason = compare(got, want.astype(dtypes[i]) if check.exact else want, check, names[i], dims, base)
            if reason:
                raise TrialFailed("wrong_result", reason)


def compare(got: np.ndarray, expected: np.ndarray, check: Check, name: str, dims: Mapping[str, int],
            base: Path | None = None) -> str | None:
    """Why ``got`` fails against ``expected`` under ``check``'s comparison, or ``None``."""
    if check.exact:
        a, b = got.view(f"u{got.dtype.itemsize}"), expected.view(f"u{expected.dtype.itemsize}")
        diff = a != b
        if not diff.any():
            return None
        at = np.unravel_index(int(np.argmax(diff)), diff.shape)
        return (f"{int(diff.sum())} of {diff.size} elements of {name} differ from the reference; first at "
                f"{list(map(int, at))}: got 0x{int(a[at]):x}, expected 0x{int(b[at]):x}")
    if check.compare == "tolerance":
        return _tolerance(got, expected, check.atol, check.rtol, name)
    from autotune.kernel.callables import load_callable

    return load_callable(check.compare, base)(got, expected, name=name, dims=dict(dims))


def _tolerance(got: np.ndarray, expected: np.ndarray, atol: float, rtol: float, name: str) -> str | None:
    g, e = got.astype(np.float64), expected.astype(np.float64)
    bad = ~np.isfinite(g)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), bad.shape)
        return f"{int(bad.sum())} of {bad.size} elements of {name} are not finite (unwritten?); first at {list(map(int, at))}"
    off = np.abs(g - e) > atol + rtol * np.abs(e)
    if not off.any():
        return None
    at = np.unravel_index(int(np.argmax(np.abs(g - e) - rtol * np.abs(e))), off.shape)
    return (f"{int(off.sum())} of {off.size} elements of {name} are off by more than atol={atol:g} + rtol={rtol:g}"
            f" * |expected|; worst at {list(map(int, at))}: got {g[at]!r}, expected {e[at]!r}")
