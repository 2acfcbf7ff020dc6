"""Checks of one catalog transpose on the GPU that its tests share (test_gpu_aligned_out.py,
test_gpu_flat.py): every config verified through the generic benchmark, and autotune.transpose on
PyTorch views and batches against torch."""

from autotune.kernel.problem import Problem
from autotune.kernel.dtypes import get_dtype
from autotune.measure.benchmark import Benchmark


def check_exact(device, kernel, dtype: str, shapes, configs, seed: int) -> None:
    """Verify each of ``configs`` of ``kernel`` on each ``(rows, cols)`` of ``shapes`` (bit for bit
    against NumPy, poisoned and guarded output); raises TrialFailed on any mismatch."""
    for rows, cols in shapes:
        bench = Benchmark(device, Problem.of(kernel, {"rows": rows, "cols": cols}, get_dtype(dtype)), warmup=1, repeats=20,
                          seed=seed, bounds=False)
        try:
            for config in configs:
                bench.verify(*bench.compile(config))
        finally:
            bench.free()


def check_views_and_batches(torch, kernel_name: str, dtype: str, db: str) -> None:
    """autotune.transpose(v, kernel=kernel_name) equals v.mT.contiguous() for odd views and batches of
    ``dtype`` (a torch dtype name): a contiguous batch, a column slice, every other matrix, an odd
    start, the rows of a transposed copy."""
    from autotune.runtime.transpose import transpose

    g = torch.Generator(device="cuda").manual_seed(1)
    base = torch.randn((3, 4, 133, 301), device="cuda", generator=g, dtype=torch.float64).to(getattr(torch, dtype))
    views = {
        "contiguous batch": base,
        "column slice": base[..., 3:300],
        "every other matrix": base[:, ::2],
        "odd start, odd sides": base[1, 2, 1:, 1:],
        "rows of a transposed copy": base[0, 0].mT.contiguous()[1:, :130],
    }
    for what, v in views.items():
        assert torch.equal(transpose(v, kernel=kernel_name, db=db), v.mT.contiguous()), what
