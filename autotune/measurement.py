"""The outcome of timing one config: what the benchmark returns and the tuner records."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Measurement", "effective_bandwidth_gbps"]


def effective_bandwidth_gbps(rows: int, cols: int, itemsize: int, ms: float) -> float:
    """Effective bandwidth of a transpose or copy in GB/s (1e9 bytes per second).

    Every element is read once and written once: ``2 * rows * cols * itemsize`` bytes in
    ``ms`` milliseconds (the metric of the CUDA "efficient matrix transpose" study).
    """
    return 2.0 * rows * cols * itemsize / (ms * 1e-3) / 1e9


@dataclass(frozen=True)
class Measurement:
    """Timing of one verified config on one device, shape and dtype.

    Attributes:
        median_ms, min_ms, max_ms: kernel time over the timed launches, in ms (CUDA events).
        gbps: effective bandwidth of the median time, GB/s.
        pct_memcpy: ``gbps`` as % of the device-to-device memcpy bandwidth measured on the
            same buffers in the same run.
        registers: registers per thread of the compiled kernel.
        shared_bytes: static shared memory per block, bytes.
        launches: how many launches were timed.
    """

    median_ms: float
    min_ms: float
    max_ms: float
    gbps: float
    pct_memcpy: float
    registers: int
    shared_bytes: int
    launches: int

    @property
    def spread(self) -> float:
        """``(max - min) / median``: the relative spread of the timed launches."""
        return (self.max_ms - self.min_ms) / self.median_ms
