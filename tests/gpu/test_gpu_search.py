"""A short real search on the GPU writes a best that `best`, `lookup` and `transpose` use."""

import numpy as np
import pytest
from typer.testing import CliRunner

from autotune import clear_cache, lookup, transpose
from autotune.cli import app
from autotune.measure.device import open_device

pytestmark = pytest.mark.gpu


def test_short_search_then_best_lookup_and_transpose(tmp_path):
    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    runner = CliRunner()
    r = runner.invoke(app, ["search", "--kernel", "smem_pad", "--device", "0", "--rows", "1000", "--cols", "3001",
                            "--trials", "6", "--sampler", "grid", "--db", db])
    assert r.exit_code == 0, r.output
    assert "best: " in r.output and "6 ok" in r.output

    r = runner.invoke(app, ["best", "--rows", "1000", "--cols", "3001", "--db", db])
    assert r.exit_code == 0, r.output and "smem_pad" in r.output

    clear_cache()
    with open_device(0) as device:
        tuned = lookup("smem_pad", (1000, 3001), "float32", device=0, db=db)
        assert tuned.source == "tuned" and tuned.config.key in r.output
        assert lookup("smem_pad", (1000, 3002), device=device, db=db).rung == "nearest_shape"

        from pycuda import gpuarray

        a = np.random.default_rng(0).standard_normal((1000, 3001)).astype(np.float32)
        at = transpose(gpuarray.to_gpu(a), kernel="smem_pad", db=db)
        assert at.shape == (3001, 1000)
        np.testing.assert_array_equal(at.get(), a.T)
        for dtype in (np.float64, np.int8, np.float16):
            b = (np.random.default_rng(1).standard_normal((33, 70)) * 50).astype(dtype)
            np.testing.assert_array_equal(transpose(gpuarray.to_gpu(b), db=db).get(), b.T)
