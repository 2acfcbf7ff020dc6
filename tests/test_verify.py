"""Verification catches wrong values, unwritten elements and out-of-bounds writes.

The device is faked by NumPy byte arrays (a "kernel" is a Python function writing into
them), so the verification logic itself is checked without a GPU; tests/gpu/ plants real
CUDA kernels of each kind."""

from __future__ import annotations

import numpy as np
import pytest

from autotune.errors import TrialFailed
from autotune.measure.verify import GUARD_BYTES, verify


class FakeDriver:
    class LaunchError(Exception):
        pass

    class Context:
        @staticmethod
        def synchronize():
            pass

    @staticmethod
    def memcpy_htod(dst, src):
        dst[:] = np.ascontiguousarray(src).view(np.uint8).ravel()

    @staticmethod
    def memcpy_dtoh(dst, src):
        dst[:] = src

    @staticmethod
    def memset_d8(dst, value, n):
        dst[:n] = value


def run(kernel, dtype=np.float32, shape=(7, 13)):
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    d_in = np.zeros(a.nbytes, np.uint8)
    d_out_full = np.zeros(a.nbytes + 2 * GUARD_BYTES, np.uint8)

    def launch():
        src = d_in.view(dtype).reshape(shape)
        out = d_out_full[GUARD_BYTES:GUARD_BYTES + a.nbytes].view(dtype).reshape(shape[::-1])
        kernel(src, out, d_out_full)

    verify(FakeDriver, launch, a, np.ascontiguousarray(a.T), d_in, d_out_full)


def correct(src, out, _):
    out[:] = src.T


def test_a_correct_kernel_passes():
    run(correct)
    run(correct, np.int8, (1, 1000))
    run(correct, np.float16, (1000, 1))


@pytest.mark.parametrize("kernel, message", [
    (lambda s, o, _: o.__setitem__(Ellipsis, s.T + 1), "elements differ from NumPy; first at [0, 0]"),
    (lambda s, o, _: (o.__setitem__(Ellipsis, s.T), o.__setitem__((12, 6), 0.5)), "1 of 91 elements differ"),
    (lambda s, o, _: o[:-1].__setitem__(Ellipsis, s.T[:-1]), "elements differ"),  # last row never written
    (lambda s, o, full: (o.__setitem__(Ellipsis, s.T), full.__setitem__(GUARD_BYTES + o.nbytes, 7)),
     "wrote 1 guard bytes after the output buffer"),
    (lambda s, o, full: (o.__setitem__(Ellipsis, s.T), full.__setitem__(GUARD_BYTES - 3, 7)),
     "guard bytes before the output buffer"),
])
def test_wrong_kernels_are_caught(kernel, message):
    with pytest.raises(TrialFailed) as info:
        run(kernel)
    assert info.value.status == "wrong_result" and message in info.value.reason


def test_an_unwritten_element_cannot_pass_by_matching_the_poison():
    # the input holds the byte pattern of the first poison where the kernel writes nothing:
    # with one poison this element would look right; the second poison exposes it
    a = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    a[0, 0] = np.frombuffer(bytes([0xA5] * 4), np.float32)[0]
    d_in = np.zeros(a.nbytes, np.uint8)
    d_out_full = np.zeros(a.nbytes + 2 * GUARD_BYTES, np.uint8)

    def launch():  # writes everything except [0, 0], which keeps whatever poison is there
        out = d_out_full[GUARD_BYTES:GUARD_BYTES + a.nbytes].view(np.float32).reshape(4, 4)
        keep = out[0, 0]
        out[:] = d_in.view(np.float32).reshape(4, 4).T
        out[0, 0] = keep

    with pytest.raises(TrialFailed) as info:
        verify(FakeDriver, launch, a, np.ascontiguousarray(a.T), d_in, d_out_full)
    assert "1 of 16 elements differ" in info.value.reason


def test_a_failed_launch_is_a_launch_error():
    def crash():
        raise FakeDriver.LaunchError("cuLaunchKernel failed: an illegal memory access was encountered")

    a = np.zeros((2, 2), np.float32) + 1
    with pytest.raises(TrialFailed) as info:
        verify(FakeDriver, crash, a, a.T.copy(), np.zeros(16, np.uint8), np.zeros(16 + 2 * GUARD_BYTES, np.uint8))
    assert info.value.status == "launch_error" and "illegal memory access" in info.value.reason
