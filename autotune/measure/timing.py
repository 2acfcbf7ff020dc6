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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Timing", "EarlyStop", "MIN_SAMPLE_MS", "PROBE", "MIN_MARGIN", "NOISE_FACTOR", "samples", "timing"]

MIN_SAMPLE_MS = 0.2
"""Each timed sample lasts at least this long on the GPU (a batch of launches)."""
PROBE = 10
"""Samples timed before a config may be stopped early."""
MIN_MARGIN = 0.02
"""The smallest relative margin over the best median that stops a config (2 %)."""
NOISE_FACTOR = 4.0
"""The margin is at least this many times the best config's relative (median - min) spread."""


@dataclass(frozen=True)
class Timing:
    """Per-launch times of repeated launches, ms.

    Attributes:
        median_ms, min_ms, max_ms: over the timed samples (each a batch's time per launch).
        launches: launches timed (warm-up excluded).
        early_stop: why timing stopped after :data:`PROBE` samples (``None``: timed in full).
    """

    median_ms: float
    min_ms: float
    max_ms: float
    launches: int
    early_stop: str | None = None


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


def _timed(drv, launch: Callable[[], None], batch: int, count: int) -> np.ndarray:
    """Per-launch ms of ``count`` samples of ``batch`` launches each."""
    events = [(drv.event(), drv.event()) for _ in range(count)]
    for s, e in events:
        s.record()
        for _ in range(batch):
            launch()
        e.record()
    events[-1][1].synchronize()
    return np.array([e.time_since(s) / batch for s, e in events])


def samples(drv, launch: Callable[[], None], warmup: int, repeats: int,
            stop_above_ms: float | None = None) -> tuple[np.ndarray, int]:
    """Per-launch times (ms) of ``repeats`` samples, and the number of launches timed.

    ``warmup`` launches first give the time of one launch; each sample is then a batch of
    launches of at least :data:`MIN_SAMPLE_MS` between two CUDA events. With
    ``stop_above_ms``, the first :data:`PROBE` samples are taken alone, and if the fastest
    is slower than ``stop_above_ms`` only they are returned.
    """
    batch = _batch(drv, launch, warmup)
    if stop_above_ms is None or repeats <= PROBE:
        return _timed(drv, launch, batch, repeats), repeats * batch
    first = _timed(drv, launch, batch, PROBE)
    if first.min() > stop_above_ms:
        return first, PROBE * batch
    return np.concatenate([first, _timed(drv, launch, batch, repeats - PROBE)]), repeats * batch


def timing(drv, launch: Callable[[], None], warmup: int, repeats: int, early: EarlyStop | None = None) -> Timing:
    """Median, min and max per-launch time of :func:`samples`; with ``early``, a config clearly
    slower than its best so far is stopped after :data:`PROBE` samples, and one timed in full
    updates it."""
    bar = early.bar_ms if early is not None else None
    ms, launches = samples(drv, launch, warmup, repeats, bar)
    stopped = early.reason(float(ms.min()), ms.size, repeats) if ms.size < repeats else None
    t = Timing(float(np.median(ms)), float(ms.min()), float(ms.max()), launches, stopped)
    if early is not None:
        early.observe(t)
    return t
