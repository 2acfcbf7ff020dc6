"""Matrix products on the GPU: every kernel within the tolerance of NumPy's float64 product
for square, non-multiple-of-tile and skinny shapes in float32 and float64; a launch that
leaves part of C unwritten fails; figures; the vendor line; a short search whose best
``lookup`` and ``autotune.compiled`` use."""

import contextlib
import math

import numpy as np
import pytest

import catalog_before as before
import autotune
from autotune import clear_cache, lookup
from autotune.errors import TrialFailed
from autotune.kernel.problem import Problem
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.references import product_tolerance, relative_error, tolerance
from autotune.measure.benchmark import Benchmark
from autotune.measure.device import open_device
from autotune.measure.measure_options import MeasureOptions

pytestmark = pytest.mark.gpu_slow

MATMULS = before.MATMULS
SHAPES = [(64, 64, 64), (128, 128, 1), (33, 65, 17), (257, 129, 1031), (1, 1000, 3), (1000, 1, 7), (3, 5, 4096),
          (1031, 33, 2)]


@contextlib.contextmanager
def benchmark(device, name, shape, dtype="float32", **measure):
    bench = Benchmark(device, Problem.of(KERNELS[name], shape, get_dtype(dtype)),
                      MeasureOptions(**{"repeats": 20, "seed": sum(shape), "ci": 0, **measure}))
    try:
        yield bench
    finally:
        bench.free()


def configs_to_check(name):
    """The default, and the configs of the space with the smallest and the largest tile of C."""
    configs = sorted(KERNELS[name].space().configs(),
                     key=lambda c: (math.prod(before.tile_shape(name, c.as_dict())), c.key))
    return list(dict.fromkeys([KERNELS[name].default_config(), configs[0], configs[-1]]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", MATMULS)
def test_every_matmul_kernel_is_within_the_tolerance(device, name, shape, dtype):
    with benchmark(device, name, shape, dtype) as bench:
        for config in configs_to_check(name):
            bench.verify(*bench.compile(config))  # raises TrialFailed on a wrong or unwritten element


WARP_SHAPES = [(64, 64, 64), (257, 129, 1031), (1000, 1, 7), (3, 5, 4096), (1031, 33, 2)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", WARP_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_warp_default_and_sampled_configs_are_within_the_tolerance(device, shape, dtype):
    """matmul_warp's space is 22,944 configs: its default and the first, last and a middle
    config (SearchSpace.sample) at shapes with no dim a multiple of a tile, both dtypes."""
    k = KERNELS["matmul_warp"]
    configs = k.space().sample(4, (k.default_config(),))
    assert k.default_config() in configs
    with benchmark(device, "matmul_warp", shape, dtype) as bench:
        for config in configs:
            bench.verify(*bench.compile(config))


def test_a_launch_that_covers_only_part_of_c_fails(device):
    """The NaN poison catches the elements a too-small grid never writes."""
    with benchmark(device, "matmul_tiled", (100, 100, 100), seed=1) as bench:
        compiled, grid, block, shared = bench.compile(KERNELS["matmul_tiled"].default_config())
        assert grid == (7, 7, 1) and block == (16, 16, 1)
        bench.verify(compiled, grid, block, shared)
        with pytest.raises(TrialFailed, match="elements of C are not finite"):
            bench.verify(compiled, (3, 7, 1), block, shared)


def test_measure_gives_gflops_and_no_memcpy_figure(device):
    with benchmark(device, "matmul_reg", (512, 512, 512), seed=2) as bench:
        m = bench.measure(KERNELS["matmul_reg"].default_config())
        assert m.gflops == pytest.approx(2 * 512**3 / (m.median_ms * 1e-3) / 1e9)
        assert m.gbps is None and m.pct_memcpy is None and m.pct_copy is None
        assert m.registers > 0 and 0 < m.occupancy <= 1 and m.shared_bytes == (16 * 65 + 16 * 64) * 4
        assert bench.memcpy_gbps is None and bench.copy_gbps is None and bench.l2_mode == "single"


def test_the_vendor_product_is_measured_or_says_why_not(device):
    from autotune.measure.vendor import vendor_matmul

    with benchmark(device, "matmul_tiled", (256, 192, 320), seed=3) as bench:
        result = vendor_matmul(bench)
    if result.note is None:
        assert result.gflops > 0 and result.median_ms > 0 and "cuBLAS" in result.name
    else:
        assert "not measured" in result.note or ":" in result.note


def test_short_search_then_lookup_and_compiled(tmp_path):
    torch = pytest.importorskip("torch")
    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    dims = {"m": 300, "n": 200, "k": 100}
    result = autotune.tune("matmul_tiled", dims, "float32", trials=3, sampler="grid", repeats=20, rounds=2, db=db)
    assert len(result.measured) == 3 and result.key.dims == (("m", 300), ("n", 200), ("k", 100))
    clear_cache()
    with open_device(0):
        tuned = lookup("matmul_tiled", (300, 200, 100), device=0, db=db)
    assert tuned.rung == "exact" and tuned.config.kernel == "matmul_tiled"

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (300, 100)).astype(np.float32)
    b = rng.uniform(-1, 1, (100, 200)).astype(np.float32)
    c = torch.full((300, 200), float("nan"), device="cuda")
    launch = autotune.compiled("matmul_tiled", dims, "float32", db=db)
    assert launch.chosen.config == tuned.config
    launch(c, torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda())
    torch.cuda.synchronize()
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert product_tolerance(c.cpu().numpy(), expected, name="C", dims=dims) is None


def test_the_check_holds_for_numpy_float32_at_k_4096():
    """The tolerance the kernels are held to also admits NumPy's own float32 product."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (128, 4096)).astype(np.float32)
    b = rng.uniform(-1, 1, (4096, 96)).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert relative_error(a @ b, expected) < tolerance("float32", 4096)
    assert product_tolerance(a @ b, expected, name="C", dims={"k": 4096}) is None
