"""The Python paths users know, on the GPU: ``autotune.tune_kernel`` tunes a .cu in one call on
the user's arrays and answer (a wrong config is a failed trial, never the best), and
``autotune.launcher(kernel, tune="quick")`` tunes a new shape in a child process, stores it,
launches the winner and says so once."""

import warnings

import numpy as np
import pytest

import autotune
from autotune.runtime.first_sight import TuningWarning

pytestmark = pytest.mark.gpu

SCALE = r"""
extern "C" __global__ void scale(float *y, const float *x, int n)
{
    int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
#if BLOCK_SIZE == 96
    if (i < n && i != 5) y[i] = 2.0f * x[i];  // a planted bug: element 5 never written
#else
    if (i < n) y[i] = 2.0f * x[i];
#endif
}
"""


def test_tune_kernel_tunes_a_cu_on_the_users_arrays(tmp_path):
    n = 1 << 20
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    done = autotune.tune_kernel("scale", SCALE, {"y": np.zeros(n, np.float32), "x": x, "n": np.int32(n)},
                                block=["BLOCK_SIZE", 1, 1], grid=["cdiv(n, BLOCK_SIZE)", 1, 1],
                                space={"BLOCK_SIZE": [64, 96, 128, 256, 512]}, answer={"y": 2 * x},
                                folder=tmp_path / "scale", strategy="grid", trials=5, repeats=20,
                                db=f"sqlite:///{tmp_path / 'k.db'}")
    statuses = {o.config["BLOCK_SIZE"]: o.status for o in done.result.outcomes}
    assert statuses[96] == "wrong_result" and all(s == "ok" for b, s in statuses.items() if b != 96)
    assert done.result.decision.winner.config["BLOCK_SIZE"] != 96 and done.file.is_file()


def test_launcher_tunes_a_new_shape_once_in_a_child(tmp_path):
    torch = pytest.importorskip("torch")
    db = f"sqlite:///{tmp_path / 'first.db'}"
    f = autotune.launcher("smem_pad", db=db, tune="quick")
    x = torch.randn(1000, 3001, device="cuda")
    out = torch.empty(3001, 1000, device="cuda")
    with pytest.warns(TuningWarning, match="smem_pad 1000x3001 float32 on GPU 0 had no tuned config; tuned it"):
        f(out, x)
    torch.cuda.synchronize()
    assert torch.equal(out, x.t()) and f.prepared(out, x).launcher.chosen.rung == "exact"
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningWarning)
        f(out, x)  # said once
    torch.cuda.synchronize()
    assert torch.equal(out, x.t())
