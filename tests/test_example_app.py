"""The example application (examples/app/) launches what issue 34 asks of it: transposes of
three dtypes, matmul_warp, and the reduction, softmax and histogram examples, at 20 or more
distinct shapes, some of them odd; each shape fits its kernel file (read without a GPU; the
application itself runs in tests/gpu/test_gpu_workload.py)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples/app"))

import workload  # noqa: E402

from autotune.kernel.loader import load_kernel  # noqa: E402
from autotune.kernel.problem import Problem  # noqa: E402

KERNEL_FILES = {"matmul_warp": "matmul_warp", "reduce_sum": ROOT / "examples/reduction/reduce.toml",
                "softmax_rows": ROOT / "examples/softmax/softmax.toml",
                "histogram256": ROOT / "examples/histogram/histogram.toml"}


def test_the_app_launches_every_op_at_twenty_or_more_shapes_some_odd():
    problems = workload.problems()
    assert len({(op, dtype, shape) for op, dtype, shape, _ in problems}) >= 20
    assert {op for op, *_ in problems} == {"transpose", "matmul_warp", "reduce_sum", "softmax_rows", "histogram256"}
    assert len({dtype for op, dtype, *_ in problems if op == "transpose"}) == 3
    assert sum(any(v % 2 for v in shape) for _, _, shape, _ in problems) >= 8
    assert all(n >= 1 for *_, n in problems)


def test_every_shape_fits_its_kernel_file():
    for op, dtype, shape, _ in workload.problems():
        if op == "transpose":
            Problem.of("smem_pad", shape, dtype)
            continue
        kernel = KERNEL_FILES[op]
        Problem.of(load_kernel(kernel) if isinstance(kernel, Path) else kernel, shape, dtype)
