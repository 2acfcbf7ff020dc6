"""A short real search on the GPU (``autotune.tune``) writes a best that `best`, `lookup`,
`autotune.compiled` and `transpose` use; a batched TPE search measures distinct valid configs,
the default first, each one a trial of the stored study."""

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
    options = autotune.SearchOptions(trials=6, strategy="grid", repeats=20)
    result = autotune.tune("smem_pad", {"rows": 1000, "cols": 3001}, "float32", device=0, options=options, db=db,
                           on_trial=lambda outcome, _: seen.append(outcome.status))
    assert seen == ["ok"] * 6 and len(result.measured) == 6 and result.decision is not None
    best = result.decision.winner.config

    r = CliRunner().invoke(app, ["best", "--kernel", "smem_pad", "--rows", "1000", "--cols", "3001", "--db", db])
    assert r.exit_code == 0, r.output
    assert "smem_pad" in r.output and best.key in r.output

    clear_cache()
    with open_device(0) as device:
        tuned = lookup("smem_pad", (1000, 3001), "float32", device=0, db=db)
        assert tuned.source == "tuned" and tuned.config == best
        assert lookup("smem_pad", (1000, 3002), device=device, db=db).rung == "dispatch"
        assert lookup("smem_pad", (1000, 3002), device=device, db=db, shape_rung="nearest_shape").rung == "nearest_shape"
        assert autotune.compiled("smem_pad", (1000, 3001), "float32", db=db).chosen.config == best

        to_gpu, to_host = _arrays()
        a = np.random.default_rng(0).standard_normal((1000, 3001)).astype(np.float32)
        at = transpose(to_gpu(a), kernel="smem_pad", db=db)
        assert at.shape == (3001, 1000)
        np.testing.assert_array_equal(to_host(at), a.T)
        for dtype in (np.float64, np.int8, np.float16):
            b = (np.random.default_rng(1).standard_normal((33, 70)) * 50).astype(dtype)
            np.testing.assert_array_equal(to_host(transpose(to_gpu(b), db=db)), b.T)


def _arrays():
    """``(to_gpu, to_host)`` of the first GPU array library installed: CuPy, PyTorch or PyCUDA."""
    try:
        import cupy

        return cupy.asarray, cupy.asnumpy
    except ImportError:
        pass
    try:
        import torch

        return (lambda a: torch.from_numpy(a).cuda()), (lambda t: t.cpu().numpy())
    except ImportError:
        pass
    import pycuda.autoprimaryctx  # noqa: F401
    from pycuda import gpuarray

    return gpuarray.to_gpu, lambda g: g.get()


def test_a_batched_tpe_search_compiles_ahead_and_stores_one_trial_per_config(tmp_path, monkeypatch):
    import optuna

    from autotune.kernel.catalog import KERNELS

    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path / "cubins"))  # every config compiled by this search
    db = f"sqlite:///{tmp_path / 'tpe.db'}"
    result = autotune.tune("matmul_warp", {"m": 1024, "n": 1024, "k": 1024}, "float32", device=0, trials=12,
                           strategy="tpe", batch=4, seed=1, repeats=20, db=db)
    configs = [o.config for o in result.outcomes]
    space = KERNELS["matmul_warp"].space()
    assert len(configs) == 12 == len(set(configs)) and result.stopped == "trials"
    assert configs[0] == KERNELS["matmul_warp"].default_config()
    assert all(not space.violations(c) for c in configs)
    assert any(o.status == "ok" for o in result.outcomes) and result.decision is not None
    trials = optuna.load_study(study_name=result.key.study_name, storage=db).trials
    assert len(trials) == 12 and {t.user_attrs["status"] for t in trials} == {o.status for o in result.outcomes}
    assert "propose" in result.phase_totals


