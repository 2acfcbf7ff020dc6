"""Matrix products without a GPU: the relative-error check of autotune.kernel.references (a
correct float32 product over K = 4096 passes, wrong ones fail), reached as each matmul kernel's
own ``[check]``, its inputs as the benchmark makes them, its figures, and K in the key."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotune.kernel.problem import Problem
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.references import matmul, product_tolerance, relative_error, tolerance
from autotune.measure.buffers import array_layout, host_values, scalar_values
from autotune.measure.figures import figure, headline, unit
from autotune.measure.reference import python_reference
from autotune.measure.verify import NAN_POISON, compare

MATMULS = ("matmul_naive", "matmul_tiled", "matmul_reg")


def operands(name: str, m: int, n: int, k: int, dtype: str, seed: int):
    """The benchmark's inputs of kernel ``name`` (uniform(-1, 1) A and B) and its reference."""
    kernel, dt = KERNELS[name], get_dtype(dtype)
    env = kernel.env({"m": m, "n": n, "k": k}, dt)
    layout = array_layout(kernel, env, dt)
    rng = np.random.default_rng(seed)
    values = {i: host_values(a, shape, d, rng) for i, (a, shape, d) in enumerate(layout) if a.role == "in"}
    expected = python_reference(kernel, layout, scalar_values(kernel, env), values)
    return values[1], values[2], expected[0]


def check(got, expected, k, name="matmul_tiled"):
    """The kernel's own comparison (``[check] compare``), as verification calls it."""
    return compare(got, expected, KERNELS[name].check_spec, "C", {"m": got.shape[0], "n": got.shape[1], "k": k})


def float32_product(a: np.ndarray, b: np.ndarray, tile: int = 16, skip_last_tile: bool = False,
                    shift: int = 0) -> np.ndarray:
    """A model of the tiled kernel's float32 arithmetic: K-steps of ``tile`` terms, each term
    rounded to float32 after the multiply and after the add (no FMA: a little worse than the
    GPU). ``skip_last_tile`` drops the last (partial) K-step, ``shift`` reads B ``shift``
    rows off: the bugs the check must catch."""
    k = a.shape[1]
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    steps = range(0, k - (k % tile or tile) if skip_last_tile else k, tile)
    for k0 in steps:
        for kk in range(k0, min(k0 + tile, k)):
            row = b[min(kk + shift, k - 1)]
            acc = (acc + (a[:, kk:kk + 1] * row[None, :]).astype(np.float32)).astype(np.float32)
    return acc


@pytest.fixture(scope="module")
def large_k():
    return operands("matmul_tiled", 48, 40, 4096 + 5, "float32", seed=7)  # K not a multiple of the tile


def test_every_matmul_kernel_checks_with_the_product_tolerance():
    for name in MATMULS:
        c = KERNELS[name].check_spec
        assert (c.reference, c.compare, c.exact) == ("autotune.kernel.references:matmul",
                                                    "autotune.kernel.references:product_tolerance", False)


