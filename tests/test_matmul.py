"""Matrix products without a GPU: the relative-error check (a correct float32 product over
K = 4096 passes, wrong ones fail), the kernels' launch geometry, and the DB key with K."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotune.kernel.dtypes import get_dtype
from autotune.errors import InvalidInputError, TrialFailed
from autotune.kernel.catalog import KERNELS, get_kernel
from autotune.store.key import tuning_key
from autotune.measure.matmul_bench import random_operands
from autotune.kernel.problem import (NAN_POISON, PROBLEMS, check_product, format_shape, matmul_gbps, matmul_gflops,
                              problem_of, relative_error, tolerance)
from autotune.kernel.space import load_space
from autotune.store.repository import Store

from fakes import FakeMatmulBench

MATMULS = ("matmul_naive", "matmul_tiled", "matmul_reg")


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
def operands():
    rng = np.random.default_rng(7)
    return random_operands(rng, 48, 40, 4096 + 5, get_dtype("float32"))  # K not a multiple of the tile


def reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def test_the_tolerance_is_eight_sqrt_k_unit_roundoffs():
    assert tolerance("float32", 4096) == pytest.approx(8 * 64 * 2.0**-24)
    assert tolerance("float64", 4096) == pytest.approx(8 * 64 * 2.0**-53)
    assert tolerance("float32", 1) < tolerance("float32", 4096) < 4096 * 2.0**-24  # below the worst case K*u


def test_a_correct_float32_product_over_k_4096_passes_with_margin(operands):
    a, b = operands
    ref = reference(a, b)
    got = float32_product(a, b)
    error = check_product(got, ref, a.shape[1])
    assert 0 < error < tolerance("float32", a.shape[1]) / 3  # rounding happened, well inside the tolerance
    assert check_product(np.matmul(a, b), ref, a.shape[1]) < tolerance("float32", a.shape[1])  # NumPy's float32


@pytest.mark.parametrize("bug", ["skip_last_tile", "shift"])
def test_a_wrong_float32_product_fails(operands, bug):
    a, b = operands
    got = float32_product(a, b, **{"skip_last_tile": True} if bug == "skip_last_tile" else {"shift": 1})
    with pytest.raises(TrialFailed) as info:
        check_product(got, reference(a, b), a.shape[1])
    assert info.value.status == "wrong_result" and "relative error" in info.value.reason


def test_one_wrong_element_of_a_large_product_fails():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal((2048, 2048)) * math.sqrt(4096 / 9)  # the spread of a K = 4096 product
    got = ref.astype(np.float32)
    assert check_product(got, ref, 4096) < 1e-7
    got[2047, 5] += np.float32(math.sqrt(4096 / 9))  # off by one typical value
    with pytest.raises(TrialFailed, match="worst at \\[2047, 5\\]"):
        check_product(got, ref, 4096)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_unwritten_element_keeps_the_nan_poison_and_fails(dtype):
    ref = np.ones((64, 64))
    got = ref.astype(dtype)
    got.view(np.uint8).reshape(64, -1)[3, :got.itemsize] = NAN_POISON  # element [3, 0] never written
    assert math.isnan(got[3, 0])
    with pytest.raises(TrialFailed, match="1 of 4096 elements are not finite.*\\[3, 0\\]"):
        check_product(got, ref, 10)


def test_float64_products_are_held_to_float64_precision():
    rng = np.random.default_rng(3)
    a, b = random_operands(rng, 30, 20, 500, get_dtype("float64"))
    ref = reference(a, b)
    assert check_product(a @ b, ref, 500) <= tolerance("float64", 500)
    with pytest.raises(TrialFailed):  # float32 accuracy is far outside a float64 tolerance
        check_product((a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64), ref, 500)


def test_relative_error_of_an_all_zero_reference_is_the_absolute_error():
    assert relative_error(np.zeros((2, 2)), np.zeros((2, 2))) == 0.0
    assert relative_error(np.full((1, 1), 3.0), np.zeros((1, 1))) == 3.0


def test_figures_of_merit():
    assert matmul_gflops(4096, 4096, 4096, 10.0) == pytest.approx(2 * 4096**3 / 1e-2 / 1e9)
    assert matmul_gbps(10, 20, 30, 4, 1.0) == pytest.approx((300 + 600 + 200) * 4 / 1e-3 / 1e9)
    p = PROBLEMS["matmul"]
    gbps = matmul_gbps(100, 200, 300, 8, 0.5)
    assert p.of_gbps(gbps, 100, 200, 300, 8) == pytest.approx(matmul_gflops(100, 200, 300, 0.5))
    assert PROBLEMS["move"].figure(1024, 1024, 0, 4, 1.0) == pytest.approx(2 * 1024 * 1024 * 4 / 1e-3 / 1e9)
    assert format_shape(3, 4) == "3x4" and format_shape(3, 4, 5) == "3x4x5"


# --- kernels -----------------------------------------------------------------------------------


def test_matmul_kernels_are_float32_and_float64_only():
    for name in MATMULS:
        k = get_kernel(name)
        assert problem_of(k).is_matmul and k.signature == "PPPiii"
        k.check_dtype(get_dtype("float64"))
        with pytest.raises(InvalidInputError, match="does not support dtype 'int8'"):
            k.check_dtype(get_dtype("int8"))
    assert not problem_of("smem_pad").is_matmul


@pytest.mark.parametrize("name", MATMULS)
def test_shipped_matmul_spaces_load_and_hold_the_default(name):
    k = KERNELS[name]
    space = load_space(name)
    configs = space.configs()
    assert k.default_config() in configs and len(set(configs)) == len(configs) <= 60  # CI compiles every one
    assert [n for n, _ in space.params] == sorted(k.defaults)
    for c in configs:
        assert space.violations(c) == [] and k.shared_bytes(c, 8) <= 48 * 1024  # float64 too
    for macro, values in space.params:  # every listed value is used by some config
        assert {c[macro] for c in configs} == set(values), macro


@pytest.mark.parametrize("name", MATMULS)
def test_every_block_covers_its_tile_of_c_and_the_grid_covers_c(name):
    k = KERNELS[name]
    for config in load_space(name).configs():
        x, y, z = k.block(config, 4)
        assert z == 1 and 64 <= x * y <= 1024
        tile_rows, tile_cols = k.tile_shape(config)
        assert tile_rows % y == 0 and tile_cols % x == 0  # each thread owns a whole number of outputs
        for m, n in ((1, 1), (1000, 3), (4097, 4095)):
            gx, gy = k.grid(config, m, n)
            assert (gx - 1) * tile_cols < n <= gx * tile_cols and (gy - 1) * tile_rows < m <= gy * tile_rows


def test_the_register_kernel_geometry():
    k = KERNELS["matmul_reg"]
    c = k.default_config()
    assert c.as_dict() == {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}
    assert k.block(c, 8) == (16, 16, 1) and k.grid(c, 100, 300) == (5, 2)
    assert k.shared_bytes(c, 8) == (16 * 65 + 16 * 64) * 8


# --- key and store -----------------------------------------------------------------------------


def test_k_is_part_of_the_key_and_the_study(device_info, db_url):
    from autotune.search.tuner import search

    store = Store(db_url)
    keys = [tuning_key("matmul_tiled", device_info, (256, 256, k), "float32") for k in (256, 512)]
    assert keys[0].study_name != keys[1].study_name and keys[0].study_name.endswith("|256x256x256|float32")
    assert keys[0].shape == (256, 256, 256)
    assert tuning_key("smem_pad", device_info, (256, 256), "float32").study_name.endswith("|256x256|float32")
    for key in keys:
        bench = FakeMatmulBench(device_info, 256, 256, key.dim("k"), get_dtype("float32"))
        search(key, load_space("matmul_tiled"), bench.measure, store, n_trials=10, sampler="grid",
               retime=bench.retime, top_k=2, rounds=2)
    bests = [store.best(key) for key in keys]
    assert [b.dims for b in bests] == [(("m", 256), ("n", 256), ("k", k)) for k in (256, 512)]
    assert bests[0].config.as_dict() == {"TILE_WIDTH": 32} and bests[0].pct_memcpy is None
    assert bests[0].gflops == pytest.approx(20000.0) and bests[0].pooled_gflops == pytest.approx(20000.0)
    assert bests[1].gflops == pytest.approx(20000.0)  # the same landscape for K = 512: a separate best
    assert len(store.find_best(kernel="matmul_tiled", dims={"m": 256, "n": 256, "k": 512})) == 1
