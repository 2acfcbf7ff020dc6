"""Joules per launch of a config: the board's energy counter (NVML, `measure/nvml.py`) read
around a window of back-to-back launches long enough for the counter to move."""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["ENERGY_WINDOW_MS", "joules_per_launch"]

ENERGY_WINDOW_MS = 200.0
"""Launches metered for energy last at least this long (NVML's counter moves every few tens of ms)."""


def joules_per_launch(drv, meter, launch: Callable[[], object], median_ms: float) -> float | None:
    """Joules per launch of ``launch`` (a config's launcher, ``median_ms`` per launch) on the
    CUDA backend ``drv``: the rise of ``meter`` (an :class:`~autotune.measure.nvml.EnergyMeter`)
    over at least :data:`ENERGY_WINDOW_MS` of back-to-back launches (``None``: no meter, or
    the counter did not move)."""
    if meter is None:
        return None
    count = max(1, math.ceil(ENERGY_WINDOW_MS / max(median_ms, 1e-4)))
    end = drv.event()
    drv.synchronize()  # nothing of the timing still runs in the window
    before = meter.millijoules()
    for _ in range(count):
        launch()
    end.record()
    end.synchronize()
    rise = meter.millijoules() - before
    return rise / 1000.0 / count if rise > 0 else None
