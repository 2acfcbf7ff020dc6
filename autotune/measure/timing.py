"""Timing launches with CUDA events: per-launch times of batches long enough that the GPU
never waits for Python (the method of the CUDA transpose study's timings), stopping early for a
config that is clearly slower than the best so far.

Early stop (:class:`EarlyStop`): a benchmark remembers the median and the fastest sample of
the best config it has timed in full. A later config is timed :data:`PROBE` samples first; if
even its fastest sample is slower than ``best median * (1 + margin)``, it is stopped there
and recorded as measured and slower (its figures from those samples, the reason in
:attr:`Timing.early_stop`). The margin is the best config's measured noise:
``margin = max(MIN_MARGIN, NOISE_FACTOR * (best median - best min) / best median)``; a
config whose fastest sample is within it of the best is timed in full. The rule uses only
the times the events report, so it is deterministic for given times (the tests drive it with
a fake device), and an early-stopped config can never be the best (its median is above the
best median at the time, and the best only gets faster).

Certified timing (:class:`Precision`): instead of a fixed count, a config is sampled
until the 95 % confidence interval of its median is narrow enough: half its width at most
``rel`` of the median (default 1 %) or ``floor_ms`` (default 0.5 µs), whichever is larger, with
at least ``min_samples`` and at most ``max_samples`` samples. The interval is the
distribution-free order-statistic interval of the median (:func:`median_ci`: the ranks where
Binomial(n, 1/2) leaves at most 2.5 % in each tail; W. J. Conover, *Practical Nonparametric
Statistics*, 3rd ed., 1999, section 3.2, "confidence interval for a quantile"), so no
assumption is made about the shape of the times (GPU times are skewed, with slow outliers).
The early stop is kept: the probe comes first, and a config stopped there keeps the interval
of its probe samples.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Timing", "EarlyStop", "Precision", "MIN_SAMPLE_MS", "PROBE", "MIN_MARGIN", "NOISE_FACTOR", "CI_LEVEL",
           "median_ci", "samples", "timing"]

MIN_SAMPLE_MS = 0.2
"""Each timed sample lasts at least this long on the GPU (a batch of launches)."""
PROBE = 10
"""Samples timed before a config may be stopped early."""
MIN_MARGIN = 0.02
"""The smallest relative margin over the best median that stops a config (2 %)."""
NOISE_FACTOR = 4.0
"""The margin is at least this many times the best config's relative (median - min) spread."""
CI_LEVEL = 0.95
"""The confidence level of every interval of a median (:func:`median_ci`)."""
_EXACT_UP_TO = 2000
"""Up to this many samples the ranks of :func:`median_ci` come from the exact binomial tail;
above, from its normal approximation (the ranks differ by at most one there)."""


