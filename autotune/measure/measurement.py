"""The outcome of timing one config: what the benchmark returns and the tuner records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autotune.kernel.config import Config

__all__ = ["Measurement", "Retiming", "Decision", "effective_bandwidth_gbps"]


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
        gbps: effective bandwidth of the median time (the objective's bytes), GB/s
            (``None`` for a kernel without a bytes objective).
        pct_memcpy: ``gbps`` as % of a device-to-device memcpy moving the same bytes, measured
            in the same run (``None`` without a memcpy bound).
        registers: registers per thread of the compiled kernel.
        shared_bytes: static shared memory per block, bytes.
        launches: how many launches were timed.
        pct_copy: ``gbps`` as % of the kernel's bound kernel (e.g. copy_row) on the same
            dims in the same run (``None`` where it has none).
        occupancy: theoretical occupancy (0..1) from the CUDA driver (``None``: unknown).
        gflops: the kernel's ``flops`` objective over the median time, GFLOP/s (``None``
            for a kernel without one, e.g. a transpose).
        phases: milliseconds spent per phase (:mod:`autotune.measure.phases`: compile, load,
            verify, time) measuring it (``None``: not recorded); not part of equality.
        early_stop: why timing stopped after its first samples, the config being clearly
            slower than the best so far (:class:`autotune.measure.timing.EarlyStop`; ``None``:
            timed in full); not part of equality.
    """

    median_ms: float
    min_ms: float
    max_ms: float
    gbps: float | None
    pct_memcpy: float | None
    registers: int
    shared_bytes: int
    launches: int
    pct_copy: float | None = None
    occupancy: float | None = None
    gflops: float | None = None
    phases: Mapping[str, float] | None = field(default=None, compare=False)
    early_stop: str | None = field(default=None, compare=False)

    @property
    def spread(self) -> float:
        """``(max - min) / median``: the relative spread of the timed launches."""
        return (self.max_ms - self.min_ms) / self.median_ms


@dataclass(frozen=True)
class Retiming:
    """One config re-timed in the interleaved rounds after a search.

    Attributes:
        config: the config.
        round_medians_ms: the median per-launch time of each round, ms.
        pooled_median_ms: the median of all launches of all rounds, ms.
    """

    config: "Config"
    round_medians_ms: tuple[float, ...]
    pooled_median_ms: float

    @property
    def spread(self) -> float:
        """Round-to-round spread relative to the pooled median: ``(max - min) / pooled``."""
        return (max(self.round_medians_ms) - min(self.round_medians_ms)) / self.pooled_median_ms


@dataclass(frozen=True)
class Decision:
    """The winner of a re-timing, the fastest (they differ when the rule of
    :func:`autotune.search.winner.choose` breaks a tie), and the tie group (fastest first),
    each with its re-timing."""

    winner: Retiming
    fastest: Retiming
    tie_group: tuple[Retiming, ...]
