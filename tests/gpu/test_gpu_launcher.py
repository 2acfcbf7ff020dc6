"""``autotune.launcher`` on the GPU: dims read from PyTorch, CuPy and PyCUDA arrays, the results
checked; ``reset`` in the check, the timing and the launcher (examples/histogram, tuned here);
launches captured by ``torch.cuda.graph``."""

from pathlib import Path

import importlib.util

import numpy as np
import pytest

import autotune
from autotune.errors import InvalidInputError, TrialFailed
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
