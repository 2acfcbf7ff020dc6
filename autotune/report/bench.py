"""``autotune bench``: every kernel, at its default and at its tuned config, beside the device
memcpy and the copy bounds, NumPy's transpose on the CPU, and the host-to-device and
device-to-host transfers of the same matrix, so a user sees what the GPU buys end to end.

Kernel and memcpy figures come from :class:`~autotune.measure.benchmark.Benchmark` (verified, CUDA
events, effective bandwidth ``2 * bytes / time``). The CPU line times
``numpy.ascontiguousarray(a.T)`` with ``time.perf_counter`` (median of ``cpu_repeats``
after one warm-up), also as ``2 * bytes / time``. Transfers move ``bytes`` one way, so their
GB/s is ``bytes / time``; they are timed with CUDA events from pageable (NumPy) and from
page-locked host memory.

For the matrix products (``matmul`` kernels, :func:`run_matmul_bench`) the table is each
kernel at its default and tuned config, in GFLOP/s, beside the vendor library's product of
the same shape (cuBLAS via CuPy or PyTorch, TF32 off: :mod:`autotune.measure.vendor`), of which each
kernel's % is shown; no memcpy, CPU or transfer lines.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from autotune.measure.benchmark import Benchmark
from autotune.errors import TrialFailed
from autotune.kernel.catalog import get_kernel
from autotune.store.key import TuningKey
from autotune.measure.measurement import effective_bandwidth_gbps
from autotune.store.key import Dims
from autotune.store.repository import Store

__all__ = ["BenchLine", "run_bench", "run_matmul_bench", "save_bench"]


@dataclass(frozen=True)
class BenchLine:
    """One line of the bench table. ``gbps``: GB/s (see module doc); ``pct_memcpy``: % of
    the device memcpy of the same run; ``note``: why a kernel has no figures; ``gflops``:
    GFLOP/s of a matrix product (kernel or ``vendor`` line)."""

    name: str
    kind: str  # memcpy, kernel, cpu, transfer, vendor
    median_ms: float | None
    gbps: float | None
    pct_memcpy: float | None = None
    config_key: str | None = None
    source: str | None = None  # default / tuned / default=tuned
    registers: int | None = None
    shared_bytes: int | None = None
    occupancy: float | None = None
    note: str | None = None
    gflops: float | None = None


def run_bench(bench: Benchmark, kernels: Sequence[str], key_for: Callable[[str], TuningKey], store: Store,
              cpu_repeats: int = 3) -> list[BenchLine]:
    """Measure every line for ``bench``'s device, shape and dtype (inside its CUDA context)."""
    rows, cols, dt = bench.rows, bench.cols, bench.dtype
    memcpy = bench.memcpy()
    lines = [BenchLine("cudaMemcpy device-to-device", "memcpy", memcpy.median_ms, bench.memcpy_gbps, 100.0)]
    lines.extend(_kernel_lines(bench, kernels, key_for, store))
    lines.append(_cpu_line(rows, cols, dt.numpy, cpu_repeats, bench.memcpy_gbps))
    lines.extend(_transfer_lines(bench))
    return lines


def run_matmul_bench(bench, kernels: Sequence[str], key_for: Callable[[str], TuningKey],
                     store: Store) -> list[BenchLine]:
    """Every ``matmul`` kernel at its default and tuned config, then the vendor library's
    product, for ``bench``'s M, N, K and dtype (a :class:`~autotune.measure.matmul_bench.MatmulBenchmark`)."""
    from autotune.measure.vendor import vendor_matmul

    lines = _kernel_lines(bench, kernels, key_for, store)
    v = vendor_matmul(bench)
    lines.append(BenchLine(v.name, "vendor", v.median_ms, v.gbps, note=v.note, gflops=v.gflops))
    return lines


def _kernel_lines(bench: Benchmark, kernels: Sequence[str], key_for: Callable[[str], TuningKey],
                  store: Store) -> list[BenchLine]:
    """Each kernel at its default config, and at its stored tuned config where that differs."""
    lines = []
    for name in kernels:
        kernel = get_kernel(name)
        default = kernel.default_config()
        best = store.best(key_for(kernel.name))
        tuned = best.config if best is not None else None
        lines.append(_kernel_line(bench, default, "default=tuned" if tuned == default else "default"))
        if tuned is not None and tuned != default:
            lines.append(_kernel_line(bench, tuned, "tuned"))
    return lines


def _kernel_line(bench: Benchmark, config, source: str) -> BenchLine:
    try:
        m = bench.measure(config)
    except TrialFailed as failure:
        return BenchLine(config.kernel, "kernel", None, None, config_key=config.key, source=source,
                         note=f"{failure.status}: {failure.reason}")
    return BenchLine(config.kernel, "kernel", m.median_ms, m.gbps, m.pct_memcpy, config.key, source,
                     m.registers, m.shared_bytes, m.occupancy, gflops=m.gflops)


def _cpu_line(rows: int, cols: int, dtype: np.dtype, repeats: int, memcpy_gbps: float) -> BenchLine:
    a = np.random.default_rng(0).integers(0, 100, size=(rows, cols)).astype(dtype)
    np.ascontiguousarray(a.T)  # warm-up: page in the destination allocator's memory
    times = []
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        np.ascontiguousarray(a.T)
        times.append((time.perf_counter() - start) * 1e3)
    ms = float(np.median(times))
    gbps = effective_bandwidth_gbps(rows, cols, dtype.itemsize, ms)
    return BenchLine("numpy.ascontiguousarray(a.T) on the CPU", "cpu", ms, gbps, 100 * gbps / memcpy_gbps)


def _transfer_lines(bench: Benchmark, repeats: int = 5) -> list[BenchLine]:
    drv, n = bench.drv, bench.nbytes
    pageable = np.empty(n, dtype=np.uint8)
    pinned = drv.pagelocked_empty(n, np.uint8)
    lines = []
    for label, host in (("pageable", pageable), ("page-locked", pinned)):
        for direction, work in (("host-to-device", functools.partial(drv.memcpy_htod, bench.d_in, host)),
                                ("device-to-host", functools.partial(drv.memcpy_dtoh, host, bench.d_in))):
            ms = _event_time(drv, work, repeats)
            lines.append(BenchLine(f"{direction} ({label})", "transfer", ms, n / (ms * 1e-3) / 1e9))
    return lines


def _event_time(drv, work, repeats: int) -> float:
    work()  # warm-up
    times = []
    for _ in range(repeats):
        start, end = drv.Event(), drv.Event()
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(end.time_since(start))
    return float(np.median(times))


def save_bench(store: Store, bench: Benchmark, nvcc_version: str, lines: Sequence[BenchLine],
               dims: Mapping[str, int] | Dims) -> int:
    """Store a bench run of ``bench``'s device, ``dims`` (the benched kernels' named dims) and
    dtype, and its lines, through the Store; returns the run's id."""
    return store.save_bench_run(bench.device, dims, bench.dtype.name, nvcc_version, bench.memcpy_gbps,
                                bench.l2_mode, lines)
