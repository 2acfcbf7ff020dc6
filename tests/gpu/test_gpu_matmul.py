"""Matrix products on the GPU: every kernel within the tolerance of NumPy's float64 product
for square, non-multiple-of-tile and skinny shapes in float32 and float64; a short search
stores a best that `best` and `lookup` return; the bench stores kernel and vendor lines."""

import numpy as np
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from autotune import clear_cache, lookup
from autotune.cli import app
from autotune.measure.device import open_device
from autotune.kernel.dtypes import get_dtype
from autotune.errors import TrialFailed
from autotune.kernel.catalog import KERNELS
from autotune.measure.matmul_bench import MatmulBenchmark
from autotune.store.models import BenchRow
from autotune.kernel.problem import check_product, tolerance
from autotune.kernel.space import load_space
from autotune.store.repository import Store

pytestmark = pytest.mark.gpu

MATMULS = ("matmul_naive", "matmul_tiled", "matmul_reg")
SHAPES = [(64, 64, 64), (128, 128, 1), (33, 65, 17), (257, 129, 1031), (1, 1000, 3), (1000, 1, 7), (3, 5, 4096),
          (1031, 33, 2)]


@pytest.fixture(scope="module")
def device():
    with open_device(0) as info:
        yield info


def configs_to_check(name):
    """The default, and the configs of the space with the smallest and the largest tile of C."""
    k = KERNELS[name]
    configs = sorted(load_space(name).configs(), key=lambda c: (np.prod(k.tile_shape(c)), c.key))
    return list(dict.fromkeys([k.default_config(), configs[0], configs[-1]]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", MATMULS)
def test_every_matmul_kernel_is_within_the_tolerance(device, name, shape, dtype):
    bench = MatmulBenchmark(device, *shape, get_dtype(dtype), repeats=20, seed=sum(shape))
    try:
        for config in configs_to_check(name):
            bench.check(config)  # raises TrialFailed on a wrong or unwritten element
    finally:
        bench.free()


def test_a_launch_that_covers_only_part_of_c_fails(device):
    """The NaN poison catches the elements a too-small grid never writes."""
    bench = MatmulBenchmark(device, 100, 100, 100, get_dtype("float32"), repeats=20, seed=1)
    try:
        config = KERNELS["matmul_tiled"].default_config()
        compiled, _launch = bench.check(config)
        args = (bench.d_out, int(bench.d_a), int(bench.d_b), np.int32(100), np.int32(100), np.int32(100))
        half = lambda: compiled.function.prepared_async_call((3, 7), (16, 16, 1), None, *args)
        with pytest.raises(TrialFailed, match="not finite"):
            bench.verify(compiled, half)
    finally:
        bench.free()


def test_measure_gives_gflops_and_no_memcpy_figure(device):
    bench = MatmulBenchmark(device, 512, 512, 512, get_dtype("float32"), repeats=20, seed=2)
    try:
        m = bench.measure(KERNELS["matmul_reg"].default_config())
        assert m.gflops == pytest.approx(2 * 512**3 / (m.median_ms * 1e-3) / 1e9)
        assert m.pct_memcpy is None and m.registers > 0 and 0 < m.occupancy <= 1
        assert bench.memcpy_gbps is None and bench.l2_mode == "single"
    finally:
        bench.free()


def test_the_vendor_product_is_measured_or_says_why_not(device):
    from autotune.measure.vendor import vendor_matmul

    bench = MatmulBenchmark(device, 256, 192, 320, get_dtype("float32"), repeats=20, seed=3)
    try:
        result = vendor_matmul(bench)
    finally:
        bench.free()
    if result.note is None:
        assert result.gflops > 0 and result.median_ms > 0 and "cuBLAS" in result.name
    else:
        assert "not measured" in result.note or ":" in result.note


def test_short_search_then_best_lookup_and_bench(tmp_path):
    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    runner = CliRunner()
    r = runner.invoke(app, ["search", "--kernel", "matmul_tiled", "--m", "300", "--n", "200", "--k", "100",
                            "--sampler", "grid", "--repeats", "20", "--rounds", "2", "--db", db])
    assert r.exit_code == 0, r.output
    assert "3 ok" in r.output and "best: TILE_WIDTH=" in r.output and "GFLOP/s" in r.output

    r = runner.invoke(app, ["best", "--kernel", "matmul_tiled", "--m", "300", "--n", "200", "--k", "100", "--db", db])
    assert r.exit_code == 0, r.output
    clear_cache()
    with open_device(0):
        tuned = lookup("matmul_tiled", (300, 200, 100), device=0, db=db)
    assert tuned.rung == "exact" and tuned.config.key in r.output and tuned.gflops > 0

    r = runner.invoke(app, ["bench", "--m", "300", "--n", "200", "--k", "100", "--repeats", "20", "--db", db])
    assert r.exit_code == 0, r.output
    assert "% vendor" in r.output and "stored as bench run" in r.output
    with Store(db).session() as s:
        lines = s.scalars(select(BenchRow).order_by(BenchRow.position)).all()
        kernels = [line for line in lines if line.kind == "kernel"]
        assert {line.name for line in kernels} == set(MATMULS) and [line.kind for line in lines][-1] == "vendor"
        assert all(line.gflops > 0 and line.note is None for line in kernels)
        assert sum(line.source == "tuned" for line in kernels) <= 1  # the tiled one, unless its default won


def test_the_check_holds_for_numpy_float32_at_k_4096():
    """The tolerance the kernels are held to also admits NumPy's own float32 product."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (128, 4096)).astype(np.float32)
    b = rng.uniform(-1, 1, (4096, 96)).astype(np.float32)
    assert check_product(a @ b, a.astype(np.float64) @ b.astype(np.float64), 4096) < tolerance("float32", 4096)
