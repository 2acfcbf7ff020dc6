"""Every transpose and copy of the catalog is bit-exact on the GPU (square, rectangular, odd,
1-row and 1-column shapes, every dtype), measured through the generic benchmark
(:class:`autotune.measure.benchmark.Benchmark`), with the figures and limits it reports."""

import contextlib
import math
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import catalog_before as before
from autotune.errors import InvalidInputError, TrialFailed
from autotune.kernel.problem import Problem
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES, get_dtype
from autotune.kernel.loader import load_kernel
from autotune.measure.benchmark import Benchmark, open_benchmark
from autotune.measure.compile import build_cubin
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.device import query_device
from autotune.measure.timing import EarlyStop

from kernel_files import catalog_doc, write_kernel

MOVES = sorted(before.MOVES)
"""The transposes and copies (the matrix products: test_gpu_matmul.py)."""
SHAPES = [(1, 1), (1, 1000), (1000, 1), (32, 32), (33, 65), (127, 1031), (1024, 512), (2048, 2048)]


@contextlib.contextmanager
def benchmark(device, kernel, dims, dtype="float32", **measure):
    """A benchmark without bounds (they are tested once, below), freed on exit; ``measure``:
    MeasureOptions' fields over fixed samples."""
    bench = Benchmark(device, Problem.of(KERNELS[kernel] if isinstance(kernel, str) else kernel, dims, get_dtype(dtype)),
                      MeasureOptions(**{"warmup": 1, "repeats": 20, "seed": 0, "ci": 0, **measure}), bounds=False)
    try:
        yield bench
    finally:
        bench.free()


def extreme_configs(kernel):
    """The configs of the kernel's space with the smallest and the largest block tile."""
    configs = KERNELS[kernel].space().configs()
    size = lambda c: (math.prod(before.tile_shape(kernel, c.as_dict())), c["TILE_DIM"],  # noqa: E731
                      before.shared_bytes(kernel, c.as_dict(), 8), c.key)
    return min(configs, key=size), max(configs, key=size)


def configs_to_check(kernel):
    """The default, then for each tunable its smallest and largest value in the space, each in
    the valid config otherwise closest to the default (smallest and largest tile, UNROLL,
    BLOCK_ROWS and IPAD; DIAGONAL=1), then the smallest and largest block tile overall."""
    k = KERNELS[kernel]
    space = k.space()
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


@pytest.fixture(scope="module", autouse=True)
def cubins_built_ahead(device):
    """Every cubin the exactness tests load, built into the cubin cache first on every core:
    one nvcc run at a time (about 300 of them) took most of this module's time. A config that
    fails to build is left to the test that loads it, which reports the failure."""
    def build(job):
        with contextlib.suppress(TrialFailed):
            build_cubin(KERNELS[job[0]], job[1], get_dtype(job[2]), device.arch)

    jobs = [(k, c, "float32") for k in MOVES for c in configs_to_check(k)]
    jobs += [(k, c, dt) for k in MOVES for dt in DTYPES for c in (KERNELS[k].default_config(), extreme_configs(k)[1])]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(build, dict.fromkeys(jobs)))


@pytest.mark.gpu_slow
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kernel", MOVES)
def test_kernel_is_exact_float32(device, kernel, shape):
    with benchmark(device, kernel, shape) as bench:
        for config in configs_to_check(kernel):
            bench.early = EarlyStop()  # each config timed in full: no early stop against the others
            m = bench.measure(config)  # raises TrialFailed on any mismatch
            assert m.median_ms > 0 and m.min_ms <= m.median_ms <= m.max_ms and m.launches >= 20
            assert m.shared_bytes == before.shared_bytes(kernel, config.as_dict(), 4)  # static + dynamic
            assert m.gbps == pytest.approx(2 * shape[0] * shape[1] * 4 / (m.median_ms * 1e-3) / 1e9)
            assert m.gflops is None and m.pct_memcpy is None and m.pct_copy is None  # bounds off


@pytest.mark.gpu_slow
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("kernel", MOVES)
def test_kernel_is_exact_for_every_dtype(device, kernel, dtype):
    # the default, and the largest block tile (with the most shared memory for 8-byte elements)
    configs = dict.fromkeys([KERNELS[kernel].default_config(), extreme_configs(kernel)[1]])
    for shape in [(127, 1031), (1, 77), (300, 1), (64, 64)]:
        with benchmark(device, kernel, {"rows": shape[0], "cols": shape[1]}, dtype, seed=1) as bench:
            for config in configs:
                bench.verify(*bench.compile(config))  # raises TrialFailed on any mismatch


