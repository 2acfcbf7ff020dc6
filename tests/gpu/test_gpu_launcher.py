"""``autotune.launcher`` on the GPU: dims read from PyTorch, CuPy and PyCUDA arrays, the results
checked; ``reset`` in the check, the timing and the launcher (examples/histogram, tuned here);
launches captured by ``torch.cuda.graph``."""

from pathlib import Path

import importlib.util

import numpy as np
import pytest

import autotune
from autotune.errors import InvalidInputError, TrialFailed
from autotune.kernel.catalog import get_kernel
from autotune.kernel.problem import Problem
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.loader import kernel_from_dict, load_kernel
from autotune.measure.benchmark import open_benchmark
from autotune.measure.measure_options import MeasureOptions

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
HISTOGRAM = ROOT / "examples/histogram/histogram.toml"


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "uint32"):
        pytest.skip("this PyTorch has no uint32 tensors")
    torch.zeros(1, device="cuda")
    return torch


def bincount(torch, data):
    return torch.bincount(data.long(), minlength=256).cpu().numpy().astype(np.uint32)


def uint32_zeros(torch, n):
    return torch.zeros(n, device="cuda", dtype=torch.int32).view(torch.uint32)


def test_the_histogram_is_tuned_and_launched_from_pytorch_with_reset(torch, tmp_path):
    db = f"sqlite:///{tmp_path / 'tuned.db'}"
    n = 1 << 24
    result = autotune.tune(str(HISTOGRAM), {"n": n}, "uint8", trials=6, sampler="random", seed=0, repeats=20, db=db)
    assert len(result.measured) >= 1
    autotune.clear_cache()
    f = autotune.launcher(HISTOGRAM, db=db, reset=True)
    data = torch.randint(0, 256, (n,), device="cuda", dtype=torch.uint8)
    bins = uint32_zeros(torch, 256)
    for _ in range(3):  # reset: every launch starts from zeros
        f(bins, data)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bins.view(torch.int32).cpu().numpy().view(np.uint32), bincount(torch, data))
    assert f.prepared(bins, data).launcher.chosen.rung == "exact"
    f(bins, data, reset=False)  # no reset: adds to what is there
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bins.view(torch.int32).cpu().numpy().view(np.uint32), 2 * bincount(torch, data))
    odd = torch.randint(0, 256, (1001,), device="cuda", dtype=torch.uint8)  # another shape: the dispatch
    f(bins, odd)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bins.view(torch.int32).cpu().numpy().view(np.uint32), bincount(torch, odd))
    assert f.prepared(bins, odd).launcher.chosen.rung == "dispatch"


def test_without_reset_the_histogram_is_a_wrong_result(tmp_path):
    """The bins start poisoned in the check unless the kernel file resets them."""
    import tomllib

    doc = tomllib.loads(HISTOGRAM.read_text())
    del doc["args"][0]["reset"]
    doc["name"] = "histogram_no_reset"
    k = kernel_from_dict(doc, HISTOGRAM)
    with open_benchmark(0, Problem.of(k, {"n": 100_000}, get_dtype("uint8")),
                        MeasureOptions(repeats=20, seed=0, ci=0)) as bench:
        with pytest.raises(TrialFailed) as info:
            bench.measure(k.default_config())
    assert info.value.status == "wrong_result"
    kr = load_kernel(HISTOGRAM)
    with open_benchmark(0, Problem.of(kr, {"n": 100_000}, get_dtype("uint8")),
                        MeasureOptions(repeats=20, seed=0, ci=0)) as bench:
        assert bench.measure(kr.default_config()).gbps > 0


def test_a_transpose_dispatches_on_the_shapes_of_torch_cupy_and_pycuda_arrays(torch, tmp_path):
    db = f"sqlite:///{tmp_path / 'none.db'}"
    f = autotune.launcher("smem_vec", db=db)
    for rows, cols in [(100, 300), (64, 64), (1000, 3001), (100, 300)]:
        x = torch.rand(rows, cols, device="cuda")
        out = torch.empty(cols, rows, device="cuda")
        f(out, x)
        torch.cuda.synchronize()
        assert torch.equal(out, x.t())
    assert len(f._prepared) == 3
    with pytest.raises(InvalidInputError, match=r"the arrays disagree on rows = 100 \(out axis 1\), 101 \(src axis 0\)"):
        f(torch.empty(300, 100, device="cuda"), torch.empty(101, 300, device="cuda"))
    cupy = pytest.importorskip("cupy")
    for _ in range(2):  # the first sight, then the hot path
        a = cupy.random.rand(333, 65, dtype=cupy.float32)
        b = cupy.empty((65, 333), cupy.float32)
        f(b, a)
        cupy.cuda.get_current_stream().synchronize()
        assert bool((b == a.T).all())
    with pytest.raises(InvalidInputError, match="src has strides"):
        f(b, cupy.random.rand(65, 333, dtype=cupy.float32).T)
    if importlib.util.find_spec("pycuda") is None:  # PyCUDA's arrays: only where PyCUDA is installed
        return
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.gpuarray as gpuarray

    for seed in range(2):
        h = np.random.default_rng(seed).random((77, 129), dtype=np.float32)
        g, go = gpuarray.to_gpu(h), gpuarray.empty((129, 77), np.float32)
        f(go, g)
        np.testing.assert_array_equal(go.get(), h.T)


