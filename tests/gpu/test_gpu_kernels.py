"""Every transpose and copy kernel is bit-exact against NumPy on the GPU (square, rectangular, odd, 1-row/column)."""

import dataclasses
import math

import pytest

from autotune.measure.benchmark import Benchmark, effective_bandwidth_gbps
from autotune.kernel.config import Config
from autotune.measure.device import open_device, query_device
from autotune.kernel.dtypes import DTYPES
from autotune.errors import InvalidInputError, TrialFailed
from autotune.kernel.catalog import KERNELS
from autotune.kernel.space import load_space

pytestmark = pytest.mark.gpu

MOVES = [name for name, k in KERNELS.items() if k.op != "matmul"]
"""The transposes and copies (the matrix products: test_gpu_matmul.py)."""
SHAPES = [(1, 1), (1, 1000), (1000, 1), (32, 32), (33, 65), (127, 1031), (1024, 512), (2048, 2048)]


@pytest.fixture(scope="module")
def device():
    with open_device(0) as info:
        yield info


def extreme_configs(kernel):
    """The configs of the kernel's space with the smallest and the largest block tile."""
    k = KERNELS[kernel]
    configs = load_space(kernel).configs()
    size = lambda c: (math.prod(k.tile_shape(c)), c["TILE_DIM"], k.shared_bytes(c, 8), c.key)  # noqa: E731
    return min(configs, key=size), max(configs, key=size)


def configs_to_check(kernel):
    """The default, then for each tunable its smallest and largest value in the space, each in
    the valid config otherwise closest to the default (smallest and largest tile, UNROLL,
    BLOCK_ROWS and IPAD; DIAGONAL=1), then the smallest and largest block tile overall."""
    k = KERNELS[kernel]
    space = load_space(kernel)
    configs = space.configs()
    default = k.default_config()
    picks = [default]
    for name, values in space.params:
        for value in (min(values), max(values)):
            with_value = [c for c in configs if c[name] == value]
            if with_value:
                picks.append(min(with_value, key=lambda c: sum(c[n] != default[n] for n in k.defaults)))
    picks += extreme_configs(kernel)
    return list(dict.fromkeys(picks))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kernel", MOVES)
def test_kernel_is_exact_float32(device, kernel, shape):
    bench = Benchmark(device, *shape, DTYPES["float32"], warmup=1, repeats=20, seed=0)
    for config in configs_to_check(kernel):
        m = bench.measure(config)  # raises TrialFailed on any mismatch
        assert m.median_ms > 0 and m.min_ms <= m.median_ms <= m.max_ms
        assert m.shared_bytes == KERNELS[kernel].shared_bytes(config, 4)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("kernel", MOVES)
def test_kernel_is_exact_for_every_dtype(device, kernel, dtype):
    # the default, and the largest block tile (with the most shared memory for 8-byte elements)
    configs = [KERNELS[kernel].default_config(), extreme_configs(kernel)[1]]
    for shape in [(127, 1031), (1, 77), (300, 1)]:
        bench = Benchmark(device, *shape, DTYPES[dtype], warmup=1, repeats=20, seed=1)
        for config in dict.fromkeys(configs):
            bench.measure(config)


def test_a_planted_wrong_kernel_is_a_failed_trial(device, monkeypatch):
    # smem_pad really transposes; pretend it should copy: verification must refuse it
    import autotune.kernel.catalog as kernels

    fake = dataclasses.replace(KERNELS["smem_pad"], name="smem_pad", op="copy")
    monkeypatch.setattr(kernels, "KERNELS", {**KERNELS, "smem_pad": fake})
    bench = Benchmark(device, 33, 65, DTYPES["float32"], warmup=1, repeats=20)
    with pytest.raises(TrialFailed) as info:
        bench.measure(fake.default_config())
    assert info.value.status == "wrong_result" and "differ from NumPy" in info.value.reason


def test_a_block_over_the_device_limit_is_a_resources_failure(device):
    bench = Benchmark(device, 256, 256, DTYPES["float32"], warmup=1, repeats=20)
    big = Config.of("copy_row", {"TILE_DIM": 64, "BLOCK_ROWS": 32})  # 2048 threads per block
    with pytest.raises(TrialFailed) as info:
        bench.measure(big)
    assert info.value.status == "resources" and "threads per block" in info.value.reason


def test_memcpy_and_bandwidth_figures_are_consistent(device):
    bench = Benchmark(device, 4096, 4096, DTYPES["float32"], repeats=20)
    m = bench.measure(KERNELS["copy_row"].default_config())
    assert bench.memcpy_gbps > 100
    assert m.gbps == pytest.approx(effective_bandwidth_gbps(4096, 4096, 4, m.median_ms))
    assert m.pct_memcpy == pytest.approx(100 * m.gbps / bench.memcpy_gbps)
    assert m.registers > 0 and m.shared_bytes == 0 and m.launches >= 20


def test_device_identity_and_ordinal_range():
    info = query_device(0)
    assert info.compute_capability.count(".") == 1 and info.sm_count > 0 and info.total_memory > 0
    assert info.arch.startswith("sm_")
    with pytest.raises(InvalidInputError, match="out of range"):
        query_device(99)


def test_a_shape_larger_than_the_gpu_is_refused(device):
    with pytest.raises(InvalidInputError, match="GiB on the GPU"):
        Benchmark(device, 2**20, 2**20, DTYPES["float64"])
