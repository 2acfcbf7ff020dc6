"""A recorded workload without a GPU, shared by the workload tests: launches of the histogram
example at two sizes and of smem_vec at one shape through ``autotune.launcher`` inside
``autotune.record`` (fake PyTorch and driver: tests/fake_gpu_arrays.py), and the fake GPU
benchmark of any kernel (tests/fakes.py ``FakeAnyBench``) in place of the real one."""

from __future__ import annotations

import contextlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTOGRAM = ROOT / "examples/histogram/histogram.toml"


def record_app(monkeypatch, device_info, db_url, name: str = "app", calls=(30, 10, 5)) -> None:
    """Record workload ``name``: histogram n=100000 ``calls[0]`` times, n=1000 ``calls[1]``
    times, smem_vec 100x64 float32 ``calls[2]`` times."""
    import autotune
    from autotune.kernel.loader import load_kernel
    from autotune.runtime import compiled as launch_module

    from fake_gpu_arrays import Tensor, install

    launch_module.clear_launchers()
    install(monkeypatch, load_kernel(HISTOGRAM), device_info)
    hist = autotune.launcher(HISTOGRAM, db=db_url)
    vec = autotune.launcher("smem_vec", db=db_url)
    bins = Tensor((256,), "uint32")
    with autotune.record(name, db=db_url, sample_every=2):
        for _ in range(calls[0]):
            hist(bins, Tensor((100000,), "uint8"))
        for _ in range(calls[1]):
            hist(bins, Tensor((1000,), "uint8"))
        for _ in range(calls[2]):
            vec(Tensor((64, 100)), Tensor((100, 64)))
    launch_module.clear_launchers()
    autotune.clear_cache()


def fake_gpu(monkeypatch, device_info, failures=None) -> list:
    """The fake benchmark of any kernel in place of the GPU's; returns the benches opened."""
    from autotune.measure import benchmark, device

    from fakes import FakeAnyBench

    opened = []

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        bench = FakeAnyBench(device_info, problem, failures, also=also)
        opened.append(bench)
        yield bench

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    return opened


def h100():
    """The device the module-scoped fixtures tune on: ``device_info``'s H100 (tests/conftest.py),
    for a fixture that cannot take a test's fixture."""
    from autotune.measure.device import DeviceInfo

    return DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                      total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0")


def tune_app(folder: Path, device_info):
    """The test workload recorded (:func:`record_app`) and tuned on the fake GPU
    (:func:`fake_gpu`: 5 trials a problem, seed 0) into ``folder/tuned.db``, its cubins under
    ``folder/cubins``, once for a module's tests (copy it with :func:`copy_database`); returns
    the tuning's outcome (``tune_workload``'s)."""
    import pytest

    import autotune
    from autotune.search.options import SearchOptions
    from autotune.workload.tune import tune_workload

    url = f"sqlite:///{folder / 'tuned.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOTUNE_DB", url)
        mp.setenv("AUTOTUNE_CACHE_DIR", str(folder / "cubins"))
        mp.setenv("AUTOTUNE_COMPILE_WORKERS", "0")
        record_app(mp, device_info, url)
        fake_gpu(mp, device_info)
        outcome = tune_workload("app", budget_s=60, db=url, max_trials=5, options=SearchOptions(seed=0))
    autotune.clear_cache()
    return outcome


def copy_database(source: Path, db_url: str) -> None:
    """The SQLite database file ``source`` copied into ``db_url``'s (a test's own, from a module's
    fixture), with SQLite's backup."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(db_url.removeprefix("sqlite:///")) as dst:
        src.backup(dst)