def test_the_inputs_and_the_reference():
    a, b, ref = operands("matmul_reg", 30, 20, 50, "float32", seed=1)
    assert a.shape == (30, 50) and b.shape == (50, 20) and a.dtype == b.dtype == np.float32
    assert -1 <= a.min() < -0.9 and 0.9 < a.max() <= 1  # uniform(-1, 1)
    assert ref.dtype == np.float64 and ref.shape == (30, 20)
    np.testing.assert_array_equal(ref, a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_array_equal(matmul(A=a, B=b, C=None, M=30, N=20, K=50), ref)


def test_the_tolerance_is_eight_sqrt_k_unit_roundoffs():
    assert tolerance("float32", 4096) == pytest.approx(8 * 64 * 2.0**-24)
    assert tolerance("float64", 4096) == pytest.approx(8 * 64 * 2.0**-53)
    assert tolerance("float32", 1) < tolerance("float32", 4096) < 4096 * 2.0**-24  # below the worst case K*u
    assert tolerance("float32", 0) == tolerance("float32", 1)


def test_a_correct_float32_product_over_k_4096_passes_with_margin(large_k):
    a, b, ref = large_k
    got = float32_product(a, b)
    assert 0 < relative_error(got, ref) < tolerance("float32", a.shape[1]) / 3  # rounded, well inside
    assert check(got, ref, a.shape[1]) is None
    assert check(np.matmul(a, b), ref, a.shape[1]) is None  # NumPy's own float32 product


@pytest.mark.parametrize("bug", ["skip_last_tile", "shift"])
def test_a_wrong_float32_product_fails(large_k, bug):
    a, b, ref = large_k
    got = float32_product(a, b, **{"skip_last_tile": True} if bug == "skip_last_tile" else {"shift": 1})
    reason = check(got, ref, a.shape[1])
    assert reason.startswith("relative error ") and f"(K={a.shape[1]})" in reason


def test_one_wrong_element_of_a_large_product_fails():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal((2048, 2048)) * math.sqrt(4096 / 9)  # the spread of a K = 4096 product
    got = ref.astype(np.float32)
    assert check(got, ref, 4096) is None and relative_error(got, ref) < 1e-7
    got[2047, 5] += np.float32(math.sqrt(4096 / 9))  # off by one typical value
    assert "worst at [2047, 5]" in check(got, ref, 4096)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_unwritten_element_keeps_the_nan_poison_and_fails(dtype):
    ref = np.ones((64, 64))
    got = ref.astype(dtype)
    got.view(np.uint8).reshape(64, -1)[3, :got.itemsize] = NAN_POISON  # element [3, 0] never written
    assert math.isnan(got[3, 0])
    assert product_tolerance(got, ref, name="C", dims={"k": 10}) == \
        "1 of 4096 elements of C are not finite (unwritten?); first at [3, 0]"


def test_float64_products_are_held_to_float64_precision():
    a, b, ref = operands("matmul_naive", 30, 20, 500, "float64", seed=3)
    assert check(a @ b, ref, 500, "matmul_naive") is None
    assert relative_error(a @ b, ref) <= tolerance("float64", 500)
    float32 = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    assert "relative error" in check(float32, ref, 500, "matmul_naive")  # far outside a float64 tolerance


def test_relative_error_of_an_all_zero_reference_is_the_absolute_error():
    assert relative_error(np.zeros((2, 2)), np.zeros((2, 2))) == 0.0
    assert relative_error(np.full((1, 1), 3.0), np.zeros((1, 1))) == 3.0


def test_figures_of_merit():
    k, dims = KERNELS["matmul_reg"], {"m": 4096, "n": 4096, "k": 4096}
    assert unit(k) == "GFLOP/s" and unit(KERNELS["smem_pad"]) == "GB/s"
    assert figure(Problem.of(k, dims, "float32"), 10.0) == pytest.approx(2 * 4096**3 / 1e-2 / 1e9)
    assert headline(Problem.of(k, dims, "float32"), 10.0) == f"{2 * 4096**3 / 1e-2 / 1e9:.0f} GFLOP/s"
    assert figure(Problem.of(KERNELS["smem_pad"], {"rows": 1024, "cols": 1024}, "float64"), 1.0) == \
        pytest.approx(2 * 1024 * 1024 * 8 / 1e-3 / 1e9)


def test_k_is_part_of_the_key_and_the_study(device_info):
    from autotune.store.key import tuning_key

    keys = [tuning_key("matmul_tiled", device_info, {"m": 256, "n": 256, "k": k}, "float32") for k in (256, 512)]
    assert keys[0].study_name != keys[1].study_name and keys[0].study_name.startswith("matmul_tiled 256x256x256 float32 ")
    assert keys[0].shape == (256, 256, 256) and keys[1].dim("k") == 512
    assert keys[0].dims_key == "m=256,n=256,k=256" and keys[0].dims == (("m", 256), ("n", 256), ("k", 256))
    assert tuning_key("matmul_tiled", device_info, (256, 256, 512), "float32") == keys[1]  # values in order
    assert tuning_key("smem_pad", device_info, (256, 256), "float32").study_name.startswith("smem_pad 256x256 float32 ")
