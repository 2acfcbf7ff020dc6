"""A sampler's search over a space it will measure whole (at most --trials valid configs: the
README main job's TPE over smem_pad's 54) compiles the space ahead on every core, the default
first, as a grid does (autotune/search/tune.py ``_ahead``); a larger space is not compiled ahead.
Either way the benchmark's helpers (the device comparison kernels, the bound kernel copy_row)
are compiled first, before the measuring child needs them."""

import shutil

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.measure import device_compare
from autotune.search.tune import _ahead


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_tpe_over_a_space_it_measures_whole_compiles_it_ahead(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "1")
    monkeypatch.setattr(device_compare, "_CUBINS", {})  # built once per process: an earlier test may have
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    valid = k.space().count(1000)
    assert valid == 54
    for trials in (1, valid - 1):
        with _ahead("tpe", k, f32, "sm_90", k.space(), trials) as ahead:
            assert ahead.wait(timeout=300)
        assert (ahead.done, ahead.helpers) == ([], 2)
    assert len(list(tmp_path.rglob("*.cubin"))) == 2  # the comparison kernels and copy_row
    for trials in (valid, 100):
        with _ahead("tpe", k, f32, "sm_90", k.space(), trials) as ahead:
            assert ahead.wait(count=1, timeout=300)
        assert ahead.done[0] == k.default_config()


def test_a_search_the_trials_cover_measures_the_space_in_order():
    """TPE with trials >= the space's valid configs and no timeout measures every one in the
    grid's order; a timeout, fewer trials or a grid keep the sampler asked for."""
    from autotune.search.tune import whole_space

    space = KERNELS["smem_pad"].space()
    assert whole_space("tpe", space, 54, None) and whole_space("random", space, 100, None)
    assert not whole_space("tpe", space, 53, None)
    assert not whole_space("tpe", space, 100, 60.0)
    assert not whole_space("grid", space, 100, None)

