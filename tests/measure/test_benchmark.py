"""The benchmark on a fake ``cuda.bindings.driver`` (tests/fake_cuda.py): what it refuses before
it compiles."""

from __future__ import annotations

import pytest

from autotune.errors import TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem
from autotune.measure.measure_options import MeasureOptions

from fake_cuda import chosen_bindings


@pytest.fixture
def fake(monkeypatch):
    """The cuda-bindings backend over a FakeCu, chosen (AUTOTUNE_BACKEND) and made."""
    yield from chosen_bindings(monkeypatch)


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



def test_the_benchmark_measures_as_its_measure_options_say(fake):
    """The typed options reach the benchmark whole: warm-up, samples, certified timing off,
    no early stop, no energy."""
    from autotune.measure import benchmark

    problem = Problem.of("smem_pad", {"rows": 40, "cols": 72}, "float32")
    measure = MeasureOptions(repeats=21, warmup=3, seed=1, ci=0, early_stop=False)
    with benchmark.open_benchmark(0, problem, measure, bounds=False) as bench:  # (the fake frees nothing: one a test)
        assert bench.measure_options is measure and (bench.repeats, bench.warmup) == (21, 3)
        assert bench.precision is None and bench.early is None and bench.meter is None


def test_a_benchmark_opened_without_options_measures_as_a_search_does(fake):
    from autotune.measure import benchmark

    with benchmark.open_benchmark(0, Problem.of("smem_pad", {"rows": 40, "cols": 72}, "float32"),
                                  bounds=False) as bench:
        assert bench.measure_options == MeasureOptions() and bench.precision == MeasureOptions().precision
        assert bench.early is not None and (bench.repeats, bench.warmup) == (50, 10)


def test_a_benchmark_begins_its_python_reference_as_it_opens_and_verifies_with_it(fake, monkeypatch):
    """Issue 47 (the main job): the Python reference (smem_pad's transpose) is begun in a thread
    as the benchmark opens, once; the first verification takes that result (no second run)."""
    import threading

    import numpy as np

    from autotune.measure import benchmark, reference

    ran, begun = [], threading.Event()
    real = reference.python_reference

    def counted(*args):
        ran.append(threading.current_thread().name)
        begun.set()
        return real(*args)

    monkeypatch.setattr(reference, "python_reference", counted)
    problem = Problem.of("smem_pad", {"rows": 40, "cols": 72}, "float32")
    with benchmark.open_benchmark(0, problem, MeasureOptions(repeats=20, warmup=2, seed=1, ci=0),
                                  bounds=False) as bench:
        assert begun.wait(60) and ran == ["autotune-reference"]  # begun as it opened, before any config
        expected = bench._reference(bench._values)
        assert ran == ["autotune-reference"]  # the first verification's reference: that result
        src = bench._values[1]
        np.testing.assert_array_equal(expected[0], src.T)