def test_launches_and_resets_are_captured_by_a_cuda_graph(torch, tmp_path):
    f = autotune.launcher(HISTOGRAM, db=f"sqlite:///{tmp_path / 'none.db'}")
    data = torch.randint(0, 256, (1 << 20,), device="cuda", dtype=torch.uint8)
    bins = uint32_zeros(torch, 256)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(bins, data, reset=True)  # first sight outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        f(bins, data, reset=True)
        f(bins, data)
    bins.view(torch.int32).fill_(7)
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bins.view(torch.int32).cpu().numpy().view(np.uint32), 2 * bincount(torch, data))


def test_the_launcher_takes_100_kib_of_dynamic_shared_memory(torch, tmp_path):
    """The kernel file of tests/gpu/test_gpu_shared_memory.py, launched for two shapes."""
    from test_gpu_shared_memory import BIG_SHARED
    from kernel_files import write_kernel

    (tmp_path / "ref.py").write_text("def reverse(**a):\n    return a['in'][::-1]\n")
    k = load_kernel(write_kernel(tmp_path / "big.toml", {**BIG_SHARED, "name": "big_shared_launcher"}))
    f = autotune.launcher(k, db=f"sqlite:///{tmp_path / 'none.db'}")
    for n in (25600 * 3, 1_000_003):
        src = torch.arange(n, dtype=torch.float32, device="cuda")
        out = torch.empty_like(src)
        f(out, src)
        torch.cuda.synchronize()
        a = np.arange(n, dtype=np.float32)
        want = np.concatenate([a[s:s + 25600][::-1] for s in range(0, n, 25600)])
        np.testing.assert_array_equal(out.cpu().numpy(), want)
        assert f.prepared(out, src).launcher.shared == 100 * 1024


# -- the same_arch guard (autotune/runtime/guard.py) -------------------------------------------

SMEM_PAD_CANDIDATES = [  # smem_pad configs far apart at 4096x4096: small and large tiles, few and many rows
    {"BLOCK_ROWS": 4, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 16},
    {"BLOCK_ROWS": 16, "DIAGONAL": 1, "IPAD": 4, "TILE_DIM": 16},
    {"BLOCK_ROWS": 4, "DIAGONAL": 1, "IPAD": 4, "TILE_DIM": 64},
    {"BLOCK_ROWS": 16, "DIAGONAL": 0, "IPAD": 2, "TILE_DIM": 64},
    {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 32},
    {"BLOCK_ROWS": 16, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 32},
]


def measured_here(kernel, dims, dtype, configs):
    """Each of ``configs`` timed on this GPU by the benchmark: ``[(median ms, config)]``, slowest
    first (a config that does not build or fit is left out)."""
    from autotune.kernel.catalog import resolve_kernel

    k = resolve_kernel(kernel)
    out = []
    with open_benchmark(0, Problem.of(k, dims, get_dtype(dtype)), MeasureOptions(repeats=30, seed=0, ci=0)) as bench:
        for c in configs:
            try:
                out.append((bench.measure(c).median_ms, c))
            except TrialFailed:
                continue
    return sorted(out, key=lambda t: -t[0])


@pytest.fixture(scope="module")
def smem_pad_times(tmp_path_factory):
    """The candidates of smem_pad timed here at 4096x4096 once for the module (built into a cubin
    cache of its own, never the user's): the shape and ``[(median ms, config)]``, slowest first."""
    shape = (4096, 4096)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path_factory.mktemp("cubins")))
        configs = [Config.of("smem_pad", c) for c in SMEM_PAD_CANDIDATES]
        return shape, measured_here("smem_pad", shape, "float32", configs)


