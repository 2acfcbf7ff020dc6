"""Timing launches with CUDA events: per-launch times of batches long enough that the GPU
never waits for Python (the method of the CUDA transpose study's timings)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Timing", "MIN_SAMPLE_MS", "samples", "timing"]

MIN_SAMPLE_MS = 0.2
"""Each timed sample lasts at least this long on the GPU (a batch of launches)."""


@dataclass(frozen=True)
class Timing:
    """Per-launch times of repeated launches, ms."""

    median_ms: float
    min_ms: float
    max_ms: float
    launches: int


def samples(drv, launch: Callable[[], None], warmup: int, repeats: int) -> tuple[np.ndarray, int]:
    """Per-launch times (ms) of ``repeats`` samples, and the number of launches timed.

    ``warmup`` launches first give the time of one launch; each sample is then a batch of
    launches of at least :data:`MIN_SAMPLE_MS` between two CUDA events.
    """
    start, end = drv.Event(), drv.Event()
    start.record()
    for _ in range(warmup):
        launch()
    end.record()
    end.synchronize()
    per_launch = max(end.time_since(start) / max(warmup, 1), 1e-4)
    batch = max(1, math.ceil(MIN_SAMPLE_MS / per_launch))
    events = [(drv.Event(), drv.Event()) for _ in range(repeats)]
    for s, e in events:
        s.record()
        for _ in range(batch):
            launch()
        e.record()
    events[-1][1].synchronize()
    return np.array([e.time_since(s) / batch for s, e in events]), repeats * batch


def timing(drv, launch: Callable[[], None], warmup: int, repeats: int) -> Timing:
    """Median, min and max per-launch time of :func:`samples`."""
    ms, launches = samples(drv, launch, warmup, repeats)
    return Timing(float(np.median(ms)), float(ms.min()), float(ms.max()), launches)
