"""A short real search on the GPU (``autotune.tune``) writes a best that `best`, `lookup`,
`autotune.compiled` and `transpose` use."""

import numpy as np
import pytest
from typer.testing import CliRunner

import autotune
from autotune import clear_cache, lookup, transpose
from autotune.cli import app
from autotune.measure.device import open_device

pytestmark = pytest.mark.gpu


def test_short_search_then_best_lookup_and_transpose(tmp_path):
    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    seen = []
    result = autotune.tune("smem_pad", {"rows": 1000, "cols": 3001}, "float32", device=0, trials=6, sampler="grid",
                           repeats=20, db=db, on_trial=lambda outcome, _: seen.append(outcome.status))
    assert seen == ["ok"] * 6 and len(result.measured) == 6 and result.decision is not None
    best = result.decision.winner.config

    r = CliRunner().invoke(app, ["best", "--kernel", "smem_pad", "--rows", "1000", "--cols", "3001", "--db", db])
    assert r.exit_code == 0, r.output
    assert "smem_pad" in r.output and best.key in r.output

    clear_cache()
    with open_device(0) as device:
        tuned = lookup("smem_pad", (1000, 3001), "float32", device=0, db=db)
        assert tuned.source == "tuned" and tuned.config == best
        assert lookup("smem_pad", (1000, 3002), device=device, db=db).rung == "nearest_shape"
        assert autotune.compiled("smem_pad", (1000, 3001), "float32", db=db).chosen.config == best

        from pycuda import gpuarray

        a = np.random.default_rng(0).standard_normal((1000, 3001)).astype(np.float32)
        at = transpose(gpuarray.to_gpu(a), kernel="smem_pad", db=db)
        assert at.shape == (3001, 1000)
        np.testing.assert_array_equal(at.get(), a.T)
        for dtype in (np.float64, np.int8, np.float16):
            b = (np.random.default_rng(1).standard_normal((33, 70)) * 50).astype(dtype)
            np.testing.assert_array_equal(transpose(gpuarray.to_gpu(b), db=db).get(), b.T)
