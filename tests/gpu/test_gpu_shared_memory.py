"""Dynamic shared memory above 48 KiB on the GPU: a kernel file whose block takes 100 KiB
(tests/gpu/big_shared.cu) is verified and timed by a benchmark, fails with its reason over the
device's limit, and launches through ``autotune.compiled`` with the right result."""

from pathlib import Path

import numpy as np
import pytest

import autotune
from autotune.errors import TrialFailed
from autotune.kernel.problem import Problem
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.loader import load_kernel
from autotune.measure.benchmark import open_benchmark
from autotune.measure.measure_options import MeasureOptions

from kernel_files import write_kernel

pytestmark = pytest.mark.gpu

KIB = 1024
BIG_SHARED = {
    "name": "big_shared", "summary": "tiles reversed through TILE_K Ki elements of dynamic shared memory",
    "source": str(Path(__file__).resolve().parent / "big_shared.cu"), "function": "reverse_tiles",
    "problem": {"dims": ["n"], "dtypes": ["float32"]},
    "args": [{"name": "out", "array": ["n"], "role": "out"},
             {"name": "in", "array": ["n"], "role": "in"},
             {"name": "n", "scalar": "int64", "value": "n"}],
    "launch": {"block": [256, 1, 1], "grid": ["cdiv(n, TILE_K * 1024)", 1, 1],
               "shared": "TILE_K * 1024 * itemsize"},
    "space": {"params": {"TILE_K": [25, 64]}, "default": {"TILE_K": 25}},
    "check": {"reference": "ref.py:reverse", "compare": "exact"},
    "objective": {"bytes": "2 * n * itemsize", "bound": "memcpy"},
}


@pytest.fixture
def kernel(tmp_path):
    (tmp_path / "ref.py").write_text("import numpy as np\n\ndef reverse(out, n, **arrays):\n"
                                     "    src, got = arrays['in'], np.empty_like(arrays['in'])\n"
                                     "    for s in range(0, len(src), 25600):\n"
                                     "        got[s:s + 25600] = src[s:s + 25600][::-1]\n"
                                     "    return got\n")
    return load_kernel(write_kernel(tmp_path / "big_shared.toml", BIG_SHARED))


def test_100_kib_of_dynamic_shared_memory_is_verified_and_timed_and_256_kib_is_a_failed_trial(kernel):
    with open_benchmark(0, Problem.of(kernel, {"n": 1_000_003}, get_dtype("float32")),
                        MeasureOptions(repeats=20, seed=0, ci=0)) as bench:
        m = bench.measure(Config.of("big_shared", {"TILE_K": 25}))
        assert m.gbps > 0 and m.shared_bytes >= 100 * KIB
        with pytest.raises(TrialFailed) as info:
            bench.measure(Config.of("big_shared", {"TILE_K": 64}))
        assert info.value.status == "resources" and "262144 dynamic" in info.value.reason, info.value.reason


def test_compiled_launches_with_100_kib_and_the_result_is_right(kernel, tmp_path):
    torch = pytest.importorskip("torch")
    n = 1_000_003
    src = torch.arange(n, dtype=torch.float32, device="cuda")
    out = torch.empty_like(src)
    f = autotune.compiled(kernel, {"n": n}, "float32", db=f"sqlite:///{tmp_path / 'none.db'}")
    assert f.shared == 100 * KIB
    f(out, src)
    torch.cuda.synchronize()
    a = np.arange(n, dtype=np.float32)
    want = np.concatenate([a[s:s + 25600][::-1] for s in range(0, n, 25600)])
    np.testing.assert_array_equal(out.cpu().numpy(), want)