@functools.lru_cache(maxsize=4096)
def _ranks(n: int, level: float = CI_LEVEL) -> tuple[int, int]:
    """0-based ranks ``(j, n - 1 - j)`` of the order statistics bounding the median of ``n``
    samples at ``level`` (at least that coverage; ``(0, n - 1)`` when even the extremes give less,
    n < 6 at 95 %)."""
    alpha = (1.0 - level) / 2.0
    if n > _EXACT_UP_TO:
        z = statistics.NormalDist().inv_cdf(1.0 - alpha)
        j = max(0, math.floor(n / 2.0 - z * math.sqrt(n) / 2.0) - 1)
        return j, n - 1 - j
    total, tail, j = 2**n, 0, -1
    # 0-based: [x(j), x(n-1-j)] covers the median with 1 - 2 P(B <= j), B ~ Binomial(n, 1/2); the largest j
    for k in range(n // 2):
        tail += math.comb(n, k)
        if tail / total > alpha:
            break
        j = k
    j = max(j, 0)
    return j, n - 1 - j


def median_ci(ms: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float]:
    """The distribution-free confidence interval of the median of samples ``ms`` (any unit,
    1-D, at least one value): ``(low, high)``, two order statistics (Conover, *Practical
    Nonparametric Statistics*, 3rd ed., section 3.2), covering the true median with probability
    at least ``level`` for n >= 6 at 95 % (below that the range of the samples, of lower coverage).

    Raises:
        ValueError: no samples.
    """
    if ms.size == 0:
        raise ValueError("no samples")
    j, k = _ranks(int(ms.size), level)
    ordered = np.sort(ms)
    return float(ordered[j]), float(ordered[k])


@dataclass(frozen=True)
class Precision:
    """When a config has been sampled enough (module doc, certified timing).

    Attributes:
        rel: the half-width of the median's 95 % CI may be at most this fraction of the median
            (0 < rel < 1; default 1 %).
        floor_ms: or at most this many ms, whichever is larger (>= 0; default 0.0005 = 0.5 µs).
        min_samples: samples always taken (>= :data:`PROBE`).
        max_samples: samples never exceeded (>= ``min_samples``), precise or not.
    """

    rel: float = 0.01
    floor_ms: float = 0.0005
    min_samples: int = 20
    max_samples: int = 200

    def enough(self, ms: np.ndarray) -> bool:
        """Whether ``ms`` (per-launch times, ms) has at least ``min_samples`` and its median's CI
        is narrow enough, or it has ``max_samples``."""
        if ms.size >= self.max_samples:
            return True
        if ms.size < self.min_samples:
            return False
        low, high = median_ci(ms)
        return (high - low) / 2.0 <= max(self.rel * float(np.median(ms)), self.floor_ms)

    def next_count(self, taken: int) -> int:
        """How many samples to take next after ``taken``: up to ``min_samples`` first, then a
        quarter more at a time (at least 5), never past ``max_samples``."""
        if taken < self.min_samples:
            return self.min_samples - taken
        return min(self.max_samples - taken, max(5, taken // 4))


@dataclass(frozen=True)
class Timing:
    """Per-launch times of repeated launches, ms.

    Attributes:
        median_ms, min_ms, max_ms: over the timed samples (each a batch's time per launch).
        launches: launches timed (warm-up excluded).
        early_stop: why timing stopped after :data:`PROBE` samples (``None``: timed in full).
        samples: how many samples were timed (each a batch of launches; 0: unknown).
        ci_low_ms, ci_high_ms: the 95 % confidence interval of the median (:func:`median_ci`),
            ms (``None``: unknown).
    """

    median_ms: float
    min_ms: float
    max_ms: float
    launches: int
    early_stop: str | None = None
    samples: int = 0
    ci_low_ms: float | None = None
    ci_high_ms: float | None = None

    @property
    def ci_rel(self) -> float | None:
        """Half the CI's width relative to the median (``None``: no CI)."""
        if self.ci_low_ms is None or self.ci_high_ms is None or self.median_ms <= 0:
            return None
        return (self.ci_high_ms - self.ci_low_ms) / 2.0 / self.median_ms


class EarlyStop:
    """The bar above which a config is stopped early (see the module doc).

    Attributes:
        best_median_ms, best_min_ms: of the fastest config timed in full so far (``None``: none yet).
    """

    def __init__(self) -> None:
        self.best_median_ms: float | None = None
        self.best_min_ms: float | None = None

    @property
    def margin(self) -> float | None:
        """The relative margin over the best median (``None``: nothing timed yet)."""
        if self.best_median_ms is None:
            return None
        noise = (self.best_median_ms - self.best_min_ms) / self.best_median_ms
        return max(MIN_MARGIN, NOISE_FACTOR * noise)

    @property
    def bar_ms(self) -> float | None:
        """A config whose fastest probe sample is slower than this (ms) is stopped; ``None``: no bar."""
        return None if self.margin is None else self.best_median_ms * (1.0 + self.margin)

    def observe(self, t: Timing) -> None:
        """Take a config timed in full into account (early-stopped ones are ignored)."""
        if t.early_stop is None and (self.best_median_ms is None or t.median_ms < self.best_median_ms):
            self.best_median_ms, self.best_min_ms = t.median_ms, t.min_ms

    def reason(self, probe_min_ms: float, timed: int, repeats: int) -> str:
        """The note of a config stopped after ``timed`` of ``repeats`` samples."""
        return (f"timing stopped early after {timed} of {repeats} samples: fastest {probe_min_ms:.4f} ms > "
                f"best median {self.best_median_ms:.4f} ms x (1 + {self.margin:.3f})")


def _batch(drv, launch: Callable[[], None], warmup: int) -> int:
    """Launches per sample: ``warmup`` launches give the time of one."""
    start, end = drv.event(), drv.event()
    start.record()
    for _ in range(warmup):
        launch()
    end.record()
    end.synchronize()
    per_launch = max(end.time_since(start) / max(warmup, 1), 1e-4)
    return max(1, math.ceil(MIN_SAMPLE_MS / per_launch))


def _timed(drv, launch: Callable[[], None], batch: int, count: int,
           during: Callable[[], None] | None = None) -> np.ndarray:
    """Per-launch ms of ``count`` samples of ``batch`` launches each; ``during()`` runs after
    they are queued, before they are waited for."""
    events = [(drv.event(), drv.event()) for _ in range(count)]
    for s, e in events:
        s.record()
        for _ in range(batch):
            launch()
        e.record()
    if during is not None:
        during()
    events[-1][1].synchronize()
    return np.array([e.time_since(s) / batch for s, e in events])


def samples(drv, launch: Callable[[], None], warmup: int, repeats: int,
            stop_above_ms: float | None = None, precision: Precision | None = None,
            during: Callable[[], None] | None = None) -> tuple[np.ndarray, int]:
    """Per-launch times (ms) of the timed samples, and the number of launches timed.

    ``warmup`` launches first give the time of one launch; each sample is then a batch of
    launches of at least :data:`MIN_SAMPLE_MS` between two CUDA events. Without ``precision``,
    ``repeats`` samples are taken; with it, samples are taken in rounds until
    :meth:`Precision.enough` (``repeats`` is then unused). With ``stop_above_ms``, the first
    :data:`PROBE` samples are taken alone, and if the fastest is slower than ``stop_above_ms``
    only they are returned. ``during`` is called once after the first round of launches is
    queued and before it is waited for (while the GPU runs them: e.g. to read its SM clock).
    """
    batch = _batch(drv, launch, warmup)
    calls = [during]

    def take(count: int) -> np.ndarray:
        hook, calls[0] = calls[0], None
        return _timed(drv, launch, batch, count, hook)

    if precision is None:
        if stop_above_ms is None or repeats <= PROBE:
            return take(repeats), repeats * batch
        first = take(PROBE)
        if first.min() > stop_above_ms:
            return first, PROBE * batch
        return np.concatenate([first, take(repeats - PROBE)]), repeats * batch
    ms = take(PROBE if stop_above_ms is not None else precision.next_count(0))
    if stop_above_ms is not None and ms.min() > stop_above_ms:
        return ms, ms.size * batch
    while not precision.enough(ms):
        ms = np.concatenate([ms, take(precision.next_count(ms.size))])
    return ms, ms.size * batch


def timing(drv, launch: Callable[[], None], warmup: int, repeats: int, early: EarlyStop | None = None,
           precision: Precision | None = None, during: Callable[[], None] | None = None) -> Timing:
    """Median, min and max per-launch time of :func:`samples`, their count and the median's 95 %
    CI; with ``early``, a config clearly slower than its best so far is stopped after
    :data:`PROBE` samples, and one timed in full updates it; with ``precision``, samples are
    taken until its CI is narrow enough (module doc)."""
    bar = early.bar_ms if early is not None else None
    ms, launches = samples(drv, launch, warmup, repeats, bar, precision, during)
    planned = repeats if precision is None else precision.min_samples
    stopped = None
    if bar is not None and ms.size == PROBE and ms.size < planned and ms.min() > bar:
        stopped = early.reason(float(ms.min()), ms.size, planned)
    low, high = median_ci(ms)
    t = Timing(float(np.median(ms)), float(ms.min()), float(ms.max()), launches, stopped, int(ms.size), low, high)
    if early is not None:
        early.observe(t)
    return t
