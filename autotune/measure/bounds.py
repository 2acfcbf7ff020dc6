"""The bounds a config's figures are a percentage of, measured once per benchmark, in the same run.

* ``memcpy``: a device-to-device ``cudaMemcpy`` moving the objective's bytes (``bytes / 2``
  read and as many written), between buffers of its own (set by a memset: the copy engines'
  speed does not depend on the values), rotating like the kernel's argument sets when they
  rotate.
* the ``bound_kernel`` (e.g. ``copy_row`` for the transposes): that catalog kernel's default
  config on the same dims and dtype, verified and timed by a benchmark of its own.

Both are measured when first asked for and their buffers freed right after.
"""

from __future__ import annotations

import itertools

from autotune.measure.measure_options import MeasureOptions
from autotune.measure.timing import timing

__all__ = ["Bounds"]


class Bounds:
    """The memcpy and bound-kernel figures (GB/s) of a :class:`~autotune.measure.benchmark.Benchmark`."""

    def __init__(self, bench, enabled: bool = True) -> None:
        self.bench = bench
        self.enabled = enabled
        self._memcpy: float | None = None
        self._kernel: float | None = None

    @property
    def memcpy_gbps(self) -> float | None:
        """GB/s of the memcpy bound, or ``None`` when the kernel's objective has none."""
        b = self.bench
        if not self.enabled or b.kernel.objective.bound != "memcpy" or not b.bytes:
            return None
        if self._memcpy is None:
            n = max(b.bytes // 2, 1)
            pairs = [(b.drv.mem_alloc(n), b.drv.mem_alloc(n)) for _ in b.sets]
            try:
                for src, _ in pairs:  # a copy's speed does not depend on what it moves: no draw, no upload
                    b.drv.memset_d8(src, 0xA5, n)
                cycle, copy = itertools.cycle(pairs), b.drv.memcpy_dtod_async

                def launch():
                    src, dst = next(cycle)
                    copy(dst, src, n)

                t = timing(b.drv, launch, b.warmup, b.repeats)
            finally:
                for src, dst in pairs:
                    src.free()
                    dst.free()
            self._memcpy = b.bytes / (t.median_ms * 1e-3) / 1e9
        return self._memcpy

    @property
    def kernel_gbps(self) -> float | None:
        """GB/s of the bound kernel at its default config, or ``None`` when there is none (or
        it has no bytes objective)."""
        b = self.bench
        name = b.kernel.objective.bound_kernel
        if name is None or not self.enabled:
            return None
        if self._kernel is None:
            from autotune.kernel.problem import Problem

            problem = Problem.of(name, b.problem.dims, b.problem.dtype)
            bound = problem.kernel
            # a benchmark of the measured one's own class: bounds.py does not import benchmark.py
            other = type(b)(b.device, problem, MeasureOptions(repeats=b.repeats, ci=0, warmup=b.warmup), bounds=False,
                            inputs=b.inputs)
            try:
                self._kernel = other.measure(bound.default_config()).gbps
            finally:
                other.free()
        return self._kernel

    def free(self) -> None:
        """Nothing is held between measurements (kept for symmetry with the benchmark)."""