def stored_on_another_model(db, kernel, dims, dtype, config, ms):
    """``config`` stored in ``db`` as the best of ``kernel`` at ``dims`` tuned on another GPU
    model of this GPU's compute capability (this GPU's identity renamed), so that lookup answers
    it here at the same_arch rung."""
    from dataclasses import replace

    from autotune.measure.device import current_device
    from autotune.measure.measurement import Measurement
    from autotune.store.key import tuning_key
    from autotune.store.opening import open_results

    here = current_device()
    elsewhere = replace(here, name=f"{here.name} (another model)", sm_count=here.sm_count - 2)
    key = tuning_key(kernel, elsewhere, dims, dtype)
    store = open_results(db)
    try:
        sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=None, memcpy_gbps=3000.0)
        store.record_trial(sid, 0, config, status="ok", measurement=Measurement(ms, ms, ms, 1000.0, 30.0, 20, 4000, 50))
        store.finish_search(sid, "finished")
    finally:
        store.close()


def test_a_same_arch_config_slower_here_gives_way_to_the_default(torch, tmp_path, smem_pad_times):
    """The slowest of a few smem_pad configs at 4096x4096, stored as tuned on another GPU model
    of this compute capability: the first launch times it against the default, keeps the
    default, says so, and the transpose is right."""
    shape, times = smem_pad_times
    default = get_kernel("smem_pad").default_config()
    (slow_ms, slow), default_ms = times[0], next(ms for ms, c in times if c == default)
    assert slow_ms > 1.1 * default_ms, times  # the premise: a config clearly slower than the default here
    db = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    stored_on_another_model(db, "smem_pad", shape, "float32", slow, slow_ms / 2)
    autotune.clear_cache()
    assert autotune.lookup("smem_pad", shape, "float32", db=db).rung == "same_arch"
    f = autotune.launcher("smem_pad", db=db)
    x = torch.rand(*shape, device="cuda")
    out = torch.empty(*shape, device="cuda")
    f(out, x)
    torch.cuda.synchronize()
    assert torch.equal(out, x.t())
    chosen = f.prepared(out, x).launcher.chosen
    assert (chosen.rung, chosen.config) == ("default", default), chosen.note
    assert f"same_arch: shipped config {slow.key} timed " in chosen.note and chosen.note.endswith(
        "here at first launch; the default kept")


def test_a_same_arch_config_faster_here_is_kept(torch, tmp_path, smem_pad_times):
    """The fastest of a few smem_pad configs stored as tuned on another GPU model, against the
    slowest as the default (``compiled(default=...)``, the rule's config of the default rung):
    the shipped config is kept, and said so."""
    shape, times = smem_pad_times
    (slow_ms, slow), (fast_ms, fast) = times[0], times[-1]
    assert slow_ms > 1.1 * fast_ms, times
    db = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    stored_on_another_model(db, "smem_pad", shape, "float32", fast, fast_ms)
    autotune.clear_cache()
    g = autotune.compiled("smem_pad", shape, "float32", db=db, default=slow)
    x = torch.rand(*shape, device="cuda")
    out = torch.empty(*shape, device="cuda")
    g(out, x)
    torch.cuda.synchronize()
    assert torch.equal(out, x.t())
    assert (g.chosen.rung, g.chosen.config) == ("same_arch", fast), g.chosen.note
    assert "; same_arch: timed " in g.chosen.note and g.chosen.note.endswith("faster) here at first launch; kept")
    again = autotune.compiled("smem_pad", shape, "float32", db=db, default=slow)
    assert again is g and g.pending is None  # timed once: the verdict stays with the launcher


def test_the_guard_leaves_the_histograms_bins_as_one_launch_would(torch, tmp_path):
    """The histogram (bins reset by the kernel file, added to by each launch) at the same_arch
    rung: the guard's launches count into scratch copies, so bins that held counts hold them
    plus exactly one launch's after the first call."""
    n = 1 << 22
    config = Config.of("histogram256", {"BLOCK_SIZE": 1024, "COPIES": 1, "MAX_BLOCKS": 264})
    db = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    stored_on_another_model(db, HISTOGRAM, {"n": n}, "uint8", config, 0.01)
    autotune.clear_cache()
    f = autotune.launcher(HISTOGRAM, db=db)
    data = torch.randint(0, 256, (n,), device="cuda", dtype=torch.uint8)
    bins = uint32_zeros(torch, 256)
    bins.view(torch.int32).fill_(5)
    f(bins, data)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(bins.view(torch.int32).cpu().numpy().view(np.uint32), 5 + bincount(torch, data))
    assert "; same_arch: " in f.prepared(bins, data).launcher.chosen.note
