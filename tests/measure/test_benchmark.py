"""The benchmark on a fake ``cuda.bindings.driver`` (tests/fake_cuda.py): what it refuses before
it compiles."""

from __future__ import annotations

import pytest

from autotune.errors import TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem
from autotune.measure import backends
from autotune.measure.backends.bindings import BindingsBackend
from autotune.measure.measure_options import MeasureOptions

from fake_cuda import FakeCu


@pytest.fixture
def fake(monkeypatch):
    """The cuda-bindings backend over a FakeCu, chosen (AUTOTUNE_BACKEND) and made."""
    cu = FakeCu()
    monkeypatch.setattr(backends, "_made", {"cuda-bindings": BindingsBackend(cu)})
    monkeypatch.setenv(backends.ENV, "cuda-bindings")
    from autotune.measure import device

    device._describe_bus.cache_clear()
    yield cu
    device._describe_bus.cache_clear()


@pytest.mark.parametrize("macros, words", [
    ({"TILE_DIM": 64, "BLOCK_ROWS": 32}, "2048 threads > 1024"),  # the block is over the limit
    ({"TILE_DIM": 256, "BLOCK_ROWS": 4}, "263168 dynamic, before the static"),  # the tile is over the device's
])
def test_a_config_the_launch_expressions_refuse_is_never_compiled(fake, monkeypatch, macros, words):
    """Issue 47: a config whose launch the kernel file's expressions already refuse fails
    ``resources`` with the reason before nvcc runs (where no compile pool refused it first)."""
    from autotune.measure import benchmark, compile as compile_module

    built = []
    monkeypatch.setattr(compile_module, "build_cubin", lambda *a, **k: built.append(a[1]) or (b"c", {}, True))
    problem = Problem.of("smem_pad", {"rows": 40, "cols": 72}, "float32")
    with benchmark.open_benchmark(0, problem, MeasureOptions(repeats=20, warmup=2, seed=1, ci=0),
                                  bounds=False) as bench:
        with pytest.raises(TrialFailed) as failed:
            bench.measure(Config.of("smem_pad", {"IPAD": 1, "DIAGONAL": 0, **macros}))
    assert failed.value.status == "resources" and words in failed.value.reason
    assert built == []
