"""A sampler's search over a space it will measure whole (at most --trials valid configs: the
README main job's TPE over smem_pad's 54) compiles the space ahead on every core, the default
first, as a grid does (autotune/search/tune.py ``_ahead``); a larger space is not compiled ahead."""

import shutil

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.search.tune import _ahead


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_tpe_over_a_space_it_measures_whole_compiles_it_ahead(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "1")
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    valid = k.space().count(1000)
    assert valid == 54
    for trials in (1, valid - 1):
        assert type(_ahead("tpe", k, f32, "sm_90", k.space(), trials)).__name__ == "nullcontext"
    for trials in (valid, 100):
        with _ahead("tpe", k, f32, "sm_90", k.space(), trials) as ahead:
            assert ahead.wait(count=1, timeout=300)
        assert ahead.done[0] == k.default_config()