@pytest.mark.gpu
def test_a_planted_wrong_kernel_is_a_failed_trial(device, tmp_path):
    # copy_row really copies; a kernel file that says it transposes must be refused (square:
    # the shapes agree, the values do not)
    doc = {**catalog_doc("copy_row"), "name": "copy_claiming_to_transpose"}
    doc["check"] = {"reference": "autotune.kernel.references:transpose", "compare": "exact"}
    doc["args"][0]["array"] = ["cols", "rows"]
    k = load_kernel(write_kernel(tmp_path / "wrong.toml", doc))
    with benchmark(device, k, (65, 65)) as bench:
        with pytest.raises(TrialFailed) as info:
            bench.measure(k.default_config())
    assert info.value.status == "wrong_result" and "elements of out differ from the reference" in info.value.reason


@pytest.mark.gpu
def test_a_block_over_the_device_limit_is_a_resources_failure(device):
    with benchmark(device, "copy_row", (256, 256)) as bench:
        big = Config.of("copy_row", {"TILE_DIM": 64, "BLOCK_ROWS": 32})  # 2048 threads per block
        with pytest.raises(TrialFailed) as info:
            bench.measure(big)
    assert info.value.status == "resources" and "threads per block" in info.value.reason


@pytest.mark.gpu
def test_a_grid_over_the_device_limit_is_a_resources_failure(device, tmp_path):
    # matmul_naive's grid is (cdiv(n, BLOCK_X), cdiv(m, BLOCK_Y)): y over 65535 blocks. The catalog's
    # kernel file declares m's largest ([problem] max), which refuses such dims before any trial; a
    # user's copy without it reaches the launch, whose grid the device refuses
    doc = catalog_doc("matmul_naive")
    del doc["problem"]["max"]
    kernel = load_kernel(write_kernel(tmp_path / "naive_no_max.toml", {**doc, "name": "naive_no_max"}))
    with benchmark(device, kernel, {"m": 65536 * 16 + 1, "n": 1, "k": 1}) as bench:
        with pytest.raises(TrialFailed) as info:
            bench.measure(kernel.default_config())
    assert info.value.status == "resources" and "y=65537 > 65535" in info.value.reason


@pytest.mark.gpu
def test_memcpy_copy_and_bandwidth_figures_are_consistent(device):
    with open_benchmark(0, Problem.of(KERNELS["smem_pad"], (4096, 4096), get_dtype("float32")),
                        MeasureOptions(repeats=20, ci=0)) as bench:
        m = bench.measure(KERNELS["smem_pad"].default_config())
        assert bench.memcpy_gbps > 100 and bench.copy_gbps > 100 and bench.l2_mode == "single"
        assert m.gbps == pytest.approx(2 * 4096 * 4096 * 4 / (m.median_ms * 1e-3) / 1e9)
        assert m.pct_memcpy == pytest.approx(100 * m.gbps / bench.memcpy_gbps)
        assert m.pct_copy == pytest.approx(100 * m.gbps / bench.copy_gbps)
        assert m.registers > 0 and m.shared_bytes == 32 * 33 * 4 and m.launches >= 20 and 0 < m.occupancy <= 1
    with open_benchmark(0, Problem.of(KERNELS["copy_row"], (1024, 1024), get_dtype("float32")),
                        MeasureOptions(repeats=20, ci=0)) as bench:
        m = bench.measure(KERNELS["copy_row"].default_config())  # its own bound: measured once, no recursion
        assert bench.l2_mode == "rotating" and len(bench.sets) > 1  # 8 MiB of arguments: under twice the L2
        assert m.pct_copy is not None and m.pct_memcpy is not None


@pytest.mark.gpu
def test_device_identity_and_ordinal_range():
    info = query_device(0)
    assert info.compute_capability.count(".") == 1 and info.sm_count > 0 and info.total_memory > 0
    assert info.arch.startswith("sm_") and info.l2_bytes > 0 and info.max_threads_per_block >= 1024
    with pytest.raises(InvalidInputError, match="out of range"):
        query_device(99)


@pytest.mark.gpu
def test_a_shape_larger_than_the_gpu_is_refused(device):
    with pytest.raises(InvalidInputError, match="GiB on the GPU"):
        Benchmark(device, Problem.of(KERNELS["smem_pad"], (2**20, 2**20), get_dtype("float64")))
    with pytest.raises(InvalidInputError, match="GiB on the GPU"):
        with open_benchmark(0, Problem.of(KERNELS["matmul_reg"], (2**20, 2**20, 8), get_dtype("float64"))):
            pass
    with pytest.raises(InvalidInputError, match="does not support dtype 'int8'"):
        with open_benchmark(0, Problem.of(KERNELS["matmul_reg"], (8, 8, 8), get_dtype("int8"))):
            pass
