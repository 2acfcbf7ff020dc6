"""The outcome of timing one config: what the benchmark returns and the tuner records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autotune.kernel.config import Config

__all__ = ["Measurement", "Retiming", "Paired", "Decision", "effective_bandwidth_gbps"]


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
        samples: timed samples (each a batch of launches; 0: unknown); not part of equality.
        ci_low_ms, ci_high_ms: the 95 % CI of the median (:func:`autotune.measure.timing.median_ci`),
            ms (``None``: unknown); not part of equality.
        energy_j: energy per launch, joules, from NVML's total-energy counter over a window of
            launches (:class:`autotune.measure.nvml.EnergyMeter`; ``None``: not measured or
            unavailable); not part of equality.
        sm_mhz: the SM clock NVML reported while the timed launches ran, MHz (``None``:
            unknown); not part of equality.
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
    samples: int = field(default=0, compare=False)
    ci_low_ms: float | None = field(default=None, compare=False)
    ci_high_ms: float | None = field(default=None, compare=False)
    energy_j: float | None = field(default=None, compare=False)
    sm_mhz: int | None = field(default=None, compare=False)

    @property
    def spread(self) -> float:
        """``(max - min) / median``: the relative spread of the timed launches."""
        return (self.max_ms - self.min_ms) / self.median_ms

    @property
    def ci_rel(self) -> float | None:
        """Half the median's CI width relative to the median (``None``: no CI)."""
        if self.ci_low_ms is None or self.ci_high_ms is None or self.median_ms <= 0:
            return None
        return (self.ci_high_ms - self.ci_low_ms) / 2.0 / self.median_ms

    @property
    def edp(self) -> float | None:
        """Energy-delay product per launch, joule-seconds (``None`` without energy)."""
        return None if self.energy_j is None else self.energy_j * self.median_ms * 1e-3


@dataclass(frozen=True)
class Retiming:
    """One config re-timed in the interleaved rounds after a search.

    Attributes:
        config: the config.
        round_medians_ms: the median per-launch time of each round, ms.
        pooled_median_ms: the median of all launches of all rounds, ms.
        ci_low_ms, ci_high_ms: the 95 % CI of the pooled median (order statistics of all the
            samples of all rounds; ``None``: unknown).
    """

    config: "Config"
    round_medians_ms: tuple[float, ...]
    pooled_median_ms: float
    ci_low_ms: float | None = None
    ci_high_ms: float | None = None

    @property
    def spread(self) -> float:
        """Round-to-round spread relative to the pooled median: ``(max - min) / pooled``."""
        return (max(self.round_medians_ms) - min(self.round_medians_ms)) / self.pooled_median_ms


@dataclass(frozen=True)
class Paired:
    """One re-timed config against the fastest, round by round (the rounds are interleaved, so
    each round's pair ran under the same clocks and temperature).

    Attributes:
        config: the config.
        ratio: the median over rounds of ``round median / the fastest's round median`` (>= 1 for
            the fastest's rivals in general; 1.0 for the fastest itself).
        low, high: the CI of that median ratio (order statistics of the rounds' ratios,
            :func:`autotune.measure.timing.median_ci`: at least 95 % from 6 rounds, the range of
            the ratios below).
        tied: the interval holds 1.0 (the data cannot tell the two apart), or the config is
            within the measured spread of the fastest.
    """

    config: "Config"
    ratio: float
    low: float
    high: float
    tied: bool


@dataclass(frozen=True)
class Decision:
    """The winner of a re-timing, the fastest (they differ when the rule of
    :func:`autotune.search.winner.choose` breaks a tie), and the tie group (fastest first),
    each with its re-timing; ``paired``: every re-timed config against the fastest, fastest
    first, and ``ranked``: every re-timing, fastest first (both empty where not computed:
    ``ranked`` then falls back to the tie group)."""

    winner: Retiming
    fastest: Retiming
    tie_group: tuple[Retiming, ...]
    paired: tuple[Paired, ...] = ()
    ranked: tuple[Retiming, ...] = ()

    def __post_init__(self) -> None:
        if not self.ranked:
            object.__setattr__(self, "ranked", tuple(self.tie_group))

    @property
    def tied(self) -> bool:
        """Whether the top configs are statistically tied (more than one in the tie group)."""
        return len(self.tie_group) > 1

    @property
    def runner_up(self) -> Retiming | None:
        """The fastest re-timed config other than the winner (``None``: only one was re-timed)."""
        return next((r for r in self.ranked if r.config != self.winner.config), None)
