"""``autotune bench``: kernels of one problem at their default and tuned configs, beside their bounds.

Every kernel named (all of one kind of problem: the same dims) is measured by a
:class:`~autotune.measure.benchmark.Benchmark` of its own on the same device, dims and dtype,
at its default config and at its stored tuned config where that differs. Beside them, by
what the first kernel's objective names as its bound:

* ``memcpy``: the device-to-device ``cudaMemcpy`` moving the same bytes; the kernel's Python
  reference on the CPU (e.g. ``numpy.ascontiguousarray(a.T)``: median of ``cpu_repeats``
  after one warm-up, ``time.perf_counter``), as GB/s of the same bytes; and host-to-device
  and device-to-host transfers of the first input array (pageable and page-locked host
  memory, CUDA events; GB/s = bytes one way / time);
* ``cublas``: the vendor library's product of the same m, n, k (:mod:`autotune.measure.vendor`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from autotune.errors import TrialFailed
from autotune.kernel.model import Kernel
from autotune.kernel.problem import Problem
from autotune.measure import benchmark
from autotune.measure.benchmark import Benchmark
from autotune.measure.buffers import host_values
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.reference import python_reference
from autotune.measure.toolchain import Toolchain
from autotune.store.key import TuningKey

__all__ = ["BenchLine", "bound_lines", "kernel_lines", "run_bench"]


@dataclass(frozen=True)
class BenchLine:
    """One line of the bench table: ``gbps`` GB/s, ``gflops`` GFLOP/s, ``pct_memcpy`` % of the
    memcpy of the same run; ``note``: why a kernel has no figures."""

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


def kernel_lines(bench: Benchmark, key: TuningKey, store) -> list[BenchLine]:
    """``bench``'s kernel at its default config, and at its stored tuned config where that differs."""
    default = bench.kernel.default_config()
    best = store.best(key)
    tuned = best.config if best is not None else None
    lines = [_kernel_line(bench, default, "default=tuned" if tuned == default else "default")]
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


def bound_lines(bench: Benchmark, cpu_repeats: int = 3) -> tuple[list[BenchLine], list[BenchLine]]:
    """The lines of ``bench``'s kernel's bound: those shown before the kernels, and after."""
    k = bench.kernel
    if k.objective.bound == "cublas":
        from autotune.measure.vendor import vendor_matmul

        v = vendor_matmul(bench)
        return [], [BenchLine(v.name, "vendor", v.median_ms, None, note=v.note, gflops=v.gflops)]
    if bench.memcpy_gbps is None:
        return [], []
    ms = bench.bytes / (bench.memcpy_gbps * 1e9) * 1e3
    before = [BenchLine("cudaMemcpy device-to-device", "memcpy", ms, bench.memcpy_gbps, 100.0)]
    after = [_cpu_line(bench, cpu_repeats)] if k.check_spec.reference else []
    return before, after + _transfer_lines(bench)


def _cpu_line(bench: Benchmark, repeats: int) -> BenchLine:
    k = bench.kernel
    values = {i: host_values(a, shape, dt, bench.rng) for i, (a, shape, dt) in enumerate(bench.layout)
              if a.role != "out"}
    python_reference(k, bench.layout, bench.scalars, values)  # warm-up: page in the allocator's memory
    times = []
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        python_reference(k, bench.layout, bench.scalars, values)
        times.append((time.perf_counter() - start) * 1e3)
    ms = float(np.median(times))
    gbps = bench.bytes / (ms * 1e-3) / 1e9
    return BenchLine(f"{k.check_spec.reference.rpartition(':')[2]} reference on the CPU (NumPy)", "cpu", ms, gbps,
                     100 * gbps / bench.memcpy_gbps)


def _transfer_lines(bench: Benchmark, repeats: int = 5) -> list[BenchLine]:
    drv = bench.drv
    first = next(i for i, (a, _, _) in enumerate(bench.layout) if a.role != "out")
    n, pointer = bench.sets[0].nbytes[first], bench.sets[0].pointers[first]
    pageable = np.empty(n, dtype=np.uint8)
    pinned = drv.pagelocked_empty(n, np.uint8)
    lines = []
    for label, host in (("pageable", pageable), ("page-locked", pinned)):
        for direction, work in (("host-to-device", functools.partial(drv.memcpy_htod, pointer, host)),
                                ("device-to-host", functools.partial(drv.memcpy_dtoh, host, pointer))):
            ms = _event_time(drv, work, repeats)
            lines.append(BenchLine(f"{direction} ({label})", "transfer", ms, n / (ms * 1e-3) / 1e9))
    bench._filled = False  # the transfers overwrote the first input
    return lines


def _event_time(drv, work: Callable[[], None], repeats: int) -> float:
    work()  # warm-up
    times = []
    for _ in range(repeats):
        start, end = drv.event(), drv.event()
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(end.time_since(start))
    return float(np.median(times))


def run_bench(ordinal: int, kernels: Sequence[Kernel], dims, dtype, store,
              repeats: int = 50, on_open: Callable[[Benchmark, str], None] | None = None) -> tuple[list[BenchLine], dict]:
    """Every line of a bench of ``kernels`` (one kind of problem) on device ``ordinal``: the
    bound lines of the first kernel around every kernel's lines. Each kernel gets a benchmark
    of its own (:func:`autotune.measure.benchmark.open_benchmark`), one at a time.

    Args:
        on_open: called with the first benchmark and the nvcc version once it is open.

    Returns:
        The lines, and the run's context: ``device`` (DeviceInfo), ``nvcc``, and the first
        kernel's ``memcpy_gbps`` and ``l2_mode``.

    Raises:
        GPUUnavailableError, InvalidInputError: as ``open_benchmark``.
    """
    before, after, lines, context = [], [], [], {"memcpy_gbps": None, "l2_mode": "single"}
    problems = [Problem.of(k, dims, dtype) for k in kernels]  # every kernel's dims and dtype checked before the GPU
    toolchain = None
    for i, problem in enumerate(problems):
        with benchmark.open_benchmark(ordinal, problem, MeasureOptions(repeats=repeats, ci=0)) as bench:
            toolchain = toolchain or Toolchain.of(bench.device.arch)
            key = TuningKey.of(problem, bench.device, toolchain)
            if i == 0:
                context.update(device=bench.device, nvcc=key.nvcc_version)
                if on_open is not None:
                    on_open(bench, key.nvcc_version)
                before, after = bound_lines(bench)
                context.update(memcpy_gbps=bench.memcpy_gbps, l2_mode=bench.l2_mode)
            lines.extend(kernel_lines(bench, key, store))
    return [*before, *lines, *after], context
