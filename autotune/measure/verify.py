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
  returns why it fails, or ``None``. A function that bounds the relative Frobenius error
  ``||got - expected|| / ||expected||`` may say so by an attribute ``relative_norm(dtype, dims)``
  giving the bound (``autotune.kernel.references:product_tolerance`` does): the error is then
  computed on the device, and the function runs on the host only when the device finds an
  element not finite or an error within a hair (:data:`NORM_MARGIN`) of the bound or above it,
  to decide and to word the failure.

A benchmark prepares one :class:`Verifier` per problem (once per measuring process): the
inputs and the reference stay on the device and the comparisons above run there
(:mod:`autotune.measure.device_compare`); a ``module:function`` comparison is Python and runs
on the host, on the output copied back, unless it declares a ``relative_norm``. The messages are
the same either way.

The device is reached only through ``drv`` (the CUDA backend, :mod:`autotune.measure.backends`, or a
fake in the tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from autotune.errors import TrialFailed
from autotune.kernel.model import Check
from autotune.measure.buffers import GUARD_BYTES, ArgSet
from autotune.measure.device_compare import NORM_TYPES, TOLERANCE_TYPES

__all__ = ["GUARD_BYTES", "EXACT_POISONS", "NAN_POISON", "NORM_MARGIN", "Verifier", "verify_outputs", "compare",
           "load_inputs", "relative_norm_of"]

EXACT_POISONS = (0xA5, 0x5A)
NAN_POISON = 0xFF
"""All-ones bytes: a NaN in float16, float32 and float64."""
NORM_MARGIN = 1e-6
"""A relative error the device computes within this fraction of its bound is left to the host's
function to decide (the device's sums are added in the order their atomics land)."""


def relative_norm_of(check: Check, base: Path | None = None) -> Callable | None:
    """The ``relative_norm(dtype, dims) -> bound`` of ``check``'s ``module:function`` comparison,
    if the function declares one (else ``None``; ``exact`` and ``tolerance``: ``None``).

    Raises:
        KernelFileError: the function cannot be loaded.
    """
    if check.exact or check.compare == "tolerance":
        return None
    from autotune.kernel.callables import load_callable

    return getattr(load_callable(check.compare, base), "relative_norm", None)


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
        drv.synchronize()
    except drv.LaunchError as exc:
        status = "resources" if "resources" in str(exc) else "launch_error"
        raise TrialFailed(status, str(exc).splitlines()[0]) from None


class Verifier:
    """Verification of configs of one problem, prepared once (per benchmark, i.e. per measuring
    process): the input values and the reference stay on the device.

    ``values`` are copied once into device buffers of their own (pristine inputs) and restored
    into the argument set with a device-to-device copy before every verification launch. The
    reference of each checked output is uploaded once (exact: as the output's dtype;
    tolerance: as float64) and compared on the device by ``comparer``
    (:mod:`autotune.measure.device_compare`): guards, then elements; only a count and an index
    come back, and on a failure what the message needs (one element, or for a tolerance
    failure the output, to name its worst element). Compared on the host, as before: a
    ``module:function`` comparison (it is Python), any output when ``comparer`` is ``None``,
    and an array the device has no room for (its buffer's allocation fails).

    Args:
        roles, names, dtypes: each array's role, name and NumPy element type.
        values: host values of the inputs, inouts and scratch arrays, by array index.
        expected: the reference of each checked output, by array index.
        check, dims: the kernel's check and the problem's dims; ``base``: the folder a
            ``module:function`` comparison's ``.py`` path is relative to.
        relative_norm: :func:`relative_norm_of` ``(check, base)`` where the caller resolved it
            already (it loads the comparison's module); left out, it is resolved here.
    """

    def __init__(self, drv, roles: list[str], names: list[str], dtypes: list[np.dtype],
                 values: Mapping[int, np.ndarray], expected: Mapping[int, np.ndarray], check: Check,
                 dims: Mapping[str, int], base: Path | None = None, comparer=None,
                 relative_norm: Callable | None = ...) -> None:  # type: ignore[assignment]
        self.drv, self.roles, self.names, self.dtypes = drv, roles, names, dtypes
        self.values, self.check, self.dims, self.base, self.comparer = values, check, dims, base, comparer
        self.expected = {i: want.astype(dtypes[i]) if check.exact else want for i, want in expected.items()}
        self._buffers: list = []
        self.pristine = {i: self._upload(v) for i, v in values.items() if v.nbytes}
        if relative_norm is ...:
            relative_norm = relative_norm_of(check, base)
        self.relative_norm = relative_norm if comparer is not None else None
        on_device = comparer is not None and (check.exact or (check.compare == "tolerance" and all(
            dtypes[i].name in TOLERANCE_TYPES for i in expected)) or (self.relative_norm is not None and all(
                dtypes[i].name in NORM_TYPES for i in expected)))
        self.expected_on_device = {i: self._upload(want if check.exact else want.astype(np.float64))
                                   for i, want in self.expected.items()} if on_device else {}

    def _upload(self, host: np.ndarray):
        """A device copy of ``host`` (``None``: no room; that array then stays on the host)."""
        try:
            buf = self.drv.mem_alloc(max(host.nbytes, 1))
        except getattr(self.drv, "MemoryError", MemoryError):
            return None
        self._buffers.append(buf)
        self.drv.memcpy_htod(buf, np.ascontiguousarray(host))
        return buf

    def free(self) -> None:
        """Release the device copies."""
        for buf in self._buffers:
            buf.free()
        self._buffers.clear()

    def restore(self, args: ArgSet, poison: int | None = None) -> None:
        """Put the pristine values into ``args`` (device to device); with ``poison``, first fill
        every guarded array, guards included, with that byte."""
        for i in range(len(self.roles)):
            if poison is not None and args.guarded[i]:
                self.drv.memset_d8(args.pointers[i] - GUARD_BYTES, poison, args.nbytes[i] + 2 * GUARD_BYTES)
            if i in self.values and args.nbytes[i]:
                if self.pristine.get(i) is not None:
                    self.drv.memcpy_dtod(args.pointers[i], self.pristine[i], args.nbytes[i])
                else:
                    self.drv.memcpy_htod(args.pointers[i], np.ascontiguousarray(self.values[i]))

    def verify(self, launch: Callable[[], None], args: ArgSet) -> None:
        """Run ``launch`` (on ``args``) once per poison of the check; compare every checked output.

        Raises:
            TrialFailed: ``wrong_result`` (first mismatch, or a guard written), ``launch_error``
                or ``resources``.
        """
        for poison in EXACT_POISONS if self.check.exact else (NAN_POISON,):
            self.restore(args, poison)
            run_once(self.drv, launch)
            for i in self.expected:
                reason = self._on_device(args, i, poison) if self.expected_on_device.get(i) is not None else \
                    self._on_host(args, i, poison)
                if reason:
                    raise TrialFailed("wrong_result", reason)

    def _on_host(self, args: ArgSet, i: int, poison: int) -> str | None:
        want = self.expected[i]
        got = read_output(self.drv, args, i, poison, self.names[i]).view(self.dtypes[i]).reshape(want.shape)
        return compare(got, want, self.check, self.names[i], self.dims, self.base)

    def _on_device(self, args: ArgSet, i: int, poison: int) -> str | None:
        cmp, name, want, at = self.comparer, self.names[i], self.expected[i], args.pointers[i]
        for side, start in (("before", at - GUARD_BYTES), ("after", at + args.nbytes[i])):
            written, _ = cmp.not_byte(start, GUARD_BYTES, poison)
            if written:
                return f"wrote {written} guard bytes {side} {name}"
        n, size = want.size, self.dtypes[i].itemsize
        if self.check.exact:
            halves = size == 16  # complex128: compared as twice as many 8-byte words
            count, first = cmp.exact(at, int(self.expected_on_device[i]), 2 * n if halves else n, 8 if halves else size)
            if not count:
                return None
            if halves:  # the host names the elements (a config that fails: rare)
                return self._on_host(args, i, poison)
            got = np.empty(1, f"u{size}")
            self.drv.memcpy_dtoh(got, at + first * size)
            where = list(map(int, np.unravel_index(first, want.shape)))
            return (f"{count} of {n} elements of {name} differ from the reference; first at {where}: "
                    f"got 0x{int(got[0]):x}, expected 0x{int(want.reshape(-1).view(f'u{size}')[first]):x}")
        if self.relative_norm is not None:
            bad, _, diff2, ref2 = cmp.norm(at, int(self.expected_on_device[i]), n, self.dtypes[i].name)
            error = float(np.sqrt(diff2 / ref2)) if ref2 > 0 else float(np.sqrt(diff2))
            bound = float(self.relative_norm(self.dtypes[i], self.dims))
            return self._on_host(args, i, poison) if bad or error > bound * (1 - NORM_MARGIN) else None
        bad, first_bad, off, _ = cmp.tolerance(at, int(self.expected_on_device[i]), n, self.dtypes[i].name,
                                               self.check.atol, self.check.rtol)
        if bad:
            where = list(map(int, np.unravel_index(first_bad, want.shape)))
            return f"{bad} of {n} elements of {name} are not finite (unwritten?); first at {where}"
        return self._on_host(args, i, poison) if off else None  # the host names the worst element


def verify_outputs(drv, launch: Callable[[], None], args: ArgSet, roles: list[str], names: list[str],
                   dtypes: list[np.dtype], values: Mapping[int, np.ndarray], expected: Mapping[int, np.ndarray],
                   check: Check, dims: Mapping[str, int], base: Path | None = None, comparer=None) -> None:
    """One verification with a :class:`Verifier` made for it (see there), freed after.

    Raises:
        TrialFailed: as :meth:`Verifier.verify`.
    """
    verifier = Verifier(drv, roles, names, dtypes, values, expected, check, dims, base, comparer)
    try:
        verifier.verify(launch, args)
    finally:
        verifier.free()


def compare(got: np.ndarray, expected: np.ndarray, check: Check, name: str, dims: Mapping[str, int],
            base: Path | None = None) -> str | None:
    """Why ``got`` fails against ``expected`` under ``check``'s comparison, or ``None``."""
    if check.exact:
        a, b = _words(got), _words(expected)
        diff = a != b if a.ndim == got.ndim else (a != b).any(axis=-1)
        if not diff.any():
            return None
        at = np.unravel_index(int(np.argmax(diff)), diff.shape)
        return (f"{int(diff.sum())} of {diff.size} elements of {name} differ from the reference; first at "
                f"{list(map(int, at))}: got 0x{_hex(a[at])}, expected 0x{_hex(b[at])}")
    if check.compare == "tolerance":
        return _tolerance(got, expected, check.atol, check.rtol, name)
    from autotune.kernel.callables import load_callable

    return load_callable(check.compare, base)(got, expected, name=name, dims=dict(dims))


def _words(a: np.ndarray) -> np.ndarray:
    """``a``'s elements as unsigned words of their size (1-8 bytes), or as rows of 8-byte words
    (a last axis) for 16-byte elements (complex128), which NumPy has no integer type for."""
    size = a.dtype.itemsize
    if size <= 8:
        return a.view(f"u{size}")
    return np.ascontiguousarray(a).view(np.uint64).reshape(*a.shape, size // 8)


def _hex(word) -> str:
    """An element's bits in hex: one word, or (16 bytes) its words as one little-endian number."""
    if np.ndim(word) == 0:
        return f"{int(word):x}"
    return f"{int.from_bytes(np.asarray(word).tobytes(), 'little'):x}"


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
