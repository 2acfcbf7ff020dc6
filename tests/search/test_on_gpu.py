"""A search compiles ahead on every core from before its measuring child exists: the
benchmark's helpers (the device comparison kernels, the bound kernel copy_row), the kernel's
default, and a grid's first configs in its order, as many as the pool holds (autotune/search/on_gpu.py
``compile_pool``); a search whose trials cover the space is a grid (``whole_space``)."""

import itertools
import shutil

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.measure import device_compare
from autotune.search.on_gpu import compile_pool, whole_space
from autotune.search.options import SearchOptions
from autotune.kernel.problem import Problem


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_grid_compiles_its_first_batches_in_order_and_a_strategy_its_default(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "1")
    monkeypatch.setattr(device_compare, "_CUBINS", {})  # built once per process: an earlier test may have
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    space = k.space()
    with compile_pool(Problem.of(k, (64, 64), f32), "sm_90", space, SearchOptions(strategy="tpe", trials=1), 2) as (_, ahead):
        assert ahead.wait(count=1, timeout=300)  # one worker: the helpers ended before
    assert (ahead.done, ahead.helpers) == ([k.default_config()], 2)
    with compile_pool(Problem.of(k, (64, 64), f32), "sm_90", space, SearchOptions(strategy="grid"), 2) as (_, ahead):
        assert ahead.wait(count=5, timeout=300)
    order = [c for c in space.configs() if c != k.default_config()]
    assert ahead.done == [k.default_config(), *itertools.islice(order, 4)]  # one worker: in order
    assert len(list(tmp_path.rglob("*.cubin"))) == 2 + 5  # the comparison kernels, copy_row, 5 configs


def test_a_search_the_trials_cover_measures_the_space_in_order():
    """TPE with trials >= the space's valid configs and no timeout measures every one in the
    grid's order; a timeout, fewer trials or a grid keep the strategy asked for."""
    space = KERNELS["smem_pad"].space()
    assert whole_space(SearchOptions(trials=54), space) and whole_space(SearchOptions(strategy="random"), space)
    assert not whole_space(SearchOptions(trials=53), space)
    assert not whole_space(SearchOptions(timeout=60.0), space)
    assert not whole_space(SearchOptions(strategy="grid"), space)


@pytest.mark.parametrize("trials, fed", [(100, 8), (3, 3), (1, 3)])
def test_a_grid_fills_the_pool_in_its_order_at_most_its_trials(monkeypatch, trials, fed):
    """Issue 47 (the main job, cold): the grid's order is known, so the pool is fed as many
    configs as it holds (2 workers x AHEAD = 8: the default and the next 7), not two batches
    (then the cores idled until the search, its measuring child started, proposed more); at
    most the search's trials (never fewer than two batches)."""
    from autotune.measure import compile as compiling
    from autotune.measure.pipeline import AHEAD

    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "2")
    monkeypatch.setattr(device_compare, "compare_cubin", lambda arch: b"")
    monkeypatch.setattr(compiling, "build_cubin", lambda *a, **k: (b"cubin", {}, True))
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    space, batch = k.space(), 1
    assert 2 * AHEAD == 8
    with compile_pool(Problem.of(k, (64, 64), f32), "sm_90", space, SearchOptions(strategy="grid", trials=trials),
                      batch) as (_, ahead):
        assert ahead.wait(count=fed, timeout=300)
        assert ahead.helpers == 2
    order = [k.default_config(), *(c for c in space.configs() if c != k.default_config())]
    assert sorted(ahead.done, key=order.index) == order[:fed]
