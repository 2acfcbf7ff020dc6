"""The comparison kernels (autotune/measure/device_compare.cu) on the GPU give what the NumPy
model of tests/fakes.py gives (the model tests/measure/test_verify.py checks against the host messages):
counts and first indices of written guard bytes, of differing raw words, of non-finite elements
and of elements off the tolerance, for every element type, on arrays of odd sizes with planted
differences (NaN payloads, signed zeros, infinities, an element off by one ulp)."""

import contextlib

import numpy as np
import pytest

from autotune.measure.device import cuda_driver, open_device
from autotune.measure.device_compare import NORM_TYPES, TOLERANCE_TYPES, DeviceComparer

from fakes import FakeDriver

pytestmark = pytest.mark.gpu

SIZES = (1, 1000, 1_000_003)


@contextlib.contextmanager
def gpu_comparer():
    """The CUDA driver and the comparison kernels loaded on GPU 0, freed after."""
    drv = cuda_driver()
    with open_device(0) as device:
        comparer = DeviceComparer.load(drv, device.arch)
        try:
            yield drv, comparer
        finally:
            comparer.free()


def pair(dtype: str, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """An expected array and a copy with planted differences."""
    dt = np.dtype(dtype)
    want = (rng.uniform(-4, 4, n) if dt.kind == "f" else rng.integers(-100, 100, n)).astype(dt)
    got = want.copy()
    if n > 10:
        raw = got.view(f"u{dt.itemsize}")
        raw[n // 3] ^= 1  # one ulp (or one unit)
        if dt.kind == "f":
            got[7], want[7] = np.nan, np.nan
            raw[7] ^= 2  # another NaN payload
            got[n - 1] = np.inf
            got[5], want[5] = -0.0, 0.0
            got[n // 2] = want[n // 2] + dt.type(1)  # off the tolerance
    return want, got


def run(drv, comparer, want: np.ndarray, got: np.ndarray) -> dict:
    pointers = []
    for host in (got, want, want.astype(np.float64)):
        buf = drv.mem_alloc(max(host.nbytes, 1))
        drv.memcpy_htod(buf, host)
        pointers.append(buf)
    g, w, w64 = (int(p) for p in pointers)
    out = {"exact": comparer.exact(g, w, want.size, want.itemsize),
           "bytes": comparer.not_byte(g, got.nbytes, 0x5A)}
    if want.dtype.name in TOLERANCE_TYPES:
        out["tolerance"] = comparer.tolerance(g, w64, want.size, want.dtype.name, 1e-6, 1e-3)
    for p in pointers:
        p.free()
    return out


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64"])
def test_the_gpu_kernels_count_what_the_model_counts(dtype):
    rng = np.random.default_rng(0)
    with gpu_comparer() as (drv, comparer):
        for n in SIZES:
            want, got = pair(dtype, n, rng)
            fake = FakeDriver(1 << 25)
            model = run(fake, DeviceComparer(fake, fake.load_module(b"")), want, got)
            assert run(drv, comparer, want, got) == model, (dtype, n)
            if n > 10:
                assert model["exact"][0] >= 1 and model["bytes"][0] > 0


@pytest.mark.parametrize("dtype", NORM_TYPES)
def test_the_gpu_norm_sums_what_numpy_sums(dtype):
    """The sums of squares of a relative Frobenius error (a matrix product's check) and the
    count and first index of elements not finite, against NumPy in float64."""
    rng = np.random.default_rng(1)
    with gpu_comparer() as (drv, comparer):
        for n in SIZES:
            want = rng.uniform(-4, 4, n)
            got = (want * (1 + rng.normal(0, 1e-3, n))).astype(dtype)
            if n > 10:
                got[n // 2], got[n - 3] = np.inf, np.nan
            pointers = []
            for host in (got, want):
                buf = drv.mem_alloc(host.nbytes)
                drv.memcpy_htod(buf, host)
                pointers.append(buf)
            bad, first, diff2, ref2 = comparer.norm(int(pointers[0]), int(pointers[1]), n, dtype)
            for p in pointers:
                p.free()
            g = got.astype(np.float64)
            finite = np.isfinite(g)
            assert (bad, first) == ((2, n // 2) if n > 10 else (0, 2**64 - 1)), (dtype, n)
            assert diff2 == pytest.approx(np.sum((g[finite] - want[finite]) ** 2), rel=1e-9)
            assert ref2 == pytest.approx(np.sum(want ** 2), rel=1e-9)