def test_one_compile_is_measured_at_every_shape_in_one_measuring_process(tmp_path):
    """A matmul_warp search with two companion shapes (autotune/search/companions.py): each
    config measured ok at the search's shape is a trial at both others (verified there by the
    device's relative norm), each shape gets its own re-timed winner, and lookup answers it."""
    from autotune.kernel.problem import Problem
    from autotune.search.on_gpu import search_on_gpu

    db = f"sqlite:///{tmp_path / 'gpu.db'}"
    options = autotune.SearchOptions(trials=5, strategy="random", seed=0, repeats=20, top_k=3, rounds=2)
    main = Problem.of("matmul_warp", {"m": 512, "n": 512, "k": 256}, "float32")
    others = [Problem.of("matmul_warp", {"m": 256, "n": 1024, "k": 128}, "float32"),
              Problem.of("matmul_warp", {"m": 1000, "n": 300, "k": 70}, "float32")]
    result = search_on_gpu(main, 0, main.kernel.space(), options, db=db, also=others)
    ok = {o.config for o in result.outcomes if o.status == "ok"}
    assert ok and result.decision is not None and len(result.companions) == 2
    clear_cache()
    for problem, found in zip(others, result.companions):
        assert {o.config for o in found.outcomes} == ok and {o.status for o in found.outcomes} == {"ok"}
        assert found.decision is not None
        chosen = lookup("matmul_warp", problem.values, "float32", device=0, db=db)
        assert chosen.rung == "exact" and chosen.config == found.decision.winner.config


def test_the_readme_search_run_twice_shows_the_tuned_best(tmp_path):
    """Issue 49 item 2 on the GPU: the second run of the same search measures nothing, says the
    problem is tuned and prints the stored best (exit 0); ``best`` prints the same config."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "AUTOTUNE_DB": f"sqlite:///{tmp_path / 'twice.db'}"}
    search = [sys.executable, "-m", "autotune", "search", "--kernel", "smem_pad", "--device", "0", "--size", "256",
              "--trials", "4"]
    first = subprocess.run(search, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    again = subprocess.run(search, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "smem_pad 256x256 float32 on " in again.stdout and "is tuned already" in again.stdout
    best = subprocess.run([sys.executable, "-m", "autotune", "best", "--kernel", "smem_pad", "--size", "256",
                           "--format", "json"], env=env, capture_output=True, text=True, timeout=600)
    config = json.loads(best.stdout)["records"][0]["config"]
    assert ",".join(f"{k}={v}" for k, v in config.items()) in again.stdout


def test_two_configs_of_one_binary_are_measured_once_and_a_block_too_large_is_never_compiled(tmp_path, monkeypatch):
    """Issue 47 on the GPU, through the real compile pool: a macro the source ignores (UNUSED)
    gives two configs one cubin and one launch, so the second is recorded with the first's
    measurement; a 2048-thread block fails ``resources`` before nvcc."""
    from autotune.measure import compile as compiling
    from autotune.search.outcome import SAME_BINARY

    from kernel_files import catalog_doc, write_kernel

    doc = catalog_doc("smem_pad")
    doc["name"] = "smem_pad_twins"
    doc["space"] = {"params": {"TILE_DIM": [32, 64], "BLOCK_ROWS": [8, 32], "IPAD": [1], "DIAGONAL": [0],
                               "UNUSED": [0, 1]}, "constraints": [],
                    "default": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0, "UNUSED": 0}}
    path = write_kernel(tmp_path / "twins.toml", doc)
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "2")
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path / "cubins"))
    built = []
    build = compiling.build_cubin
    monkeypatch.setattr(compiling, "build_cubin", lambda k, c, *a, **kw: built.append(c) or build(k, c, *a, **kw))
    result = autotune.tune(path, {"rows": 1000, "cols": 3001}, "float32", device=0, trials=8, strategy="grid",
                           repeats=20, db=f"sqlite:///{tmp_path / 'twins.db'}")
    wide = [o for o in result.outcomes if o.config.as_dict()["TILE_DIM"] * o.config.as_dict()["BLOCK_ROWS"] > 1024]
    assert wide and all(o.status == "resources" and "threads per block" in o.reason for o in wide)
    assert not {o.config for o in wide} & set(built)  # never compiled
    same = [o for o in result.outcomes if o.same_as is not None]
    ok = [o for o in result.outcomes if o.status == "ok" and o.same_as is None]
    assert len(same) == len(ok) == 3 and all(o.reason.startswith(SAME_BINARY) for o in same)
    assert not set(result.measured) & {o.config for o in same}
