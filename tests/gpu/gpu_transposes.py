"""Checks of one catalog transpose on the GPU that its tests share (test_gpu_aligned_out.py,
test_gpu_flat.py): every config verified through the generic benchmark, and autotune.transpose on
PyTorch views and batches against torch."""

from autotune.kernel.problem import Problem
from autotune.kernel.dtypes import get_dtype
from autotune.measure.benchmark import Benchmark
from autotune.measure.measure_options import MeasureOptions


def check_exact(device, kernel, dtype: str, shapes, configs, seed: int) -> None:
    """Verify each of ``configs`` of ``kernel`` on each ``(rows, cols)`` of ``shapes`` (bit for bit
    against NumPy, poisoned and guarded output); raises TrialFailed on any mismatch."""
    for rows, cols in shapes:
        bench = Benchmark(device, Problem.of(kernel, {"rows": rows, "cols": cols}, get_dtype(dtype)),
                          MeasureOptions(warmup=1, repeats=20, seed=seed, ci=0), bounds=False)
        try:
            for config in configs:
                bench.verify(*bench.compile(config))
        finally:
            bench.free()


def check_views_and_batches(torch, kernel_name: str, dtype: str, db: str) -> None:
    """autotune.transpose(v, kernel=kernel_name) equals v.mT.contiguous() for odd views and batches of
    ``dtype`` (a torch dtype name): a contiguous batch, a column slice, every other matrix, an odd
    start, the rows of a transposed copy."""
    from autotune.runtime.transpose.op import transpose

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


def check_launched(device, kernel, dtype: str, configs, shapes, cases, seed: int) -> None:
    """Launch each of ``configs`` of ``kernel`` directly on each ``(rows, cols)`` of ``shapes`` for
    each case ``(pad, batch, gap, in_offset, out_offset)``: rows ``ld = cols + pad`` elements
    apart, ``batch`` matrices ``rows * ld + gap`` elements apart (grid z), the input and output at
    those byte offsets from a 64-byte guard each side; the output against NumPy bit for bit, the
    guards unwritten (0xA5). A case whose offsets are not multiples of the element size is
    skipped."""
    import numpy as np

    from autotune.measure.device import cuda_driver

    drv, dt = cuda_driver(), get_dtype(dtype)
    rng = np.random.default_rng(seed)
    guard, es = 64, dt.itemsize
    bench = Benchmark(device, Problem.of(kernel, {"rows": 8, "cols": 8}, dt),
                      MeasureOptions(warmup=1, repeats=20, seed=0, ci=0), bounds=False)
    try:
        for config in configs:
            compiled, _, block, shared = bench.compile(config)
            for rows, cols in shapes:
                grid, _, _ = kernel.geometry(config, {"rows": rows, "cols": cols}, dt)
                for pad, batch, gap, ioff, ooff in cases:
                    if ioff % es or ooff % es:
                        continue
                    ld, stride = cols + pad, rows * (cols + pad) + gap
                    span = (batch - 1) * stride + (rows - 1) * ld + cols
                    src = rng.integers(0, 256, size=span * es, dtype=np.uint8)
                    view = np.lib.stride_tricks.as_strided(src.view(dt.numpy), (batch, rows, cols),
                                                           (stride * es, ld * es, es), writeable=False)
                    want = np.ascontiguousarray(view.transpose(0, 2, 1)).view(np.uint8).ravel()
                    n = want.size
                    d_in, d_out = drv.mem_alloc(span * es + 2 * guard), drv.mem_alloc(n + 2 * guard)
                    try:
                        drv.memcpy_htod(int(d_in) + guard + ioff, src)
                        drv.memset_d8(d_out, 0xA5, n + 2 * guard)
                        compiled.function.launch((grid[0], grid[1], batch), block,
                                                 (np.uintp(int(d_out) + guard + ooff),
                                                  np.uintp(int(d_in) + guard + ioff), np.int32(rows),
                                                  np.int32(cols), np.int64(ld), np.int64(stride)), shared)
                        got = np.empty(n + 2 * guard, np.uint8)
                        drv.memcpy_dtoh(got, d_out)
                    finally:
                        d_in.free()
                        d_out.free()
                    start = guard + ooff
                    what = (config, rows, cols, pad, batch, gap, ioff, ooff)
                    assert np.array_equal(got[start:start + n], want), what
                    assert (got[:start] == 0xA5).all() and (got[start + n:] == 0xA5).all(), what
    finally:
        bench.free()


def offset_cases(layouts, itemsize: int) -> list[tuple[int, int, int, int, int]]:
    """``(pad, batch, gap)`` layouts with the input and output offsets the pitched tests use:
    the k-th layout at input byte offset ``(5k + 1) % 16`` and output ``3k % 16``, each rounded
    down to a multiple of ``itemsize``."""
    return [(pad, batch, gap, (k * 5 + 1) % 16 // itemsize * itemsize, (k * 3) % 16 // itemsize * itemsize)
            for k, (pad, batch, gap) in enumerate(layouts)]
