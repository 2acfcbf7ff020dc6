"""Compiling ahead (no GPU): the configs land in the cubin cache, so the benchmark only loads them."""

import shutil

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.measure.compile import build_cubin
from autotune.measure.pipeline import compile_ahead

if shutil.which("nvcc") is None:
    pytest.skip("nvcc is not on PATH", allow_module_level=True)


def test_configs_compiled_ahead_are_cache_hits_afterwards():
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    configs = k.space().configs()[:4]
    with compile_ahead(k, f32, "sm_90", configs, n_workers=2) as ahead:
        assert ahead.wait(timeout=300)
    assert sorted(ahead.done) == sorted(configs)
    assert all(build_cubin(k, c, f32, "sm_90")[2] for c in configs)  # cached: nothing compiles again


def test_a_config_that_fails_to_compile_is_left_for_the_benchmark():
    from autotune.errors import TrialFailed
    from autotune.kernel.config import Config

    k, f64 = KERNELS["smem_vec"], get_dtype("float64")
    big = Config.of("smem_vec", {**k.defaults, "TILE_DIM": 128, "BLOCK_ROWS": 8})  # > 48 KiB static shared
    with compile_ahead(k, f64, "sm_90", [big], n_workers=1) as ahead:
        assert ahead.wait(timeout=300)
    assert ahead.done == [big]
    with pytest.raises(TrialFailed):
        build_cubin(k, big, f64, "sm_90")


def test_leaving_early_drops_the_builds_not_started():
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    with compile_ahead(k, f32, "sm_90", k.space().configs(), n_workers=1) as ahead:
        pass
    assert len(ahead.done) < len(k.space().configs())


def test_a_search_compiles_ahead_unless_turned_off(monkeypatch):
    from autotune.errors import InvalidInputError
    from autotune.measure.pipeline import workers
    from autotune.search.on_gpu import compile_pool
    from autotune.kernel.problem import Problem
    from autotune.search.options import SearchOptions

    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    assert workers() == 0  # conftest: tests with fake GPUs run no nvcc in the background
    with compile_pool(Problem.of(k, (64, 64), f32), "sm_90", k.space(), SearchOptions(strategy="grid"), 2) as pool:
        assert pool == (None, None)
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "1")
    with compile_pool(Problem.of(k, (64, 64), f32), "sm_90", k.space(), SearchOptions(strategy="tpe"), 2) as (feed, ahead):
        assert ahead.wait(count=1, timeout=300)  # the default, before any batch is proposed
        feed.put([k.space().configs()[-1]])  # a batch the strategy proposed
        assert ahead.wait(count=2, timeout=300)
    assert ahead.helpers == 2  # the comparison kernels and the bound kernel
    assert ahead.done == [k.default_config(), k.space().configs()[-1]]
    with compile_pool(Problem.of(k, (64, 64), f32), "sm_90", k.space(), SearchOptions(strategy="grid"), 2) as (feed, ahead):
        assert ahead.wait(count=1, timeout=300)  # the first build ended; the rest are dropped on leaving
    assert ahead.done[0] == k.default_config()  # the default first, as the grid measures it
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "many")
    with pytest.raises(InvalidInputError, match="AUTOTUNE_COMPILE_WORKERS='many' is not allowed"):
        workers()


def test_nvcc_ahead_runs_at_a_lower_cpu_priority_than_the_search(monkeypatch):
    """The pool's threads (and the nvcc each starts, which inherits it) are NICE lower than the
    process that measures, so a burst of builds never slows the measurement beside it."""
    import os
    import sys
    import threading

    from autotune.measure import compile as compiling
    from autotune.measure.pipeline import NICE

    if not sys.platform.startswith("linux"):
        pytest.skip("a nice value per thread is Linux's")
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    seen = []
    monkeypatch.setattr(compiling, "build_cubin",
                        lambda *a, **k: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with compile_ahead(k, f32, "sm_90", k.space().configs()[:3], n_workers=2) as ahead:
        assert ahead.wait(timeout=60)
    assert seen == [min(19, mine + NICE)] * 3
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the search's own thread: unchanged
